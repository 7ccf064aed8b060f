//! SIG Autoscaling's CapacityQuota resource (`autoscaling.x-k8s.io`, cluster-scoped, served as `v1beta1`, the
//! storage version, and `v1alpha1`, deprecated: the same schema, no conversion) as cluster-autoscaler 1.36+
//! reads it: the wire types, and each object read once into `model::CapacityQuota`, valid or carrying its
//! problem. What the loop does with a quota is the companion's.

use crate::k8s::autoscaling_group::{CustomResource, read_version};
use crate::k8s::objects;
use crate::model::{
    self, Invalid, Labels, Quantity, QuotaCondition, QuotaSpec, QuotaStatus, QuotaVersion,
    WrittenLimit, WrittenRequirement,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const KIND: &str = "CapacityQuota";
pub const PLURAL: &str = "capacityquotas";
/// The versions read, the preferred (storage) first.
pub const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];

/// The conditions upstream's controller writes (the valid one renamed in cluster-autoscaler 1.37 from
/// `Valid`; upstream enforces only quotas it marked valid, the companion whatever the status says).
pub const VALID_CONDITION: &str = "cluster-autoscaler.kubernetes.io/valid";
pub const VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";
pub const VALIDATION_FAILED: &str = "ValidationFailed";
pub const RECONCILED_CONDITION: &str = "Reconciled";
pub const RECONCILIATION_SUCCEEDED: &str = "ReconciliationSucceeded";
pub const RECONCILIATION_FAILED: &str = "ReconciliationFailed";

/// A CapacityQuota as the API server serves it. Its spec is kept as JSON until it is read into the model,
/// so that a quota the companion cannot read still has a name to report its problem under.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapacityQuotaObject {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CapacityQuotaStatus>,
}

impl CapacityQuotaObject {
    /// The resource's plural and the versions served, as the RBAC and the CRD in `deploy/` name them.
    pub const PLURAL: &'static str = PLURAL;
    pub const VERSIONS: [&'static str; 2] = VERSIONS;
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QuotaObjectSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Limits {
    /// Int-or-string quantities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, serde_json::Value>>,
}

/// `status` as upstream's controller writes it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapacityQuotaStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Usage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Usage {
    /// Int-or-string quantities.
    #[serde(default)]
    pub resources: BTreeMap<String, serde_json::Value>,
}

/// A CapacityQuota as a file or the API server writes it, read into the model. Only an object without a
/// name is an error: anything else wrong (an `apiVersion` not ours, a bad selector or limit) makes a quota
/// that carries its problem, to be reported and not enforced.
pub fn quota_from_value(object: serde_json::Value) -> Result<model::CapacityQuota, Invalid> {
    CapacityQuotaObject::read(object)
}

impl CustomResource for CapacityQuotaObject {
    const KIND: &'static str = KIND;
    const PLURAL: &'static str = PLURAL;
    const VERSIONS: &'static [&'static str] = &VERSIONS;
    type Status = CapacityQuotaStatus;
    type Read = model::CapacityQuota;

    fn read(object: serde_json::Value) -> Result<model::CapacityQuota, Invalid> {
        read_quota(object)
    }
}

/// [`quota_from_value`]'s work: the object, its version among ours, its spec checked.
fn read_quota(object: serde_json::Value) -> Result<model::CapacityQuota, Invalid> {
    let api_version = object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let read: CapacityQuotaObject =
        serde_json::from_value(object).map_err(|e| Invalid::new(KIND, e.to_string()))?;
    let name = read.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(Invalid::value("no metadata.name"));
    }
    let read_as = read_version(&api_version, KIND, &VERSIONS);
    let version = read_as.as_ref().ok().and_then(|v| QuotaVersion::parse(v));
    let spec = read_as.and_then(|_| spec(read.spec.as_ref()));
    Ok(model::CapacityQuota {
        name,
        version,
        generation: read.metadata.generation.unwrap_or(0),
        spec,
        status: read.status.as_ref().map(read_status).unwrap_or_default(),
    })
}

/// The spec read and checked: every problem found, joined by "; ".
fn spec(written: Option<&serde_json::Value>) -> Result<QuotaSpec, Invalid> {
    let written = written.ok_or_else(|| Invalid::new("spec", "Required value"))?;
    let read: QuotaObjectSpec =
        serde_json::from_value(written.clone()).map_err(|e| Invalid::new("spec", e.to_string()))?;
    let mut problems = Vec::new();
    let selector = match &read.selector {
        None => None,
        Some(s) => {
            let shown = serde_json::to_string(&written["selector"]).unwrap_or_default();
            match selector(s, &shown) {
                Ok(s) => Some(s),
                Err(problem) => {
                    problems.push(problem);
                    None
                }
            }
        }
    };
    let limits = match read.limits.and_then(|l| l.resources) {
        None => {
            problems.push(Invalid::new("spec.limits.resources", "Required value"));
            BTreeMap::new()
        }
        Some(resources) => {
            let written = resources.into_iter().map(|(k, v)| (k, written_limit(v)));
            model::read_limits(written).unwrap_or_else(|mut p| {
                problems.append(&mut p);
                BTreeMap::new()
            })
        }
    };
    match problems.len() {
        0 => Ok(QuotaSpec { selector, limits }),
        1 => Err(problems.remove(0)),
        // Upstream joins its validators' errors.
        _ => {
            let all: Vec<String> = problems.iter().map(Invalid::to_string).collect();
            Err(Invalid::value(all.join("; ")))
        }
    }
}

fn selector(selector: &LabelSelector, shown: &str) -> Result<model::LabelSelector, Invalid> {
    let match_labels: Labels = selector.match_labels.clone().unwrap_or_default().into();
    let expressions = (selector.match_expressions.iter().flatten())
        .map(|r| WrittenRequirement {
            key: r.key.clone(),
            operator: r.operator.clone(),
            values: r.values.clone().unwrap_or_default(),
        })
        .collect();
    model::read_selector(match_labels, expressions, shown)
}

fn written_limit(value: serde_json::Value) -> WrittenLimit {
    match value {
        serde_json::Value::String(text) => WrittenLimit::Text(text),
        serde_json::Value::Number(n) if n.as_i64().is_some() => {
            WrittenLimit::Int(n.as_i64().unwrap_or_default())
        }
        other => WrittenLimit::Other(other.to_string()),
    }
}

/// An int-or-string quantity of a status.
fn quantity(value: &serde_json::Value) -> Option<Quantity> {
    match value {
        serde_json::Value::String(text) => text.parse().ok(),
        serde_json::Value::Number(n) => Some(Quantity::from_millis(i128::from(n.as_i64()?) * 1000)),
        _ => None,
    }
}

/// A status as written, read into the model (a null figure, a merge patch's removal, is no figure).
pub fn read_status(written: &CapacityQuotaStatus) -> QuotaStatus {
    let used = written.used.as_ref().and_then(|used| {
        (used.resources.iter())
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| Some((k.clone(), quantity(v)?)))
            .collect::<Option<BTreeMap<_, _>>>()
    });
    QuotaStatus {
        used,
        conditions: written
            .conditions
            .iter()
            .map(|c| QuotaCondition {
                kind: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                observed_generation: c.observed_generation,
                last_transition: Some(objects::time(&c.last_transition_time)),
            })
            .collect(),
        observed_generation: written.observed_generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Upstream's v1beta1 example, with the status its controller writes.
    fn gpu_pool() -> serde_json::Value {
        json!({
            "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
            "metadata": {"name": "gpu-pool", "generation": 1},
            "spec": {
                "selector": {"matchLabels": {"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}},
                "limits": {"resources": {"cpu": 64, "memory": "256Gi", "nodes": 8,
                                         "nvidia-tesla-t4": 8, "nvidia.com/gpu": "8"}}
            },
            "status": {
                "observedGeneration": 1,
                "used": {"resources": {"cpu": "16", "memory": "64349804Ki", "nodes": "4",
                                       "nvidia-tesla-t4": "0", "nvidia.com/gpu": 4}},
                "conditions": [{"type": VALID_CONDITION, "status": "True",
                    "reason": VALIDATION_SUCCEEDED, "message": "CapacityQuota is valid",
                    "observedGeneration": 1, "lastTransitionTime": "2026-08-22T10:00:00Z"}]
            }
        })
    }

    #[test]
    fn reads_upstreams_v1beta1_example_with_its_status() {
        let quota = quota_from_value(gpu_pool()).unwrap();
        assert_eq!(quota.name, "gpu-pool");
        assert_eq!(quota.id(), "CapacityQuota/gpu-pool");
        assert_eq!(quota.version, Some(QuotaVersion::V1beta1));
        assert_eq!(quota.generation, 1);
        let spec = quota.valid().unwrap();
        assert_eq!(spec.limits["cpu"], 64);
        assert_eq!(spec.limits["memory"], 256 << 30);
        assert_eq!(spec.limits["nvidia.com/gpu"], 8);
        let t4 = [(model::GPU_LABEL.to_string(), "nvidia-tesla-t4".to_string())].into();
        assert!(spec.matches(&t4));
        assert!(!spec.matches(&Labels::new()));
        let used = quota.status.used.as_ref().unwrap();
        assert_eq!(used["memory"], "64349804Ki".parse().unwrap());
        assert_eq!(used["nvidia.com/gpu"], "4".parse().unwrap());
        assert_eq!(quota.status.observed_generation, Some(1));
        assert_eq!(quota.status.conditions[0].kind, VALID_CONDITION);
        assert!(quota.status.conditions[0].last_transition.is_some());
    }

    #[test]
    fn reads_v1alpha1_and_a_quota_without_selector_or_status() {
        let quota = quota_from_value(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1alpha1", "kind": "CapacityQuota",
            "metadata": {"name": "everything"},
            "spec": {"limits": {"resources": {"nodes": 64}}}
        }))
        .unwrap();
        assert_eq!(quota.version, Some(QuotaVersion::V1alpha1));
        let spec = quota.valid().unwrap();
        assert_eq!(spec.selector, None);
        assert!(spec.matches(&Labels::new()));
        assert_eq!(quota.status, QuotaStatus::default());
    }

    #[test]
    fn an_invalid_quota_carries_every_problem() {
        let mut object = gpu_pool();
        object["spec"]["selector"] =
            json!({"matchExpressions": [{"key": "zone", "operator": "Foo", "values": ["a"]}]});
        object["spec"]["limits"]["resources"]["cpu"] = json!("500m");
        let quota = quota_from_value(object).unwrap();
        assert_eq!(
            quota.problem().unwrap().to_string(),
            "spec.selector: Invalid value: \
             {\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Foo\",\"values\":[\"a\"]}]}: \
             \"Foo\" is not a valid label selector operator; \
             spec.limits.resources[cpu]: Invalid value: \"500m\": \
             All resource quantities must be non-negative integers."
        );
        assert!(quota.valid().is_none());
        assert!(quota.status.used.is_some(), "the status is still read");

        let mut unknown = gpu_pool();
        unknown["apiVersion"] = json!("autoscaling.x-k8s.io/v2");
        let quota = quota_from_value(unknown).unwrap();
        assert_eq!(quota.version, None);
        assert!(
            quota
                .problem()
                .unwrap()
                .to_string()
                .contains("apiVersion \"autoscaling.x-k8s.io/v2\"")
        );

        let mut no_limits = gpu_pool();
        no_limits["spec"] = json!({"limits": {}});
        let problem = quota_from_value(no_limits).unwrap().spec.unwrap_err();
        assert_eq!(problem.to_string(), "spec.limits.resources: Required value");
        let mut no_spec = gpu_pool();
        no_spec.as_object_mut().unwrap().remove("spec");
        assert!(quota_from_value(no_spec).unwrap().problem().is_some());

        let mut nameless = gpu_pool();
        nameless["metadata"] = json!({});
        assert_eq!(
            quota_from_value(nameless).unwrap_err().to_string(),
            "no metadata.name"
        );
    }

    #[test]
    fn an_unreadable_used_figure_leaves_used_unread() {
        let mut object = gpu_pool();
        object["status"]["used"]["resources"]["cpu"] = json!("lots");
        assert_eq!(quota_from_value(object).unwrap().status.used, None);
    }
}
