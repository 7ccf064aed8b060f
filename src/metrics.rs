//! Prometheus metrics of the provider, named `ekscale_provider_*`.

use crate::cloud::{InstanceState, NodeGroupBackend};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InstanceLabels {
    node_group: String,
    state: &'static str,
}

/// Every metric the provider exports, registered once.
pub struct ProviderMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<MethodLabels, Histogram>,
    node_groups: Gauge,
    instances: Family<InstanceLabels, Gauge>,
}

fn latency_histogram() -> Histogram {
    // 50 µs to ~3.3 s: hot RPCs answer from memory in well under a millisecond, mutations take longer.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

impl Default for ProviderMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ekscale_provider");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency =
            Family::<MethodLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        let node_groups = Gauge::default();
        let instances = Family::<InstanceLabels, Gauge>::default();
        registry.register(
            "requests",
            "gRPC requests by method and status code",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "gRPC request latency by method",
            latency.clone(),
        );
        registry.register("node_groups", "Node groups served", node_groups.clone());
        registry.register(
            "instances",
            "Instances by node group and state",
            instances.clone(),
        );
        ProviderMetrics {
            registry,
            requests,
            latency,
            node_groups,
            instances,
        }
    }
}

impl ProviderMetrics {
    /// Counts one finished RPC.
    pub fn observe_request(&self, method: &'static str, code: tonic::Code, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method,
                code: code_name(code),
            })
            .inc();
        self.latency
            .get_or_create(&MethodLabels { method })
            .observe(elapsed.as_secs_f64());
    }

    /// The exposition text, with the node group gauges read from the backend now.
    pub fn encode(&self, backend: &dyn NodeGroupBackend) -> String {
        let groups = backend.node_groups();
        self.node_groups.set(groups.len() as i64);
        self.instances.clear();
        for group in &groups {
            for state in [
                InstanceState::Creating,
                InstanceState::Running,
                InstanceState::Deleting,
            ] {
                let labels = InstanceLabels {
                    node_group: group.id.clone(),
                    state: state.as_str(),
                };
                self.instances.get_or_create(&labels).set(0);
            }
            for instance in backend.instances(&group.id).unwrap_or_default() {
                let labels = InstanceLabels {
                    node_group: group.id.clone(),
                    state: instance.state.as_str(),
                };
                self.instances.get_or_create(&labels).inc();
            }
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// The canonical name of a gRPC status code, as grpc-go spells it in its metrics.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}
