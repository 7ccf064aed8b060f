//! The companion as a program: its commands and flags, the live cluster through kube-rs, leader election,
//! Events, the HTTP endpoints and the metrics. Everything here drives the loop (`core`); nothing in the loop
//! depends on it.

pub(crate) mod controller; // the commands: `simulate` once, `run` as the controller (loop, endpoints, Lease, events)
pub(crate) mod events; // Events and the status ConfigMap, as cluster-autoscaler writes them
pub(crate) mod flags; // the companion's flags, as cluster-autoscaler names them, into the loop's settings
pub(crate) mod http; // /metrics, /health-check, /snapshotz
pub(crate) mod kube; // the live cluster: watched caches, an unschedulable-pod trigger, taints and evictions
pub(crate) mod kube_buffers; // CapacityBuffers, PodTemplates and scalable objects watched; buffer status written
pub(crate) mod kube_dra; // DeviceClasses, ResourceClaims and their templates, ResourceSlices watched
pub(crate) mod kube_quotas; // CapacityQuotas watched (cluster-scoped); quota status written
pub(crate) mod kube_requests; // ProvisioningRequests and the PodTemplates they name watched; request status written
pub(crate) mod last_loop; // what /health-check and /snapshotz serve: liveness and the last decisions
pub(crate) mod leader; // leader election on a Lease: one replica acts, and stops at once when it loses
pub(crate) mod metrics; // ekscale_* metrics, named after cluster-autoscaler's
pub(crate) mod mirror; // a watch's objects kept converted into the model as its events arrive
pub(crate) mod watch; // what the live sources share: the field manager, a reflector's watch kept running, served versions

pub use controller::{Failure, run_blocking, runtime, simulate_blocking};
pub use events::{Publisher, STATUS_CONFIG_MAP};
pub use flags::{Acting, RunArgs, SimulateArgs, read_disruption};
pub use kube::{Kube, RateLimits};
pub use leader::{Election, Elector};
pub use metrics::AutoscalerMetrics;
