//! CapacityQuotas on the live cluster: the quotas (cluster-scoped; v1beta1 where the API server serves it,
//! else v1alpha1), cached by a watch like the rest of the view, each read into the model once a loop; and
//! the status subresource, written in the version read. A cluster without the CRD (or without RBAC to read
//! it) gets no quota watch at all.

use crate::autoscaler::cluster::{ClusterError, QuotaStatusWrite};
use crate::autoscaler::control::watch::{reflect, served, write_status};
use crate::k8s::capacity_buffer::GROUP;
use crate::k8s::capacity_quota::{KIND, PLURAL, VERSIONS};
use crate::k8s::quota_from_value;
use crate::model::CapacityQuota;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::Store;
use std::future::Future;

pub struct QuotaWatches {
    client: kube::Client,
    version: &'static str,
    quotas: Store<DynamicObject>,
}

fn resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, KIND), PLURAL)
}

impl QuotaWatches {
    /// Starts the watch when the API server serves CapacityQuotas; `spawn` runs the watch's task.
    pub async fn start(
        client: &kube::Client,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<QuotaWatches>, ClusterError> {
        let Some(version) = served(client, KIND, resource, &VERSIONS).await? else {
            return Ok(None);
        };
        let resource = resource(version);
        let (quotas, task) = reflect(Api::all_with(client.clone(), &resource), resource);
        spawn(Box::pin(task));
        quotas.wait_until_ready().await.map_err(|e| {
            ClusterError::Kube(format!(
                "the CapacityQuota watch stopped before its first list: {e}"
            ))
        })?;
        Ok(Some(QuotaWatches {
            client: client.clone(),
            version,
            quotas,
        }))
    }

    /// Every quota, valid or carrying its problem, sorted by name. The version is the one watched: the
    /// items of a list need not repeat it.
    pub fn quotas(&self) -> Vec<CapacityQuota> {
        let mut quotas = Vec::new();
        for object in self.quotas.state() {
            let mut value = match serde_json::to_value(object.as_ref()) {
                Ok(value) => value,
                Err(e) => {
                    tracing::warn!(error = %e, "CapacityQuota left out of the loop");
                    continue;
                }
            };
            value["apiVersion"] = format!("{GROUP}/{}", self.version).into();
            match quota_from_value(value) {
                Ok(quota) => quotas.push(quota),
                Err(e) => tracing::warn!(error = %e, "CapacityQuota left out of the loop"),
            }
        }
        quotas.sort_by(|a, b| a.name.cmp(&b.name));
        quotas
    }

    /// Writes `quota`'s status subresource, in the version it was read as.
    pub async fn write_status(&self, quota: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        write_status(&self.client, KIND, resource, quota).await
    }
}
