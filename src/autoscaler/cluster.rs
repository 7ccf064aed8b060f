//! Where the companion reads the cluster from. Every source hands out the same converted view; the live
//! one (kube) keeps it current from watches, so asking is cheap and a loop never waits on the API server.

use crate::k8s as api;

use crate::k8s as provreq;
use crate::k8s::{
    BufferObjects, CapacityBuffer, CapacityQuotaObject, CustomResource, ProvisioningRequest,
    RequestObjects, SnapshotError, parse_snapshot, read_snapshot_text,
};
use crate::model::{CapacityQuota, DraObjects, Node, Pdb, Pod, PodNames, Taint};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The cluster at one moment, in the internal model.
#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    /// Shared, not copied, into each loop's world.
    pub nodes: Vec<Arc<Node>>,
    /// Shared with the source that read them: a live source hands each loop the pods it keeps, so that a
    /// view costs a pointer a pod, not a copy of the cluster.
    pub pods: Vec<Arc<Pod>>,
    /// Every pod's `namespace/name`, in the order of `pods`, packed into one string ([`PodNames::of`]): a
    /// scale-up names tens of thousands of pods, and reading each name from its own allocation was a third
    /// of such a loop. Made the first time a loop names pods ([`ClusterView::pod_keys`]), not with the
    /// view: a live view of a million pods is made in milliseconds, and packing their names is not.
    pub keys: std::sync::OnceLock<PodNames>,
    pub pdbs: Vec<Pdb>,
    /// One pod per DaemonSet, as its template would run on a new node (from a live cluster, or the
    /// DaemonSet objects of a snapshot; without them, the DaemonSet pods that run stand for them).
    pub daemonsets: Vec<Pod>,
    /// CapacityBuffers, and the PodTemplates and scalable objects they may name.
    pub buffers: BufferObjects,
    /// ProvisioningRequests, and the PodTemplates they name.
    pub requests: RequestObjects,
    /// Dynamic Resource Allocation's objects: DeviceClasses, ResourceClaims, ResourceClaimTemplates and
    /// ResourceSlices (those the API server would refuse left out, with a warning), behind an `Arc`: what
    /// a loop plans with shares them, not copies them.
    pub dra: Arc<DraObjects>,
    /// The disruption configuration the cluster holds (`config.yaml` of the ConfigMap `ekscale-disruption`),
    /// as written: the loop reads it again only when it changes.
    pub disruption_config: Option<Arc<str>>,
    /// CapacityQuotas (cluster-scoped), each valid or carrying its problem, with the status each was read
    /// with (what the status written back is compared with); a snapshot's, or a live source's watch.
    pub quotas: Arc<[CapacityQuota]>,
    /// When this view was true: the clock ages are measured against.
    pub now: Option<SystemTime>,
}

impl ClusterView {
    /// The pods' names, packed, in the order of `pods`.
    pub fn pod_keys(&self) -> &PodNames {
        self.keys.get_or_init(|| PodNames::of(&self.pods))
    }
}

/// A custom resource's status to write back (a CapacityBuffer's, a ProvisioningRequest's), in the API version
/// the object was read as.
#[derive(Debug)]
pub struct StatusWrite<'a, S> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub version: &'static str,
    pub status: &'a S,
}

pub type BufferStatus<'a> = StatusWrite<'a, api::BufferStatus>;
pub type RequestStatus<'a> = StatusWrite<'a, provreq::RequestStatus>;
/// A CapacityQuota's status: cluster-scoped, so its namespace is empty.
pub type QuotaStatusWrite<'a> = StatusWrite<'a, crate::k8s::CapacityQuotaStatus>;

// By hand: the derives would ask `S: Copy`, where only references are copied.
impl<S> Clone for StatusWrite<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for StatusWrite<'_, S> {}

impl<S> StatusWrite<'_, S> {
    /// `namespace/name`, or `name` for a cluster-scoped object.
    pub fn key(&self) -> String {
        match self.namespace {
            "" => self.name.to_string(),
            namespace => format!("{namespace}/{}", self.name),
        }
    }
}

/// A custom resource kind whose status the loop writes back through a [`ClusterSource`].
#[async_trait::async_trait]
pub trait WritesStatus: CustomResource {
    async fn write(
        cluster: &dyn ClusterSource,
        write: StatusWrite<'_, Self::Status>,
    ) -> Result<(), ClusterError>;
}

#[async_trait::async_trait]
impl WritesStatus for CapacityBuffer {
    async fn write(cluster: &dyn ClusterSource, w: BufferStatus<'_>) -> Result<(), ClusterError> {
        cluster.write_buffer_status(w).await
    }
}

#[async_trait::async_trait]
impl WritesStatus for ProvisioningRequest {
    async fn write(cluster: &dyn ClusterSource, w: RequestStatus<'_>) -> Result<(), ClusterError> {
        cluster.write_request_status(w).await
    }
}

#[async_trait::async_trait]
impl WritesStatus for CapacityQuotaObject {
    async fn write(
        cluster: &dyn ClusterSource,
        w: QuotaStatusWrite<'_>,
    ) -> Result<(), ClusterError> {
        cluster.write_quota_status(w).await
    }
}

/// A custom resource's status that could not be written back.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {key}: status not written: {source}")]
pub struct StatusNotWritten {
    pub kind: &'static str,
    /// `namespace/name`, or `name` for a cluster-scoped object.
    pub key: String,
    pub source: ClusterError,
}

/// The one status writer: each of `writes` (the statuses of kind `R` that changed) written on `cluster`, in
/// order. Returns the ones not written.
pub async fn write_statuses<'a, R: WritesStatus>(
    cluster: &dyn ClusterSource,
    writes: impl IntoIterator<Item = StatusWrite<'a, R::Status>>,
) -> Vec<StatusNotWritten>
where
    R::Status: 'a,
{
    let mut errors = Vec::new();
    for write in writes {
        if let Err(source) = R::write(cluster, write).await {
            let (kind, key) = (R::KIND, write.key());
            errors.push(StatusNotWritten { kind, key, source });
        }
    }
    errors
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("reading snapshot {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("snapshot {path}: {source}")]
    Snapshot {
        path: PathBuf,
        source: SnapshotError,
    },
    #[error("simulated cluster: {0}")]
    Sim(String),
    #[error("kube API: {0}")]
    Kube(String),
    #[error("{0} cannot be changed: it is a snapshot")]
    ReadOnly(String),
    #[error("node {0} is not in the cluster")]
    NoNode(String),
    #[error("pod {0} is not in the cluster")]
    NoPod(String),
    /// The Eviction API's 429: a PodDisruptionBudget does not allow it now. Worth retrying.
    #[error("eviction of {pod} refused: {why}")]
    EvictionRefused { pod: String, why: String },
}

/// A cluster the companion reads, and changes when it removes nodes. Sources that cannot change the
/// cluster (a snapshot) keep the defaults, which refuse.
#[async_trait::async_trait]
pub trait ClusterSource: Send + Sync {
    /// The cluster as it is now.
    async fn view(&self) -> Result<Arc<ClusterView>, ClusterError>;

    /// Whether [`ClusterSource::taint`] and [`ClusterSource::evict`] can succeed at all.
    fn can_act(&self) -> bool {
        false
    }

    /// Puts `taint` on node `node`, replacing a taint with the same key.
    async fn taint(&self, node: &str, taint: &Taint) -> Result<(), ClusterError> {
        let _ = taint;
        Err(ClusterError::ReadOnly(format!("node {node}")))
    }

    /// Removes the taints with `key` from node `node` (nothing to do if it has none).
    async fn untaint(&self, node: &str, key: &str) -> Result<(), ClusterError> {
        let _ = key;
        Err(ClusterError::ReadOnly(format!("node {node}")))
    }

    /// Cordons node `node` (`spec.unschedulable`) and marks it as ekscale's, with why (the
    /// `ekscale.io/cordoned` annotation), so that only ekscale's cordons are ever undone by it.
    async fn cordon(&self, node: &str, why: &str) -> Result<(), ClusterError> {
        let _ = why;
        Err(ClusterError::ReadOnly(format!("node {node}")))
    }

    /// Uncordons node `node` and takes ekscale's mark off; called only on a node the view shows marked.
    async fn uncordon(&self, node: &str) -> Result<(), ClusterError> {
        Err(ClusterError::ReadOnly(format!("node {node}")))
    }

    /// Writes a CapacityBuffer's status subresource, in the version it was read as.
    async fn write_buffer_status(&self, buffer: BufferStatus<'_>) -> Result<(), ClusterError> {
        Err(ClusterError::ReadOnly(format!(
            "CapacityBuffer {}",
            buffer.key()
        )))
    }

    /// Writes a ProvisioningRequest's status subresource, in the version it was read as.
    async fn write_request_status(&self, request: RequestStatus<'_>) -> Result<(), ClusterError> {
        Err(ClusterError::ReadOnly(format!(
            "ProvisioningRequest {}",
            request.key()
        )))
    }

    /// Writes a CapacityQuota's status subresource, in the version it was read as.
    async fn write_quota_status(&self, quota: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        Err(ClusterError::ReadOnly(format!(
            "CapacityQuota {}",
            quota.key()
        )))
    }

    /// The pods bound to node `node` as the cluster holds them now, read past the view's cache; `None` when
    /// the source has nothing fresher than its view (a snapshot, the simulated cluster). Asked right before
    /// a node is deleted: a watch event not yet delivered must not make a node look empty.
    async fn pods_on(&self, node: &str) -> Result<Option<Vec<Pod>>, ClusterError> {
        let _ = node;
        Ok(None)
    }

    /// Evicts pod `namespace/name` through the Eviction API (which enforces PodDisruptionBudgets), giving
    /// it `grace` to stop.
    async fn evict(
        &self,
        namespace: &str,
        name: &str,
        grace: Duration,
    ) -> Result<(), ClusterError> {
        let _ = grace;
        Err(ClusterError::ReadOnly(format!("pod {namespace}/{name}")))
    }

    /// Deletes pod `namespace/name` past its PodDisruptionBudgets, giving it `grace` to stop: what a drain
    /// for expiry or drift does once its node's `terminationGracePeriod` has passed (Karpenter's rule).
    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        grace: Duration,
    ) -> Result<(), ClusterError> {
        let _ = grace;
        Err(ClusterError::ReadOnly(format!("pod {namespace}/{name}")))
    }
}

/// A `kubectl get nodes,pods,pdb,daemonsets -A -o json` file, read once: the cluster never changes.
pub struct Snapshot {
    view: Arc<ClusterView>,
}

impl Snapshot {
    pub fn read(path: &Path) -> Result<Snapshot, ClusterError> {
        let text = read_snapshot_text(path).map_err(|source| ClusterError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let parsed = parse_snapshot(&text).map_err(|source| ClusterError::Snapshot {
            path: path.to_path_buf(),
            source,
        })?;
        // A snapshot is as old as the newest timestamp in it (a heartbeat, a condition, a taint): ages are
        // measured from then, not from today.
        let requests = RequestObjects {
            requests: parsed.requests,
            templates: parsed.buffers.templates.clone(),
        };
        for skipped in &parsed.skipped {
            tracing::warn!(error = %skipped, "left out of the snapshot");
        }
        // Extended into a vector of their own size: collected, they would reuse the parsed nodes' buffer (Rust
        // collects in place), every node's size kept as spare room for as long as the view lives.
        let mut nodes = Vec::with_capacity(parsed.nodes.len());
        nodes.extend(parsed.nodes.into_iter().map(Arc::new));
        Ok(Snapshot {
            view: Arc::new(ClusterView {
                requests,
                nodes,
                keys: PodNames::of(&parsed.pods).into(),
                pods: parsed.pods,
                pdbs: parsed.pdbs,
                daemonsets: parsed.daemonsets,
                buffers: parsed.buffers,
                dra: Arc::new(parsed.dra),
                now: parsed.newest,
                disruption_config: parsed.disruption_config.map(Arc::from),
                quotas: parsed.quotas.into(),
            }),
        })
    }
}

#[async_trait::async_trait]
impl ClusterSource for Snapshot {
    async fn view(&self) -> Result<Arc<ClusterView>, ClusterError> {
        Ok(self.view.clone())
    }
}
