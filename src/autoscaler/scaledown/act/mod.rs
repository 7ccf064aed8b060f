//! Scale-down's actuation, as cluster-autoscaler's scaledown/actuation: the deletions in progress, each a step
//! per loop (taint, evict, delete), and how each ends.

pub(crate) mod actuation; // carries out a scale-down: taint, evict, delete, one step per loop
pub(crate) mod rotation; // terminate-first rotations: the old node removed first, its group's replacement asked then
