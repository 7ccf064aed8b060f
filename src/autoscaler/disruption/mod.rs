//! Disruption control, in Karpenter's words: per node group, budgets that limit how many nodes
//! may be disrupted at once, for which reasons and when; when nodes expire; and how long a blocked drain
//! waits before it is forced. The document is read here (`config.rs`) and each group's allowance computed
//! once per loop (`allowance.rs`); the loop decides what to disrupt within it (scale-down's `budgets/` and
//! `disruption/`).

mod allowance; // how many nodes may start being disrupted now, for one reason, and which budget says so
mod budget; // a budget: nodes (a count or a percent), reasons, an optional schedule
mod config; // the document: entries matched on group names, refused whole when anything is wrong
mod duration; // durations as Karpenter writes them: 720h, 8h30m, 90s
mod policy; // one entry's budgets, expiry, termination grace period and repair
mod repair; // `repair:`: how long a node's problem lasts before ekscale replaces it, per condition
mod schedule; // cron in an IANA zone, and the window each firing opens
mod sizes; // `schedules:`: the min and max sizes in force while a window is open
#[cfg(test)]
mod tests; // the document read, and the module as the loop uses it

pub use allowance::Evaluated;
pub use budget::Reason;
pub use config::{DisruptionConfig, DisruptionConfigError};
pub use policy::GroupPolicy;
pub use sizes::{ScheduledSize, SizeSchedule, in_force};
