//! The companion autoscaler. It reaches the cloud only through an externalgrpc provider, over gRPC.
//!
//! Grouped as cluster-autoscaler groups its own: a folder per stage of the loop, with what every stage shares
//! beside them. Imports go down this list and never back up: `control` drives `core`, `core` runs the
//! stages (`headroom`, `scaleup`, `scaledown`), the stages read `status`, `group`, `settings`, `cluster`,
//! `disruption` and the provider `client`.

pub(crate) mod capacity; // capacity paid for ahead: Capacity Block windows, reserved nodes kept, prepaid room first
pub(crate) mod client; // the provider client, with cluster-autoscaler's caching rules: the only speaker of the wire types
pub(crate) mod cluster; // where the cluster is read from: the ClusterSource trait, the view, snapshot files
pub(crate) mod clustersnapshot; // the world the loop plans in, and the pending pods that fit in it as it is
pub(crate) mod clusterstate; // the groups as the provider says them this loop, nodes matched to them, backoff
pub mod control; // the commands: `simulate` once, `run` as the controller; flags, kube source, Lease, events, endpoints, metrics
pub(crate) mod core; // one loop: health, pods sorted, RunOnce
pub(crate) mod degradation; // graceful degradation: the pending pods' time budget, and the loop's progress /health-check reads
pub(crate) mod disruption; // disruption control: budgets per node group, with schedules and reasons; expiry; grace periods
pub(crate) mod fargate; // Fargate pods set aside, matched to profiles here, MatchPod once per pod shape
pub(crate) mod feature; // the seam through which a feature joins the loop: virtual pods before, report and statuses after
pub(crate) mod group; // a node group as the planners see it
pub mod headroom; // capacity kept free ahead of demand: headroom policies and CapacityBuffers, as virtual pods
pub(crate) mod leaving; // nodes going away for reasons no autoscaler decided: which, what is done, the report's part
pub(crate) mod planning; // CPU-bound planning off the Tokio worker
pub(crate) mod provreq; // ProvisioningRequests: check-capacity and best-effort-atomic, booked room as virtual pods
pub(crate) mod quotas; // CapacityQuotas: enforced, their status written, their stages in the loop and the report
pub mod scaledown; // unneeded nodes: planner, removal simulation, drainability, timers, budgets, actuation; consolidation
pub mod scaleup; // new nodes: planner, estimator, expanders, balancing, prices, the increase
pub(crate) mod schedules; // scheduled sizes: the window in force per group, over every stage; the nodes over a lowered max
pub(crate) mod settings; // the loop's decision flags, each stage's part
pub mod status; // what a loop decided and why: the report, as JSON and as a table

pub use client::{ClientError, ProviderClient, ProviderConfig, TemplateNodeInfo, TemplateSlices};
pub use cluster::{
    BufferStatus, ClusterError, ClusterSource, ClusterView, QuotaStatusWrite, RequestStatus,
    Snapshot, StatusNotWritten, WritesStatus,
};
pub use core::runonce::RunOnce;
pub use disruption::{DisruptionConfig, DisruptionConfigError};
pub use group::{Group, Totals};
pub use leaving::LeavingHandling;
pub use provreq::requests::read as read_provisioning_requests;
pub use scaledown::{ConsolidationMode, ConsolidationSettings, MinSaving, ScaleDownSettings};
pub use scaleup::{ClusterLimits, Expander, Strategy as ExpanderStrategy};
pub use settings::{HealthSettings, Settings};
