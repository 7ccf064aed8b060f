//! Headroom: capacity kept free ahead of demand, so that pods that come find room without waiting for a node.
//! A policy reserves a number of pods of one shape, cluster-wide or in one node group; the reservation
//! becomes virtual pending pods in the loop's simulation, so it is placed in free room first and otherwise
//! scaled up for, exactly like real pods, and scale-down keeps the room it holds. Nothing is created in the
//! cluster (no placeholder Deployment), and the real scheduler hands the room to the next real pods.
//!
//! Sizes: `pods` (room for N pods), `percent` (X% of allocatable kept free, in pods of the shape), and the
//! cluster-proportional-autoscaler's `linear` and `ladder` modes, which people use today to size
//! overprovisioning Deployments.

use crate::k8s::Quantity;
use crate::model::{Controller, Labels, NODE_GROUP_LABEL, Node, Pod, Resources};
use serde::Deserialize;
use std::sync::Arc;

/// A policy's virtual pods live in this namespace, so that they are told apart in every report.
pub const NAMESPACE: &str = "headroom";

/// A CapacityBuffer's virtual pods are `<namespace>/capacity-buffer-<buffer>-<i>`, as cluster-autoscaler
/// names its fake pods.
const BUFFER_POD_PREFIX: &str = "capacity-buffer-";

/// Whether `pod` (`namespace/name`) is named as a policy's or a buffer's virtual pods are. (A real pod named
/// `capacity-buffer-<x>-<n>` would pass for one: it would get no scale-up events.)
pub fn is_virtual(pod: &str) -> bool {
    Owner::of(pod).is_some()
}

/// Whom room is kept for: a `--headroom-config` policy or a CapacityBuffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    Policy(String),
    Buffer { namespace: String, name: String },
}

impl Owner {
    /// The owner of a virtual pod (`namespace/name`, as reports write pods).
    pub fn of(pod: &str) -> Option<Owner> {
        let (namespace, name) = pod.split_once('/')?;
        let (owner, index) = name.rsplit_once('-')?;
        index.parse::<u32>().ok()?;
        if namespace == NAMESPACE {
            return Some(Owner::Policy(owner.to_string()));
        }
        let buffer = owner.strip_prefix(BUFFER_POD_PREFIX)?;
        Some(Owner::Buffer {
            namespace: namespace.to_string(),
            name: buffer.to_string(),
        })
    }

    /// The `i`th virtual pod's namespace and name (a policy's count from 0, a buffer's from 1, as upstream's).
    fn pod(&self, i: u32) -> (&str, String) {
        match self {
            Owner::Policy(policy) => (NAMESPACE, format!("{policy}-{i}")),
            Owner::Buffer { namespace, name } => {
                (namespace, format!("{BUFFER_POD_PREFIX}{name}-{}", i + 1))
            }
        }
    }
}

/// Room kept free: `count` virtual pending pods made from `chunk`, for `owner`. The pods are movable like a
/// Deployment's and rank below real pods of the default priority, so real pods take their room first; they
/// are never created in the cluster, so a chunk is never a reason to evict anything.
pub fn virtual_pods(owner: &Owner, chunk: &Pod, count: u32) -> impl Iterator<Item = Pod> {
    (0..count).map(move |i| {
        let (namespace, name) = owner.pod(i);
        chunk.virtual_pending(namespace, name)
    })
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy {policy}: {reason}")]
    Invalid { policy: String, reason: String },
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    /// The file is not the YAML of a `--headroom-config`.
    #[error("{0}")]
    Yaml(String),
}

/// A `--headroom-config` file: `headroom: [policy, ...]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    headroom: Vec<PolicyFile>,
}

/// Reads a `--headroom-config` file.
pub fn read(path: &std::path::Path) -> Result<Vec<Policy>, PolicyError> {
    let fail = |reason: String| PolicyError::File {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    parse(&text).map_err(|e| fail(e.to_string()))
}

/// Parses the text of a `--headroom-config` file.
pub fn parse(text: &str) -> Result<Vec<Policy>, PolicyError> {
    let file: ConfigFile =
        serde_norway::from_str(text).map_err(|e| PolicyError::Yaml(e.to_string()))?;
    file.headroom.into_iter().map(Policy::from_file).collect()
}

/// A policy as written in YAML.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyFile {
    pub name: String,
    /// Keep the room in this node group; cluster-wide when absent.
    #[serde(default)]
    pub node_group: Option<String>,
    /// One reserved pod's requests (default 1 CPU, 2 GiB).
    #[serde(default)]
    pub shape: Option<ShapeFile>,
    #[serde(default)]
    pub pods: Option<u32>,
    #[serde(default)]
    pub percent: Option<f64>,
    #[serde(default)]
    pub linear: Option<Linear>,
    #[serde(default)]
    pub ladder: Option<Ladder>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeFile {
    pub cpu: String,
    pub memory: String,
}

/// cluster-proportional-autoscaler's linear mode.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Linear {
    #[serde(default)]
    pub cores_per_replica: Option<f64>,
    #[serde(default)]
    pub nodes_per_replica: Option<f64>,
    #[serde(default)]
    pub min: Option<u32>,
    #[serde(default)]
    pub max: Option<u32>,
    /// At least 2 when there is more than one node.
    #[serde(default)]
    pub prevent_single_point_failure: bool,
}

/// cluster-proportional-autoscaler's ladder mode: `[threshold, replicas]` steps.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ladder {
    #[serde(default)]
    pub cores_to_replicas: Vec<(f64, u32)>,
    #[serde(default)]
    pub nodes_to_replicas: Vec<(f64, u32)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Size {
    Pods(u32),
    Percent(f64),
    Linear(Linear),
    Ladder(Ladder),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub name: String,
    pub node_group: Option<String>,
    pub shape: Resources,
    pub size: Size,
}

/// The capacity a policy is measured against: schedulable nodes (of its group) and their allocatable.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Capacity {
    pub nodes: usize,
    pub allocatable: Resources,
}

impl Capacity {
    /// Ready, schedulable nodes, of `group` if given (by the node group label).
    pub fn of(nodes: &[Arc<Node>], group: Option<&str>) -> Capacity {
        nodes
            .iter()
            .filter(|n| n.accepts_pods())
            .filter(|n| {
                group.is_none_or(|g| n.labels.get(NODE_GROUP_LABEL).map(String::as_str) == Some(g))
            })
            .fold(Capacity::default(), |c, n| Capacity {
                nodes: c.nodes + 1,
                allocatable: c.allocatable.plus(n.allocatable),
            })
    }

    fn cores(&self) -> f64 {
        self.allocatable.cpu_millis as f64 / 1000.0
    }
}

impl Policy {
    pub fn from_file(file: PolicyFile) -> Result<Policy, PolicyError> {
        let invalid = |reason: &str| PolicyError::Invalid {
            policy: file.name.clone(),
            reason: reason.into(),
        };
        let quantity = |what: &str, text: &str| {
            text.parse::<Quantity>()
                .map_err(|e| invalid(&format!("shape {what} {text:?}: {e}")))
        };
        let shape = match &file.shape {
            Some(s) => Resources {
                cpu_millis: u64::try_from(quantity("cpu", &s.cpu)?.millis()).unwrap_or(0),
                memory_bytes: u64::try_from(quantity("memory", &s.memory)?.value()).unwrap_or(0),
                pods: 1,
                ..Default::default()
            },
            None => Resources {
                cpu_millis: 1000,
                memory_bytes: 2 << 30,
                pods: 1,
                ..Default::default()
            },
        };
        if shape.cpu_millis == 0 && shape.memory_bytes == 0 {
            return Err(invalid("shape asks for nothing"));
        }
        let sizes = [
            file.pods.map(Size::Pods),
            file.percent.map(Size::Percent),
            file.linear.clone().map(Size::Linear),
            file.ladder.clone().map(Size::Ladder),
        ];
        let mut given = sizes.into_iter().flatten();
        let (Some(size), None) = (given.next(), given.next()) else {
            return Err(invalid(
                "give exactly one of pods, percent, linear and ladder",
            ));
        };
        match &size {
            Size::Percent(p) if !(0.0..=100.0).contains(p) => {
                return Err(invalid("percent must be between 0 and 100"));
            }
            Size::Linear(l) => {
                let positive = |v: Option<f64>| v.is_none_or(|v| v > 0.0);
                if l.cores_per_replica.is_none() && l.nodes_per_replica.is_none() {
                    return Err(invalid("linear needs coresPerReplica or nodesPerReplica"));
                }
                if !positive(l.cores_per_replica) || !positive(l.nodes_per_replica) {
                    return Err(invalid("linear's per-replica values must be above 0"));
                }
                if l.min.zip(l.max).is_some_and(|(min, max)| min > max) {
                    return Err(invalid("linear's min is above its max"));
                }
            }
            Size::Ladder(l) if l.cores_to_replicas.is_empty() && l.nodes_to_replicas.is_empty() => {
                return Err(invalid("ladder needs coresToReplicas or nodesToReplicas"));
            }
            _ => {}
        }
        Ok(Policy {
            name: file.name,
            node_group: file.node_group,
            shape,
            size,
        })
    }

    /// How many pods of its shape the policy reserves for this capacity.
    pub fn reserved(&self, capacity: &Capacity) -> u32 {
        let (cores, nodes) = (capacity.cores(), capacity.nodes as f64);
        match &self.size {
            Size::Pods(n) => *n,
            Size::Percent(p) => {
                let share = |total: u64, each: u64| {
                    if each == 0 {
                        0.0
                    } else {
                        (total as f64 * p / 100.0 / each as f64).ceil()
                    }
                };
                let cpu = share(capacity.allocatable.cpu_millis, self.shape.cpu_millis);
                let memory = share(capacity.allocatable.memory_bytes, self.shape.memory_bytes);
                cpu.max(memory) as u32
            }
            Size::Linear(l) => {
                let by =
                    |per: Option<f64>, amount: f64| per.map_or(0.0, |per| (amount / per).ceil());
                let mut n =
                    by(l.cores_per_replica, cores).max(by(l.nodes_per_replica, nodes)) as u32;
                if l.prevent_single_point_failure && capacity.nodes > 1 {
                    n = n.max(2);
                }
                if let Some(min) = l.min {
                    n = n.max(min);
                }
                if let Some(max) = l.max {
                    n = n.min(max);
                }
                n
            }
            Size::Ladder(l) => {
                let step = |steps: &[(f64, u32)], amount: f64| {
                    steps
                        .iter()
                        .filter(|(threshold, _)| *threshold <= amount)
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                        .map_or(0, |(_, replicas)| *replicas)
                };
                step(&l.cores_to_replicas, cores).max(step(&l.nodes_to_replicas, nodes))
            }
        }
    }

    /// One reserved pod: the policy's shape (in its group, when it has one).
    pub fn chunk(&self) -> Pod {
        let mut pod = Pod::pending(NAMESPACE, &self.name, self.shape);
        pod.labels = Labels::from([("ekscale.io/headroom".to_string(), self.name.clone())]);
        pod.controller = Some(Arc::new(Controller {
            kind: "ReplicaSet".into(),
            name: self.name.clone(),
            uid: format!("headroom-{}", self.name),
        }));
        pod.scheduling = Arc::new(crate::model::Scheduling {
            node_selector: self
                .node_group
                .iter()
                .map(|g| (NODE_GROUP_LABEL.to_string(), g.clone()))
                .collect(),
            ..Default::default()
        });
        pod
    }

    /// `count` virtual pending pods of the policy's shape.
    pub fn pods(&self, count: u32) -> Vec<Pod> {
        let owner = Owner::Policy(self.name.clone());
        virtual_pods(&owner, &self.chunk(), count).collect()
    }

    /// `500m/1Gi` for reports.
    pub fn describe_shape(&self) -> String {
        format!(
            "{}/{}",
            crate::k8s::cpu_quantity(self.shape.cpu_millis),
            crate::k8s::bytes_quantity(self.shape.memory_bytes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> Policy {
        let file: PolicyFile = serde_norway::from_str(yaml).unwrap();
        Policy::from_file(file).unwrap()
    }

    fn capacity(nodes: usize, cores_each: u64) -> Capacity {
        Capacity {
            nodes,
            allocatable: Resources {
                cpu_millis: nodes as u64 * cores_each * 1000,
                memory_bytes: nodes as u64 * cores_each * (4 << 30),
                ..Default::default()
            },
        }
    }

    #[test]
    fn linear_follows_cluster_proportional_autoscalers_formula_as_the_cluster_grows_and_shrinks() {
        let linear = policy(
            "{name: l, linear: {coresPerReplica: 16, nodesPerReplica: 4, min: 1, max: 10, preventSinglePointFailure: true}}",
        );
        // max(ceil(cores / 16), ceil(nodes / 4)), at least 2 with several nodes, within [1, 10].
        for (nodes, cores_each, expected) in [
            (1, 4, 1),    // max(1, 1) = 1, a single node
            (2, 4, 2),    // max(1, 1) = 1, raised to 2
            (5, 8, 3),    // max(ceil(40/16)=3, ceil(5/4)=2)
            (12, 4, 3),   // max(3, 3)
            (40, 16, 10), // max(40, 10) capped at 10
            (3, 4, 2),    // shrinking again
            (0, 4, 1),    // no nodes: min
        ] {
            assert_eq!(
                linear.reserved(&capacity(nodes, cores_each)),
                expected,
                "{nodes} nodes of {cores_each} cores"
            );
        }
    }

    #[test]
    fn ladder_takes_the_highest_step_reached_by_cores_or_nodes() {
        let ladder = policy(
            "{name: l, ladder: {coresToReplicas: [[1, 1], [64, 3], [512, 5]], nodesToReplicas: [[1, 1], [2, 2]]}}",
        );
        for (nodes, cores_each, expected) in [
            (0, 4, 0),
            (1, 4, 1),  // cores 4 -> 1, nodes 1 -> 1
            (2, 4, 2),  // nodes 2 -> 2
            (16, 4, 3), // cores 64 -> 3
            (64, 8, 5), // cores 512 -> 5
            (10, 4, 2), // back down: cores 40 -> 1, nodes 10 -> 2
        ] {
            assert_eq!(ladder.reserved(&capacity(nodes, cores_each)), expected);
        }
    }

    #[test]
    fn pods_and_percent_reserve_in_pods_of_the_shape() {
        let fixed =
            policy("{name: web, nodeGroup: general, pods: 5, shape: {cpu: '1', memory: 2Gi}}");
        assert_eq!(fixed.reserved(&capacity(3, 4)), 5);
        let pods = fixed.pods(2);
        assert_eq!(pods[0].key(), "headroom/web-0");
        assert_eq!(
            Owner::of("headroom/web-0"),
            Some(Owner::Policy("web".into()))
        );
        assert_eq!(pods[0].priority, Some(-1));
        assert_eq!(pods[0].demand.cpu_millis, 1000);
        assert_eq!(
            pods[0].scheduling.node_selector[NODE_GROUP_LABEL],
            "general"
        );
        // 20% of 10 nodes x 4 cores = 8 cores, in 1-CPU pods: 8 (memory: 20% of 160 GiB in 2 GiB pods: 16).
        let percent = policy("{name: p, percent: 20}");
        assert_eq!(percent.reserved(&capacity(10, 4)), 16);
    }

    #[test]
    fn a_buffers_virtual_pods_are_named_as_upstream_names_them_and_found_again() {
        let owner = Owner::Buffer {
            namespace: "shop".into(),
            name: "web-spare".into(),
        };
        let mut chunk = Pod::pending("shop", "web-template", Resources::default());
        chunk.priority = Some(1000);
        let pods: Vec<Pod> = virtual_pods(&owner, &chunk, 2).collect();
        let keys: Vec<String> = pods.iter().map(Pod::key).collect();
        assert_eq!(
            keys,
            [
                "shop/capacity-buffer-web-spare-1",
                "shop/capacity-buffer-web-spare-2"
            ]
        );
        assert_eq!(pods[1].priority, Some(-1));
        assert_eq!(Owner::of(&keys[1]), Some(owner));
        // Real pods are nobody's.
        for real in [
            "shop/web-5d8f-x2x",
            "shop/capacity-buffer-x",
            "headroom",
            "shop/db-0-x",
        ] {
            assert_eq!(Owner::of(real), None, "{real}");
        }
    }

    #[test]
    fn bad_policies_are_named() {
        for (yaml, expected) in [
            ("{name: a}", "give exactly one of"),
            ("{name: a, pods: 1, percent: 5}", "give exactly one of"),
            ("{name: a, percent: 150}", "between 0 and 100"),
            (
                "{name: a, linear: {min: 1}}",
                "coresPerReplica or nodesPerReplica",
            ),
            ("{name: a, linear: {coresPerReplica: 0}}", "above 0"),
            (
                "{name: a, linear: {nodesPerReplica: 1, min: 5, max: 2}}",
                "min is above its max",
            ),
            ("{name: a, ladder: {}}", "ladder needs"),
            (
                "{name: a, pods: 1, shape: {cpu: x, memory: 1Gi}}",
                "shape cpu \"x\"",
            ),
        ] {
            let file: PolicyFile = serde_norway::from_str(yaml).unwrap();
            let error = Policy::from_file(file).unwrap_err().to_string();
            assert!(
                error.starts_with("policy a: ") && error.contains(expected),
                "{error}"
            );
        }
    }
}
