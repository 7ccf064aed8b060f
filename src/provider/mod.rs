//! The provider's gRPC server: CloudProvider and Fargate over a backend, with health and reflection, on
//! one port, in plaintext h2c or TLS (optionally mutual).

mod cloud_provider; // cluster-autoscaler's externalgrpc protocol over a backend
mod fargate; // ekscale.v1.Fargate: profiles and pod matching
mod http; // /metrics and /healthz
mod metrics; // ekscale_provider_* metrics: RPCs, instances, AWS calls
mod node_groups; // ekscale.v1.NodeGroups: zones, all-or-nothing increases
mod observe; // every RPC counted and timed
mod options; // NodeGroupGetOptions answers
mod server; // every service on one port
mod sizes; // what the services that change sizes share
mod template_info; // a group's template Node and ResourceSlices, as both services serve them
mod tls; // TLS on the port, certificates read again when they change

pub use cloud_provider::CloudProviderService;
pub use fargate::FargateService;
pub use http::http_router;
pub use metrics::ProviderMetrics;
pub use node_groups::NodeGroupsService;
pub use server::{
    CLOUD_PROVIDER_SERVICE, FARGATE_SERVICE, MAX_DECODING_MESSAGE_SIZE, NODE_GROUPS_SERVICE,
    ServeError, serve,
};
pub use sizes::GroupLocks;
pub use tls::{Reloading, TlsError, TlsFiles};
