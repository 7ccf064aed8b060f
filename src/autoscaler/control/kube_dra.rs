//! Dynamic Resource Allocation on the live cluster: DeviceClasses, ResourceClaims, ResourceClaimTemplates
//! and ResourceSlices (`resource.k8s.io`, v1 where the API server serves it, else v1beta2) kept converted
//! into the model as their watch events arrive (`mirror.rs`), so that a loop's view costs a pointer per
//! object and converting costs what changed: a cluster of 10,000 GPU nodes has 10,000 slices, and an
//! object a loop did not see change is handed over as the same `Arc`, which the simulation's DRA state
//! takes as unchanged. A cluster that serves neither version (before Kubernetes 1.33, or without RBAC to
//! read them) gets no DRA watches at all.

use crate::autoscaler::cluster::ClusterError;
use crate::autoscaler::control::mirror::Mirror;
use crate::autoscaler::control::watch::served;
use crate::k8s::{
    DRA_GROUP, ObjectError, claim_template, device_class, resource_claim, resource_slice,
};
use crate::model::{ClaimTemplate, DeviceClass, DraObjects, Name, ResourceClaim, ResourceSlice};
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use std::future::Future;
use std::sync::Arc;

pub struct DraWatches {
    classes: Arc<Mirror<DeviceClass>>,
    slices: Arc<Mirror<ResourceSlice>>,
    claims: Arc<Mirror<ResourceClaim>>,
    templates: Arc<Mirror<ClaimTemplate>>,
}

fn resource(kind: &str, plural: &str, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(DRA_GROUP, version, kind), plural)
}

/// Watches `kind` (at `plural`) into a mirror, each object read by `read`; one the API server would refuse
/// is left out with a warning naming it and the field, once per event, not once per loop.
fn mirror<T: Send + Sync + 'static>(
    client: &kube::Client,
    (kind, plural, version): (&'static str, &str, &str),
    read: fn(serde_json::Value) -> Result<T, ObjectError>,
    spawn: &mut impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
) -> Arc<Mirror<T>> {
    let resource = resource(kind, plural, version);
    let watch = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &resource),
        watcher::Config::default(),
    );
    let mirror = Arc::new(Mirror::default());
    let follower = mirror.clone();
    let convert = move |object: &DynamicObject| {
        let read = serde_json::to_value(object)
            .map_err(|e| e.to_string())
            .and_then(|value| read(value).map_err(|e| e.to_string()));
        read.map_err(|error| tracing::warn!(%error, "{kind} left out of the loop"))
            .ok()
    };
    spawn(Box::pin(async move {
        follower.follow(watch, convert, |_| {}).await
    }));
    mirror
}

/// A mirror's objects, sorted by `key`: the same order every loop, whatever order events came in.
fn sorted<T, K: Ord>(mirror: &Mirror<T>, key: impl Fn(&T) -> K) -> Vec<Arc<T>> {
    let mut items = mirror.items();
    items.sort_by_cached_key(|item| key(item));
    items
}

impl DraWatches {
    /// Starts the watches when the API server serves `resource.k8s.io` (asked of ResourceSlices, which
    /// every DRA driver publishes), and waits for each one's first list; `spawn` runs each watch's task.
    pub async fn start(
        client: &kube::Client,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<DraWatches>, ClusterError> {
        let slices = |version: &str| resource("ResourceSlice", "resourceslices", version);
        let versions = &crate::k8s::DRA_VERSIONS;
        let Some(version) = served(client, "ResourceSlice", slices, versions).await? else {
            return Ok(None);
        };
        let watches = DraWatches {
            classes: mirror(
                client,
                ("DeviceClass", "deviceclasses", version),
                device_class,
                &mut spawn,
            ),
            slices: mirror(
                client,
                ("ResourceSlice", "resourceslices", version),
                resource_slice,
                &mut spawn,
            ),
            claims: mirror(
                client,
                ("ResourceClaim", "resourceclaims", version),
                resource_claim,
                &mut spawn,
            ),
            templates: mirror(
                client,
                ("ResourceClaimTemplate", "resourceclaimtemplates", version),
                claim_template,
                &mut spawn,
            ),
        };
        watches.classes.wait_until_ready().await;
        watches.slices.wait_until_ready().await;
        watches.claims.wait_until_ready().await;
        watches.templates.wait_until_ready().await;
        Ok(Some(watches))
    }

    /// The objects as their watches have them, by name (namespaced ones by namespace, then name).
    pub fn objects(&self) -> DraObjects {
        let named = |namespace: &Name, name: &Name| (namespace.clone(), name.clone());
        DraObjects {
            classes: sorted(&self.classes, |c| c.name.clone()),
            slices: sorted(&self.slices, |s| s.name.clone()),
            claims: sorted(&self.claims, |c| named(&c.namespace, &c.name)),
            templates: sorted(&self.templates, |t| named(&t.namespace, &t.name)),
        }
    }
}
