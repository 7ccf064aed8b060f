//! SIG Autoscaling's ProvisioningRequest resource (`autoscaling.x-k8s.io`, served as `v1` and `v1beta1`, the
//! same shape), as cluster-autoscaler 1.30+ and Kueue's ProvisioningRequest admission check read it: "is there
//! room for all N pods of this job?" and "give me room for all of them or none". Only the wire types and
//! upstream's names live here; what the loop does with a request is in `autoscaler::provreq`.

use crate::k8s::autoscaling_group::{CustomResource, read_object};
use crate::k8s::capacity_buffer::{LocalObjectRef, Template};
use crate::model::Invalid;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const KIND: &str = "ProvisioningRequest";
pub const PLURAL: &str = "provisioningrequests";
/// The versions read, the preferred first.
pub const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The classes served: places the pods on the cluster as it is and books the room, or scales up for all of
/// them at once.
pub const CHECK_CAPACITY: &str = "check-capacity.autoscaling.x-k8s.io";
pub const BEST_EFFORT_ATOMIC: &str = "best-effort-atomic-scale-up.autoscaling.x-k8s.io";

/// Condition types, as upstream's API names them.
pub const ACCEPTED: &str = "Accepted";
pub const PROVISIONED: &str = "Provisioned";
pub const FAILED: &str = "Failed";
pub const BOOKING_EXPIRED: &str = "BookingExpired";

/// The parameter that makes a check-capacity request fail at the first check that finds no room.
pub const NO_RETRY: &str = "noRetry";

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequest {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: RequestSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RequestStatus>,
}

impl ProvisioningRequest {
    /// The resource's plural and the versions served, as the RBAC and the CRD in `deploy/` name them.
    pub const PLURAL: &'static str = PLURAL;
    pub const VERSIONS: [&'static str; 2] = VERSIONS;
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RequestSpec {
    #[serde(default)]
    pub provisioning_class_name: String,
    #[serde(default)]
    pub pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSet {
    #[serde(default)]
    pub pod_template_ref: LocalObjectRef,
    #[serde(default)]
    pub count: i32,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RequestStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provisioning_class_details: BTreeMap<String, String>,
}

/// What the requests of a cluster refer to, read with them: the requests and the PodTemplates they name.
#[derive(Clone, Debug, Default)]
pub struct RequestObjects {
    pub requests: Vec<VersionedRequest>,
    pub templates: Vec<Template>,
}

/// A request as read, with the version it was read as (its status is written back in that version).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedRequest {
    pub version: &'static str,
    pub request: ProvisioningRequest,
}

impl VersionedRequest {
    /// A request as a file writes it (a snapshot's item, a demo script's): its `apiVersion` must be one of
    /// ours and it must have a name.
    pub fn from_value(object: serde_json::Value) -> Result<VersionedRequest, Invalid> {
        ProvisioningRequest::read(object)
    }
}

impl CustomResource for ProvisioningRequest {
    const KIND: &'static str = KIND;
    const PLURAL: &'static str = PLURAL;
    const VERSIONS: &'static [&'static str] = &VERSIONS;
    type Status = RequestStatus;
    type Read = VersionedRequest;

    fn read(object: serde_json::Value) -> Result<VersionedRequest, Invalid> {
        let (version, request) = read_object::<ProvisioningRequest, _>(object)?;
        Ok(VersionedRequest { version, request })
    }
}

/// `namespace/name` of a request.
pub fn request_key(request: &ProvisioningRequest) -> String {
    let metadata = &request.metadata;
    let namespace = metadata.namespace.as_deref().unwrap_or("default");
    format!(
        "{namespace}/{}",
        metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::autoscaling_group::version_in;

    #[test]
    fn reads_a_request_as_kueue_writes_it() {
        let read = VersionedRequest::from_value(serde_json::json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": "train", "namespace": "ml", "generation": 2},
            "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                     "podSets": [{"podTemplateRef": {"name": "worker"}, "count": 8}],
                     "parameters": {"noRetry": "true"}}
        }))
        .unwrap();
        assert_eq!(read.version, "v1");
        let spec = &read.request.spec;
        assert_eq!(spec.provisioning_class_name, BEST_EFFORT_ATOMIC);
        assert_eq!(spec.pod_sets[0].pod_template_ref.name, "worker");
        assert_eq!(spec.pod_sets[0].count, 8);
        assert_eq!(spec.parameters[NO_RETRY], "true");
        assert_eq!(
            version_in("autoscaling.x-k8s.io/v1beta1", &VERSIONS),
            Some("v1beta1")
        );
        assert_eq!(version_in("autoscaling.x-k8s.io/v1alpha1", &VERSIONS), None);
        let wrong = VersionedRequest::from_value(serde_json::json!({
            "apiVersion": "autoscaling.x-k8s.io/v2", "kind": "ProvisioningRequest",
            "metadata": {"name": "x"}
        }));
        assert!(
            wrong
                .unwrap_err()
                .to_string()
                .contains("read as autoscaling.x-k8s.io/v1 or")
        );
    }
}
