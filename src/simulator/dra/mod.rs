//! Dynamic Resource Allocation in the simulation: kube-scheduler's stable structured allocator (which
//! devices of a node a pod's ResourceClaims get), its CEL selectors, and cluster-autoscaler's DRA
//! utilization.

mod cel_library; // Kubernetes' quantity() and semver() in CEL
mod classes; // DeviceClasses with compiled selectors, and the selector sets of asks
mod device_value; // the `device` variable selectors read
mod in_use; // devices allocated already
mod pools; // pools at their newest generation, indexed by the nodes that reach them
mod selector; // CEL expressions compiled once and evaluated against a device
mod utilization; // a node's DRA utilization, as cluster-autoscaler computes it

pub use classes::DeviceClasses;
pub use in_use::InUse;
pub use pools::{NodePools, Pools};
pub use selector::{SelectorError, SelectorErrorKind};
pub use utilization::utilization;
