//! The buffer controller, the half of CapacityBuffer support upstream runs apart from the autoscaler: each
//! buffer's spec resolved into a chunk (the pod its PodTemplate or scalable object makes) and a number of
//! chunks, or why it cannot be, as the `ReadyForProvisioning` condition. The loop then keeps room for the
//! chunks as it does for headroom policies, and [`provisioned`] says where they went in the `Provisioning`
//! condition.

use crate::autoscaler::cluster::BufferStatus;
use crate::k8s::{
    self as api, BUFFER_ACTIVE_CAPACITY as ACTIVE_CAPACITY, BUFFER_PROVISIONING as PROVISIONING,
    BUFFER_READY_FOR_PROVISIONING as READY_FOR_PROVISIONING, BufferObjects, ConditionSet,
    LocalObjectRef, Quantity, VersionedBuffer, set_condition,
};
use crate::model::{Invalid, Pod};
use std::time::SystemTime;

/// A buffer, resolved: what the loop reserves for it and the status it gets.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub namespace: String,
    pub name: String,
    /// The pod one chunk is, when the buffer is ready and ours to provision.
    pub chunk: Option<Pod>,
    pub chunks: u32,
    /// Its status with `ReadyForProvisioning` set; `Provisioning` is set once the loop has placed it.
    pub status: api::BufferStatus,
    /// The status the object has now: a status equal to it is not written again.
    pub previous: Option<api::BufferStatus>,
    pub version: &'static str,
    generation: Option<i64>,
    /// Whether the loop takes it as upstream's pod list processor does (its strategy ours, and ready for
    /// provisioning now or provisioning until now): only such a buffer's `readyReplicas` is reconciled.
    taken: bool,
    /// Why the loop does not provision it (a strategy not ours, not ready, no chunks): the `Provisioning`
    /// condition's reason and message.
    not_provisioned: Option<(&'static str, String)>,
}

/// `--capacity-buffer-ready-replicas-enabled`: whether the loop reconciles each buffer's `readyReplicas`
/// (cluster-autoscaler 1.37's status field, on by default there too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadyReplicas {
    #[default]
    Reconciled,
    /// Left as the object has it.
    Left,
}

/// Reasons, as cluster-autoscaler writes them where it has one.
const READY: &str = "AttributesSetSuccessfully";
const NOT_READY: &str = "error";
const INJECTED: &str = "FakePodsInjected";
const NOT_READY_FOR_PROVISIONING: &str = "NotReadyForProvisioning";
const EMPTY: &str = "BufferIsEmpty";
const UNSUPPORTED_STRATEGY: &str = "UnsupportedProvisioningStrategy";
const NO_NODE_GROUP_FITS: &str = "NoNodeGroupFits";

/// Resolves `read` against the PodTemplates and scalable objects of its cluster.
pub fn resolve(read: &VersionedBuffer, objects: &BufferObjects, now: SystemTime) -> Resolved {
    let buffer = &read.buffer;
    let namespace = (buffer.metadata.namespace.clone()).unwrap_or_else(|| "default".into());
    let strategy = match buffer.spec.provisioning_strategy.as_deref() {
        None | Some("") => ACTIVE_CAPACITY.to_string(),
        Some(s) => s.to_string(),
    };
    let mut resolved = Resolved {
        name: buffer.metadata.name.clone().unwrap_or_default(),
        chunk: None,
        chunks: 0,
        status: buffer.status.clone().unwrap_or_default(),
        previous: buffer.status.clone(),
        version: read.version,
        generation: buffer.metadata.generation,
        taken: false,
        not_provisioned: None,
        namespace,
    };
    resolved.status.provisioning_strategy = Some(strategy.clone());
    if strategy != ACTIVE_CAPACITY {
        // Another autoscaler's (or nobody's): its other conditions are left as they are.
        let why = format!(
            "provisioning strategy {strategy:?} is not one ekscale provisions (only {ACTIVE_CAPACITY:?})"
        );
        resolved.not_provisioned = Some((UNSUPPORTED_STRATEGY, why));
        return resolved;
    }
    // Upstream's pod list processor takes a buffer the controller made ready, and one it was provisioning
    // (to say it no longer is).
    let provisioning = (resolved.previous.iter())
        .flat_map(|s| &s.conditions)
        .any(|c| c.type_ == PROVISIONING && c.status == "True");
    match chunks(&resolved.namespace, &buffer.spec, objects) {
        Ok((chunk, count, template)) => {
            resolved.status.pod_template_ref = template
                .as_ref()
                .map(|t| LocalObjectRef { name: t.0.clone() });
            resolved.status.pod_template_generation = template.map(|t| t.1);
            resolved.status.replicas = Some(i32::try_from(count).unwrap_or(i32::MAX));
            resolved.set(
                ConditionSet {
                    kind: READY_FOR_PROVISIONING,
                    ok: true,
                    reason: READY,
                    message: "ready".into(),
                },
                now,
            );
            if count == 0 {
                let why = "CapacityBuffer has zero replicas".to_string();
                resolved.not_provisioned = Some((EMPTY, why));
            }
            resolved.chunk = Some(chunk);
            resolved.chunks = count;
            resolved.taken = true;
        }
        Err(why) => {
            resolved.status.pod_template_ref = None;
            resolved.status.pod_template_generation = None;
            resolved.status.replicas = None;
            resolved.set(
                ConditionSet {
                    kind: READY_FOR_PROVISIONING,
                    ok: false,
                    reason: NOT_READY,
                    message: why.to_string(),
                },
                now,
            );
            let why = "CapacityBuffer is not ready for provisioning".to_string();
            resolved.not_provisioned = Some((NOT_READY_FOR_PROVISIONING, why));
            resolved.taken = provisioning;
        }
    }
    resolved
}

/// The chunk, how many, and the PodTemplate's name and generation when the buffer names one.
type Chunks = (Pod, u32, Option<(String, i64)>);

fn chunks(
    namespace: &str,
    spec: &api::BufferSpec,
    objects: &BufferObjects,
) -> Result<Chunks, Invalid> {
    let (chunk, target, template) = match (&spec.pod_template_ref, &spec.scalable_ref) {
        (Some(_), Some(_)) => {
            let rule = "give either podTemplateRef or scalableRef, not both";
            return Err(Invalid::value(rule));
        }
        (None, None) => return Err(Invalid::value("give podTemplateRef or scalableRef")),
        (Some(t), None) => {
            if spec.percentage.is_some() {
                return Err(Invalid::value(
                    "percentage is a share of a scalableRef's replicas: it needs scalableRef, \
                            not podTemplateRef",
                ));
            }
            let found = objects
                .templates
                .iter()
                .find(|o| o.namespace == namespace && o.name == t.name)
                .ok_or_else(|| {
                    Invalid::value(format!("PodTemplate {namespace}/{} not found", t.name))
                })?;
            let pod = (found.pod.clone())
                .map_err(|e| Invalid::value(format!("PodTemplate {namespace}/{}: {e}", t.name)))?;
            (pod, None, Some((t.name.clone(), found.generation)))
        }
        (None, Some(r)) => {
            const KINDS: [(&str, &str); 4] = [
                ("apps", "Deployment"),
                ("apps", "StatefulSet"),
                ("apps", "ReplicaSet"),
                ("batch", "Job"),
            ];
            let what = format!("{} {namespace}/{}", r.kind, r.name);
            if !KINDS.contains(&(r.api_group.as_str(), r.kind.as_str())) {
                return Err(Invalid::value(format!(
                    "scalableRef {}/{}: only apps Deployments, StatefulSets and ReplicaSets and batch \
                     Jobs are read",
                    r.api_group, r.kind
                )));
            }
            let found = objects
                .scalables
                .iter()
                .find(|o| {
                    o.api_group == r.api_group
                        && o.kind == r.kind
                        && o.namespace == namespace
                        && o.name == r.name
                })
                .ok_or_else(|| Invalid::value(format!("{what} not found")))?;
            let pod = (found.pod.clone()).map_err(|e| Invalid::value(format!("{what}: {e}")))?;
            (pod, Some(found.replicas), None)
        }
    };
    let mut chunk = chunk;
    chunk.node_name = None;
    let by_replicas = spec.replicas.map(|r| r.max(0) as u64);
    // A share of the target's replicas, rounded up.
    let by_percentage = spec
        .percentage
        .zip(target)
        .map(|(p, n)| (p.max(0) as u64 * n.max(0) as u64).div_ceil(100));
    let limit = match &spec.limits {
        Some(limits) => Some(chunks_within(limits, &chunk)?),
        None => None,
    };
    let count = match (by_replicas.max(by_percentage), limit) {
        (Some(n), Some(limit)) => n.min(limit),
        (Some(n), None) => n,
        (None, Some(limit)) => limit,
        (None, None) => return Err(Invalid::value("give replicas, percentage or limits")),
    };
    Ok((chunk, u32::try_from(count).unwrap_or(u32::MAX), template))
}

/// How many chunks fit in `limits`, by every resource a chunk requests that the limits name.
fn chunks_within(
    limits: &std::collections::BTreeMap<
        String,
        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    >,
    chunk: &Pod,
) -> Result<u64, Invalid> {
    let mut fit: Option<u64> = None;
    for (resource, quantity) in limits {
        let limit: Quantity = (quantity.0.parse())
            .map_err(|e| Invalid::value(format!("limits.{resource} {:?}: {e}", quantity.0)))?;
        // Both in thousandths, as the API compares quantities.
        let (limit, each) = match resource.as_str() {
            "cpu" => (limit.millis(), chunk.demand.cpu_millis as i128),
            "memory" => (limit.value(), chunk.demand.memory_bytes as i128),
            "ephemeral-storage" => (limit.value(), chunk.demand.ephemeral_storage_bytes as i128),
            crate::model::GPU_RESOURCE => (limit.value(), chunk.demand.gpus as i128),
            other => (
                limit.value(),
                chunk.extended.get(other).copied().unwrap_or(0) as i128,
            ),
        };
        if each > 0 {
            let n = u64::try_from(limit.max(0) / each).unwrap_or(u64::MAX);
            fit = Some(fit.map_or(n, |f| f.min(n)));
        }
    }
    fit.ok_or_else(|| Invalid::value("limits name no resource a chunk requests"))
}

impl Resolved {
    /// The status to write back, where the buffer was read.
    pub fn written(&self) -> BufferStatus<'_> {
        BufferStatus {
            namespace: &self.namespace,
            name: &self.name,
            version: self.version,
            status: &self.status,
        }
    }

    /// The chunks this loop keeps room for (none when the buffer is not provisioned).
    pub fn reserved(&self) -> u32 {
        match (&self.chunk, &self.not_provisioned) {
            (Some(_), None) => self.chunks,
            _ => 0,
        }
    }

    /// Sets condition `kind` (see [`set_condition`]).
    fn set(&mut self, set: ConditionSet<'_>, now: SystemTime) {
        set_condition(&mut self.status.conditions, set, self.generation, now);
    }

    /// Sets `Provisioning` from where the loop put the buffer's chunks: `unmet` of them fit in no free room
    /// and in no node group (`why`, one group's reason).
    pub fn provisioned(&mut self, unmet: usize, why: Option<&str>, now: SystemTime) {
        let (ok, reason, message) = match self.not_provisioned.clone() {
            Some((reason, message)) => (false, reason, message),
            None if unmet > 0 => {
                let why = why.map(|w| format!(": {w}")).unwrap_or_default();
                let message = format!(
                    "{unmet} of {} chunk(s) fit in no node group{why}",
                    self.chunks
                );
                (false, NO_NODE_GROUP_FITS, message)
            }
            None => (
                true,
                INJECTED,
                format!("{} chunk(s) kept free", self.chunks),
            ),
        };
        self.set(
            ConditionSet {
                kind: PROVISIONING,
                ok,
                reason,
                message,
            },
            now,
        );
    }

    /// Sets `readyReplicas`, as upstream's status processor does after the loop: the chunks that fit on nodes
    /// the cluster has (`on_nodes`; not those on upcoming nodes, nor in a scale-up), for a buffer the loop
    /// took; any other buffer's is left as the object has it.
    pub fn set_ready_replicas(&mut self, on_nodes: usize) {
        if self.taken {
            self.status.ready_replicas = Some(i32::try_from(on_nodes).unwrap_or(i32::MAX));
        }
    }

    /// Whether the status differs from what the object has (so it must be written).
    pub fn changed(&self) -> bool {
        self.previous.as_ref() != Some(&self.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::conditions::time;
    use crate::k8s::{CapacityBuffer, Scalable, Template};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use serde_json::json;

    fn objects() -> BufferObjects {
        let template: k8s_openapi::api::core::v1::PodTemplate = serde_json::from_value(json!({
            "metadata": {"name": "chunk", "namespace": "shop", "generation": 3},
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}}
        }))
        .unwrap();
        let web: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 12, "selector": {}, "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}}
        }))
        .unwrap();
        BufferObjects {
            buffers: Vec::new(),
            templates: vec![Template::from_api(&template)],
            scalables: vec![Scalable::deployment(&web)],
        }
    }

    fn resolve_spec(spec: serde_json::Value) -> Resolved {
        let buffer: CapacityBuffer = serde_json::from_value(json!({
            "metadata": {"name": "b", "namespace": "shop", "generation": 2}, "spec": spec}))
        .unwrap();
        let read = VersionedBuffer {
            version: "v1beta1",
            buffer,
        };
        let mut resolved = resolve(&read, &objects(), SystemTime::UNIX_EPOCH);
        resolved.provisioned(0, None, SystemTime::UNIX_EPOCH);
        resolved
    }

    fn condition<'a>(r: &'a Resolved, kind: &str) -> Option<&'a Condition> {
        r.status.conditions.iter().find(|c| c.type_ == kind)
    }

    #[test]
    fn a_pod_template_buffer_is_ready_with_its_replicas_capped_by_limits() {
        let r = resolve_spec(json!({"podTemplateRef": {"name": "chunk"}, "replicas": 5}));
        assert_eq!((r.chunks, r.reserved()), (5, 5));
        assert_eq!(r.chunk.as_ref().unwrap().demand.cpu_millis, 2000);
        assert_eq!(r.status.pod_template_ref.as_ref().unwrap().name, "chunk");
        assert_eq!(r.status.pod_template_generation, Some(3));
        assert_eq!(r.status.replicas, Some(5));
        assert_eq!(
            r.status.provisioning_strategy.as_deref(),
            Some(ACTIVE_CAPACITY)
        );
        let ready = condition(&r, READY_FOR_PROVISIONING).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", READY)
        );
        assert_eq!(ready.observed_generation, Some(2));
        assert_eq!(condition(&r, PROVISIONING).unwrap().reason, INJECTED);
        // 7 CPUs hold three 2-CPU chunks; 100Gi of memory does not limit.
        let r = resolve_spec(json!({"podTemplateRef": {"name": "chunk"}, "replicas": 5,
                                    "limits": {"cpu": "7", "memory": "100Gi"}}));
        assert_eq!(r.chunks, 3);
        // Limits alone: as many chunks as fit.
        let r = resolve_spec(
            json!({"podTemplateRef": {"name": "chunk"}, "limits": {"memory": "17Gi"}}),
        );
        assert_eq!(r.chunks, 4);
    }

    #[test]
    fn a_scalable_buffer_takes_the_larger_of_replicas_and_its_share_of_the_target() {
        // 12 replicas: 20% is 2.4, rounded up to 3.
        let web = json!({"apiGroup": "apps", "kind": "Deployment", "name": "web"});
        let r = resolve_spec(json!({"scalableRef": web, "percentage": 20}));
        assert_eq!(r.chunks, 3);
        assert_eq!(r.chunk.as_ref().unwrap().labels["app"], "web");
        assert_eq!(r.status.pod_template_ref, None);
        let r = resolve_spec(json!({"scalableRef": web, "percentage": 20, "replicas": 4}));
        assert_eq!(r.chunks, 4);
        let r = resolve_spec(json!({"scalableRef": web, "percentage": 50, "replicas": 4}));
        assert_eq!(r.chunks, 6);
    }

    #[test]
    fn every_invalid_spec_says_what_is_wrong_and_reserves_nothing() {
        let web = json!({"apiGroup": "apps", "kind": "Deployment", "name": "web"});
        for (spec, expected) in [
            (
                json!({"podTemplateRef": {"name": "chunk"}, "scalableRef": web, "replicas": 1}),
                "not both",
            ),
            (json!({"replicas": 1}), "give podTemplateRef or scalableRef"),
            (
                json!({"podTemplateRef": {"name": "gone"}, "replicas": 1}),
                "PodTemplate shop/gone not found",
            ),
            (
                json!({"podTemplateRef": {"name": "chunk"}, "percentage": 10}),
                "needs scalableRef",
            ),
            (
                json!({"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "api"}, "replicas": 1}),
                "Deployment shop/api not found",
            ),
            (
                json!({"scalableRef": {"apiGroup": "argoproj.io", "kind": "Rollout", "name": "web"}, "replicas": 1}),
                "argoproj.io/Rollout",
            ),
            (
                json!({"podTemplateRef": {"name": "chunk"}}),
                "give replicas, percentage or limits",
            ),
            (
                json!({"podTemplateRef": {"name": "chunk"}, "limits": {"nvidia.com/gpu": "1"}}),
                "no resource a chunk requests",
            ),
            (
                json!({"podTemplateRef": {"name": "chunk"}, "limits": {"cpu": "lots"}}),
                "limits.cpu \"lots\"",
            ),
        ] {
            let r = resolve_spec(spec.clone());
            let ready = condition(&r, READY_FOR_PROVISIONING).unwrap();
            assert_eq!(ready.status, "False", "{spec}");
            assert!(
                ready.message.contains(expected),
                "{spec}: {}",
                ready.message
            );
            assert_eq!((r.reserved(), r.status.replicas), (0, None), "{spec}");
            let provisioning = condition(&r, PROVISIONING).unwrap();
            assert_eq!(provisioning.reason, NOT_READY_FOR_PROVISIONING, "{spec}");
        }
    }

    #[test]
    fn limits_smaller_than_one_chunk_make_an_empty_buffer() {
        let r = resolve_spec(
            json!({"podTemplateRef": {"name": "chunk"}, "replicas": 3, "limits": {"cpu": "1"}}),
        );
        assert_eq!(
            condition(&r, READY_FOR_PROVISIONING).unwrap().status,
            "True"
        );
        assert_eq!((r.status.replicas, r.reserved()), (Some(0), 0));
        let provisioning = condition(&r, PROVISIONING).unwrap();
        assert_eq!(
            (provisioning.status.as_str(), provisioning.reason.as_str()),
            ("False", EMPTY)
        );
    }

    #[test]
    fn another_strategy_is_left_alone_and_said_so() {
        let r = resolve_spec(json!({"podTemplateRef": {"name": "chunk"}, "replicas": 2,
                                    "provisioningStrategy": "example.com/standby"}));
        assert_eq!(r.reserved(), 0);
        assert!(condition(&r, READY_FOR_PROVISIONING).is_none());
        let provisioning = condition(&r, PROVISIONING).unwrap();
        assert_eq!(provisioning.reason, UNSUPPORTED_STRATEGY);
        assert!(provisioning.message.contains("example.com/standby"));
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut r = resolve_spec(json!({"podTemplateRef": {"name": "chunk"}, "replicas": 2}));
        let later = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(600);
        r.provisioned(1, Some("general: max size reached"), later);
        let provisioning = condition(&r, PROVISIONING).unwrap().clone();
        assert_eq!(provisioning.reason, NO_NODE_GROUP_FITS);
        assert_eq!(
            provisioning.message,
            "1 of 2 chunk(s) fit in no node group: general: max size reached"
        );
        assert_eq!(provisioning.last_transition_time, time(later));
        // Ready did not change status: its time stays.
        let ready = condition(&r, READY_FOR_PROVISIONING).unwrap();
        assert_eq!(ready.last_transition_time, time(SystemTime::UNIX_EPOCH));
        assert!(r.changed());
    }

    #[test]
    fn ready_replicas_are_set_for_the_buffers_the_loop_takes() {
        let ready_after = |spec: serde_json::Value, previous: Option<serde_json::Value>| {
            let buffer: CapacityBuffer = serde_json::from_value(json!({
                "metadata": {"name": "b", "namespace": "shop", "generation": 2},
                "spec": spec, "status": previous}))
            .unwrap();
            let read = VersionedBuffer {
                version: "v1beta1",
                buffer,
            };
            let mut resolved = resolve(&read, &objects(), SystemTime::UNIX_EPOCH);
            resolved.set_ready_replicas(2);
            resolved.status.ready_replicas
        };
        let chunk = json!({"name": "chunk"});
        assert_eq!(
            ready_after(json!({"podTemplateRef": chunk, "replicas": 3}), None),
            Some(2)
        );
        // Not ready, and never provisioning: left as it is (none).
        let broken = json!({"podTemplateRef": {"name": "gone"}, "replicas": 3});
        assert_eq!(ready_after(broken.clone(), None), None);
        // Not ready any more after it was provisioning: upstream's processor still takes it.
        let provisioning = json!({"readyReplicas": 5, "conditions": [{"type": "Provisioning",
            "status": "True", "reason": "FakePodsInjected", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        assert_eq!(ready_after(broken, Some(provisioning.clone())), Some(2));
        // Another strategy's keeps what it has.
        let other = json!({"podTemplateRef": chunk, "replicas": 3,
                           "provisioningStrategy": "example.com/standby"});
        assert_eq!(ready_after(other, Some(provisioning)), Some(5));
    }
}
