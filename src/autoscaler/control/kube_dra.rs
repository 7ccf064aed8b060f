//! Dynamic Resource Allocation on the live cluster: DeviceClasses, ResourceClaims, ResourceClaimTemplates
//! and ResourceSlices (`resource.k8s.io`, v1 where the API server serves it, else v1beta2) cached by
//! watches like the rest of the view, and read into the model when a loop asks. A cluster that serves
//! neither version (before Kubernetes 1.33, or without RBAC to read them) gets no DRA watches at all.

use crate::autoscaler::cluster::ClusterError;
use crate::autoscaler::control::watch::{reflect, served};
use crate::k8s::{DRA_GROUP, DRA_KINDS, DRA_VERSIONS, read_dra_object};
use crate::model::DraObjects;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::Store;
use std::future::Future;
use std::sync::Arc;

pub struct DraWatches {
    /// Each kind's cache, in the order of `DRA_KINDS`.
    stores: Vec<(&'static str, Store<DynamicObject>)>,
}

fn resource(kind: &str, plural: &str, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(DRA_GROUP, version, kind), plural)
}

impl DraWatches {
    /// Starts the watches when the API server serves `resource.k8s.io` (asked of ResourceSlices, which
    /// every DRA driver publishes); `spawn` runs each watch's task.
    pub async fn start(
        client: &kube::Client,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<DraWatches>, ClusterError> {
        let slices = |version: &str| resource("ResourceSlice", "resourceslices", version);
        let Some(version) = served(client, "ResourceSlice", slices, &DRA_VERSIONS).await? else {
            return Ok(None);
        };
        let mut stores = Vec::with_capacity(DRA_KINDS.len());
        for (kind, plural) in DRA_KINDS {
            let resource = resource(kind, plural, version);
            let (store, task) = reflect(Api::all_with(client.clone(), &resource), resource);
            spawn(Box::pin(task));
            stores.push((kind, store));
        }
        for (kind, store) in &stores {
            store.wait_until_ready().await.map_err(|e| {
                ClusterError::Kube(format!(
                    "the {kind} watch stopped before its first list: {e}"
                ))
            })?;
        }
        Ok(Some(DraWatches { stores }))
    }

    /// The cached objects in the model, by name (an object the API server would refuse is left out with a
    /// warning naming it and the field).
    pub fn objects(&self) -> DraObjects {
        let mut objects = DraObjects::default();
        for (kind, store) in &self.stores {
            let mut cached = store.state();
            cached.sort_by(|a, b| {
                let key = |o: &Arc<DynamicObject>| {
                    (o.metadata.namespace.clone(), o.metadata.name.clone())
                };
                key(a).cmp(&key(b))
            });
            for object in cached {
                let read = serde_json::to_value(object.as_ref())
                    .map_err(|e| e.to_string())
                    .and_then(|value| {
                        read_dra_object(&mut objects, kind, value).map_err(|e| e.to_string())
                    });
                if let Err(error) = read {
                    tracing::warn!(%error, "{kind} left out of the loop");
                }
            }
        }
        objects
    }
}
