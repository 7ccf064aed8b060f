//! The companion as a program: its commands and flags, the live cluster through kube-rs, leader election,
//! Events, the HTTP endpoints and the metrics. Everything here drives the loop (`core`); nothing in the loop
//! depends on it.

pub mod controller; // the commands: `simulate` once, `run` as the controller (loop, endpoints, Lease, events)
pub mod events; // Events and the status ConfigMap, as cluster-autoscaler writes them
pub mod flags; // the companion's flags, as cluster-autoscaler names them, into the loop's settings
pub mod http; // /metrics, /health-check, /snapshotz
pub mod kube; // the live cluster: watched caches, an unschedulable-pod trigger, taints and evictions
pub mod kube_buffers; // CapacityBuffers, PodTemplates and scalable objects watched; buffer status written
pub mod kube_requests; // ProvisioningRequests and the PodTemplates they name watched; request status written
pub mod last_loop; // what /health-check and /snapshotz serve: liveness and the last decisions
pub mod leader; // leader election on a Lease: one replica acts, and stops at once when it loses
pub mod metrics; // ekscale_* metrics, named after cluster-autoscaler's
pub mod mirror; // a watch's objects kept converted into the model as its events arrive
pub mod watch; // what the live sources share: the field manager, a reflector's watch kept running, served versions
