//! What each pod's ResourceClaims ask of the node it goes on, found once a loop in the cluster's claims and
//! templates before anything is simulated (and its requests of extended resources a DeviceClass stands
//! for, KEP-5004): the simulation reads it from the pod. Only where the cluster
//! has DRA objects: a cluster without them pays nothing, and a pod naming claims there has nothing to
//! allocate them from.

use crate::autoscaler::cluster::ClusterView;
use crate::model::{ClaimIndex, Pod};
use std::sync::Arc;

/// The view's pods with their claims' needs, when the cluster has DRA objects (`None`: the view's pods
/// as they are); `extra` (headroom's and ProvisioningRequests' pods) get theirs in place.
pub fn with_needs(view: &ClusterView, extra: &mut [Pod]) -> Option<Vec<Arc<Pod>>> {
    if view.dra.is_empty() {
        return None;
    }
    let index = ClaimIndex::new(&view.dra);
    for pod in extra.iter_mut() {
        if let Some(planned) = index.plan(pod) {
            *pod = planned;
        }
    }
    let pods = (view.pods.iter())
        .map(|pod| index.plan(pod).map_or_else(|| pod.clone(), Arc::new))
        .collect();
    Some(pods)
}
