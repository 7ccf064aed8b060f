//! Dynamic Resource Allocation in the simulation: kube-scheduler's stable structured allocator (which
//! devices of a node a pod's ResourceClaims get), its CEL selectors, and cluster-autoscaler's DRA
//! utilization.

mod allocate; // Allocate for one node: validate, search, build the allocations or say why not
mod cel_library; // Kubernetes' quantity() and semver() in CEL
mod cel_regex; // CEL's matches(), each pattern compiled once
mod classes; // DeviceClasses with compiled selectors, and the selector sets of asks
mod constraint; // matchAttribute while devices are added and removed
mod counters; // shared counters of partitionable devices during one allocation
mod device_value; // the `device` variable selectors read
mod diagnose; // why nothing fit, in terms a user can act on
mod in_use; // devices allocated already
mod node_selector; // where an allocation is usable
mod pools; // pools at their newest generation, indexed by the nodes that reach them
mod prepare; // the validation pass, and which devices an ask may take
mod search; // the depth-first search with backtracking
mod selector; // CEL expressions compiled once and evaluated against a device
mod taints; // device taints against request tolerations
mod unallocatable; // why claims cannot be allocated, in the scheduler's words
mod utilization; // a node's DRA utilization, as cluster-autoscaler computes it

#[cfg(test)]
mod tests;

pub use allocate::allocate;
pub use classes::DeviceClasses;
pub use in_use::InUse;
pub use node_selector::allocation_usable_on;
pub use pools::{NodePools, Pools};
pub use selector::{SelectorError, SelectorErrorKind};
pub use unallocatable::{RequestRef, Unallocatable, Wanted};
pub use utilization::{PoolUse, utilization};
