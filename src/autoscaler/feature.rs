//! The seam through which a feature joins the loop, as cluster-autoscaler's processors do: what it adds
//! before the loop's first pass over pods (virtual pods: headroom's and the CapacityBuffers' room, the
//! ProvisioningRequests' pods), and what it takes afterwards (its part of the report, from where the loop's
//! decisions put those pods, and its statuses written back). The loop (`core/`) holds its features in a
//! list and calls each at these points; a new feature is an impl, not new cut-in points in RunOnce.

use crate::autoscaler::cluster::{ClusterSource, StatusNotWritten};
use crate::autoscaler::status::Status;
use crate::model::Pod;
use std::time::SystemTime;

/// A feature of the loop that plans with virtual pods and writes statuses back.
#[async_trait::async_trait]
pub trait LoopFeature: Send + Sync {
    /// Appends this loop's virtual pods to `extra`, whose first pod is the loop's pod `first` (they follow
    /// the view's own pods and the earlier features').
    fn add_pods(&mut self, extra: &mut Vec<Pod>, first: usize);

    /// Its part of `status`, read from where this loop's decisions (already in `status`) put its pods.
    fn report(&mut self, status: &mut Status, now: SystemTime);

    /// Its statuses that changed this loop, written back on `cluster`. Returns the ones not written.
    async fn write_back(&self, cluster: &dyn ClusterSource) -> Vec<StatusNotWritten>;
}
