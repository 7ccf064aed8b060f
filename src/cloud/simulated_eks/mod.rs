//! The embedded simulated EKS (`--backend sim`): node groups from a YAML scenario, instances with a
//! lifecycle driven by a clock, no AWS account.

mod backend; // the backend: instances created, running, deleting; stockouts as placeholders
mod scenario; // the scenario file: node groups and Fargate profiles, checked whole

pub use backend::SimulatedEks;
pub use scenario::{BUILT_IN_SCENARIO, Scenario, ScenarioError};
