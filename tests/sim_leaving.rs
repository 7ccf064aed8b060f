//! Nodes that go away on the simulated EKS, through the provider's real gRPC: what EC2 says about instances
//! (`ekscale.v1.NodeGroups/ListLeavingInstances`) as the scenario and the run-time calls raise it, each
//! group's capacity rebalancing and node repair config (`DescribeNodeGroups`), the instances going and
//! coming in NodeGroupNodes, and the monitoring agent's conditions on the simulated cluster's nodes.

mod common;

use common::Server;
use ekscale::autoscaler::{ClusterSource, ProviderClient, ProviderConfig};
use ekscale::cloud::Pick;
use ekscale::model::{InstanceState, LeavingReason, NODE_GROUP_LABEL};
use ekscale::simulated_cluster::{OnDisagreement, SimulatedCluster};
use std::time::{Duration, SystemTime};

/// Every time here is read from the scenario's start and the provider's manual clock.
const SCENARIO: &str = r#"
cluster: leaving
region: us-east-1
start: 2026-03-02T09:00:00Z
nodeGroups:
  - {name: spot, instanceType: m5.large, capacityType: SPOT, zones: [us-east-1a], minSize: 0, maxSize: 4,
     desiredSize: 2, provisioningDelay: 90s, deletionDelay: 10s}
  - {name: web, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 2,
     provisioningDelay: 60s, deletionDelay: 10s}
  - name: gpu
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 2
    desiredSize: 1
    provisioningDelay: 90s
    deletionDelay: 10s
    nodeRepairConfig:
      enabled: true
      maxParallelNodesRepairedCount: 1
      nodeRepairConfigOverrides:
        - {nodeMonitoringCondition: AcceleratedHardwareReady, nodeUnhealthyReason: NvidiaXID79Error,
           minRepairWaitTimeMins: 5, repairAction: Replace}
instanceEvents:
  - {nodeGroup: spot, index: 1, kind: spotInterruption, at: "2026-03-02T09:01:00Z"}
  - {nodeGroup: web, index: 0, kind: scheduledEvent, at: "2026-03-02T12:00:00Z"}
"#;

fn start() -> SystemTime {
    humantime::parse_rfc3339("2026-03-02T09:00:00Z").unwrap()
}

/// The leaving instances the provider serves now, as `(group, instance, reason, at)`.
async fn leaving(client: &ProviderClient) -> Vec<(String, String, LeavingReason, SystemTime)> {
    client.refresh().await.unwrap();
    let served = client.leaving_instances().await.unwrap().expect("served");
    assert!(served.refused.is_empty(), "{:?}", served.refused);
    (served.instances.iter())
        .map(|l| (l.node_group.clone(), l.id.clone(), l.reason, l.at))
        .collect()
}

async fn states(client: &ProviderClient, group: &str) -> Vec<(String, InstanceState)> {
    client.refresh().await.unwrap();
    (client.nodes(group).await.unwrap().into_iter())
        .map(|i| (i.id, i.state))
        .collect()
}

#[tokio::test]
async fn leaving_instances_and_repair_configs_are_served_over_grpc() {
    let server = Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let client = ProviderClient::new(&config).unwrap();
    client.refresh().await.unwrap();
    let described = client.node_group_states().await.unwrap().unwrap();
    assert!(described["spot"].capacity_rebalance && !described["web"].capacity_rebalance);
    let repair = described["gpu"]
        .node_repair
        .as_ref()
        .expect("gpu's nodeRepairConfig");
    assert!(repair.enabled);
    assert_eq!(repair.max_parallel_nodes_repaired_count, Some(1));
    assert_eq!(
        repair.overrides[0].node_unhealthy_reason,
        "NvidiaXID79Error"
    );
    assert_eq!(described["web"].node_repair, None);

    let spot = states(&client, "spot").await;
    let web = states(&client, "web").await;
    // From the start: the scheduled event (known ahead) and the interruption due in one minute.
    let hour = Duration::from_secs(3600);
    assert_eq!(
        leaving(&client).await,
        [
            (
                "spot".into(),
                spot[1].0.clone(),
                LeavingReason::SpotInterruption,
                start() + Duration::from_secs(60)
            ),
            (
                "web".into(),
                web[0].0.clone(),
                LeavingReason::ScheduledEvent,
                start() + 3 * hour
            ),
        ]
    );
    // At the deadline the instance goes and the group launches another in its place.
    server.sim().clock().advance(Duration::from_secs(60));
    let now = states(&client, "spot").await;
    assert_eq!(now[1], (spot[1].0.clone(), InstanceState::Deleting));
    assert_eq!(now[2].1, InstanceState::Creating);
    assert_eq!(client.target_size("spot").await.unwrap(), 2);
    server.sim().clock().advance(Duration::from_secs(10));
    assert_eq!(leaving(&client).await.len(), 1, "gone, no longer leaving");

    // Raised at run time: a rebalance recommendation, which the Spot group answers with a replacement
    // launched beside its target (which stays as it was, as AWS leaves DesiredCapacity alone).
    let rebalanced = server.sim().rebalance("spot", Pick::Index(0)).unwrap();
    let said = leaving(&client).await;
    assert!(said.contains(&(
        "spot".into(),
        rebalanced[0].clone(),
        LeavingReason::Rebalance,
        server.sim().wall_now()
    )));
    assert_eq!(client.target_size("spot").await.unwrap(), 2);
    let creating = (states(&client, "spot").await.into_iter())
        .filter(|(_, state)| *state == InstanceState::Creating)
        .count();
    assert_eq!(
        creating, 2,
        "the interrupted one's replacement, and the rebalanced one's"
    );
}

#[tokio::test]
async fn an_unhealthy_node_carries_its_condition_and_the_group_replaces_it() {
    let server = Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    // The cluster's wall clock is the simulated EKS's: both read the scenario's start.
    let cluster = SimulatedCluster::new(&config, server.sim().clock().clone())
        .unwrap()
        .starting_at(server.sim().epoch())
        .on_disagreement(OnDisagreement::Panic);
    cluster.step().await.unwrap();
    let gpu = (cluster.nodes().into_iter())
        .find(|n| n.labels.get(NODE_GROUP_LABEL).map(String::as_str) == Some("gpu"))
        .expect("the gpu node");
    cluster
        .set_node_condition(&gpu.name, "AcceleratedHardwareReady", "NvidiaXID79Error")
        .unwrap();
    let sim = server.sim();
    sim.mark_unhealthy(
        &gpu.provider_id,
        "AcceleratedHardwareReady",
        "NvidiaXID79Error",
        cluster.now(),
    )
    .unwrap();
    let view = cluster.view().await.unwrap();
    let node = view.nodes.iter().find(|n| n.name == gpu.name).unwrap();
    assert_eq!(node.problems.len(), 1);
    assert_eq!(node.problems[0].condition, "AcceleratedHardwareReady");
    assert_eq!(node.problems[0].since, Some(cluster.now()));
    // The override's five minutes, then the instance is replaced: a new node, without the condition.
    sim.clock().advance(Duration::from_secs(299));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 0);
    sim.clock().advance(Duration::from_secs(1));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 1);
    sim.clock().advance(Duration::from_secs(90));
    let view = cluster.view().await.unwrap();
    let gpus: Vec<_> = (view.nodes.iter())
        .filter(|n| n.labels.get(NODE_GROUP_LABEL).map(String::as_str) == Some("gpu"))
        .collect();
    assert_eq!(gpus.len(), 1);
    assert_ne!(gpus[0].provider_id, gpu.provider_id);
    assert!(gpus[0].problems.is_empty());
}

/// The repository's pair (tests/data/leaving-scenario.yaml and tests/data/leaving.yaml, the README's example),
/// the provider in-process on a manual clock that stays at the scenario's `start` (the snapshot's now), so
/// nothing the scenario says changes while `simulate` runs: the provider serves its four leaving instances,
/// one row each, and `simulate` runs over the snapshot, each node accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repositorys_leaving_snapshot_simulates() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = std::fs::read_to_string(root.join("tests/data/leaving-scenario.yaml")).unwrap();
    let server = Server::start_with(&scenario, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let client = ProviderClient::new(&config).unwrap();
    let at = |rfc3339: &str| humantime::parse_rfc3339(rfc3339).unwrap();
    assert_eq!(
        leaving(&client).await,
        [
            (
                "general".into(),
                "aws:///us-east-1a/i-af6470d5239ba6121".into(),
                LeavingReason::ScheduledEvent,
                at("2026-12-02T03:00:00Z")
            ),
            (
                "general".into(),
                "aws:///us-east-1b/i-772768cf1532ca5f0".into(),
                LeavingReason::InstanceStopped,
                at("2026-12-01T09:00:00Z")
            ),
            (
                "spot".into(),
                "aws:///us-east-1a/i-4f1a62cd47693503c".into(),
                LeavingReason::SpotInterruption,
                at("2026-12-01T09:01:30Z")
            ),
            (
                "spot".into(),
                "aws:///us-east-1b/i-d5c791b06476ff27b".into(),
                LeavingReason::Rebalance,
                at("2026-12-01T09:00:00Z")
            ),
        ]
    );
    let snapshot = root.join("tests/data/leaving.yaml");
    let addr = server.addr;
    let output = tokio::task::spawn_blocking(move || {
        common::cluster::simulate(addr, &snapshot, &["--format", "json"])
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // Every kind is seen and acted on: the cloud's four through ListLeavingInstances, the monitoring agent's
    // KernelReady through the node. The group replaces what it replaces itself (capacity rebalancing, EKS's
    // repair); the rest drain, their pods planned elsewhere.
    let mut leaving_nodes: Vec<(String, String, String)> = (result["leaving"].as_array().unwrap())
        .iter()
        .map(|l| {
            let word = |key: &str| l[key].as_str().unwrap().to_string();
            (word("nodeGroup"), word("reason"), word("action"))
        })
        .collect();
    leaving_nodes.sort();
    let expected = [
        ("general", "instanceStopped", "drain"),
        ("general", "scheduledEvent", "drain"),
        ("gpu", "unhealthy", "none"),
        ("spot", "rebalance", "none"),
        ("spot", "spotInterruption", "drain"),
    ]
    .map(|(g, r, a)| (g.to_string(), r.to_string(), a.to_string()));
    assert_eq!(leaving_nodes, expected, "{result}");
    // The snapshot's seven nodes are each said once: leaving, or kept (scale-down's lists).
    let listed = ["scaleDown", "unremovable", "leaving"]
        .iter()
        .flat_map(|key| result[key].as_array().cloned().unwrap_or_default())
        .count();
    assert_eq!(listed, 7, "{result}");
    assert_eq!(leaving(&client).await.len(), 4, "the clock stood still");
}
