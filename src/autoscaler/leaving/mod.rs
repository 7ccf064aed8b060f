//! Nodes that are going away for reasons no autoscaler decided (issue 60): a Spot interruption warning, a
//! rebalance recommendation, a scheduled EC2 event, a stopped instance (the provider's
//! `ListLeavingInstances`), a taint another tool put on it (aws-node-termination-handler's, Karpenter's), or
//! a problem the node monitoring agent reported. The loop treats such a node as one being deleted: no room,
//! never a candidate of scale-down or disruption, its pods planned elsewhere now unless its group replaces
//! it itself. This folder says which nodes leave (`nodes.rs`), what is done for each (`action.rs`), what the
//! loop changes for them (`effects.rs`), what it remembers between loops (`memory.rs`) and their part of
//! the report (`report.rs`).

pub(crate) mod action; // drain, replace, none or wait: what is done for a leaving node, in words
pub(crate) mod effects; // what the loop changes for them: no room, pods to help, replacements coming, nodes held
pub(crate) mod memory; // between loops: when each was first seen, told, and its pods found room
pub(crate) mod nodes; // which nodes are leaving, from the three sources, indexed like the view's nodes
pub(crate) mod report; // the report's `leaving` list
#[cfg(test)]
mod tests;

pub use action::{LeavingAction, LeavingHandling, cluster_wide};
pub use effects::LeavingEffects;
pub use memory::LeavingMemory;
pub use nodes::{LeavingNode, LeavingNodes};
pub use report::{LeavingReplaced, LeavingStatus};
