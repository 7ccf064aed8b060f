//! What scale-down and consolidation need of the loop: its settings, the provider, and the cluster they may
//! act on. The loop makes one per iteration and lends it to the policy and the consolidator alike.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::ClusterSource;
use crate::autoscaler::settings::Settings;
use std::sync::Arc;

pub struct Context<'a> {
    pub settings: &'a Settings,
    pub client: &'a ProviderClient,
    /// Where deletions are carried out (taints, evictions); `None` plans them only.
    pub actor: Option<Arc<dyn ClusterSource>>,
}
