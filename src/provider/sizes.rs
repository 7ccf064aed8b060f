//! What both services that change a node group's size share: one change at a time per group, the bound an
//! increase is checked against, and the status each cloud error becomes.

use crate::cloud::{CloudError, NodeGroupBackend, NodeGroupSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tonic::Status;

/// One lock per node group: size changes of a group are serialized, across services.
#[derive(Default)]
pub struct GroupLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl GroupLocks {
    pub async fn lock(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            locks.entry(id.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }
}

/// The node group a request names: InvalidArgument for no id, NotFound for an unknown one.
pub fn group(backend: &dyn NodeGroupBackend, id: &str) -> Result<Arc<NodeGroupSpec>, Status> {
    if id.is_empty() {
        return Err(Status::invalid_argument("node group id is empty"));
    }
    backend
        .node_group(id)
        .ok_or_else(|| Status::not_found(format!("node group {id:?} not found")))
}

/// How an increase is asked of the cloud: as IncreaseSize asks it, or all or nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Increase {
    Plain,
    Atomic,
}

/// An increase of group `id` by `delta`: checked, made one at a time with the group's other size changes,
/// and logged.
pub async fn increase(
    backend: &dyn NodeGroupBackend,
    locks: &GroupLocks,
    id: &str,
    delta: i32,
    how: Increase,
) -> Result<(), Status> {
    let group = group(backend, id)?;
    let _serialized = locks.lock(id).await;
    let target = backend.target_size(id).map_err(status)?;
    let desired = increased_target(&group, target, delta)?;
    match how {
        Increase::Plain => backend.set_target_size(id, desired).await,
        Increase::Atomic => backend.atomic_increase(id, desired).await,
    }
    .map_err(status)?;
    tracing::info!(
        node_group = id,
        delta,
        from = target,
        to = desired,
        all_or_nothing = how == Increase::Atomic,
        "increased target size"
    );
    Ok(())
}

/// The target an increase of `delta` over `target` asks for, refused as cluster-autoscaler's providers
/// refuse it: a delta that is not positive, or a target above the group's max size.
fn increased_target(group: &NodeGroupSpec, target: i32, delta: i32) -> Result<i32, Status> {
    if delta <= 0 {
        return Err(Status::invalid_argument(format!(
            "size increase must be positive, got delta {delta}"
        )));
    }
    target
        .checked_add(delta)
        .filter(|&d| d <= group.max_size)
        .ok_or_else(|| {
            Status::failed_precondition(format!(
                "size increase too large - desired:{} max:{}",
                i64::from(target) + i64::from(delta),
                group.max_size
            ))
        })
}

/// The gRPC status of a cloud error.
pub fn status(error: CloudError) -> Status {
    match error {
        CloudError::NodeGroupNotFound(_) => Status::not_found(error.to_string()),
        CloudError::FailedPrecondition(_) => Status::failed_precondition(error.to_string()),
        CloudError::Exhausted(_) => Status::resource_exhausted(error.to_string()),
        CloudError::NotFound(_) => Status::not_found(error.to_string()),
        CloudError::PermissionDenied(_) => Status::permission_denied(error.to_string()),
        CloudError::Unavailable(_) => Status::unavailable(error.to_string()),
        CloudError::Internal(_) => Status::internal(error.to_string()),
    }
}
