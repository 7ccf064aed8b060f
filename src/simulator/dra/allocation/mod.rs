//! Allocate for one node, as kube-scheduler's structured allocator does: validate and prepare the claims,
//! search the devices depth-first with backtracking, keeping matchAttribute, shared counters and device
//! taints as devices are added and removed; and when nothing fits, say why.

pub(crate) mod allocate; // Allocate for one node: validate, search, build the allocations or say why not
mod constraint; // matchAttribute while devices are added and removed
pub(crate) mod counters; // shared counters of partitionable devices during one allocation
mod diagnose; // why nothing fit, in terms a user can act on
pub(crate) mod prepare; // the validation pass, and which devices an ask may take
mod search; // the depth-first search with backtracking
pub(crate) mod taints; // device taints against request tolerations

pub use allocate::allocate;
