//! The loop's settings: the decision flags of `run` and `simulate`, each stage's own part in one place, as
//! upstream's AutoscalingOptions. The flags (`control/flags.rs`) build them; the loop hands each stage its
//! part, so no stage reads this file.

use crate::autoscaler::clusterstate::backoff::BackoffSettings;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::headroom::buffers::ReadyReplicas;
use crate::autoscaler::headroom::policy::Policy;
use crate::autoscaler::leaving::action::LeavingHandling;
use crate::autoscaler::scaledown::settings::{ConsolidationSettings, ScaleDownSettings};
use crate::autoscaler::scaleup::expander::{Expander, Strategy};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::model::GroupOptions;
use std::sync::Arc;
use std::time::Duration;

/// The decision flags of `run` and `simulate`.
#[derive(Clone, Debug)]
pub struct Settings {
    pub expander: Expander,
    pub limits: ClusterLimits,
    pub expendable_pods_priority_cutoff: i32,
    pub max_node_provision_time: Duration,
    pub max_node_startup_time: Duration,
    /// When unready nodes stop the loop, or a group's scale-up.
    pub health: HealthSettings,
    pub backoff: BackoffSettings,
    /// Call IncreaseSize (and delete instances that never registered); false for `simulate` and `--dry-run`.
    pub act: bool,
    /// Delete instances that do not register within `max_node_provision_time`. Off over a static snapshot,
    /// where no instance ever registers.
    pub remove_unregistered: bool,
    /// Wait for pods to age before adding nodes for them: `new_pod_scale_up_delay` (or a pod's own
    /// `pod-scale-up-delay` annotation), and upstream's batching (no scale-up while the oldest pending pod is
    /// under 2 s old, or the oldest GPU pod under 30 s). Off for `simulate`, which plans as if time had passed.
    pub wait_for_new_pods: bool,
    pub new_pod_scale_up_delay: Duration,
    pub scale_down: ScaleDownSettings,
    /// `--consolidation` and its guards.
    pub consolidation: ConsolidationSettings,
    /// Capacity kept free ahead of demand, as virtual pending pods.
    pub headroom: Vec<Policy>,
    /// `--disruption-config`: budgets, expiry and grace periods per node group (the cluster's ConfigMap
    /// `ekscale-disruption`, when there is one, is read over it each loop).
    pub disruption: Option<Arc<DisruptionConfig>>,
    /// `--capacity-quotas-enabled`: each valid CapacityQuota's limits are kept wherever nodes are added
    /// (on by default, unlike upstream: a quota someone created is meant to hold); off, quotas are ignored.
    pub capacity_quotas: bool,
    /// `--capacity-buffer-ready-replicas-enabled`: each CapacityBuffer's `readyReplicas` written, as
    /// cluster-autoscaler 1.37 does (on by default there too).
    pub capacity_buffer_ready_replicas: ReadyReplicas,
    /// `--leaving-nodes`: leaving nodes handled (the default) or ignored as before issue 60.
    pub leaving_nodes: LeavingHandling,
    /// `--enable-graceful-degradation` with `--pending-pods-batching-timeout`: how long placing the pending
    /// pods on the nodes there are may take before the loop goes on with those it tried (off: no limit).
    pub pending_pods_batching_timeout: Option<Duration>,
}

impl Default for Settings {
    /// cluster-autoscaler's defaults; planning only (`act` off).
    fn default() -> Settings {
        Settings {
            expander: Expander {
                chain: vec![Strategy::LeastWaste],
                priorities: None,
            },
            limits: ClusterLimits::default(),
            expendable_pods_priority_cutoff: -10,
            max_node_provision_time: Duration::from_secs(15 * 60),
            max_node_startup_time: Duration::from_secs(15 * 60),
            health: HealthSettings::default(),
            backoff: BackoffSettings::default(),
            act: false,
            remove_unregistered: false,
            wait_for_new_pods: false,
            new_pod_scale_up_delay: Duration::ZERO,
            scale_down: ScaleDownSettings::default(),
            consolidation: ConsolidationSettings::default(),
            headroom: Vec::new(),
            disruption: None,
            capacity_quotas: true,
            capacity_buffer_ready_replicas: ReadyReplicas::Reconciled,
            leaving_nodes: LeavingHandling::Handle,
            pending_pods_batching_timeout: None,
        }
    }
}

impl Settings {
    /// The options of a group the provider gives none for: upstream's defaults, with the companion's own
    /// provision and startup times and scale-down thresholds.
    pub fn group_defaults(&self) -> GroupOptions {
        let down = &self.scale_down;
        GroupOptions {
            provision: self.max_node_provision_time,
            startup: self.max_node_startup_time,
            utilization: down.utilization_threshold,
            gpu_utilization: down.gpu_utilization_threshold,
            unneeded: down.unneeded_time,
            unready: down.unready_time,
            ignore_daemon_sets: down.ignore_daemonsets_utilization,
            ..GroupOptions::default()
        }
    }
}

/// `--max-total-unready-percentage` and `--ok-total-unready-count`.
#[derive(Clone, Copy, Debug)]
pub struct HealthSettings {
    pub max_unready_percentage: f64,
    pub ok_unready_count: usize,
}

impl Default for HealthSettings {
    /// cluster-autoscaler's defaults: 45% and 3.
    fn default() -> HealthSettings {
        HealthSettings {
            max_unready_percentage: 45.0,
            ok_unready_count: 3,
        }
    }
}
