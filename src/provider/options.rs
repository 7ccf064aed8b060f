//! NodeGroupGetOptions answers: a group's overrides over the caller's defaults, or nothing.
//!
//! Options are either left unset ("use your defaults"), or set with every field of every generation
//! (`GroupOptions::to_wire`).

use crate::cloud::OptionOverrides;
use crate::model::GroupOptions;
use crate::proto::externalgrpc::NodeGroupAutoscalingOptions;

/// The options to answer for a group: `None` without overrides, otherwise every field set. Defaults the
/// caller did not send are cluster-autoscaler's.
pub fn answer(
    overrides: Option<&OptionOverrides>,
    sent: Option<&NodeGroupAutoscalingOptions>,
) -> Option<NodeGroupAutoscalingOptions> {
    let o = overrides?;
    let d = sent.map_or_else(GroupOptions::default, |s| {
        GroupOptions::read(s, GroupOptions::default())
    });
    let provision = o.max_node_provision_time.unwrap_or(d.provision);
    Some(
        GroupOptions {
            utilization: o.scale_down_utilization_threshold.unwrap_or(d.utilization),
            gpu_utilization: o
                .scale_down_gpu_utilization_threshold
                .unwrap_or(d.gpu_utilization),
            unneeded: o.scale_down_unneeded_time.unwrap_or(d.unneeded),
            unready: o.scale_down_unready_time.unwrap_or(d.unready),
            provision,
            zero_or_max: o.zero_or_max_node_scaling.unwrap_or(d.zero_or_max),
            ignore_daemon_sets: o
                .ignore_daemon_sets_utilization
                .unwrap_or(d.ignore_daemon_sets),
            startup: o.max_node_startup_time.unwrap_or(d.startup),
            non_atomic_to_max: o
                .allow_non_atomic_scale_up_to_max
                .unwrap_or(d.non_atomic_to_max),
        }
        .to_wire(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::externalgrpc::K8sDuration;
    use crate::proto::k8s_duration;
    use std::time::Duration;

    fn old_defaults() -> NodeGroupAutoscalingOptions {
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: 0.5,
            scale_down_gpu_utilization_threshold: 0.6,
            scale_down_unneeded_time: Some(k8s_duration(Duration::from_secs(600))),
            scale_down_unready_time: Some(k8s_duration(Duration::from_secs(1200))),
            max_node_provision_time: Some(k8s_duration(Duration::from_secs(900))),
            ..Default::default()
        }
    }

    #[test]
    fn no_overrides_leaves_options_unset() {
        assert_eq!(answer(None, Some(&old_defaults())), None);
    }

    #[test]
    fn overrides_set_every_field_and_echo_old_defaults() {
        let overrides = OptionOverrides {
            scale_down_unneeded_time: Some(Duration::from_secs(300)),
            ..Default::default()
        };
        let got = answer(Some(&overrides), Some(&old_defaults())).unwrap();
        assert_eq!(got.scale_down_gpu_utilization_threshold, 0.6);
        assert_eq!(
            got.scale_down_unneeded_time,
            Some(K8sDuration {
                duration: 300_000_000_000
            })
        );
        assert_eq!(
            got.scale_down_unneeded_duration,
            Some(prost_types::Duration {
                seconds: 300,
                nanos: 0
            })
        );
        assert_eq!(
            got.scale_down_unready_time,
            Some(K8sDuration {
                duration: 1_200_000_000_000
            })
        );
        assert_eq!(
            got.max_node_provision_duration,
            Some(prost_types::Duration {
                seconds: 900,
                nanos: 0
            })
        );
        assert_eq!(
            got.max_node_startup_duration,
            Some(prost_types::Duration {
                seconds: 900,
                nanos: 0
            })
        );
    }

    #[test]
    fn new_duration_fields_win_over_old_ones() {
        let sent = NodeGroupAutoscalingOptions {
            scale_down_unready_duration: Some(prost_types::Duration {
                seconds: 60,
                nanos: 0,
            }),
            ..old_defaults()
        };
        let overrides = OptionOverrides {
            zero_or_max_node_scaling: Some(true),
            ..Default::default()
        };
        let got = answer(Some(&overrides), Some(&sent)).unwrap();
        assert_eq!(
            got.scale_down_unready_time,
            Some(K8sDuration {
                duration: 60_000_000_000
            })
        );
        assert!(got.zero_or_max_node_scaling);
    }

    #[test]
    fn missing_defaults_fall_back_to_cluster_autoscalers() {
        let overrides = OptionOverrides {
            scale_down_utilization_threshold: Some(0.3),
            ..Default::default()
        };
        let got = answer(Some(&overrides), None).unwrap();
        assert_eq!(got.scale_down_utilization_threshold, 0.3);
        assert_eq!(got.scale_down_gpu_utilization_threshold, 0.5);
        assert_eq!(
            got.scale_down_unneeded_duration,
            Some(prost_types::Duration {
                seconds: 600,
                nanos: 0
            })
        );
    }
}
