//! Cluster snapshots: what `kubectl get nodes,pods,pdb,daemonsets -A -o json` prints (a `List`), in JSON or
//! YAML, with `capacitybuffers,podtemplates,deployments` (and statefulsets, replicasets, jobs) when buffers
//! matter, and `deviceclasses,resourceclaims,resourceclaimtemplates,resourceslices` when pods claim devices
//! (Dynamic Resource Allocation); also a typed list (`NodeList`, `PodList`, ..., whose items may leave out
//! their `kind`), a single object, and YAML with several documents, each of these.

use crate::k8s::capacity_buffer::{self, BufferObjects, Scalable, Template};
use crate::k8s::capacity_quota;
use crate::k8s::dra::{DRA_KINDS, read_dra_object};
use crate::k8s::objects::{self, ObjectError};
use crate::k8s::provisioning_request;
use crate::k8s::snapshot_pod::SnapshotPod;
use crate::model::{Alike, CapacityQuota, DraObjects, Node, Pdb, Pod};
use k8s_openapi::api::core::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use std::sync::Arc;
use std::time::SystemTime;

#[derive(Debug, Default)]
pub struct SnapshotObjects {
    pub nodes: Vec<Node>,
    /// Held in `Arc`s as the loop's view holds them, made where each pod is read (on the converter that
    /// reads it, not one by one at the end).
    pub pods: Vec<Arc<Pod>>,
    pub pdbs: Vec<Pdb>,
    /// One pod per DaemonSet object, as its template would run on a new node.
    pub daemonsets: Vec<Pod>,
    /// CapacityBuffers and what they may name: PodTemplates, Deployments, StatefulSets, ReplicaSets, Jobs.
    pub buffers: BufferObjects,
    /// ProvisioningRequests (the PodTemplates they name are with the buffers' objects).
    pub requests: Vec<provisioning_request::VersionedRequest>,
    /// CapacityQuotas, each valid or carrying its problem (an invalid one is reported, not enforced).
    pub quotas: Vec<CapacityQuota>,
    /// DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices.
    pub dra: DraObjects,
    /// The objects left out, each with why: a DRA object the API server would refuse is read past (the
    /// cluster's allocator would not see it either), where any other unreadable item stops the reading.
    pub skipped: Vec<ObjectError>,
    /// The disruption configuration: `config.yaml` of the ConfigMap `ekscale-disruption` (other
    /// ConfigMaps are read past), in the text it was written in.
    pub disruption_config: Option<String>,
    /// The newest timestamp anywhere in it (creations, conditions, heartbeats, taints): when it was taken.
    pub newest: Option<SystemTime>,
    /// The constraints and namespaces its pods share so far ([`Alike`]). Parts read apart share within
    /// themselves; `parse` joins them.
    alike: Alike,
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

/// The kinds read, as items or as single objects.
const KINDS: [&str; 17] = [
    "Node",
    "Pod",
    "PodDisruptionBudget",
    "DaemonSet",
    "CapacityBuffer",
    "ProvisioningRequest",
    "CapacityQuota",
    "PodTemplate",
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "Job",
    "ConfigMap",
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
];

/// What a file is expected to be, for errors.
const READ: &str = "Node, Pod, PodDisruptionBudget, DaemonSet, CapacityBuffer, ProvisioningRequest, \
                    CapacityQuota, PodTemplate, Deployment, StatefulSet, ReplicaSet, Job, ConfigMap, DeviceClass, \
                    ResourceClaim, ResourceClaimTemplate and ResourceSlice are read (kubectl get \
                    nodes,pods,pdb,daemonsets,capacitybuffers,provisioningrequests,capacityquotas,podtemplates,\
                    deployments,configmaps,deviceclasses,resourceclaims,resourceclaimtemplates,\
                    resourceslices -A -o json)";

/// The ConfigMap that holds the disruption configuration, and its key.
pub const DISRUPTION_CONFIG_MAP: &str = "ekscale-disruption";
pub const DISRUPTION_CONFIG_KEY: &str = "config.yaml";

/// A snapshot file's text, read on every core: one core copying a 400 MB file from the page cache (and
/// faulting in the buffer) was a tenth of `simulate` on a 10,000-node cluster, the other core idle. What is
/// not a plain file (a pipe, `<(kubectl get ...)`) is read as a stream.
pub fn read_snapshot_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    let Ok(len) = usize::try_from(metadata.len()) else {
        return std::fs::read_to_string(path);
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !metadata.is_file() || cores == 1 || len < 1 << 24 {
        let mut text = String::new();
        (&file).read_to_string(&mut text)?;
        return Ok(text);
    }
    let mut bytes = vec![0; len];
    let part = len.div_ceil(cores);
    std::thread::scope(|scope| {
        let reads: Vec<_> = (bytes.chunks_mut(part).enumerate())
            .map(|(i, chunk)| {
                scope.spawn(move || {
                    let mut file = std::fs::File::open(path)?;
                    file.seek(SeekFrom::Start((i * part) as u64))?;
                    file.read_exact(chunk)
                })
            })
            .collect();
        reads
            .into_iter()
            .try_for_each(|read| read.join().expect("reading a file does not panic"))
    })?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Reads a snapshot. Items are converted one at a time as the parser reaches them, so a large cluster's
/// JSON never exists whole as a tree in memory. JSON goes through serde_json (much faster on large
/// clusters), anything else is YAML, one document or several.
pub fn parse_snapshot(text: &str) -> Result<SnapshotObjects, SnapshotError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_with_converters(text, cores)
}

/// [`parse_snapshot`] with `converters` threads converting a JSON file's items (tests force several on a
/// machine with one core).
fn parse_with_converters(text: &str, converters: usize) -> Result<SnapshotObjects, SnapshotError> {
    let mut reader = Reader::default();
    // Counted only for the message that needs it: a pass over a 400 MB file is not free.
    let lines = || text.lines().count();
    if text.trim_start().starts_with('{') {
        let mut json = serde_json::Deserializer::from_str(text);
        // The parser finds each item's text and hands batches of them to a converter on every core, which
        // convert while it reads on (reading alone was most of `simulate` on a large cluster).
        let (batches, queue) = std::sync::mpsc::channel::<Batch<'_>>();
        let queue = std::sync::Mutex::new(queue);
        let document = std::thread::scope(|scope| {
            let converters: Vec<_> = (0..converters.max(1))
                .map(|_| scope.spawn(|| convert_batches(&queue)))
                .collect();
            reader.batches = Some(batches);
            let document = serde::Deserializer::deserialize_map(&mut json, Document(&mut reader));
            reader.send_batch();
            reader.batches = None;
            for converter in converters {
                let done = converter.join().expect("converting items does not panic");
                reader.converted.extend(done);
            }
            document
        });
        reader.finish_document(document, lines, None)?;
        json.end()
            .map_err(|e| SnapshotError::Syntax(e.to_string()))?;
    } else {
        let mut documents = 0;
        for (i, yaml) in serde_norway::Deserializer::from_str(text).enumerate() {
            let document = serde::Deserializer::deserialize_map(yaml, Document(&mut reader));
            reader.finish_document(document, lines, Some(i))?;
            documents += 1;
        }
        if documents == 0 {
            return Err(SnapshotError::Syntax("the file is empty".into()));
        }
    }
    // Equal constraints share one value, so that the loop compares them by pointer; each part already shares
    // within itself.
    Alike::default().join(&mut reader.snapshot.pods);
    Ok(reader.snapshot)
}

#[derive(Default)]
struct Reader<'t> {
    snapshot: SnapshotObjects,
    /// The file is JSON: each item's text is handed, in batches, to converters that read it straight into
    /// its type (no tree of it built), and their work comes back, by batch, in `converted`.
    batches: Option<std::sync::mpsc::Sender<Batch<'t>>>,
    batch: Vec<(usize, &'t str)>,
    sent: usize,
    converted: Vec<Converted>,
    index: usize,
    /// The document being read: its items, and those without a `kind` (a typed list's), kept until the
    /// list's own kind (printed after its items) says what they are.
    saw_items: bool,
    kindless: Vec<(usize, serde_json::Value)>,
    /// Everything of the document but its items: a List's kind, or a single object whole.
    rest: serde_json::Map<String, serde_json::Value>,
    /// The first item that could not be read; parsing stops there.
    error: Option<SnapshotError>,
}

impl Reader<'_> {
    /// Ends one document: checks its top-level `kind` and reads what waited on it.
    fn finish_document<E: std::fmt::Display>(
        &mut self,
        parsed: Result<(), E>,
        lines: impl Fn() -> usize,
        document: Option<usize>,
    ) -> Result<(), SnapshotError> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let at = |what: String| match document {
            Some(d) if d > 0 => format!("document {}: {what}", d + 1),
            _ => what,
        };
        parsed.map_err(|e| SnapshotError::Syntax(at(e.to_string())))?;
        self.join_converted()?;
        let rest = std::mem::take(&mut self.rest);
        let kindless = std::mem::take(&mut self.kindless);
        let saw_items = std::mem::replace(&mut self.saw_items, false);
        let kind = rest
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("")
            .to_string();
        let item_kind = kind.strip_suffix("List").filter(|k| KINDS.contains(k));
        match (saw_items, kind.as_str()) {
            (true, "") => Err(SnapshotError::Syntax(at(format!(
                "`items` but no top-level `kind`: kubectl prints `kind: List` after the items, so the file \
                 looks truncated (it ends at line {})",
                lines()
            )))),
            (true, "List") => match kindless.first() {
                Some((index, _)) => Err(SnapshotError::Item {
                    index: *index,
                    kind: String::new(),
                    reason: "no `kind` (only the items of a typed list such as NodeList may leave it out)"
                        .into(),
                }),
                None => Ok(()),
            },
            (true, _) if item_kind.is_some() => {
                let item_kind = item_kind.expect("checked");
                for (index, item) in kindless {
                    (self.snapshot).convert(index, item_kind, Item::Tree(item))?;
                }
                Ok(())
            }
            (true, other) => Err(SnapshotError::Syntax(at(format!(
                "top-level kind {other:?} with `items`: expected a List (or a NodeList, PodList, \
                 PodDisruptionBudgetList, DaemonSetList)"
            )))),
            (false, k) if KINDS.contains(&k) => {
                let index = self.next_index();
                let object = serde_json::Value::Object(rest);
                (self.snapshot).convert(index, k, Item::Tree(object))
            }
            (false, "") => Err(SnapshotError::Syntax(at(format!(
                "no `kind` and no `items`: expected a kubectl List or a single object ({READ})"
            )))),
            (false, k) if k == "List" || item_kind.is_some() => Err(SnapshotError::Syntax(at(
                format!("a {k} without `items`"),
            ))),
            (false, other) => Err(SnapshotError::Syntax(at(format!(
                "kind {other:?}: only {READ}"
            )))),
        }
    }

    fn next_index(&mut self) -> usize {
        self.index += 1;
        self.index - 1
    }

    /// A YAML item as the parser reaches it: read now, or kept until its list says its kind.
    fn item(&mut self, item: serde_json::Value) -> Result<(), SnapshotError> {
        let index = self.next_index();
        read_item(
            &mut self.snapshot,
            &mut self.kindless,
            index,
            Item::Tree(item),
        )
    }

    /// Joins what the converters made of the document's JSON items, in the order of the items (the first
    /// unreadable item stops it).
    fn join_converted(&mut self) -> Result<(), SnapshotError> {
        let mut converted = std::mem::take(&mut self.converted);
        converted.sort_unstable_by_key(|c| c.batch);
        for c in converted {
            self.snapshot.append(c.part);
            self.kindless.extend(c.kindless);
            c.done?;
        }
        Ok(())
    }

    /// Hands the items gathered so far to the converters.
    fn send_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.batch);
        let batch = Batch {
            number: self.sent,
            items,
        };
        self.sent += 1;
        if let Some(batches) = &self.batches {
            // The converters live until the sender is dropped, so the send cannot fail.
            let _ = batches.send(batch);
        }
    }
}

/// Items of a JSON document, numbered in the order they were read, with their place in the file.
struct Batch<'t> {
    number: usize,
    items: Vec<(usize, &'t str)>,
}

/// What a converter made of one batch: its objects, the items without a kind, and the first error.
struct Converted {
    batch: usize,
    part: SnapshotObjects,
    kindless: Vec<(usize, serde_json::Value)>,
    done: Result<(), SnapshotError>,
}

/// A converter: takes batches from `queue` until the parser is done, converting each.
fn convert_batches(
    queue: &std::sync::Mutex<std::sync::mpsc::Receiver<Batch<'_>>>,
) -> Vec<Converted> {
    let mut converted = Vec::new();
    loop {
        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(batch) = next else { return converted };
        let mut part = SnapshotObjects::default();
        let mut kindless = Vec::new();
        let done = (batch.items.iter()).try_for_each(|&(index, text)| {
            read_item(&mut part, &mut kindless, index, Item::Raw(text))
        });
        converted.push(Converted {
            batch: batch.number,
            part,
            kindless,
            done,
        });
    }
}

/// One item: converted into `into` when it names its kind, else kept in `kindless` until its list says it.
fn read_item(
    into: &mut SnapshotObjects,
    kindless: &mut Vec<(usize, serde_json::Value)>,
    index: usize,
    item: Item<'_>,
) -> Result<(), SnapshotError> {
    let unreadable = |e: serde_json::Error| SnapshotError::Item {
        index,
        kind: String::new(),
        reason: e.to_string(),
    };
    let kind = match &item {
        Item::Raw(text) => match leading_kind(text) {
            Some(kind) => Some(kind.to_string()),
            None => {
                /// An item's `kind` and nothing else (the rest is skipped, not built).
                #[derive(serde::Deserialize)]
                struct Kind<'a> {
                    #[serde(borrow)]
                    kind: Option<std::borrow::Cow<'a, str>>,
                }
                let kind: Kind = serde_json::from_str(text).map_err(unreadable)?;
                kind.kind.map(|k| k.into_owned())
            }
        },
        Item::Tree(tree) => tree
            .get("kind")
            .and_then(|k| k.as_str())
            .map(str::to_string),
    };
    match kind {
        Some(kind) => into.convert(index, &kind, item),
        None => {
            kindless.push((index, item.tree().map_err(unreadable)?));
            Ok(())
        }
    }
}

/// The `kind` of a JSON object whose first or second key it is, as kubectl prints every object (its keys
/// sorted: `apiVersion`, `kind`, ...): read from the first bytes instead of skipping through the whole object.
/// `None` when the object does not start so (then the object is asked properly).
fn leading_kind(text: &str) -> Option<&str> {
    let mut rest = text.trim_start().strip_prefix('{')?;
    for _ in 0..2 {
        let (key, after) = plain_string(rest.trim_start())?;
        let (value, after) = plain_string(after.trim_start().strip_prefix(':')?.trim_start())?;
        if key == "kind" {
            return Some(value);
        }
        rest = after.trim_start().strip_prefix(',')?;
    }
    None
}

/// A JSON string without escapes at the start of `text`, and what follows it.
fn plain_string(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let end = body.find(['"', '\\'])?;
    body[end..]
        .starts_with('"')
        .then(|| (&body[..end], &body[end + 1..]))
}

impl SnapshotObjects {
    /// `part`'s objects after this one's.
    fn append(&mut self, part: SnapshotObjects) {
        self.nodes.extend(part.nodes);
        self.pods.extend(part.pods);
        self.pdbs.extend(part.pdbs);
        self.daemonsets.extend(part.daemonsets);
        self.buffers.buffers.extend(part.buffers.buffers);
        self.buffers.templates.extend(part.buffers.templates);
        self.buffers.scalables.extend(part.buffers.scalables);
        self.requests.extend(part.requests);
        self.quotas.extend(part.quotas);
        self.dra.classes.extend(part.dra.classes);
        self.dra.claims.extend(part.dra.claims);
        self.dra.templates.extend(part.dra.templates);
        self.dra.slices.extend(part.dra.slices);
        self.skipped.extend(part.skipped);
        self.disruption_config = self.disruption_config.take().or(part.disruption_config);
        self.newest = self.newest.max(part.newest);
    }

    fn convert(&mut self, index: usize, kind: &str, item: Item<'_>) -> Result<(), SnapshotError> {
        let fail = |reason: String| SnapshotError::Item {
            index,
            kind: kind.to_string(),
            reason,
        };
        match kind {
            "Node" => {
                let node: api::Node = item.read().map_err(|e| fail(e.to_string()))?;
                self.saw_node(&node);
                self.nodes.push(objects::node_from_api(&node)?);
            }
            "Pod" => {
                let pod: SnapshotPod = item.read().map_err(|e| fail(e.to_string()))?;
                for time in pod.times() {
                    self.saw(Some(time));
                }
                let pod = pod.into_api().map_err(|e| fail(e.to_string()))?;
                let mut pod = objects::pod_from_api(&pod, objects::PodJson::KeepIfPending)?;
                self.alike.share(&mut pod);
                self.pods.push(Arc::new(pod));
            }
            "PodDisruptionBudget" => {
                let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget =
                    item.read().map_err(|e| fail(e.to_string()))?;
                self.saw(pdb.metadata.creation_timestamp.as_ref());
                self.pdbs.push(objects::pdb_from_api(&pdb)?);
            }
            "DaemonSet" => {
                let ds: k8s_openapi::api::apps::v1::DaemonSet =
                    item.read().map_err(|e| fail(e.to_string()))?;
                self.saw(ds.metadata.creation_timestamp.as_ref());
                self.daemonsets.push(objects::daemonset_pod(&ds)?);
            }
            "CapacityBuffer" => {
                let tree = item.tree().map_err(|e| fail(e.to_string()))?;
                let read = capacity_buffer::VersionedBuffer::from_value(tree)
                    .map_err(|e| fail(e.to_string()))?;
                self.buffers.buffers.push(read);
            }
            "ProvisioningRequest" => {
                let tree = item.tree().map_err(|e| fail(e.to_string()))?;
                let read = provisioning_request::VersionedRequest::from_value(tree)
                    .map_err(|e| fail(e.to_string()))?;
                self.requests.push(read);
            }
            "CapacityQuota" => {
                let tree = item.tree().map_err(|e| fail(e.to_string()))?;
                self.quotas
                    .push(capacity_quota::quota_from_value(tree).map_err(|e| fail(e.to_string()))?);
            }
            "PodTemplate" => {
                let template: api::PodTemplate = item.read().map_err(|e| fail(e.to_string()))?;
                if template.metadata.name.as_deref().is_none_or(str::is_empty) {
                    return Err(fail("no metadata.name".into()));
                }
                self.buffers.templates.push(Template::from_api(&template));
            }
            "Deployment" | "StatefulSet" | "ReplicaSet" | "Job" => {
                let scalable = scalable(kind, item).map_err(|e| fail(e.to_string()))?;
                if scalable.name.is_empty() {
                    return Err(fail("no metadata.name".into()));
                }
                self.buffers.scalables.push(scalable);
            }
            "ConfigMap" => {
                let map: api::ConfigMap = item.read().map_err(|e| fail(e.to_string()))?;
                if map.metadata.name.as_deref() == Some(DISRUPTION_CONFIG_MAP) {
                    let text = map.data.and_then(|mut d| d.remove(DISRUPTION_CONFIG_KEY));
                    let text = text.ok_or_else(|| {
                        fail(format!(
                            "{DISRUPTION_CONFIG_MAP} has no {DISRUPTION_CONFIG_KEY}"
                        ))
                    })?;
                    self.disruption_config = Some(text);
                }
            }
            _ if DRA_KINDS.iter().any(|(k, _)| *k == kind) => {
                let tree = item.tree().map_err(|e| fail(e.to_string()))?;
                if let Err(e) = read_dra_object(&mut self.dra, kind, tree) {
                    self.skipped.push(e);
                }
            }
            _ => return Err(fail(format!("only {READ}"))),
        }
        Ok(())
    }

    fn saw(&mut self, time: Option<&meta::Time>) {
        // (Scalable objects and buffers do not date a snapshot: their times are when someone wrote them.)
        if let Some(t) = time.map(objects::time) {
            let newest = self.newest.get_or_insert(t);
            *newest = (*newest).max(t);
        }
    }

    /// A node's times: created, its conditions' heartbeats and transitions, its taints'.
    fn saw_node(&mut self, node: &api::Node) {
        self.saw(node.metadata.creation_timestamp.as_ref());
        for c in node
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
        {
            self.saw(c.last_heartbeat_time.as_ref());
            self.saw(c.last_transition_time.as_ref());
        }
        for t in node.spec.iter().flat_map(|s| s.taints.iter().flatten()) {
            self.saw(t.time_added.as_ref());
        }
    }
}

/// A Deployment, StatefulSet, ReplicaSet or Job: what a CapacityBuffer's scalableRef may name.
fn scalable(kind: &str, item: Item<'_>) -> Result<Scalable, serde_json::Error> {
    use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch};
    Ok(match kind {
        "Deployment" => Scalable::deployment(&item.read::<apps::Deployment>()?),
        "StatefulSet" => Scalable::stateful_set(&item.read::<apps::StatefulSet>()?),
        "ReplicaSet" => Scalable::replica_set(&item.read::<apps::ReplicaSet>()?),
        _ => Scalable::job(&item.read::<batch::Job>()?),
    })
}

/// Items handed to a converter at once: enough that taking a batch costs nothing beside converting it.
const BATCH: usize = 512;

/// One item of a list: its JSON text as the file has it, or (YAML, or a single object) its tree.
enum Item<'a> {
    Raw(&'a str),
    Tree(serde_json::Value),
}

impl Item<'_> {
    /// The item as `T`: from its text straight into the type where there is text.
    fn read<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Item::Raw(text) => serde_json::from_str(text),
            Item::Tree(tree) => serde_json::from_value(tree),
        }
    }

    fn tree(self) -> Result<serde_json::Value, serde_json::Error> {
        self.read()
    }
}

/// One document: `items` is read item by item; everything else is kept (a List's are a few small fields).
struct Document<'a, 't>(&'a mut Reader<'t>);

impl<'t> serde::de::Visitor<'t> for Document<'_, 't> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a kubectl List or a Kubernetes object")
    }

    fn visit_map<A: serde::de::MapAccess<'t>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                self.0.saw_items = true;
                map.next_value_seed(ItemsSeed(&mut *self.0))?;
            } else {
                let value = map.next_value::<serde_json::Value>()?;
                self.0.rest.insert(key, value);
            }
        }
        Ok(())
    }
}

struct ItemsSeed<'a, 't>(&'a mut Reader<'t>);

impl<'t> serde::de::DeserializeSeed<'t> for ItemsSeed<'_, 't> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'t>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'t> serde::de::Visitor<'t> for ItemsSeed<'_, 't> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    /// `"items": null`, as an empty list prints in some clients.
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'t>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.0.batches.is_some() {
            while let Some(raw) = seq.next_element::<&'t serde_json::value::RawValue>()? {
                let index = self.0.next_index();
                self.0.batch.push((index, raw.get()));
                if self.0.batch.len() == BATCH {
                    self.0.send_batch();
                }
            }
            return Ok(());
        }
        while let Some(item) = seq.next_element::<serde_json::Value>()? {
            if let Err(error) = self.0.item(item) {
                self.0.error = Some(error);
                return Err(serde::de::Error::custom("stopped at an unreadable item"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
