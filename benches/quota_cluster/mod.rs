//! CapacityQuotas at scale: a hundred quotas over the scale bench's teams and zones, none of them binding;
//! pods that each need a new node, so that the plan moves the quotas; and a cluster that takes the quotas'
//! statuses, so that `run`'s loop (which writes them) can be timed without an API server.

use ekscale::autoscaler::{ClusterError, ClusterSource, ClusterView, QuotaStatusWrite};
use ekscale::model::{CapacityQuota, Controller, Labels, Pod, Resources, ZONE_LABEL};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

/// A hundred CapacityQuotas over `groups` teams: one per team and zone (the rest of the hundred on the zones
/// alone, round the three), with limits on cpu, memory, nodes and GPUs well above what the cluster asks, so
/// that the loop decides the same as without them and only their cost shows.
pub fn hundred(groups: usize) -> Arc<[CapacityQuota]> {
    let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
    (0..100)
        .map(|i| {
            let zone = zones[i % 3];
            let selector = if i < groups * 3 {
                serde_json::json!({"matchLabels": {"team": format!("team-{}", i / 3)},
                    "matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]})
            } else {
                serde_json::json!({"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]})
            };
            let object = serde_json::json!({
                "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
                "metadata": {"name": format!("quota-{i}")},
                "spec": {"selector": selector, "limits": {"resources": {
                    "cpu": 1_000_000, "memory": "1Pi", "nodes": 100_000, "nvidia.com/gpu": 1000}}}});
            ekscale::k8s::quota_from_value(object).unwrap()
        })
        .collect()
}

/// `n` pending pods of 12 CPU: more than any node running the bench's pods has free (16 CPU, 30% taken), so
/// each needs a node of its own, planned new but for the few nodes that run nothing.
pub fn big_pods(n: usize, created: SystemTime) -> Vec<Pod> {
    let demand = Resources {
        cpu_millis: 12_000,
        memory_bytes: 8 << 30,
        pods: 1,
        ..Default::default()
    };
    (0..n)
        .map(|i| Pod {
            labels: Labels::from([("app".to_string(), "big".to_string())]),
            controller: Some(Arc::new(Controller {
                kind: "ReplicaSet".into(),
                name: "big".into(),
                uid: "uid-big".into(),
            })),
            created: Some(created),
            ..Pod::pending("default", &format!("big-{i}"), demand)
        })
        .collect()
}

/// The cluster `run` acts on, as far as the bench needs: it takes every quota status written (counted) and
/// serves the view it was made with.
pub struct TakesStatuses {
    pub view: Arc<ClusterView>,
    pub written: AtomicUsize,
}

#[async_trait::async_trait]
impl ClusterSource for TakesStatuses {
    async fn view(&self) -> Result<Arc<ClusterView>, ClusterError> {
        Ok(self.view.clone())
    }

    fn can_act(&self) -> bool {
        true
    }

    async fn write_quota_status(&self, _: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        self.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
