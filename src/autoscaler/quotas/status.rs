//! The CapacityQuotas' status, as cluster-autoscaler's CapacityQuota controller writes it
//! (`resourcequotas/capacityquota/controller.go`): `observedGeneration`, the valid condition, `Reconciled`,
//! and `used.resources`, written back only where it differs from the status read, so that a quiet cluster
//! costs no request. The companion does its part every loop from the view instead of on watch events: the
//! view already holds every node and quota, and a loop's status is the same as the events' would be.
//!
//! `used` is upstream's status figure, not enforcement's: the registered nodes the selector matches (not
//! the upcoming ones), each resource the quota limits summed from the nodes' capacity under its literal
//! name (`nodes` the count). A limit keyed by the accelerator label's value (`nvidia-tesla-t4`, as
//! upstream's enforcement keys GPUs) reads 0 here, as upstream's status reads it, so that both controllers
//! write the same status and never undo each other's writes.

use crate::autoscaler::cluster::{self, ClusterSource, QuotaStatusWrite, StatusNotWritten};
use crate::autoscaler::quotas::usage::usage_by_quota;
use crate::k8s::{
    CapacityQuotaObject, CapacityQuotaStatus, ConditionSet, QuotaUsage as Usage,
    RECONCILED_CONDITION, RECONCILIATION_FAILED, RECONCILIATION_SUCCEEDED, VALID_CONDITION,
    VALIDATION_FAILED, VALIDATION_SUCCEEDED, condition_time, quantity_text, set_condition,
};
use crate::model::{
    CapacityQuota, GPU_LABEL, GPU_RESOURCE, NODES_RESOURCE, Node, Quantity, QuotaSpec, QuotaStatus,
    quota_amount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// Upstream's messages, word for word.
const VALID_MESSAGE: &str = "CapacityQuota is valid";
const RECONCILED_MESSAGE: &str = "CapacityQuota successfully reconciled";
const NOT_RECONCILED_MESSAGE: &str = "Validation failed";

/// One quota's status as this loop sees it.
#[derive(Debug)]
pub struct Reconciled {
    pub name: String,
    /// The version it was read as, the one written.
    pub version: &'static str,
    /// The status the merge patch writes: an invalid quota's has no `used`, so the one it had is kept, as
    /// upstream leaves it; a key no longer limited is written as null, so the patch removes it.
    pub status: CapacityQuotaStatus,
    /// Whether it differs from the status read (only then is it written).
    pub changed: bool,
}

impl Reconciled {
    pub fn written(&self) -> QuotaStatusWrite<'_> {
        QuotaStatusWrite {
            namespace: "",
            name: &self.name,
            version: self.version,
            status: &self.status,
        }
    }
}

/// Each quota's status over the registered `nodes`, at `now` (a condition's transition time moves only when
/// its status flips). A quota read in no version of ours (a snapshot's) has no status to write: left out.
pub fn reconcile(
    quotas: &[CapacityQuota],
    nodes: &[Arc<Node>],
    now: SystemTime,
) -> Vec<Reconciled> {
    let read: Vec<(&CapacityQuota, &'static str)> = (quotas.iter())
        .filter_map(|q| Some((q, q.version?.as_str())))
        .collect();
    let specs: Vec<&QuotaSpec> = (read.iter())
        .filter_map(|(q, _)| q.spec.as_ref().ok())
        .collect();
    let add = |a: i128, b: i128| a + b;
    let mut used = usage_by_quota(&specs, nodes, capacity_millis, add).into_iter();
    (read.into_iter())
        .map(|(q, version)| {
            let used = (q.spec.is_ok()).then(|| used.next().expect("one usage per valid spec"));
            reconcile_one(q, version, used, now)
        })
        .collect()
}

/// One quota's status; `used` is what the registered nodes its selector matches hold, in thousandths, of
/// each resource it limits (none when it is invalid).
fn reconcile_one(
    quota: &CapacityQuota,
    version: &'static str,
    used: Option<Vec<i128>>,
    now: SystemTime,
) -> Reconciled {
    let read = &quota.status;
    let generation = (quota.generation != 0).then_some(quota.generation);
    let mut conditions: Vec<Condition> = read.conditions.iter().map(wire_condition).collect();
    let mut set = |kind, ok, reason, message: &str| {
        let set = ConditionSet {
            kind,
            ok,
            reason,
            message: message.to_string(),
        };
        set_condition(&mut conditions, set, generation, now);
    };
    let used = match &quota.spec {
        Ok(spec) => {
            set(VALID_CONDITION, true, VALIDATION_SUCCEEDED, VALID_MESSAGE);
            set(
                RECONCILED_CONDITION,
                true,
                RECONCILIATION_SUCCEEDED,
                RECONCILED_MESSAGE,
            );
            Some(as_quantities(spec, used.unwrap_or_default()))
        }
        Err(problem) => {
            set(
                VALID_CONDITION,
                false,
                VALIDATION_FAILED,
                &problem.to_string(),
            );
            set(
                RECONCILED_CONDITION,
                false,
                RECONCILIATION_FAILED,
                NOT_RECONCILED_MESSAGE,
            );
            None
        }
    };
    let changed = read.observed_generation != generation
        || !same_conditions(&read.conditions, &conditions)
        || used.as_ref().is_some_and(|u| read.used.as_ref() != Some(u));
    let used = used.map(|used| {
        let stale = (read.used.iter().flat_map(BTreeMap::keys))
            .filter(|k| !used.contains_key(*k))
            .map(|k| (k.clone(), serde_json::Value::Null));
        let written = (used.iter()).map(|(k, q)| (k.clone(), quantity_text(*q).into()));
        Usage {
            resources: written.chain(stale).collect(),
        }
    });
    Reconciled {
        name: quota.name.clone(),
        version,
        status: CapacityQuotaStatus {
            used,
            conditions,
            observed_generation: generation,
        },
        changed,
    }
}

/// `used.resources`: for each resource the quota limits, what the registered nodes it matches hold of it
/// (upstream's `calculateUsage`), from their sums in thousandths.
fn as_quantities(spec: &QuotaSpec, millis: Vec<i128>) -> BTreeMap<String, Quantity> {
    (spec.limits.keys().zip(millis))
        .map(|(k, millis)| (k.clone(), Quantity::from_millis(millis)))
        .collect()
}

/// A node's capacity of `resource` under its literal name, in thousandths: cpu as written (not rounded up to
/// cores, as enforcement counts it); `nodes` 1; the accelerator label's value nothing, as no node has a
/// resource of that name.
fn capacity_millis(node: &Node, resource: &str) -> i128 {
    if resource == "cpu" {
        return i128::from(node.capacity.cpu_millis);
    }
    let builtin = [
        "memory",
        NODES_RESOURCE,
        "pods",
        "ephemeral-storage",
        GPU_RESOURCE,
    ];
    let named_by_label = !builtin.contains(&resource)
        && !node.extended.contains_key(resource)
        && node.labels.get(GPU_LABEL).is_some_and(|v| v == resource);
    if named_by_label {
        return 0;
    }
    i128::from(quota_amount(node, resource)) * 1000
}

/// Whether two condition lists say the same (a transition time alone is no change).
fn same_conditions(read: &[crate::model::QuotaCondition], now: &[Condition]) -> bool {
    read.len() == now.len()
        && read.iter().zip(now).all(|(r, c)| {
            (
                r.kind.as_str(),
                r.status.as_str(),
                r.reason.as_str(),
                r.message.as_str(),
            ) == (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str(),
            ) && r.observed_generation == c.observed_generation
        })
}

/// A condition as read, to be written back as it was (those of other writers are kept in the list).
fn wire_condition(c: &crate::model::QuotaCondition) -> Condition {
    Condition {
        type_: c.kind.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        observed_generation: c.observed_generation,
        last_transition_time: condition_time(c.last_transition.unwrap_or(SystemTime::UNIX_EPOCH)),
    }
}

/// Writes each quota's status where it changed; returns the ones not written.
pub async fn write_statuses(
    cluster: &dyn ClusterSource,
    reconciled: &[Reconciled],
) -> Vec<StatusNotWritten> {
    let changed = reconciled.iter().filter(|r| r.changed);
    cluster::write_statuses::<CapacityQuotaObject>(cluster, changed.map(Reconciled::written)).await
}

/// Whether `status` already says that the quota is invalid for `problem` at `generation`: the problem was
/// reported before (by this replica, another, or upstream's controller).
pub fn reported(status: &QuotaStatus, generation: i64, problem: &str) -> bool {
    status.conditions.iter().any(|c| {
        c.kind == VALID_CONDITION
            && c.status == "False"
            && c.message == problem
            && c.observed_generation.unwrap_or(0) == generation
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::quota_from_value;
    use crate::model::Resources;
    use serde_json::json;
    use std::time::Duration;

    fn node(name: &str, labels: &[(&str, &str)], gpus: u64) -> Arc<Node> {
        Arc::new(Node {
            name: name.into(),
            labels: (labels.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            capacity: Resources {
                cpu_millis: 3500,
                memory_bytes: 16 << 30,
                pods: 110,
                gpus,
                ..Resources::default()
            },
            ..Node::default()
        })
    }

    /// A quota with `spec`, and with `status` when one was written.
    fn read(spec: &serde_json::Value, status: Option<&CapacityQuotaStatus>) -> CapacityQuota {
        let mut object = json!({
            "apiVersion": "autoscaling.x-k8s.io/v1alpha1", "kind": "CapacityQuota",
            "metadata": {"name": "gpu-pool", "generation": 2}, "spec": spec});
        if let Some(status) = status {
            object["status"] = serde_json::to_value(status).unwrap();
        }
        quota_from_value(object).unwrap()
    }

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn a_valid_quota_gets_upstreams_status_once_then_nothing_while_the_nodes_stay() {
        let spec = json!({"selector": {"matchLabels": {"pool": "gpu"}},
            "limits": {"resources": {"cpu": 64, "memory": "256Gi", "nodes": 8,
                                     "nvidia.com/gpu": 8, "nvidia-tesla-t4": 8}}});
        let q = read(&spec, None);
        let t4 = [("pool", "gpu"), (GPU_LABEL, "nvidia-tesla-t4")];
        let nodes = vec![
            node("a", &t4, 4),
            node("b", &t4, 4),
            node("c", &[("pool", "cpu")], 0),
            node("vk", &[("pool", "gpu"), ("type", "virtual-kubelet")], 4),
        ];
        let r = reconcile(std::slice::from_ref(&q), &nodes, at(100)).remove(0);
        assert!(r.changed);
        assert_eq!(r.version, "v1alpha1", "written in the version read");
        let written = serde_json::to_value(&r.status).unwrap();
        assert_eq!(
            written["used"]["resources"],
            json!({"cpu": "7", "memory": "32Gi", "nodes": "2", "nvidia.com/gpu": "8",
                   "nvidia-tesla-t4": "0"})
        );
        assert_eq!(written["observedGeneration"], 2);
        let kinds: Vec<String> = (r.status.conditions.iter())
            .map(|c| format!("{} {} {} {}", c.type_, c.status, c.reason, c.message))
            .collect();
        assert_eq!(
            kinds,
            [
                "cluster-autoscaler.kubernetes.io/valid True ValidationSucceeded CapacityQuota is valid",
                "Reconciled True ReconciliationSucceeded CapacityQuota successfully reconciled"
            ]
        );
        assert!(
            r.status
                .conditions
                .iter()
                .all(|c| c.observed_generation == Some(2))
        );

        // Read back, a later loop over the same nodes has nothing to write, and the time stays.
        let back = read(&spec, Some(&r.status));
        let again = reconcile(std::slice::from_ref(&back), &nodes, at(200)).remove(0);
        assert!(!again.changed, "{again:?}");
        assert_eq!(again.status.conditions, r.status.conditions);

        // A node more: used changes, the conditions' times do not.
        let mut more = nodes.clone();
        more.push(node("d", &t4, 4));
        let grown = reconcile(std::slice::from_ref(&back), &more, at(300)).remove(0);
        assert!(grown.changed);
        let used = &serde_json::to_value(&grown.status).unwrap()["used"]["resources"];
        assert_eq!(
            (used["nodes"].as_str(), used["cpu"].as_str()),
            (Some("3"), Some("10500m"))
        );
        assert_eq!(grown.status.conditions, r.status.conditions);
    }

    #[test]
    fn an_invalid_quota_says_why_keeps_its_used_and_a_limit_removed_is_written_null() {
        let mut shrunk = read(
            &json!({"limits": {"resources": {"nodes": 8, "cpu": 64}}}),
            None,
        );
        shrunk.status.used = Some(
            [
                ("nodes".to_string(), "3".parse().unwrap()),
                ("pods".to_string(), "9".parse().unwrap()),
            ]
            .into(),
        );
        let r = reconcile(std::slice::from_ref(&shrunk), &[], at(1)).remove(0);
        let written = serde_json::to_value(&r.status).unwrap();
        assert_eq!(
            written["used"]["resources"],
            json!({"cpu": "0", "nodes": "0", "pods": null})
        );

        let spec = json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Foo"}]},
                          "limits": {"resources": {"nodes": 8}}});
        let bad = read(&spec, None);
        let problem = bad.problem().unwrap().to_string();
        let r = reconcile(std::slice::from_ref(&bad), &[], at(1)).remove(0);
        assert!(r.changed);
        assert!(r.status.used.is_none(), "used is left as it was");
        let valid = &r.status.conditions[0];
        assert_eq!(
            (
                valid.status.as_str(),
                valid.reason.as_str(),
                valid.message.as_str()
            ),
            ("False", "ValidationFailed", problem.as_str())
        );
        let reconciled = &r.status.conditions[1];
        assert_eq!(
            (
                reconciled.status.as_str(),
                reconciled.reason.as_str(),
                reconciled.message.as_str()
            ),
            ("False", "ReconciliationFailed", "Validation failed")
        );
        let back = read(&spec, Some(&r.status));
        assert!(reported(&back.status, 2, &problem));
        assert!(!reported(&back.status, 3, &problem), "a new generation");
        assert!(
            !reconcile(std::slice::from_ref(&back), &[], at(9))
                .remove(0)
                .changed
        );
    }

    #[test]
    fn a_quota_read_in_no_version_of_ours_has_no_status_to_write() {
        let mut q = read(&json!({"limits": {"resources": {"nodes": 8}}}), None);
        q.version = None;
        assert!(reconcile(&[q], &[], at(1)).is_empty());
    }
}
