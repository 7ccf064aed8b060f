//! Nodes and pods read once into the model: from the kube API's types (k8s-openapi; snapshots and the live
//! cluster) and, for template nodes, from cluster-autoscaler's protobuf (k8s-pb).

use crate::k8s::pod::PodFacts;
use crate::k8s::quantity::Quantity;
use crate::model::{
    CORDONED_ANNOTATION, Controller, Disruption, GPU_RESOURCE, NODE_MONITORING_CONDITIONS, Node,
    NodeProblem, Pdb, Phase, Pod, PodDra, Resources, SafeToEvict, Taint, TaintEffect,
};
use k8s_openapi::api::core::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

pub use super::object_error::ObjectError;
use super::object_error::invalid;
use super::scheduling::{label_selector, scheduling};

/// Whether a pod read from the kube API keeps its JSON: a pending one's is what the provider's MatchPod
/// reads; a pod only counted (a template's, one on a node) needs none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodJson {
    KeepIfPending,
    Drop,
}

/// A pod from the kube API; `json` says whether it keeps its JSON when it is pending.
pub fn pod_from_api(pod: &api::Pod, json: PodJson) -> Result<Pod, ObjectError> {
    let facts = PodFacts::from_api(pod)?;
    let key = facts.key();
    let default_spec = api::PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let status = pod.status.as_ref();
    let node_name = spec.node_name.clone().filter(|n| !n.is_empty());
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded" | "Failed") => Phase::Terminal,
        Some("Running") => Phase::Running,
        _ if node_name.is_some() => Phase::Running,
        _ => Phase::Pending,
    };
    let unschedulable = marked_unschedulable(status);
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| {
            Arc::new(Controller {
                kind: o.kind.clone(),
                name: o.name.clone(),
                uid: o.uid.clone(),
            })
        });
    let claims = crate::k8s::dra::pod_claims(&key, spec, status)?;
    // The uid is what claims name their pod by (owner, reservations): kept for pods with claims only.
    let dra = match claims.is_empty() {
        true => None,
        false => Some(Box::new(PodDra {
            claims,
            uid: pod.metadata.uid.as_deref().map(Into::into),
            needs: None,
            extended_claim: None,
        })),
    };
    let json = if json == PodJson::KeepIfPending && node_name.is_none() {
        Some(serde_json::to_string(pod).map_err(|e| invalid(&key, e.to_string()))?)
    } else {
        None
    };
    Ok(Pod {
        scheduling: Arc::new(scheduling(&key, &facts.namespace, &facts.labels, spec)?),
        namespace: facts.namespace.into(),
        name: facts.name,
        labels: facts.labels,
        demand: facts.demand,
        extended: facts.extended,
        priority: spec.priority,
        controller,
        scheduler_name: facts.scheduler_name,
        node_name: node_name.map(Into::into),
        nominated_node: status
            .and_then(|s| s.nominated_node_name.clone())
            .filter(|n| !n.is_empty()),
        phase,
        unschedulable,
        deleted: pod.metadata.deletion_timestamp.as_ref().map(time),
        created: pod.metadata.creation_timestamp.as_ref().map(time),
        scale_up_delay: pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SCALE_UP_DELAY_ANNOTATION))
            .map(|text| {
                humantime::parse_duration(text).map_err(|e| {
                    invalid(&key, format!("{SCALE_UP_DELAY_ANNOTATION}: {text:?}: {e}"))
                })
            })
            .transpose()?,
        json,
        disruption: disruption(pod.metadata.annotations.as_ref(), spec),
        consumes: (pod.metadata.annotations.as_ref())
            .and_then(consumed)
            .map(str::to_string),
        dra,
    })
}

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const SAFE_TO_EVICT_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
const SAFE_TO_EVICT_VOLUMES_ANNOTATION: &str =
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";
const DO_NOT_DISRUPT_ANNOTATION: &str = "karpenter.sh/do-not-disrupt";
const SCALE_DOWN_DISABLED_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
/// A pod that consumes a ProvisioningRequest names it (in the pod's namespace) in this annotation; the
/// second is the form cluster-autoscaler read before the API moved to `autoscaling.x-k8s.io`.
pub const CONSUME_ANNOTATION: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
pub const CONSUME_ANNOTATION_OLD: &str =
    "cluster-autoscaler.kubernetes.io/consume-provisioning-request";

/// The request a pod consumes (in its own namespace), from its annotations.
fn consumed(annotations: &BTreeMap<String, String>) -> Option<&str> {
    (annotations.get(CONSUME_ANNOTATION))
        .or_else(|| annotations.get(CONSUME_ANNOTATION_OLD))
        .map(String::as_str)
        .filter(|name| !name.is_empty())
}

/// What the drainability rules read: annotations, volumes on the node's disk, the grace period.
fn disruption(annotations: Option<&BTreeMap<String, String>>, spec: &api::PodSpec) -> Disruption {
    let annotation = |name: &str| annotations.and_then(|a| a.get(name)).map(String::as_str);
    let safe_volumes: Vec<&str> = annotation(SAFE_TO_EVICT_VOLUMES_ANNOTATION)
        .map(|list| list.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let local_volumes = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.host_path.is_some()
                || v.empty_dir
                    .as_ref()
                    .is_some_and(|e| e.medium.as_deref() != Some("Memory"))
        })
        .map(|v| v.name.clone())
        .filter(|name| !safe_volumes.contains(&name.as_str()))
        .collect();
    Disruption {
        mirror: annotation(MIRROR_ANNOTATION).is_some(),
        safe_to_evict: match annotation(SAFE_TO_EVICT_ANNOTATION) {
            Some("true") => SafeToEvict::Yes,
            Some("false") => SafeToEvict::No,
            Some("on-completion") => SafeToEvict::OnCompletion,
            _ => SafeToEvict::Unset,
        },
        local_volumes,
        grace_period_seconds: spec
            .termination_grace_period_seconds
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(30),
        do_not_disrupt: annotation(DO_NOT_DISRUPT_ANNOTATION) == Some("true"),
    }
}

/// PodScheduled=False with reason Unschedulable: the scheduler tried and found no node.
pub fn marked_unschedulable(status: Option<&api::PodStatus>) -> bool {
    status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
}

const SCALE_UP_DELAY_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay";

/// A Kubernetes time as a `SystemTime`, to the second.
pub fn time(t: &meta::Time) -> SystemTime {
    let seconds = u64::try_from(t.0.as_second()).unwrap_or(0);
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(seconds)
}

/// Node resources from `status.allocatable` or `capacity`, by name.
fn node_resources<'a>(
    object: &str,
    quantities: impl Iterator<Item = (&'a String, &'a str)>,
) -> Result<(Resources, BTreeMap<String, u64>), ObjectError> {
    let mut resources = Resources::default();
    let mut extended = BTreeMap::new();
    for (name, text) in quantities {
        let quantity: Quantity = text
            .parse()
            .map_err(|e| invalid(object, format!("{name}: {e}")))?;
        let value = u64::try_from(quantity.value()).unwrap_or(0);
        match name.as_str() {
            "cpu" => resources.cpu_millis = u64::try_from(quantity.millis()).unwrap_or(0),
            "memory" => resources.memory_bytes = value,
            "ephemeral-storage" => resources.ephemeral_storage_bytes = value,
            "pods" => resources.pods = value,
            GPU_RESOURCE => resources.gpus = value,
            other if other.starts_with("hugepages-") => {}
            other => {
                extended.insert(other.to_string(), value);
            }
        }
    }
    Ok((resources, extended))
}

fn taint_effect(object: &str, text: &str) -> Result<TaintEffect, ObjectError> {
    TaintEffect::parse(text).ok_or_else(|| invalid(object, format!("taint effect {text:?}")))
}

/// A node from the kube API.
pub fn node_from_api(node: &api::Node) -> Result<Node, ObjectError> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let object = format!("node {name}");
    let spec = node.spec.clone().unwrap_or_default();
    let status = node.status.clone().unwrap_or_default();
    type Quantities =
        Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>;
    fn strings(map: &Quantities) -> impl Iterator<Item = (&String, &str)> {
        map.iter().flatten().map(|(k, v)| (k, v.0.as_str()))
    }
    let (allocatable, extended) = node_resources(&object, strings(&status.allocatable))?;
    let (capacity, _) = node_resources(&object, strings(&status.capacity))?;
    Ok(Node {
        provider_id: spec.provider_id.clone().unwrap_or_default(),
        labels: node.metadata.labels.clone().unwrap_or_default().into(),
        taints: spec
            .taints
            .iter()
            .flatten()
            .map(|t| {
                Ok(Taint {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: taint_effect(&object, &t.effect)?,
                })
            })
            .collect::<Result<_, ObjectError>>()?,
        // Without a capacity, allocatable is all we know.
        capacity: if status.capacity.is_some() {
            capacity
        } else {
            allocatable
        },
        allocatable,
        extended,
        ready: status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
        unschedulable: spec.unschedulable.unwrap_or(false),
        cordoned_by_ekscale: (node.metadata.annotations.as_ref())
            .and_then(|a| a.get(CORDONED_ANNOTATION))
            .cloned(),
        created: node.metadata.creation_timestamp.as_ref().map(time),
        scale_down_disabled: annotated(node, SCALE_DOWN_DISABLED_ANNOTATION),
        do_not_disrupt: annotated(node, DO_NOT_DISRUPT_ANNOTATION),
        problems: (status.conditions.iter().flatten())
            .filter(|c| {
                c.status == "False" && NODE_MONITORING_CONDITIONS.contains(&c.type_.as_str())
            })
            .map(|c| NodeProblem {
                condition: c.type_.clone(),
                reason: c.reason.clone().unwrap_or_default(),
                since: c.last_transition_time.as_ref().map(time),
            })
            .collect(),
        name,
    })
}

/// Whether `node` carries `key: "true"`.
fn annotated(node: &api::Node, key: &str) -> bool {
    (node.metadata.annotations.as_ref())
        .and_then(|a| a.get(key))
        .is_some_and(|v| v == "true")
}

/// The pod a DaemonSet would run on a new node: its template, owned by it.
pub fn daemonset_pod(ds: &k8s_openapi::api::apps::v1::DaemonSet) -> Result<Pod, ObjectError> {
    let namespace = ds.metadata.namespace.as_deref().unwrap_or("default");
    let name = ds.metadata.name.clone().unwrap_or_default();
    let template = ds.spec.as_ref().map(|s| &s.template);
    let owner = meta::OwnerReference {
        api_version: "apps/v1".into(),
        kind: "DaemonSet".into(),
        name: name.clone(),
        uid: ds.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        ..meta::OwnerReference::default()
    };
    template_pod(namespace, &format!("{name}-template"), owner, template)
}

/// The pod `template` makes: pending, named `name` in `namespace`, owned by `owner`.
pub fn template_pod(
    namespace: &str,
    name: &str,
    owner: meta::OwnerReference,
    template: Option<&api::PodTemplateSpec>,
) -> Result<Pod, ObjectError> {
    let template = template.cloned().unwrap_or_default();
    let mut metadata = template.metadata.unwrap_or_default();
    metadata.namespace = Some(namespace.to_string());
    metadata.name = Some(name.to_string());
    metadata.owner_references = Some(vec![owner]);
    let pod = api::Pod {
        metadata,
        spec: template.spec,
        status: None,
    };
    pod_from_api(&pod, PodJson::Drop)
}

/// A PodDisruptionBudget from the kube API.
pub fn pdb_from_api(
    pdb: &k8s_openapi::api::policy::v1::PodDisruptionBudget,
) -> Result<Pdb, ObjectError> {
    let namespace = pdb
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let name = pdb.metadata.name.clone().unwrap_or_default();
    let key = format!("pdb {namespace}/{name}");
    Ok(Pdb {
        selector: label_selector(&key, pdb.spec.as_ref().and_then(|s| s.selector.as_ref()))?,
        disruptions_allowed: pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
        namespace,
        name,
    })
}

/// A template node from a provider (`v1.Node` protobuf).
pub fn node_from_pb(node: &k8s_pb::api::core::v1::Node) -> Result<Node, ObjectError> {
    let meta = node.metadata.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let object = format!("template node {name}");
    let spec = node.spec.clone().unwrap_or_default();
    let status = node.status.clone().unwrap_or_default();
    fn strings(
        map: &BTreeMap<String, k8s_pb::apimachinery::pkg::api::resource::Quantity>,
    ) -> impl Iterator<Item = (&String, &str)> {
        map.iter()
            .map(|(k, v)| (k, v.string.as_deref().unwrap_or("0")))
    }
    let (allocatable, extended) = node_resources(&object, strings(&status.allocatable))?;
    let (capacity, _) = node_resources(&object, strings(&status.capacity))?;
    Ok(Node {
        provider_id: spec.provider_id.clone().unwrap_or_default(),
        labels: meta.labels.into(),
        taints: spec
            .taints
            .iter()
            .map(|t| {
                Ok(Taint {
                    key: t.key.clone().unwrap_or_default(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: taint_effect(&object, t.effect.as_deref().unwrap_or(""))?,
                })
            })
            .collect::<Result<_, ObjectError>>()?,
        capacity: if status.capacity.is_empty() {
            allocatable
        } else {
            capacity
        },
        allocatable,
        extended,
        // A template stands for a node that will be Ready; providers that leave conditions out mean that too.
        ready: true,
        unschedulable: spec.unschedulable.unwrap_or(false),
        cordoned_by_ekscale: None,
        created: None,
        scale_down_disabled: false,
        do_not_disrupt: false,
        // A template stands for a healthy node.
        problems: Vec::new(),
        name,
    })
}

/// A pod as `Pod.Marshal()` bytes for a provider's pricing and Fargate matching: its name, labels,
/// scheduler and one container asking for what the whole pod needs. Pods read from the API are sent as they
/// were read where the rest matters (Fargate's incompatibilities).
pub fn pod_to_pb_bytes(pod: &Pod) -> Vec<u8> {
    use k8s_pb::api::core::v1 as pb;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity as PbQuantity;
    use prost::Message;
    let q = |s: String| PbQuantity { string: Some(s) };
    let mut requests = BTreeMap::from([
        (
            "cpu".to_string(),
            q(crate::k8s::quantity::cpu(pod.demand.cpu_millis)),
        ),
        (
            "memory".to_string(),
            q(crate::k8s::quantity::bytes(pod.demand.memory_bytes)),
        ),
    ]);
    if pod.demand.gpus > 0 {
        requests.insert(
            GPU_RESOURCE.into(),
            q(crate::k8s::quantity::count(pod.demand.gpus)),
        );
    }
    pb::Pod {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(pod.name.clone()),
            namespace: Some(pod.namespace.to_string()),
            labels: pod.labels.clone().into(),
            ..Default::default()
        }),
        spec: Some(pb::PodSpec {
            scheduler_name: Some(pod.scheduler_name.clone()),
            containers: vec![pb::Container {
                name: Some("main".into()),
                resources: Some(pb::ResourceRequirements {
                    requests,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_names_its_request_in_either_annotation() {
        let one = |key: &str, value: &str| BTreeMap::from([(key.to_string(), value.to_string())]);
        assert_eq!(consumed(&one(CONSUME_ANNOTATION, "train")), Some("train"));
        assert_eq!(consumed(&one(CONSUME_ANNOTATION_OLD, "old")), Some("old"));
        assert_eq!(consumed(&one(CONSUME_ANNOTATION, "")), None);
        assert_eq!(consumed(&one("other", "train")), None);
    }
}
