//! The embedded simulated EKS (`--backend sim`): node groups from a YAML scenario, instances with a
//! lifecycle driven by a clock, no AWS account.

mod backend; // the backend: instances created, running, deleting; stockouts as placeholders
mod events; // what it is told at run time: Spot interruptions, rebalancing, scheduled events, unhealthy nodes
mod fleet; // a group's instances and target, as what acts on them from outside the autoscaler sees them
mod leaving_keys; // the scenario's nodeRepairConfig and instanceEvents, read and checked
mod notices; // what EC2 says about instances and what follows: termination, replacement, rebalancing
mod repair; // EKS's node auto repair: wait, replace or reboot, within parallelism and threshold
mod reservations; // capacity blocks and ODCRs: read from the scenario, then lived on the clock
mod scenario; // the scenario file: node groups and Fargate profiles, checked whole

pub use backend::SimulatedEks;
pub use events::Pick;
pub use leaving_keys::{EventKind, InstanceEvent};
pub use scenario::{BUILT_IN_SCENARIO, Scenario, ScenarioError, SimNodeGroup};
