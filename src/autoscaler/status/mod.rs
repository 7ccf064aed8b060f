//! What one RunOnce decided and why: for every pending pod what happened to it, for every node group what
//! it was asked to do. `simulate` prints it (JSON for scripts, a table for people); `/snapshotz` serves it.

mod table; // the same facts for people, a section at a time

use crate::model::PodNames;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub scale_up: Vec<ScaleUp>,
    pub scale_down: Vec<ScaleDown>,
    /// Nodes of the cluster that stay, with why (every node not in `scale_down` and not being deleted).
    pub unremovable: Vec<KeptNode>,
    /// Deletions in progress or finished this loop.
    pub deletions: Vec<DeletionStatus>,
    /// Replacements by cheaper nodes (`--consolidation replace`): planned (`simulate`), or started this loop.
    pub consolidation: Vec<Consolidation>,
    /// With `--consolidation replace`: the nodes not replaced, with why.
    pub not_consolidated: Vec<KeptNode>,
    /// Replacements in progress, and those that ended this loop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<ReplacementStatus>,
    pub fargate: Vec<FargatePod>,
    /// Headroom policies: what each reserves and where that room is.
    pub headroom: Vec<HeadroomStatus>,
    /// CapacityBuffers: what each asks for, where its chunks are, the status it is given.
    pub capacity_buffers: Vec<CapacityBufferStatus>,
    /// ProvisioningRequests of a class served: their pods, conditions, and this loop's scale-ups for them.
    pub provisioning_requests: Vec<ProvisioningRequestStatus>,
    pub no_scale_up: Vec<NoScaleUp>,
    /// Pending pods that fit on existing nodes or on nodes already requested: no new node for them.
    pub placed: Vec<Placed>,
    pub node_groups: Vec<GroupStatus>,
    /// Ready and unready nodes; an unhealthy cluster stops the loop before scale-up and scale-down.
    pub cluster_health: ClusterHealth,
    /// Problems that stopped part of the loop (a provider call that failed, a rejected scale-up).
    pub errors: Vec<String>,
    /// The whole RunOnce, from Refresh to the last decision.
    pub elapsed_ms: f64,
    /// The estimator alone.
    pub estimate_ms: f64,
    /// Scale-down planning alone (candidates, rules, removal simulation).
    pub scale_down_ms: f64,
    /// Consolidation planning alone (candidates, one new node for their pods, savings).
    pub consolidation_ms: f64,
}

/// The cluster's health this loop, as `simulate`, `/snapshotz` and the status ConfigMap report it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterHealth {
    pub healthy: bool,
    pub ready_nodes: usize,
    pub unready_nodes: usize,
    /// Not Ready but younger than `--max-node-startup-time`: starting, not unready.
    pub not_started_nodes: usize,
    /// Why the loop stopped, when it did.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl Default for ClusterHealth {
    /// An empty cluster is healthy.
    fn default() -> ClusterHealth {
        ClusterHealth {
            healthy: true,
            ready_nodes: 0,
            unready_nodes: 0,
            not_started_nodes: 0,
            reason: String::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUp {
    pub node_group: String,
    pub delta: u64,
    pub pods: PodNames,
    /// Why this group: the expander's choice, or balancing with a similar group.
    pub reason: String,
    /// For a group in several zones: how many of the new nodes each zone gets, as its Auto Scaling group
    /// balances them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub zones: BTreeMap<String, u64>,
    /// Set when the provider refused the increase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The ProvisioningRequest (`namespace/name`) it is all for, made in one all-or-nothing increase; its
    /// pods are the request's virtual pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_request: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDown {
    pub node: String,
    pub node_group: String,
    /// `empty` (no pod needs a new place) or `underutilized`.
    pub reason: String,
    /// Utilization against the threshold, and where its pods go.
    pub detail: String,
    /// The pods its removal evicts.
    pub pods: PodNames,
    /// Evicting them all at once exceeds a PodDisruptionBudget: the drain waits for replacements.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub risky: bool,
}

/// Nodes replaced by one cheaper node.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consolidation {
    pub nodes: Vec<String>,
    pub from_node_groups: Vec<String>,
    /// Where the new node launches, and as what.
    pub node_group: String,
    pub instance_type: String,
    /// The pods that move to it.
    pub pods: Vec<String>,
    pub price_per_hour_before: f64,
    pub price_per_hour_after: f64,
    pub saving_per_hour: f64,
    /// Set when the provider refused the new node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Consolidation {
    /// `ip-a, ip-b (general, general) -> a new spot node (m5.xlarge): $0.1920/h -> $0.0672/h`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}) -> a new {} node ({}): ${:.4}/h -> ${:.4}/h",
            self.nodes.join(", "),
            self.from_node_groups.join(", "),
            self.node_group,
            self.instance_type,
            self.price_per_hour_before,
            self.price_per_hour_after
        )
    }

    /// ` (FAILED: why)` when the provider refused the new node.
    pub fn failure(&self) -> String {
        (self.error.as_ref()).map_or(String::new(), |e| format!(" (FAILED: {e})"))
    }
}

/// A replacement in progress, or one that ended this loop.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplacementStatus {
    /// The nodes it replaces.
    pub nodes: Vec<String>,
    pub node_group: String,
    /// The new node, once it is Ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_node: Option<String>,
    /// `single` (one node replaced) or `multi` (several merged into one).
    pub kind: String,
    /// `launching` (waiting for the new node to be Ready), `replacing` (it is: the old nodes' drains start),
    /// `draining` (they go on), `done` (the old nodes are gone), `abandoned` (the new node never turned Ready, or the pods no longer fit: the old nodes
    /// stay) or `failed` (a drain failed: the old node stays).
    pub state: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    pub saving_per_hour: f64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeadroomStatus {
    pub policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    /// One reserved pod's requests, `cpu/memory`.
    pub shape: String,
    /// Pods of that shape the policy reserves now.
    pub reserved: u32,
    /// Of those, how many fit in free room on registered or upcoming nodes.
    pub placed: usize,
    /// How many the loop's scale-ups add room for.
    pub scale_up: usize,
    /// How many no node group can hold (see `noScaleUp` for `headroom/...` pods).
    pub unmet: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityBufferStatus {
    pub name: String,
    pub namespace: String,
    /// Chunks it asks for now (0 when it is not ready or not ours to provision).
    pub desired_chunks: u32,
    /// One chunk's requests; null when the buffer resolves to no pod.
    pub chunk: Option<Shape>,
    /// Of the chunks, how many fit in free room on registered or upcoming nodes.
    pub in_free_room: usize,
    /// How many the loop's scale-ups add room for.
    pub in_scale_up: usize,
    /// How many no node group can hold, with why, by node group (as `noScaleUp` says it).
    pub unmet: usize,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unmet_reasons: BTreeMap<String, String>,
    /// Its conditions as the status subresource gets them.
    pub conditions: Vec<ConditionStatus>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestStatus {
    /// `namespace/name`.
    pub name: String,
    pub class: String,
    /// How many pods it asks room for (every pod set's count).
    pub pods: u32,
    /// Of them, how many this loop holds room for (booked: provisioned, their consumers not running yet).
    pub booked: u32,
    /// Its conditions as the status subresource gets them.
    pub conditions: Vec<ConditionStatus>,
    /// This loop's scale-ups for it (empty unless this loop scales up for it).
    pub scale_up: Vec<RequestScaleUp>,
    /// Pending pods that consume it: they take its room and are not scaled up for on their own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consuming_pods: Vec<String>,
    /// Whether this loop changed its status (what Events and the write-back follow).
    #[serde(skip)]
    pub changed: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestScaleUp {
    pub node_group: String,
    pub delta: u64,
}

impl ProvisioningRequestStatus {
    /// Where it stands, from its conditions: `failed`, `bookingExpired`, `provisioned` (its room booked), or
    /// `pending` (accepted, its room not found yet).
    pub fn state(&self) -> &'static str {
        let is =
            |kind: &str| (self.conditions.iter()).any(|c| c.kind == kind && c.status == "True");
        if is("Failed") {
            "failed"
        } else if is("BookingExpired") {
            "bookingExpired"
        } else if is("Provisioned") {
            "provisioned"
        } else {
            "pending"
        }
    }

    /// The condition that says where it stands (the one [`Self::state`] is read from), if any.
    pub fn deciding(&self) -> Option<&ConditionStatus> {
        let find = |kind: &str| self.conditions.iter().find(|c| c.kind == kind);
        match self.state() {
            "failed" => find("Failed"),
            "bookingExpired" => find("BookingExpired"),
            _ => find("Provisioned"),
        }
    }

    /// `ml/train (best-effort-atomic-scale-up.autoscaling.x-k8s.io): 8 pod(s), 0 booked; scale-up gpu +2;
    /// Accepted True (Accepted), Provisioned True (CapacityIsProvisioned)`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} ({}): {} pod(s), {} booked",
            self.name, self.class, self.pods, self.booked
        );
        for s in &self.scale_up {
            text.push_str(&format!("; scale-up {} +{}", s.node_group, s.delta));
        }
        if !self.consuming_pods.is_empty() {
            let pods = self.consuming_pods.join(", ");
            text.push_str(&format!("; consuming pods waiting: {pods}"));
        }
        text.push_str(&format!("; {}", describe_conditions(&self.conditions)));
        text
    }
}

/// `Type Status (Reason)` for each condition, with the message of those not True.
fn describe_conditions(conditions: &[ConditionStatus]) -> String {
    let said: Vec<String> = conditions
        .iter()
        .map(|c| {
            // A condition that is not True says why; so does a request's Failed.
            let why = if c.status == "True" && c.kind != "Failed" {
                String::new()
            } else {
                format!(": {}", c.message)
            };
            format!("{} {} ({}){why}", c.kind, c.status, c.reason)
        })
        .collect();
    said.join(", ")
}

#[derive(Clone, Debug, Serialize)]
pub struct Shape {
    pub cpu: String,
    pub memory: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConditionStatus {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl From<&Condition> for ConditionStatus {
    /// A status condition as the API server holds it, as the report says it.
    fn from(c: &Condition) -> ConditionStatus {
        ConditionStatus {
            kind: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        }
    }
}

impl CapacityBufferStatus {
    /// `shop/web-spare: 3 chunk(s) of 500m/1Gi: 2 in free room, 1 in this loop's scale-ups, 0 unmet;
    /// ReadyForProvisioning True, Provisioning True (FakePodsInjected)`.
    pub fn describe(&self) -> String {
        let shape = self
            .chunk
            .as_ref()
            .map_or("no pod".to_string(), |c| format!("{}/{}", c.cpu, c.memory));
        format!(
            "{}/{}: {} chunk(s) of {shape}: {} in free room, {} in this loop's scale-ups, {} unmet; {}",
            self.namespace,
            self.name,
            self.desired_chunks,
            self.in_free_room,
            self.in_scale_up,
            self.unmet,
            describe_conditions(&self.conditions)
        )
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptNode {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    /// cluster-autoscaler's name for the reason (`NotUnderutilized`, `BlockedByPod`, `NoPlaceToMovePods`, ...).
    pub reason: String,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionStatus {
    pub node: String,
    pub node_group: String,
    /// `started`, `draining`, `paused` (the view lost its pods), `deleted`, `failed` or `restored`.
    pub state: String,
    /// What it waits for, why it failed, or, once deleted, why it went (`empty` or `underutilized`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FargatePod {
    pub pod: String,
    /// Empty when no profile takes it (see `note`).
    pub profile: String,
    pub capacity_provisioned: String,
    pub hourly_price: f64,
    pub scheduler: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incompatibilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoScaleUp {
    pub pod: String,
    /// Why each node group cannot help, by node group id ("" for reasons that hold for every group).
    pub reasons: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    pub pod: String,
    /// The node it fits on, or for a node not registered yet, `upcoming` in its group.
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupStatus {
    pub id: String,
    pub min_size: i32,
    pub max_size: i32,
    pub target_size: i32,
    pub registered: usize,
    pub upcoming: usize,
    /// Why it is not considered for scale-up this loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Reasons by node group as `group: why; other: why` (a reason for every group unprefixed).
pub fn describe_reasons(reasons: &BTreeMap<String, String>) -> String {
    (reasons.iter())
        .map(|(g, why)| {
            if g.is_empty() {
                why.clone()
            } else {
                format!("{g}: {why}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl NoScaleUp {
    /// `group: why; other: why` (reasons for every group unprefixed).
    pub fn describe_reasons(&self) -> String {
        describe_reasons(&self.reasons)
    }
}

impl HeadroomStatus {
    /// `buffer (general): 5 pod(s) of 1/2Gi: 2 fit in free room, 3 in this loop's scale-ups, 0 unmet`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}): {} pod(s) of {}: {} fit in free room, {} in this loop's scale-ups, {} unmet",
            self.policy,
            self.node_group.as_deref().unwrap_or("cluster-wide"),
            self.reserved,
            self.shape,
            self.placed,
            self.scale_up,
            self.unmet
        )
    }
}

impl Status {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("status serializes")
    }
}
