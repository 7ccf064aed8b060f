//! What scale-down and consolidation need of the loop: their settings, the provider, and the cluster they may
//! act on. The loop makes one per iteration and lends it to the policy and the consolidator alike.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::ClusterSource;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::quotas::QuotaBook;
use crate::autoscaler::scaledown::settings::{ConsolidationSettings, ScaleDownSettings};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use std::sync::Arc;
use std::time::Duration;

pub struct Context<'a> {
    pub scale_down: &'a ScaleDownSettings,
    pub consolidation: &'a ConsolidationSettings,
    /// The cluster's limits: a removal keeps the MIN totals, a replacement's new node fits the MAX ones.
    pub limits: &'a ClusterLimits,
    /// `--max-node-startup-time`: a node not Ready yet and younger is still starting.
    pub max_node_startup_time: Duration,
    /// Whether the loop acts at all (not `simulate`, not `--dry-run`).
    pub act: bool,
    pub client: &'a ProviderClient,
    /// Where deletions are carried out (taints, evictions); `None` plans them only.
    pub actor: Option<Arc<dyn ClusterSource>>,
    /// Budgets, expiry and grace periods per group (`--disruption-config`); `None` changes nothing.
    pub disruption: Option<&'a DisruptionConfig>,
    /// The loop's CapacityQuotas: a replacement's new node fits them too (a removal is never held by one).
    pub quotas: Arc<QuotaBook>,
}
