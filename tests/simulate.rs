//! `ekscale-autoscaler simulate` end to end: the real provider binary on a simulated EKS, snapshots made
//! here, and the decisions checked against what was worked out by hand.

mod common;

use common::cluster::*;
use common::{Binary, companion};
use serde_json::{Value, json};

const SCENARIO: &str = r#"
cluster: simulate
region: us-east-1
nodeGroups:
  - name: general
    instanceType: m5.large
    zones: [us-east-1a, us-east-1b]
    minSize: 0
    maxSize: 10
    desiredSize: 2
    labels: {workload: general}
  - name: general-c
    instanceType: m5.large
    zones: [us-east-1c]
    minSize: 0
    maxSize: 10
    desiredSize: 0
    labels: {workload: general}
  - name: large
    instanceType: m5.2xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 5
    desiredSize: 0
    labels: {workload: general}
  - name: zone-b
    instanceType: r5.xlarge
    zones: [us-east-1b]
    minSize: 0
    maxSize: 3
    desiredSize: 0
    labels: {workload: general}
  - name: batch
    instanceType: c5.2xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    labels: {workload: batch}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
    options: {zeroOrMaxNodeScaling: true}
  - name: gpu
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 2
    desiredSize: 0
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  - name: stockout
    instanceType: m5.large
    zones: [us-east-1d]
    minSize: 0
    maxSize: 4
    desiredSize: 1
    availableCapacity: 0
fargateProfiles:
  - name: serverless
    selectors: [{namespace: serverless}]
"#;

struct Cluster {
    provider: Binary,
    _dir: tempfile::TempDir,
    /// The two general nodes: zone a, zone b.
    node_a: String,
    node_b: String,
    /// Nodes and the pods running on them.
    base: Vec<Value>,
}

/// The provider, and the cluster around its two general nodes: each runs a 1500m filler and a node-exporter
/// DaemonSet pod (50m, hostPort 9100); node a also runs two small `app=spread` pods.
async fn cluster() -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let provider = Binary::start(&["--sim-file", scenario.to_str().unwrap()]);
    let nodes = nodes_of(provider.grpc, &["general"]).await;
    let in_zone = |zone: &str| {
        nodes
            .iter()
            .find(|n| n["metadata"]["labels"]["topology.kubernetes.io/zone"] == zone)
            .unwrap()["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (node_a, node_b) = (in_zone("us-east-1a"), in_zone("us-east-1b"));
    let exporter = |node: &str| {
        let mut pod = common::cluster::exporter(node, "50m", "50Mi");
        pod["spec"]["containers"][0]["ports"] = json!([{"containerPort": 9100, "hostPort": 9100}]);
        pod
    };
    // Running pods carry constraints of their own (placed before; only counted now).
    let spread_old = |node: &str, name: &str| {
        with_spec(
            running(node, name, "spread", "100m", "64Mi"),
            json!({"topologySpreadConstraints": [{"maxSkew": 5, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}],
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "filler"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        )
    };
    let mut base = nodes;
    base.extend([
        running(&node_a, "filler-a", "filler", "1500m", "1Gi"),
        running(&node_b, "filler-b", "filler", "1500m", "1Gi"),
        spread_old(&node_a, "spread-old-0"),
        spread_old(&node_a, "spread-old-1"),
        exporter(&node_a),
        exporter(&node_b),
    ]);
    Cluster {
        provider,
        _dir: dir,
        node_a,
        node_b,
        base,
    }
}

impl Cluster {
    fn snapshot(&self, pending: Vec<Value>) -> Value {
        let mut items = self.base.clone();
        items.extend(pending);
        list(items)
    }
}

fn keys(result: &Value, group: &str) -> Vec<String> {
    let entry = result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["nodeGroup"] == group)
        .unwrap_or_else(|| panic!("no scale-up of {group}: {result:#}"));
    let mut pods: Vec<String> = entry["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    pods.sort();
    pods
}

fn sorted(mut v: Vec<(String, u64)>) -> Vec<(String, u64)> {
    v.sort();
    v
}

#[tokio::test]
async fn every_pending_pod_gets_a_decision_and_a_reason() {
    let cluster = cluster().await;
    let mut pending = replicas(6, "web", "1", "1Gi");
    // Required anti-affinity on hostname: one per node; two fit beside the fillers.
    for i in 0..3 {
        pending.push(with_spec(
            self::pending("default", &format!("zk-{i}"), "zk", "100m", "128Mi"),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "zk"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        ));
    }
    // Zone spread with two `spread` pods in zone a already: the new one must go elsewhere.
    pending.push(with_spec(
        self::pending("default", "spread-new", "spread", "1", "1Gi"),
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}]}),
    ));
    // Batch pods tolerate the batch taint and select batch nodes; one forgot the toleration.
    let batch = |name: &str, tolerate: bool| {
        let tolerations = if tolerate {
            json!([{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        with_spec(
            self::pending("default", name, name, "2", "4Gi"),
            json!({"nodeSelector": {"workload": "batch"}, "tolerations": tolerations}),
        )
    };
    pending.extend([
        batch("etl-1", true),
        batch("etl-2", true),
        batch("untolerated", false),
    ]);
    let mut gpu = with_spec(
        self::pending("default", "trainer", "trainer", "1", "2Gi"),
        json!({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}),
    );
    gpu["spec"]["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": "1"});
    pending.push(gpu);
    pending.push(self::pending("default", "huge", "huge", "64", "1Gi"));
    // Fargate: one bound to the fargate-scheduler, one a profile matches that kept the default scheduler.
    pending.push(with_spec(
        self::pending("serverless", "fn-1", "fn", "1", "2Gi"),
        json!({"schedulerName": "fargate-scheduler"}),
    ));
    pending.push(self::pending(
        "serverless",
        "legacy",
        "legacy",
        "500m",
        "512Mi",
    ));
    // Not tried by the scheduler yet: said so, nothing planned.
    let mut fresh = self::pending("default", "fresh", "fresh", "100m", "64Mi");
    fresh["status"] = json!({"phase": "Pending"});
    pending.push(fresh);
    // Expendable: never a reason to scale up.
    pending.push(with_spec(
        self::pending("default", "filler-balloon", "balloon", "100", "1Gi"),
        json!({"priority": -20}),
    ));

    let result = simulate_json(cluster.provider.grpc, &cluster.snapshot(pending), &[]);

    // The spread pod cannot go to zone a: general (zones a and b, one node in each) plans its node in b,
    // general-c in c, and least-waste cannot tell the two m5.large groups apart.
    let spread = result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["pods"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == "default/spread-new")
        })
        .unwrap_or_else(|| panic!("no node for spread-new: {result:#}"));
    let spread_group = spread["nodeGroup"].as_str().unwrap().to_string();
    match spread_group.as_str() {
        "general" => assert_eq!(spread["zones"], json!({"us-east-1b": 1}), "{result:#}"),
        "general-c" => assert!(spread.get("zones").is_none(), "one zone: {spread}"),
        other => panic!("spread-new on {other}: {result:#}"),
    }
    assert_eq!(
        sorted(scale_ups(&result)),
        sorted(vec![
            ("batch".into(), 4),
            (spread_group.clone(), 1),
            ("gpu".into(), 1),
            ("large".into(), 1),
        ]),
        "{result:#}"
    );
    let mut large = keys(&result, "large");
    large.retain(|p| !p.starts_with("default/web-"));
    assert_eq!(large, ["default/zk-2", "serverless/legacy"]);
    assert_eq!(
        keys(&result, "large").len(),
        8,
        "6 web pods on the same node"
    );
    assert_eq!(keys(&result, &spread_group), ["default/spread-new"]);
    assert_eq!(keys(&result, "batch"), ["default/etl-1", "default/etl-2"]);
    let batch = result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["nodeGroup"] == "batch")
        .unwrap();
    assert!(
        batch["reason"]
            .as_str()
            .unwrap()
            .ends_with("(zeroOrMaxNodeScaling: to its max size)"),
        "one node holds both, but the group is all or nothing: {batch}"
    );
    assert_eq!(keys(&result, "gpu"), ["default/trainer"]);

    // Two zk pods fit beside the fillers, one on each node.
    let placed: Vec<(String, String)> = result["placed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pod"].as_str().unwrap().into(),
                p["node"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            ("default/zk-0".to_string(), cluster.node_a.clone()),
            ("default/zk-1".to_string(), cluster.node_b.clone())
        ]
    );

    let untolerated = reasons(&result, "default/untolerated");
    assert_eq!(
        untolerated["batch"],
        "node(s) had untolerated taint {dedicated: batch} (NoSchedule)"
    );
    assert_eq!(
        untolerated["general"],
        "node(s) didn't match Pod's node affinity/selector"
    );
    let huge = reasons(&result, "default/huge");
    assert_eq!(
        huge["large"],
        "Insufficient cpu: the pod requests 64, an empty node has 7860m free after its DaemonSets"
    );
    assert!(
        huge["stockout"]
            .as_str()
            .unwrap()
            .starts_with("in backoff after failed scale-up (instance creation failed")
    );
    assert!(
        reasons(&result, "default/fresh")[""]
            .as_str()
            .unwrap()
            .starts_with("the scheduler has not marked it Unschedulable")
    );
    assert_eq!(
        result["noScaleUp"].as_array().unwrap().len(),
        3,
        "{result:#}"
    );

    let fargate = result["fargate"].as_array().unwrap();
    assert_eq!(fargate[0]["pod"], "serverless/fn-1");
    assert_eq!(fargate[0]["profile"], "serverless");
    assert_eq!(fargate[0]["capacityProvisioned"], "1vCPU 3GB");
    assert!(fargate[0]["hourlyPrice"].as_f64().unwrap() > 0.0);
    assert_eq!(fargate[1]["pod"], "serverless/legacy");
    assert!(
        fargate[1]["note"]
            .as_str()
            .unwrap()
            .contains("kept scheduler")
    );

    assert!(
        !result.to_string().contains("balloon"),
        "expendable pods are left alone"
    );
    let stockout = result["nodeGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "stockout")
        .unwrap();
    assert_eq!(stockout["upcoming"], 0, "a failed instance is not coming");
    // The whole loop includes the estimator, and both are times, not placeholders.
    let (elapsed, estimate) = (
        result["elapsedMs"].as_f64().unwrap(),
        result["estimateMs"].as_f64().unwrap(),
    );
    assert!(
        estimate.is_finite() && elapsed >= estimate,
        "elapsed {elapsed} ms, estimate {estimate} ms"
    );
}

#[tokio::test]
async fn expanders_choose_differently_and_say_so() {
    let cluster = cluster().await;
    let snapshot = cluster.snapshot(replicas(6, "web", "1", "1Gi"));

    // least-waste: one m5.2xlarge holds all six (25% cpu waste) where m5.large nodes would waste half.
    let result = simulate_json(cluster.provider.grpc, &snapshot, &[]);
    assert_eq!(scale_ups(&result), [("large".to_string(), 1)]);
    assert!(
        result["scaleUp"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("least-waste chose it over")
    );

    let dir = tempfile::tempdir().unwrap();
    let priorities = dir.path().join("priorities.yaml");
    std::fs::write(&priorities, "10: ['.*']\n50: ['^general$']\n").unwrap();
    let result = simulate_json(
        cluster.provider.grpc,
        &snapshot,
        &[
            "--expander",
            "priority,least-waste",
            "--expander-priority-config",
            priorities.to_str().unwrap(),
        ],
    );
    assert_eq!(scale_ups(&result), [("general".to_string(), 6)]);

    let result = simulate_json(
        cluster.provider.grpc,
        &snapshot,
        &["--expander", "most-pods,least-nodes"],
    );
    assert_eq!(scale_ups(&result), [("large".to_string(), 1)]);

    // price: in a 2-node cluster the preferred node has 1 CPU, so six m5.large ($0.576/h) beat one
    // m5.2xlarge ($0.384/h, 8 times too big) and two r5.xlarge; general and general-c tie (random pick).
    let result = simulate_json(cluster.provider.grpc, &snapshot, &["--expander", "price"]);
    let chosen = scale_ups(&result);
    assert_eq!(chosen.len(), 1, "{result:#}");
    assert!(
        ["general", "general-c"].contains(&chosen[0].0.as_str()),
        "{result:#}"
    );
    assert_eq!(chosen[0].1, 6);
}

#[tokio::test]
async fn pods_wanting_a_partner_that_comes_after_them_join_it_on_an_existing_node() {
    let cluster = cluster().await;
    // The seekers are bigger, so they are tried before their partner: with one pass they found no pod to be
    // affine to on any node and asked for a new one, which cannot help them either.
    let seeker = |name: &str| {
        with_spec(
            pending("default", name, "seeker", "60m", "64Mi"),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "partner"}},
                 "topologyKey": "kubernetes.io/hostname"}]}}}),
        )
    };
    let snapshot = cluster.snapshot(vec![
        seeker("seeker-0"),
        seeker("seeker-1"),
        pending("default", "partner-0", "partner", "30m", "32Mi"),
    ]);
    let result = simulate_json(cluster.provider.grpc, &snapshot, &[]);
    assert_eq!(scale_ups(&result), [], "{result:#}");
    assert_eq!(result["noScaleUp"], json!([]), "{result:#}");
    let mut placed: Vec<(String, String)> = result["placed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let text = |k: &str| p[k].as_str().unwrap().to_string();
            (text("pod"), text("node"))
        })
        .collect();
    placed.sort();
    let partner_node = placed[0].1.clone();
    assert_eq!(
        placed,
        [
            ("default/partner-0".to_string(), partner_node.clone()),
            ("default/seeker-0".to_string(), partner_node.clone()),
            ("default/seeker-1".to_string(), partner_node.clone()),
        ],
        "{result:#}"
    );
}

#[tokio::test]
async fn the_binpacking_time_limit_stops_the_estimate_and_says_so() {
    let cluster = cluster().await;
    let snapshot = cluster.snapshot(replicas(12, "web", "1", "1Gi"));
    // No time at all for binpacking: no group gets a node, and every pod that needed one is told why.
    let result = simulate_json(
        cluster.provider.grpc,
        &snapshot,
        &["--max-nodegroup-binpacking-duration", "0s"],
    );
    assert_eq!(scale_ups(&result), [], "{result:#}");
    let unhelped = result["noScaleUp"].as_array().unwrap();
    assert_eq!(unhelped.len(), 12, "{result:#}");
    for pod in unhelped {
        assert_eq!(
            pod["reasons"]["large"],
            "binpacking time limit reached (--max-nodegroup-binpacking-duration)",
            "{pod}"
        );
    }
    // With the default (10 s), the same pods get their nodes.
    let result = simulate_json(cluster.provider.grpc, &snapshot, &[]);
    assert_eq!(scale_ups(&result), [("large".to_string(), 2)]);
}

#[tokio::test]
async fn limits_cap_the_plan_and_name_the_limit() {
    let cluster = cluster().await;
    let snapshot = cluster.snapshot(replicas(12, "web", "1", "1Gi"));

    let result = simulate_json(cluster.provider.grpc, &snapshot, &[]);
    assert_eq!(scale_ups(&result), [("large".to_string(), 2)]);

    // Two nodes exist: one more is allowed, for seven pods; the other five are told why.
    let result = simulate_json(
        cluster.provider.grpc,
        &snapshot,
        &["--max-nodes-total", "3"],
    );
    assert_eq!(scale_ups(&result), [("large".to_string(), 1)]);
    assert_eq!(result["noScaleUp"].as_array().unwrap().len(), 5);
    assert_eq!(
        reasons(&result, "default/web-11")["large"],
        "max total nodes in cluster reached (--max-nodes-total)"
    );

    // 12 cores in the cluster at most: 4 are there, one 8-core node fits.
    let result = simulate_json(cluster.provider.grpc, &snapshot, &["--cores-total", "0:12"]);
    assert_eq!(scale_ups(&result), [("large".to_string(), 1)]);
    assert!(
        result["noScaleUp"][0]["reasons"]["general"]
            .as_str()
            .unwrap()
            .contains("--cores-total")
    );

    // One node per group and loop: the pods spread over the groups that can take them.
    let result = simulate_json(
        cluster.provider.grpc,
        &snapshot,
        &["--max-nodes-per-scaleup", "1"],
    );
    let total: u64 = scale_ups(&result).iter().map(|(_, n)| n).sum();
    assert!(
        scale_ups(&result).iter().all(|(_, n)| *n == 1),
        "{result:#}"
    );
    assert_eq!(total as usize, scale_ups(&result).len());
}

#[tokio::test]
async fn similar_node_groups_share_a_scale_up() {
    let cluster = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let priorities = dir.path().join("priorities.yaml");
    std::fs::write(&priorities, "50: ['^general$']\n").unwrap();
    let result = simulate_json(
        cluster.provider.grpc,
        &cluster.snapshot(replicas(4, "web", "1", "1Gi")),
        &[
            "--expander",
            "priority",
            "--expander-priority-config",
            priorities.to_str().unwrap(),
            "--balance-similar-node-groups",
        ],
    );
    // general has 2 nodes, general-c none: water-filling gives general-c three and general one.
    assert_eq!(
        sorted(scale_ups(&result)),
        [("general".to_string(), 1), ("general-c".to_string(), 3)]
    );
    let balanced = result["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["nodeGroup"] == "general-c")
        .unwrap();
    assert_eq!(
        balanced["reason"],
        "balanced with general (similar node groups)"
    );
}

#[tokio::test]
async fn simulate_changes_nothing_and_prints_a_table_for_people() {
    let cluster = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.yaml");
    let mut pending = replicas(6, "web", "1", "1Gi");
    pending.push(self::pending("default", "huge", "huge", "64", "1Gi"));
    // YAML is read as well as JSON.
    std::fs::write(
        &path,
        serde_norway::to_string(&cluster.snapshot(pending)).unwrap(),
    )
    .unwrap();
    let output = simulate(cluster.provider.grpc, &path, &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("NODE GROUP"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("large") && l.contains("+1 node(s) for 6 pod(s)")),
        "{table}"
    );
    assert!(
        table.contains("Pods no node group can help\n  default/huge\n"),
        "{table}"
    );
    assert!(table.contains("    large: Insufficient cpu"), "{table}");

    // The provider's sizes are untouched.
    let client = ekscale::autoscaler::ProviderClient::new(
        &ekscale::autoscaler::ProviderConfig::plaintext(cluster.provider.grpc.to_string()),
    )
    .unwrap();
    assert_eq!(client.target_size("large").await.unwrap(), 0);
    assert_eq!(client.target_size("general").await.unwrap(), 2);
}

#[tokio::test]
async fn bad_input_is_named_and_changes_nothing() {
    let cluster = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let run = |path: &std::path::Path, args: &[&str]| {
        let output = simulate(cluster.provider.grpc, path, args);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    let missing = dir.path().join("missing.json");
    let (code, stderr) = run(&missing, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("missing.json") && stderr.contains("No such file"),
        "{stderr}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"lots"}}}]}}]}"#).unwrap();
    let (code, stderr) = run(&bad, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("default/x") && stderr.contains("\"lots\""),
        "{stderr}"
    );

    std::fs::write(&bad, r#"{"kind":"List","items":[{"kind":"Service"}]}"#).unwrap();
    let (code, stderr) = run(&bad, &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("item 0 (Service)"), "{stderr}");
    // A Deployment is read (a CapacityBuffer may follow it), but not one without a name.
    std::fs::write(&bad, r#"{"kind":"List","items":[{"kind":"Deployment"}]}"#).unwrap();
    let (code, stderr) = run(&bad, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("item 0 (Deployment): no metadata.name"),
        "{stderr}"
    );

    let good = dir.path().join("good.json");
    std::fs::write(&good, list(vec![]).to_string()).unwrap();
    let (code, stderr) = run(&good, &["--expander", "cheapest"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown expander \"cheapest\""), "{stderr}");
    let (code, stderr) = run(&good, &["--expander", "priority"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--expander-priority-config"), "{stderr}");
    let (code, stderr) = run(&good, &["--cores-total", "10:2"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("MIN is above MAX"), "{stderr}");

    // A provider that is not there: the loop fails and says so.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args(["simulate", "--provider", "127.0.0.1:1", "--snapshot"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the provider failed"));
}

#[tokio::test]
async fn run_acts_through_the_provider_and_dry_run_does_not() {
    let cluster = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(
        &path,
        cluster.snapshot(replicas(6, "web", "1", "1Gi")).to_string(),
    )
    .unwrap();
    let client = ekscale::autoscaler::ProviderClient::new(
        &ekscale::autoscaler::ProviderConfig::plaintext(cluster.provider.grpc.to_string()),
    )
    .unwrap();
    let args = |dry: bool| {
        let mut args = vec![
            "--provider".to_string(),
            cluster.provider.grpc.to_string(),
            "--scan-interval".into(),
            "1h".into(),
            "--snapshot".into(),
            path.to_str().unwrap().into(),
        ];
        if dry {
            args.push("--dry-run".into());
        }
        args
    };
    let dry_args = args(true);
    let dry = companion::start(&dry_args.iter().map(String::as_str).collect::<Vec<_>>());
    // Once its loop has planned the scale-up of large, nothing was asked of the provider.
    let decisions = companion::decisions_when(&dry, |d| {
        d["scaleUp"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["nodeGroup"] == "large"))
    });
    assert_eq!(decisions["scaleUp"][0]["nodeGroup"], "large");
    assert_eq!(
        client.target_size("large").await.unwrap(),
        0,
        "a dry run acts on nothing"
    );
    // SIGTERM stops it cleanly between loops.
    assert!(dry.terminate().success(), "run exits 0 on SIGTERM");

    let acting_args = args(false);
    let acting = companion::start(&acting_args.iter().map(String::as_str).collect::<Vec<_>>());
    // Once its loop says it scaled large up, the provider has the new target.
    let decisions = companion::decisions_when(&acting, |d| {
        d["scaleUp"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["nodeGroup"] == "large"))
    });
    assert_eq!(decisions["scaleUp"][0].get("error"), None, "{decisions}");
    assert_eq!(client.target_size("large").await.unwrap(), 1);
    drop(acting);
}

/// The README's example: the built-in scenario and tests/data/snapshot.yaml.
#[test]
fn the_readmes_example_decides_as_the_readme_says() {
    let provider = Binary::start(&[]);
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot.yaml");
    let output = simulate(
        provider.grpc,
        std::path::Path::new(snapshot),
        &["--format", "json"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        scale_ups(&result),
        [
            ("batch".to_string(), 1),
            ("general".to_string(), 1),
            ("gpu".to_string(), 1)
        ]
    );
    assert_eq!(result["placed"].as_array().unwrap().len(), 6);
    assert_eq!(result["fargate"][0]["capacityProvisioned"], "1vCPU 3GB");
    assert_eq!(result["noScaleUp"][0]["pod"], "default/huge");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for line in [
        "general          2     1    20         2  +1 node(s) for 2 pod(s): least-waste chose it over gpu, spot",
        "batch            0     0    10         0  +1 node(s) for 3 pod(s): least-waste chose it over general, gpu, spot",
    ] {
        assert!(readme.contains(line), "README lacks: {line}");
    }
}

const SCALE_DOWN_SCENARIO: &str = r#"
cluster: quiet
region: us-east-1
nodeGroups:
  - {name: web, instanceType: m5.large, zones: [us-east-1a, us-east-1b], minSize: 1, maxSize: 10, desiredSize: 5}
  - {name: keep, instanceType: m5.large, zones: [us-east-1a], minSize: 1, maxSize: 3, desiredSize: 1}
"#;

/// Every node of a snapshot is either in `scaleDown` or in `unremovable` with a reason, and what goes is
/// what the rules, PDBs and min sizes allow.
#[tokio::test]
async fn simulate_removes_or_explains_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(&scenario, SCALE_DOWN_SCENARIO).unwrap();
    let provider = Binary::start(&["--sim-file", scenario.to_str().unwrap()]);
    let mut items = nodes_of(provider.grpc, &["web", "keep"]).await;
    let name = |i: usize| items[i]["metadata"]["name"].as_str().unwrap().to_string();
    let web: Vec<String> = (0..5).map(name).collect();
    let keep = name(5);
    // web[0]: busy. web[1]: empty. web[2]: a light pod that fits on web[0]. web[3]: a pod nobody owns.
    // web[4]: a pod annotated not to be evicted. keep: alone at its group's min size.
    let mut unowned = running(&web[3], "scratchpad", "scratchpad", "100m", "64Mi");
    unowned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    let mut pinned = running(&web[4], "pinned", "pinned", "100m", "64Mi");
    pinned["metadata"]["annotations"] =
        json!({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"});
    let mut disabled = items[5].clone();
    disabled["metadata"]["annotations"] =
        json!({"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"});
    items[5] = disabled;
    items.extend([
        running(&web[0], "busy", "busy", "1200m", "1Gi"),
        running(&web[2], "light", "light", "300m", "256Mi"),
        unowned,
        pinned,
        common::cluster::exporter(&web[1], "50m", "50Mi"),
    ]);
    let snapshot = list(items);
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    let removed: Vec<(&str, &str, &str)> = result["scaleDown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["node"].as_str().unwrap(),
                s["nodeGroup"].as_str().unwrap(),
                s["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        removed,
        [
            (web[1].as_str(), "web", "empty"),
            (web[2].as_str(), "web", "underutilized")
        ],
        "{result:#}"
    );
    assert_eq!(result["scaleDown"][1]["pods"], json!(["default/light"]));
    let kept: std::collections::BTreeMap<&str, (&str, &str)> = result["unremovable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["node"].as_str().unwrap(),
                (k["reason"].as_str().unwrap(), k["detail"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(kept.len() + removed.len(), 6, "every node accounted for");
    assert_eq!(kept[web[0].as_str()].0, "NotUnderutilized");
    assert_eq!(kept[web[3].as_str()].0, "BlockedByPod");
    assert!(
        kept[web[3].as_str()]
            .1
            .starts_with("NotReplicated: default/scratchpad")
    );
    assert!(
        kept[web[4].as_str()]
            .1
            .starts_with("NotSafeToEvictAnnotation: default/pinned")
    );
    assert_eq!(kept[keep.as_str()].0, "ScaleDownDisabledAnnotation");

    // A lower threshold keeps the light node (300m of 1930m is 16%); scale-down off keeps them all.
    let result = simulate_json(
        provider.grpc,
        &snapshot,
        &["--scale-down-utilization-threshold", "0.1"],
    );
    assert_eq!(result["scaleDown"].as_array().unwrap().len(), 1);
    assert_eq!(result["scaleDown"][0]["node"], web[1].as_str());
    let result = simulate_json(provider.grpc, &snapshot, &["--scale-down-enabled", "false"]);
    assert!(result["scaleDown"].as_array().unwrap().is_empty());
    // Bad thresholds are refused, naming the flag.
    let output = simulate(
        provider.grpc,
        &dir.path().join("scenario.yaml"),
        &["--scale-down-utilization-threshold", "1.5"],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--scale-down-utilization-threshold")
            && stderr.contains("not between 0 and 1"),
        "{stderr}"
    );
}

/// The README's scale-down example: the built-in scenario and tests/data/scaledown.yaml, printed as the
/// README shows it.
#[test]
fn the_readmes_scale_down_example_prints_what_the_readme_shows() {
    let provider = Binary::start(&[]);
    let snapshot = "tests/data/scaledown.yaml";
    readme_shows(provider.grpc, snapshot, &[], "Scale-down");
}

/// Headroom through `--headroom-config`: room found on the nodes there is, the rest scaled up for, and the
/// room it holds keeps a node from being removed.
#[test]
fn simulate_keeps_headroom_and_reports_it() {
    let provider = Binary::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("headroom.yaml");
    std::fs::write(
        &config,
        "headroom:\n  - {name: buffer, nodeGroup: general, pods: 5, shape: {cpu: '1', memory: 2Gi}}\n",
    )
    .unwrap();
    let snapshot: Value = serde_norway::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/scaledown.yaml"
        ))
        .unwrap(),
    )
    .unwrap();
    let result = simulate_json(
        provider.grpc,
        &snapshot,
        &["--headroom-config", config.to_str().unwrap()],
    );
    // One 1-CPU pod fits beside the pods of each m5.large (1930m); three more need three more nodes.
    assert_eq!(
        result["headroom"],
        json!([{"policy": "buffer", "nodeGroup": "general", "shape": "1/2Gi", "reserved": 5,
                "placed": 2, "scaleUp": 3, "unmet": 0}]),
        "{result:#}"
    );
    assert_eq!(scale_ups(&result), [("general".to_string(), 3)]);
    // Without headroom the second node was removable; the room it holds now keeps it.
    assert!(
        result["scaleDown"].as_array().unwrap().is_empty(),
        "{result:#}"
    );

    std::fs::write(&config, "headroom:\n  - {name: bad, percent: 300}\n").unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let output = simulate(
        provider.grpc,
        &path,
        &["--headroom-config", config.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("headroom.yaml: policy bad: percent must be between 0 and 100"),
        "{stderr}"
    );
}
