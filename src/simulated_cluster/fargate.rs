//! Fargate in the simulated cluster: a pod a profile takes runs on a node of its own, after a while.

use crate::model::{FARGATE_COMPUTE_LABEL, HOSTNAME_LABEL, Node, Phase, Pod};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long Fargate takes to start a pod (about a minute on EKS; the simulator keeps it short).
const FARGATE_STARTUP: Duration = Duration::from_secs(30);

/// Fargate runs each pod a profile takes on a node of its own; nodes whose pod is gone leave.
pub(super) fn run_on_fargate(
    nodes: &mut Vec<Arc<Node>>,
    pods: &mut [Pod],
    profiles: &HashMap<String, String>,
    now: SystemTime,
) {
    for pod in pods.iter_mut() {
        if pod.node_name.is_some() || pod.deleted.is_some() || !profiles.contains_key(&pod.key()) {
            continue;
        }
        let waited = pod
            .created
            .and_then(|c| now.duration_since(c).ok())
            .unwrap_or(Duration::MAX);
        if waited < FARGATE_STARTUP {
            continue;
        }
        let name = format!("fargate-ip-{}-{}", pod.namespace, pod.name);
        nodes.push(Arc::new(Node {
            name: name.clone(),
            labels: [
                (FARGATE_COMPUTE_LABEL.to_string(), "fargate".to_string()),
                (HOSTNAME_LABEL.to_string(), name.clone()),
            ]
            .into(),
            taints: vec![crate::model::Taint {
                key: FARGATE_COMPUTE_LABEL.into(),
                value: "fargate".into(),
                effect: crate::model::TaintEffect::NoSchedule,
            }],
            capacity: pod.demand,
            allocatable: pod.demand,
            ready: true,
            created: Some(now),
            ..Node::default()
        }));
        pod.node_name = Some(name.into());
        pod.phase = Phase::Running;
        pod.unschedulable = false;
    }
    let used: HashSet<&str> = pods.iter().filter_map(|p| p.node_name.as_deref()).collect();
    nodes.retain(|n| {
        !n.labels.contains_key(FARGATE_COMPUTE_LABEL) || used.contains(n.name.as_str())
    });
}
