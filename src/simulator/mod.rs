//! The scheduling simulator: where pods fit, as kube-scheduler's filters decide, over an in-memory cluster.
//! Below both the companion (scale-up and scale-down simulate on it) and the simulated cluster (which
//! schedules its pods with it), as upstream's `simulator/` is below its core.

pub(crate) mod dra; // Dynamic Resource Allocation: which devices a pod's claims get on a node, each place's devices
pub(crate) mod equivalence; // pending pods grouped by what scheduling reads
pub(crate) mod free_tree; // first fit and best fit in log time over the nodes an estimation adds
pub(crate) mod host_marks; // the nodes hostname affinity and anti-affinity refuse, skipped a word at a time
pub(crate) mod predicates; // filters on one pod and one node, with the scheduler's reasons
pub(crate) mod rooms; // first fit over the cluster's places in log time, for pending pods
pub(crate) mod spread_mins; // the least-filled domain of each topology spread, kept as pods are placed
pub(crate) mod terms; // per registered term: the terms a pod may match, its pods per domain
pub(crate) mod topology; // places and pods per topology domain: the counts the pod-dependent predicates read
pub(crate) mod world; // the in-memory cluster: places built from a view, pods placed as the scheduler would

#[cfg(test)]
mod tests; // devices across places: a shared claim allocated once pins its other pods

pub use dra::{
    DeviceClasses, Dra, InUse, NodePools, PlaceDevices, PoolUse, Pools, RequestRef, SelectorError,
    SelectorErrorKind, SharedClaims, Unallocatable, Wanted, allocate, allocation_usable_on,
    claimed_gpus, claims_fit, reserve, served_by_plugins, utilization,
};
pub use equivalence::{EquivalenceGroup, group_pods, group_pods_by};
pub use free_tree::FreeTree;
pub use host_marks::{HostMarks, Open};
pub use predicates::{Unfit, how_many, node_fit, resources_fit};
pub use rooms::Rooms;
pub use spread_mins::{SpreadMins, SpreadScope};
pub use topology::Partners;
pub use topology::{Place, PlaceKind, PodTerms, Topology};
pub use world::Filling;
pub use world::{build_places, explain, place_all, pods_by_node, unavailable, unfit};
