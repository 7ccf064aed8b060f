//! Cluster snapshots: what `kubectl get nodes,pods,pdb -A -o json` prints (a `List`), in JSON or YAML.

use crate::k8s::objects::{self, ObjectError};
use crate::model::pdb::Pdb;
use crate::model::{Node, Pod};
use k8s_openapi::api::core::v1 as api;

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

/// Reads a snapshot. Items are converted one at a time as the parser reaches them, so a large cluster's
/// JSON never exists whole as a tree in memory. JSON goes through serde_json (much faster on large
/// clusters), anything else is YAML.
pub fn parse(text: &str) -> Result<Snapshot, SnapshotError> {
    let mut reader = Reader::default();
    let parsed = if text.trim_start().starts_with('{') {
        let mut json = serde_json::Deserializer::from_str(text);
        serde::Deserializer::deserialize_map(&mut json, ListVisitor(&mut reader))
            .map_err(|e| e.to_string())
    } else {
        serde::Deserializer::deserialize_map(
            serde_norway::Deserializer::from_str(text),
            ListVisitor(&mut reader),
        )
        .map_err(|e| e.to_string())
    };
    if let Some(error) = reader.error {
        return Err(error);
    }
    parsed.map_err(SnapshotError::Syntax)?;
    if !reader.saw_items {
        return Err(SnapshotError::Syntax(
            "no `items`: expected a kubectl List".into(),
        ));
    }
    Ok(reader.snapshot)
}

#[derive(Default)]
struct Reader {
    snapshot: Snapshot,
    index: usize,
    saw_items: bool,
    /// The first item that could not be read; parsing stops there.
    error: Option<SnapshotError>,
}

impl Reader {
    fn read(&mut self, item: serde_json::Value) -> Result<(), SnapshotError> {
        let index = self.index;
        self.index += 1;
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
        let snapshot = &mut self.snapshot;
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
        Ok(())
    }
}

/// The List object: `items` is read item by item, everything else skipped.
struct ListVisitor<'a>(&'a mut Reader);

impl<'de> serde::de::Visitor<'de> for ListVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a kubectl List")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                self.0.saw_items = true;
                map.next_value_seed(ItemsSeed(&mut *self.0))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct ItemsSeed<'a>(&'a mut Reader);

impl<'de> serde::de::DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ItemsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<serde_json::Value>()? {
            if let Err(error) = self.0.read(item) {
                self.0.error = Some(error);
                return Err(serde::de::Error::custom("stopped at an unreadable item"));
            }
        }
        Ok(())
    }
}
