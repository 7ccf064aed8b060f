//! The scheduling simulator: where pods fit, as kube-scheduler's filters decide, over an in-memory cluster.
//! Below both the companion (scale-up and scale-down simulate on it) and the cluster simulator (which
//! schedules its pods with it), as upstream's `simulator/` is below its core.

pub mod equivalence; // pending pods grouped by what scheduling reads
pub mod free_tree; // first fit and best fit in log time over the nodes an estimation adds
pub mod host_marks; // the nodes hostname affinity and anti-affinity refuse, skipped a word at a time
pub mod predicates; // filters on one pod and one node, with the scheduler's reasons
pub mod spread_mins; // the least-filled domain of each topology spread, kept as pods are placed
pub mod topology; // places and pods per topology domain: the counts the pod-dependent predicates read
pub mod world; // the in-memory cluster: places built from a view, pods placed as the scheduler would
