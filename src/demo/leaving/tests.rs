use super::*;
use crate::autoscaler::{ClusterSource, ProviderConfig};
use crate::clock::Clock;
use crate::cloud::{InstanceState, NodeGroupBackend};
use crate::demo::provider::InProcessProvider;
use crate::demo::script::{Action, Script};
use crate::model::LeavingReason;
use crate::simulated_cluster::SimulatedCluster;
use std::path::Path;
use std::time::Duration;

/// A day that scripts a wave of Spot interruptions on `spot` and a GPU node marked unhealthy.
const SCRIPT: &str = r#"
scenario:
  cluster: leaving
  region: us-east-1
  nodeGroups:
    - {name: spot, instanceType: m5.large, capacityType: SPOT, zones: [us-east-1a], minSize: 0, maxSize: 5,
       desiredSize: 3, provisioningDelay: 90s, deletionDelay: 10s}
    - name: gpu
      instanceType: g4dn.xlarge
      zones: [us-east-1a]
      minSize: 0
      maxSize: 3
      desiredSize: 2
      provisioningDelay: 90s
      deletionDelay: 10s
      nodeRepairConfig:
        enabled: true
        nodeRepairConfigOverrides:
          - {nodeMonitoringCondition: KernelReady, nodeUnhealthyReason: KernelBug, minRepairWaitTimeMins: 1,
             repairAction: Reboot}
start: 2026-03-02T09:00:00Z
duration: 1h
timeline:
  - {at: 1m, interrupt: {nodeGroup: spot, count: 3}, say: a wave of Spot interruptions}
  - {at: 1m, unhealthy: {nodeGroup: gpu, index: 0, condition: AcceleratedHardwareReady, reason: NvidiaXID79Error}}
  - {at: 1m, unhealthy: {node: 4, condition: KernelReady, reason: KernelBug}}
  - {at: 1m, maintenance: {nodeGroup: gpu, index: 1, in: 30m}}
  - {at: 1m, rebalance: {nodeGroup: spot, index: 0}}
"#;

/// The script's entries for leaving nodes, in order.
fn entries(script: &Script) -> Vec<Leaving> {
    (script.timeline.iter())
        .filter_map(|e| match &e.action {
            Action::Leaving(entry) => Some(entry.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_day_scripts_a_wave_of_interruptions_and_an_unhealthy_gpu_node() {
    let script = Script::parse(SCRIPT, Path::new(".")).unwrap();
    let clock = Clock::manual();
    let provider = InProcessProvider::start(&script, clock.clone())
        .await
        .unwrap();
    let backend = provider.backend.clone();
    let config = ProviderConfig::plaintext(provider.addr.to_string());
    let cluster = SimulatedCluster::new(&config, clock.clone()).unwrap();
    let cluster = cluster.starting_at(backend.epoch());
    assert_eq!(backend.epoch(), script.start.unwrap());
    cluster.step().await.unwrap();
    assert_eq!(cluster.nodes().len(), 5);
    let first_spot: Vec<String> = (backend.instances("spot").unwrap().into_iter())
        .map(|i| i.id)
        .collect();
    let entries = entries(&script);
    assert_eq!(entries.len(), 5);
    clock.advance(Duration::from_secs(60));
    let said: Vec<String> = (entries.iter())
        .map(|e| play(e, &backend, &cluster).unwrap())
        .collect();
    assert_eq!(
        said[0],
        "spot: Spot interruption warning for 3 instance(s), gone in 2m"
    );
    let leaving = backend.leaving_instances();
    let interrupted = (leaving.iter())
        .filter(|l| l.reason == LeavingReason::SpotInterruption)
        .count();
    assert_eq!(interrupted, 3);
    // The rebalanced instance is one of the interrupted: served once, for its stronger reason.
    assert!(leaving.iter().all(|l| l.reason != LeavingReason::Rebalance));
    assert_eq!(leaving.len(), 4, "{leaving:?}");
    assert!(
        leaving
            .iter()
            .any(|l| l.reason == LeavingReason::ScheduledEvent)
    );
    // The monitoring agent's conditions are on the nodes the companion reads.
    let view = cluster.view().await.unwrap();
    let sick: Vec<_> = (view.nodes.iter())
        .filter(|n| !n.problems.is_empty())
        .map(|n| (n.provider_id.clone(), n.problems[0].condition.clone()))
        .collect();
    assert_eq!(sick.len(), 2, "{sick:?}");
    let gpu = backend.instances("gpu").unwrap();
    assert!(sick.contains(&(gpu[0].id.clone(), "AcceleratedHardwareReady".into())));
    // The reboot (a minute's wait, a minute's reboot) clears its node's condition.
    clock.advance(Duration::from_secs(121));
    clear_repaired(&backend, &cluster).unwrap();
    let still: Vec<_> = (cluster.nodes().iter())
        .filter(|n| !n.problems.is_empty())
        .map(|n| n.provider_id.clone())
        .collect();
    assert_eq!(still, [gpu[0].id.clone()]);
    // The interrupted instances went at the deadline; their nodes left, new ones came.
    cluster.step().await.unwrap();
    let spot = backend.instances("spot").unwrap();
    let old: Vec<_> = (spot.iter())
        .filter(|i| first_spot.contains(&i.id))
        .collect();
    assert!(!old.is_empty() && old.iter().all(|i| i.state == InstanceState::Deleting));
    // The GPU node is replaced after EKS's 10 minutes: a new node, without the condition.
    clock.advance(Duration::from_secs(10 * 60));
    cluster.step().await.unwrap();
    clock.advance(Duration::from_secs(100));
    cluster.step().await.unwrap();
    let nodes = cluster.nodes();
    assert!(nodes.iter().all(|n| n.provider_id != gpu[0].id));
    assert!(nodes.iter().all(|n| n.problems.is_empty()));
    assert_eq!(backend.repairs_started("gpu").unwrap(), 2);
    assert_eq!(nodes.len(), 5);
    assert!(nodes.iter().all(|n| !first_spot.contains(&n.provider_id)));
    provider.stop().await;
}

#[test]
fn bad_leaving_entries_name_the_entry() {
    let base = "scenario:\n  cluster: c\n  region: us-east-1\n  nodeGroups:\n    - {name: spot, instanceType: \
                m5.large, capacityType: SPOT, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}\n    \
                - {name: od, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, \
                desiredSize: 1}\nduration: 1h\ntimeline:\n";
    let cases = [
        (
            "  - {at: 1m, interrupt: {nodeGroup: od, count: 1}}",
            "timeline entry 0 (at 1m): interrupt: node group \"od\" is not SPOT",
        ),
        (
            "  - {at: 1m, rebalance: {nodeGroup: nowhere, count: 1}}",
            "timeline entry 0 (at 1m): rebalance: no node group \"nowhere\" in the scenario",
        ),
        (
            "  - {at: 1m, interrupt: {nodeGroup: spot, count: 1, index: 0}}",
            "interrupt: give exactly one of `count` and `index`",
        ),
        (
            "  - {at: 1m, interrupt: {nodeGroup: spot, count: 0}}",
            "interrupt: count must be at least 1",
        ),
        (
            "  - {at: 1m, maintenance: {nodeGroup: od, index: 0}}",
            "maintenance: give exactly one of `at` and `in`",
        ),
        (
            "  - {at: 1m, maintenance: {nodeGroup: od, index: 0, at: noon}}",
            "maintenance.at: \"noon\" is no RFC 3339 time",
        ),
        (
            "  - {at: 1m, unhealthy: {nodeGroup: od, condition: Sad, reason: x}}",
            "unhealthy.condition: \"Sad\" must be one of AcceleratedHardwareReady",
        ),
        (
            "  - {at: 1m, unhealthy: {node: 0, nodeGroup: od, condition: Ready, reason: x}}",
            "unhealthy: give `node` (a position among the nodes), or `nodeGroup` and `index`",
        ),
        (
            "  - {at: 1m, unhealthy: {nodeGroup: od, condition: Ready, reason: x}}",
            "timeline entry 0 (at 1m): unhealthy: give `node` (a position among the nodes), or `nodeGroup` \
             and `index`",
        ),
        (
            "  - {at: 1m, unhealthy: {nodeGroup: od, index: 5, condition: Ready, reason: x}}",
            "timeline entry 0 (at 1m): unhealthy: index 5 is beyond node group \"od\", which never has more \
             than 5 instance(s)",
        ),
        (
            "  - {at: 1m, interrupt: {nodeGroup: spot, count: 6}}",
            "timeline entry 0 (at 1m): interrupt: count 6 is beyond node group \"spot\", which never has more \
             than 5 instance(s)",
        ),
        (
            "  - {at: 1m, maintenance: {nodeGroup: od, index: 7, in: 1h}}",
            "timeline entry 0 (at 1m): maintenance: index 7 is beyond node group \"od\"",
        ),
        (
            "  - {at: 1m, maintenance: {nodeGroup: od, index: 0, at: \"2026-03-02T10:00:00Z\"}}",
            "timeline entry 0 (at 1m): maintenance.at: needs the script's `start` (what it is read against); \
             or give `in`",
        ),
        (
            "  - {at: 30m, maintenance: {nodeGroup: od, index: 0, at: \"2026-03-02T09:10:00Z\"}}\n\
             start: 2026-03-02T09:00:00Z",
            "timeline entry 0 (at 30m): maintenance.at: \"2026-03-02T09:10:00Z\" is before the entry is played \
             (2026-03-02T09:30:00Z",
        ),
        (
            "  - {at: 1m, unhealthy: {nodeGroup: od, condition: Ready, reason: \"\"}}",
            "unhealthy.reason: must not be empty",
        ),
        (
            "  - {at: 1m, interrupt: {nodeGroup: spot, count: 1}, delete: web}",
            "give exactly one of",
        ),
        (
            "  - {at: 2h, interrupt: {nodeGroup: spot, count: 1}}",
            "after the end of the day",
        ),
        (
            "  - {at: 1m, interrupt: {nodeGroup: spot, cuont: 1}}",
            "unknown field `cuont`",
        ),
    ];
    for (entry, expected) in cases {
        let error = Script::parse(&format!("{base}{entry}\n"), Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{error}\nexpected: {expected}");
    }
}
