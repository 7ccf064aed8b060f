//! CapacityQuotas on the live cluster: the quotas (cluster-scoped; v1beta1 where the API server serves it,
//! else v1alpha1), cached by the custom resource watch (`watch.rs`) like the rest of the view, each read into
//! the model once a loop; and the status subresource, written in the version read. A cluster without the
//! CRD (or without RBAC to read it) gets no quota watch at all.

use crate::autoscaler::cluster::{ClusterError, QuotaStatusWrite};
use crate::autoscaler::control::watch::CustomWatch;
use crate::k8s::CapacityQuotaObject;
use crate::model::CapacityQuota;
use std::future::Future;

pub struct QuotaWatches {
    quotas: CustomWatch<CapacityQuotaObject>,
}

impl QuotaWatches {
    /// Starts the watch when the API server serves CapacityQuotas; `spawn` runs the watch's task.
    pub async fn start(
        client: &kube::Client,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<QuotaWatches>, ClusterError> {
        let Some(quotas) = CustomWatch::start(client, &mut spawn).await? else {
            return Ok(None);
        };
        quotas.wait_until_ready().await.map_err(|e| {
            ClusterError::Kube(format!(
                "the CapacityQuota watch stopped before its first list: {e}"
            ))
        })?;
        Ok(Some(QuotaWatches { quotas }))
    }

    /// Every quota, valid or carrying its problem, sorted by name.
    pub fn quotas(&self) -> Vec<CapacityQuota> {
        let mut quotas = self.quotas.objects();
        quotas.sort_by(|a, b| a.name.cmp(&b.name));
        quotas
    }

    /// Writes `quota`'s status subresource, in the version it was read as.
    pub async fn write_status(&self, quota: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        self.quotas.write_status(quota).await
    }
}
