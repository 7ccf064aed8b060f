//! ekscale: node autoscaling for Amazon EKS.
//!
//! Two programs share this crate: `ekscale-provider`, a cluster-autoscaler `externalgrpc` cloud provider for
//! EKS managed node groups, and `ekscale-autoscaler`, a companion autoscaler that talks to it over gRPC.
//! Imports go one way (docs/architecture.md, "Layers"): `bin -> provider -> cloud` and `bin -> autoscaler`,
//! both above `simulator`, `k8s` and `model`; the autoscaler reaches the cloud only through its gRPC client.

pub mod autoscaler; // the companion: RunOnce and its stages (scale-up, scale-down, consolidation, headroom), the provider client, cluster sources
pub mod clock; // time source of the simulators: real, scaled or manual
pub mod cloud; // node groups behind the NodeGroupBackend trait: the simulated EKS and AWS; Fargate
pub mod demo; // `demo`: the provider, the simulated cluster and the loop playing a scripted day
pub mod http; // what both programs' HTTP endpoints share: the server, the OpenMetrics content type
pub mod k8s; // Kubernetes formats at the edge: quantities, pods from protobuf bytes or kubectl JSON
pub mod model; // the internal model: integer resources, nodes, pods, selectors, taints
pub(crate) mod oracle; // kube-scheduler's filters and the DRA allocator written plainly: the tests' exhaustive searches and the simulated cluster's scheduler ask them
pub mod proto; // code generated from proto/
pub mod provider; // the gRPC server: CloudProvider, Fargate, health, reflection, TLS
#[cfg(test)]
#[path = "../tests/common/saved_seeds.rs"]
mod saved_seeds; // test support, shared with the integration tests: saved proptest cases replayed into their strategies
pub mod simulated_cluster; // the simulated Kubernetes cluster: nodes from the provider's instances, a scheduler, for demo and tests
pub mod simulator; // the scheduling simulator both the companion and the cluster simulator use
pub mod telemetry; // tracing setup
pub mod tls; // process-wide rustls setup
