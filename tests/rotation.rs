//! Rotation without room to surge, and the drifted cohort cordoned: a drifted node whose group cannot grow
//! for its replacement (its max size, a CapacityQuota) is terminated first (drained, removed, then its
//! group's replacement asked), one at a time; the group's other drifted nodes are cordoned ahead of their
//! turn, and uncordoned when the drift goes away. Through `simulate` over snapshots of the simulated EKS in
//! tests/data/rotation-scenario.yaml (with tests/data/rotation-config.yaml), and through the loop acting on
//! the cluster simulator over several loops.

mod common;

use common::Server;
use common::cluster::{list, nodes_of, running, simulate_json};
use common::simulated::{owned, simulated};
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{ClusterSource, DisruptionConfig, ProviderClient, RunOnce, Settings};
use ekscale::model::{CORDONED_ANNOTATION, NODE_GROUP_IMAGE_LABEL, Node};
use ekscale::simulated_cluster::SimulatedCluster;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The scenario's three gpu nodes, the first two put back on ami-1 (drifted), each with a 1.2-CPU pod that
/// fits on no other node; `third` says what more the third node carries.
async fn drifted_snapshot(
    server: &Server,
    third: impl Fn(&mut Value),
) -> (Vec<String>, Vec<Value>) {
    let mut nodes = nodes_of(server.addr, &["gpu"]).await;
    assert_eq!(nodes.len(), 3);
    for node in &mut nodes[..2] {
        node["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
    }
    third(&mut nodes[2]);
    let names: Vec<String> = (nodes.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut items = nodes;
    for (i, name) in names.iter().enumerate() {
        items.push(running(
            name,
            &format!("train-{i}"),
            "train",
            "1200m",
            "2Gi",
        ));
    }
    (names, items)
}

fn disruption<'a>(result: &'a Value, node: &str) -> &'a Value {
    (result["disruptions"].as_array().unwrap().iter())
        .find(|d| d["node"] == node)
        .unwrap_or_else(|| panic!("no disruption for {node}: {result:#}"))
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_its_max_terminates_its_drifted_node_first_and_cordons_the_rest() {
    let scenario = std::fs::read_to_string(data("rotation-scenario.yaml")).unwrap();
    let server = Server::start_with(&scenario, None).await;
    // The third node is drifted too, but annotated not to be disrupted: it waits, uncordoned.
    let (names, items) = drifted_snapshot(&server, |n| {
        n["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
        n["metadata"]["annotations"] = json!({"karpenter.sh/do-not-disrupt": "true"});
    })
    .await;
    let config = data("rotation-config.yaml");
    let result = simulate_json(server.addr, &list(items), &["--disruption-config", &config]);
    let first = disruption(&result, &names[0]);
    assert_eq!(first["action"], "terminateFirst", "{result:#}");
    assert_eq!(first["reason"], "drifted");
    let detail = first["detail"].as_str().unwrap();
    assert!(
        detail.contains("no room to surge (max node group size reached)"),
        "{detail}"
    );
    // It drains now, with its pod; no replacement is asked before it is gone.
    let down = (result["scaleDown"].as_array().unwrap().iter())
        .find(|d| d["node"] == names[0].as_str())
        .expect("the node terminated first drains now");
    assert_eq!(down["reason"], "drifted");
    let replaces = (result["scaleUp"].as_array().into_iter().flatten())
        .filter(|s| s["replaces"].is_array())
        .count();
    assert_eq!(replaces, 0, "{result:#}");
    // The second waits for the budget, cordoned ahead of its turn.
    let second = disruption(&result, &names[1]);
    assert_eq!(second["action"], "cordon", "{result:#}");
    assert_eq!(second["reason"], "drifted");
    let detail = second["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("cordoned ahead of its turn: gpu: Drifted, 1 of 1"),
        "{detail}"
    );
    // A node held for good is not cordoned.
    assert_eq!(disruption(&result, &names[2])["action"], "wait");
}

/// The same group on a Capacity Block all of whose instances it runs: far from its max size, but the block has
/// no instance free for a replacement, so the drifted node is terminated first (its instance goes back to the
/// block, where the replacement launches).
// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_capacity_block_is_no_room_to_surge() {
    let scenario = std::fs::read_to_string(data("rotation-scenario.yaml"))
        .unwrap()
        .replace(
            "maxSize: 3, desiredSize: 3, image: ami-2}",
            "maxSize: 10, desiredSize: 3, image: ami-2,\n     capacityType: CAPACITY_BLOCK, reservations: [{id: cr-0a1b2c3d4e5f60718, \
             type: capacity-block, start: \"2026-12-01T08:00:00Z\", end: \"2026-12-08T08:00:00Z\", total: 3}]}",
        );
    let scenario = format!("start: \"2026-12-01T09:00:00Z\"\n{scenario}");
    let server = Server::start_with(&scenario, None).await;
    let (names, items) = drifted_snapshot(&server, |_| {}).await;
    let config = data("rotation-config.yaml");
    let args = [
        "--disruption-config",
        config.as_str(),
        "--now",
        "2026-12-01T09:00:00Z",
    ];
    let result = simulate_json(server.addr, &list(items), &args);
    let first = disruption(&result, &names[0]);
    assert_eq!(first["action"], "terminateFirst", "{result:#}");
    let detail = first["detail"].as_str().unwrap();
    assert!(
        detail.contains("no room to surge") && detail.contains("cr-0a1b2c3d4e5f60718"),
        "{detail}"
    );
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capacity_quota_at_its_limit_is_no_room_to_surge_but_a_group_with_room_replaces_first() {
    // The same group with room up to ten nodes.
    let scenario = std::fs::read_to_string(data("rotation-scenario.yaml"))
        .unwrap()
        .replace("maxSize: 3", "maxSize: 10");
    let server = Server::start_with(&scenario, None).await;
    let (names, items) = drifted_snapshot(&server, |_| {}).await;
    let config = data("rotation-config.yaml");
    let args = ["--disruption-config", config.as_str()];
    let result = simulate_json(server.addr, &list(items.clone()), &args);
    assert_eq!(
        disruption(&result, &names[0])["action"],
        "replace",
        "{result:#}"
    );
    // Replaced surge-first, it is cordoned too: its drain waits for the new node.
    assert_eq!(disruption(&result, &names[1])["action"], "cordon");
    // A CapacityQuota holding the pool at its three nodes: no room to surge, terminated first.
    let mut items = items;
    items.push(json!({
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityQuota",
        "metadata": {"name": "gpu-pool", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"eks.amazonaws.com/nodegroup": "gpu"}},
            "limits": {"resources": {"nodes": 3}},
        },
    }));
    let result = simulate_json(server.addr, &list(items), &args);
    let first = disruption(&result, &names[0]);
    assert_eq!(first["action"], "terminateFirst", "{result:#}");
    let detail = first["detail"].as_str().unwrap();
    assert!(detail.contains("gpu-pool"), "the quota named: {detail}");
}

// The loop acting on the cluster simulator.

fn acting(policy: &str) -> Settings {
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        disruption: Some(Arc::new(DisruptionConfig::parse(policy).unwrap())),
        ..Settings::default()
    };
    settings.scale_down.unneeded_time = Duration::from_secs(60);
    settings
}

/// Three loops of the companion acting on the cluster, whatever they decide; the cluster's view after them.
async fn three_loops(
    server: &Server,
    cluster: &SimulatedCluster,
    once: &mut RunOnce,
) -> Arc<ekscale::autoscaler::ClusterView> {
    let mut loops = 0;
    play(server, cluster, once, 3, |_, _| {
        loops += 1;
        loops == 3
    })
    .await;
    cluster.view().await.unwrap()
}

/// Runs the loop every 10 simulated seconds until `each` says it is done (at most `loops` times), checking
/// after each loop that nothing failed; returns each loop's status.
async fn play(
    server: &Server,
    cluster: &SimulatedCluster,
    once: &mut RunOnce,
    loops: usize,
    mut each: impl FnMut(&Status, &ekscale::autoscaler::ClusterView) -> bool,
) -> Vec<Status> {
    let mut all = Vec::new();
    for i in 0..loops {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "loop {i}: {:?}", status.errors);
        let done = each(&status, &view);
        all.push(status);
        if done {
            return all;
        }
        server.sim().clock().advance(Duration::from_secs(10));
    }
    panic!("not done after {loops} loops: {:#?}", all.last());
}

fn image(node: &Node) -> Option<&str> {
    node.labels.get(NODE_GROUP_IMAGE_LABEL).map(String::as_str)
}

#[tokio::test]
async fn drifted_nodes_of_a_full_group_are_terminated_first_one_at_a_time_and_the_group_keeps_its_size()
 {
    let scenario = "
cluster: rotation
region: eu-central-1
nodeGroups:
  - {name: gpu, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 3, desiredSize: 3, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let policy = "nodeGroups:\n  - match: gpu\n    budgets: [{nodes: \"1\", reasons: [Drifted]}]\n";
    let mut once = RunOnce::new(client.clone(), acting(policy)).acting_on(cluster.clone());
    // One 1.2-CPU pod per node: none fits beside another.
    cluster.create_pods(owned("train", 3, 1200, 1 << 30));
    play(&server, &cluster, &mut once, 10, |_, view| {
        view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    let old: BTreeSet<String> = (cluster.view().await.unwrap().nodes.iter())
        .map(|n| n.name.clone())
        .collect();
    // Where each pod ran before the drift: a pod on an old node must be one that was there then.
    let before: BTreeMap<String, String> = (cluster.pods().iter())
        .map(|p| (p.key(), p.node_name.as_deref().unwrap().to_string()))
        .collect();
    server.sim().set_image("gpu", "ami-eks-amd64-2").unwrap();
    let increases = server.requests("NodeGroupIncreaseSize");
    let (mut terminated, mut cordoned) = (BTreeSet::new(), BTreeSet::new());
    let (mut most_going, mut sizes) = (0, Vec::new());
    let mut replaced = Vec::new();
    let new_image = Some("ami-eks-amd64-2");
    play(&server, &cluster, &mut once, 400, |status, view| {
        for d in &status.scale_down.disruptions {
            match d.action.as_str() {
                "terminateFirst" => {
                    assert!(d.detail.contains("max node group size reached"), "{d:?}");
                    terminated.insert(d.node.clone());
                }
                "cordon" => {
                    cordoned.insert(d.node.clone());
                }
                _ => {}
            }
        }
        for s in status.scale_up.iter().filter(|s| !s.replaces.is_empty()) {
            assert!(s.reason.contains("terminated first"), "{s:?}");
            replaced.extend(s.replaces.clone());
        }
        let gpu = status.node_groups.iter().find(|g| g.id == "gpu").unwrap();
        sizes.push(gpu.target_size);
        // Never a pod moved onto a node about to go.
        for pod in view.pods.iter() {
            let Some(node) = pod.node_name.as_deref().filter(|n| old.contains(*n)) else {
                continue;
            };
            assert_eq!(
                before.get(&pod.key()),
                Some(&node.to_string()),
                "{} landed on {node}",
                pod.key()
            );
        }
        // Old nodes draining, gone with no new node yet, or new nodes not Ready yet: one at a time.
        let draining = (view.nodes.iter())
            .filter(|n| n.tainted(ekscale::model::TO_BE_DELETED_TAINT))
            .count();
        let missing = 3usize.saturating_sub(view.nodes.len());
        let starting = view.nodes.iter().filter(|n| !n.ready).count();
        most_going = most_going.max(draining + missing + starting);
        let all_new =
            view.nodes.len() == 3 && (view.nodes.iter()).all(|n| n.ready && image(n) == new_image);
        all_new && view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    assert_eq!(terminated, old, "each old node terminated first");
    assert_eq!(
        replaced.iter().collect::<BTreeSet<_>>(),
        old.iter().collect(),
        "each replaced once"
    );
    assert_eq!(replaced.len(), 3, "one replacement per node: {replaced:?}");
    assert_eq!(server.requests("NodeGroupIncreaseSize") - increases, 3);
    assert!(!cordoned.is_empty(), "the ones waiting were cordoned");
    assert!(
        sizes.iter().all(|&s| (2..=3).contains(&s)),
        "at most one node less: {sizes:?}"
    );
    assert_eq!(sizes.last(), Some(&3), "the group keeps its size");
    assert_eq!(most_going, 1, "one at a time");
}

#[tokio::test]
async fn the_cohort_is_cordoned_while_it_waits_and_uncordoned_when_the_drift_goes_away() {
    let scenario = "
cluster: cohort
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 5, desiredSize: 3}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    // No drifted node may go: the cohort waits, cordoned.
    let policy =
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"0\", reasons: [Drifted]}]\n";
    let mut once = RunOnce::new(client.clone(), acting(policy)).acting_on(cluster.clone());
    cluster.create_pods(owned("web", 3, 1200, 1 << 30));
    play(&server, &cluster, &mut once, 10, |_, view| {
        view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    let view = cluster.view().await.unwrap();
    let original = image(&view.nodes[0]).unwrap().to_string();
    let names: Vec<String> = view.nodes.iter().map(|n| n.name.clone()).collect();
    // Someone cordons the third node by hand: ekscale never uncordons it.
    cluster.cordon_by_hand(&names[2]).unwrap();
    server
        .sim()
        .set_image("general", "ami-eks-amd64-2")
        .unwrap();
    let view = three_loops(&server, &cluster, &mut once).await;
    let node = |name: &str| view.nodes.iter().find(|n| n.name == name).unwrap().clone();
    for name in &names[..2] {
        let n = node(name);
        assert!(n.unschedulable, "{name} cordoned");
        assert_eq!(n.cordoned_by_ekscale.as_deref(), Some("drift"));
    }
    assert!(node(&names[2]).unschedulable);
    assert_eq!(
        node(&names[2]).cordoned_by_ekscale,
        None,
        "not ours: {CORDONED_ANNOTATION}"
    );
    let last = once.run(&view, cluster.now()).await.unwrap();
    let actions: BTreeSet<&str> = (last.scale_down.disruptions.iter())
        .map(|d| d.action.as_str())
        .collect();
    // The one cordoned by hand is in the cohort too, waiting cordoned.
    assert_eq!(
        actions,
        BTreeSet::from(["cordon"]),
        "{:#?}",
        last.scale_down.disruptions
    );
    // A pending pod finds no room on the cordoned nodes: the group grows for it instead.
    cluster.create_pods(owned("extra", 1, 500, 1 << 28));
    play(&server, &cluster, &mut once, 60, |_, view| {
        view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    let view = cluster.view().await.unwrap();
    let extra = view
        .pods
        .iter()
        .find(|p| p.key() == "default/extra-0")
        .unwrap();
    assert!(
        !names
            .iter()
            .any(|n| Some(n.as_str()) == extra.node_name.as_deref()),
        "{extra:?}"
    );
    // The image back to theirs: ekscale's cordons come off, the one by hand stays.
    server.sim().set_image("general", &original).unwrap();
    let view = three_loops(&server, &cluster, &mut once).await;
    let node = |name: &str| view.nodes.iter().find(|n| n.name == name).unwrap().clone();
    for name in &names[..2] {
        let n = node(name);
        assert!(
            !n.unschedulable && n.cordoned_by_ekscale.is_none(),
            "{name} uncordoned"
        );
    }
    assert!(node(&names[2]).unschedulable, "the cordon by hand stays");
}

/// The kube-rs source cordons with ekscale's mark and uncordons taking it off, each one merge patch.
#[tokio::test]
async fn the_kube_source_cordons_with_its_mark_and_uncordons_without_it() {
    use common::kube_api::{self, Objects, node};
    // b: cordoned by ekscale in an earlier loop; c: cordoned by hand.
    let mut b = node("b");
    b["metadata"]["annotations"] = json!({CORDONED_ANNOTATION: "drift"});
    b["spec"]["unschedulable"] = json!(true);
    let mut c = node("c");
    c["spec"]["unschedulable"] = json!(true);
    let objects = Objects {
        nodes: vec![node("a"), b, c],
        ..Objects::default()
    };
    let (kube, fake) = kube_api::connect(objects).await;
    let view = kube.view().await.unwrap();
    let read: Vec<(bool, Option<&str>)> = (view.nodes.iter())
        .map(|n| (n.unschedulable, n.cordoned_by_ekscale.as_deref()))
        .collect();
    assert_eq!(read, [(false, None), (true, Some("drift")), (true, None)]);
    kube.cordon("a", "drift").await.unwrap();
    kube.uncordon("a").await.unwrap();
    let patches = fake.objects.lock().unwrap().patches.clone();
    assert_eq!(patches.len(), 2, "{patches:?}");
    assert_eq!(patches[0].0, "a");
    assert_eq!(
        patches[0].1,
        json!({"metadata": {"annotations": {CORDONED_ANNOTATION: "drift"}}, "spec": {"unschedulable": true}})
    );
    assert_eq!(
        patches[1].1,
        json!({"metadata": {"annotations": {CORDONED_ANNOTATION: null}}, "spec": {"unschedulable": null}})
    );
}
