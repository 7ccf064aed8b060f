//! The scenario's keys for instances that go away: each group's `nodeRepairConfig` (EKS's fields and rules)
//! and the top-level `instanceEvents` (Spot interruptions, rebalance recommendations, scheduled events,
//! stopped instances), read strictly and checked whole, so that a scenario that loads is one the simulated
//! EKS can play.

use crate::model::{Invalid, NodeRepairConfig, NodeRepairOverride, repair_condition, rfc3339};
use serde::Deserialize;
use std::time::SystemTime;

/// `nodeRepairConfig` as EKS's API spells it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NodeRepairConfigFile {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    max_unhealthy_node_threshold_count: Option<i32>,
    #[serde(default)]
    max_unhealthy_node_threshold_percentage: Option<i32>,
    #[serde(default)]
    max_parallel_nodes_repaired_count: Option<i32>,
    #[serde(default)]
    max_parallel_nodes_repaired_percentage: Option<i32>,
    #[serde(default)]
    node_repair_config_overrides: Vec<OverrideFile>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OverrideFile {
    node_monitoring_condition: String,
    node_unhealthy_reason: String,
    min_repair_wait_time_mins: i32,
    repair_action: String,
}

/// The repair actions EKS knows.
pub(super) const REPAIR_ACTIONS: [&str; 3] = ["Replace", "Reboot", "NoAction"];

impl NodeRepairConfigFile {
    /// The config, checked as EKS checks it: each count at least 1, each percentage 1 to 100, a count and
    /// the percentage of the same limit never both, overrides on a known condition with a known action.
    pub(super) fn read(&self) -> Result<NodeRepairConfig, Invalid> {
        let within = |e: Invalid| e.within("nodeRepairConfig");
        let pairs = [
            (
                "maxUnhealthyNodeThresholdCount",
                self.max_unhealthy_node_threshold_count,
                "maxUnhealthyNodeThresholdPercentage",
                self.max_unhealthy_node_threshold_percentage,
            ),
            (
                "maxParallelNodesRepairedCount",
                self.max_parallel_nodes_repaired_count,
                "maxParallelNodesRepairedPercentage",
                self.max_parallel_nodes_repaired_percentage,
            ),
        ];
        for (count_name, count, percentage_name, percentage) in pairs {
            if count.is_some() && percentage.is_some() {
                let rule = format!("cannot be set with {percentage_name}");
                return Err(within(Invalid::new(count_name, rule)));
            }
            if let Some(count) = count.filter(|&c| c < 1) {
                let rule = format!("{count} must be at least 1");
                return Err(within(Invalid::new(count_name, rule)));
            }
            if let Some(percentage) = percentage.filter(|p| !(1..=100).contains(p)) {
                let rule = format!("{percentage} must be between 1 and 100");
                return Err(within(Invalid::new(percentage_name, rule)));
            }
        }
        let overrides = (self.node_repair_config_overrides.iter().enumerate())
            .map(|(i, o)| {
                o.read()
                    .map_err(|e| within(e.within(&format!("nodeRepairConfigOverrides[{i}]"))))
            })
            .collect::<Result<_, _>>()?;
        Ok(NodeRepairConfig {
            enabled: self.enabled,
            max_unhealthy_node_threshold_count: self.max_unhealthy_node_threshold_count,
            max_unhealthy_node_threshold_percentage: self.max_unhealthy_node_threshold_percentage,
            max_parallel_nodes_repaired_count: self.max_parallel_nodes_repaired_count,
            max_parallel_nodes_repaired_percentage: self.max_parallel_nodes_repaired_percentage,
            overrides,
        })
    }
}

impl OverrideFile {
    fn read(&self) -> Result<NodeRepairOverride, Invalid> {
        repair_condition("nodeMonitoringCondition", &self.node_monitoring_condition)?;
        if self.node_unhealthy_reason.is_empty() {
            return Err(Invalid::new("nodeUnhealthyReason", "must not be empty"));
        }
        if self.min_repair_wait_time_mins < 0 {
            let rule = format!("{} must not be negative", self.min_repair_wait_time_mins);
            return Err(Invalid::new("minRepairWaitTimeMins", rule));
        }
        if !REPAIR_ACTIONS.contains(&self.repair_action.as_str()) {
            let rule = format!(
                "{:?} must be one of {}",
                self.repair_action,
                REPAIR_ACTIONS.join(", ")
            );
            return Err(Invalid::new("repairAction", rule));
        }
        Ok(NodeRepairOverride {
            node_monitoring_condition: self.node_monitoring_condition.clone(),
            node_unhealthy_reason: self.node_unhealthy_reason.clone(),
            min_repair_wait_time_mins: self.min_repair_wait_time_mins,
            repair_action: self.repair_action.clone(),
        })
    }
}

/// One of the scenario's `instanceEvents`, as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct InstanceEventFile {
    node_group: String,
    index: usize,
    kind: String,
    at: String,
}

/// What EC2 says about an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A Spot Instance Interruption Warning: the instance is taken back at its deadline.
    SpotInterruption,
    /// An EC2 Instance Rebalance Recommendation.
    Rebalance,
    /// An AWS Health scheduled change (retirement, maintenance): the instance is stopped at its time.
    ScheduledEvent,
    /// The instance stopped (an EC2 Instance State-change Notification).
    Stopped,
}

impl EventKind {
    const ALL: [EventKind; 4] = [
        EventKind::SpotInterruption,
        EventKind::Rebalance,
        EventKind::ScheduledEvent,
        EventKind::Stopped,
    ];

    /// The scenario's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SpotInterruption => "spotInterruption",
            EventKind::Rebalance => "rebalance",
            EventKind::ScheduledEvent => "scheduledEvent",
            EventKind::Stopped => "stopped",
        }
    }

    /// EC2 sends these for Spot instances only.
    pub(super) fn spot_only(self) -> bool {
        matches!(self, EventKind::SpotInterruption | EventKind::Rebalance)
    }
}

/// A checked instance event: the group's instance at `index` (its position in NodeGroupNodes when the
/// simulated EKS starts), and `at`, the warning's deadline or the event's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceEvent {
    pub node_group: String,
    pub index: usize,
    pub kind: EventKind,
    pub at: SystemTime,
}

/// What `instanceEvents` needs to know of a loaded group.
pub(super) struct GroupFacts<'a> {
    pub(super) name: &'a str,
    pub(super) desired_size: i32,
    pub(super) available_capacity: Option<u32>,
    /// How many instances it runs from the start.
    pub(super) running: usize,
    pub(super) spot: bool,
}

impl InstanceEventFile {
    /// The event, checked against the scenario's groups and `start`: the group exists, the index is one of
    /// the instances it runs from the start (its `desiredSize`, fewer when its `availableCapacity` is less),
    /// the kind is one of the four (a Spot one on a SPOT group), the time RFC 3339 and not before `start`.
    pub(super) fn read(
        &self,
        groups: &[GroupFacts<'_>],
        start: SystemTime,
    ) -> Result<InstanceEvent, Invalid> {
        let group = (groups.iter().find(|g| g.name == self.node_group)).ok_or_else(|| {
            Invalid::new(
                "nodeGroup",
                format!("no node group {:?} in the scenario", self.node_group),
            )
        })?;
        let running = group.running;
        if self.index >= running {
            let rule = format!(
                "{} is not one of the {running} instance(s) node group {:?} runs from the start (its \
                 desiredSize {}, availableCapacity {}): 0 to {}",
                self.index,
                group.name,
                group.desired_size,
                (group.available_capacity).map_or("unlimited".to_string(), |c| c.to_string()),
                running.saturating_sub(1)
            );
            return Err(Invalid::new("index", rule));
        }
        let kind = (EventKind::ALL.into_iter())
            .find(|k| k.as_str() == self.kind)
            .ok_or_else(|| {
                let words: Vec<_> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
                Invalid::new(
                    "kind",
                    format!("{:?} must be one of {}", self.kind, words.join(", ")),
                )
            })?;
        if kind.spot_only() && !group.spot {
            let rule = format!(
                "{} comes for Spot instances only, and node group {:?} is not SPOT",
                kind.as_str(),
                group.name
            );
            return Err(Invalid::new("kind", rule));
        }
        let at = rfc3339("at", &self.at)?;
        if at < start {
            let rule = format!(
                "{:?} is before the scenario's start {}",
                self.at,
                humantime::format_rfc3339_seconds(start)
            );
            return Err(Invalid::new("at", rule));
        }
        Ok(InstanceEvent {
            node_group: self.node_group.clone(),
            index: self.index,
            kind,
            at,
        })
    }
}
