//! What the live cluster's sources share: the field manager they write as, the loop that keeps a
//! reflector's watch running, which version of a custom resource the API server serves, and one watch and
//! one status writer for any custom resource kind ([`CustomWatch`], over `k8s::CustomResource`). The
//! PodDisruptionBudgets' and DaemonSets' watches (`kube.rs`), the CapacityBuffers' (`kube_buffers.rs`),
//! the ProvisioningRequests' (`kube_requests.rs`), the CapacityQuotas' and DRA's (`kube_dra.rs`) use them;
//! nodes and pods have their own (`mirror.rs`).

use crate::autoscaler::cluster::{ClusterError, StatusWrite};
use crate::k8s::CustomResource;
use futures::StreamExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::store::WriterDropped;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

/// The field manager of every write to the API server.
pub const MANAGER: &str = "ekscale-autoscaler";

/// Runs a reflector's stream for as long as the source lives; watch errors are logged and retried by the
/// watcher with its backoff.
pub async fn drive<K, S>(stream: S, mut each: impl FnMut(&K) + Send)
where
    S: futures::Stream<Item = Result<K, watcher::Error>> + Send,
{
    let stream = stream.default_backoff();
    futures::pin_mut!(stream);
    while let Some(item) = stream.next().await {
        match item {
            Ok(object) => each(&object),
            Err(e) => tracing::warn!(error = %e, "watch failed; retrying"),
        }
    }
}

/// A reflector over `api`: its store, and the task that keeps it.
pub fn reflect<K>(
    api: Api<K>,
    dyntype: K::DynamicType,
) -> (Store<K>, impl Future<Output = ()> + Send)
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    let writer = reflector::store::Writer::new(dyntype);
    let store = writer.as_reader();
    let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()));
    (store, drive(stream.applied_objects(), |_| {}))
}

/// The version of resource `kind` (at `resource(version)`, a custom resource's or a built-in group's such as
/// `resource.k8s.io`) the API server serves, the preferred of `versions` first; none when it serves none of
/// them (no CRD, or a Kubernetes before the group) or this client may not list them.
pub async fn served(
    client: &kube::Client,
    kind: &str,
    resource: impl Fn(&str) -> ApiResource,
    versions: &[&'static str],
) -> Result<Option<&'static str>, ClusterError> {
    for &version in versions {
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource(version));
        match api.list(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(Some(version)),
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(kube::Error::Api(status)) if status.code == 403 => {
                tracing::warn!(message = %status.message, "{kind}s cannot be listed: they are ignored");
                return Ok(None);
            }
            Err(e) => return Err(ClusterError::Kube(format!("listing {kind}s: {e}"))),
        }
    }
    tracing::info!("the API server serves no {kind}s (in {versions:?}): they are ignored");
    Ok(None)
}

/// Writes a custom resource's status subresource (`kind` at `resource`, in the version it was read as): a
/// merge patch of the whole status, so its conditions list is replaced, with the conditions of others kept
/// in it.
pub async fn write_status<S: serde::Serialize>(
    client: &kube::Client,
    kind: &str,
    resource: impl Fn(&str) -> ApiResource,
    write: StatusWrite<'_, S>,
) -> Result<(), ClusterError> {
    let resource = resource(write.version);
    // A cluster-scoped object (a CapacityQuota) has no namespace in its path.
    let api = match write.namespace {
        "" => Api::<DynamicObject>::all_with(client.clone(), &resource),
        namespace => Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource),
    };
    let patch = serde_json::json!({"status": write.status});
    let params = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    };
    match api
        .patch_status(write.name, &params, &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => Err(ClusterError::Kube(format!("{kind} {}: {e}", write.key()))),
    }
}

/// One custom resource kind watched on the live cluster (a CapacityBuffer, a ProvisioningRequest, a
/// CapacityQuota, or any kind given a [`CustomResource`] impl): the version the API server serves, a
/// reflector's cache of its objects, each read into what the loop uses, and its status subresource written
/// in the version read.
pub struct CustomWatch<R> {
    client: kube::Client,
    version: &'static str,
    objects: Store<DynamicObject>,
    kind: PhantomData<fn() -> R>,
}

impl<R: CustomResource> CustomWatch<R> {
    /// Where `R` is served in `version`.
    pub fn resource(version: &str) -> ApiResource {
        let gvk = GroupVersionKind::gvk(R::GROUP, version, R::KIND);
        ApiResource::from_gvk_with_plural(&gvk, R::PLURAL)
    }

    /// Starts the watch when the API server serves `R` (none otherwise, see [`served`]); `spawn` runs its
    /// task. It is not waited for: see [`CustomWatch::wait_until_ready`].
    pub async fn start(
        client: &kube::Client,
        spawn: &mut impl FnMut(Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<CustomWatch<R>>, ClusterError> {
        let Some(version) = served(client, R::KIND, Self::resource, R::VERSIONS).await? else {
            return Ok(None);
        };
        let resource = Self::resource(version);
        let api = Api::all_with(client.clone(), &resource);
        let (objects, task) = reflect(api, resource);
        spawn(Box::pin(task));
        Ok(Some(CustomWatch {
            client: client.clone(),
            version,
            objects,
            kind: PhantomData,
        }))
    }

    /// Completes once the first full list is in.
    pub async fn wait_until_ready(&self) -> Result<(), WriterDropped> {
        self.objects.wait_until_ready().await
    }

    /// Every object, read as the version watched (the items of a list need not repeat it); one that cannot
    /// be read is left out of the loop, with a warning.
    pub fn objects(&self) -> Vec<R::Read> {
        let mut read = Vec::new();
        for object in self.objects.state() {
            let mut value = match serde_json::to_value(object.as_ref()) {
                Ok(value) => value,
                Err(e) => {
                    tracing::warn!(error = %e, "{} left out of the loop", R::KIND);
                    continue;
                }
            };
            value["apiVersion"] = format!("{}/{}", R::GROUP, self.version).into();
            match R::read(value) {
                Ok(object) => read.push(object),
                Err(e) => tracing::warn!(error = %e, "{} left out of the loop", R::KIND),
            }
        }
        read
    }

    /// Writes an object's status subresource, in the version it was read as.
    pub async fn write_status(
        &self,
        write: StatusWrite<'_, R::Status>,
    ) -> Result<(), ClusterError> {
        write_status(&self.client, R::KIND, Self::resource, write).await
    }
}
