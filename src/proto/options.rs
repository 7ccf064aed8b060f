//! NodeGroupAutoscalingOptions as plain values, read from and written to every generation's fields, for both
//! sides of the protocol: the provider answering NodeGroupGetOptions and the companion asking it.
//!
//! Written options set EVERY field 1..12: releases 1.25 to 1.34.x read the old nanosecond durations 3/4/5
//! without a nil check and crash when they are missing, 1.34.2 falls back to them, and 1.35+ read only 8/9/10
//! (docs/externalgrpc.md §2). Read options take the newer field first.

use super::generated::externalgrpc::{K8sDuration, NodeGroupAutoscalingOptions};
use crate::model::GroupOptions;
use std::time::Duration;

impl GroupOptions {
    /// The options `sent` carries; durations it leaves out come from `fallback` (the startup time from the
    /// provision time, as upstream does).
    pub fn read(sent: &NodeGroupAutoscalingOptions, fallback: GroupOptions) -> GroupOptions {
        let pick = |new: Option<prost_types::Duration>, old: Option<K8sDuration>, fallback| {
            new.and_then(|d| Duration::try_from(d).ok())
                .or_else(|| old.map(|d| Duration::from_nanos(d.duration.max(0) as u64)))
                .unwrap_or(fallback)
        };
        let provision = pick(
            sent.max_node_provision_duration,
            sent.max_node_provision_time,
            fallback.provision,
        );
        GroupOptions {
            utilization: sent.scale_down_utilization_threshold,
            gpu_utilization: sent.scale_down_gpu_utilization_threshold,
            unneeded: pick(
                sent.scale_down_unneeded_duration,
                sent.scale_down_unneeded_time,
                fallback.unneeded,
            ),
            unready: pick(
                sent.scale_down_unready_duration,
                sent.scale_down_unready_time,
                fallback.unready,
            ),
            provision,
            zero_or_max: sent.zero_or_max_node_scaling,
            ignore_daemon_sets: sent.ignore_daemon_sets_utilization,
            startup: pick(sent.max_node_startup_duration, None, provision),
            non_atomic_to_max: sent.allow_non_atomic_scale_up_to_max,
        }
    }

    /// Every field of every generation set.
    pub fn to_wire(self) -> NodeGroupAutoscalingOptions {
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: self.utilization,
            scale_down_gpu_utilization_threshold: self.gpu_utilization,
            scale_down_unneeded_time: Some(k8s_duration(self.unneeded)),
            scale_down_unready_time: Some(k8s_duration(self.unready)),
            max_node_provision_time: Some(k8s_duration(self.provision)),
            zero_or_max_node_scaling: self.zero_or_max,
            ignore_daemon_sets_utilization: self.ignore_daemon_sets,
            scale_down_unneeded_duration: Some(proto_duration(self.unneeded)),
            scale_down_unready_duration: Some(proto_duration(self.unready)),
            max_node_provision_duration: Some(proto_duration(self.provision)),
            max_node_startup_duration: Some(proto_duration(self.startup)),
            allow_non_atomic_scale_up_to_max: self.non_atomic_to_max,
        }
    }
}

pub fn k8s_duration(d: Duration) -> K8sDuration {
    K8sDuration {
        duration: i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

fn proto_duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(d).unwrap_or(prost_types::Duration {
        seconds: i64::MAX,
        nanos: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_new_fields_win() {
        let options = GroupOptions {
            unneeded: Duration::from_secs(300),
            zero_or_max: true,
            ..GroupOptions::default()
        };
        let wire = options.to_wire();
        assert_eq!(GroupOptions::read(&wire, GroupOptions::default()), options);
        let newer = NodeGroupAutoscalingOptions {
            scale_down_unneeded_duration: Some(proto_duration(Duration::from_secs(60))),
            ..wire
        };
        assert_eq!(
            GroupOptions::read(&newer, GroupOptions::default()).unneeded,
            Duration::from_secs(60)
        );
    }
}
