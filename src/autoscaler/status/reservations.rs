//! Room held for pods that are not pending yet: headroom policies, CapacityBuffers and ProvisioningRequests,
//! with the conditions their status subresources get.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The status's `readyReplicas`: of the chunks, those that fit on registered nodes (as cluster-autoscaler
    /// 1.37 counts them); absent where it is not reconciled (`--capacity-buffer-ready-replicas-enabled=false`,
    /// a strategy not ours) and the object has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
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
    /// ReadyForProvisioning True, Provisioning True (FakePodsInjected); readyReplicas 2`.
    pub fn describe(&self) -> String {
        let shape = self
            .chunk
            .as_ref()
            .map_or("no pod".to_string(), |c| format!("{}/{}", c.cpu, c.memory));
        let ready = (self.ready_replicas)
            .map(|n| format!("; readyReplicas {n}"))
            .unwrap_or_default();
        format!(
            "{}/{}: {} chunk(s) of {shape}: {} in free room, {} in this loop's scale-ups, {} unmet; {}{ready}",
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
