//! `ekscale-autoscaler demo`: the provider in-process on a simulated EKS, the simulated cluster around it,
//! and the companion's loop acting on both, while a script plays a day of workloads in accelerated time.
//! Everything runs over loopback gRPC as in production; only the clock is the simulator's.

mod chart; // line charts over simulated time, as SVG
mod compare; // the second day, with consolidation off and on: what each cost, what was replaced
mod day; // one day of a script: the loop acting on the simulated cluster and EKS in simulated time
mod day4; // the fourth day, leaving nodes handled and ignored: each pod's time without a node both ways
mod error; // why the demo stopped
mod leaving; // script events for nodes going away: Spot interruptions, rebalancing, maintenance, unhealthy
mod marks; // what held nodes when (budgets, updates), and the expired nodes replaced, for the charts
mod night; // the third day, with disruption control: what held nodes, what was replaced
mod provider; // the provider in-process on a loopback port
mod record; // what the demo saw: samples, the decision log, summary facts
mod report; // the HTML page with SVG charts
mod run; // the days, their summary and the report, as the binary runs them
mod script; // the demo file: scenario, timeline, headroom
mod summary; // what a day came to, for people and for scripts
mod timeline; // what a timeline event does to the simulated cluster and EKS

pub use error::DemoError;
pub use record::Record;
pub use run::{Options, run, run_blocking};
pub use script::{BUILT_IN_SCRIPT, Script, ScriptError};
