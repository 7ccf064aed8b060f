//! What a loop tells the cluster, as cluster-autoscaler does: Kubernetes Events on the pods it scaled up for
//! (TriggeredScaleUp) or could not help (NotTriggerScaleUp), on the nodes it removes (ScaleDown,
//! ScaleDownFailed) or replaces (Consolidation, ConsolidationFailed), on the ProvisioningRequests whose status
//! changed (the condition's reason) and on its status ConfigMap (ScaledUpGroup); with `--disruption-config`,
//! on expired and drifted nodes (Expired, Drifted, DisruptionBlocked) and on a refused disruption ConfigMap
//! (DisruptionConfigRefused); on each leaving node, once (NodeLeaving); on an invalid CapacityQuota, once per problem (ValidationFailed); and the
//! status ConfigMap,
//! `ekscale-autoscaler-status`, with per-group health and the last activity. Repeated events are folded into
//! a series by kube-rs's recorder, as client-go does.

use crate::autoscaler::headroom::policy as headroom;
use crate::autoscaler::quotas as quota_status;
use crate::autoscaler::status::{DegradationChange, GroupStatus, Status};
use crate::k8s::AUTOSCALING_GROUP as GROUP;
use crate::k8s::{DISRUPTION_CONFIG_MAP, VALIDATION_FAILED};
use crate::model::CapacityQuota;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The status ConfigMap's name, after upstream's `cluster-autoscaler-status`.
pub const STATUS_CONFIG_MAP: &str = "ekscale-autoscaler-status";
/// At most this many pod events a loop: a burst of thousands of pods must not flood the API server.
const MAX_POD_EVENTS: usize = 100;

pub struct Publisher {
    client: kube::Client,
    recorder: Recorder,
    namespace: String,
    /// The problem last told of each invalid CapacityQuota, by name: told once, not every loop.
    told: Mutex<HashMap<String, String>>,
    /// The reason each leaving node was told leaving for, by node: told once while it leaves.
    told_leaving: Mutex<HashMap<String, String>>,
}

fn reference(
    kind: &str,
    api_version: &str,
    namespace: Option<&str>,
    name: &str,
) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: namespace.map(Into::into),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

fn event(type_: EventType, reason: &str, action: &str, note: String) -> Event {
    Event {
        type_,
        reason: reason.into(),
        // The API server takes at most 1 kB.
        note: Some(note.chars().take(1000).collect()),
        action: action.into(),
        secondary: None,
    }
}

impl Publisher {
    /// Events reported as `instance` (the pod's name) of `ekscale-autoscaler`; the ConfigMap in `namespace`.
    pub fn new(client: kube::Client, namespace: &str, instance: &str) -> Publisher {
        let reporter = Reporter {
            controller: "ekscale-autoscaler".into(),
            instance: Some(instance.into()),
        };
        Publisher {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            namespace: namespace.into(),
            told: Mutex::default(),
            told_leaving: Mutex::default(),
        }
    }

    /// Publishes one loop's events and status; returns what could not be written (the loop goes on).
    pub async fn publish(&self, status: &Status, now: SystemTime) -> Vec<String> {
        let mut problems = Vec::new();
        let config_map = reference("ConfigMap", "v1", Some(&self.namespace), STATUS_CONFIG_MAP);
        let mut events = scale_up_events(status, &config_map);
        events.extend(scale_down_events(status));
        events.extend(request_events(status));
        events.extend(disruption_events(status, &self.namespace));
        if let Ok(mut told) = self.told_leaving.lock() {
            events.extend(leaving_events(status, &mut told));
        }
        for (ev, at) in events {
            if let Err(e) = self.recorder.publish(&ev, &at).await {
                problems.push(format!("event {} on {:?}: {e}", ev.reason, at.name));
            }
        }
        if let Err(e) = self.write_status(status, now).await {
            problems.push(format!("status ConfigMap: {e}"));
        }
        problems
    }

    /// A Warning `ValidationFailed` on each invalid CapacityQuota, once per problem: not when this replica
    /// told it already, nor when the quota's status already says it (told before a restart, or by another
    /// controller); told again if the quota turns valid and then invalid. Returns what could not be written
    /// (told again next loop).
    pub async fn publish_quota_problems(&self, quotas: &[CapacityQuota]) -> Vec<String> {
        let mut told = self.told.lock().map(|t| t.clone()).unwrap_or_default();
        let events = quota_events(quotas, &mut told);
        let mut problems = Vec::new();
        for (ev, at) in events {
            if let Err(e) = self.recorder.publish(&ev, &at).await {
                let name = at.name.clone().unwrap_or_default();
                problems.push(format!("event {} on CapacityQuota {name}: {e}", ev.reason));
                told.remove(&name);
            }
        }
        if let Ok(mut kept) = self.told.lock() {
            *kept = told;
        }
        problems
    }

    /// Creates or replaces the status ConfigMap (with the resourceVersion read, so a concurrent writer makes
    /// this write fail rather than be lost).
    async fn write_status(&self, status: &Status, now: SystemTime) -> Result<(), kube::Error> {
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), &self.namespace);
        let text = serde_norway::to_string(&status_document(status, now)).unwrap_or_default();
        let stamp = humantime::format_rfc3339_seconds(now).to_string();
        let mut config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(STATUS_CONFIG_MAP.into()),
                namespace: Some(self.namespace.clone()),
                annotations: Some(BTreeMap::from([(
                    "cluster-autoscaler.kubernetes.io/last-updated".to_string(),
                    stamp,
                )])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("status".to_string(), text)])),
            ..ConfigMap::default()
        };
        match api.get_opt(STATUS_CONFIG_MAP).await? {
            None => {
                api.create(&PostParams::default(), &config_map).await?;
            }
            Some(current) => {
                config_map.metadata.resource_version = current.metadata.resource_version;
                api.replace(STATUS_CONFIG_MAP, &PostParams::default(), &config_map)
                    .await?;
            }
        }
        Ok(())
    }
}

/// The status ConfigMap's `status` document, shaped after upstream's.
pub fn status_document(status: &Status, now: SystemTime) -> serde_json::Value {
    let health = &status.cluster_health;
    // Backed off, or its nodes mostly unready.
    let unhealthy = |g: &GroupStatus| {
        g.skipped
            .as_deref()
            .is_some_and(|s| s.contains("backoff") || s.starts_with("not ready for scale-up"))
    };
    let unix = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let groups: Vec<serde_json::Value> = status
        .node_groups
        .iter()
        .map(|g| {
            let scaling_up = status.scale_up.iter().any(|s| s.node_group == g.id && s.error.is_none());
            let candidates = status.scale_down.nodes.iter().filter(|s| s.node_group == g.id).count();
            let allowed: serde_json::Map<String, serde_json::Value> = (status.scale_down.disruption_budgets.iter())
                .filter(|b| b.node_group == g.id)
                .map(|b| (b.reason.clone(), json!(b.allowed)))
                .collect();
            json!({
                "name": g.id,
                "health": {
                    "status": if unhealthy(g) { "Unhealthy" } else { "Healthy" },
                    "cloudProviderTarget": g.target_size,
                    "minSize": g.min_size,
                    "maxSize": g.max_size,
                    "registered": g.registered,
                    "upcoming": g.upcoming,
                },
                "scaleUp": {
                    "status": if scaling_up { "InProgress" } else if g.skipped.as_deref().is_some_and(|s| s.contains("backoff")) { "Backoff" } else { "NoActivity" },
                    "skipped": g.skipped,
                },
                "scaleDown": {
                    "status": if candidates > 0 { "CandidatesPresent" } else { "NoCandidates" },
                    "candidates": candidates,
                },
                "disruption": {"allowed": allowed},
                "eksStatus": g.eks_status,
            })
        })
        .collect();
    json!({
        "time": humantime::format_rfc3339_seconds(now).to_string(),
        "timeUnix": unix,
        "autoscalerStatus": "Running",
        "clusterWide": {
            "health": {
                "status": if status.errors.is_empty() && health.healthy { "Healthy" } else { "Unhealthy" },
                "nodeCounts": {"ready": health.ready_nodes, "unready": health.unready_nodes,
                               "notStarted": health.not_started_nodes},
                "reason": health.reason,
                "errors": status.errors,
            },
            "scaleUp": {"nodeGroups": status.scale_up.iter().map(|s| &s.node_group).collect::<Vec<_>>(),
                        "podsNotHelped": status.no_scale_up.len()},
            "scaleDown": {"candidates": status.scale_down.nodes.len(), "deletions": status.scale_down.deletions.len()},
            "disruption": {
                "expiredOrDrifted": status.scale_down.disruptions.len(),
                "configRefused": status.disruption_config_refused,
            },
        },
        "nodeGroups": groups,
        "leaving": status.leaving,
    })
}

/// A `NodeLeaving` event on each leaving node not told yet (its reason, when it goes, what is done), `told`
/// kept to the nodes leaving now: once per node while it leaves.
fn leaving_events(
    status: &Status,
    told: &mut HashMap<String, String>,
) -> Vec<(Event, ObjectReference)> {
    told.retain(|node, _| status.leaving.iter().any(|l| &l.node == node));
    let mut events = Vec::new();
    for l in &status.leaving {
        if told.get(&l.node) == Some(&l.reason) {
            continue;
        }
        told.insert(l.node.clone(), l.reason.clone());
        let note = format!("{} at {}: {}: {}", l.reason, l.at, l.action, l.detail);
        let ev = event(EventType::Warning, "NodeLeaving", "Leave", note);
        events.push((ev, reference("Node", "v1", None, &l.node)));
    }
    events
}
/// Scale-up's events, as cluster-autoscaler writes them: each scale-up on the status ConfigMap and on the
/// pods it is for, the pods no group helps, and an unhealthy cluster; at most `MAX_POD_EVENTS` on pods.
fn scale_up_events(status: &Status, config_map: &ObjectReference) -> Vec<(Event, ObjectReference)> {
    let mut events = Vec::new();
    let split = |pod: &str| {
        pod.split_once('/')
            .map(|(ns, name)| (ns.to_string(), name.to_string()))
    };
    let mut pod_events = 0;
    for s in status.scale_up.iter().filter(|s| s.error.is_none()) {
        let group = status.node_groups.iter().find(|g| g.id == s.node_group);
        let sizes = group.map_or(String::new(), |g| {
            format!(
                " {}->{} (max: {})",
                g.target_size,
                g.target_size + s.delta as i32,
                g.max_size
            )
        });
        let note = format!(
            "Scale-up: setting group {} size{sizes}: {}",
            s.node_group, s.reason
        );
        let scaled = event(EventType::Normal, "ScaledUpGroup", "ScaleUp", note);
        events.push((scaled, config_map.clone()));
        // A request's scale-up is told on the request (`request_events`): its pods are virtual.
        let pods = s.pods.iter().filter(|_| s.provisioning_request.is_none());
        for pod in pods.filter(|p| !headroom::is_virtual(p)) {
            let Some((ns, name)) = split(pod).filter(|_| pod_events < MAX_POD_EVENTS) else {
                continue;
            };
            pod_events += 1;
            let note = format!("pod triggered scale-up: [{{{}{sizes}}}]", s.node_group);
            let triggered = event(EventType::Normal, "TriggeredScaleUp", "ScaleUp", note);
            events.push((triggered, reference("Pod", "v1", Some(&ns), &name)));
        }
    }
    for n in &status.no_scale_up {
        let Some((ns, name)) = split(&n.pod).filter(|_| !headroom::is_virtual(&n.pod)) else {
            continue;
        };
        if pod_events >= MAX_POD_EVENTS {
            break;
        }
        pod_events += 1;
        let note = format!("pod didn't trigger scale-up: {}", n.describe_reasons());
        let not = event(EventType::Normal, "NotTriggerScaleUp", "ScaleUp", note);
        events.push((not, reference("Pod", "v1", Some(&ns), &name)));
    }
    if let Some(change) = status.degradation_change {
        events.push((degradation_event(change), config_map.clone()));
    }
    if !status.cluster_health.healthy {
        let note = status.cluster_health.reason.clone();
        let unhealthy = event(EventType::Warning, "ClusterUnhealthy", "ScaleUp", note);
        events.push((unhealthy, config_map.clone()));
    }
    events
}

/// Graceful degradation began or ended, in cluster-autoscaler's words.
fn degradation_event(change: DegradationChange) -> Event {
    match change {
        DegradationChange::Started => event(
            EventType::Warning,
            "GracefulDegradationStarted",
            "ScaleUp",
            "Autoscaler is unable to handle the large amount of unschedulable pods. Consider reducing the \
             rate of adding new pods, so autoscaler could auto recover."
                .into(),
        ),
        DegradationChange::Stopped => event(
            EventType::Normal,
            "GracefulDegradationStopped",
            "ScaleUp",
            "Autoscaler exited from GracefulDegradationMode and works normally.".into(),
        ),
    }
}

/// Each ProvisioningRequest whose status this loop changed gets an Event saying where it stands, with its
/// condition's reason and message (a Warning when it failed), and the scale-up made for it.
fn request_events(status: &Status) -> Vec<(Event, ObjectReference)> {
    let mut events = Vec::new();
    for r in status.provisioning_requests.iter().filter(|r| r.changed) {
        let (Some((ns, name)), Some(c)) = (r.name.split_once('/'), r.deciding()) else {
            continue;
        };
        let mut note = c.message.clone();
        for s in &r.scale_up {
            note.push_str(&format!(
                "; scale-up: {} +{}, all or nothing",
                s.node_group, s.delta
            ));
        }
        let kind = if r.state() == "failed" {
            EventType::Warning
        } else {
            EventType::Normal
        };
        let at = reference(
            "ProvisioningRequest",
            "autoscaling.x-k8s.io/v1",
            Some(ns),
            name,
        );
        events.push((event(kind, &c.reason, "Provision", note), at));
    }
    events
}

/// Scale-down's and consolidation's events on the nodes: deletions started or failed, replacements
/// launched, handed over, abandoned or failed.
fn scale_down_events(status: &Status) -> Vec<(Event, ObjectReference)> {
    let mut events = Vec::new();
    for d in &status.scale_down.deletions {
        let node = reference("Node", "v1", None, &d.node);
        match d.state.as_str() {
            "started" => {
                let note = "marked the node as toBeDeleted/unschedulable".to_string();
                let ev = event(EventType::Normal, "ScaleDown", "ScaleDown", note);
                events.push((ev, node));
            }
            "failed" => {
                let note = format!("failed to remove the node: {}", d.detail);
                let ev = event(EventType::Warning, "ScaleDownFailed", "ScaleDown", note);
                events.push((ev, node));
            }
            _ => {}
        }
    }
    for c in status
        .scale_down
        .consolidation
        .iter()
        .filter(|c| c.error.is_none())
    {
        for node in &c.nodes {
            let note = format!(
                "consolidation: launching a {} node ({}) to replace it: ${:.4}/h -> ${:.4}/h",
                c.node_group, c.instance_type, c.price_per_hour_before, c.price_per_hour_after
            );
            let ev = event(EventType::Normal, "Consolidation", "Consolidate", note);
            events.push((ev, reference("Node", "v1", None, node)));
        }
    }
    for r in &status.scale_down.replacements {
        let (kind, reason) = match r.state.as_str() {
            "abandoned" | "failed" => (EventType::Warning, "ConsolidationFailed"),
            "replacing" => (EventType::Normal, "Consolidation"),
            _ => continue,
        };
        for node in &r.nodes {
            let note = format!("consolidation: {} {}", r.state, r.detail);
            let ev = event(kind, reason, "Consolidate", note);
            events.push((ev, reference("Node", "v1", None, node)));
        }
    }
    events
}

/// Disruption control's events: on each expired or drifted node decided this loop, `Expired` or `Drifted`
/// when it is removed or replaced, `DisruptionBlocked` when it waits (as Karpenter's); a Warning
/// `DisruptionConfigRefused` on the disruption ConfigMap while it is refused.
fn disruption_events(status: &Status, namespace: &str) -> Vec<(Event, ObjectReference)> {
    let mut events = Vec::new();
    for d in &status.scale_down.disruptions {
        let node = reference("Node", "v1", None, &d.node);
        let (reason, note) = match (d.action.as_str(), d.reason.as_str()) {
            ("wait", _) => ("DisruptionBlocked", format!("{}: {}", d.reason, d.detail)),
            (action, "expired") => ("Expired", format!("{action}: {}", d.detail)),
            (action, "rebalance") => ("Rebalance", format!("{action}: {}", d.detail)),
            (action, "unhealthy") => ("Unhealthy", format!("{action}: {}", d.detail)),
            (action, _) => ("Drifted", format!("{action}: {}", d.detail)),
        };
        events.push((event(EventType::Normal, reason, "Disrupt", note), node));
    }
    if let Some(why) = &status.disruption_config_refused {
        let at = reference("ConfigMap", "v1", Some(namespace), DISRUPTION_CONFIG_MAP);
        let note = format!("refused, the last good configuration is kept: {why}");
        let ev = event(
            EventType::Warning,
            "DisruptionConfigRefused",
            "Configure",
            note,
        );
        events.push((ev, at));
    }
    events
}

/// The events to publish for `quotas`' problems, `told` kept to the quotas invalid now.
fn quota_events(
    quotas: &[CapacityQuota],
    told: &mut HashMap<String, String>,
) -> Vec<(Event, ObjectReference)> {
    told.retain(|name, _| {
        quotas
            .iter()
            .any(|q| &q.name == name && q.problem().is_some())
    });
    let mut events = Vec::new();
    for q in quotas {
        let (Some(problem), Some(version)) = (q.problem(), q.version) else {
            continue;
        };
        let problem = problem.to_string();
        let fresh = told.get(&q.name).is_none_or(|t| t.as_str() != problem)
            && !quota_status::reported(&q.status, q.generation, &problem);
        told.insert(q.name.clone(), problem.to_string());
        if fresh {
            let api_version = format!("{GROUP}/{}", version.as_str());
            let at = reference("CapacityQuota", &api_version, None, &q.name);
            let note = format!("not enforced: {problem}");
            let ev = event(EventType::Warning, VALIDATION_FAILED, "Validate", note);
            events.push((ev, at));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::quota_from_value;
    use serde_json::json;

    fn quota(name: &str, operator: &str) -> CapacityQuota {
        quota_from_value(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
            "metadata": {"name": name, "generation": 1},
            "spec": {"selector": {"matchExpressions": [{"key": "pool", "operator": operator,
                                                         "values": ["gpu"]}]},
                     "limits": {"resources": {"nodes": 4}}}}))
        .unwrap()
    }

    fn told(quotas: &[CapacityQuota], told: &mut HashMap<String, String>) -> Vec<String> {
        (quota_events(quotas, told).into_iter())
            .map(|(e, at)| format!("{} {} {}", e.reason, at.name.unwrap(), e.note.unwrap()))
            .collect()
    }

    #[test]
    fn an_invalid_quota_is_told_once_per_problem() {
        let mut memory = HashMap::new();
        let (bad, good) = (quota("bad", "Foo"), quota("good", "In"));
        let quotas = [bad.clone(), good.clone()];
        let first = told(&quotas, &mut memory);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(
            first[0]
                .starts_with("ValidationFailed bad not enforced: spec.selector: Invalid value:"),
            "{first:?}"
        );
        assert!(first[0].ends_with("\"Foo\" is not a valid label selector operator"));
        assert!(told(&quotas, &mut memory).is_empty(), "not every loop");

        // Another problem is told; fixed and broken again, told again.
        let other = quota("bad", "Bar");
        assert_eq!(told(std::slice::from_ref(&other), &mut memory).len(), 1);
        assert!(told(&[quota("bad", "In")], &mut memory).is_empty());
        assert_eq!(told(&[other], &mut memory).len(), 1);

        // A status that already says it (a restart): not told again.
        let mut reported = bad.clone();
        reported
            .status
            .conditions
            .push(crate::model::QuotaCondition {
                kind: crate::k8s::VALID_CONDITION.into(),
                status: "False".into(),
                reason: VALIDATION_FAILED.into(),
                message: bad.problem().unwrap().to_string(),
                observed_generation: Some(1),
                last_transition: None,
            });
        assert!(told(&[reported], &mut HashMap::new()).is_empty());
    }

    #[test]
    fn graceful_degradation_is_told_when_it_starts_and_stops_on_the_status_config_map() {
        let config_map = reference("ConfigMap", "v1", Some("kube-system"), STATUS_CONFIG_MAP);
        let told = |change| {
            let status = Status {
                degradation_change: change,
                ..Status::default()
            };
            (scale_up_events(&status, &config_map).into_iter())
                .map(|(e, at)| format!("{} {}", e.reason, at.name.unwrap()))
                .collect::<Vec<_>>()
        };
        let on = |reason: &str| vec![format!("{reason} {STATUS_CONFIG_MAP}")];
        let started = told(Some(DegradationChange::Started));
        assert_eq!(started, on("GracefulDegradationStarted"));
        let stopped = told(Some(DegradationChange::Stopped));
        assert_eq!(stopped, on("GracefulDegradationStopped"));
        assert!(told(None).is_empty());
    }

    #[test]
    fn a_leaving_node_is_told_once_while_it_leaves_and_is_in_the_status_config_map() {
        use crate::autoscaler::leaving::LeavingAction;
        use crate::autoscaler::leaving::LeavingStatus;
        let spot = |node: &str, reason: &str| LeavingStatus {
            node: node.into(),
            node_group: "spot".into(),
            reason: reason.into(),
            at: "2026-11-30T00:07:00Z".into(),
            action: LeavingAction::Drain,
            detail: "EC2 said so".into(),
            source: "EC2 said so".into(),
        };
        let mut status = Status {
            leaving: vec![spot("a", "spotInterruption")],
            ..Status::default()
        };
        let mut memory = HashMap::new();
        let said = |status: &Status, memory: &mut HashMap<String, String>| -> Vec<String> {
            (leaving_events(status, memory).into_iter())
                .map(|(e, at)| format!("{} {} {}", e.reason, at.name.unwrap(), e.note.unwrap()))
                .collect()
        };
        assert_eq!(
            said(&status, &mut memory),
            ["NodeLeaving a spotInterruption at 2026-11-30T00:07:00Z: drain: EC2 said so"]
        );
        assert!(said(&status, &mut memory).is_empty(), "once");
        status.leaving.push(spot("b", "rebalance"));
        assert_eq!(said(&status, &mut memory).len(), 1, "the new one only");
        let document = status_document(&status, SystemTime::UNIX_EPOCH);
        assert_eq!(document["leaving"][1]["node"], "b");
        assert_eq!(document["leaving"][1]["action"], "drain");
        // Gone and back: told again.
        status.leaving.clear();
        assert!(said(&status, &mut memory).is_empty());
        status.leaving.push(spot("a", "spotInterruption"));
        assert_eq!(said(&status, &mut memory).len(), 1);
    }
}
