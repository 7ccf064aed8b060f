//! SIG Autoscaling's CapacityBuffer resource (`autoscaling.x-k8s.io`, served as `v1beta1` and `v1alpha1`, the
//! same shape), as cluster-autoscaler 1.34 and Karpenter read it: how users ask an autoscaler for spare
//! capacity. Only the wire types and the buffer read as a `CustomResource` live here; what a buffer asks for
//! is worked out in `autoscaler::headroom`.

use crate::k8s::autoscaling_group::{CustomResource, read_object};
use crate::k8s::objects;
use crate::model::{Invalid, Pod};
use k8s_openapi::api::core::v1::{PodTemplate, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const KIND: &str = "CapacityBuffer";
pub const PLURAL: &str = "capacitybuffers";
/// The versions read, the preferred first.
pub const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
/// The default strategy, and the only one an autoscaler provisions: chunks become virtual pods.
pub const ACTIVE_CAPACITY: &str = "buffer.x-k8s.io/active-capacity";

/// The condition types and reasons a user of cluster-autoscaler reads.
pub const READY_FOR_PROVISIONING: &str = "ReadyForProvisioning";
pub const PROVISIONING: &str = "Provisioning";

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapacityBuffer {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: BufferSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<BufferStatus>,
}

impl CapacityBuffer {
    /// The resource's plural and the versions served, as the RBAC and the CRD in `deploy/` name them.
    pub const PLURAL: &'static str = PLURAL;
    pub const VERSIONS: [&'static str; 2] = VERSIONS;
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BufferSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_ref: Option<LocalObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalable_ref: Option<ScalableRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, Quantity>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct LocalObjectRef {
    #[serde(default)]
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ScalableRef {
    /// Empty for the core group.
    #[serde(default)]
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BufferStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_ref: Option<LocalObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Of `replicas`, the chunks that fit on the nodes the cluster has now (cluster-autoscaler 1.37's field,
    /// written by the autoscaler; left out of a write where the loop does not reconcile it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_strategy: Option<String>,
}

impl CapacityBuffer {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.metadata.namespace.as_deref().unwrap_or("default"),
            self.metadata.name.as_deref().unwrap_or_default()
        )
    }
}

/// What the buffers of a cluster refer to, read with them: the buffers, the PodTemplates, and the objects
/// with a scale subresource whose pod templates buffers may take.
#[derive(Clone, Debug, Default)]
pub struct BufferObjects {
    pub buffers: Vec<VersionedBuffer>,
    pub templates: Vec<Template>,
    pub scalables: Vec<Scalable>,
}

/// A buffer as read, with the version it was read as (its status is written back in that version).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedBuffer {
    pub version: &'static str,
    pub buffer: CapacityBuffer,
}

/// A PodTemplate: the shape of one chunk, or why its pod cannot be read.
#[derive(Clone, Debug)]
pub struct Template {
    pub namespace: String,
    pub name: String,
    pub generation: i64,
    pub pod: Result<Pod, Invalid>,
}

/// A Deployment, StatefulSet, ReplicaSet or Job: its replicas now and the pod its template makes.
#[derive(Clone, Debug)]
pub struct Scalable {
    pub api_group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub replicas: i32,
    pub pod: Result<Pod, Invalid>,
}

fn owner(api_version: &str, kind: &str, metadata: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: metadata.name.clone().unwrap_or_default(),
        uid: metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        ..OwnerReference::default()
    }
}

fn chunk(
    metadata: &ObjectMeta,
    owner: OwnerReference,
    template: Option<&PodTemplateSpec>,
) -> Result<Pod, Invalid> {
    let namespace = metadata.namespace.as_deref().unwrap_or("default");
    let name = format!("{}-template", metadata.name.as_deref().unwrap_or_default());
    objects::template_pod(namespace, &name, owner, template)
        .map_err(|e| Invalid::value(e.to_string()))
}

impl Template {
    pub fn from_api(template: &PodTemplate) -> Template {
        let metadata = &template.metadata;
        Template {
            namespace: metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            name: metadata.name.clone().unwrap_or_default(),
            generation: metadata.generation.unwrap_or(0),
            pod: chunk(
                metadata,
                owner("v1", "PodTemplate", metadata),
                template.template.as_ref(),
            ),
        }
    }
}

impl Scalable {
    fn new(
        api_group: &str,
        kind: &str,
        metadata: &ObjectMeta,
        replicas: Option<i32>,
        template: Option<&PodTemplateSpec>,
    ) -> Scalable {
        let api_version = if api_group.is_empty() {
            "v1".to_string()
        } else {
            format!("{api_group}/v1")
        };
        Scalable {
            api_group: api_group.into(),
            kind: kind.into(),
            namespace: metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            name: metadata.name.clone().unwrap_or_default(),
            // The API server defaults replicas (and a Job's parallelism) to 1.
            replicas: replicas.unwrap_or(1),
            pod: chunk(metadata, owner(&api_version, kind, metadata), template),
        }
    }

    pub fn deployment(d: &k8s_openapi::api::apps::v1::Deployment) -> Scalable {
        let spec = d.spec.as_ref();
        let (replicas, template) = (spec.and_then(|s| s.replicas), spec.map(|s| &s.template));
        Scalable::new("apps", "Deployment", &d.metadata, replicas, template)
    }

    pub fn stateful_set(s: &k8s_openapi::api::apps::v1::StatefulSet) -> Scalable {
        let spec = s.spec.as_ref();
        let (replicas, template) = (spec.and_then(|s| s.replicas), spec.map(|s| &s.template));
        Scalable::new("apps", "StatefulSet", &s.metadata, replicas, template)
    }

    pub fn replica_set(r: &k8s_openapi::api::apps::v1::ReplicaSet) -> Scalable {
        let spec = r.spec.as_ref();
        let replicas = spec.and_then(|s| s.replicas);
        let template = spec.and_then(|s| s.template.as_ref());
        Scalable::new("apps", "ReplicaSet", &r.metadata, replicas, template)
    }

    /// A Job scales by its parallelism.
    pub fn job(j: &k8s_openapi::api::batch::v1::Job) -> Scalable {
        let spec = j.spec.as_ref();
        let (replicas, template) = (spec.and_then(|s| s.parallelism), spec.map(|s| &s.template));
        Scalable::new("batch", "Job", &j.metadata, replicas, template)
    }
}

impl VersionedBuffer {
    /// A buffer as a file writes it (a snapshot's item, a demo script's): its `apiVersion` must be one of ours
    /// and it must have a name.
    pub fn from_value(object: serde_json::Value) -> Result<VersionedBuffer, Invalid> {
        CapacityBuffer::read(object)
    }
}

impl CustomResource for CapacityBuffer {
    const KIND: &'static str = KIND;
    const PLURAL: &'static str = PLURAL;
    const VERSIONS: &'static [&'static str] = &VERSIONS;
    type Status = BufferStatus;
    type Read = VersionedBuffer;

    fn read(object: serde_json::Value) -> Result<VersionedBuffer, Invalid> {
        let (version, buffer) = read_object::<CapacityBuffer, _>(object)?;
        Ok(VersionedBuffer { version, buffer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::autoscaling_group::version_in;

    #[test]
    fn reads_a_buffer_as_upstreams_documentation_writes_it() {
        let buffer: CapacityBuffer = serde_json::from_value(serde_json::json!({
            "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": "my-app-buffer", "namespace": "default"},
            "spec": {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "my-app"},
                     "replicas": 5, "limits": {"cpu": "10"}}
        }))
        .unwrap();
        assert_eq!(buffer.key(), "default/my-app-buffer");
        let scalable = buffer.spec.scalable_ref.as_ref().unwrap();
        assert_eq!(
            (scalable.api_group.as_str(), scalable.kind.as_str()),
            ("apps", "Deployment")
        );
        assert_eq!(buffer.spec.replicas, Some(5));
        assert_eq!(buffer.spec.limits.unwrap()["cpu"].0, "10");
        assert_eq!(
            version_in("autoscaling.x-k8s.io/v1alpha1", &VERSIONS),
            Some("v1alpha1")
        );
        assert_eq!(version_in("autoscaling.x-k8s.io/v2", &VERSIONS), None);
        assert_eq!(version_in("apps/v1", &VERSIONS), None);
    }
}
