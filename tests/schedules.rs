//! Scheduled sizes (`schedules:` in the disruption configuration): `simulate --now` over a snapshot at times
//! inside and outside the windows (office hours: `batch` to zero overnight, back in the morning; `general`
//! grown ahead of the peak), and the loop acting on the simulated cluster over a night, within the `Scheduled`
//! budget, nothing lost. Every time here is the test's own: `--now`, or the scenario's start on the
//! provider's manual clock.

mod common;

use common::Server;
use common::cluster::{list, nodes_of, pending, running, simulate, simulate_json, with_spec};
use common::simulated::owned;
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{
    ClusterSource, ClusterView, DisruptionConfig, ProviderClient, ProviderConfig,
};
use ekscale::autoscaler::{RunOnce, Settings};
use ekscale::model::{Labels, NODE_GROUP_LABEL, TO_BE_DELETED_TAINT};
use ekscale::simulated_cluster::{OnDisagreement, SimulatedCluster};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const OFFICE_HOURS: &str = include_str!("data/schedule-office-hours.yaml");

/// Two general nodes and three batch nodes.
const SCENARIO: &str = "
cluster: office
region: eu-central-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 10, desiredSize: 2}
  - {name: batch, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 3}
";

/// A batch pod: only batch nodes take it.
fn batch(pod: Value) -> Value {
    with_spec(
        pod,
        json!({"nodeSelector": {"eks.amazonaws.com/nodegroup": "batch"}}),
    )
}

/// The scenario's nodes; on the first batch node two batch pods, on the second one, on the third a pod no
/// controller owns; a web pod on general; one big batch pod pending. Returns the batch nodes' names.
async fn office(server: &Server) -> (Vec<String>, Value) {
    let mut items = nodes_of(server.addr, &["general", "batch"]).await;
    let name = |n: &Value| n["metadata"]["name"].as_str().unwrap().to_string();
    let general = name(&items[0]);
    let b: Vec<String> = items[2..].iter().map(name).collect();
    items.push(running(&general, "web-0", "web", "200m", "256Mi"));
    items.push(batch(running(&b[0], "batch-0", "batch", "500m", "512Mi")));
    items.push(batch(running(&b[0], "batch-1", "batch", "500m", "512Mi")));
    items.push(batch(running(&b[1], "batch-2", "batch", "500m", "512Mi")));
    let mut bare = running(&b[2], "scratch", "scratch", "100m", "128Mi");
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    items.push(bare);
    // Too big for what the batch nodes have free: only a new batch node would take it.
    items.push(batch(pending(
        "default",
        "batch-late",
        "batch",
        "1900m",
        "512Mi",
    )));
    (b, list(items))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn group<'r>(result: &'r Value, id: &str) -> &'r Value {
    (result["nodeGroups"].as_array().unwrap().iter())
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("{id}: {result:#}"))
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_is_held_at_zero_overnight_and_general_grown_ahead_of_the_peak() {
    let server = Server::start_with(SCENARIO, None).await;
    let (b, snapshot) = office(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write(&dir, "office.yaml", OFFICE_HOURS);

    // Monday 30 November 2026, 21:00 in Berlin: batch's night.
    let night = [
        "--disruption-config",
        &config,
        "--now",
        "2026-11-30T20:00:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &night);
    let held = group(&result, "batch");
    assert_eq!(
        (&held["minSize"], &held["maxSize"]),
        (&json!(0), &json!(10))
    );
    assert_eq!(
        held["schedule"],
        json!({"minSize": 0, "maxSize": 0, "until": "2026-12-01T07:00:00Z",
               "window": "schedules[0]: \"0 19 * * mon-fri\" for 13h in Europe/Berlin"})
    );
    assert_eq!(group(&result, "general")["schedule"], Value::Null);
    // The emptiest goes first, within the budget of one; the next waits its turn; the node whose pod no
    // controller makes again waits for good.
    let decided: Vec<(&str, &str, &str)> = (result["disruptions"].as_array().unwrap().iter())
        .map(|d| {
            let field = |k: &str| d[k].as_str().unwrap();
            (field("node"), field("reason"), field("action"))
        })
        .collect();
    assert_eq!(
        decided,
        [
            (b[1].as_str(), "scheduled", "remove"),
            (b[0].as_str(), "scheduled", "wait"),
            (b[2].as_str(), "scheduled", "wait"),
        ],
        "{result:#}"
    );
    assert_eq!(
        result["disruptions"][1]["detail"],
        "batch: Scheduled, 1 of 1 allowed in use"
    );
    assert_eq!(
        result["disruptions"][2]["detail"],
        "default/scratch has no controller to make it again elsewhere: a node is never removed for a \
         schedule while that would lose a pod"
    );
    let down = &result["scaleDown"][0];
    assert_eq!(
        (&down["node"], &down["reason"]),
        (&json!(b[1]), &json!("scheduled"))
    );
    assert_eq!(
        down["detail"],
        "over its scheduled maxSize: batch is held at maxSize 0 by schedules[0] until 2026-12-01T07:00:00Z"
    );
    // The pending batch pod waits for the morning, the schedule named.
    let late = (result["noScaleUp"].as_array().unwrap().iter())
        .find(|p| p["pod"] == "default/batch-late")
        .unwrap_or_else(|| panic!("{result:#}"));
    assert_eq!(
        late["reasons"]["batch"],
        "batch is held at maxSize 0 by schedules[0] until 2026-12-01T07:00:00Z"
    );
    assert!(
        result.get("scaleUp").is_none_or(|s| s == &json!([])),
        "{result:#}"
    );

    // Tuesday 10:00 in Berlin: batch's own sizes again, general raised to its peak size at once.
    let morning = [
        "--disruption-config",
        &config,
        "--now",
        "2026-12-01T09:00:00Z",
    ];
    let result = simulate_json(server.addr, &snapshot, &morning);
    assert_eq!(group(&result, "batch")["schedule"], Value::Null);
    assert_eq!(
        group(&result, "general")["schedule"]["minSize"],
        json!(4),
        "{result:#}"
    );
    assert!(result.get("disruptions").is_none(), "{result:#}");
    let ups: BTreeSet<(String, u64)> = (result["scaleUp"].as_array().unwrap().iter())
        .map(|s| {
            let group = s["nodeGroup"].as_str().unwrap().to_string();
            (group, s["delta"].as_u64().unwrap())
        })
        .collect();
    let expected = [("batch".to_string(), 1), ("general".to_string(), 2)];
    assert_eq!(ups, BTreeSet::from(expected), "{result:#}");
    let raised = (result["scaleUp"].as_array().unwrap().iter())
        .find(|s| s["nodeGroup"] == "general")
        .unwrap();
    assert_eq!(
        raised["reason"],
        "general is held at minSize 4 by schedules[0] until 2026-12-01T09:30:00Z: raised from 2 ahead of \
         the pods (as cluster-autoscaler's --enforce-node-group-min-size)"
    );

    // The table names the window in force.
    let path = write(&dir, "snapshot.json", &snapshot.to_string());
    let output = simulate(server.addr, path.as_ref(), &night);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains(
            "schedule: min 0 max 0 until 2026-12-01T07:00:00Z by schedules[0]: \"0 19 * * mon-fri\" for \
             13h in Europe/Berlin"
        ),
        "{table}"
    );
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_without_its_zone_is_refused_naming_the_flag() {
    let server = Server::start_with(SCENARIO, None).await;
    let (_, snapshot) = office(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "snapshot.json", &snapshot.to_string());
    for bad in ["2026-11-30T20:00:00", "2026-11-30", "tonight"] {
        let output = simulate(server.addr, path.as_ref(), &["--now", bad]);
        assert_eq!(output.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--now") && stderr.contains("is no RFC 3339 time with a zone"),
            "{bad}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{bad}: nothing decided");
    }
    let zoned = simulate(
        server.addr,
        path.as_ref(),
        &["--now", "2026-11-30T21:00:00+01:00"],
    );
    assert!(
        zoned.status.success(),
        "{}",
        String::from_utf8_lossy(&zoned.stderr)
    );
}

// The loop acting on the simulated cluster.

/// Monday 30 November 2026, 18:50 in Berlin: ten minutes before batch's night.
const EVENING: &str = "2026-11-30T17:50:00Z";

/// Two general nodes and two batch nodes, new nodes a minute away, the clock starting at [`EVENING`].
fn night_scenario() -> String {
    format!(
        "
cluster: night
region: eu-central-1
start: {EVENING}
nodeGroups:
  - {{name: general, instanceType: m5.large, zones: [eu-central-1a], minSize: 1, maxSize: 10, desiredSize: 2,
     provisioningDelay: 60s, deletionDelay: 10s}}
  - {{name: batch, instanceType: m5.large, zones: [eu-central-1a], minSize: 0, maxSize: 10, desiredSize: 2,
     provisioningDelay: 60s, deletionDelay: 10s}}
"
    )
}

fn at(text: &str) -> SystemTime {
    humantime::parse_rfc3339(text).unwrap()
}

fn pod_names(cluster: &SimulatedCluster) -> BTreeSet<String> {
    cluster.pods().iter().map(|p| p.key()).collect()
}

fn batch_nodes(view: &ClusterView) -> Vec<&str> {
    (view.nodes.iter())
        .filter(|n| n.labels.get(NODE_GROUP_LABEL).map(String::as_str) == Some("batch"))
        .map(|n| n.name.as_str())
        .collect()
}

/// Runs the loop every 10 simulated seconds until `done` says so (at most `loops` times), checking after
/// each loop that it had no problem and no pod was lost; returns each loop's status.
async fn play(
    server: &Server,
    cluster: &SimulatedCluster,
    once: &mut RunOnce,
    loops: usize,
    mut done: impl FnMut(&Status, &ClusterView) -> bool,
) -> Vec<Status> {
    let pods = pod_names(cluster);
    let mut all = Vec::new();
    for i in 0..loops {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "loop {i}: {:?}", status.errors);
        assert_eq!(pod_names(cluster), pods, "loop {i}: a pod was lost");
        let finished = done(&status, &view);
        all.push(status);
        if finished {
            return all;
        }
        server.sim().clock().advance(Duration::from_secs(10));
    }
    panic!("not done after {loops} loops: {:#?}", all.last());
}

#[tokio::test]
async fn batch_goes_to_zero_overnight_one_node_at_a_time_and_comes_back_in_the_morning() {
    let server = Server::start_with(&night_scenario(), None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let cluster = SimulatedCluster::new(&config, server.sim().clock().clone())
        .unwrap()
        .starting_at(at(EVENING))
        .on_disagreement(OnDisagreement::Panic);
    let cluster = Arc::new(cluster);
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        disruption: Some(Arc::new(DisruptionConfig::parse(OFFICE_HOURS).unwrap())),
        ..Settings::default()
    };
    settings.scale_down.unneeded_time = Duration::from_secs(60);
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client, settings).acting_on(cluster.clone());
    let selector = Labels::from([(NODE_GROUP_LABEL.to_string(), "batch".to_string())]);
    let mut jobs = owned("batch", 3, 600, 512 << 20);
    for pod in &mut jobs {
        Arc::make_mut(&mut pod.scheduling).node_selector = selector.clone();
    }
    cluster.create_pods(jobs);
    cluster.create_pods(owned("web", 4, 300, 256 << 20));

    // The evening: every pod runs.
    let running = |_: &Status, view: &ClusterView| view.pods.iter().all(|p| p.node_name.is_some());
    play(&server, &cluster, &mut once, 30, running).await;
    assert_eq!(batch_nodes(&cluster.view().await.unwrap()).len(), 2);

    // 19:00 in Berlin: batch goes, one node at a time, until it has none; its pods wait, the window named.
    let to_night = at("2026-11-30T18:00:00Z")
        .duration_since(cluster.now())
        .unwrap();
    server.sim().clock().advance(to_night);
    let mut most = 0;
    let statuses = play(&server, &cluster, &mut once, 100, |status, view| {
        let tainted = (view.nodes.iter())
            .filter(|n| batch_nodes(view).contains(&n.name.as_str()))
            .filter(|n| n.tainted(TO_BE_DELETED_TAINT))
            .count();
        most = most.max(tainted);
        let held = "batch is held at maxSize 0 by schedules[0] until 2026-12-01T07:00:00Z";
        let waiting = (status.no_scale_up.iter())
            .filter(|p| p.pod.starts_with("default/batch-"))
            .all(|p| p.reasons.get("batch").map(String::as_str) == Some(held));
        batch_nodes(view).is_empty() && status.no_scale_up.len() == 3 && waiting
    })
    .await;
    assert_eq!(most, 1, "one batch node at a time, as its budget says");
    let scheduled: BTreeSet<&str> = (statuses.iter())
        .flat_map(|s| &s.scale_down.disruptions)
        .filter(|d| d.reason == "scheduled" && d.action == "remove")
        .map(|d| d.node.as_str())
        .collect();
    assert_eq!(scheduled.len(), 2, "{:#?}", statuses.last());
    let last = statuses.last().unwrap();
    let batch = last.node_groups.iter().find(|g| g.id == "batch").unwrap();
    assert_eq!(batch.schedule.as_ref().map(|s| s.max_size), Some(0));
    assert_eq!((batch.min_size, batch.max_size), (0, 10));

    // 08:00 in Berlin: the window closes and batch comes back; at 08:30 general is grown for the peak.
    let to_morning = at("2026-12-01T07:00:00Z")
        .duration_since(cluster.now())
        .unwrap();
    server.sim().clock().advance(to_morning);
    play(&server, &cluster, &mut once, 30, running).await;
    assert!(!batch_nodes(&cluster.view().await.unwrap()).is_empty());
    let to_peak = at("2026-12-01T07:30:00Z")
        .duration_since(cluster.now())
        .unwrap();
    server.sim().clock().advance(to_peak);
    let statuses = play(&server, &cluster, &mut once, 30, |status, _| {
        let general = status
            .node_groups
            .iter()
            .find(|g| g.id == "general")
            .unwrap();
        general.registered >= 4
    })
    .await;
    let raised = (statuses.iter().flat_map(|s| &s.scale_up))
        .find(|s| s.node_group == "general" && s.reason.contains("held at minSize 4"));
    assert!(raised.is_some(), "{:#?}", statuses.first());
}
