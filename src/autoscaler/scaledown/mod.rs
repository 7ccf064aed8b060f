//! Scale-down, as cluster-autoscaler's core/scaledown: the planner finds unneeded nodes (utilization,
//! drainability, a removal simulation), the policy runs their timers and budgets, the actuator carries the
//! deletions out. Consolidation plans over the world scale-down leaves and ends in the same deletions.

pub(crate) mod act; // carrying the deletions out: taint, evict, delete, one step per loop
pub(crate) mod budgets; // every budget a removal takes from: parallelism caps, each group's disruption budgets
pub(crate) mod carry_out; // the decision carried out, and the deletions in progress a step on
pub mod consolidation; // replacing nodes with cheaper ones: plan, launch, hand Ready replacements over
pub(crate) mod context; // what the policy needs of the loop: settings, provider, the cluster it may act on
pub(crate) mod decision; // what the decision reads of the loop and hands back for carrying out
pub(crate) mod disruption; // disruption as a stage: one method per reason (drift, expiration), within the budgets
pub(crate) mod plan; // which nodes are unneeded: utilization, drainability, removal simulation, timers
pub(crate) mod policy; // around the planner: the decision and its carrying out, cooldowns, soft taints, deletions
pub(crate) mod report; // what the stage hands the loop's report: decisions, deletions, replacements, errors
pub(crate) mod settings; // what the scale-down and consolidation flags say
pub(crate) mod view_check; // whether a view can be trusted to say which nodes are empty

pub use act::actuation::{
    Actuator, Cause, DeletionOrder, Outcome, Pacing, StepGround, to_be_deleted,
};
pub use plan::drainability::{PdbBudget, Rules};
pub use plan::planner::{DeletionKind, ScaleDownPlan as Plan, plan};
pub use plan::removal::{GroupInfo, Input};
pub use settings::{ConsolidationMode, ConsolidationSettings, MinSaving, ScaleDownSettings};
