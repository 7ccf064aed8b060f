//! Disruption control (`--disruption-config`): budgets with reasons and schedules, expiry, drift, and
//! managed node group updates, through `simulate` over snapshots and through the loop acting on the
//! cluster simulator; the ConfigMap read from a (mock) API server, reloaded, and a bad one refused.

mod common;

use common::Server;
use common::cluster::{list, nodes_of, running, simulate, simulate_json};
use common::simulated::{owned, simulated};
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{
    ClusterSource, DisruptionConfig, ProviderClient, ProviderConfig, RunOnce, Settings,
};
use ekscale::model::{NODE_GROUP_IMAGE_LABEL, TO_BE_DELETED_TAINT};
use ekscale::simulated_cluster::SimulatedCluster;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// One group of four m5.large nodes.
const FOUR: &str = "
cluster: disruption
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 4}
";

/// Office hours in Berlin hold underutilized nodes; otherwise half the group at once, whatever the reason.
const OFFICE_HOURS: &str = r#"
nodeGroups:
  - match: "^general$"
    budgets:
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
        duration: 8h
        timeZone: Europe/Berlin
        reasons: [Underutilized]
      - nodes: "50%"
"#;

/// The four nodes: the first busy, the second underutilized, the last two empty.
async fn four_nodes(server: &Server) -> (Vec<String>, Value) {
    let nodes = nodes_of(server.addr, &["general"]).await;
    let names: Vec<String> = (nodes.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut items = nodes;
    items.push(running(&names[0], "web-0", "web", "1200m", "2Gi"));
    items.push(running(&names[1], "web-1", "web", "200m", "256Mi"));
    (names, list(items))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn reasons_of(result: &Value, list: &str, node: &str) -> Vec<String> {
    (result[list].as_array().into_iter().flatten())
        .filter(|e| e["node"] == node)
        .map(|e| e["reason"].as_str().unwrap().to_string())
        .collect()
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn office_hours_hold_underutilized_nodes_but_not_empty_ones() {
    let server = Server::start_with(FOUR, None).await;
    let (names, snapshot) = four_nodes(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write(&dir, "disruption.yaml", OFFICE_HOURS);
    // Monday 30 November 2026, 11:00 in Berlin: the window is open.
    let args = [
        "--disruption-config",
        &config,
        "--now",
        "2026-11-30T10:00:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &args);
    assert_eq!(
        reasons_of(&result, "scaleDown", &names[2]),
        ["empty"],
        "{result:#}"
    );
    assert_eq!(
        reasons_of(&result, "scaleDown", &names[3]),
        ["empty"],
        "{result:#}"
    );
    let held = (result["unremovable"].as_array().unwrap().iter())
        .find(|k| k["node"] == names[1].as_str())
        .unwrap_or_else(|| panic!("{result:#}"));
    assert_eq!(held["reason"], "DisruptionBudget");
    assert_eq!(
        held["detail"],
        "general: 0 allowed from 09:00 to 17:00 Europe/Berlin"
    );
    // What the budgets allow before this loop's removals: half of four for every reason, none for
    // underutilized nodes while the window is open.
    let allowed: Vec<(String, Value)> = (result["disruptionBudgets"].as_array().unwrap().iter())
        .map(|b| {
            (
                b["reason"].as_str().unwrap().to_string(),
                b["allowed"].clone(),
            )
        })
        .collect();
    let expected = [
        ("Empty", 2),
        ("Underutilized", 0),
        ("Drifted", 2),
        ("Expired", 2),
        ("Rebalance", 2),
        ("Unhealthy", 2),
        ("Scheduled", 2),
    ];
    let expected: Vec<(String, Value)> = expected.map(|(r, a)| (r.to_string(), json!(a))).into();
    assert_eq!(allowed, expected);

    // 18:30 in Berlin: the window closed; the two empty nodes take the group's two, the underutilized
    // one waits for the next loop.
    let args = [
        "--disruption-config",
        &config,
        "--now",
        "2026-11-30T17:30:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &args);
    assert_eq!(
        result["scaleDown"].as_array().unwrap().len(),
        2,
        "{result:#}"
    );
    let held = (result["unremovable"].as_array().unwrap().iter())
        .find(|k| k["node"] == names[1].as_str())
        .unwrap();
    assert_eq!(
        held["detail"],
        "general: Underutilized, 2 of 2 allowed in use (50% of 4 nodes)"
    );
    // Without a configuration all three go, as they always did.
    let result = simulate_json(server.addr, &snapshot, &[]);
    assert_eq!(
        result["scaleDown"].as_array().unwrap().len(),
        3,
        "{result:#}"
    );
    assert!(result.get("disruptionBudgets").is_none(), "{result:#}");
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_nodes_go_oldest_first_within_their_budget_or_are_replaced_first() {
    let server = Server::start_with(FOUR, None).await;
    let (names, snapshot) = four_nodes(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config =
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\"}]\n    expireAfter: 720h\n";
    let config = write(&dir, "disruption.yaml", config);
    // The nodes were made on 30 November: 36 days and 12 hours later all four are past 30 days. One at a
    // time: the first, whose pod fits on the others, goes; the rest wait for the budget.
    let args = [
        "--disruption-config",
        &config,
        "--now",
        "2027-01-05T12:00:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &args);
    let down = result["scaleDown"].as_array().unwrap();
    assert_eq!(down.len(), 1, "{result:#}");
    assert_eq!(down[0]["node"], names[0].as_str());
    assert_eq!(down[0]["reason"], "expired");
    assert_eq!(down[0]["detail"], "created 36d 12h ago");
    let actions: Vec<(&str, &str)> = (result["disruptions"].as_array().unwrap().iter())
        .map(|d| (d["node"].as_str().unwrap(), d["action"].as_str().unwrap()))
        .collect();
    let expected: Vec<(&str, &str)> = (names.iter())
        .enumerate()
        .map(|(i, n)| (n.as_str(), if i == 0 { "remove" } else { "wait" }))
        .collect();
    assert_eq!(actions, expected);
    let waiting = &result["disruptions"][1];
    assert_eq!(waiting["reason"], "expired");
    assert_eq!(waiting["detail"], "general: Expired, 1 of 1 allowed in use");
    // Not yet expired on 29 December.
    let args = [
        "--disruption-config",
        &config,
        "--now",
        "2026-12-29T00:00:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &args);
    assert!(result.get("disruptions").is_none(), "{result:#}");

    // A lone node whose pods fit nowhere else, at its group's min size: a new node first.
    let one = "
cluster: one
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 3, desiredSize: 1}
";
    let server = Server::start_with(one, None).await;
    let mut items = nodes_of(server.addr, &["general"]).await;
    let node = items[0]["metadata"]["name"].as_str().unwrap().to_string();
    items.push(running(&node, "db-0", "db", "1500m", "4Gi"));
    let config = "nodeGroups:\n  - match: general\n    expireAfter: 720h\n";
    let config = write(&dir, "one.yaml", config);
    let args = [
        "--disruption-config",
        &config,
        "--now",
        "2027-01-05T12:00:00Z",
    ];
    let result = simulate_json(server.addr, &list(items), &args);
    assert!(
        result.get("scaleDown").is_none_or(|d| d == &json!([])),
        "{result:#}"
    );
    let up = &result["scaleUp"][0];
    assert_eq!(
        (up["nodeGroup"].as_str(), up["delta"].as_u64()),
        (Some("general"), Some(1))
    );
    assert_eq!(up["replaces"], json!([node]));
    assert_eq!(result["disruptions"][0]["action"], "replace", "{result:#}");
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drifted_and_updating_groups_in_a_snapshot() {
    let scenario = "
cluster: drift
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 3, image: ami-2}
  - {name: batch, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 2, status: UPDATING, image: ami-2}
";
    let server = Server::start_with(scenario, None).await;
    let mut nodes = nodes_of(server.addr, &["general", "batch"]).await;
    assert_eq!(
        nodes[0]["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL],
        "ami-2"
    );
    // One general node and one batch node still on the old image.
    nodes[0]["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
    nodes[3]["metadata"]["labels"][NODE_GROUP_IMAGE_LABEL] = json!("ami-1");
    let name = |i: usize| nodes[i]["metadata"]["name"].as_str().unwrap().to_string();
    let (drifted, updating) = (name(0), name(3));
    let mut items = nodes.clone();
    for i in 0..3 {
        items.push(running(
            &name(i),
            &format!("web-{i}"),
            "web",
            "1200m",
            "2Gi",
        ));
    }
    // Pods only batch takes, one more than its two nodes hold: scale-up goes on while batch is UPDATING.
    for i in 0..3 {
        let mut etl =
            common::cluster::pending("default", &format!("etl-{i}"), "etl", "1500m", "2Gi");
        etl["spec"]["nodeSelector"] = json!({"eks.amazonaws.com/nodegroup": "batch"});
        items.push(etl);
    }
    let dir = tempfile::tempdir().unwrap();
    let config =
        "nodeGroups:\n  - match: \".*\"\n    budgets: [{nodes: \"1\", reasons: [Drifted]}]\n";
    let config = write(&dir, "disruption.yaml", config);
    let result = simulate_json(server.addr, &list(items), &["--disruption-config", &config]);
    let disruptions = result["disruptions"].as_array().unwrap();
    assert_eq!(
        disruptions.len(),
        1,
        "batch's old node is EKS's to replace: {result:#}"
    );
    assert_eq!(disruptions[0]["node"], drifted.as_str());
    assert_eq!(disruptions[0]["reason"], "drifted");
    // Its pod fits on no other node (each holds a 1.2-CPU pod): a new node first.
    assert_eq!(disruptions[0]["action"], "replace");
    let ups: Vec<(&str, &Value)> = (result["scaleUp"].as_array().unwrap().iter())
        .map(|s| (s["nodeGroup"].as_str().unwrap(), &s["replaces"]))
        .collect();
    assert!(ups.contains(&("batch", &Value::Null)), "{result:#}");
    assert!(ups.contains(&("general", &json!([drifted]))), "{result:#}");
    // batch's nodes stay while it is UPDATING, and are not called unneeded.
    assert_eq!(
        reasons_of(&result, "unremovable", &updating),
        ["NodeGroupUpdating"]
    );
    assert!(reasons_of(&result, "scaleDown", &updating).is_empty());
    let groups = result["nodeGroups"].as_array().unwrap();
    let batch = groups.iter().find(|g| g["id"] == "batch").unwrap();
    assert_eq!(
        (batch["eksStatus"].as_str(), batch["image"].as_str()),
        (Some("UPDATING"), Some("ami-2"))
    );
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_configuration_or_time_is_refused_whole() {
    let server = Server::start_with(FOUR, None).await;
    let (_, snapshot) = four_nodes(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "snapshot.json", &snapshot.to_string());
    let cases = [
        (
            "nodeGroups:\n  - match: \"^general$\"\n    budgets: [{nodes: \"150%\"}]\n",
            "nodeGroups[0] (match \"^general$\"): budgets[0].nodes: ",
        ),
        (
            "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\", schedule: \"0 9 * * mon\", duration: 8h, timeZone: Mars/Base}]\n",
            "budgets[0].timeZone: \"Mars/Base\" is not an IANA time zone",
        ),
        (
            "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\", reasons: [Consolidated]}]\n",
            "budgets[0].reasons[0]: unknown variant `Consolidated`",
        ),
    ];
    for (text, expected) in cases {
        let config = write(&dir, "bad.yaml", text);
        let output = simulate(
            server.addr,
            path.as_ref(),
            &["--disruption-config", &config],
        );
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&config) && stderr.contains(expected),
            "{stderr}"
        );
        assert!(
            output.stdout.is_empty(),
            "nothing decided on a refused configuration"
        );
    }
    let output = simulate(server.addr, path.as_ref(), &["--now", "yesterday"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--now"), "{stderr}");
}

// The loop acting on the cluster simulator.

/// The loop acting, unneeded nodes going after a minute, with `disruption` as `--disruption-config`.
fn acting(disruption: Option<&str>) -> Settings {
    let parse = |text| Arc::new(DisruptionConfig::parse(text).unwrap());
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        disruption: disruption.map(parse),
        ..Settings::default()
    };
    settings.scale_down.unneeded_time = Duration::from_secs(60);
    settings
}

fn pod_names(cluster: &SimulatedCluster) -> BTreeSet<String> {
    cluster.pods().iter().map(|p| p.key()).collect()
}

/// Runs the loop every 10 simulated seconds until `done` says so (at most `loops` times), checking after
/// each loop that no pod was lost; returns each loop's status.
async fn play(
    server: &Server,
    cluster: &SimulatedCluster,
    once: &mut RunOnce,
    loops: usize,
    mut each: impl FnMut(usize, &Status, &ekscale::autoscaler::ClusterView) -> bool,
) -> Vec<Status> {
    let pods = pod_names(cluster);
    let mut all = Vec::new();
    for i in 0..loops {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "loop {i}: {:?}", status.errors);
        assert_eq!(pod_names(cluster), pods, "loop {i}: a pod was lost");
        let done = each(i, &status, &view);
        all.push(status);
        if done {
            return all;
        }
        server.sim().clock().advance(Duration::from_secs(10));
    }
    panic!("not done after {loops} loops: {:#?}", all.last());
}

fn tainted(view: &ekscale::autoscaler::ClusterView) -> usize {
    view.nodes
        .iter()
        .filter(|n| n.tainted(TO_BE_DELETED_TAINT))
        .count()
}

#[tokio::test]
async fn a_budget_of_one_keeps_one_deletion_in_flight_across_loops() {
    let (server, config, cluster) = simulated(FOUR).await;
    let client = ProviderClient::new(&config).unwrap();
    let budget = "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"25%\"}]\n";
    let mut once = RunOnce::new(client.clone(), acting(Some(budget))).acting_on(cluster.clone());
    let mut held = 0;
    let mut most = 0;
    play(&server, &cluster, &mut once, 200, |_, status, view| {
        // The deletions the view shows (ToBeDeleted) never pass the group's one.
        most = most.max(tainted(view));
        let in_use = "general: Empty, 1 of 1 allowed in use (25% of ";
        held += (status.scale_down.unremovable.iter())
            .filter(|k| k.reason == "DisruptionBudget" && k.detail.starts_with(in_use))
            .count();
        view.nodes.is_empty()
    })
    .await;
    assert_eq!(most, 1);
    assert!(
        held >= 3,
        "three nodes waited their turn at least once: {held}"
    );
}

#[tokio::test]
async fn an_expired_node_is_replaced_surge_first_and_nothing_is_lost() {
    let scenario = "
cluster: expiry
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 3, desiredSize: 1, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let policy =
        "nodeGroups:\n  - match: general\n    expireAfter: 1h\n    terminationGracePeriod: 10m\n";
    let mut once = RunOnce::new(client.clone(), acting(Some(policy))).acting_on(cluster.clone());
    // Two 700m pods fill the one node: no other node could take them.
    cluster.create_pods(owned("db", 2, 700, 1 << 30));
    let first = cluster.view().await.unwrap().nodes[0].name.clone();
    server.sim().clock().advance(Duration::from_secs(3600));
    let mut replaced_by = None;
    let mut sizes = Vec::new();
    let statuses = play(&server, &cluster, &mut once, 100, |_, status, view| {
        let group = status
            .node_groups
            .iter()
            .find(|g| g.id == "general")
            .unwrap();
        sizes.push(group.target_size);
        for s in status.scale_up.iter().filter(|s| !s.replaces.is_empty()) {
            assert_eq!(s.replaces, std::slice::from_ref(&first));
            assert!(replaced_by.is_none(), "one replacement, asked once");
            replaced_by = Some(s.delta);
        }
        let gone = view.nodes.iter().all(|n| n.name != first);
        gone && view.nodes.len() == 1 && view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    assert_eq!(replaced_by, Some(1));
    assert!(
        sizes.iter().all(|&s| s >= 1),
        "never under the min size: {sizes:?}"
    );
    assert_eq!(
        sizes.iter().max(),
        Some(&2),
        "one node more, for a while: {sizes:?}"
    );
    let done = (statuses.iter().flat_map(|s| &s.scale_down.replacements))
        .find(|r| r.state == "done")
        .expect("the replacement ended");
    assert_eq!(
        (done.kind.as_str(), &done.nodes),
        ("expired", &vec![first.clone()])
    );
    let removed = (statuses.iter().flat_map(|s| &s.scale_down.deletions))
        .find(|d| d.state == "deleted")
        .unwrap();
    assert_eq!(
        (removed.node.as_str(), removed.detail.as_str()),
        (first.as_str(), "expired")
    );
}

#[tokio::test]
async fn an_update_that_starts_mid_scale_down_stops_it_until_eks_is_done() {
    let scenario = "
cluster: update
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 5, desiredSize: 3, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client.clone(), acting(None)).acting_on(cluster.clone());
    cluster.create_pods(owned("web", 1, 500, 1 << 30));
    // Loops until the first deletion starts, then the update starts before the next loop.
    play(&server, &cluster, &mut once, 30, |_, status, _| {
        (status.scale_down.deletions.iter()).any(|d| d.state == "started")
    })
    .await;
    let deletes = server.requests("NodeGroupDeleteNodes");
    server
        .sim()
        .start_update("general", "ami-eks-amd64-2", Duration::from_secs(300))
        .unwrap();
    let mut gave_up = false;
    let mut updating_loops = 0;
    play(&server, &cluster, &mut once, 60, |_, status, view| {
        let group = status
            .node_groups
            .iter()
            .find(|g| g.id == "general")
            .unwrap();
        let updating = group.eks_status.as_deref() == Some("UPDATING");
        for d in &status.scale_down.deletions {
            assert_ne!(d.state, "failed", "{d:?}");
            if d.state == "stopped" {
                assert!(
                    d.detail
                        .contains("general started a managed node group update"),
                    "{d:?}"
                );
                gave_up = true;
            }
            assert!(
                !(updating && d.state == "started"),
                "a deletion started mid-update: {d:?}"
            );
        }
        if updating {
            updating_loops += 1;
            // The loop that saw the update first stopped the deletions: the views after show no taint.
            if updating_loops > 1 {
                assert_eq!(tainted(view), 0, "the given-up nodes are back in service");
            }
            assert!(
                status.scale_down.nodes.is_empty(),
                "nothing unneeded mid-update: {status:#?}"
            );
            let kept = status
                .scale_down
                .unremovable
                .iter()
                .filter(|k| k.reason == "NodeGroupUpdating");
            assert!(kept.count() >= 2, "{:#?}", status.scale_down.unremovable);
        }
        !updating && updating_loops > 0
    })
    .await;
    assert!(gave_up);
    assert_eq!(
        server.requests("NodeGroupDeleteNodes"),
        deletes,
        "no node removed mid-update"
    );
    assert!(updating_loops >= 25, "{updating_loops}");
    // Once EKS is done, scale-down goes on: the group ends on one node for its one pod.
    play(&server, &cluster, &mut once, 200, |_, _, view| {
        view.nodes.len() == 1
    })
    .await;
}

#[tokio::test]
async fn drifted_nodes_on_the_simulated_eks_are_replaced_one_at_a_time() {
    let scenario = "
cluster: drift
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 2, maxSize: 6, desiredSize: 3, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let policy =
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\", reasons: [Drifted]}]\n";
    let mut once = RunOnce::new(client.clone(), acting(Some(policy))).acting_on(cluster.clone());
    cluster.create_pods(owned("web", 3, 1200, 1 << 30));
    let old: BTreeSet<String> = (cluster.view().await.unwrap().nodes.iter())
        .map(|n| n.name.clone())
        .collect();
    // A launch template version set on the Auto Scaling group outside EKS.
    server
        .sim()
        .set_image("general", "ami-eks-amd64-2")
        .unwrap();
    let mut most = 0;
    let mut drifted = BTreeSet::new();
    play(&server, &cluster, &mut once, 300, |_, status, view| {
        for d in &status.scale_down.disruptions {
            assert_eq!(d.reason, "drifted");
            drifted.insert(d.node.clone());
        }
        let leaving = (view.nodes.iter())
            .filter(|n| n.tainted(TO_BE_DELETED_TAINT) || !n.ready)
            .count();
        most = most.max(leaving);
        let image = |n: &&Arc<ekscale::model::Node>| n.labels.get(NODE_GROUP_IMAGE_LABEL).cloned();
        let all_new = (view.nodes.iter()).all(|n| image(&n).as_deref() == Some("ami-eks-amd64-2"));
        all_new && view.pods.iter().all(|p| p.node_name.is_some())
    })
    .await;
    assert_eq!(drifted, old, "each old node was found drifted");
    assert_eq!(most, 1, "one at a time");
}

#[tokio::test]
async fn the_cluster_configuration_is_reloaded_and_a_bad_one_keeps_the_last_good() {
    let (server, config, cluster) = simulated(FOUR).await;
    let client = ProviderClient::new(&config).unwrap();
    let file = "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"3\"}]\n";
    let mut once = RunOnce::new(client, acting(Some(file))).acting_on(cluster.clone());
    let allowed = |status: &Status| {
        let b = status
            .scale_down
            .disruption_budgets
            .iter()
            .find(|b| b.reason == "Empty");
        b.and_then(|b| b.allowed)
    };
    let mut run = async || {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        server.sim().clock().advance(Duration::from_secs(10));
        status
    };
    assert_eq!(allowed(&run().await), Some(3), "the file's");
    cluster.set_disruption_config(Some(
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"1\"}]\n",
    ));
    let status = run().await;
    assert_eq!(
        (allowed(&status), status.disruption_config_refused),
        (Some(1), None)
    );
    cluster.set_disruption_config(Some(
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"-1\"}]\n",
    ));
    for _ in 0..2 {
        let status = run().await;
        assert_eq!(allowed(&status), Some(1), "the last good one stays");
        let refused = status
            .disruption_config_refused
            .expect("said every loop while it lasts");
        assert!(refused.contains("budgets[0].nodes"), "{refused}");
    }
    cluster.set_disruption_config(None);
    let status = run().await;
    assert_eq!(
        (allowed(&status), status.disruption_config_refused),
        (Some(3), None)
    );
}

#[tokio::test]
async fn the_config_map_is_watched_and_a_refused_one_is_told() {
    use common::kube_api::{self, Fake, Objects};
    use ekscale::autoscaler::control::{AutoscalerMetrics, Kube, Publisher};
    ekscale::tls::install_crypto_provider();
    let good = "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"2\"}]\n";
    let bad =
        "nodeGroups:\n  - match: general\n    budgets: [{nodes: \"2\", reasons: [Sometimes]}]\n";
    let map = |text: &str, version: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "ekscale-disruption", "namespace": "kube-system", "resourceVersion": version},
               "data": {"config.yaml": text}})
    };
    let mut objects = Objects::default();
    objects
        .config_maps
        .insert("ekscale-disruption".into(), map(good, "1"));
    // Another ConfigMap of the namespace is no disruption configuration.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "ekscale-autoscaler-status", "namespace": "kube-system", "resourceVersion": "1"},
                       "data": {"status": "{}"}});
    objects
        .config_maps
        .insert("ekscale-autoscaler-status".into(), other);
    let fake = Fake::new(objects);
    let addr = kube_api::serve(fake.clone()).await;
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let mut kube = Kube::connect(config, Default::default()).await.unwrap();
    kube.watch_disruption_config("kube-system").await.unwrap();
    let first = kube.view().await.unwrap();
    assert_eq!(first.disruption_config.as_deref(), Some(good));

    // The bad one arrives through the watch.
    let mut opened = fake.watches.subscribe();
    let watching = opened.wait_for(|w| w.get("configmaps").copied().unwrap_or(0) > 0);
    tokio::time::timeout(Duration::from_secs(10), watching)
        .await
        .unwrap()
        .unwrap();
    let modified = json!({"type": "MODIFIED", "object": map(bad, "2")});
    fake.events.send(("configmaps", modified)).unwrap();
    let second = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let view = kube.view().await.unwrap();
            if view.disruption_config.as_deref() == Some(bad) {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the watch brings the new text");

    let server = Server::start_with(FOUR, None).await;
    let client = ProviderClient::new(&ProviderConfig::plaintext(server.addr.to_string())).unwrap();
    let mut once = RunOnce::new(client, Settings::default());
    let now = std::time::SystemTime::now();
    let allowed = |status: &Status| {
        (status.scale_down.disruption_budgets.iter())
            .find(|b| b.node_group == "general" && b.reason == "Empty")
            .and_then(|b| b.allowed)
    };
    let status = once.run(&first, now).await.unwrap();
    assert_eq!(
        (allowed(&status), status.disruption_config_refused.is_some()),
        (Some(2), false)
    );
    let status = once.run(&second, now).await.unwrap();
    assert_eq!(allowed(&status), Some(2), "the last good one stays");
    let refused = status.disruption_config_refused.clone().expect("refused");
    assert!(refused.contains("unknown variant `Sometimes`"), "{refused}");

    // A metric says the configuration is stale, and what the budgets allow.
    let metrics = AutoscalerMetrics::default();
    metrics.observe_loop(
        &second,
        &status,
        ekscale::autoscaler::control::Acting::DryRun,
        now,
    );
    let text = metrics.encode();
    assert!(
        text.contains("ekscale_disruption_config_refused 1\n"),
        "{text}"
    );
    let series = "ekscale_disruption_budget_allowed_disruptions{node_group=\"general\",reason=\"Empty\"} 2\n";
    assert!(text.contains(series), "{text}");

    // An Event on the ConfigMap says why it was refused.
    let publisher = Publisher::new(kube_api::client(&fake).await, "kube-system", "pod-a");
    assert!(publisher.publish(&status, now).await.is_empty());
    let events = fake.objects.lock().unwrap().events.clone();
    let told = (events.iter())
        .find(|e| e["reason"] == "DisruptionConfigRefused")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(told["type"], "Warning");
    assert_eq!(told["regarding"]["name"], "ekscale-disruption");
    assert!(
        told["note"].as_str().unwrap().contains("Sometimes"),
        "{told}"
    );

    // Expired and drifted nodes are told on the nodes: acted on, or held and by what.
    use ekscale::autoscaler::status::DisruptionStatus;
    let disruption = |node: &str, reason: &str, action: &str, detail: &str| DisruptionStatus {
        node: node.into(),
        node_group: "general".into(),
        reason: reason.into(),
        action: action.into(),
        detail: detail.into(),
    };
    let mut acted = Status::default();
    acted.scale_down.disruptions = vec![
        disruption("ip-a", "expired", "replace", "a new general node first"),
        disruption(
            "ip-b",
            "drifted",
            "wait",
            "general: Drifted, 1 of 1 allowed in use",
        ),
    ];
    fake.objects.lock().unwrap().events.clear();
    assert!(publisher.publish(&acted, now).await.is_empty());
    let events = fake.objects.lock().unwrap().events.clone();
    let seen: Vec<(&str, &str, &str, &str)> = (events.iter())
        .map(|e| {
            fn field(v: &Value) -> &str {
                v.as_str().unwrap()
            }
            (
                field(&e["reason"]),
                field(&e["regarding"]["name"]),
                field(&e["type"]),
                field(&e["note"]),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "Expired",
                "ip-a",
                "Normal",
                "replace: a new general node first"
            ),
            (
                "DisruptionBlocked",
                "ip-b",
                "Normal",
                "drifted: general: Drifted, 1 of 1 allowed in use"
            ),
        ]
    );
}

/// The README's example: the built-in scenario and tests/data/disruption.yaml, printed as the README shows
/// it.
#[test]
fn the_readme_example_is_what_simulate_prints() {
    let provider = common::Binary::start(&[]);
    let args = [
        "--disruption-config",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/disruption-config.yaml"
        ),
        "--now",
        "2026-11-30T10:00:00Z",
    ];
    let lines = common::cluster::readme_shows(
        provider.grpc,
        "tests/data/disruption.yaml",
        &args,
        "Scale-down",
    );
    assert_eq!(
        lines, 10,
        "Scale-down, Nodes kept, Disruptions and Disruption budgets"
    );
}
