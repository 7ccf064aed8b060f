//! The whole report of one loop: each stage's part, the groups as the loop found them, the cluster's health,
//! the errors, the times.

use super::capacity::{ReservationStatus, ScheduleStatus};
use super::problem::{LoopProblem, LoopStage, ProblemKind};
use super::reservations::{CapacityBufferStatus, HeadroomStatus, ProvisioningRequestStatus};
use super::scale_down::ScaleDownStatus;
use super::scale_up::{DegradationChange, FargatePod, NoScaleUp, Placed, ScaleUp};
use crate::autoscaler::leaving::{LeavingReplaced, LeavingStatus};
use crate::autoscaler::quotas::QuotaReport;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub scale_up: Vec<ScaleUp>,
    /// What scale-down and consolidation decided and did: its fields stand among the others.
    #[serde(flatten)]
    pub scale_down: ScaleDownStatus,
    pub fargate: Vec<FargatePod>,
    /// Headroom policies: what each reserves and where that room is.
    pub headroom: Vec<HeadroomStatus>,
    /// CapacityBuffers: what each asks for, where its chunks are, the status it is given.
    pub capacity_buffers: Vec<CapacityBufferStatus>,
    /// ProvisioningRequests of a class served: their pods, conditions, and this loop's scale-ups for them.
    pub provisioning_requests: Vec<ProvisioningRequestStatus>,
    /// CapacityQuotas (with `--capacity-quotas-enabled`): limits, use, the node groups held to each.
    pub capacity_quotas: Vec<QuotaReport>,
    pub no_scale_up: Vec<NoScaleUp>,
    /// Pending pods that fit on existing nodes or on nodes already requested: no new node for them.
    pub placed: Vec<Placed>,
    /// Pending pods not tried this loop (graceful degradation): placing them ran past
    /// `--pending-pods-batching-timeout`, so they wait for the next loop, each in `noScaleUp` with
    /// [`SKIPPED_BATCHING_TIMEOUT`](super::scale_up::SKIPPED_BATCHING_TIMEOUT).
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_pods: usize,
    /// Upstream's graceful degradation loop count: the loops in a row, this one included, that left pods
    /// untried (absent when 0: not degraded).
    #[serde(skip_serializing_if = "is_zero_loops")]
    pub graceful_degradation_loops: u32,
    /// Whether graceful degradation began or ended this loop (told as an event, not in the report).
    #[serde(skip)]
    pub degradation_change: Option<DegradationChange>,
    pub node_groups: Vec<GroupStatus>,
    /// Nodes that are going away for reasons no autoscaler decided, sorted by node: why, when, what is done.
    pub leaving: Vec<LeavingStatus>,
    /// What the metrics count of leaving nodes this loop (not in the report).
    #[serde(skip)]
    pub leaving_replaced: LeavingReplaced,
    /// Ready and unready nodes; an unhealthy cluster stops the loop before scale-up and scale-down.
    pub cluster_health: ClusterHealth,
    /// Problems that stopped part of the loop (a provider call that failed, a rejected scale-up).
    pub errors: Vec<LoopProblem>,
    /// Why the cluster's disruption configuration (the ConfigMap `ekscale-disruption`) was refused, while
    /// it is: the last good one is kept meanwhile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption_config_refused: Option<String>,
    /// How long the loop and its parts took.
    #[serde(flatten)]
    pub times: Times,
}

/// How long the loop and its parts took, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Times {
    /// The whole RunOnce, from Refresh to the last decision.
    pub elapsed_ms: f64,
    /// The estimator alone.
    pub estimate_ms: f64,
    /// Scale-down planning alone (candidates, rules, removal simulation).
    pub scale_down_ms: f64,
    /// Consolidation planning alone (candidates, one new node for their pods, savings).
    pub consolidation_ms: f64,
}

impl Times {
    /// These times and `other`'s, added.
    pub fn add(&mut self, other: Times) {
        self.elapsed_ms += other.elapsed_ms;
        self.estimate_ms += other.estimate_ms;
        self.scale_down_ms += other.scale_down_ms;
        self.consolidation_ms += other.consolidation_ms;
    }
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

#[derive(Clone, Debug, Default, Serialize)]
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
    /// Its EKS status (`ACTIVE`, `UPDATING`, ...) and the image its new nodes get, when the provider says
    /// them (`ekscale.v1.NodeGroups/DescribeNodeGroups`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eks_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// EKS's capacity type (`ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`), when the provider says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_type: Option<String>,
    /// The capacity reservations its launch template targets, as the provider last read them.
    pub reservations: Vec<ReservationStatus>,
    /// The sizes a window of its `schedules:` holds it to now; null when none is open.
    pub schedule: Option<ScheduleStatus>,
}

impl Status {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("status serializes")
    }

    /// Each of `details`, a problem `stage` met in a step of `kind`, added to the report's errors.
    pub fn problems<D: ToString>(
        &mut self,
        stage: LoopStage,
        kind: ProblemKind,
        details: impl IntoIterator<Item = D>,
    ) {
        let details = details.into_iter().map(|d| d.to_string());
        self.errors.extend(LoopProblem::all(stage, kind, details));
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_loops(n: &u32) -> bool {
    *n == 0
}
