//! SIG Autoscaling's CapacityQuota (`autoscaling.x-k8s.io`, cluster-scoped) as the companion holds it: a node
//! label selector and limits on what the matching nodes add up to. Upstream's rules (cluster-autoscaler's
//! `resourcequotas/`): usage is the sum over the nodes the selector matches; a new node is matched by its
//! labels and refused when any matching quota would go over a limit it names.
//!
//! Read here, once, at the edge: each quota is valid (its [`QuotaSpec`]) or carries its problem, worded as
//! the API server and upstream's validator word it. A valid quota is enforced whatever its status says.

use super::invalid::Invalid;
use super::labels::Labels;
use super::node::{GPU_LABEL, Node};
use super::resources::GPU_RESOURCE;
use super::selector::{LabelSelector, Operator, Requirement, is_dns_subdomain, is_label_name};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The limit on how many nodes match (upstream's `ResourceNodes`).
pub const NODES_RESOURCE: &str = "nodes";
/// At most this many limits (the CRD's `maxProperties`).
pub const MAX_LIMITS: usize = 20;
/// A resource name's longest (the CRD's CEL rule).
pub const MAX_RESOURCE_NAME: usize = 63;
/// Nodes labelled `type=virtual-kubelet` are never counted, as upstream's node filter leaves them out.
pub const VIRTUAL_KUBELET_LABEL: (&str, &str) = ("type", "virtual-kubelet");

/// The CRD's messages, word for word.
const NAME_TOO_LONG: &str = "Resource names must be 63 characters or less.";
const NOT_AN_INTEGER: &str = "All resource quantities must be non-negative integers.";

/// The version a quota was read as: its status is written back in the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaVersion {
    /// Served and deprecated since cluster-autoscaler 1.37.
    V1alpha1,
    /// The storage version.
    V1beta1,
}

impl QuotaVersion {
    /// Both, the preferred first.
    pub const ALL: [QuotaVersion; 2] = [QuotaVersion::V1beta1, QuotaVersion::V1alpha1];

    pub fn as_str(self) -> &'static str {
        match self {
            QuotaVersion::V1alpha1 => "v1alpha1",
            QuotaVersion::V1beta1 => "v1beta1",
        }
    }

    pub fn parse(text: &str) -> Option<QuotaVersion> {
        QuotaVersion::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

/// One CapacityQuota as read.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityQuota {
    pub name: String,
    /// `None` when the object's `apiVersion` is not one of ours (then `spec` says so).
    pub version: Option<QuotaVersion>,
    /// `metadata.generation` (0 in files that leave it out): what `observedGeneration` is set to.
    pub generation: i64,
    /// What it limits, or why it cannot be enforced (upstream's validator and the CRD's rules, joined by
    /// "; " as upstream joins its validators' errors).
    pub spec: Result<QuotaSpec, Invalid>,
    /// The status as read, so that a writer can tell whether anything changed.
    pub status: QuotaStatus,
}

impl CapacityQuota {
    /// The name a refused scale-up gives it: `CapacityQuota/<name>`, upstream's quota ID.
    pub fn id(&self) -> String {
        quota_id(&self.name)
    }

    /// Its spec when it is valid: only then is it enforced.
    pub fn valid(&self) -> Option<&QuotaSpec> {
        self.spec.as_ref().ok()
    }

    /// Why it is not enforced, when it is not.
    pub fn problem(&self) -> Option<&Invalid> {
        self.spec.as_ref().err()
    }
}

/// Upstream's quota ID of the quota named `name`.
pub fn quota_id(name: &str) -> String {
    format!("CapacityQuota/{name}")
}

/// A valid quota's selector and limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaSpec {
    /// `None` (or the empty selector) matches every node.
    pub selector: Option<LabelSelector>,
    /// Each limited resource: `cpu` in cores, `memory` in bytes, `nodes` a count, anything else (e.g.
    /// `nvidia.com/gpu`) in its own units. Every value rounded up to a whole number, as upstream's `Value()`.
    pub limits: BTreeMap<String, u64>,
}

impl QuotaSpec {
    /// Whether a node with `labels` counts towards it (and a new node with them is held to it). Virtual
    /// kubelets never count.
    pub fn matches(&self, labels: &Labels) -> bool {
        let (key, value) = VIRTUAL_KUBELET_LABEL;
        if labels.get(key).is_some_and(|v| v == value) {
            return false;
        }
        self.selector.as_ref().is_none_or(|s| s.matches(labels))
    }
}

/// The status as read: `used.resources`, `conditions`, `observedGeneration`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuotaStatus {
    /// `None` when there is no `used` yet, or one of its quantities could not be read (a status to write).
    pub used: Option<BTreeMap<String, super::quantity::Quantity>>,
    pub conditions: Vec<QuotaCondition>,
    pub observed_generation: Option<i64>,
}

/// One `metav1.Condition` as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaCondition {
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
    pub observed_generation: Option<i64>,
    pub last_transition: Option<SystemTime>,
}

/// How much of `resource` a node adds to a quota's usage (and a new node from this template would add):
/// - `cpu`: capacity cores, rounded up; `memory`: capacity bytes; `nodes`: 1 (upstream's enforcement vector);
/// - any other name is the node's capacity under that literal name (`pods`, `ephemeral-storage`,
///   `nvidia.com/gpu`, an extended resource), as upstream's status counts it. Unlike upstream's enforcement
///   (which keys GPUs by the GPU label's value only), a `nvidia.com/gpu` limit is enforced too;
/// - and, for quotas written for upstream, the value of the node's `k8s.amazonaws.com/accelerator` label
///   (e.g. `nvidia-tesla-t4`) counts its GPUs, when no resource of the node has that name.
///
/// Extended resources are counted by what the node can allocate (the model keeps no other figure of them).
pub fn quota_amount(node: &Node, resource: &str) -> u64 {
    let capacity = &node.capacity;
    match resource {
        "cpu" => capacity.cpu_millis.div_ceil(1000),
        "memory" => capacity.memory_bytes,
        NODES_RESOURCE => 1,
        "pods" => capacity.pods,
        "ephemeral-storage" => capacity.ephemeral_storage_bytes,
        GPU_RESOURCE => capacity.gpus,
        other => match node.extended.get(other) {
            Some(&n) => n,
            None if node.labels.get(GPU_LABEL).is_some_and(|v| v == other) => capacity.gpus,
            None => 0,
        },
    }
}

/// Every resource a node adds to quotas, by name, as [`quota_amount`] counts them (those it has none of
/// left out, except `cpu`, `memory` and `nodes`, always there as in upstream's vector).
pub fn quota_resources(node: &Node) -> BTreeMap<String, u64> {
    let mut names: Vec<&str> = vec!["cpu", "memory", NODES_RESOURCE, "pods", "ephemeral-storage"];
    names.push(GPU_RESOURCE);
    names.extend(node.extended.keys().map(String::as_str));
    if let Some(accelerator) = node.labels.get(GPU_LABEL) {
        names.push(accelerator);
    }
    names
        .into_iter()
        .map(|name| (name.to_string(), quota_amount(node, name)))
        .filter(|(name, n)| *n > 0 || ["cpu", "memory", NODES_RESOURCE].contains(&name.as_str()))
        .collect()
}

/// A limit as written: the CRD's `int-or-string`.
#[derive(Clone, Debug, PartialEq)]
pub enum WrittenLimit {
    Int(i64),
    Text(String),
    /// Neither (a float, a list, ...): written as JSON.
    Other(String),
}

/// The limits read and checked as the CRD checks them (at most 20, names of at most 63 characters, each a
/// non-negative integer without a milli suffix, even an integral one such as `1000m`). Every problem is
/// named, each under its field path.
pub fn read_limits(
    written: impl IntoIterator<Item = (String, WrittenLimit)>,
) -> Result<BTreeMap<String, u64>, Vec<Invalid>> {
    const PATH: &str = "spec.limits.resources";
    let mut limits = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, value) in written {
        if name.len() > MAX_RESOURCE_NAME {
            let rule = format!("Invalid value: {name:?}: {NAME_TOO_LONG}");
            problems.push(Invalid::new(PATH, rule));
            continue;
        }
        match limit_value(&value) {
            Ok(n) => {
                limits.insert(name, n);
            }
            Err(shown) => problems.push(Invalid::new(
                format!("{PATH}[{name}]"),
                format!("Invalid value: {}: {NOT_AN_INTEGER}", shown.0),
            )),
        }
    }
    let count = limits.len() + problems.len();
    if count > MAX_LIMITS {
        let rule = format!("Too many: {count}: must have at most {MAX_LIMITS} items");
        problems.push(Invalid::new(PATH, rule));
    }
    if problems.is_empty() {
        Ok(limits)
    } else {
        Err(problems)
    }
}

/// A limit that is no non-negative integer, as the error shows it.
struct Shown(String);

/// A limit's value, or the value as the error shows it.
fn limit_value(value: &WrittenLimit) -> Result<u64, Shown> {
    match value {
        WrittenLimit::Int(n) => u64::try_from(*n).map_err(|_| Shown(n.to_string())),
        WrittenLimit::Other(json) => Err(Shown(json.clone())),
        WrittenLimit::Text(text) => {
            let shown = || Shown(format!("{text:?}"));
            let sub_unit = text.ends_with(['m', 'u', 'n']);
            if text.starts_with('-') || sub_unit {
                return Err(shown());
            }
            let quantity: super::quantity::Quantity = text.parse().map_err(|_| shown())?;
            if quantity.millis() % 1000 != 0 {
                return Err(shown());
            }
            u64::try_from(quantity.value()).map_err(|_| shown())
        }
    }
}

/// One `matchExpressions` entry as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenRequirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// A quota's selector read as `metav1.LabelSelectorAsSelector` reads it: the operators of a label selector
/// only (no `Gt`/`Lt`), values for `In`/`NotIn` and none for `Exists`/`DoesNotExist`, keys and values as
/// labels allow. The problem is worded as upstream's validator words it:
/// `spec.selector: Invalid value: <the selector as written>: <what is wrong>`.
pub fn read_selector(
    match_labels: Labels,
    expressions: Vec<WrittenRequirement>,
    written: &str,
) -> Result<LabelSelector, Invalid> {
    let invalid = |detail: String| {
        Invalid::new(
            "spec.selector",
            format!("Invalid value: {written}: {detail}"),
        )
    };
    let invalid_field = |field: Invalid| invalid(field.to_string());
    for (key, value) in &match_labels {
        label_key(key).map_err(invalid_field)?;
        label_value(value).map_err(invalid_field)?;
    }
    let mut requirements = Vec::with_capacity(expressions.len());
    for r in expressions {
        let operator = match Operator::parse(&r.operator) {
            Some(
                op @ (Operator::In | Operator::NotIn | Operator::Exists | Operator::DoesNotExist),
            ) => op,
            _ => {
                return Err(invalid(format!(
                    "{:?} is not a valid label selector operator",
                    r.operator
                )));
            }
        };
        label_key(&r.key).map_err(invalid_field)?;
        match operator {
            Operator::In | Operator::NotIn if r.values.is_empty() => {
                return Err(invalid(
                    "for 'in', 'notin' operators, values set can't be empty".into(),
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !r.values.is_empty() => {
                return Err(invalid(
                    "values set must be empty for exists and does not exist".into(),
                ));
            }
            _ => {}
        }
        for value in &r.values {
            label_value(value).map_err(invalid_field)?;
        }
        requirements.push(Requirement {
            key: r.key,
            operator,
            values: r.values,
        });
    }
    Ok(LabelSelector {
        match_labels,
        expressions: requirements,
    })
}

/// A label key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
fn label_key(key: &str) -> Result<(), Invalid> {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    if key.contains('/') && !is_dns_subdomain(prefix) {
        return Err(Invalid::new(
            "key",
            format!("Invalid value: {key:?}: prefix part must be a lowercase RFC 1123 subdomain"),
        ));
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(Invalid::new(
            "key",
            format!(
                "Invalid value: {key:?}: name part must be no more than 63 characters, consist of \
             alphanumeric characters, '-', '_' or '.', and start and end with an alphanumeric character"
            ),
        ));
    }
    Ok(())
}

/// A label value: empty, or a name as [`label_key`]'s name part.
fn label_value(value: &str) -> Result<(), Invalid> {
    if value.is_empty() || is_label_name(value) {
        return Ok(());
    }
    Err(Invalid::new(
        "values",
        format!(
            "Invalid value: {value:?}: a valid label must be an empty string or no more than 63 \
         characters, consist of alphanumeric characters, '-', '_' or '.', and start and end with an \
         alphanumeric character"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::resources::Resources;
    use super::*;

    fn node(labels: &[(&str, &str)], cpu_millis: u64, gpus: u64) -> Node {
        Node {
            name: "n".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            capacity: Resources {
                cpu_millis,
                memory_bytes: 16 << 30,
                pods: 110,
                gpus,
                ..Resources::default()
            },
            ..Node::default()
        }
    }

    fn text(s: &str) -> WrittenLimit {
        WrittenLimit::Text(s.into())
    }

    #[test]
    fn a_nodes_amounts_as_upstream_counts_them_and_gpus_by_name() {
        let gpu = node(&[(GPU_LABEL, "nvidia-tesla-t4")], 3500, 4);
        assert_eq!(quota_amount(&gpu, "cpu"), 4, "cores rounded up");
        assert_eq!(quota_amount(&gpu, "memory"), 16 << 30);
        assert_eq!(quota_amount(&gpu, NODES_RESOURCE), 1);
        assert_eq!(quota_amount(&gpu, GPU_RESOURCE), 4);
        assert_eq!(quota_amount(&gpu, "nvidia-tesla-t4"), 4, "upstream's key");
        assert_eq!(quota_amount(&gpu, "example.com/fpga"), 0);
        let vector = quota_resources(&gpu);
        assert_eq!(
            vector.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "cpu",
                "memory",
                "nodes",
                "nvidia-tesla-t4",
                "nvidia.com/gpu",
                "pods"
            ]
        );
        let plain = node(&[], 2000, 0);
        assert!(!quota_resources(&plain).contains_key(GPU_RESOURCE));
    }

    #[test]
    fn a_quota_matches_its_nodes_but_virtual_kubelets_and_sums_their_amounts() {
        let spec = QuotaSpec {
            selector: Some(LabelSelector {
                match_labels: [("pool".to_string(), "gpu".to_string())].into(),
                expressions: vec![],
            }),
            limits: [
                ("cpu".into(), 64),
                ("nodes".into(), 8),
                (GPU_RESOURCE.into(), 8),
            ]
            .into(),
        };
        let nodes = [
            node(&[("pool", "gpu")], 8000, 1),
            node(&[("pool", "gpu")], 8000, 1),
            node(&[("pool", "cpu")], 8000, 0),
            node(&[("pool", "gpu"), ("type", "virtual-kubelet")], 8000, 1),
        ];
        // What the loop sums for a quota: the amounts of the nodes it matches (never a virtual kubelet's).
        let usage = |spec: &QuotaSpec, resource: &str| -> u64 {
            (nodes.iter())
                .filter(|n| spec.matches(&n.labels))
                .map(|n| quota_amount(n, resource))
                .sum()
        };
        assert_eq!(usage(&spec, "cpu"), 16);
        assert_eq!(usage(&spec, "nodes"), 2);
        assert_eq!(usage(&spec, GPU_RESOURCE), 2);
        let everything = QuotaSpec {
            selector: None,
            limits: [("nodes".into(), 100)].into(),
        };
        assert_eq!(usage(&everything, "nodes"), 3);
    }

    #[test]
    fn limits_as_the_crd_checks_them() {
        let read = read_limits([
            ("cpu".into(), WrittenLimit::Int(64)),
            ("memory".into(), text("256Gi")),
            ("nodes".into(), text("2k")),
        ])
        .unwrap();
        assert_eq!(read["cpu"], 64);
        assert_eq!(read["memory"], 256 << 30);
        assert_eq!(read["nodes"], 2000);
        for bad in ["500m", "1000m", "3.67Gi", "0.3", "-1", "1e-3", "lots"] {
            let problems = read_limits([("cpu".into(), text(bad))]).unwrap_err();
            let problems: Vec<String> = problems.iter().map(Invalid::to_string).collect();
            assert_eq!(
                problems,
                [format!(
                    "spec.limits.resources[cpu]: Invalid value: {bad:?}: {NOT_AN_INTEGER}"
                )],
                "{bad}"
            );
        }
        assert!(read_limits([("cpu".into(), WrittenLimit::Int(-1))]).is_err());
        assert!(read_limits([("cpu".into(), WrittenLimit::Other("1.5".into()))]).is_err());
        let long = "a".repeat(64);
        let problems = read_limits([(long.clone(), WrittenLimit::Int(1))]).unwrap_err();
        assert!(
            problems[0].to_string().ends_with(NAME_TOO_LONG),
            "{problems:?}"
        );
        assert!(read_limits([("a".repeat(63), WrittenLimit::Int(1))]).is_ok());
        let many = (0..21).map(|i| (format!("r{i}"), WrittenLimit::Int(1)));
        let problems = read_limits(many).unwrap_err();
        let problems: Vec<String> = problems.iter().map(Invalid::to_string).collect();
        assert_eq!(
            problems,
            ["spec.limits.resources: Too many: 21: must have at most 20 items"]
        );
        assert!(read_limits((0..20).map(|i| (format!("r{i}"), WrittenLimit::Int(1)))).is_ok());
    }

    #[test]
    fn selectors_as_label_selector_as_selector_reads_them() {
        let req = |key: &str, op: &str, values: &[&str]| WrittenRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let read = read_selector(
            Labels::new(),
            vec![req("topology.kubernetes.io/zone", "In", &["us-east-1a"])],
            "{}",
        )
        .unwrap();
        assert!(read.matches(&[(ZONE.into(), "us-east-1a".into())].into()));
        let problem = |r: WrittenRequirement| {
            read_selector(Labels::new(), vec![r], "SEL")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            problem(req("zone", "Foo", &["a"])),
            "spec.selector: Invalid value: SEL: \"Foo\" is not a valid label selector operator"
        );
        assert!(problem(req("zone", "Gt", &["1"])).contains("not a valid label selector operator"));
        assert!(problem(req("zone", "In", &[])).contains("values set can't be empty"));
        assert!(problem(req("zone", "Exists", &["a"])).contains("values set must be empty"));
        assert!(problem(req("bad key", "Exists", &[])).contains("name part must"));
        assert!(problem(req("Bad_Prefix/x", "Exists", &[])).contains("prefix part"));
        assert!(problem(req("zone", "In", &["-a"])).contains("a valid label"));
        let labels = [("pool".to_string(), "a b".to_string())].into();
        assert!(read_selector(labels, vec![], "SEL").is_err());
    }

    const ZONE: &str = "topology.kubernetes.io/zone";
}
