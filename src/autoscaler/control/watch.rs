//! What the live cluster's sources share: the field manager they write as, and the loop that keeps a
//! reflector's watch running. The PodDisruptionBudgets' and DaemonSets' watches (`kube.rs`) and the
//! CapacityBuffers' watches (`kube_buffers.rs`) use them; nodes and pods have their own (`mirror.rs`).

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};

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
