//! The affinity surge (issue 62; cluster-autoscaler's `BenchmarkRunOnceAffinitySurge`, kubernetes/autoscaler
//! PR #9523) at any size: `nodes` Ready nodes of 4 CPU / 16 GiB / 110 pods in ten groups, each running a
//! DaemonSet pod and four pods that leave it 1.5 to 2.3 CPU free; then, all pending at once, `nodes * 49 / 50`
//! Deployments of 10 small replicas and `nodes / 50` Deployments of 10 big ones, every pod with required
//! podAntiAffinity on its own `app` label by hostname. The small replicas fit existing nodes, one a node; a
//! big replica (3 CPU) fits no existing node's free room and only one fits a new node. The right answer: every
//! small pod placed on an existing node, and one new node a big pod. Seeded, so every run builds the same
//! cluster; shared by `benches/surge.rs` and `tests/surge.rs`.
#![allow(dead_code)]

use serde_json::{Value, json};

/// The node groups' count: the existing nodes are spread evenly over them.
pub const GROUPS: usize = 10;

/// How big a surge: existing nodes, and the pending pods that follow from them.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub nodes: usize,
}

impl Shape {
    /// Deployments of small replicas that fit existing nodes.
    pub fn small_deployments(self) -> usize {
        self.nodes * 49 / 50
    }
    /// Deployments of big replicas that each need a node of their own.
    pub fn big_deployments(self) -> usize {
        self.nodes / 50
    }
    /// Replicas of every Deployment.
    pub const REPLICAS: usize = 10;
    /// The pods placed on existing nodes in the right answer.
    pub fn small_pods(self) -> usize {
        self.small_deployments() * Self::REPLICAS
    }
    /// The new nodes in the right answer: one a big pod.
    pub fn new_nodes(self) -> usize {
        self.big_deployments() * Self::REPLICAS
    }
}

/// The simulated EKS: ten groups of one plain shape, each running `nodes / 10` instances, each with room
/// for the whole surge's new nodes (an expander may pick any of them).
pub fn scenario(shape: Shape) -> String {
    let per_group = shape.nodes / GROUPS;
    let max = per_group + shape.new_nodes() + per_group;
    let mut text = String::from("cluster: surge\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..GROUPS {
        let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][g % 3];
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: m5.xlarge, zones: [{zone}], minSize: 0, maxSize: {max}, \
             desiredSize: {per_group}, allocatable: {{cpu: '4', memory: 16Gi, pods: '110'}}}}\n"
        ));
    }
    text
}

/// The groups' names, for listing their nodes.
pub fn groups() -> Vec<String> {
    (0..GROUPS).map(|g| format!("team-{g}")).collect()
}

/// xorshift64 from a fixed seed: the same draws every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A pod of a ReplicaSet (or DaemonSet) `owner` with label `app`, one container with these requests.
fn pod(name: &str, app: &str, owner: (&str, &str), cpu: &str, memory: &str) -> Value {
    let (kind, owner) = owner;
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"app": app, "pod-template-hash": "7c9f8d6b5"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner,
                                          "uid": format!("uid-{owner}"), "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1.2.3",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {"phase": "Pending",
                   "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    })
}

fn running(mut pod: Value, node: &str) -> Value {
    pod["spec"]["nodeName"] = json!(node);
    pod["status"] =
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]});
    pod
}

/// `pod` with required anti-affinity on its own `app` label, by hostname: its replicas one a node.
fn spread(mut pod: Value, app: &str) -> Value {
    pod["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}});
    pod
}

/// The cluster's items: `nodes` (Node objects, as `kubectl get nodes -o json` lists them) with their running
/// pods, then the surge's pending pods, Deployment by Deployment.
pub fn items(shape: Shape, nodes: Vec<Value>) -> Vec<Value> {
    const RUNNING_CPU: [&str; 3] = ["400m", "500m", "600m"];
    const SMALL_CPU: [&str; 4] = ["50m", "100m", "150m", "200m"];
    const SMALL_MEMORY: [&str; 3] = ["64Mi", "128Mi", "256Mi"];
    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut items = nodes;
    for (n, node) in names.iter().enumerate() {
        let ds = pod(
            &format!("node-exporter-{node}"),
            "node-exporter",
            ("DaemonSet", "node-exporter"),
            "100m",
            "128Mi",
        );
        items.push(running(ds, node));
        for p in 0..4 {
            let app = format!("base-{}", (n * 4 + p) % 200);
            let name = format!("{app}-{n}-{p}");
            let cpu = RUNNING_CPU[draw.next(3)];
            items.push(running(
                pod(&name, &app, ("ReplicaSet", &app), cpu, "2Gi"),
                node,
            ));
        }
    }
    for d in 0..shape.small_deployments() {
        let app = format!("web-{d}");
        let (cpu, memory) = (SMALL_CPU[draw.next(4)], SMALL_MEMORY[draw.next(3)]);
        for r in 0..Shape::REPLICAS {
            let name = format!("{app}-7c9f8d6b5-{r}");
            let replica = pod(
                &name,
                &app,
                ("ReplicaSet", &format!("{app}-7c9f8d6b5")),
                cpu,
                memory,
            );
            items.push(spread(replica, &app));
        }
    }
    for d in 0..shape.big_deployments() {
        let app = format!("big-{d}");
        for r in 0..Shape::REPLICAS {
            let name = format!("{app}-5d8b7c6f4-{r}");
            let owner = format!("{app}-5d8b7c6f4");
            let replica = pod(&name, &app, ("ReplicaSet", &owner), "3", "10Gi");
            items.push(spread(replica, &app));
        }
    }
    items
}
