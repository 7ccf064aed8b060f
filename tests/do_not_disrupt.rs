//! Karpenter's `karpenter.sh/do-not-disrupt: "true"`. On a node it keeps the node from scale-down,
//! consolidation, expiry and drift; on a pod it holds an expiry's or a drift's drain until the group's
//! `terminationGracePeriod`, and for good without one (the node then waits, the pod named). Through
//! `simulate` over snapshots, each beside the same snapshot without the annotation, and through the loop
//! acting on the cluster simulator.

mod common;

use common::cluster::{list, nodes_of, running, simulate_json};
use common::simulated::{owned, simulated};
use common::{Binary, Server};
use ekscale::autoscaler::scaledown::{
    Actuator, Cause, DeletionKind, DeletionOrder, Outcome, Pacing, StepGround,
};
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{ClusterSource, DisruptionConfig, ProviderClient, RunOnce, Settings};
use ekscale::model::{NODE_GROUP_IMAGE_LABEL, Pod, TO_BE_DELETED_TAINT};
use ekscale::simulated_cluster::SimulatedCluster;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";

/// What a node annotated so is kept with.
const NODE_KEPT: &str = "annotated karpenter.sh/do-not-disrupt: \"true\"";

/// 36 days and 12 hours after the snapshots' nodes were made (`common::cluster::CREATED`): past 720h.
const NOW: &str = "2027-01-05T12:00:00Z";

/// One group of four m5.large nodes whose new nodes get ami-2.
const FOUR: &str = "
cluster: keep
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 4, image: ami-2}
";

/// The four nodes, the first busy with one 1.2-CPU pod, the other three empty.
async fn four(server: &Server) -> (Vec<String>, Vec<Value>) {
    let mut items = nodes_of(server.addr, &["general"]).await;
    let names: Vec<String> = (items.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    items.push(running(&names[0], "web-0", "web", "1200m", "2Gi"));
    (names, items)
}

fn annotate(item: &mut Value, value: &str) {
    item["metadata"]["annotations"] = json!({ DO_NOT_DISRUPT: value });
}

fn write(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("disruption.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn scaled_down(result: &Value) -> Vec<String> {
    (result["scaleDown"].as_array().into_iter().flatten())
        .map(|d| d["node"].as_str().unwrap().to_string())
        .collect()
}

/// The `list` entries about `node`, each as the values of `fields`.
fn about(result: &Value, list: &str, node: &str, fields: &[&str]) -> Vec<Vec<String>> {
    (result[list].as_array().into_iter().flatten())
        .filter(|e| e["node"] == node)
        .map(|e| {
            (fields.iter())
                .map(|f| e[*f].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_annotated_is_not_scaled_down() {
    let server = Server::start_with(FOUR, None).await;
    let (names, mut items) = four(&server).await;
    let result = simulate_json(server.addr, &list(items.clone()), &[]);
    assert_eq!(scaled_down(&result), names[1..], "{result:#}");
    // Only "true" keeps a node.
    annotate(&mut items[2], "false");
    let result = simulate_json(server.addr, &list(items.clone()), &[]);
    assert_eq!(scaled_down(&result), names[1..], "{result:#}");

    annotate(&mut items[2], "true");
    let result = simulate_json(server.addr, &list(items), &[]);
    assert_eq!(
        scaled_down(&result),
        [names[1].clone(), names[3].clone()],
        "{result:#}"
    );
    assert_eq!(
        about(&result, "unremovable", &names[2], &["reason", "detail"]),
        [["ScaleDownDisabledAnnotation", NODE_KEPT]]
    );
}

const MERGE: &str = r#"
cluster: merge
region: us-east-1
nodeGroups:
  - {name: ondemand, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 3, capacityType: ON_DEMAND}
  - {name: big-spot, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0, capacityType: SPOT}
"#;

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_annotated_is_not_consolidated() {
    // Three on-demand m5.large nodes, each with three 350m pods (54%: scale-down keeps them), that one spot
    // m5.xlarge would hold for less (tests/consolidation.rs's case).
    let (provider, _dir) = Binary::on_scenario(MERGE);
    let mut items = nodes_of(provider.grpc, &["ondemand"]).await;
    let names: Vec<String> = (items.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    for (n, node) in names.iter().enumerate() {
        for i in 0..3 {
            let app = format!("web{n}");
            items.push(running(node, &format!("{app}-{i}"), &app, "350m", "256Mi"));
        }
    }
    let args = ["--consolidation", "replace"];
    let consolidated = |result: &Value| -> BTreeSet<String> {
        (result["consolidation"].as_array().unwrap().iter())
            .flat_map(|c| c["nodes"].as_array().unwrap())
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    let result = simulate_json(provider.grpc, &list(items.clone()), &args);
    assert_eq!(
        consolidated(&result),
        names.iter().cloned().collect(),
        "{result:#}"
    );

    annotate(&mut items[1], "true");
    let result = simulate_json(provider.grpc, &list(items), &args);
    assert!(!consolidated(&result).contains(&names[1]), "{result:#}");
    assert_eq!(
        about(&result, "notConsolidated", &names[1], &["reason", "detail"]),
        [["ScaleDownDisabledAnnotation", NODE_KEPT]],
        "{result:#}"
    );
}

/// `simulate` at [`NOW`] with the disruption configuration `config`.
fn simulate_at_now(server: &Server, items: &[Value], config: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = write(&dir, config);
    let args = ["--disruption-config", &config, "--now", NOW];
    simulate_json(server.addr, &list(items.to_vec()), &args)
}

/// An expired (`drifted`: drifted) empty node is removed; annotated, it waits and says why.
async fn a_node_annotated_stays(drifted: bool) {
    let server = Server::start_with(FOUR, None).await;
    let (names, mut items) = four(&server).await;
    let (config, reason) = if drifted {
        for node in &mut items[..4] {
            node["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
        }
        (
            "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"10\"}]\n",
            "drifted",
        )
    } else {
        (
            "nodeGroups:\n  - match: general\n    expireAfter: 720h\n",
            "expired",
        )
    };
    let fields = ["reason", "action", "detail"];
    let result = simulate_at_now(&server, &items, config);
    let removed = [
        reason,
        "remove",
        "its pods fit on the other nodes: it drains now",
    ];
    assert_eq!(
        about(&result, "disruptions", &names[2], &fields),
        [removed],
        "{result:#}"
    );
    assert!(scaled_down(&result).contains(&names[2]), "{result:#}");

    annotate(&mut items[2], "true");
    let result = simulate_at_now(&server, &items, config);
    assert_eq!(
        about(&result, "disruptions", &names[2], &fields),
        [[reason, "wait", NODE_KEPT]],
        "{result:#}"
    );
    assert!(!scaled_down(&result).contains(&names[2]), "{result:#}");
    // The others go as before.
    assert_eq!(
        about(&result, "disruptions", &names[3], &fields),
        [removed],
        "{result:#}"
    );
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_annotated_is_not_expired() {
    a_node_annotated_stays(false).await;
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_annotated_is_not_replaced_for_drift() {
    a_node_annotated_stays(true).await;
}

/// The first node, made before the others (so expiry takes it first) and running `keep-0`, annotated
/// do-not-disrupt unless `plain`, beside `web-0`; drifted when `drifted`. One node at a time is disrupted.
/// `simulate`'s result at [`NOW`].
async fn pinned_pod(
    server: &Server,
    drifted: bool,
    grace: Option<&str>,
    plain: bool,
) -> (String, Value) {
    let (names, mut items) = four(server).await;
    items[0]["metadata"]["creationTimestamp"] = json!("2026-11-01T00:00:00Z");
    // The others hold 4 GiB each (over half their memory: scale-down leaves them), and room for the
    // first's pods.
    for (i, node) in names.iter().enumerate().skip(1) {
        items.push(running(node, &format!("cache-{i}"), "cache", "300m", "4Gi"));
    }
    let mut keep = running(&names[0], "keep-0", "keep", "300m", "512Mi");
    if !plain {
        annotate(&mut keep, "true");
    }
    items.push(keep);
    let mut config = "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\"}]\n".to_string();
    if drifted {
        items[0]["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
    } else {
        config.push_str("    expireAfter: 720h\n");
    }
    if let Some(grace) = grace {
        config.push_str(&format!("    terminationGracePeriod: {grace}\n"));
    }
    (names[0].clone(), simulate_at_now(server, &items, &config))
}

/// With a grace period the drain starts, the pod planned elsewhere; without one the node waits, the pod
/// named; a pod not annotated moves either way.
async fn a_pod_annotated_holds_the_drain(drifted: bool) {
    let server = Server::start_with(FOUR, None).await;
    let reason = if drifted { "drifted" } else { "expired" };
    let fields = ["reason", "action", "detail"];
    let drains = [
        reason,
        "remove",
        "its pods fit on the other nodes: it drains now",
    ];
    for (grace, plain) in [(Some("2h"), false), (None, true)] {
        let (node, result) = pinned_pod(&server, drifted, grace, plain).await;
        assert_eq!(
            about(&result, "disruptions", &node, &fields),
            [drains],
            "{result:#}"
        );
        let down = (result["scaleDown"].as_array().unwrap().iter())
            .find(|d| d["node"] == node.as_str())
            .unwrap_or_else(|| panic!("{result:#}"));
        assert_eq!(down["reason"], reason);
        assert_eq!(down["pods"], json!(["default/web-0", "default/keep-0"]));
    }

    let (node, result) = pinned_pod(&server, drifted, None, false).await;
    let held = "default/keep-0: annotated karpenter.sh/do-not-disrupt, and its group has no \
                terminationGracePeriod to force the drain";
    assert_eq!(
        about(&result, "disruptions", &node, &fields),
        [[reason, "wait", held]],
        "{result:#}"
    );
    assert_eq!(
        about(&result, "unremovable", &node, &["reason", "detail"]),
        [["BlockedByPod", held]],
        "{result:#}"
    );
    assert!(!scaled_down(&result).contains(&node), "{result:#}");
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_annotated_holds_an_expired_node_without_a_grace_period() {
    a_pod_annotated_holds_the_drain(false).await;
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_annotated_holds_a_drifted_node_without_a_grace_period() {
    a_pod_annotated_holds_the_drain(true).await;
}

// The loop acting on the cluster simulator.

/// One m5.large node, at its group's min size.
const ONE: &str = "
cluster: keep
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 3, desiredSize: 1, provisioningDelay: 30s}
";

/// The loop acting under the disruption configuration `config`, on a cluster of [`ONE`] whose node runs
/// `keep-0`, annotated do-not-disrupt, and two 700m pods (nothing else could take them): the node, expired or
/// drifted as `drifted` says.
async fn one_pinned_node(
    drifted: bool,
    config: &str,
) -> (Server, Arc<SimulatedCluster>, RunOnce, String) {
    let (server, provider, cluster) = simulated(ONE).await;
    let client = ProviderClient::new(&provider).unwrap();
    let settings = Settings {
        act: true,
        remove_unregistered: true,
        disruption: Some(Arc::new(DisruptionConfig::parse(config).unwrap())),
        ..Settings::default()
    };
    let once = RunOnce::new(client, settings).acting_on(cluster.clone());
    let mut keep = owned("keep", 1, 300, 512 << 20);
    keep[0].disruption.do_not_disrupt = true;
    cluster.create_pods(keep);
    cluster.create_pods(owned("db", 2, 700, 1 << 30));
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    let node = view.nodes[0].name.clone();
    if drifted {
        server
            .sim()
            .set_image("general", "ami-eks-amd64-2")
            .unwrap();
    } else {
        server.sim().clock().advance(Duration::from_secs(3600));
    }
    (server, cluster, once, node)
}

fn node_of(pods: &[Arc<Pod>], name: &str) -> Option<String> {
    (pods.iter().find(|p| &*p.name == name)).and_then(|p| p.node_name.as_deref().map(String::from))
}

/// Runs the loop every `step` of simulated time, `loops` times at most, until `each` says it is done; no pod
/// is ever lost.
async fn play(
    server: &Server,
    cluster: &SimulatedCluster,
    once: &mut RunOnce,
    (step, loops): (Duration, usize),
    mut each: impl FnMut(SystemTime, &Status, &ekscale::autoscaler::ClusterView) -> bool,
) {
    let names =
        |c: &SimulatedCluster| -> BTreeSet<String> { c.pods().iter().map(|p| p.key()).collect() };
    let pods = names(cluster);
    for i in 0..loops {
        let view = cluster.view().await.unwrap();
        let now = cluster.now();
        let status = once.run(&view, now).await.unwrap();
        assert!(status.errors.is_empty(), "loop {i}: {:?}", status.errors);
        assert_eq!(names(cluster), pods, "loop {i}: a pod was lost");
        if each(now, &status, &view) {
            return;
        }
        server.sim().clock().advance(step);
    }
    panic!("not done after {loops} loops");
}

/// With a grace period of 10 minutes: a new node first, then the old one drains; the other pods leave, the
/// annotated one stays until 10 minutes after the drain began, is deleted then (its ReplicaSet makes it
/// again on the new node), and the old node goes.
async fn the_grace_period_ends_the_hold(drifted: bool) {
    let mut config =
        "nodeGroups:\n  - match: general\n    terminationGracePeriod: 10m\n".to_string();
    if !drifted {
        config.push_str("    expireAfter: 1h\n");
    }
    let (server, cluster, mut once, old) = one_pinned_node(drifted, &config).await;
    let grace = Duration::from_secs(600);
    let (mut held_from, mut left_at, mut others_left_at) = (None, None, None);
    let held =
        "draining, held by default/keep-0: annotated karpenter.sh/do-not-disrupt (forced at ";
    let step = (Duration::from_secs(10), 200);
    play(&server, &cluster, &mut once, step, |now, status, view| {
        let holding = (status.scale_down.disruptions.iter())
            .any(|d| d.node == old && d.action == "wait" && d.detail.starts_with(held));
        if holding {
            held_from.get_or_insert(now);
        }
        let others_gone = (view.pods.iter())
            .filter(|p| p.name.starts_with("db-"))
            .all(|p| p.node_name.as_deref() != Some(&old));
        if held_from.is_some() && others_gone {
            others_left_at.get_or_insert(now);
        }
        if held_from.is_some() && node_of(&view.pods, "keep-0") != Some(old.clone()) {
            left_at.get_or_insert(now);
        }
        view.nodes.iter().all(|n| n.name != old) && view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    let held_from = held_from.expect("the drain was held");
    let left_at = left_at.expect("the pod left");
    let after = left_at.duration_since(held_from).unwrap();
    assert!(
        after >= grace && after <= grace + Duration::from_secs(30),
        "held {after:?}"
    );
    // The other pods were evicted meanwhile, not left to be deleted with it.
    let others = others_left_at.unwrap().duration_since(held_from).unwrap();
    assert!(others < Duration::from_secs(60), "{others:?}");
}

#[tokio::test]
async fn a_pod_annotated_holds_an_expiry_drain_until_the_grace_period() {
    the_grace_period_ends_the_hold(false).await;
}

#[tokio::test]
async fn a_pod_annotated_holds_a_drift_drain_until_the_grace_period() {
    the_grace_period_ends_the_hold(true).await;
}

/// Without a grace period: a day of loops, and the node waits every one of them, the pod named; no new node
/// is asked for, the node is never tainted, and the pod never moves.
async fn without_a_grace_period_the_node_waits(drifted: bool) {
    let config = if drifted {
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\"}]\n"
    } else {
        "nodeGroups:\n  - match: general\n    expireAfter: 1h\n"
    };
    let (server, cluster, mut once, old) = one_pinned_node(drifted, config).await;
    let reason = if drifted { "drifted" } else { "expired" };
    let held = "default/keep-0: annotated karpenter.sh/do-not-disrupt, and its group has no \
                terminationGracePeriod to force the drain";
    let mut loops = 0;
    let day = (Duration::from_secs(600), 144);
    play(&server, &cluster, &mut once, day, |_, status, view| {
        let said: Vec<(&str, &str, &str)> = (status.scale_down.disruptions.iter())
            .map(|d| (d.reason.as_str(), d.action.as_str(), d.detail.as_str()))
            .collect();
        assert_eq!(said, [(reason, "wait", held)]);
        assert!(status.scale_up.is_empty(), "{:?}", status.scale_up);
        assert_eq!(view.nodes.len(), 1);
        assert!(!view.nodes[0].tainted(TO_BE_DELETED_TAINT));
        assert_eq!(node_of(&view.pods, "keep-0"), Some(old.clone()));
        loops += 1;
        loops == 144
    })
    .await;
}

#[tokio::test]
async fn a_pod_annotated_holds_an_expired_node_for_good_without_a_grace_period() {
    without_a_grace_period_the_node_waits(false).await;
}

#[tokio::test]
async fn a_pod_annotated_holds_a_drifted_node_for_good_without_a_grace_period() {
    without_a_grace_period_the_node_waits(true).await;
}

/// A drain already under way (the pod annotated after it began, or missed by the view) with no grace
/// period: held for a day and more, the pod left where it is, the node not deleted.
#[tokio::test]
async fn a_drain_under_way_without_a_grace_period_is_held_for_good() {
    let (server, provider, cluster) = simulated(ONE).await;
    let client = ProviderClient::new(&provider).unwrap();
    let mut keep = owned("keep", 1, 300, 512 << 20);
    keep[0].disruption.do_not_disrupt = true;
    cluster.create_pods(keep);
    let view = cluster.view().await.unwrap();
    let node = view.nodes[0].clone();
    let mut actuator = Actuator::default();
    let (pacing, rules) = (Pacing::default(), Default::default());
    let cause = Cause::Disruption {
        reason: "drifted",
        grace: None,
    };
    let started = cluster.now();
    let order = DeletionOrder {
        node: &node,
        group: "general",
        kind: DeletionKind::Drain,
        cause,
    };
    (actuator.start(&*cluster, order, started).await).unwrap();
    let updating = HashSet::new();
    let mut held = 0;
    for _ in 0..200 {
        server.sim().clock().advance(Duration::from_secs(600));
        let view = cluster.view().await.unwrap();
        let ground = StepGround {
            cluster: &*cluster,
            client: &client,
            view: &view,
            rules: &rules,
            pacing: &pacing,
        };
        let outcomes = actuator.advance(&ground, &updating, cluster.now()).await;
        let [
            Outcome::Draining {
                held: Some("drifted"),
                waiting,
                ..
            },
        ] = &outcomes[..]
        else {
            panic!("{outcomes:?}");
        };
        assert_eq!(
            waiting,
            "default/keep-0: annotated karpenter.sh/do-not-disrupt (no terminationGracePeriod: the drain \
             waits for it)"
        );
        assert_eq!(node_of(&view.pods, "keep-0"), Some(node.name.clone()));
        held += 1;
    }
    assert_eq!(held, 200);
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 1);
}
