//! Scale-up, as cluster-autoscaler's core/scaleup, estimator and expander: for the pods nothing can hold,
//! estimate each node group, let the expander choose, balance across similar groups, within the limits.

pub(crate) mod alike; // node groups whose estimates are one, estimated once
pub(crate) mod balance; // similar node groups, and a scale-up spread over them
pub mod estimator; // the binpacking estimator: first-fit decreasing, several orderings, the tightest kept
pub(crate) mod executor; // the scale-ups asked of the provider, plainly or all or nothing; a refusal backs off
pub(crate) mod expander; // least-waste, most-pods, least-nodes, price, priority, random
pub(crate) mod limits; // cluster-wide and per-scale-up limits
pub(crate) mod orchestrator; // plans expansions for all pending pods, round after round, within the limits
pub(crate) mod parallel; // a round's estimates on every core, in the order of the jobs
pub(crate) mod pending; // the pending pods scale-up plans for, as equivalence groups
pub(crate) mod pricing; // node and pod prices for the price expander, pod prices kept by demand
pub(crate) mod statics; // the checks that hold on every node of a group, once per class of alike groups

pub use expander::{Expander, ExpanderError, Strategy, parse_priorities};
pub use limits::ClusterLimits;
pub use orchestrator::{ScaleUpOrchestrator, ScaleUpPlan};
pub use pending::Pending;
