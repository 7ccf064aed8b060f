//! Consolidation (`--consolidation replace`): what `simulate` says it would replace and why it leaves the
//! rest (the real binaries over snapshots made here); the planner's guarantees over random clusters; and
//! replacements carried out over the cluster simulator, where the new node must be Ready before anything is
//! evicted, a node that never turns Ready is given up, and a week costs no more than without consolidation.

mod common;
#[path = "common/saved_seeds.rs"]
mod saved_seeds;

use common::Binary;
use common::cluster::*;
use common::simulated::{owned, simulated};
use serde_json::{Value, json};

/// The nodes of `group` in the snapshot, named `<prefix>-0`, `<prefix>-1`, ...
async fn named(provider: &Binary, group: &str, prefix: &str) -> Vec<Value> {
    let mut nodes = nodes_of(provider.grpc, &[group]).await;
    for (i, node) in nodes.iter_mut().enumerate() {
        let name = format!("{prefix}-{i}");
        node["metadata"]["name"] = json!(name);
        node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
    }
    nodes
}

/// `count` running pods of `app` on `node`, `cpu` each.
fn on(node: &str, app: &str, count: usize, cpu: &str) -> Vec<Value> {
    (0..count)
        .map(|i| running(node, &format!("{app}-{i}"), app, cpu, "256Mi"))
        .collect()
}

fn annotated(mut pod: Value, key: &str, value: &str) -> Value {
    pod["metadata"]["annotations"] = json!({ key: value });
    pod
}

/// `notConsolidated` as node -> (reason, detail).
fn not_consolidated(result: &Value) -> std::collections::BTreeMap<String, (String, String)> {
    result["notConsolidated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let s = |k: &str| n[k].as_str().unwrap().to_string();
            (s("node"), (s("reason"), s("detail")))
        })
        .collect()
}

const MERGE: &str = r#"
cluster: merge
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 6, capacityType: ON_DEMAND}
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 1, capacityType: SPOT}
  - {name: big-spot, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: SPOT}
"#;

/// Six on-demand m5.large nodes ($0.096/h), each with 1050m of pods (54%: above scale-down's threshold, so
/// scale-down keeps them all), and a spot m5.large ($0.0336/h) as busy. Three on-demand nodes fit on one
/// spot m5.xlarge ($0.0672/h); the other three each carry something consolidation must respect.
#[tokio::test]
async fn simulate_merges_nodes_onto_one_cheaper_node_and_says_why_the_others_stay() {
    let (provider, _dir) = Binary::on_scenario(MERGE);
    let mut items = named(&provider, "ondemand", "od").await;
    items.extend(named(&provider, "spot", "sp").await);
    for n in 0..3 {
        items.extend(on(&format!("od-{n}"), &format!("web{n}"), 3, "350m"));
    }
    let mut pinned = on("od-3", "keep", 3, "350m");
    pinned[0] = annotated(pinned[0].clone(), "karpenter.sh/do-not-disrupt", "true");
    let mut unsafe_pod = on("od-5", "local", 3, "350m");
    unsafe_pod[1] = annotated(
        unsafe_pod[1].clone(),
        "cluster-autoscaler.kubernetes.io/safe-to-evict",
        "false",
    );
    items.extend(pinned);
    items.extend(on("od-4", "quiet", 3, "350m"));
    items.extend(unsafe_pod);
    items.extend(on("sp-0", "cheap", 3, "350m"));
    items[4]["metadata"]["annotations"] =
        json!({"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"});
    assert_eq!(items[4]["metadata"]["name"], "od-4");
    let snapshot = list(items);

    // Off (the default): nothing is replaced, and nothing is said about it.
    let off = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(off["consolidation"], json!([]), "{off:#}");
    assert_eq!(off["notConsolidated"], json!([]), "{off:#}");
    assert_eq!(
        off["scaleDown"],
        json!([]),
        "54% is above the threshold: {off:#}"
    );

    let result = simulate_json(provider.grpc, &snapshot, &["--consolidation", "replace"]);
    let plan = result["consolidation"].as_array().unwrap();
    assert_eq!(plan.len(), 1, "{result:#}");
    let c = &plan[0];
    assert_eq!(c["nodes"], json!(["od-0", "od-1", "od-2"]), "{c:#}");
    assert_eq!(
        c["fromNodeGroups"],
        json!(["ondemand", "ondemand", "ondemand"])
    );
    assert_eq!(c["nodeGroup"], "big-spot");
    assert_eq!(c["instanceType"], "m5.xlarge");
    assert_eq!(c["pods"].as_array().unwrap().len(), 9);
    let price = |k: &str| c[k].as_f64().unwrap();
    assert!(
        (price("pricePerHourBefore") - 3.0 * 0.096).abs() < 1e-9,
        "{c:#}"
    );
    assert!(
        (price("pricePerHourAfter") - 0.192 * 0.35).abs() < 1e-9,
        "{c:#}"
    );
    assert!(
        (price("savingPerHour") - (0.288 - 0.0672)).abs() < 1e-9,
        "{c:#}"
    );

    let not = not_consolidated(&result);
    let (reason, detail) = &not["od-3"];
    assert_eq!(reason, "BlockedByPod");
    assert!(detail.contains("karpenter.sh/do-not-disrupt"), "{detail}");
    assert_eq!(not["od-4"].0, "ScaleDownDisabledAnnotation");
    let (reason, detail) = &not["od-5"];
    assert_eq!(reason, "BlockedByPod");
    assert!(detail.contains("safe-to-evict"), "{detail}");
    let (reason, detail) = &not["sp-0"];
    assert_eq!(reason, "NoCheaperFit", "{detail}");
    assert_eq!(not.len(), 4, "{not:#?}");

    // The table says the same for people.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let table = simulate(provider.grpc, &path, &["--consolidation", "replace"]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("od-0, od-1, od-2 (ondemand, ondemand, ondemand) -> a new big-spot node (m5.xlarge): $0.2880/h -> $0.0672/h, saves $0.2208/h"),
        "{table}"
    );
    assert!(
        table.contains("od-3 (ondemand): BlockedByPod: DoNotDisrupt"),
        "{table}"
    );
}

const SINGLE: &str = r#"
cluster: single
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 2, capacityType: ON_DEMAND}
  - {name: ondemand-b, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: ON_DEMAND}
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: SPOT}
"#;

/// Two on-demand m5.large nodes too full to merge (1050m and 1400m of 1930m); each fits on a spot m5.large of
/// its own, 65% cheaper. Another group of the same offering is never a replacement; the thresholds decide.
#[tokio::test]
async fn simulate_replaces_single_nodes_only_when_the_saving_meets_both_thresholds() {
    let (provider, _dir) = Binary::on_scenario(SINGLE);
    let mut items = named(&provider, "ondemand", "od").await;
    items.extend(on("od-0", "a", 3, "350m"));
    items.extend(on("od-1", "b", 2, "700m"));
    let snapshot = list(items);

    let result = simulate_json(provider.grpc, &snapshot, &["--consolidation", "replace"]);
    let plan = result["consolidation"].as_array().unwrap();
    let replaced: Vec<(&Value, &Value)> = plan
        .iter()
        .map(|c| (&c["nodes"], &c["nodeGroup"]))
        .collect();
    assert_eq!(
        replaced,
        [
            (&json!(["od-0"]), &json!("spot")),
            (&json!(["od-1"]), &json!("spot"))
        ],
        "{result:#}"
    );
    assert_eq!(plan[1]["pods"], json!(["default/b-0", "default/b-1"]));
    assert!((plan[0]["savingPerHour"].as_f64().unwrap() - 0.096 * 0.65).abs() < 1e-9);

    let with_threshold = |threshold: &str| {
        let args = [
            "--consolidation",
            "replace",
            "--consolidation-min-saving",
            threshold,
        ];
        simulate_json(provider.grpc, &snapshot, &args)
    };
    // 65% is under 70%; $0.0624/h is under $0.07/h: either threshold alone keeps both nodes.
    for threshold in ["70%", "$0.07", "10%,0.07", "70%,0"] {
        let result = with_threshold(threshold);
        assert_eq!(
            result["consolidation"],
            json!([]),
            "{threshold}: {result:#}"
        );
        let not = not_consolidated(&result);
        for node in ["od-0", "od-1"] {
            let (reason, detail) = &not[node];
            assert_eq!(reason, "SavingBelowThreshold", "{threshold}: {detail}");
            assert!(detail.contains("spot (m5.large) at $0.0336/h"), "{detail}");
        }
    }
    // Under both, it goes ahead.
    let result = with_threshold("60%,$0.06");
    assert_eq!(result["consolidation"].as_array().unwrap().len(), 2);

    // The new node runs beside the old one until it goes: at --max-nodes-total nothing is launched, and the
    // nodes say which groups were not tried and why.
    let args = ["--consolidation", "replace", "--max-nodes-total", "2"];
    let result = simulate_json(provider.grpc, &snapshot, &args);
    assert_eq!(result["consolidation"], json!([]), "{result:#}");
    let (reason, detail) = &not_consolidated(&result)["od-0"];
    assert_eq!(reason, "NoCheaperFit", "{detail}");
    assert!(
        detail.contains("spot: max total nodes in cluster reached (--max-nodes-total)"),
        "{detail}"
    );
}

#[tokio::test]
async fn bad_consolidation_flags_are_refused_with_what_is_wrong() {
    let (provider, _dir) = Binary::on_scenario(SINGLE);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, list(Vec::new()).to_string()).unwrap();
    for (args, says) in [
        (vec!["--consolidation", "sometimes"], "sometimes"),
        (
            vec!["--consolidation-min-saving", "120%"],
            "between 0% and 100%",
        ),
        (vec!["--consolidation-min-saving", "-1"], "at least 0"),
        (
            vec!["--consolidation-min-saving", "20%,30%"],
            "one percentage",
        ),
        (
            vec!["--consolidation-min-saving", "cheap"],
            "expected a percentage",
        ),
        (vec!["--max-consolidation-parallelism", "0"], "0"),
        (vec!["--consolidation-stable-time", "soon"], "soon"),
        (
            vec![
                "--consolidation",
                "replace",
                "--scale-down-enabled",
                "false",
            ],
            "needs --scale-down-enabled=true",
        ),
    ] {
        let output = simulate(provider.grpc, &path, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted");
        let flag = args[0];
        assert!(
            stderr.contains(flag) && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}

use ekscale::autoscaler::ClusterSource;
use ekscale::autoscaler::ConsolidationMode as Mode;
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::model::{NODE_GROUP_LABEL, Node, Pod, Resources, TO_BE_DELETED_TAINT};
use ekscale::simulated_cluster::Broken;
use ekscale::simulated_cluster::SimulatedCluster;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Acting, with consolidation replacing nodes stable for two minutes.
fn replacing(config: &ProviderConfig, cluster: &Arc<SimulatedCluster>, mode: Mode) -> RunOnce {
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        ..Settings::default()
    };
    settings.consolidation.mode = mode;
    settings.consolidation.stable_time = Duration::from_secs(120);
    settings.max_node_provision_time = Duration::from_secs(180);
    RunOnce::new(ProviderClient::new(config).unwrap(), settings).acting_on(cluster.clone())
}

fn group_of(node: &Node) -> &str {
    node.labels.get(NODE_GROUP_LABEL).map_or("", String::as_str)
}

fn names<P: std::borrow::Borrow<Pod>>(pods: &[P]) -> BTreeSet<String> {
    pods.iter().map(|p| p.borrow().key()).collect()
}

/// The replacements' states this loop, as (state, nodes).
fn states(status: &Status) -> Vec<(String, Vec<String>)> {
    (status.scale_down.replacements.iter())
        .map(|r| (r.state.clone(), r.nodes.clone()))
        .collect()
}

const ONE_ON_DEMAND: &str = "
cluster: replace
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 3, desiredSize: 1, capacityType: ON_DEMAND}
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 3, desiredSize: 0, capacityType: SPOT, provisioningDelay: 60s}
";

/// One on-demand m5.large runs three 400m pods (62%: scale-down keeps it). A spot m5.large holds them for
/// a third of the price: consolidation launches it, and only once it is Ready does the old node get its
/// taint and lose a pod; the pods end on the new node, none lost, and the new node is left alone after.
#[tokio::test]
async fn a_node_is_replaced_by_a_cheaper_one_that_is_ready_before_any_pod_is_evicted() {
    let (server, config, cluster) = simulated(ONE_ON_DEMAND).await;
    let clock = server.sim().clock().clone();
    let mut once = replacing(&config, &cluster, Mode::Replace);
    cluster.create_pods(owned("api", 3, 400, 512 << 20));
    cluster.create_pdb(ekscale::simulated_cluster::Budget {
        namespace: "default".into(),
        name: "api".into(),
        selector: ekscale::model::LabelSelector {
            match_labels: [("app".to_string(), "api".to_string())].into(),
            expressions: vec![],
        },
        max_unavailable: 1,
    });
    let first = cluster.view().await.unwrap();
    let old = first.nodes[0].name.clone();
    let expected = names(&first.pods);
    assert!(
        first
            .pods
            .iter()
            .all(|p| p.node_name.as_deref() == Some(old.as_str()))
    );

    let (mut launches, mut launched_at, mut seen) = (Vec::new(), None, Vec::new());
    let mut evicting_seen = false;
    let metrics = ekscale::autoscaler::control::AutoscalerMetrics::default();
    for step in 0..120u64 {
        let view = cluster.view().await.unwrap();
        assert_eq!(names(&view.pods), expected, "step {step}: a pod was lost");
        let on_old = (view.pods.iter())
            .filter(|p| p.node_name.as_deref() == Some(old.as_str()))
            .count();
        let tainted = (view.nodes.iter()).any(|n| n.name == old && n.tainted(TO_BE_DELETED_TAINT));
        let gone = !view.nodes.iter().any(|n| n.name == old);
        if tainted || on_old < 3 {
            evicting_seen = true;
            let ready_spot = view.nodes.iter().any(|n| group_of(n) == "spot" && n.ready);
            assert!(
                ready_spot || gone,
                "step {step}: {old} is drained with no Ready spot node: {:#?}",
                view.nodes
            );
        }
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "step {step}: {status:#?}");
        metrics.observe_loop(
            &view,
            &status,
            ekscale::autoscaler::control::Acting::Act,
            cluster.now(),
        );
        for c in &status.scale_down.consolidation {
            launches.push((c.nodes.clone(), c.node_group.clone(), c.error.clone()));
            launched_at.get_or_insert(step * 10);
        }
        seen.extend(states(&status));
        if gone && view.pods.iter().all(|p| p.node_name.is_some()) {
            break;
        }
        clock.advance(Duration::from_secs(10));
    }
    assert_eq!(launches, [(vec![old.clone()], "spot".into(), None)]);
    assert!(
        launched_at.unwrap() >= 120,
        "replaced before --consolidation-stable-time: {launched_at:?}"
    );
    assert!(evicting_seen, "the old node was never drained");
    let text = metrics.encode();
    assert!(
        text.contains("ekscale_consolidations_total{kind=\"single\"} 1\n"),
        "{text}"
    );
    let saving: f64 = (text.lines())
        .find_map(|l| l.strip_prefix("ekscale_consolidation_savings_dollars_per_hour "))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert!((saving - 0.096 * 0.65).abs() < 1e-9, "{saving}");
    assert!(
        text.contains("ekscale_scaled_down_nodes_total{reason=\"consolidated\"} 1\n"),
        "{text}"
    );
    let order: Vec<&str> = seen.iter().map(|(s, _)| s.as_str()).collect();
    let first_of = |state: &str| order.iter().position(|s| *s == state).unwrap();
    assert!(
        first_of("launching") < first_of("replacing") && first_of("replacing") < first_of("done"),
        "{seen:?}"
    );

    let view = cluster.view().await.unwrap();
    let spot: Vec<&Arc<Node>> = view
        .nodes
        .iter()
        .filter(|n| group_of(n) == "spot")
        .collect();
    assert_eq!(view.nodes.len(), 1, "{:#?}", view.nodes);
    assert_eq!(spot.len(), 1);
    assert!(
        view.pods
            .iter()
            .all(|p| p.node_name.as_deref() == Some(spot[0].name.as_str()))
    );
    let client = ProviderClient::new(&config).unwrap();
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("ondemand").await.unwrap(), 0);
    assert_eq!(client.target_size("spot").await.unwrap(), 1);

    // The new node is left alone: it says so, and nothing more is launched.
    for _ in 0..20 {
        clock.advance(Duration::from_secs(10));
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.scale_down.consolidation.is_empty(), "{status:#?}");
        let spot = &status.scale_down.not_consolidated[0];
        assert_eq!(spot.reason, "ConsolidatedRecently", "{spot:?}");
    }
}

/// The spot node registers but never turns Ready: after --max-node-provision-time the replacement is given
/// up, its instance removed and spot backed off; the old node never had a taint and never lost a pod.
#[tokio::test]
async fn a_replacement_whose_node_never_turns_ready_is_abandoned_and_its_group_backed_off() {
    let (server, config, cluster) = simulated(ONE_ON_DEMAND).await;
    let clock = server.sim().clock().clone();
    let mut once = replacing(&config, &cluster, Mode::Replace);
    cluster.break_nodes("spot", Broken::NeverReady);
    cluster.create_pods(owned("api", 3, 400, 512 << 20));
    let first = cluster.view().await.unwrap();
    let old = first.nodes[0].name.clone();

    let (mut launches, mut abandoned, mut backed_off) = (0, None, 0);
    // Provisioning (60 s), the stable time (2 min) and the provision time (3 min) take about 30 loops; the
    // backoff (5 min) 30 more.
    for step in 0..55u64 {
        let view = cluster.view().await.unwrap();
        let old_node = view
            .nodes
            .iter()
            .find(|n| n.name == old)
            .expect("the old node stays");
        assert!(
            !old_node.tainted(TO_BE_DELETED_TAINT),
            "step {step}: tainted"
        );
        let on_old = (view.pods.iter())
            .filter(|p| p.node_name.as_deref() == Some(old.as_str()))
            .count();
        assert_eq!(on_old, 3, "step {step}: a pod left the old node");
        let status = once.run(&view, cluster.now()).await.unwrap();
        launches += status.scale_down.consolidation.len();
        for r in &status.scale_down.replacements {
            if r.state == "abandoned" {
                assert!(
                    r.detail.contains("not Ready within 3m")
                        && r.detail.contains("instance was removed"),
                    "{r:?}"
                );
                abandoned.get_or_insert(step);
            }
        }
        let spot = status.node_groups.iter().find(|g| g.id == "spot").unwrap();
        if abandoned.is_some_and(|at| at < step) {
            backed_off += 1;
            let skipped = spot.skipped.as_deref().unwrap_or_default();
            assert!(skipped.contains("backoff"), "step {step}: {spot:?}");
            assert_eq!(
                spot.target_size, 0,
                "step {step}: the instance was not removed"
            );
        }
        clock.advance(Duration::from_secs(10));
    }
    assert!(
        abandoned.is_some_and(|at| at > 25),
        "abandoned at {abandoned:?}"
    );
    assert!(backed_off >= 20, "backed off for {backed_off} loops");
    assert_eq!(launches, 1, "spot was asked again while backed off");
}

/// The planner alone, over random clusters of four offerings (on-demand and spot, m5.large-like and
/// m5.xlarge-like nodes) with pods of three apps, each app under a PodDisruptionBudget.
mod planner {
    use super::*;
    use ekscale::autoscaler::MinSaving;
    use ekscale::autoscaler::scaledown::consolidation::{self, Ask, Plan, Target};
    use ekscale::autoscaler::scaledown::{GroupInfo, Input};
    use ekscale::autoscaler::scaledown::{PdbBudget, Rules};
    use ekscale::model::{
        CAPACITY_TYPE_LABEL, GroupOptions, HOSTNAME_LABEL, INSTANCE_TYPE_LABEL, LabelProjection,
        LabelSelector, Labels, Pdb, Phase,
    };
    use ekscale::simulator::{PlaceKind, build_places, pods_by_node};
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};
    use std::time::SystemTime;

    const GIB: u64 = 1 << 30;
    /// (id, instance type, capacity type, millicores, price per hour).
    const GROUPS: [(&str, &str, &str, u64, f64); 4] = [
        ("od-large", "m5.large", "ON_DEMAND", 2000, 0.096),
        ("spot-large", "m5.large", "SPOT", 2000, 0.0336),
        ("od-xlarge", "m5.xlarge", "ON_DEMAND", 4000, 0.192),
        ("spot-xlarge", "m5.xlarge", "SPOT", 4000, 0.0672),
    ];

    fn node(name: &str, g: usize) -> Node {
        let (_, instance_type, capacity, cpu, _) = GROUPS[g];
        let resources = Resources {
            cpu_millis: cpu,
            memory_bytes: cpu / 1000 * 4 * GIB,
            pods: 110,
            ..Default::default()
        };
        Node {
            name: name.into(),
            provider_id: format!("aws:///us-east-1a/i-{name}"),
            labels: Labels::from([
                (HOSTNAME_LABEL.to_string(), name.to_string()),
                (INSTANCE_TYPE_LABEL.to_string(), instance_type.to_string()),
                (CAPACITY_TYPE_LABEL.to_string(), capacity.to_string()),
            ]),
            capacity: resources,
            allocatable: resources,
            ready: true,
            ..Default::default()
        }
    }

    /// A cluster: per node its group and its pods as (hundreds of millicores, app).
    type Shape = Vec<(usize, Vec<(u64, usize)>)>;

    fn planned(
        shape: &Shape,
        allowed: &[i32],
        min_saving: MinSaving,
    ) -> (Plan, Vec<Arc<Node>>, Vec<Pod>, Vec<Pdb>) {
        let mut nodes = Vec::new();
        let mut node_group = Vec::new();
        let mut pods = Vec::new();
        for (n, (g, on)) in shape.iter().enumerate() {
            let name = format!("n{n}");
            nodes.push(Arc::new(node(&name, *g)));
            node_group.push(Some(*g));
            for (i, &(cpu, app)) in on.iter().enumerate() {
                let mut pod = owned(&format!("app{app}"), 1, cpu * 100, 512 << 20).remove(0);
                pod.name = format!("{name}-{i}");
                pod.node_name = Some(name.as_str().into());
                pod.phase = Phase::Running;
                pod.unschedulable = false;
                pods.push(pod);
            }
        }
        let pdbs: Vec<Pdb> = (allowed.iter().enumerate())
            .map(|(app, &allowed)| Pdb {
                namespace: "default".into(),
                name: format!("app{app}"),
                selector: Some(LabelSelector {
                    match_labels: [("app".to_string(), format!("app{app}"))].into(),
                    expressions: vec![],
                }),
                disruptions_allowed: allowed,
            })
            .collect();
        let groups: Vec<GroupInfo> = (GROUPS.iter().enumerate())
            .map(|(g, (id, ..))| GroupInfo {
                id: id.to_string(),
                min_size: 0,
                target: node_group.iter().filter(|x| **x == Some(g)).count() as i32,
                options: GroupOptions::default(),
                deleting: 0,
                updating: false,
            })
            .collect();
        let bound: Vec<usize> = (0..pods.len()).collect();
        let on_node = pods_by_node(&nodes, &pods, &bound);
        let projection = LabelProjection::All;
        let (mut topology, mut places) =
            build_places(&nodes, &node_group, &pods, &on_node, &[], &projection);
        let templates: Vec<_> = (0..GROUPS.len())
            .map(|g| {
                let template = Arc::new(node(&format!("template-{g}"), g));
                topology.place(template, Some(g), PlaceKind::Upcoming)
            })
            .collect();
        let targets: Vec<Target> = (templates.iter().enumerate())
            .map(|(g, template)| Target {
                group: g,
                template,
                price: GROUPS[g].4,
            })
            .collect();
        let prices: Vec<Option<f64>> = GROUPS.iter().map(|g| Some(g.4)).collect();
        let (pods_of, now) = ((&pods).into(), SystemTime::now());
        let input = Input {
            pdbs: &pdbs,
            projection: &projection,
            ..Input::new(&nodes, pods_of, &node_group, &groups, &on_node, now)
        };
        let rules = Rules::default();
        let ask = Ask {
            rules: &rules,
            min_saving,
            targets: &targets,
            prices: &prices,
            left: &HashMap::new(),
            left_out: &[],
            room: groups.iter().map(|g| i64::from(g.target)).collect(),
            limit: usize::MAX,
            over_limit: (consolidation::Reason::ConsolidationBudgetReached, ""),
        };
        let mut budget = PdbBudget::new(&pdbs);
        let plan = consolidation::plan(&input, &ask, &mut budget, &mut topology, &mut places);
        assert_eq!(
            places.len(),
            nodes.len(),
            "the planner's new nodes are left in the world"
        );
        (plan, nodes.clone(), pods.clone(), pdbs.clone())
    }

    fn shapes() -> impl Strategy<Value = Shape> {
        let pods = prop::collection::vec((1u64..12, 0usize..3), 0..7);
        prop::collection::vec((0usize..4, pods), 1..9)
    }

    /// The nodes and their pods, and what each PodDisruptionBudget allows.
    fn plan_cases() -> impl Strategy<Value = (Shape, Vec<i32>)> {
        (shapes(), prop::collection::vec(0i32..3, 3))
    }

    /// Cases proptest saves for this file (none so far) replay into the strategy they came from.
    #[test]
    fn the_saved_cases_replay() {
        let names = ["shape", "allowed"];
        let replayed = super::saved_seeds::replay(file!(), &names, plan_cases(), &[]);
        assert_eq!(replayed, super::saved_seeds::count(file!()));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Every pod of a replaced node has a place on its one new node; no node is drained into a budget
        /// that allows no more disruptions; every replacement saves at least the threshold; no node goes
        /// twice; no node is replaced by its own offering.
        #[test]
        fn a_plan_places_every_pod_respects_budgets_and_saves_enough((shape, allowed) in plan_cases()) {
            let min_saving = MinSaving::default();
            let (plan, nodes, pods, pdbs) = planned(&shape, &allowed, min_saving);
            let mut remaining: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
            let mut gone = HashSet::new();
            for r in &plan.replacements {
                let (_, instance_type, capacity, cpu, price) = GROUPS[r.group];
                // Its pods: every pod of its nodes moves, and together they fit on one new node.
                let mut on_them: Vec<usize> = (pods.iter().enumerate())
                    .filter(|(_, p)| r.nodes.iter().any(|&n| p.node_name.as_deref() == Some(&nodes[n].name)))
                    .map(|(i, _)| i)
                    .collect();
                let mut moving = r.moving.clone();
                on_them.sort();
                moving.sort();
                prop_assert_eq!(&moving, &on_them);
                let used: u64 = moving.iter().map(|&p| pods[p].demand.cpu_millis).sum();
                let memory: u64 = moving.iter().map(|&p| pods[p].demand.memory_bytes).sum();
                prop_assert!(used <= cpu && memory <= cpu / 1000 * 4 * GIB, "{used}m on {cpu}m");
                // Budgets: each node is drained only while every budget its pods need allows one more.
                for &n in &r.nodes {
                    prop_assert!(gone.insert(n), "n{} is in two replacements", n);
                    let here: Vec<&Pod> = (pods.iter())
                        .filter(|p| p.node_name.as_deref() == Some(&nodes[n].name))
                        .collect();
                    for pod in &here {
                        let b = pdbs.iter().position(|b| b.covers(&pod.namespace, &pod.labels)).unwrap();
                        prop_assert!(remaining[b] >= 1, "{} drained into an exhausted budget", pod.key());
                    }
                    for pod in &here {
                        let b = pdbs.iter().position(|b| b.covers(&pod.namespace, &pod.labels)).unwrap();
                        remaining[b] -= 1;
                    }
                }
                // Prices: before is what the nodes cost, after what the new one costs, and it saves enough.
                let before: f64 = r.nodes.iter().map(|&n| GROUPS[shape[n].0].4).sum();
                prop_assert!((r.before - before).abs() < 1e-9);
                prop_assert!((r.after - price).abs() < 1e-9);
                prop_assert!(r.saving() >= 0.2 * before - 1e-12 && r.saving() >= 0.01 - 1e-12);
                if let [n] = r.nodes[..] {
                    let own = &nodes[n].labels;
                    prop_assert!(
                        own[INSTANCE_TYPE_LABEL] != instance_type || own[CAPACITY_TYPE_LABEL] != capacity,
                        "n{} replaced by its own offering", n
                    );
                }
            }
            // Every node is either replaced or said why not, once.
            let mut said: Vec<usize> = plan.not.iter().map(|n| n.node).collect();
            said.extend(gone.iter().copied());
            said.sort();
            prop_assert_eq!(said, (0..nodes.len()).collect::<Vec<_>>());
        }
    }

    /// A cluster where the answer is known: two on-demand m5.xlarge (1500m each) merge onto one spot
    /// m5.xlarge while app0's budget allows both its pods to go; with room for one, the first node goes alone
    /// (onto a spot m5.large) and the second is kept for the budget; with a 90% threshold nothing goes.
    #[test]
    fn two_half_full_nodes_merge_and_a_high_threshold_keeps_them() {
        let shape: Shape = vec![(2, vec![(10, 0), (5, 1)]), (2, vec![(10, 2), (5, 0)])];
        let replaced = |plan: &Plan| -> Vec<(Vec<usize>, usize)> {
            (plan.replacements.iter())
                .map(|r| (r.nodes.clone(), r.group))
                .collect()
        };
        let (plan, ..) = planned(&shape, &[2, 1, 1], MinSaving::default());
        assert_eq!(replaced(&plan), [(vec![0, 1], 3)], "{plan:#?}");
        let (plan, ..) = planned(&shape, &[1, 1, 1], MinSaving::default());
        assert_eq!(replaced(&plan), [(vec![0], 1)], "{plan:#?}");
        let detail = &plan.not[0].detail;
        assert!(detail.contains("NotEnoughPdb"), "{detail}");
        let (plan, ..) = planned(
            &shape,
            &[2, 1, 1],
            MinSaving {
                fraction: 0.9,
                per_hour: 0.0,
            },
        );
        assert!(plan.replacements.is_empty(), "{plan:#?}");
        assert!(
            plan.not
                .iter()
                .all(|n| n.reason.to_string() == "SavingBelowThreshold"),
            "{plan:#?}"
        );
    }
}

const WEEK: &str = "
cluster: week
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b], minSize: 1, maxSize: 12, desiredSize: 1, provisioningDelay: 90s}
  - {name: spot, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 12, desiredSize: 0, capacityType: SPOT, provisioningDelay: 2m}
  - {name: large, instanceType: m5.2xlarge, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 0, provisioningDelay: 2m}
";

/// What a simulated week came to.
#[derive(Debug, Default)]
struct Week {
    /// Dollars per day (the nodes' prices over the time they ran).
    cost: Vec<f64>,
    launches: usize,
    done: usize,
    /// Why replacements were given up, or failed.
    abandoned: Vec<String>,
    failed: Vec<String>,
}

/// A week of random workloads (the same for a seed whatever the mode), a loop every five minutes. Checks as
/// it goes that no pod is lost, and that no node is in more than one replacement that goes ahead a day (as an
/// old node drained, or as the new node).
async fn week(seed: u64, days: u64, mode: Mode) -> Week {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let (server, config, cluster) = simulated(WEEK).await;
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        ..Settings::default()
    };
    settings.consolidation.mode = mode;
    // Ties between on-demand and spot (one shape) go to on-demand, as a cautious setup would have it, rather
    // than at random: both runs must make the same choices for their days to compare.
    let dir = tempfile::tempdir().unwrap();
    let priorities = dir.path().join("priorities.yaml");
    std::fs::write(&priorities, "10: [ondemand]\n5: [large]\n1: [spot]\n").unwrap();
    settings
        .expander
        .chain
        .push(ekscale::autoscaler::scaleup::Strategy::Priority);
    settings.expander.priorities = Some(priorities);
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client, settings).acting_on(cluster.clone());
    let sim = server.shared_sim();
    let clock = sim.clock().clone();
    use ekscale::cloud::NodeGroupBackend;
    let price: std::collections::HashMap<String, f64> = (sim.node_groups().iter())
        .map(|g| (g.id.clone(), g.price_per_hour.unwrap()))
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut apps: Vec<String> = Vec::new();
    let mut result = Week::default();
    // When each node was last in a replacement (as an old node or as the new one), by name.
    let mut last_replaced: std::collections::HashMap<String, u64> = Default::default();
    let step = 300;
    for minute in 0..days * 24 * 60 / (step / 60) {
        let now = minute * step;
        if rng.random_bool(0.1) {
            if rng.random_range(0..10) < 5 {
                let app = format!("app{minute}");
                let mut pods = owned(
                    &app,
                    rng.random_range(1..8),
                    rng.random_range(1..16) * 100,
                    512 << 20,
                );
                for pod in &mut pods {
                    pod.demand.memory_bytes = rng.random_range(1..24) << 28;
                }
                cluster.create_pods(pods);
                apps.push(app);
            } else if !apps.is_empty() {
                let app = apps.swap_remove(rng.random_range(0..apps.len()));
                let prefix = format!("{app}-");
                cluster.delete_pods(|p| p.name.starts_with(&prefix));
            }
        }
        let expected = names(&cluster.pods());
        let view = cluster.view().await.unwrap();
        assert_eq!(
            names(&view.pods),
            expected,
            "seed {seed}, {mode:?}, minute {minute}: a pod was lost"
        );
        let day = (now / 86_400) as usize;
        if result.cost.len() <= day {
            result.cost.push(0.0);
        }
        let hourly: f64 = view.nodes.iter().map(|n| price[group_of(n)]).sum();
        result.cost[day] += hourly * step as f64 / 3600.0;
        let status = once.run(&view, cluster.now()).await.unwrap();
        result.launches += status.scale_down.consolidation.len();
        for r in &status.scale_down.replacements {
            match r.state.as_str() {
                "done" => result.done += 1,
                "abandoned" => result.abandoned.push(r.detail.clone()),
                "failed" => result.failed.push(r.detail.clone()),
                // A replacement goes ahead: its old nodes drain and its new node takes their pods.
                "replacing" => {
                    for node in r.nodes.iter().chain(&r.new_node) {
                        if let Some(&at) = last_replaced.get(node) {
                            assert!(
                                now - at >= 86_400,
                                "seed {seed}, minute {minute}: {node} in a second replacement {} s after \
                                 the first",
                                now - at
                            );
                        }
                        last_replaced.insert(node.clone(), now);
                    }
                }
                _ => {}
            }
        }
        clock.advance(Duration::from_secs(step));
    }
    result
}

/// The same seeded week with consolidation off and on: replacements happen, none fails, no node is in two a
/// day, and no day costs more with consolidation than without.
#[tokio::test]
async fn a_seeded_week_costs_no_more_on_any_day_with_consolidation() {
    let seed: u64 = std::env::var("EKSCALE_SOAK_SEED").map_or(11, |s| s.parse().unwrap());
    let days: u64 = std::env::var("EKSCALE_SOAK_DAYS").map_or(7, |s| s.parse().unwrap());
    let off = week(seed, days, Mode::Off).await;
    let on = week(seed, days, Mode::Replace).await;
    println!("seed {seed}: off {off:?}\n  on {on:?}");
    assert_eq!((off.launches, off.done), (0, 0));
    assert!(
        on.done >= 3,
        "the week replaced too little to prove anything: {on:?}"
    );
    assert!(on.failed.is_empty(), "{on:?}");
    // New pods may take the new node's room while it starts: then the old node stays, as it must.
    for why in &on.abandoned {
        assert!(why.starts_with("the pods no longer fit"), "{why}");
    }
    for (day, (off, on)) in off.cost.iter().zip(&on.cost).enumerate() {
        assert!(
            on <= off,
            "day {day}: ${on:.2} with consolidation, ${off:.2} without"
        );
    }
    let total = |w: &Week| w.cost.iter().sum::<f64>();
    assert!(
        total(&on) < total(&off),
        "{:.2} vs {:.2}",
        total(&on),
        total(&off)
    );
}

/// The spot pool is dry: the new node's instance cannot be created. The replacement is given up in the next
/// loop, not after the provision time; the placeholder goes, spot is backed off, the old node stays as it was.
#[tokio::test]
async fn a_replacement_into_a_dry_pool_is_abandoned_at_once() {
    let dry = ONE_ON_DEMAND.replace(
        "provisioningDelay: 60s}",
        "provisioningDelay: 60s, availableCapacity: 0}",
    );
    let (server, config, cluster) = simulated(&dry).await;
    let clock = server.sim().clock().clone();
    let mut once = replacing(&config, &cluster, Mode::Replace);
    cluster.create_pods(owned("api", 3, 400, 512 << 20));
    let mut launched = None;
    for step in 0..30u64 {
        let view = cluster.view().await.unwrap();
        assert!(view.nodes.iter().all(|n| !n.tainted(TO_BE_DELETED_TAINT)));
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "step {step}: {status:#?}");
        if !status.scale_down.consolidation.is_empty() {
            assert!(
                launched.is_none(),
                "step {step}: launched again: {status:#?}"
            );
            launched = Some(step);
        }
        if let Some(r) = status
            .scale_down
            .replacements
            .iter()
            .find(|r| r.state == "abandoned")
        {
            assert_eq!(Some(step - 1), launched, "abandoned late: {r:?}");
            assert!(
                r.detail.starts_with("the new node could not be launched"),
                "{r:?}"
            );
            assert!(
                r.detail.contains("placeholder-cannot-be-fulfilled"),
                "{r:?}"
            );
            let view = cluster.view().await.unwrap();
            let status = once.run(&view, cluster.now()).await.unwrap();
            let spot = status.node_groups.iter().find(|g| g.id == "spot").unwrap();
            assert!(
                spot.skipped
                    .as_deref()
                    .unwrap_or_default()
                    .contains("backoff"),
                "{spot:?}"
            );
            assert_eq!(spot.target_size, 0, "the placeholder stays: {spot:?}");
            assert!(status.scale_down.consolidation.is_empty());
            return;
        }
        clock.advance(Duration::from_secs(10));
    }
    panic!("never abandoned (launched at {launched:?})");
}

/// The README's consolidation example: the built-in scenario and tests/data/consolidation.yaml, printed as the
/// README shows it.
#[test]
fn the_readmes_consolidation_example_prints_what_the_readme_shows() {
    let provider = Binary::start(&[]);
    let snapshot = "tests/data/consolidation.yaml";
    let args = ["--consolidation", "replace"];
    let lines = readme_shows(provider.grpc, snapshot, &args, "\nConsolidation\n");
    assert_eq!(lines, 5);
}

/// A node is never replaced by its own offering, even where a group sells it for less (here an on-demand
/// m5.large at $0.05/h against $0.096/h): that saving is a pricing matter, not a reason to churn the node.
#[tokio::test]
async fn the_same_offering_is_never_a_replacement_even_when_cheaper() {
    let scenario = "
cluster: same
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 1, capacityType: ON_DEMAND}
  - {name: reserved, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: ON_DEMAND, pricePerHour: 0.05}
  - {name: big-spot, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: SPOT}
";
    let (provider, _dir) = Binary::on_scenario(scenario);
    let mut items = named(&provider, "ondemand", "od").await;
    items.extend(on("od-0", "a", 3, "350m"));
    let args = ["--consolidation", "replace"];
    // The spot m5.xlarge ($0.0672/h) is a different offering and saves 30%: it is the replacement.
    let result = simulate_json(provider.grpc, &list(items.clone()), &args);
    assert_eq!(
        result["consolidation"][0]["nodeGroup"], "big-spot",
        "{result:#}"
    );
    // With a 40% threshold the spot node saves too little; the reserved group would save 48%, but it sells the
    // node's own offering: nothing is replaced.
    let result = simulate_json(
        provider.grpc,
        &list(items),
        &[
            "--consolidation",
            "replace",
            "--consolidation-min-saving",
            "40%",
        ],
    );
    assert_eq!(result["consolidation"], json!([]), "{result:#}");
    let (reason, detail) = &not_consolidated(&result)["od-0"];
    assert_eq!(reason, "SavingBelowThreshold", "{detail}");
    assert!(detail.contains("big-spot (m5.xlarge)"), "{detail}");
}
