//! Cluster snapshots made in tests: nodes copied from what a provider runs, pods written as kubectl prints
//! them, and the `ekscale-autoscaler` binary run over them.

use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

/// When the test cluster's nodes were created: the snapshot's "now".
pub const CREATED: &str = "2026-11-30T00:00:00Z";

/// A Node for every running instance of `groups`, as kubelet would register it: the group's template with
/// the instance's providerID, zone and a hostname of its own.
pub async fn nodes_of(provider: SocketAddr, groups: &[&str]) -> Vec<Value> {
    let client = ProviderClient::new(&ProviderConfig::plaintext(provider.to_string())).unwrap();
    client.refresh().await.unwrap();
    let mut nodes = Vec::new();
    for group in groups {
        let template = client.template(group).await.unwrap().expect("a template");
        let quantities = |map: &std::collections::BTreeMap<
            String,
            k8s_pb::apimachinery::pkg::api::resource::Quantity,
        >| {
            map.iter()
                .map(|(k, v)| (k.clone(), json!(v.string.clone().unwrap_or_default())))
                .collect::<serde_json::Map<_, _>>()
        };
        let status = template.status.clone().unwrap_or_default();
        let taints: Vec<Value> = template
            .spec
            .clone()
            .unwrap_or_default()
            .taints
            .iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
            .collect();
        for instance in client.nodes(group).await.unwrap() {
            let zone = instance.id.split('/').nth(3).unwrap().to_string();
            let name = format!("ip-{}", instance.id.rsplit('/').next().unwrap());
            let mut labels = template.metadata.clone().unwrap_or_default().labels;
            labels.insert("kubernetes.io/hostname".into(), name.clone());
            labels.insert("topology.kubernetes.io/zone".into(), zone);
            nodes.push(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels, "creationTimestamp": CREATED},
                "spec": {"providerID": instance.id, "taints": taints},
                "status": {
                    "capacity": quantities(&status.capacity),
                    "allocatable": quantities(&status.allocatable),
                    "conditions": [{"type": "Ready", "status": "True"}]
                }
            }));
        }
    }
    nodes
}

/// A pod the scheduler could not place: one container with these requests.
pub fn pending(namespace: &str, name: &str, app: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app,
                                          "uid": format!("uid-{app}"), "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "app",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {"phase": "Pending",
                   "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    })
}

/// A pod running on `node`.
pub fn running(node: &str, name: &str, app: &str, cpu: &str, memory: &str) -> Value {
    let mut pod = pending("default", name, app, cpu, memory);
    pod["spec"]["nodeName"] = json!(node);
    pod["status"] =
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]});
    pod
}

/// A node-exporter DaemonSet pod running on `node`.
pub fn exporter(node: &str, cpu: &str, memory: &str) -> Value {
    let mut pod = running(
        node,
        &format!("node-exporter-{node}"),
        "node-exporter",
        cpu,
        memory,
    );
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "name": "node-exporter", "uid": "uid-ds", "controller": true}]);
    pod
}

/// `pod` with `spec` merged into its spec.
pub fn with_spec(mut pod: Value, spec: Value) -> Value {
    for (k, v) in spec.as_object().unwrap() {
        pod["spec"][k] = v.clone();
    }
    pod
}

/// Many pending pods alike.
pub fn replicas(count: usize, app: &str, cpu: &str, memory: &str) -> Vec<Value> {
    (0..count)
        .map(|i| pending("default", &format!("{app}-{i}"), app, cpu, memory))
        .collect()
}

pub fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Runs `ekscale-autoscaler simulate` over `snapshot` with `args`.
pub fn simulate(provider: SocketAddr, snapshot: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args(["simulate", "--provider", &provider.to_string()])
        .arg("--snapshot")
        .arg(snapshot)
        .args(args)
        .output()
        .expect("running ekscale-autoscaler")
}

/// `simulate --format json`, which must succeed.
pub fn simulate_json(provider: SocketAddr, snapshot: &Value, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let output = simulate(provider, &path, &all);
    assert!(
        output.status.success(),
        "simulate failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The scale-ups of a simulate result as (group, delta).
pub fn scale_ups(result: &Value) -> Vec<(String, u64)> {
    result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["nodeGroup"].as_str().unwrap().to_string(),
                s["delta"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Why `pod` could not be helped, by node group.
pub fn reasons(result: &Value, pod: &str) -> serde_json::Map<String, Value> {
    result["noScaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == pod)
        .unwrap_or_else(|| panic!("{pod} not in noScaleUp: {result:#}"))["reasons"]
        .as_object()
        .unwrap()
        .clone()
}

/// Runs `simulate` (table output) over `snapshot` with `args` and checks that every line of its section that
/// starts at `section` (up to the loop's times) is in the README; returns how many lines that is.
pub fn readme_shows(provider: SocketAddr, snapshot: &str, args: &[&str], section: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(snapshot);
    let output = simulate(provider, &path, args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = table
        .find(section)
        .unwrap_or_else(|| panic!("no {section:?} section: {table}"));
    let end = table.find("decided in").unwrap();
    let lines: Vec<&str> = (table[start..end].lines())
        .filter(|l| !l.is_empty())
        .collect();
    for line in &lines {
        assert!(readme.contains(line), "README lacks: {line}");
    }
    lines.len()
}

/// Runs `simulate` (table output) over `snapshot` and checks that `group`'s line and the pods line under it
/// are in the README.
pub fn readme_shows_scale_up(provider: SocketAddr, snapshot: &str, group: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(snapshot);
    let table = String::from_utf8(simulate(provider, &path, &[]).stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let up: Vec<&str> = (table.lines())
        .skip_while(|l| !l.starts_with(&format!("{group} ")))
        .take(2)
        .collect();
    assert_eq!(up.len(), 2, "{table}");
    for line in up {
        assert!(readme.contains(line), "README lacks: {line}");
    }
}
