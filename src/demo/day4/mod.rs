//! The demo's fourth day: nodes that go away (issue 60), played with leaving nodes handled and ignored, and
//! each pod's time without a node both ways.

mod leaving_day; // the day both ways: its summary, the per-pod table and the chart for the report
mod outages; // each pod's time without a node, followed loop by loop from the simulated EKS and cluster

pub use leaving_day::LeavingDay;
pub use outages::Outages;
