//! Dynamic Resource Allocation in the simulation: kube-scheduler's stable structured allocator (which
//! devices of a node a pod's ResourceClaims get), its CEL selectors, the devices of each place as pods are
//! placed, and cluster-autoscaler's DRA utilization.

mod allocation; // Allocate for one node: validation, the depth-first search, matchAttribute, counters, taints, why nothing fit
mod cel; // CEL selectors: compiled once, Kubernetes' quantity() and semver(), the `device` variable
mod classes; // DeviceClasses with compiled selectors, and the selector sets of asks
mod devices; // the devices of each place, and a pod's claims allocated there
mod in_use; // devices allocated already
mod node_selector; // where an allocation is usable
mod pools; // pools at their newest generation, indexed by the nodes that reach them
mod unallocatable; // why claims cannot be allocated, in the scheduler's words
mod utilization; // a node's DRA utilization, as cluster-autoscaler computes it

#[cfg(test)]
mod tests;

pub use allocation::allocate;
pub use cel::{SelectorError, SelectorErrorKind};
pub use classes::DeviceClasses;
pub use devices::{
    Dra, PlaceDevices, SharedClaims, claimed_gpus, claims_fit, release, reserve, served_by_plugins,
};
pub use in_use::InUse;
pub use node_selector::allocation_usable_on;
pub use pools::{NodePools, Pools};
pub use unallocatable::{RequestRef, Unallocatable, Wanted};
pub use utilization::{PoolUse, utilization};
