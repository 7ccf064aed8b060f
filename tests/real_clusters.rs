//! `simulate` over snapshots shaped as real EKS clusters print them (`tests/data/`): DaemonSet pods as the
//! DaemonSet controller makes them, a zone spread over three zones, a typed list, a truncated file. The
//! provider is the real binary on a simulated EKS whose node group spans the fixtures' three zones.

mod common;

use common::Binary;
use common::cluster::{reasons, scale_ups, simulate};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SCENARIO: &str = r#"
cluster: real
region: us-west-2
nodeGroups:
  - name: ng-general
    instanceType: t3.medium
    zones: [us-west-2a, us-west-2b, us-west-2c]
    minSize: 0
    maxSize: 10
    desiredSize: 0
"#;

fn provider() -> (Binary, tempfile::TempDir) {
    Binary::on_scenario(SCENARIO)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn simulate_file(provider: &Binary, path: &Path) -> Value {
    let output = simulate(provider.grpc, path, &["--format", "json"]);
    assert!(
        output.status.success(),
        "simulate failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn pods_of(result: &Value, group: &str) -> Vec<String> {
    result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["nodeGroup"] == group)
        .flat_map(|s| s["pods"].as_array().unwrap().clone())
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn daemonset_pods_pinned_to_their_nodes_take_their_room_on_new_nodes() {
    let (provider, _dir) = provider();
    let result = simulate_file(&provider, &fixture("eks-daemonsets.yaml"));

    // aws-node (50m) and kube-proxy (100m) run on every new t3.medium too: 15 of its 17 pod slots are left,
    // so 32 coredns replicas need three nodes, not the two they would without the DaemonSets; one in each
    // zone, as the Auto Scaling group balances them.
    assert_eq!(
        scale_ups(&result),
        [("ng-general".to_string(), 3)],
        "{result:#}"
    );
    let coredns = pods_of(&result, "ng-general");
    assert_eq!(coredns.len(), 32, "{result:#}");
    assert!(
        coredns
            .iter()
            .all(|p| p.starts_with("kube-system/coredns-"))
    );
    assert_eq!(
        result["scaleUp"][0]["zones"],
        json!({"us-west-2a": 1, "us-west-2b": 1, "us-west-2c": 1})
    );

    // aws-node holds host port 61678 on every node: a new one cannot run a pod asking for it.
    assert_eq!(
        reasons(&result, "default/metrics-agent-0")["ng-general"],
        "node(s) didn't have free ports for the requested pod ports"
    );
    // The room a new node has is what its DaemonSets leave.
    assert_eq!(
        reasons(&result, "default/encoder-0")["ng-general"],
        "Insufficient cpu: the pod requests 1800m, an empty node has 1780m free after its DaemonSets"
    );
    // A pod pinned by matchFields to a node with room goes there.
    let placed: Vec<(&str, &str)> = result["placed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pod"].as_str().unwrap(), p["node"].as_str().unwrap()))
        .collect();
    assert_eq!(
        placed,
        [(
            "default/debug-shell",
            "ip-192-168-45-67.us-west-2.compute.internal"
        )]
    );
    // The DaemonSet pods themselves are running, not pending: nothing else is said.
    assert_eq!(
        result["noScaleUp"].as_array().unwrap().len(),
        2,
        "{result:#}"
    );
}

#[test]
fn a_zone_spread_fills_the_existing_nodes_and_plans_one_node_per_zone() {
    let (provider, _dir) = provider();
    let result = simulate_file(&provider, &fixture("zone-spread.yaml"));

    // Five on each existing node, as kube-scheduler would place them.
    let placed = result["placed"].as_array().unwrap();
    assert_eq!(placed.len(), 15, "{result:#}");
    let mut per_node = std::collections::BTreeMap::<&str, usize>::new();
    for p in placed {
        *per_node.entry(p["node"].as_str().unwrap()).or_default() += 1;
    }
    assert_eq!(
        per_node.values().copied().collect::<Vec<_>>(),
        [5, 5, 5],
        "{per_node:?}"
    );
    // The other 15 on three new nodes, one in each zone, and none left over.
    assert_eq!(
        scale_ups(&result),
        [("ng-general".to_string(), 3)],
        "{result:#}"
    );
    assert_eq!(pods_of(&result, "ng-general").len(), 15);
    assert_eq!(
        result["scaleUp"][0]["zones"],
        json!({"us-west-2a": 1, "us-west-2b": 1, "us-west-2c": 1})
    );
    assert_eq!(result["noScaleUp"], json!([]), "{result:#}");
}

#[test]
fn a_typed_list_is_read_and_a_truncated_file_refused() {
    let (provider, _dir) = provider();
    // The API server's NodeList, whose items carry no kind.
    let result = simulate_file(&provider, &fixture("nodelist.json"));
    assert_eq!(
        result["unremovable"].as_array().unwrap().len()
            + result["scaleDown"].as_array().unwrap().len(),
        3,
        "every node is read and accounted for: {result:#}"
    );

    // kubectl's YAML cut short after an item: it parses, but the closing `kind: List` is missing.
    let text = std::fs::read_to_string(fixture("zone-spread.yaml")).unwrap();
    let cut = text
        .match_indices("\n- apiVersion: v1\n")
        .nth(20)
        .unwrap()
        .0
        + 1;
    let dir = tempfile::tempdir().unwrap();
    let truncated = dir.path().join("truncated.yaml");
    std::fs::write(&truncated, &text[..cut]).unwrap();
    let output = simulate(provider.grpc, &truncated, &[]);
    assert_eq!(output.status.code(), Some(2), "bad input");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines = text[..cut].lines().count();
    assert!(
        stderr.contains(&format!("looks truncated (it ends at line {lines})")),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "nothing planned on half a cluster"
    );
}
