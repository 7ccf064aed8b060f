//! The companion's metric families, `ekscale_*`, mirroring cluster-autoscaler's names and labels where the
//! meaning is the same (`unschedulable_pods_count`, `scaled_up_nodes_total`, `function_duration_seconds`, ...),
//! registered in groups, and what each loop sets them to.

use super::capacity::CapacityMetrics;
use super::labels::{
    ActivityLabels, BudgetLabels, DecisionLabels, FunctionLabels, KindLabels, OutcomeLabels,
    OutcomeOnlyLabels, QuotaLabels, ReasonLabels, RequestLabels, StateLabels, TypeLabels,
};
use super::leaving::LeavingMetrics;
use super::sizes::GroupSizeMetrics;
use super::skipped::SkippedMetrics;
use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::control::flags::Acting;
use crate::autoscaler::quotas::usage_by_quota;
use crate::autoscaler::status::Status;
use crate::model::{QuotaSpec, quota_amount};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Every metric the companion exports, registered once.
pub struct AutoscalerMetrics {
    registry: Registry,
    cluster: ClusterMetrics,
    claiming: Family<OutcomeOnlyLabels, Gauge>,
    scaling: ScalingMetrics,
    loops: LoopMetrics,
    group_sizes: GroupSizeMetrics,
    consolidations: Family<KindLabels, Counter>,
    consolidation_savings: Gauge<f64, AtomicU64>,
    provisioning_requests: Family<RequestLabels, Gauge>,
    replacements: Family<OutcomeLabels, Counter>,
    disruption_allowed: Family<BudgetLabels, Gauge>,
    disruption_eligible: Family<ReasonLabels, Gauge>,
    disruption_decisions: Family<DecisionLabels, Counter>,
    disruption_config_refused: Gauge,
    quotas: QuotaMetrics,
    leaving: LeavingMetrics,
    skipped: SkippedMetrics,
    capacity: CapacityMetrics,
}

/// The cluster as the loop read it: pods waiting, nodes by state, capacity, node groups.
struct ClusterMetrics {
    unschedulable: Family<TypeLabels, Gauge>,
    nodes: Family<StateLabels, Gauge>,
    node_groups: Gauge,
    cpu_cores: Gauge<f64, AtomicU64>,
    memory_bytes: Gauge,
}

impl ClusterMetrics {
    fn register(registry: &mut Registry) -> ClusterMetrics {
        ClusterMetrics {
            unschedulable: register(
                registry,
                "unschedulable_pods_count",
                "Pending pods: unschedulable (the scheduler tried), scheduler_unprocessed (not yet)",
                Family::default(),
            ),
            nodes: register(registry, "nodes_count", "Nodes by state", Family::default()),
            node_groups: register(
                registry,
                "node_groups_count",
                "Node groups",
                Gauge::default(),
            ),
            cpu_cores: register(
                registry,
                "cluster_cpu_current_cores",
                "Cores of the cluster's nodes",
                Gauge::default(),
            ),
            memory_bytes: register(
                registry,
                "cluster_memory_current_bytes",
                "Memory of the cluster's nodes",
                Gauge::default(),
            ),
        }
    }
}

/// What the loop did: scale-ups made or failed, nodes removed, unneeded and kept, deletions in progress.
struct ScalingMetrics {
    scaled_up: Counter,
    failed_scale_ups: Family<ReasonLabels, Counter>,
    scaled_down: Family<ReasonLabels, Counter>,
    unneeded: Gauge,
    unremovable: Family<ReasonLabels, Gauge>,
    pending_deletions: Gauge,
}

impl ScalingMetrics {
    fn register(registry: &mut Registry) -> ScalingMetrics {
        ScalingMetrics {
            scaled_up: register(
                registry,
                "scaled_up_nodes",
                "Nodes asked for",
                Counter::default(),
            ),
            failed_scale_ups: register(
                registry,
                "failed_scale_ups",
                "Scale-ups the provider refused, by reason",
                Family::default(),
            ),
            scaled_down: register(
                registry,
                "scaled_down_nodes",
                "Nodes removed, by reason (empty, underutilized, consolidated)",
                Family::default(),
            ),
            unneeded: register(
                registry,
                "unneeded_nodes_count",
                "Nodes found unneeded",
                Gauge::default(),
            ),
            unremovable: register(
                registry,
                "unremovable_nodes_count",
                "Nodes kept, by reason",
                Family::default(),
            ),
            pending_deletions: register(
                registry,
                "pending_node_deletions",
                "Node deletions in progress",
                Gauge::default(),
            ),
        }
    }
}

/// The loop itself: how long its parts took, when each activity last happened, the problems.
struct LoopMetrics {
    durations: Family<FunctionLabels, Histogram>,
    last_activity: Family<ActivityLabels, Gauge<f64, AtomicU64>>,
    errors: Family<TypeLabels, Counter>,
}

impl LoopMetrics {
    fn register(registry: &mut Registry) -> LoopMetrics {
        LoopMetrics {
            durations: register(
                registry,
                "function_duration_seconds",
                "Time spent in parts of the loop (main, estimate, scaleDown, consolidation)",
                Family::<FunctionLabels, Histogram>::new_with_constructor(
                    duration_histogram as fn() -> _,
                ),
            ),
            last_activity: register(
                registry,
                "last_activity",
                "When each activity last happened (unix seconds)",
                Family::default(),
            ),
            errors: register(registry, "errors", "Problems by type", Family::default()),
        }
    }
}

/// The CapacityQuotas' metrics: each valid quota's usage and limits, and how many are invalid.
struct QuotaMetrics {
    used: Family<QuotaLabels, Gauge>,
    limit: Family<QuotaLabels, Gauge>,
    invalid: Gauge,
}

/// `metric` registered as `name` (prefixed) and handed back: the registry encodes the clone it keeps.
fn register<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

fn duration_histogram() -> Histogram {
    // 100 µs to ~6.5 s: a loop over a large cluster takes tens of milliseconds.
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

impl Default for AutoscalerMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ekscale");
        macro_rules! register {
            ($name:literal, $help:literal, $metric:expr) => {
                register(&mut registry, $name, $help, $metric)
            };
        }
        AutoscalerMetrics {
            cluster: ClusterMetrics::register(&mut registry),
            scaling: ScalingMetrics::register(&mut registry),
            loops: LoopMetrics::register(&mut registry),
            group_sizes: GroupSizeMetrics::register(&mut registry),
            consolidations: register!(
                "consolidations",
                "Replacements done (the old nodes gone), by kind: single, multi",
                Family::default()
            ),
            consolidation_savings: register!(
                "consolidation_savings_dollars_per_hour",
                "What the replacements done since the start save per hour, together",
                Gauge::default()
            ),
            provisioning_requests: register!(
                "provisioning_requests_count",
                "ProvisioningRequests of a class served, by class and state (pending, provisioned, \
                 bookingExpired, failed)",
                Family::default()
            ),
            replacements: register!(
                "replacements",
                "Replacements that ended, by kind (single, multi, expired, drifted) and outcome (done, \
                 abandoned, failed)",
                Family::default()
            ),
            disruption_allowed: register!(
                "disruption_budget_allowed_disruptions",
                "How many nodes of a group its active disruption budgets let be disrupted at once for a \
                 reason, before the loop's own removals; no series while no budget names the reason",
                Family::default()
            ),
            disruption_eligible: register!(
                "disruption_eligible_nodes",
                "Nodes expired or drifted the last loop decided on, by reason",
                Family::default()
            ),
            claiming: register!(
                "pending_pods_with_claims",
                "Pending pods that claim devices (DRA), by what the loop did for them: placed (on room there is \
                 or is coming), scaled_up, no_scale_up (no node group helps), waiting (said otherwise)",
                Family::default()
            ),
            disruption_decisions: register!(
                "disruption_decisions",
                "Expired or drifted nodes acted on, by reason and decision (remove, replace)",
                Family::default()
            ),
            quotas: QuotaMetrics::register(&mut registry),
            leaving: LeavingMetrics::register(&mut registry),
            skipped: SkippedMetrics::register(&mut registry),
            capacity: CapacityMetrics::register(&mut registry),
            disruption_config_refused: register!(
                "disruption_config_refused",
                "1 while the cluster's disruption ConfigMap is refused (the last good one is kept)",
                Gauge::default()
            ),
            registry,
        }
    }
}

impl QuotaMetrics {
    fn register(registry: &mut Registry) -> QuotaMetrics {
        QuotaMetrics {
            used: register(
                registry,
                "capacity_quota_used",
                "What the registered nodes a valid CapacityQuota matches hold of each resource it limits, as \
                 enforcement counts it (cpu in cores, each node's rounded up; memory in bytes)",
                Family::default(),
            ),
            limit: register(
                registry,
                "capacity_quota_limit",
                "A valid CapacityQuota's limit on each resource it names",
                Family::default(),
            ),
            invalid: register(
                registry,
                "capacity_quotas_invalid",
                "CapacityQuotas not enforced because they are invalid (each has a ValidationFailed condition)",
                Gauge::default(),
            ),
        }
    }

    /// Each valid CapacityQuota's usage and limits over the registered nodes; a gone quota's series go.
    fn observe(&self, view: &ClusterView) {
        self.used.clear();
        self.limit.clear();
        let valid: Vec<(&str, &QuotaSpec)> = (view.quotas.iter())
            .filter_map(|q| Some((q.name.as_str(), q.valid()?)))
            .collect();
        let specs: Vec<&QuotaSpec> = valid.iter().map(|(_, spec)| *spec).collect();
        let usage = usage_by_quota(&specs, &view.nodes, quota_amount, u64::saturating_add);
        for ((name, spec), used) in valid.iter().zip(usage) {
            for ((resource, limit), used) in spec.limits.iter().zip(used) {
                let labels = QuotaLabels {
                    quota: name.to_string(),
                    resource: resource.clone(),
                };
                let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                self.limit.get_or_create(&labels).set(gauge(*limit));
                self.used.get_or_create(&labels).set(gauge(used));
            }
        }
        let invalid = view.quotas.len() - valid.len();
        self.invalid.set(i64::try_from(invalid).unwrap_or(i64::MAX));
    }
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl AutoscalerMetrics {
    /// Takes in one finished loop: the cluster it read and what it decided, at `now`; `acting` says whether
    /// the decisions were carried out (not a dry run), so that planned scale-ups are not counted as made.
    pub fn observe_loop(
        &self,
        view: &ClusterView,
        status: &Status,
        acting: Acting,
        now: SystemTime,
    ) {
        let acted = acting == Acting::Act;
        self.observe_cluster(view, status);
        self.observe_scaling(status, acting);
        self.observe_disruption(status, acting);
        self.observe_durations(status);
        self.leaving.observe(status);
        self.skipped.observe(status);
        self.capacity.observe(status);
        let mut activity = vec!["main", "mainSuccessful"];
        if acted && status.scale_up.iter().any(|s| s.error.is_none()) {
            activity.push("scaleUp");
        }
        if !status.scale_down.deletions.is_empty() {
            activity.push("scaleDown");
        }
        for a in activity {
            self.loops
                .last_activity
                .get_or_create(&ActivityLabels { activity: a })
                .set(unix(now));
        }
        for _ in &status.errors {
            self.loops
                .errors
                .get_or_create(&TypeLabels {
                    r#type: "loopError",
                })
                .inc();
        }
    }

    /// Pending pods with ResourceClaims, by outcome.
    fn observe_claiming(&self, view: &ClusterView, status: &Status) {
        let mut claiming: std::collections::HashSet<String> = (view.pods.iter())
            .filter(|p| p.node_name.is_none() && !p.claims().is_empty())
            .map(|p| p.key())
            .collect();
        let mut count = |outcome: &'static str, keys: &mut dyn Iterator<Item = &str>| {
            let n = keys.filter(|k| claiming.remove(*k)).count();
            self.claiming
                .get_or_create(&OutcomeOnlyLabels { outcome })
                .set(n as i64);
        };
        count("placed", &mut status.placed.iter().map(|p| p.pod.as_str()));
        count(
            "scaled_up",
            &mut status.scale_up.iter().flat_map(|s| s.pods.iter()),
        );
        count(
            "no_scale_up",
            &mut status.no_scale_up.iter().map(|p| p.pod.as_str()),
        );
        let waiting = claiming.len() as i64;
        self.claiming
            .get_or_create(&OutcomeOnlyLabels { outcome: "waiting" })
            .set(waiting);
    }

    /// The cluster as the loop read it: pods waiting, nodes by state, capacity, node groups and their sizes.
    fn observe_cluster(&self, view: &ClusterView, status: &Status) {
        self.observe_claiming(view, status);
        self.quotas.observe(view);
        let unschedulable = view
            .pods
            .iter()
            .filter(|p| p.unschedulable && p.node_name.is_none());
        self.cluster
            .unschedulable
            .get_or_create(&TypeLabels {
                r#type: "unschedulable",
            })
            .set(unschedulable.count() as i64);
        let unprocessed = view
            .pods
            .iter()
            .filter(|p| p.node_name.is_none() && !p.unschedulable && p.deleted.is_none());
        self.cluster
            .unschedulable
            .get_or_create(&TypeLabels {
                r#type: "scheduler_unprocessed",
            })
            .set(unprocessed.count() as i64);
        let ready = view.nodes.iter().filter(|n| n.ready).count() as i64;
        self.cluster
            .nodes
            .get_or_create(&StateLabels { state: "ready" })
            .set(ready);
        self.cluster
            .nodes
            .get_or_create(&StateLabels { state: "unready" })
            .set(view.nodes.len() as i64 - ready);
        let upcoming: usize = status.node_groups.iter().map(|g| g.upcoming).sum();
        self.cluster
            .nodes
            .get_or_create(&StateLabels {
                state: "notStarted",
            })
            .set(upcoming as i64);
        let (cpu, memory) = view.nodes.iter().fold((0u64, 0u64), |(c, m), n| {
            (c + n.capacity.cpu_millis, m + n.capacity.memory_bytes)
        });
        self.cluster.cpu_cores.set(cpu as f64 / 1000.0);
        self.cluster.memory_bytes.set(memory as i64);
        self.cluster
            .node_groups
            .set(status.node_groups.len() as i64);
        self.provisioning_requests.clear();
        for r in &status.provisioning_requests {
            let labels = RequestLabels {
                class: r.class.clone(),
                state: r.state(),
            };
            self.provisioning_requests.get_or_create(&labels).inc();
        }
        self.group_sizes.observe(status);
    }

    /// What the loop did: scale-ups made or failed, deletions finished, replacements done, nodes unneeded and
    /// kept, deletions in progress.
    fn observe_scaling(&self, status: &Status, acting: Acting) {
        for s in status.scale_up.iter().filter(|_| acting == Acting::Act) {
            match &s.error {
                None => {
                    self.scaling.scaled_up.inc_by(s.delta);
                }
                Some(_) => {
                    self.scaling
                        .failed_scale_ups
                        .get_or_create(&ReasonLabels {
                            reason: "cloudProviderError".into(),
                        })
                        .inc();
                }
            }
        }
        // A deletion finishes loops after it started; it carries its own reason.
        for d in status
            .scale_down
            .deletions
            .iter()
            .filter(|d| d.state == "deleted")
        {
            self.scaling
                .scaled_down
                .get_or_create(&ReasonLabels {
                    reason: d.detail.clone(),
                })
                .inc();
        }
        for r in status
            .scale_down
            .replacements
            .iter()
            .filter(|r| r.state == "done")
        {
            self.consolidations
                .get_or_create(&KindLabels {
                    kind: r.kind.clone(),
                })
                .inc();
            self.consolidation_savings.inc_by(r.saving_per_hour);
        }
        let ended = ["done", "abandoned", "failed"];
        for r in
            (status.scale_down.replacements.iter()).filter(|r| ended.contains(&r.state.as_str()))
        {
            self.replacements
                .get_or_create(&OutcomeLabels {
                    kind: r.kind.clone(),
                    outcome: r.state.clone(),
                })
                .inc();
        }
        self.scaling
            .unneeded
            .set(status.scale_down.nodes.len() as i64);
        self.scaling.unremovable.clear();
        for k in &status.scale_down.unremovable {
            self.scaling
                .unremovable
                .get_or_create(&ReasonLabels {
                    reason: k.reason.clone(),
                })
                .inc();
        }
        let pending = status
            .scale_down
            .deletions
            .iter()
            .filter(|d| matches!(d.state.as_str(), "started" | "draining"))
            .count();
        self.scaling.pending_deletions.set(pending as i64);
    }

    /// Disruption control (`--disruption-config`), after Karpenter's `nodepools_allowed_disruptions` and
    /// `voluntary_disruption_*`: what the budgets allow, the expired and drifted nodes and what was done.
    fn observe_disruption(&self, status: &Status, acting: Acting) {
        let down = &status.scale_down;
        self.disruption_allowed.clear();
        for b in &down.disruption_budgets {
            let Some(allowed) = b.allowed else {
                continue;
            };
            let labels = BudgetLabels {
                node_group: b.node_group.clone(),
                reason: b.reason.clone(),
            };
            (self.disruption_allowed.get_or_create(&labels)).set(allowed as i64);
        }
        self.disruption_eligible.clear();
        for d in &down.disruptions {
            let labels = ReasonLabels {
                reason: d.reason.clone(),
            };
            self.disruption_eligible.get_or_create(&labels).inc();
        }
        let acted_on = down.disruptions.iter().filter(|d| d.action != "wait");
        for d in acted_on.filter(|_| acting == Acting::Act) {
            let labels = DecisionLabels {
                reason: d.reason.clone(),
                decision: d.action.clone(),
            };
            self.disruption_decisions.get_or_create(&labels).inc();
        }
        let refused = status.disruption_config_refused.is_some();
        self.disruption_config_refused.set(i64::from(refused));
    }

    /// How long the loop and its stages took, as upstream's function_duration_seconds.
    fn observe_durations(&self, status: &Status) {
        let ms = |ms: f64| Duration::from_secs_f64(ms / 1000.0);
        self.observe_duration("main", ms(status.times.elapsed_ms));
        self.observe_duration("estimate", ms(status.times.estimate_ms));
        self.observe_duration("scaleDown", ms(status.times.scale_down_ms));
        self.observe_duration("consolidation", ms(status.times.consolidation_ms));
    }

    /// A loop that could not decide (the provider or the cluster failed).
    pub fn observe_failure(&self, kind: &'static str, now: SystemTime) {
        self.loops
            .errors
            .get_or_create(&TypeLabels { r#type: kind })
            .inc();
        self.loops
            .last_activity
            .get_or_create(&ActivityLabels { activity: "main" })
            .set(unix(now));
    }

    fn observe_duration(&self, function: &'static str, took: Duration) {
        self.loops
            .durations
            .get_or_create(&FunctionLabels { function })
            .observe(took.as_secs_f64());
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::quota_from_value;
    use crate::model::{Node, Resources};
    use serde_json::json;
    use std::sync::Arc;

    fn quota(name: &str, spec: serde_json::Value) -> crate::model::CapacityQuota {
        quota_from_value(json!({"apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityQuota", "metadata": {"name": name}, "spec": spec}))
        .unwrap()
    }

    fn lines(metrics: &AutoscalerMetrics) -> Vec<String> {
        (metrics.encode().lines())
            .filter(|l| l.starts_with("ekscale_capacity_quota"))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn quotas_used_and_limits_by_resource_and_stale_series_go() {
        let gpu = Arc::new(Node {
            labels: [("pool".to_string(), "gpu".to_string())].into(),
            capacity: Resources {
                cpu_millis: 3500,
                gpus: 4,
                ..Resources::default()
            },
            ..Node::default()
        });
        let mut view = ClusterView {
            nodes: vec![gpu.clone(), gpu],
            quotas: [
                quota(
                    "gpu-pool",
                    json!({"selector": {"matchLabels": {"pool": "gpu"}},
                           "limits": {"resources": {"nvidia.com/gpu": 16, "cpu": 64}}}),
                ),
                quota("broken", json!({"limits": {"resources": {"cpu": "500m"}}})),
            ]
            .into(),
            ..ClusterView::default()
        };
        let metrics = AutoscalerMetrics::default();
        metrics.quotas.observe(&view);
        let seen = lines(&metrics);
        for expected in [
            r#"ekscale_capacity_quota_used{quota="gpu-pool",resource="nvidia.com/gpu"} 8"#,
            r#"ekscale_capacity_quota_used{quota="gpu-pool",resource="cpu"} 8"#,
            r#"ekscale_capacity_quota_limit{quota="gpu-pool",resource="nvidia.com/gpu"} 16"#,
            r#"ekscale_capacity_quota_limit{quota="gpu-pool",resource="cpu"} 64"#,
            "ekscale_capacity_quotas_invalid 1",
        ] {
            assert!(
                seen.iter().any(|l| l == expected),
                "{expected} in {seen:#?}"
            );
        }
        view.quotas = Default::default();
        metrics.quotas.observe(&view);
        let seen = lines(&metrics);
        assert!(!seen.iter().any(|l| l.contains("gpu-pool")), "{seen:#?}");
        assert!(
            seen.iter()
                .any(|l| l == "ekscale_capacity_quotas_invalid 0")
        );
    }
}
