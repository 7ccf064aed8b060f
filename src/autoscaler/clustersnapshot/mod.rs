//! The cluster snapshot, as upstream's simulator/clustersnapshot: the world the loop plans in (nodes, the
//! groups' templates per zone, the nodes already asked for), and the pending pods that fit in it as it is.

pub(crate) mod snapshot; // the world built from the view and the groups; pending pods placed in it
pub(crate) mod zones; // multi-zone node groups: a template per zone, where the next node launches
