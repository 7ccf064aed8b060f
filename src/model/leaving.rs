//! Nodes that are going away for reasons no autoscaler decided: EC2 takes a Spot instance back, recommends
//! rebalancing, schedules maintenance, or stopped the instance; or the node is unhealthy and its group's
//! repair (EKS's, or ours) replaces it. The cloud says the first four per instance (a provider's
//! `ekscale.v1.NodeGroups/ListLeavingInstances`), the node's own conditions say the last.

use super::invalid::Invalid;
use std::time::SystemTime;

/// Why a node is leaving, in the words `simulate --format json` and the metrics use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeavingReason {
    /// EC2 Spot Instance Interruption Warning: the instance is taken back at `at` (two minutes after it).
    SpotInterruption,
    /// EC2 Instance Rebalance Recommendation: the Spot instance is at elevated risk of interruption.
    Rebalance,
    /// An AWS Health scheduled change (retirement, reboot, maintenance) for the instance at `at`.
    ScheduledEvent,
    /// EC2 Instance State-change Notification: the instance is stopping, stopped, shutting down or
    /// terminated while its node still stands for it.
    InstanceStopped,
    /// The node monitoring agent (or another tool) set a condition that says the node is unhealthy.
    Unhealthy,
    /// Its Capacity Block ends: EKS scales its group to 0 forty minutes before the end, and the companion
    /// plans its pods elsewhere from `drainLead` before that (`at`: when EKS scales the group in).
    CapacityBlockEnding,
}

impl LeavingReason {
    /// Every reason, in this order.
    pub const ALL: [LeavingReason; 6] = [
        LeavingReason::SpotInterruption,
        LeavingReason::Rebalance,
        LeavingReason::ScheduledEvent,
        LeavingReason::InstanceStopped,
        LeavingReason::Unhealthy,
        LeavingReason::CapacityBlockEnding,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LeavingReason::SpotInterruption => "spotInterruption",
            LeavingReason::Rebalance => "rebalance",
            LeavingReason::ScheduledEvent => "scheduledEvent",
            LeavingReason::InstanceStopped => "instanceStopped",
            LeavingReason::Unhealthy => "unhealthy",
            LeavingReason::CapacityBlockEnding => "capacityBlockEnding",
        }
    }

    /// How strong a reason is, when one instance is said to leave for two: a stronger one replaces a weaker
    /// one, never the other way. A reason that says when and why the instance goes outranks what follows from
    /// it (a warned instance then terminating), and the deadline nearest and surest outranks the others.
    pub fn strength(self) -> u8 {
        match self {
            LeavingReason::SpotInterruption => 4,
            LeavingReason::ScheduledEvent => 3,
            LeavingReason::InstanceStopped => 2,
            LeavingReason::Rebalance => 1,
            // Never said by the cloud: read from the node, and from the group's reservations.
            LeavingReason::Unhealthy | LeavingReason::CapacityBlockEnding => 0,
        }
    }

    /// Whether a provider says it per instance (`ListLeavingInstances`); the others the companion reads from
    /// the node (unhealthy) and from its group's reservations (a Capacity Block ending).
    pub fn said_by_cloud(self) -> bool {
        !matches!(
            self,
            LeavingReason::Unhealthy | LeavingReason::CapacityBlockEnding
        )
    }

    /// The reason its word names (exactly as [`LeavingReason::as_str`] writes it).
    pub fn parse(word: &str) -> Option<LeavingReason> {
        Self::ALL.into_iter().find(|r| r.as_str() == word)
    }
}

impl std::fmt::Display for LeavingReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An instance the cloud says is leaving, as a provider serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeavingInstance {
    /// `aws:///<az>/<instance-id>`: the instance's id in NodeGroupNodes, byte for byte the node's providerID.
    pub id: String,
    /// The node group it belongs to.
    pub node_group: String,
    /// Never [`LeavingReason::Unhealthy`]: a node's health is read from the node.
    pub reason: LeavingReason,
    /// When it goes: the interruption's deadline, the scheduled event's start; for a rebalance
    /// recommendation or a stopped instance, when the cloud said so.
    pub at: SystemTime,
    /// What the cloud said, in words (the event's kind, its description).
    pub detail: String,
}

/// What EKS's node auto repair does for a managed node group (`nodeRepairConfig`, EKS's fields). Counts and
/// percentages are exclusive in EKS's API: at most one of each pair is set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeRepairConfig {
    pub enabled: bool,
    /// Repair halts while more nodes than this are unhealthy.
    pub max_unhealthy_node_threshold_count: Option<i32>,
    pub max_unhealthy_node_threshold_percentage: Option<i32>,
    /// How many nodes are repaired at once.
    pub max_parallel_nodes_repaired_count: Option<i32>,
    pub max_parallel_nodes_repaired_percentage: Option<i32>,
    /// Per condition and reason: how long to wait and what to do.
    pub overrides: Vec<NodeRepairOverride>,
}

/// One of `nodeRepairConfig.nodeRepairConfigOverrides`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRepairOverride {
    /// The monitoring agent's condition type (`AcceleratedHardwareReady`, ...).
    pub node_monitoring_condition: String,
    /// The condition's reason it applies to.
    pub node_unhealthy_reason: String,
    pub min_repair_wait_time_mins: i32,
    /// `Replace`, `Reboot` or `NoAction`.
    pub repair_action: String,
}

/// The node conditions EKS's node monitoring agent sets: `False` says the node has that problem (the agent
/// writes `True` when it is fine). `Ready` False is kubelet's, and EKS repairs it too.
pub const NODE_MONITORING_CONDITIONS: [&str; 5] = [
    "AcceleratedHardwareReady",
    "ContainerRuntimeReady",
    "KernelReady",
    "NetworkingReady",
    "StorageReady",
];

/// `condition` when EKS's node auto repair acts on it being False (one of [`NODE_MONITORING_CONDITIONS`], or
/// kubelet's `Ready`), else why not, naming `field`.
pub fn repair_condition(field: &str, condition: &str) -> Result<(), Invalid> {
    if condition == "Ready" || NODE_MONITORING_CONDITIONS.contains(&condition) {
        return Ok(());
    }
    let rule = format!(
        "{condition:?} must be one of {}, Ready",
        NODE_MONITORING_CONDITIONS.join(", ")
    );
    Err(Invalid::new(field, rule))
}

/// Taints other tools put on a node they know is leaving: aws-node-termination-handler's (Spot interruption,
/// rebalance recommendation, scheduled event, ASG lifecycle) and Karpenter's disruption taint.
pub const LEAVING_TAINTS: [(&str, LeavingReason); 5] = [
    (
        "aws-node-termination-handler/spot-itn",
        LeavingReason::SpotInterruption,
    ),
    (
        "aws-node-termination-handler/rebalance-recommendation",
        LeavingReason::Rebalance,
    ),
    (
        "aws-node-termination-handler/scheduled-maintenance",
        LeavingReason::ScheduledEvent,
    ),
    (
        "aws-node-termination-handler/asg-lifecycle-termination",
        LeavingReason::InstanceStopped,
    ),
    ("karpenter.sh/disrupted", LeavingReason::InstanceStopped),
];

/// A node condition that says the node has a problem: its type, reason and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeProblem {
    /// The condition's type (one of [`NODE_MONITORING_CONDITIONS`]).
    pub condition: String,
    pub reason: String,
    /// Its `lastTransitionTime`.
    pub since: Option<SystemTime>,
}
