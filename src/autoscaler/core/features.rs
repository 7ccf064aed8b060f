//! This loop's features, each joining it through `autoscaler::feature::LoopFeature`: headroom's and the
//! CapacityBuffers' room (`headroom/`), then the ProvisioningRequests (`provreq/`), in the order their
//! virtual pods follow the view's own. The loop calls them as one list at the seam's points; the
//! requests' own stages (consuming pods set aside, booked room held, requests provisioned) read them by name.

use crate::autoscaler::cluster::{ClusterSource, ClusterView, StatusNotWritten};
use crate::autoscaler::feature::LoopFeature;
use crate::autoscaler::headroom::outcome::{self as headroom, Reserved};
use crate::autoscaler::provreq::outcome::{self as provreq, Requests};
use crate::autoscaler::settings::Settings;
use crate::autoscaler::status::{LoopStage, ProblemKind, Status};
use crate::model::Pod;
use std::time::SystemTime;

/// The features of one loop.
pub(crate) struct Features {
    /// Headroom's and the CapacityBuffers' room.
    pub reserved: Reserved,
    /// The ProvisioningRequests.
    pub requests: Requests,
}

impl Features {
    /// Each feature read from `view` at `now`.
    pub fn read(settings: &Settings, view: &ClusterView, now: SystemTime) -> Features {
        let ready = settings.capacity_buffer_ready_replicas;
        Features {
            reserved: headroom::reserve(&settings.headroom, view, ready, now),
            requests: provreq::read(view, now),
        }
    }

    /// The features in the loop's order.
    fn list(&mut self) -> [&mut dyn LoopFeature; 2] {
        [&mut self.reserved, &mut self.requests]
    }

    /// Every feature's virtual pods, in order, the first of them the loop's pod `first`.
    pub fn virtual_pods(&mut self, first: usize) -> Vec<Pod> {
        let mut extra = Vec::new();
        for feature in self.list() {
            feature.add_pods(&mut extra, first);
        }
        extra
    }

    /// Each feature's part of the report, and its statuses written back on `actor` when the loop acts.
    pub async fn finish(
        &mut self,
        status: &mut Status,
        actor: Option<&dyn ClusterSource>,
        now: SystemTime,
    ) {
        for feature in self.list() {
            feature.report(status, now);
        }
        let Some(cluster) = actor else { return };
        for feature in self.list() {
            let errors: Vec<StatusNotWritten> = feature.write_back(cluster).await;
            status.problems(LoopStage::Statuses, ProblemKind::StatusWrite, errors);
        }
    }
}
