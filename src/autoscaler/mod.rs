//! The companion autoscaler. It reaches the cloud only through an externalgrpc provider, over gRPC.
//!
//! Grouped as cluster-autoscaler groups its own: a folder per stage of the loop, with what every stage shares
//! beside them. Imports go down this list and never back up: `control` drives `core`, `core` runs the
//! stages (`headroom`, `scaleup`, `scaledown`), the stages read `status`, `group`, `settings`, `cluster` and
//! the provider `client`.

pub mod clustersnapshot; // the world the loop plans in, and the pending pods that fit in it as it is
pub mod clusterstate; // the groups as the provider says them this loop, nodes matched to them, backoff
pub mod control; // the commands: `simulate` once, `run` as the controller; flags, kube source, Lease, events, endpoints, metrics
pub mod core; // one loop (upstream's core and clusterstate): cluster state, health, pods sorted, the snapshot, RunOnce
pub mod headroom; // capacity kept free ahead of demand: headroom policies and CapacityBuffers, as virtual pods
pub mod provreq; // ProvisioningRequests: check-capacity and best-effort-atomic, booked room as virtual pods
pub mod scaledown; // unneeded nodes: planner, removal simulation, drainability, timers, budgets, actuation; consolidation
pub mod scaleup; // new nodes: planner, estimator, expanders, balancing, zones, prices, backoff

pub mod client; // the provider client, with cluster-autoscaler's caching rules: the only speaker of the wire types
pub mod cluster; // where the cluster is read from: the ClusterSource trait, the view, snapshot files
pub mod fargate; // Fargate pods set aside, matched to profiles here, MatchPod once per pod shape
pub mod group; // a node group as the planners see it
pub mod planning; // CPU-bound planning off the Tokio worker
pub mod settings; // the loop's decision flags, each stage's part
pub mod status; // what a loop decided and why: the report, as JSON and as a table

pub use client::{ClientError, ProviderClient, ProviderConfig};
pub use cluster::{ClusterError, ClusterSource, ClusterView, Snapshot};
pub use core::runonce::RunOnce;
pub use scaledown::settings::{
    ConsolidationMode, ConsolidationSettings, MinSaving, ScaleDownSettings,
};
pub use settings::Settings;
