//! The demo's script events for nodes that go away for reasons no autoscaler decided: `interrupt` (Spot
//! interruptions: the two-minute warning, then the instances go), `rebalance`, `maintenance` (a scheduled
//! event) and `unhealthy` (a monitoring agent's condition, which the group's node auto repair acts on).

mod entries; // the timeline entries as written, and their checks against the scenario
mod play; // what each does to the simulated EKS and the simulated cluster, and conditions a reboot cleared

pub use entries::{Instances, Leaving, LeavingFiles, MaintenanceFile, UnhealthyFile};
pub use play::{clear_repaired, play};

#[cfg(test)]
mod tests;
