//! What scale-up decided for the pending pods: the scale-ups, the pods that fit where they are, the pods no
//! group helps and why, and the pods Fargate takes.

use crate::model::PodNames;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The nodes it replaces (expired or drifted nodes whose pods fit nowhere else): each drains once its new
    /// node is Ready.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
    /// The ProvisioningRequest (`namespace/name`) it is all for, made in one all-or-nothing increase; its
    /// pods are the request's virtual pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_request: Option<String>,
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

/// Why a pending pod was not tried this loop (upstream logs "skipped due to exceeding pending pod batching
/// timeout"): it waits for the next loop, which tries the pods in the same order.
pub const SKIPPED_BATCHING_TIMEOUT: &str = "skipped due to exceeding pending pod batching timeout \
     (--pending-pods-batching-timeout): not tried this loop, no scale-up for it until it is";

/// Why a pending pod gets no scale-up in a degraded loop whose turn is scale-down's.
pub const DEGRADED_SCALE_DOWN_TURN: &str = "graceful degradation: every 4th degraded loop scales down \
     and plans no scale-up";

/// Graceful degradation began or ended this loop (the events GracefulDegradationStarted and
/// GracefulDegradationStopped on the status ConfigMap say so).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DegradationChange {
    Started,
    Stopped,
}

/// What [`Placed::node`] says for a node not registered yet.
pub const UPCOMING: &str = "upcoming";

impl Placed {
    /// Whether it fits on a node the cluster has now, not on one still coming.
    pub fn on_existing_node(&self) -> bool {
        self.node != UPCOMING
    }
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
