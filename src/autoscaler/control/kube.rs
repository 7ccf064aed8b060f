//! The live cluster, through kube-rs: nodes and pods (all namespaces) kept converted into the model from
//! their watches (`mirror.rs`), reflector caches of PodDisruptionBudgets and DaemonSets (and CapacityBuffers
//! with what they name, in kube_buffers; ProvisioningRequests, in kube_requests; CapacityQuotas, in
//! kube_quotas; DRA's objects, in kube_dra), so that a loop reads memory and never waits on the API server; a trigger that fires when a
//! pod turns Unschedulable (to start a loop early, as cluster-autoscaler's frequent loops do); and the actions scale-down needs: node taints (patched against the
//! version read, so a concurrent change is not overwritten) and evictions through the Eviction API.

use crate::autoscaler::cluster::{
    BufferStatus, ClusterError, ClusterSource, ClusterView, QuotaStatusWrite, RequestStatus,
};
use crate::autoscaler::control::kube_buffers::BufferWatches;
use crate::autoscaler::control::kube_dra::DraWatches;
use crate::autoscaler::control::kube_quotas::QuotaWatches;
use crate::autoscaler::control::kube_requests::RequestWatches;
use crate::autoscaler::control::mirror::Mirror;
use crate::autoscaler::control::watch::{MANAGER, drive};
use crate::k8s::{
    DISRUPTION_CONFIG_KEY, DISRUPTION_CONFIG_MAP, PodJson, daemonset_pod, marked_unschedulable,
    node_from_api, pdb_from_api, pod_from_api,
};
use crate::model::{Alike, CORDONED_ANNOTATION, Taint};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// The field manager our patches are made as.
pub struct Kube {
    client: kube::Client,
    /// Nodes and pods as the model has them, kept current from their watches (the API objects are not
    /// kept): a view hands out what they hold.
    nodes: Arc<Mirror<crate::model::Node>>,
    pods: Arc<Mirror<crate::model::Pod>>,
    pdbs: Store<PodDisruptionBudget>,
    daemonsets: Store<DaemonSet>,
    /// CapacityBuffers and what they name, when the cluster serves them.
    buffers: Option<BufferWatches>,
    /// ProvisioningRequests and the PodTemplates they name, when the cluster serves them.
    requests: Option<RequestWatches>,
    /// CapacityQuotas, when the cluster serves them.
    quotas: Option<QuotaWatches>,
    /// DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices, when the cluster serves
    /// them.
    dra: Option<DraWatches>,
    /// The ConfigMap `ekscale-disruption` of the companion's namespace, once asked for.
    disruption: Option<Store<ConfigMap>>,
    unschedulable: Arc<Notify>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Kube {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `--kube-client-qps` and `--kube-client-burst` (client-go's defaults, 5 and 10): requests started, on
/// average and at once. Watches are long requests, so only their (re)starts count.
#[derive(Clone, Copy, Debug)]
pub struct RateLimits {
    pub qps: f64,
    pub burst: u32,
}

impl Default for RateLimits {
    fn default() -> RateLimits {
        RateLimits {
            qps: 5.0,
            burst: 10,
        }
    }
}

/// A client whose requests are rate limited: up to `burst` in every `burst / qps` seconds.
pub fn client(config: kube::Config, limits: RateLimits) -> Result<kube::Client, ClusterError> {
    let burst = limits.burst.max(1);
    let window = Duration::from_secs_f64(f64::from(burst) / limits.qps.max(0.001));
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| ClusterError::Kube(e.to_string()))?;
    Ok(builder
        .with_layer(&tower::limit::RateLimitLayer::new(u64::from(burst), window))
        .build())
}

/// Whether the pod waits for a node because the scheduler found none.
fn unschedulable(pod: &Pod) -> bool {
    let pending = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty);
    pending && marked_unschedulable(pod.status.as_ref())
}

impl Kube {
    /// Connects with `config` (a kubeconfig's or the in-cluster one) and starts the watches. The client's
    /// own retrying of 429s is turned off: an eviction a PDB refuses answers 429, and the actuator retries
    /// those itself, once a loop, up to `--max-pod-eviction-time`; watches back off on their own.
    pub async fn connect(
        mut config: kube::Config,
        limits: RateLimits,
    ) -> Result<Kube, ClusterError> {
        config.default_retry = false;
        Kube::start(client(config, limits)?).await
    }

    /// Starts the watches and waits until every cache has its first full list.
    pub async fn start(client: kube::Client) -> Result<Kube, ClusterError> {
        let unschedulable_pods = Arc::new(Notify::new());
        let mut tasks = Vec::new();
        // Listed as client-go's informers list (resourceVersion 0: from the API server's watch cache, in one
        // response): in pages of 500 under the client's rate limit, a million pods took 400 s to list.
        let listing = watcher::Config::default().any_semantic();
        let nodes = Arc::new(Mirror::default());
        let mirror = nodes.clone();
        let watch = watcher(Api::<Node>::all(client.clone()), listing.clone());
        tasks.push(tokio::spawn(async move {
            mirror.follow(watch, convert_node, |_| {}).await
        }));
        let pods = Arc::new(Mirror::default());
        let mirror = pods.clone();
        let watch = watcher(Api::<Pod>::all(client.clone()), listing);
        let notify = unschedulable_pods.clone();
        tasks.push(tokio::spawn(async move {
            // Equal constraints share one value, so that the loop compares them by pointer; what is shared
            // outlives a pod, so a pod read today shares with one read yesterday.
            let mut alike = Alike::default();
            let convert = move |pod: &Pod| {
                let mut pod = pod_from_api(pod, PodJson::KeepIfPending)
                    .map_err(|e| tracing::warn!(error = %e, "pod left out of the loop"))
                    .ok()?;
                alike.share(&mut pod);
                Some(pod)
            };
            let seen = move |pod: &Pod| {
                if unschedulable(pod) {
                    notify.notify_one();
                }
            };
            mirror.follow(watch, convert, seen).await
        }));
        let (pdbs, writer) = reflector::store();
        let stream = reflector::reflector(
            writer,
            watcher(
                Api::<PodDisruptionBudget>::all(client.clone()),
                watcher::Config::default(),
            ),
        );
        tasks.push(tokio::spawn(drive(stream.applied_objects(), |_| {})));
        let (daemonsets, writer) = reflector::store();
        let stream = reflector::reflector(
            writer,
            watcher(
                Api::<DaemonSet>::all(client.clone()),
                watcher::Config::default(),
            ),
        );
        tasks.push(tokio::spawn(drive(stream.applied_objects(), |_| {})));
        let buffers = BufferWatches::start(&client, |task| tasks.push(tokio::spawn(task))).await?;
        let templates = buffers.as_ref().map(BufferWatches::templates);
        let spawn = |task| tasks.push(tokio::spawn(task));
        let requests = RequestWatches::start(&client, templates, spawn).await?;
        let quotas = QuotaWatches::start(&client, |task| tasks.push(tokio::spawn(task))).await?;
        let dra = DraWatches::start(&client, |task| tasks.push(tokio::spawn(task))).await?;
        let source = Kube {
            client,
            nodes,
            pods,
            pdbs,
            daemonsets,
            buffers,
            requests,
            quotas,
            dra,
            disruption: None,
            unschedulable: unschedulable_pods,
            tasks,
        };
        let ready = async {
            source.nodes.wait_until_ready().await;
            source.pods.wait_until_ready().await;
            source.pdbs.wait_until_ready().await?;
            source.daemonsets.wait_until_ready().await
        };
        ready.await.map_err(|e| {
            ClusterError::Kube(format!("the watches stopped before their first list: {e}"))
        })?;
        Ok(source)
    }

    /// Completes when a pod turns Unschedulable (wakes one waiter; notifications before the wait count).
    pub async fn unschedulable_pod(&self) {
        self.unschedulable.notified().await;
    }

    /// Watches the ConfigMap `ekscale-disruption` of `namespace` (the companion's): each view carries its
    /// `config.yaml`, and the loop reads it again when it changes. Waits for the first list, so that the
    /// first loop already keeps its budgets.
    pub async fn watch_disruption_config(&mut self, namespace: &str) -> Result<(), ClusterError> {
        let (store, writer) = reflector::store();
        let fields = format!("metadata.name={DISRUPTION_CONFIG_MAP}");
        let config = watcher::Config::default().fields(&fields);
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), namespace);
        let stream = reflector::reflector(writer, watcher(api, config));
        self.tasks
            .push(tokio::spawn(drive(stream.applied_objects(), |_| {})));
        store.wait_until_ready().await.map_err(|e| {
            ClusterError::Kube(format!("the {DISRUPTION_CONFIG_MAP} watch stopped: {e}"))
        })?;
        self.disruption = Some(store);
        Ok(())
    }
}

fn api_error(what: String, e: kube::Error) -> ClusterError {
    match e {
        kube::Error::Api(status) if status.code == 404 => ClusterError::NoNode(what),
        other => ClusterError::Kube(format!("{what}: {other}")),
    }
}

impl Kube {
    /// Replaces the node's taints with `change` applied to the ones it has now, with the node's
    /// resourceVersion in the patch so that a concurrent update makes it fail rather than be lost.
    /// A merge patch of node `name`, as ekscale's field manager.
    async fn patch_node(&self, name: &str, patch: &serde_json::Value) -> Result<(), ClusterError> {
        let params = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        };
        Api::<Node>::all(self.client.clone())
            .patch(name, &params, &Patch::Merge(patch))
            .await
            .map_err(|e| api_error(name.to_string(), e))?;
        Ok(())
    }

    async fn change_taints(
        &self,
        name: &str,
        change: impl Fn(&mut Vec<k8s_openapi::api::core::v1::Taint>),
    ) -> Result<(), ClusterError> {
        let api = Api::<Node>::all(self.client.clone());
        let node = api
            .get(name)
            .await
            .map_err(|e| api_error(name.to_string(), e))?;
        let mut taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
        let before = taints.clone();
        change(&mut taints);
        if taints == before {
            return Ok(());
        }
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": taints},
        });
        let params = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        };
        api.patch(name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| api_error(name.to_string(), e))?;
        Ok(())
    }
}

/// A node in the model, or none (with a warning: one odd node must not stop the loop).
fn convert_node(node: &Node) -> Option<crate::model::Node> {
    node_from_api(node)
        .map_err(|e| tracing::warn!(error = %e, "node left out of the loop"))
        .ok()
}

#[async_trait::async_trait]
impl ClusterSource for Kube {
    async fn view(&self) -> Result<Arc<ClusterView>, ClusterError> {
        let now = SystemTime::now();
        let mut view = ClusterView {
            now: Some(now),
            ..ClusterView::default()
        };
        // Nodes and pods as their watches keep them (an object that cannot be read was left out there, with
        // a warning); the rest is small and converted here.
        view.nodes = self.nodes.items();
        view.pods = self.pods.items();
        for pdb in self.pdbs.state() {
            match pdb_from_api(&pdb) {
                Ok(pdb) => view.pdbs.push(pdb),
                Err(e) => tracing::warn!(error = %e, "PodDisruptionBudget left out of the loop"),
            }
        }
        for ds in self.daemonsets.state() {
            match daemonset_pod(&ds) {
                Ok(pod) => view.daemonsets.push(pod),
                Err(e) => tracing::warn!(error = %e, "DaemonSet left out of the loop"),
            }
        }
        if let Some(buffers) = &self.buffers {
            view.buffers = buffers.objects();
        }
        if let Some(requests) = &self.requests {
            view.requests = requests.objects();
        }
        if let Some(quotas) = &self.quotas {
            view.quotas = quotas.quotas().into();
        }
        if let Some(dra) = &self.dra {
            view.dra = Arc::new(dra.objects());
        }
        if let Some(store) = &self.disruption {
            let maps = store.state();
            let ours = maps
                .iter()
                .find(|m| m.metadata.name.as_deref() == Some(DISRUPTION_CONFIG_MAP));
            let data = ours.and_then(|m| m.data.as_ref());
            view.disruption_config = data
                .and_then(|d| d.get(DISRUPTION_CONFIG_KEY))
                .map(|text| Arc::from(text.as_str()));
        }
        Ok(Arc::new(view))
    }

    fn can_act(&self) -> bool {
        true
    }

    async fn taint(&self, node: &str, taint: &Taint) -> Result<(), ClusterError> {
        let wanted = k8s_openapi::api::core::v1::Taint {
            key: taint.key.clone(),
            value: Some(taint.value.clone()).filter(|v| !v.is_empty()),
            effect: taint.effect.as_str().to_string(),
            time_added: None,
        };
        self.change_taints(node, |taints| {
            taints.retain(|t| t.key != wanted.key);
            taints.push(wanted.clone());
        })
        .await
    }

    async fn untaint(&self, node: &str, key: &str) -> Result<(), ClusterError> {
        self.change_taints(node, |taints| taints.retain(|t| t.key != key))
            .await
    }

    async fn cordon(&self, node: &str, why: &str) -> Result<(), ClusterError> {
        let patch = serde_json::json!({
            "metadata": {"annotations": {CORDONED_ANNOTATION: why}},
            "spec": {"unschedulable": true},
        });
        self.patch_node(node, &patch).await
    }

    async fn uncordon(&self, node: &str) -> Result<(), ClusterError> {
        let patch = serde_json::json!({
            "metadata": {"annotations": {CORDONED_ANNOTATION: null}},
            "spec": {"unschedulable": null},
        });
        self.patch_node(node, &patch).await
    }

    async fn write_buffer_status(&self, buffer: BufferStatus<'_>) -> Result<(), ClusterError> {
        match &self.buffers {
            Some(watches) => watches.write_status(buffer).await,
            None => Err(ClusterError::Kube(
                "the cluster serves no CapacityBuffers".into(),
            )),
        }
    }

    async fn write_request_status(&self, request: RequestStatus<'_>) -> Result<(), ClusterError> {
        match &self.requests {
            Some(watches) => watches.write_status(request).await,
            None => Err(ClusterError::Kube(
                "the cluster serves no ProvisioningRequests".into(),
            )),
        }
    }

    async fn write_quota_status(&self, quota: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        match &self.quotas {
            Some(watches) => watches.write_status(quota).await,
            None => Err(ClusterError::Kube(
                "the cluster serves no CapacityQuotas".into(),
            )),
        }
    }

    async fn pods_on(&self, node: &str) -> Result<Option<Vec<crate::model::Pod>>, ClusterError> {
        let fields = format!("spec.nodeName={node}");
        let list = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default().fields(&fields))
            .await
            .map_err(|e| ClusterError::Kube(format!("listing the pods on node {node}: {e}")))?;
        let mut pods = Vec::new();
        for pod in &list.items {
            match pod_from_api(pod, PodJson::Drop) {
                // The field selector is the API server's; the filter holds whatever it answered.
                Ok(pod) if pod.node_name.as_deref() == Some(node) => pods.push(pod),
                Ok(_) => {}
                Err(e) => {
                    return Err(ClusterError::Kube(format!(
                        "a pod on node {node} cannot be read: {e}"
                    )));
                }
            }
        }
        Ok(Some(pods))
    }

    async fn evict(
        &self,
        namespace: &str,
        name: &str,
        grace: Duration,
    ) -> Result<(), ClusterError> {
        let key = format!("{namespace}/{name}");
        // A policy/v1 Eviction written out: kube-rs's `evict` sends its delete options as `delete_options`,
        // which the API server does not read, and the grace period would be lost.
        let eviction = serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"gracePeriodSeconds": grace.as_secs()},
        });
        match Api::<Pod>::namespaced(self.client.clone(), namespace)
            .create_subresource::<_, serde_json::Value>(
                "eviction",
                name,
                &PostParams::default(),
                &eviction,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 429 => {
                Err(ClusterError::EvictionRefused {
                    pod: key,
                    why: status.message,
                })
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Err(ClusterError::NoPod(key)),
            Err(e) => Err(ClusterError::Kube(format!("evicting {key}: {e}"))),
        }
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        grace: Duration,
    ) -> Result<(), ClusterError> {
        let key = format!("{namespace}/{name}");
        let params = DeleteParams {
            grace_period_seconds: Some(u32::try_from(grace.as_secs()).unwrap_or(u32::MAX)),
            ..DeleteParams::default()
        };
        match Api::<Pod>::namespaced(self.client.clone(), namespace)
            .delete(name, &params)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(ClusterError::NoPod(key)),
            Err(e) => Err(ClusterError::Kube(format!("deleting {key}: {e}"))),
        }
    }
}
