use super::*;
use crate::clock::Clock;
use crate::cloud::backend::NodeGroupBackend;
use crate::cloud::node_group::InstanceState;
use crate::cloud::simulated_eks::scenario::Scenario;
use crate::model::LeavingReason;

/// The scenario's start: every time in these tests is read from it and the manual clock.
const START: &str = "2026-03-02T09:00:00Z";

const SCENARIO: &str = r#"
cluster: test
region: us-east-1
start: 2026-03-02T09:00:00Z
nodeGroups:
  - name: spot
    instanceType: m5.large
    capacityType: SPOT
    zones: [us-east-1a]
    minSize: 0
    maxSize: 3
    desiredSize: 3
    provisioningDelay: 90s
    deletionDelay: 10s
  - name: spot-plain
    instanceType: m5.large
    capacityType: SPOT
    capacityRebalance: false
    zones: [us-east-1a]
    minSize: 0
    maxSize: 3
    desiredSize: 2
  - name: web
    instanceType: m5.large
    zones: [us-east-1a, us-east-1b]
    minSize: 0
    maxSize: 10
    desiredSize: 6
    provisioningDelay: 60s
    deletionDelay: 10s
  - name: gpu
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 10
    desiredSize: 4
    provisioningDelay: 90s
    deletionDelay: 10s
    nodeRepairConfig:
      enabled: true
      maxParallelNodesRepairedCount: 1
      nodeRepairConfigOverrides:
        - {nodeMonitoringCondition: AcceleratedHardwareReady, nodeUnhealthyReason: NvidiaXID13Error,
           minRepairWaitTimeMins: 2, repairAction: Reboot}
        - {nodeMonitoringCondition: KernelReady, nodeUnhealthyReason: KernelBug,
           minRepairWaitTimeMins: 5, repairAction: NoAction}
  - name: gpu-few
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 10
    desiredSize: 4
    provisioningDelay: 90s
    nodeRepairConfig: {enabled: true, maxUnhealthyNodeThresholdCount: 1, maxParallelNodesRepairedPercentage: 100}
instanceEvents:
  - {nodeGroup: spot, index: 0, kind: spotInterruption, at: "2026-03-02T09:05:00Z"}
  - {nodeGroup: web, index: 2, kind: scheduledEvent, at: "2026-03-02T10:00:00Z"}
  - {nodeGroup: web, index: 3, kind: stopped, at: "2026-03-02T09:30:00Z"}
"#;

fn start() -> SystemTime {
    humantime::parse_rfc3339(START).unwrap()
}

fn sim() -> SimulatedEks {
    SimulatedEks::new(Scenario::parse(SCENARIO).unwrap(), Clock::manual())
}

fn minutes(m: u64) -> Duration {
    Duration::from_secs(m * 60)
}

/// Each listed instance of group `id` and its state.
fn listed(sim: &SimulatedEks, id: &str) -> Vec<(String, InstanceState)> {
    (sim.instances(id).unwrap().into_iter())
        .map(|i| (i.id, i.state))
        .collect()
}

fn count(sim: &SimulatedEks, id: &str, state: InstanceState) -> usize {
    (listed(sim, id).iter())
        .filter(|(_, s)| *s == state)
        .count()
}

/// The leaving instances of group `id`, as `(instance, reason)`.
fn leaving(sim: &SimulatedEks, id: &str) -> Vec<(String, LeavingReason)> {
    (sim.leaving_instances().into_iter())
        .filter(|l| l.node_group == id)
        .map(|l| (l.id, l.reason))
        .collect()
}

#[test]
fn a_spot_interruption_is_seen_two_minutes_ahead_then_the_instance_goes_and_the_group_replaces_it()
{
    let sim = sim();
    let first = listed(&sim, "spot")[0].0.clone();
    sim.clock().advance(minutes(2) + Duration::from_secs(59));
    assert!(leaving(&sim, "spot").is_empty(), "not before the warning");
    sim.clock().advance(Duration::from_secs(1));
    let served = sim.leaving_instances();
    let warning = served.iter().find(|l| l.node_group == "spot").unwrap();
    assert_eq!(
        (&warning.id, warning.reason),
        (&first, LeavingReason::SpotInterruption)
    );
    assert_eq!(warning.at, start() + minutes(5), "the deadline");
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
    sim.clock().advance(minutes(2));
    // Terminated at the deadline, the target unchanged: the group launches another.
    assert_eq!(
        listed(&sim, "spot")[0],
        (first.clone(), InstanceState::Deleting)
    );
    assert_eq!(count(&sim, "spot", InstanceState::Creating), 1);
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    assert_eq!(
        leaving(&sim, "spot").len(),
        1,
        "served while the instance is listed"
    );
    sim.clock().advance(Duration::from_secs(10));
    assert!(leaving(&sim, "spot").is_empty());
    assert!(listed(&sim, "spot").iter().all(|(id, _)| *id != first));
    sim.clock().advance(Duration::from_secs(80));
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
}

#[tokio::test]
async fn an_interrupted_instance_the_autoscaler_deleted_first_is_not_replaced() {
    let sim = sim();
    let id = sim.interrupt("spot", Pick::Index(1)).unwrap().remove(0);
    assert_eq!(
        leaving(&sim, "spot"),
        [(id.clone(), LeavingReason::SpotInterruption)]
    );
    sim.delete_instances("spot", std::slice::from_ref(&id))
        .await
        .unwrap();
    sim.clock().advance(minutes(10));
    assert_eq!(sim.target_size("spot").unwrap(), 2);
    assert_eq!(listed(&sim, "spot").len(), 2);
}

#[test]
fn interrupt_picks_running_spot_instances_oldest_first_all_or_nothing() {
    let sim = sim();
    let all: Vec<String> = listed(&sim, "spot-plain")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let error = sim.interrupt("spot-plain", Pick::Count(3)).unwrap_err();
    assert!(error.to_string().contains("asked for 3"), "{error}");
    assert!(leaving(&sim, "spot-plain").is_empty(), "nothing changed");
    assert_eq!(sim.interrupt("spot-plain", Pick::Count(2)).unwrap(), all);
    // Each has its warning already.
    assert!(sim.interrupt("spot-plain", Pick::Count(1)).is_err());
    let error = sim.interrupt("web", Pick::Count(1)).unwrap_err();
    assert!(error.to_string().contains("not SPOT"), "{error}");
    let error = sim.rebalance("spot", Pick::Index(7)).unwrap_err();
    assert!(error.to_string().contains("index 7"), "{error}");
    assert!(sim.interrupt("nowhere", Pick::Count(1)).is_err());
}

#[test]
fn a_rebalance_with_capacity_rebalancing_launches_a_replacement_then_terminates_the_old_instance() {
    let sim = sim();
    let old = sim.rebalance("spot", Pick::Index(2)).unwrap().remove(0);
    assert_eq!(
        leaving(&sim, "spot"),
        [(old.clone(), LeavingReason::Rebalance)]
    );
    // At once, beside the target (left alone, as AWS does), past the max size (3) by one.
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    assert_eq!(count(&sim, "spot", InstanceState::Creating), 1);
    assert_eq!(listed(&sim, "spot").len(), 4, "no placeholder");
    sim.clock().advance(Duration::from_secs(89));
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
    assert!(listed(&sim, "spot").contains(&(old.clone(), InstanceState::Running)));
    sim.clock().advance(Duration::from_secs(1));
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    assert!(listed(&sim, "spot").contains(&(old.clone(), InstanceState::Deleting)));
    sim.clock().advance(Duration::from_secs(10));
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
    assert_eq!(listed(&sim, "spot").len(), 3);
    assert!(listed(&sim, "spot").iter().all(|(id, _)| *id != old));
}

#[test]
fn a_rebalanced_instance_interrupted_before_its_replacement_runs_ends_the_surge() {
    let sim = sim();
    // The scenario interrupts the first Spot instance at 09:05; its rebalance recommendation comes at 09:04.
    sim.clock().advance(minutes(4));
    let old = sim.rebalance("spot", Pick::Index(0)).unwrap().remove(0);
    assert_eq!(count(&sim, "spot", InstanceState::Creating), 1);
    sim.clock().advance(minutes(1));
    // EC2 took it back: the replacement takes its place, nothing more launches, the target is the same.
    assert!(listed(&sim, "spot").contains(&(old.clone(), InstanceState::Deleting)));
    assert_eq!(count(&sim, "spot", InstanceState::Creating), 1);
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    sim.clock().advance(minutes(5));
    assert_eq!(listed(&sim, "spot").len(), 3);
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    assert!(leaving(&sim, "spot").is_empty());
}

#[tokio::test]
async fn a_rebalanced_instance_the_autoscaler_deleted_leaves_the_group_at_its_target() {
    let sim = sim();
    let old = sim.rebalance("spot", Pick::Index(1)).unwrap().remove(0);
    sim.delete_instances("spot", std::slice::from_ref(&old))
        .await
        .unwrap();
    // The surge ended with the old instance: the group is brought down to the two the target asks for now
    // (before the scenario's interruption at 09:05).
    sim.clock().advance(minutes(2));
    assert_eq!(sim.target_size("spot").unwrap(), 2);
    assert_eq!(listed(&sim, "spot").len(), 2);
    assert_eq!(count(&sim, "spot", InstanceState::Running), 2);
}

#[test]
fn without_room_for_a_replacement_the_rebalanced_instance_stays_until_there_is() {
    let sim = sim();
    sim.set_available_capacity("spot", Some(3)).unwrap();
    let old = sim.rebalance("spot", Pick::Index(1)).unwrap().remove(0);
    // Past when a replacement would have run (and before the scenario's interruption at 09:05).
    sim.clock().advance(minutes(4));
    // No capacity: nothing launched, the old instance kept, still said to be leaving.
    assert_eq!(count(&sim, "spot", InstanceState::Running), 3);
    assert!(listed(&sim, "spot").contains(&(old.clone(), InstanceState::Running)));
    assert_eq!(sim.target_size("spot").unwrap(), 3);
    assert!(leaving(&sim, "spot").contains(&(old.clone(), LeavingReason::Rebalance)));
    sim.set_available_capacity("spot", Some(4)).unwrap();
    assert_eq!(count(&sim, "spot", InstanceState::Creating), 1);
    sim.clock().advance(Duration::from_secs(90));
    assert!(listed(&sim, "spot").contains(&(old, InstanceState::Deleting)));
    assert_eq!(sim.target_size("spot").unwrap(), 3);
}

#[test]
fn an_instance_said_to_leave_twice_is_served_once_with_the_stronger_reason() {
    let sim = sim();
    let id = sim
        .rebalance("spot-plain", Pick::Index(1))
        .unwrap()
        .remove(0);
    let interrupted = sim.interrupt("spot-plain", Pick::Index(1)).unwrap();
    assert_eq!(interrupted, std::slice::from_ref(&id));
    assert_eq!(
        leaving(&sim, "spot-plain"),
        [(id.clone(), LeavingReason::SpotInterruption)]
    );
    // The weaker said after the stronger changes nothing either.
    let other = sim
        .interrupt("spot-plain", Pick::Index(0))
        .unwrap()
        .remove(0);
    sim.rebalance("spot-plain", Pick::Index(0)).unwrap();
    let rows = leaving(&sim, "spot-plain");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.contains(&(other, LeavingReason::SpotInterruption)));
}

#[test]
fn a_rebalance_without_capacity_rebalancing_changes_nothing() {
    let sim = sim();
    let before = listed(&sim, "spot-plain");
    let old = sim
        .rebalance("spot-plain", Pick::Count(1))
        .unwrap()
        .remove(0);
    assert_eq!(old, before[0].0);
    sim.clock().advance(minutes(60));
    assert_eq!(listed(&sim, "spot-plain"), before);
    assert_eq!(sim.target_size("spot-plain").unwrap(), 2);
    assert_eq!(
        leaving(&sim, "spot-plain"),
        [(old, LeavingReason::Rebalance)]
    );
}

#[test]
fn a_scheduled_event_is_known_ahead_and_a_stopped_instance_is_replaced_when_found() {
    let sim = sim();
    let web = listed(&sim, "web");
    // The scenario's scheduled event is known from the start; the stop from its time.
    assert_eq!(
        leaving(&sim, "web"),
        [(web[2].0.clone(), LeavingReason::ScheduledEvent)]
    );
    sim.clock().advance(minutes(30));
    assert!(leaving(&sim, "web").contains(&(web[3].0.clone(), LeavingReason::InstanceStopped)));
    assert_eq!(listed(&sim, "web")[3].1, InstanceState::Running);
    sim.clock().advance(minutes(2));
    assert_eq!(listed(&sim, "web")[3].1, InstanceState::Deleting);
    assert_eq!(count(&sim, "web", InstanceState::Creating), 1);
    sim.clock().advance(minutes(28));
    assert_eq!(listed(&sim, "web")[2].1, InstanceState::Deleting);
    assert_eq!(sim.target_size("web").unwrap(), 6);
    // One raised at run time: said now, for its time.
    let at = sim.wall_now() + minutes(45);
    let id = sim
        .schedule_event("web", Pick::Index(0), at)
        .unwrap()
        .remove(0);
    let said = sim.leaving_instances();
    let event = said.iter().find(|l| l.id == id).unwrap();
    assert_eq!(
        (event.reason, event.at),
        (LeavingReason::ScheduledEvent, at)
    );
    sim.clock().advance(minutes(45));
    assert!(listed(&sim, "web").contains(&(id, InstanceState::Deleting)));
}

/// Marks instance `position` of `group` unhealthy now.
fn mark(sim: &SimulatedEks, group: &str, position: usize, condition: &str, reason: &str) -> String {
    let id = listed(sim, group)[position].0.clone();
    sim.mark_unhealthy(&id, condition, reason, sim.wall_now())
        .unwrap();
    id
}

#[test]
fn repair_waits_for_the_condition_then_replaces_one_at_a_time() {
    let sim = sim();
    let a = mark(
        &sim,
        "gpu",
        0,
        "AcceleratedHardwareReady",
        "NvidiaXID79Error",
    );
    let b = mark(
        &sim,
        "gpu",
        1,
        "AcceleratedHardwareReady",
        "NvidiaXID79Error",
    );
    sim.clock().advance(minutes(10) - Duration::from_secs(1));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 0);
    sim.clock().advance(Duration::from_secs(1));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 1);
    assert!(listed(&sim, "gpu").contains(&(a.clone(), InstanceState::Deleting)));
    assert!(listed(&sim, "gpu").contains(&(b.clone(), InstanceState::Running)));
    assert_eq!(sim.target_size("gpu").unwrap(), 4);
    // The second waits for the first's replacement to run (maxParallelNodesRepairedCount 1).
    sim.clock().advance(Duration::from_secs(89));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 1);
    sim.clock().advance(Duration::from_secs(1));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 2);
    assert!(listed(&sim, "gpu").contains(&(b, InstanceState::Deleting)));
    sim.clock().advance(minutes(2));
    assert_eq!(count(&sim, "gpu", InstanceState::Running), 4);
    assert!(sim.unhealthy_instances().is_empty());
}

#[test]
fn overrides_choose_the_wait_and_the_action() {
    let sim = sim();
    let rebooted = mark(
        &sim,
        "gpu",
        0,
        "AcceleratedHardwareReady",
        "NvidiaXID13Error",
    );
    let kept = mark(&sim, "gpu", 1, "KernelReady", "KernelBug");
    sim.clock().advance(minutes(2));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 1);
    // A reboot keeps the instance; its condition clears a minute later.
    assert!(listed(&sim, "gpu").contains(&(rebooted.clone(), InstanceState::Running)));
    assert_eq!(sim.unhealthy_instances().len(), 2);
    sim.clock().advance(minutes(1));
    let marked = sim.unhealthy_instances();
    assert_eq!(marked, [(kept.clone(), "KernelReady".to_string())]);
    // NoAction: never repaired.
    sim.clock().advance(minutes(120));
    assert_eq!(sim.repairs_started("gpu").unwrap(), 1);
    assert!(listed(&sim, "gpu").contains(&(kept, InstanceState::Running)));
    assert_eq!(count(&sim, "gpu", InstanceState::Running), 4);
}

#[test]
fn repair_halts_while_more_nodes_are_unhealthy_than_the_threshold() {
    let sim = sim();
    let a = mark(&sim, "gpu-few", 0, "NetworkingReady", "IPAMDNotReady");
    mark(&sim, "gpu-few", 1, "StorageReady", "EBSVolumeStuck");
    sim.clock().advance(minutes(60));
    assert_eq!(
        sim.repairs_started("gpu-few").unwrap(),
        0,
        "2 unhealthy > 1"
    );
    assert!(sim.mark_healthy(&a).unwrap());
    assert_eq!(
        sim.repairs_started("gpu-few").unwrap(),
        1,
        "overdue: at once"
    );
}

#[test]
fn eks_halts_repair_above_a_fifth_of_a_group_of_more_than_five() {
    // EKS's own rule when the config gives no threshold.
    let text = "cluster: test\nregion: us-east-1\nstart: 2026-03-02T09:00:00Z\nnodeGroups:\n  - name: gpu-few\n    \
                instanceType: g4dn.xlarge\n    zones: [us-east-1a]\n    minSize: 0\n    maxSize: 10\n    \
                desiredSize: 6\n    nodeRepairConfig: {enabled: true, maxParallelNodesRepairedPercentage: 100}\n";
    let sim = SimulatedEks::new(Scenario::parse(text).unwrap(), Clock::manual());
    assert_eq!(listed(&sim, "gpu-few").len(), 6);
    let a = mark(
        &sim,
        "gpu-few",
        0,
        "ContainerRuntimeReady",
        "ContainerdDown",
    );
    mark(
        &sim,
        "gpu-few",
        1,
        "ContainerRuntimeReady",
        "ContainerdDown",
    );
    sim.clock().advance(minutes(31));
    assert_eq!(sim.repairs_started("gpu-few").unwrap(), 0, "2 of 6 > 20%");
    sim.mark_healthy(&a).unwrap();
    assert_eq!(sim.repairs_started("gpu-few").unwrap(), 1, "1 of 6 <= 20%");
}

#[test]
fn repair_counts_each_live_unhealthy_instance_once() {
    let text = "cluster: test\nregion: us-east-1\nnodeGroups:\n  - name: gpu-few\n    \
                instanceType: g4dn.xlarge\n    zones: [us-east-1a]\n    minSize: 0\n    maxSize: 10\n    \
                desiredSize: 4\n    deletionDelay: 2h\n    nodeRepairConfig: {enabled: true, \
                maxUnhealthyNodeThresholdCount: 1, maxParallelNodesRepairedPercentage: 100}\n";
    let sim = SimulatedEks::new(Scenario::parse(text).unwrap(), Clock::manual());
    // One node, two conditions False: one unhealthy node, within the threshold of one.
    let first = mark(&sim, "gpu-few", 0, "NetworkingReady", "IPAMDNotReady");
    mark(&sim, "gpu-few", 0, "StorageReady", "EBSVolumeStuck");
    sim.clock().advance(minutes(30));
    assert_eq!(sim.repairs_started("gpu-few").unwrap(), 1);
    assert!(listed(&sim, "gpu-few").contains(&(first, InstanceState::Deleting)));
    // The replaced instance, deleting for two hours, is no longer the group's problem: the next node's
    // repair is not halted by it.
    mark(&sim, "gpu-few", 1, "KernelReady", "KernelBug");
    sim.clock().advance(minutes(30));
    assert_eq!(sim.repairs_started("gpu-few").unwrap(), 2);
}

#[test]
fn times_before_the_start_are_refused() {
    let sim = sim();
    let id = listed(&sim, "web")[0].0.clone();
    let early = start() - minutes(1);
    let error = sim
        .mark_unhealthy(&id, "KernelReady", "KernelBug", early)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("before the simulated EKS's start"),
        "{error}"
    );
    sim.clock().advance(minutes(10));
    let error = (sim.schedule_event("web", Pick::Index(0), start() + minutes(5))).unwrap_err();
    assert!(
        error.to_string().contains("before the simulated EKS's now"),
        "{error}"
    );
    assert!(sim.unhealthy_instances().is_empty());
    assert!(
        leaving(&sim, "web").iter().all(|(i, _)| *i != id),
        "nothing changed"
    );
}

#[test]
fn a_group_without_repair_never_replaces() {
    let sim = sim();
    let id = mark(&sim, "web", 0, "KernelReady", "KernelBug");
    sim.clock().advance(minutes(180));
    assert_eq!(sim.repairs_started("web").unwrap(), 0);
    assert!(listed(&sim, "web").contains(&(id.clone(), InstanceState::Running)));
    assert_eq!(sim.unhealthy_instances(), [(id, "KernelReady".to_string())]);
    let error = sim
        .mark_unhealthy(
            "aws:///us-east-1a/i-nothere",
            "KernelReady",
            "x",
            sim.wall_now(),
        )
        .unwrap_err();
    assert!(error.to_string().contains("i-nothere"), "{error}");
}
