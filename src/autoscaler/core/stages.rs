//! The values RunOnce's stages hand on to the next: the pods in equivalence groups, what the requests'
//! provisioning changes, what scale-down plans over, and the context scale-down and consolidation read.

use crate::autoscaler::client::{Profiles, ProviderClient};
use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::clustersnapshot::snapshot::ClusterSnapshot;
use crate::autoscaler::core::record::Read;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::Group;
use crate::autoscaler::leaving::LeavingEffects;
use crate::autoscaler::scaledown::context::Context;
use crate::autoscaler::scaleup::expander::Expander;
use crate::autoscaler::settings::Settings;
use crate::autoscaler::status::ScaleUp;
use crate::model::{LabelProjection, PodList};
use crate::simulator::EquivalenceGroup;
use std::sync::Arc;

/// What the pods stage hands on: the pending pods in equivalence groups, the projection of labels they were
/// grouped on, and the Fargate profiles.
pub(super) struct Grouped {
    pub(super) help: Vec<EquivalenceGroup>,
    pub(super) projection: LabelProjection,
    pub(super) profiles: Option<Profiles>,
}

/// What the requests' provisioning changes and reads: the snapshot, the groups, the requests' pods in
/// equivalence groups, the expander.
pub(super) type ProvisionStage<'a, 'b> = (
    &'a mut ClusterSnapshot,
    &'a mut [Group],
    &'a [Vec<EquivalenceGroup>],
    &'b Expander,
);

/// What scale-down plans over: the snapshot scale-up left, what the cluster state read, the groups, this
/// loop's scale-ups, and why it waits, if it does.
pub(super) struct ScaleDownStage<'a> {
    pub(super) view: &'a ClusterView,
    pub(super) pods: PodList<'a>,
    pub(super) snapshot: ClusterSnapshot,
    pub(super) read: &'a Read,
    pub(super) groups: &'a mut [Group],
    pub(super) scale_ups: &'a [ScaleUp],
    /// Whether the expander asked for node prices already (consolidation needs them).
    pub(super) priced: bool,
    pub(super) projection: &'a LabelProjection,
    /// Upstream's batching holds scale-up this loop, and scale-down waits with it.
    pub(super) paused: Option<String>,
    /// Budgets, expiry and grace periods per group, when a configuration applies.
    pub(super) disruption: Option<&'a DisruptionConfig>,
    /// The leaving nodes, for the rebalance and repair methods.
    pub(super) leaving: &'a LeavingEffects,
}

/// What scale-down and consolidation need of the loop, acting on `actor` when there is one.
pub(super) fn context<'a>(
    settings: &'a Settings,
    client: &'a ProviderClient,
    actor: Option<Arc<dyn ClusterSource>>,
) -> Context<'a> {
    Context {
        scale_down: &settings.scale_down,
        consolidation: &settings.consolidation,
        limits: &settings.limits,
        max_node_startup_time: settings.max_node_startup_time,
        act: settings.act,
        client,
        actor,
        disruption: None,
        quotas: Arc::default(),
    }
}
