//! CapacityQuotas (autoscaling.x-k8s.io) in `simulate`, end to end: the real provider binary on a simulated
//! EKS, snapshots holding quotas of both versions, and the plan held to every quota matching a group's
//! template: shared among the groups a selector matches, the tightest kept, with the nodes added outside the
//! companion and those still coming counted; an invalid quota reported and not enforced; the flag off.

mod common;

use common::Binary;
use common::cluster::*;
use serde_json::{Value, json};

const SCENARIO: &str = r#"
cluster: quotas
region: us-east-1
nodeGroups:
  - name: gpu-a
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 10
    desiredSize: 0
    labels: {pool: gpu}
  - name: gpu-b
    instanceType: g4dn.2xlarge
    zones: [us-east-1b]
    minSize: 0
    maxSize: 10
    desiredSize: 0
    labels: {pool: gpu}
  - name: general
    instanceType: m5.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 20
    desiredSize: 2
    labels: {pool: general}
"#;

fn provider() -> (Binary, tempfile::TempDir) {
    Binary::on_scenario(SCENARIO)
}

fn quota(version: &str, name: &str, selector: Value, limits: Value) -> Value {
    json!({"apiVersion": format!("autoscaling.x-k8s.io/{version}"), "kind": "CapacityQuota",
           "metadata": {"name": name, "generation": 1},
           "spec": {"selector": selector, "limits": {"resources": limits}}})
}

/// A pending pod asking one GPU.
fn gpu_pod(i: usize) -> Value {
    let mut pod = pending("default", &format!("train-{i}"), "train", "1", "4Gi");
    let resources = &mut pod["spec"]["containers"][0]["resources"];
    resources["requests"]["nvidia.com/gpu"] = json!("1");
    resources["limits"] = json!({"nvidia.com/gpu": "1"});
    pod
}

/// A pending pod that takes a general node of its own (3 of its 4 cores).
fn general_pod(i: usize) -> Value {
    let pod = pending("default", &format!("web-{i}"), "web", "3", "4Gi");
    with_spec(pod, json!({"nodeSelector": {"pool": "general"}}))
}

/// A GPU node someone added by hand: in no node group, labelled as the pool.
fn outside_gpu_node() -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "hand-made-gpu", "creationTimestamp": "2026-12-01T10:00:00Z",
                        "labels": {"pool": "gpu", "kubernetes.io/hostname": "hand-made-gpu"}},
           "spec": {"providerID": "aws:///us-east-1a/i-0handmade"},
           "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "29", "nvidia.com/gpu": "1"},
                      "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "29", "nvidia.com/gpu": "1"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn planned(result: &Value, group: &str) -> u64 {
    (scale_ups(result).into_iter())
        .filter(|(g, _)| g == group)
        .map(|(_, n)| n)
        .sum()
}

fn quota_entry<'a>(result: &'a Value, name: &str) -> &'a Value {
    (result["capacityQuotas"].as_array().unwrap().iter())
        .find(|q| q["name"] == name)
        .unwrap_or_else(|| panic!("{name} not reported: {result:#}"))
}

/// The snapshot every test plans over: the hand-made GPU node (its GPU busy), six pods asking a GPU each,
/// four general pods, and the quotas.
fn snapshot(quotas: Vec<Value>) -> Value {
    let mut items = vec![outside_gpu_node()];
    let mut busy = running("hand-made-gpu", "busy", "busy", "1", "1Gi");
    busy["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = json!("1");
    items.push(busy);
    items.extend((0..6).map(gpu_pod));
    items.extend((0..4).map(general_pod));
    items.extend(quotas);
    list(items)
}

fn quotas() -> Vec<Value> {
    vec![
        // Shared by both GPU groups; the hand-made node's GPU counts: 3 left.
        quota(
            "v1beta1",
            "gpu-pool",
            json!({"matchLabels": {"pool": "gpu"}}),
            json!({"nvidia.com/gpu": 4, "memory": "1Ti"}),
        ),
        // Tighter, on one of them only.
        quota(
            "v1beta1",
            "gpu-a-nodes",
            json!({"matchExpressions": [{"key": "eks.amazonaws.com/nodegroup", "operator": "In",
                                         "values": ["gpu-a"]}]}),
            json!({"nodes": 1}),
        ),
        // The deprecated version; the two general nodes requested and not registered count: 1 left.
        quota(
            "v1alpha1",
            "general-nodes",
            json!({"matchLabels": {"pool": "general"}}),
            json!({"nodes": "3"}),
        ),
        // Invalid: it would stop everything if it were enforced.
        quota("v1beta1", "broken", json!({}), json!({"cpu": "500m"})),
    ]
}

#[test]
fn quotas_of_both_versions_hold_the_plan_shared_among_groups_the_tightest_kept() {
    let (provider, _dir) = provider();
    let result = simulate_json(provider.grpc, &snapshot(quotas()), &[]);

    // Three GPUs left under gpu-pool, at most one node of gpu-a (chosen first: it wastes less): one
    // there, the two left in gpu-b.
    assert_eq!(planned(&result, "gpu-a"), 1, "{result:#}");
    assert_eq!(planned(&result, "gpu-b"), 2, "{result:#}");
    // Two general pods wait for the two nodes coming; general-nodes allows one more node.
    assert_eq!(planned(&result, "general"), 1, "{result:#}");

    // The GPU pods left say which quota stops each group, in upstream's words, with the figures.
    let why = reasons(&result, "default/train-5");
    let b = why["gpu-b"].as_str().unwrap();
    assert_eq!(
        b,
        "exceeded quota: \"CapacityQuota/gpu-pool\", resources: nvidia.com/gpu (nvidia.com/gpu used 4 \
         of 4, a node adds 1)"
    );
    // gpu-a's one node fills gpu-a-nodes too: of the two quotas allowing no more node, the first by name
    // is named (not the first read).
    let a = why["gpu-a"].as_str().unwrap();
    assert_eq!(
        a,
        "exceeded quota: \"CapacityQuota/gpu-a-nodes\", resources: nodes (nodes used 1 of 1, a node adds 1)"
    );
    let left = reasons(&result, "default/web-3");
    let general = left["general"].as_str().unwrap();
    assert_eq!(
        general,
        "exceeded quota: \"CapacityQuota/general-nodes\", resources: nodes (nodes used 3 of 3, a node \
         adds 1)"
    );

    // Each quota reported: limits, use before and after the scale-ups, the groups held to it.
    let pool = quota_entry(&result, "gpu-pool");
    assert_eq!(pool["limits"]["nvidia.com/gpu"], 4);
    assert_eq!(pool["limits"]["memory"], 1u64 << 40);
    assert_eq!(
        pool["used"]["nvidia.com/gpu"], 1,
        "the hand-made node counts"
    );
    assert_eq!(pool["afterScaleUp"]["nvidia.com/gpu"], 4);
    assert_eq!(pool["nodeGroups"], json!(["gpu-a", "gpu-b"]));
    let general = quota_entry(&result, "general-nodes");
    assert_eq!(general["used"]["nodes"], 2, "the nodes requested count");
    assert_eq!(general["afterScaleUp"]["nodes"], 3);
    assert_eq!(general["nodeGroups"], json!(["general"]));
    // The invalid quota is named with its problem and held to nothing.
    let broken = quota_entry(&result, "broken");
    let problem = broken["problem"].as_str().unwrap();
    assert!(
        problem.contains("All resource quantities must be non-negative integers."),
        "{problem}"
    );
    assert_eq!(broken["nodeGroups"], json!([]));
}

#[test]
fn the_table_has_a_section_of_the_quotas() {
    let (provider, _dir) = provider();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot(quotas()).to_string()).unwrap();
    let output = simulate(provider.grpc, &path, &[]);
    let table = String::from_utf8(output.stdout).unwrap();
    let section: Vec<&str> = (table.lines())
        .skip_while(|l| *l != "Capacity quotas")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(
        section,
        [
            "  gpu-pool: memory 16Gi of 1Ti (96Gi after scale-up), nvidia.com/gpu 1 of 4 (4 after scale-up); node groups gpu-a, gpu-b",
            "  gpu-a-nodes: nodes 0 of 1 (1 after scale-up); node groups gpu-a",
            "  general-nodes: nodes 2 of 3 (3 after scale-up); node groups general",
            "  broken: not enforced: spec.limits.resources[cpu]: Invalid value: \"500m\": All resource quantities must be non-negative integers.",
        ],
        "{table}"
    );
}

#[test]
fn with_the_flag_off_quotas_are_ignored() {
    let (provider, _dir) = provider();
    let args = ["--capacity-quotas-enabled=false"];
    let result = simulate_json(provider.grpc, &snapshot(quotas()), &args);
    assert_eq!(planned(&result, "gpu-a") + planned(&result, "gpu-b"), 6);
    assert_eq!(planned(&result, "general"), 2);
    assert_eq!(result["capacityQuotas"], json!([]));
}

/// The ProvisioningRequests snapshot (the built-in simulated EKS's gpu group at zero, max 4), with a quota
/// of two GPUs on that group: `train`, an atomic request for three one-GPU workers, is refused whole.
#[test]
fn an_atomic_request_that_would_cross_a_quota_is_refused_whole_naming_it() {
    let provider = Binary::start(&[]);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/provisioning_requests.yaml"
    );
    let mut snapshot: Value =
        serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let items = snapshot["items"].as_array_mut().unwrap();
    items.push(quota(
        "v1beta1",
        "gpu-cap",
        json!({"matchLabels": {"eks.amazonaws.com/nodegroup": "gpu"}}),
        json!({"nvidia.com/gpu": 2}),
    ));
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(planned(&result, "gpu"), 0, "{result:#}");
    let train = (result["provisioningRequests"].as_array().unwrap().iter())
        .find(|r| r["name"] == "ml/train")
        .unwrap();
    let said = train.to_string();
    assert!(
        said.contains(r#"exceeded quota: \"CapacityQuota/gpu-cap\", resources: nvidia.com/gpu"#),
        "{train:#}"
    );
    // Without the quota, the same request is provisioned.
    let items = snapshot["items"].as_array_mut().unwrap();
    items.pop();
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(planned(&result, "gpu"), 3, "{result:#}");
}

const MERGE: &str = r#"
cluster: merge
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 6, capacityType: ON_DEMAND}
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 1, capacityType: SPOT}
  - {name: big-spot, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: SPOT}
"#;

/// Six on-demand m5.large nodes, three of them with 1050m of pods each that one spot m5.xlarge would hold
/// more cheaply (tests/consolidation.rs's case): a quota of no spot nodes refuses that replacement, and says so.
#[tokio::test]
async fn a_replacement_node_that_would_cross_a_quota_is_not_made() {
    let (provider, _dir) = Binary::on_scenario(MERGE);
    let mut items = Vec::new();
    for group in ["ondemand", "spot"] {
        let mut nodes = nodes_of(provider.grpc, &[group]).await;
        for (i, node) in nodes.iter_mut().enumerate() {
            let name = format!("{group}-{i}");
            node["metadata"]["name"] = json!(name);
            node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
        }
        items.extend(nodes);
    }
    for n in 0..6 {
        for i in 0..3 {
            let node = format!("ondemand-{n}");
            items.push(running(
                &node,
                &format!("web{n}-{i}"),
                &format!("web{n}"),
                "350m",
                "256Mi",
            ));
        }
    }
    let args = ["--consolidation", "replace"];
    let without = simulate_json(provider.grpc, &list(items.clone()), &args);
    let merged = without["consolidation"].as_array().unwrap();
    assert!(
        merged.iter().any(|c| c["nodeGroup"] == "big-spot"),
        "{without:#}"
    );

    // The spot nodes are capped at the one there is.
    items.push(quota(
        "v1beta1",
        "spot-nodes",
        json!({"matchLabels": {"eks.amazonaws.com/capacityType": "SPOT"}}),
        json!({"nodes": 1}),
    ));
    let with = simulate_json(provider.grpc, &list(items), &args);
    assert_eq!(with["consolidation"], json!([]), "{with:#}");
    let said = with["notConsolidated"].to_string();
    assert!(
        said.contains(r#"exceeded quota: \"CapacityQuota/spot-nodes\", resources: nodes"#),
        "{with:#}"
    );
    assert_eq!(quota_entry(&with, "spot-nodes")["used"]["nodes"], 1);
}

#[test]
fn the_readmes_example_prints_what_the_readme_shows() {
    let provider = Binary::start(&[]);
    let snapshot = "tests/data/capacity-quota.yaml";
    // From the quotas' section to the end: the quota's figures, and the pod it stops with the reason.
    let lines = readme_shows(provider.grpc, snapshot, &[], "Capacity quotas");
    assert_eq!(lines, 8);
    // And the gpu group's scale-up, cut to what the quota lets in.
    readme_shows_scale_up(provider.grpc, snapshot, "gpu");
}
