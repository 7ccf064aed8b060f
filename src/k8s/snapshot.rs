//! Cluster snapshots: what `kubectl get nodes,pods,pdb -A -o json` prints (a `List`), in JSON or YAML.

use crate::k8s::objects::{self, ObjectError};
use crate::model::pdb::Pdb;
use crate::model::{Node, Pod};
use k8s_openapi::api::core::v1 as api;
use serde::Deserialize;

#[derive(Debug, Default)]
pub struct Snapshot {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not a kubectl List in JSON or YAML: {0}")]
    Syntax(String),
    #[error("item {index} ({kind}): {reason}")]
    Item {
        index: usize,
        kind: String,
        reason: String,
    },
    #[error(transparent)]
    Object(#[from] ObjectError),
}

#[derive(Deserialize)]
struct List<T> {
    items: Vec<T>,
}

/// Reads a snapshot. JSON goes through serde_json (much faster on large clusters), anything else is YAML.
pub fn parse(text: &str) -> Result<Snapshot, SnapshotError> {
    let items: Vec<serde_json::Value> = if text.trim_start().starts_with('{') {
        serde_json::from_str::<List<_>>(text)
            .map_err(|e| SnapshotError::Syntax(e.to_string()))?
            .items
    } else {
        serde_norway::from_str::<List<_>>(text)
            .map_err(|e| SnapshotError::Syntax(e.to_string()))?
            .items
    };
    let mut snapshot = Snapshot::default();
    for (index, item) in items.into_iter().enumerate() {
        let kind = item
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("")
            .to_string();
        let fail = |reason: String| SnapshotError::Item {
            index,
            kind: kind.clone(),
            reason,
        };
        match kind.as_str() {
            "Node" => {
                let node: api::Node =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.nodes.push(objects::node_from_api(&node)?);
            }
            "Pod" => {
                let pod: api::Pod =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.pods.push(objects::pod_from_api(&pod, true)?);
            }
            "PodDisruptionBudget" => {
                let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.pdbs.push(objects::pdb_from_api(&pdb)?);
            }
            _ => {
                return Err(fail(
                    "only Node, Pod and PodDisruptionBudget are read (kubectl get nodes,pods,pdb -A -o json)"
                        .into(),
                ));
            }
        }
    }
    Ok(snapshot)
}
