//! Scheduled sizes (`schedules:` in a group's entry of the disruption configuration): while a window is open
//! the group's min and max are the window's, within the provider's own. They touch the cluster state (the
//! sizes every stage plans with, and scale-up's skip naming the window), scale-up (a raised min asked for at
//! once), scale-down (the nodes over a lowered max, for the `Scheduled` disruption method) and the report.

mod in_force; // each group's window in force this loop, its sizes within the provider's, written over the group's
mod over_max; // the nodes over a lowered max: the emptiest, then the newest, go; one that would lose a pod waits
mod raise; // a raised min asked for at once, as cluster-autoscaler's --enforce-node-group-min-size

pub use in_force::SizesInForce;
pub use over_max::{GroupNodes, OverMax, ScheduledFate};
#[cfg(test)]
mod tests; // the sizes applied to groups, scale-up's skip, the report, the nodes chosen over a max, the min raised
