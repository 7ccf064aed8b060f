//! NodeGroupGetOptions answers that every cluster-autoscaler generation reads correctly.
//!
//! Options are either left unset ("use your defaults"), or set with EVERY field 1..12: releases 1.25 to
//! 1.34.x read the old nanosecond durations 3/4/5 without a nil check and crash when they are missing,
//! 1.34.2 falls back to them, and 1.35+ read only 8/9/10 (spec/externalgrpc.md §2.4).

use crate::cloud::OptionOverrides;
use crate::proto::externalgrpc::{K8sDuration, NodeGroupAutoscalingOptions};
use std::time::Duration;

/// cluster-autoscaler's own defaults, for a request that carries none.
const DEFAULT_UTILIZATION_THRESHOLD: f64 = 0.5;
const DEFAULT_UNNEEDED: Duration = Duration::from_secs(10 * 60);
const DEFAULT_UNREADY: Duration = Duration::from_secs(20 * 60);
const DEFAULT_PROVISION: Duration = Duration::from_secs(15 * 60);

/// The caller's defaults as plain values, read from whichever generation's fields it sent.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Defaults {
    utilization: f64,
    gpu_utilization: f64,
    unneeded: Duration,
    unready: Duration,
    provision: Duration,
    zero_or_max: bool,
    ignore_daemon_sets: bool,
    startup: Duration,
    non_atomic_to_max: bool,
}

impl Defaults {
    fn read(sent: Option<&NodeGroupAutoscalingOptions>) -> Defaults {
        let Some(sent) = sent else {
            return Defaults {
                utilization: DEFAULT_UTILIZATION_THRESHOLD,
                gpu_utilization: DEFAULT_UTILIZATION_THRESHOLD,
                unneeded: DEFAULT_UNNEEDED,
                unready: DEFAULT_UNREADY,
                provision: DEFAULT_PROVISION,
                zero_or_max: false,
                ignore_daemon_sets: false,
                startup: DEFAULT_PROVISION,
                non_atomic_to_max: false,
            };
        };
        // New (google.protobuf.Duration) first, then the old nanosecond fields.
        let pick = |new: Option<prost_types::Duration>, old: Option<K8sDuration>, fallback| {
            new.and_then(|d| Duration::try_from(d).ok())
                .or_else(|| old.map(|d| Duration::from_nanos(d.duration.max(0) as u64)))
                .unwrap_or(fallback)
        };
        let provision = pick(
            sent.max_node_provision_duration,
            sent.max_node_provision_time,
            DEFAULT_PROVISION,
        );
        Defaults {
            utilization: sent.scale_down_utilization_threshold,
            gpu_utilization: sent.scale_down_gpu_utilization_threshold,
            unneeded: pick(
                sent.scale_down_unneeded_duration,
                sent.scale_down_unneeded_time,
                DEFAULT_UNNEEDED,
            ),
            unready: pick(
                sent.scale_down_unready_duration,
                sent.scale_down_unready_time,
                DEFAULT_UNREADY,
            ),
            provision,
            zero_or_max: sent.zero_or_max_node_scaling,
            ignore_daemon_sets: sent.ignore_daemon_sets_utilization,
            startup: pick(sent.max_node_startup_duration, None, provision),
            non_atomic_to_max: sent.allow_non_atomic_scale_up_to_max,
        }
    }
}

/// The options to answer for a group: `None` without overrides, otherwise every field set.
pub fn answer(
    overrides: Option<&OptionOverrides>,
    sent: Option<&NodeGroupAutoscalingOptions>,
) -> Option<NodeGroupAutoscalingOptions> {
    let o = overrides?;
    let d = Defaults::read(sent);
    let unneeded = o.scale_down_unneeded_time.unwrap_or(d.unneeded);
    let unready = o.scale_down_unready_time.unwrap_or(d.unready);
    let provision = o.max_node_provision_time.unwrap_or(d.provision);
    let startup = o.max_node_startup_time.unwrap_or(d.startup);
    Some(NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: o
            .scale_down_utilization_threshold
            .unwrap_or(d.utilization),
        scale_down_gpu_utilization_threshold: o
            .scale_down_gpu_utilization_threshold
            .unwrap_or(d.gpu_utilization),
        scale_down_unneeded_time: Some(k8s_duration(unneeded)),
        scale_down_unready_time: Some(k8s_duration(unready)),
        max_node_provision_time: Some(k8s_duration(provision)),
        zero_or_max_node_scaling: o.zero_or_max_node_scaling.unwrap_or(d.zero_or_max),
        ignore_daemon_sets_utilization: o
            .ignore_daemon_sets_utilization
            .unwrap_or(d.ignore_daemon_sets),
        scale_down_unneeded_duration: Some(proto_duration(unneeded)),
        scale_down_unready_duration: Some(proto_duration(unready)),
        max_node_provision_duration: Some(proto_duration(provision)),
        max_node_startup_duration: Some(proto_duration(startup)),
        allow_non_atomic_scale_up_to_max: o
            .allow_non_atomic_scale_up_to_max
            .unwrap_or(d.non_atomic_to_max),
    })
}

fn k8s_duration(d: Duration) -> K8sDuration {
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
