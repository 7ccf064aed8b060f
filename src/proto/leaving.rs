//! Leaving instances and node repair configs as plain values, read from and written to the `ekscale.v1` wire:
//! the provider serving ListLeavingInstances and DescribeNodeGroups, and the companion asking them.

use super::generated::ekscale;
use crate::model::{Invalid, LeavingInstance, LeavingReason, NodeRepairConfig, NodeRepairOverride};
use std::time::{Duration, SystemTime};

impl From<&LeavingInstance> for ekscale::LeavingInstance {
    fn from(leaving: &LeavingInstance) -> Self {
        let seconds = (leaving.at.duration_since(SystemTime::UNIX_EPOCH))
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        ekscale::LeavingInstance {
            id: leaving.id.clone(),
            node_group_id: leaving.node_group.clone(),
            reason: leaving.reason.to_string(),
            at_unix_seconds: seconds,
            detail: leaving.detail.clone(),
        }
    }
}

impl TryFrom<ekscale::LeavingInstance> for LeavingInstance {
    type Error = Invalid;

    /// A reason the companion does not know (a newer provider's) is refused rather than guessed.
    fn try_from(sent: ekscale::LeavingInstance) -> Result<Self, Invalid> {
        let reason = LeavingReason::parse(&sent.reason)
            .filter(|r| r.said_by_cloud())
            .ok_or_else(|| {
                Invalid::new(
                    "reason",
                    format!(
                        "{:?} is none of spotInterruption, rebalance, scheduledEvent, instanceStopped",
                        sent.reason
                    ),
                )
            })?;
        let seconds = u64::try_from(sent.at_unix_seconds)
            .map_err(|_| Invalid::new("at_unix_seconds", "must not be negative"))?;
        Ok(LeavingInstance {
            id: sent.id,
            node_group: sent.node_group_id,
            reason,
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(seconds),
            detail: sent.detail,
        })
    }
}

/// 0 on the wire is unset.
fn set(value: i32) -> Option<i32> {
    (value != 0).then_some(value)
}

impl From<&NodeRepairConfig> for ekscale::NodeRepairConfig {
    fn from(config: &NodeRepairConfig) -> Self {
        ekscale::NodeRepairConfig {
            enabled: config.enabled,
            max_unhealthy_node_threshold_count: config
                .max_unhealthy_node_threshold_count
                .unwrap_or(0),
            max_unhealthy_node_threshold_percentage: config
                .max_unhealthy_node_threshold_percentage
                .unwrap_or(0),
            max_parallel_nodes_repaired_count: config
                .max_parallel_nodes_repaired_count
                .unwrap_or(0),
            max_parallel_nodes_repaired_percentage: config
                .max_parallel_nodes_repaired_percentage
                .unwrap_or(0),
            overrides: (config.overrides.iter())
                .map(|o| ekscale::NodeRepairOverride {
                    node_monitoring_condition: o.node_monitoring_condition.clone(),
                    node_unhealthy_reason: o.node_unhealthy_reason.clone(),
                    min_repair_wait_time_mins: o.min_repair_wait_time_mins,
                    repair_action: o.repair_action.clone(),
                })
                .collect(),
        }
    }
}

impl From<ekscale::NodeRepairConfig> for NodeRepairConfig {
    fn from(sent: ekscale::NodeRepairConfig) -> Self {
        NodeRepairConfig {
            enabled: sent.enabled,
            max_unhealthy_node_threshold_count: set(sent.max_unhealthy_node_threshold_count),
            max_unhealthy_node_threshold_percentage: set(
                sent.max_unhealthy_node_threshold_percentage
            ),
            max_parallel_nodes_repaired_count: set(sent.max_parallel_nodes_repaired_count),
            max_parallel_nodes_repaired_percentage: set(sent.max_parallel_nodes_repaired_percentage),
            overrides: (sent.overrides.into_iter())
                .map(|o| NodeRepairOverride {
                    node_monitoring_condition: o.node_monitoring_condition,
                    node_unhealthy_reason: o.node_unhealthy_reason,
                    min_repair_wait_time_mins: o.min_repair_wait_time_mins,
                    repair_action: o.repair_action,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaving_instance_travels_whole_and_an_unknown_reason_is_refused() {
        let leaving = LeavingInstance {
            id: "aws:///us-east-1a/i-0abc".into(),
            node_group: "spot".into(),
            reason: LeavingReason::SpotInterruption,
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            detail: "EC2 Spot Instance Interruption Warning".into(),
        };
        let sent = ekscale::LeavingInstance::from(&leaving);
        assert_eq!(LeavingInstance::try_from(sent.clone()).unwrap(), leaving);
        let unknown = ekscale::LeavingInstance {
            reason: "meteor".into(),
            ..sent.clone()
        };
        let error = LeavingInstance::try_from(unknown).unwrap_err();
        assert!(error.to_string().contains("\"meteor\""), "{error}");
        let unhealthy = ekscale::LeavingInstance {
            reason: "unhealthy".into(),
            ..sent
        };
        assert!(LeavingInstance::try_from(unhealthy).is_err());
    }

    #[test]
    fn a_repair_config_travels_whole() {
        let config = NodeRepairConfig {
            enabled: true,
            max_unhealthy_node_threshold_percentage: Some(20),
            max_parallel_nodes_repaired_count: Some(2),
            overrides: vec![NodeRepairOverride {
                node_monitoring_condition: "AcceleratedHardwareReady".into(),
                node_unhealthy_reason: "NvidiaXID79Error".into(),
                min_repair_wait_time_mins: 5,
                repair_action: "Replace".into(),
            }],
            ..NodeRepairConfig::default()
        };
        let sent = ekscale::NodeRepairConfig::from(&config);
        assert_eq!(NodeRepairConfig::from(sent), config);
    }
}
