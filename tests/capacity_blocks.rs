//! Capacity paid for ahead (issue 61), as the companion plans with it: a Capacity Block group grown only
//! inside its window and into its free instances, its nodes drained `drainLead` before EKS scales it in,
//! nodes on reserved capacity kept from scale-down, and prepaid room chosen first; through `simulate` over
//! snapshots of the simulated EKS (whose clock starts at the snapshot's now, `--now`).

mod common;

use common::Server;
use common::cluster::{
    list, nodes_of, pending, reasons, running, scale_ups, simulate_json, with_spec,
};
use serde_json::{Value, json};
use std::time::Duration;

/// The snapshot's time: five minutes after its nodes were made (`common::cluster::CREATED`).
const NOW: &str = "2026-11-30T00:05:00Z";

/// `NOW` moved by `minutes` (earlier when negative), as RFC 3339.
fn stamp(minutes: i64) -> String {
    let now = humantime::parse_rfc3339(NOW).unwrap();
    let moved = if minutes >= 0 {
        now + Duration::from_secs(minutes as u64 * 60)
    } else {
        now - Duration::from_secs(minutes.unsigned_abs() * 60)
    };
    humantime::format_rfc3339_seconds(moved).to_string()
}

/// A GPU group on a Capacity Block from `start` to `end` (minutes from `NOW`) with `available` of its 4
/// instances free and `gpus` running, beside an On-Demand group of c5.xlarge with `general` running.
fn scenario((start, end): (i64, i64), available: u32, (gpus, general): (u32, u32)) -> String {
    format!(
        "
cluster: capacity
region: us-east-1
start: \"{NOW}\"
nodeGroups:
  - name: gpu
    instanceType: g4dn.xlarge
    capacityType: CAPACITY_BLOCK
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: {gpus}
    labels: {{workload: gpu}}
    reservations:
      - {{id: cr-0b10c4, type: capacity-block, start: \"{}\", end: \"{}\", total: 4, available: {available}}}
  - {{name: ondemand, instanceType: c5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: {general}}}
",
        stamp(start),
        stamp(end)
    )
}

fn simulate(server: &Server, items: Vec<Value>, extra: &[&str]) -> Value {
    let mut args = vec!["--now", NOW];
    args.extend_from_slice(extra);
    simulate_json(server.addr, &list(items), &args)
}

/// `simulate` with a disruption configuration.
fn with_config(server: &Server, items: Vec<Value>, config: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("disruption.yaml");
    std::fs::write(&path, config).unwrap();
    simulate(
        server,
        items,
        &["--disruption-config", path.to_str().unwrap()],
    )
}

fn group<'r>(result: &'r Value, id: &str) -> &'r Value {
    (result["nodeGroups"].as_array().unwrap().iter())
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("no group {id}: {result:#}"))
}

fn skipped(result: &Value, id: &str) -> String {
    group(result, id)["skipped"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A pod only the GPU group's nodes take.
fn for_gpu(name: &str) -> Value {
    let pod = pending("default", name, "train", "1500m", "2Gi");
    with_spec(pod, json!({"nodeSelector": {"workload": "gpu"}}))
}

/// A pod either group takes, one a node; least-waste alone prefers the c5.xlarge (less memory left over).
fn anywhere(name: &str) -> Value {
    pending("default", name, "web", "2500m", "3Gi")
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_group_grows_only_inside_its_window_saying_when_it_opens_or_that_it_closed() {
    // Not open yet: it opens in two hours.
    let server = Server::start_with(&scenario((120, 24 * 60), 4, (0, 0)), None).await;
    let result = simulate(&server, vec![for_gpu("train-0")], &[]);
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    let why = reasons(&result, "default/train-0")["gpu"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains("cr-0b10c4 is not open yet"), "{why}");
    assert!(why.contains(&format!("opens at {}", stamp(120))), "{why}");
    assert_eq!(skipped(&result, "gpu"), why);
    assert_eq!(group(&result, "gpu")["capacityType"], "CAPACITY_BLOCK");
    assert_eq!(group(&result, "gpu")["reservations"][0]["available"], 4);

    // Open: it grows for the pod.
    let server = Server::start_with(&scenario((-60, 24 * 60), 4, (0, 0)), None).await;
    let result = simulate(&server, vec![for_gpu("train-0")], &[]);
    assert_eq!(scale_ups(&result), [("gpu".to_string(), 1)], "{result:#}");

    // Closed: it ended ten minutes ago, and EKS scales the group in.
    let server = Server::start_with(&scenario((-24 * 60, -10), 4, (0, 0)), None).await;
    let result = simulate(&server, vec![for_gpu("train-0")], &[]);
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    let why = skipped(&result, "gpu");
    assert!(
        why.contains("window closed") && why.contains("EKS scales the group in"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepaid_instances_come_first_and_a_full_block_is_no_room() {
    let open = (-60, 24 * 60);
    // Two free instances: both pods on the block, though least-waste alone takes c5.xlarge nodes.
    let server = Server::start_with(&scenario(open, 2, (0, 0)), None).await;
    let pods = vec![anywhere("web-0"), anywhere("web-1"), anywhere("web-2")];
    for expander in ["least-waste", "price"] {
        let result = simulate(&server, pods[..2].to_vec(), &["--expander", expander]);
        assert_eq!(
            scale_ups(&result),
            [("gpu".to_string(), 2)],
            "{expander}: {result:#}"
        );
    }
    // Three pods for two free instances: the block takes two, the third goes On-Demand.
    let result = simulate(&server, pods.clone(), &[]);
    let mut ups = scale_ups(&result);
    ups.sort();
    assert_eq!(
        ups,
        [("gpu".to_string(), 2), ("ondemand".to_string(), 1)],
        "{result:#}"
    );

    // Full: the group cannot grow, and says why.
    let server = Server::start_with(&scenario(open, 0, (0, 0)), None).await;
    let result = simulate(&server, pods[..1].to_vec(), &[]);
    assert_eq!(
        scale_ups(&result),
        [("ondemand".to_string(), 1)],
        "{result:#}"
    );
    let why = skipped(&result, "gpu");
    assert!(
        why.contains("capacity block cr-0b10c4 has no available instance"),
        "{why}"
    );
}

/// The GPU group's node names, as `nodes_of` names them, and the snapshot's nodes with a pod on each GPU
/// node and the On-Demand node full.
async fn busy(server: &Server) -> (Vec<String>, Vec<Value>) {
    let mut items = nodes_of(server.addr, &["gpu", "ondemand"]).await;
    let name = |n: &Value| n["metadata"]["name"].as_str().unwrap().to_string();
    let mut gpu: Vec<String> = (items.iter())
        .filter(|n| n["metadata"]["labels"]["workload"] == "gpu")
        .map(name)
        .collect();
    gpu.sort(); // as the report lists leaving nodes
    let general: Vec<String> = (items.iter())
        .filter(|n| n["metadata"]["labels"]["workload"] != "gpu")
        .map(name)
        .collect();
    for (i, node) in gpu.iter().enumerate() {
        items.push(running(
            node,
            &format!("train-{i}"),
            "train",
            "2500m",
            "3Gi",
        ));
    }
    items.push(running(&general[0], "full", "full", "3500m", "2Gi"));
    (gpu, items)
}

fn leaving(result: &Value) -> Vec<(String, String, String, String)> {
    (result["leaving"].as_array().unwrap().iter())
        .map(|l| {
            let field = |k: &str| l[k].as_str().unwrap().to_string();
            (field("node"), field("reason"), field("action"), field("at"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocks_nodes_drain_from_drain_lead_before_eks_scales_the_group_in() {
    // The block ends in 45 minutes: EKS scales the group in in 5, and the drain started 5 minutes ago.
    let server = Server::start_with(&scenario((-24 * 60, 45), 2, (2, 1)), None).await;
    let (gpu, items) = busy(&server).await;
    let result = simulate(&server, items.clone(), &[]);
    let expected: Vec<_> = (gpu.iter())
        .map(|n| {
            (
                n.clone(),
                "capacityBlockEnding".into(),
                "drain".into(),
                stamp(5),
            )
        })
        .collect();
    assert_eq!(leaving(&result), expected, "{result:#}");
    // Their pods go On-Demand; nothing is asked of the block's group again.
    assert_eq!(
        scale_ups(&result),
        [("ondemand".to_string(), 2)],
        "{result:#}"
    );
    assert!(
        skipped(&result, "gpu").contains("nothing is scaled up"),
        "{result:#}"
    );

    // It ends in 55 minutes: the drain starts in 5, unless the group's entry asks for 20 minutes' lead.
    let server = Server::start_with(&scenario((-24 * 60, 55), 2, (2, 1)), None).await;
    let (gpu, items) = busy(&server).await;
    let calm = simulate(&server, items.clone(), &[]);
    assert_eq!(calm["leaving"], json!([]), "{calm:#}");
    assert!(scale_ups(&calm).is_empty(), "{calm:#}");
    let early = with_config(
        &server,
        items,
        "nodeGroups:\n  - {match: ^gpu$, drainLead: 20m}\n",
    );
    let names: Vec<String> = leaving(&early).into_iter().map(|l| l.0).collect();
    assert_eq!(names, gpu, "{early:#}");
    assert_eq!(early["leaving"][0]["at"], stamp(15));
}

fn unremovable(result: &Value, node: &str) -> Option<String> {
    (result["unremovable"].as_array().into_iter().flatten())
        .find(|k| k["node"] == node)
        .map(|k| k["reason"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_on_an_active_block_are_kept_from_scale_down_unless_the_entry_lets_them_go() {
    let server = Server::start_with(&scenario((-60, 24 * 60), 2, (2, 1)), None).await;
    let mut items = nodes_of(server.addr, &["gpu", "ondemand"]).await;
    let gpu: Vec<String> = (items.iter())
        .filter(|n| n["metadata"]["labels"]["workload"] == "gpu")
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    // One GPU node lightly used, one empty: neither is removed while the block is paid for.
    items.push(running(&gpu[0], "small", "small", "100m", "128Mi"));
    let result = simulate(&server, items.clone(), &[]);
    for node in &gpu {
        assert_eq!(
            unremovable(&result, node).as_deref(),
            Some("ReservedCapacity"),
            "{result:#}"
        );
    }
    let let_go = with_config(
        &server,
        items,
        "nodeGroups:\n  - {match: gpu, scaleDownReserved: true}\n",
    );
    for node in &gpu {
        assert_ne!(
            unremovable(&let_go, node).as_deref(),
            Some("ReservedCapacity"),
            "{let_go:#}"
        );
    }
    let unneeded =
        (let_go["scaleDown"].as_array().into_iter().flatten()).any(|d| d["node"] == gpu[1]);
    assert!(unneeded, "the empty one is unneeded: {let_go:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_shows_a_groups_blocks_and_now_needs_its_zone() {
    let server = Server::start_with(&scenario((-60, 24 * 60), 2, (0, 0)), None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, list(vec![]).to_string()).unwrap();
    let output = common::cluster::simulate(server.addr, &path, &["--now", NOW]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    let line = format!(
        "reserved: CAPACITY_BLOCK cr-0b10c4 capacity-block {} to {}, 2 of 4 available",
        stamp(-60),
        stamp(24 * 60)
    );
    assert!(table.contains(&line), "{table}");
    // A time without its zone names no instant: refused, naming the flag.
    let output = common::cluster::simulate(server.addr, &path, &["--now", "2026-11-30T00:05:00"]);
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("--now") && error.contains("no RFC 3339 time"),
        "{error}"
    );
}

/// A block from 08:00 to 10:00 (EKS scales its group in at 09:20, the drain starts at 09:10) with its one
/// node, beside an On-Demand group; the simulated EKS's clock starts at 09:00.
const LOOPING: &str = "
cluster: capacity
region: us-east-1
start: \"2026-03-02T09:00:00Z\"
nodeGroups:
  - name: gpu
    instanceType: g4dn.xlarge
    capacityType: CAPACITY_BLOCK
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 1
    provisioningDelay: 60s
    deletionDelay: 10s
    reservations:
      - {id: cr-0b10c4, type: capacity-block, start: \"2026-03-02T08:00:00Z\", end: \"2026-03-02T10:00:00Z\",
         total: 4, available: 3}
  - {name: ondemand, instanceType: c5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 1,
     provisioningDelay: 60s, deletionDelay: 10s}
";

#[tokio::test]
async fn the_loop_drains_a_blocks_node_before_eks_scales_it_in_and_never_grows_it_back() {
    use common::simulated::owned;
    use ekscale::autoscaler::{ClusterSource, ProviderClient, ProviderConfig, RunOnce, Settings};
    use ekscale::cloud::NodeGroupBackend;
    use ekscale::model::TO_BE_DELETED_TAINT;
    use ekscale::simulated_cluster::{OnDisagreement, SimulatedCluster};
    use std::sync::Arc;

    let server = Server::start_with(LOOPING, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let clock = server.sim().clock().clone();
    let cluster = Arc::new(
        SimulatedCluster::new(&config, clock.clone())
            .unwrap()
            .starting_at(humantime::parse_rfc3339("2026-03-02T09:00:00Z").unwrap())
            .on_disagreement(OnDisagreement::Panic),
    );
    let settings = Settings {
        act: true,
        ..Settings::default()
    };
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client, settings).acting_on(cluster.clone());
    // One pod a node: one runs on the block's node.
    cluster.create_pods(owned("train", 2, 2500, 1 << 30));
    let start = cluster.now();
    let (drain_from, scale_in) = (start + 10 * MINUTE, start + 20 * MINUTE);
    let view = cluster.view().await.unwrap();
    let block_node = (view.nodes.iter())
        .find(|n| server.sim().node_group_of(&n.provider_id).as_deref() == Some("gpu"))
        .expect("the block's node")
        .name
        .clone();
    let (mut tainted_at, mut gone_at) = (None, None);
    for i in 0..25 {
        let view = cluster.view().await.unwrap();
        match view.nodes.iter().find(|n| n.name == block_node) {
            Some(n) if n.tainted(TO_BE_DELETED_TAINT) => {
                tainted_at.get_or_insert(cluster.now());
            }
            None => {
                gone_at.get_or_insert(cluster.now());
            }
            _ => {}
        }
        let status = once.run(&view, cluster.now()).await.unwrap();
        let leaving = status
            .leaving
            .iter()
            .any(|l| l.reason == "capacityBlockEnding");
        assert_eq!(
            leaving,
            gone_at.is_none() && cluster.now() >= drain_from,
            "loop {i}"
        );
        let target = server.sim().target_size("gpu").unwrap();
        assert!(
            target <= 1,
            "loop {i}: the block's group was grown to {target}"
        );
        assert_eq!(cluster.pods().len(), 2, "loop {i}: a pod was lost");
        clock.advance(MINUTE);
    }
    let tainted_at = tainted_at.expect("its drain started");
    assert!(
        tainted_at >= drain_from && tainted_at < scale_in,
        "drained from drainLead on"
    );
    assert!(
        gone_at.expect("it went") <= scale_in,
        "gone before EKS scales the group in"
    );
    assert_eq!(server.sim().target_size("gpu").unwrap(), 0);
    let pods = cluster.pods();
    assert!(
        pods.iter()
            .all(|p| p.node_name.is_some() && p.node_name.as_deref() != Some(block_node.as_str())),
        "both pods run, neither on the block's node: {pods:?}"
    );
}

const MINUTE: Duration = Duration::from_secs(60);

/// The repository's pair: `tests/data/capacity-scenario.yaml` behind `tests/data/capacity.yaml`.
fn pair() -> (String, std::path::PathBuf) {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let scenario = std::fs::read_to_string(data.join("capacity-scenario.yaml")).unwrap();
    (scenario, data.join("capacity.yaml"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repositorys_pair_drains_the_ending_block_waits_for_the_next_and_keeps_the_odcrs_nodes()
{
    let (scenario, snapshot) = pair();
    let server = Server::start_with(&scenario, None).await;
    let args = ["--format", "json", "--now", "2026-12-01T09:00:00Z"];
    let output = common::cluster::simulate(server.addr, &snapshot, &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    // The training block ends at 09:45: both its nodes drain for EKS's scale-in at 09:05.
    let training = ["ip-i-7191f49c41ac28496", "ip-i-fa41c76ab6a60a8a9"];
    let expected: Vec<_> = (training.iter())
        .map(|n| {
            let drain = (n.to_string(), "capacityBlockEnding".into(), "drain".into());
            (
                drain.0,
                drain.1,
                drain.2,
                "2026-12-01T09:05:00Z".to_string(),
            )
        })
        .collect();
    assert_eq!(leaving(&result), expected, "{result:#}");
    // Their batch pods take room on the general group's nodes; nothing is scaled up.
    let general = (result["placed"].as_array().unwrap().iter())
        .filter(|p| p["pod"].as_str().unwrap().starts_with("default/batch-"))
        .filter(|p| p["nodeGroup"] == "general")
        .count();
    assert_eq!(general, 2, "{result:#}");
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    // The inference block opens at noon: its pod waits, saying when.
    let why = reasons(&result, "default/serve-0")["inference"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains("opens at 2026-12-01T12:00:00Z"), "{why}");
    // The ODCR's two instances are the general group's two oldest nodes: kept; the newest,
    // lightly used, is scaled down.
    for node in ["ip-i-5bf999155ad187796", "ip-i-d29048e048fda012f"] {
        assert_eq!(
            unremovable(&result, node).as_deref(),
            Some("ReservedCapacity"),
            "{result:#}"
        );
    }
    let newest = "ip-i-f587dfc5b135c2c32";
    let unneeded = (result["scaleDown"].as_array().unwrap().iter()).any(|d| d["node"] == newest);
    assert!(unneeded, "the newest holds none of it: {result:#}");
}
