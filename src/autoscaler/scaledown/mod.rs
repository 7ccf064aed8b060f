//! Scale-down, as cluster-autoscaler's core/scaledown: the planner finds unneeded nodes (utilization,
//! drainability, a removal simulation), the policy runs their timers and budgets, the actuator carries the
//! deletions out. Consolidation plans over the world scale-down leaves and ends in the same deletions.

pub(crate) mod actuation; // carries out a scale-down: taint, evict, delete, one step per loop
pub(crate) mod budgets; // the deletions a loop may start: parallelism, drains, empty nodes, zero-or-max groups whole
pub(crate) mod carry_out; // the decision carried out, and the deletions in progress a step on
pub mod consolidation; // replacing nodes with cheaper ones: plan, launch, hand Ready replacements over
pub(crate) mod context; // what the policy needs of the loop: settings, provider, the cluster it may act on
pub(crate) mod decision; // what the decision reads of the loop and hands back for carrying out
pub(crate) mod describe; // a removal as the report says it: why it may go, where its pods go
pub(crate) mod disruption_budgets; // each group's disruption budgets this loop, shared by every stage
pub(crate) mod drain; // what each pod on a node means for removing it (upstream's drainability rules)
pub(crate) mod expiry; // expired and drifted nodes: removed, replaced surge-first, or held
#[cfg(test)]
mod oracle; // the planner held to an exhaustive search, with the scheduler's rules written plainly
pub(crate) mod planner; // finds unneeded nodes: utilization, drainability, removal simulation
pub(crate) mod policy; // around the planner: the decision and its carrying out, cooldowns, soft taints, deletions
#[cfg(test)]
mod reference; // the planner held to a plain scale-down on random clusters
pub(crate) mod removal; // the removal simulation: pods moved off a node, undone when one fits nowhere
pub(crate) mod report; // what the stage hands the loop's report: decisions, deletions, replacements, errors
pub(crate) mod settings; // what the scale-down and consolidation flags say
pub(crate) mod unneeded; // unneeded timers, and the wait of a zeroOrMax group for all its nodes
pub(crate) mod view_check; // whether a view can be trusted to say which nodes are empty

pub use actuation::{Actuator, Cause, Outcome, Pacing, to_be_deleted};
pub use drain::{PdbBudget, Rules};
pub use planner::{Plan, plan};
pub use removal::{GroupInfo, Input};
pub use settings::{ConsolidationMode, ConsolidationSettings, MinSaving, ScaleDownSettings};
