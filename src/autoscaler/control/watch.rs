//! What the live cluster's sources share: the field manager they write as, the loop that keeps a
//! reflector's watch running, and which version of a custom resource the API server serves. The
//! PodDisruptionBudgets' and DaemonSets' watches (`kube.rs`), the CapacityBuffers' (`kube_buffers.rs`),
//! the ProvisioningRequests' (`kube_requests.rs`) and the CapacityQuotas' (`kube_quotas.rs`) use them; nodes and pods have their own (`mirror.rs`).

use crate::autoscaler::cluster::{ClusterError, StatusWrite};
use futures::StreamExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::future::Future;

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
