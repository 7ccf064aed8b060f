//! Scale-down's planning, as cluster-autoscaler's scaledown/planner and unneeded: which nodes are unneeded
//! (utilization, drainability, a removal simulation that moves their pods elsewhere), how long they have been,
//! and how a removal is described. Nothing here acts on the cluster.

pub(crate) mod describe; // a removal as the report says it: why it may go, where its pods go
pub(crate) mod drainability; // what each pod on a node means for removing it (upstream's drainability rules)
#[cfg(test)]
mod oracle; // the planner held to an exhaustive search, with the scheduler's rules written plainly
pub(crate) mod planner; // finds unneeded nodes: utilization, drainability, removal simulation
#[cfg(test)]
mod reference; // the planner held to a plain scale-down on random clusters
pub(crate) mod removal; // the removal simulation: pods moved off a node, undone when one fits nowhere
pub(crate) mod simulation; // a removal simulation as one value: input, rules, PDBs, topology, places, mover
pub(crate) mod unneeded; // unneeded timers, and the wait of a zeroOrMax group for all its nodes
