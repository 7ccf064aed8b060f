//! Prometheus metrics of the provider, named `ekscale_provider_*`.

use crate::cloud::{CloudObserver, InstanceState, NodeGroupBackend, NodeGroupSpec};
use crate::model::LeavingReason;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AwsCallLabels {
    service: &'static str,
    operation: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MessageLabels {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReservedLabels {
    node_group: String,
    reservation: String,
    /// capacity-block or odcr.
    r#type: &'static str,
    /// used or available.
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkipLabels {
    reason: String,
}

/// Every metric the provider exports, registered once.
pub struct ProviderMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<MethodLabels, Histogram>,
    node_groups: Gauge,
    instances: Family<InstanceLabels, Gauge>,
    cache_age: Gauge<f64, AtomicU64>,
    aws_requests: Family<AwsCallLabels, Counter>,
    refresh_duration: Histogram,
    skipped: Family<SkipLabels, Gauge>,
    tls_reloads: Family<OutcomeLabels, Counter>,
    atomic_increases: Family<OutcomeLabels, Counter>,
    interruption_messages: Family<MessageLabels, Counter>,
    interruption_queue_errors: Counter,
    leaving: Family<ReasonLabels, Gauge>,
    reserved: Family<ReservedLabels, Gauge>,
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
        let cache_age = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "cache_age_seconds",
            "Age of the backend's view of the cloud",
            cache_age.clone(),
        );
        let aws_requests = Family::<AwsCallLabels, Counter>::default();
        registry.register(
            "aws_requests",
            "AWS API calls by service, operation and outcome",
            aws_requests.clone(),
        );
        let refresh_duration = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        registry.register(
            "refresh_duration_seconds",
            "Time to re-read the cloud",
            refresh_duration.clone(),
        );
        let skipped = Family::<SkipLabels, Gauge>::default();
        registry.register(
            "node_groups_skipped",
            "Node groups left out of NodeGroups, by reason",
            skipped.clone(),
        );
        let tls_reloads = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "tls_reloads",
            "Changed TLS files read by the reloader: reloaded, or refused (the old ones kept)",
            tls_reloads.clone(),
        );
        let atomic_increases = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "atomic_increases",
            "All-or-nothing increases ended: whole, or set_back (not all launched in the provisioning time)",
            atomic_increases.clone(),
        );
        let interruption_messages = Family::<MessageLabels, Counter>::default();
        registry.register(
            "interruption_messages",
            "Messages of the interruption queue by kind and outcome: received, then parsed or ignored",
            interruption_messages.clone(),
        );
        let interruption_queue_errors = Counter::default();
        registry.register(
            "interruption_queue_errors",
            "Failed calls to the interruption queue (each retried after a backoff)",
            interruption_queue_errors.clone(),
        );
        let leaving = Family::<ReasonLabels, Gauge>::default();
        registry.register(
            "leaving_instances",
            "Instances the cloud says are leaving, by reason",
            leaving.clone(),
        );
        let reserved = Family::<ReservedLabels, Gauge>::default();
        registry.register(
            "reserved_instances",
            "Instances of each capacity reservation a node group launches into: used (running an \
             instance) or available",
            reserved.clone(),
        );
        ProviderMetrics {
            registry,
            reserved,
            interruption_messages,
            interruption_queue_errors,
            leaving,
            atomic_increases,
            tls_reloads,
            requests,
            latency,
            node_groups,
            instances,
            cache_age,
            aws_requests,
            refresh_duration,
            skipped,
        }
    }
}

impl ProviderMetrics {
    /// The TLS reloader read changed files: `reloaded`, or `refused` because they make no configuration.
    pub fn observe_tls_reload(&self, outcome: &'static str) {
        self.tls_reloads
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

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
        if let Some(age) = backend.cache_age() {
            self.cache_age.set(age.as_secs_f64());
        }
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
        self.count_leaving(backend);
        self.count_reserved(backend, &groups);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

impl ProviderMetrics {
    /// The leaving instances by reason, every reason the cloud says at 0 when it has none.
    fn count_leaving(&self, backend: &dyn NodeGroupBackend) {
        let leaving = backend.leaving_instances();
        for reason in LeavingReason::ALL {
            if !reason.said_by_cloud() {
                continue;
            }
            let count = leaving.iter().filter(|l| l.reason == reason).count();
            let labels = ReasonLabels {
                reason: reason.as_str(),
            };
            self.leaving
                .get_or_create(&labels)
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }
}

impl ProviderMetrics {
    /// Each group's reservations, used and available, as the backend says them now (a reservation no
    /// group targets any more is no longer listed).
    fn count_reserved(&self, backend: &dyn NodeGroupBackend, groups: &[Arc<NodeGroupSpec>]) {
        self.reserved.clear();
        for group in groups {
            for reservation in backend.reservations(&group.id) {
                let used = reservation.total.saturating_sub(reservation.available);
                for (state, count) in [("used", used), ("available", reservation.available)] {
                    let labels = ReservedLabels {
                        node_group: group.id.clone(),
                        reservation: reservation.id.clone(),
                        r#type: reservation.kind.as_str(),
                        state,
                    };
                    self.reserved.get_or_create(&labels).set(i64::from(count));
                }
            }
        }
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

impl CloudObserver for ProviderMetrics {
    /// Counts one AWS API call; `outcome` is "ok", "throttled", "error" or "unavailable".
    fn observe_aws_call(
        &self,
        service: &'static str,
        operation: &'static str,
        outcome: &'static str,
    ) {
        self.aws_requests
            .get_or_create(&AwsCallLabels {
                service,
                operation,
                outcome,
            })
            .inc();
    }

    /// Records how long a refresh of the cloud's view took.
    fn observe_refresh(&self, elapsed: Duration) {
        self.refresh_duration.observe(elapsed.as_secs_f64());
    }

    fn observe_atomic_increase(&self, outcome: &'static str) {
        self.atomic_increases
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    fn observe_interruption_message(&self, kind: &'static str, outcome: &'static str) {
        self.interruption_messages
            .get_or_create(&MessageLabels { kind, outcome })
            .inc();
    }

    fn observe_interruption_queue_error(&self) {
        self.interruption_queue_errors.inc();
    }

    /// Replaces the counts of node groups left out, by reason.
    fn set_skipped(&self, reasons: &[(String, i64)]) {
        self.skipped.clear();
        for (reason, count) in reasons {
            self.skipped
                .get_or_create(&SkipLabels {
                    reason: reason.clone(),
                })
                .set(*count);
        }
    }
}
