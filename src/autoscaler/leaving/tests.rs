//! The leaving folder on its own: which nodes leave and why, what is done for each, what the loop changes
//! for them, and what it remembers between loops.

use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::leaving::action::{LeavingAction, decide};
use crate::autoscaler::leaving::effects::LeavingEffects;
use crate::autoscaler::leaving::memory::{LeavingMemory, Planned};
use crate::autoscaler::leaving::nodes::{
    GroupReplaces, LeavingNodes, LeavingSources, repair_halts,
};
use crate::model::{
    Controller, GroupOptions, LeavingInstance, LeavingReason, Node, NodeGroup, NodeGroupState,
    NodeGroupStatus, NodeProblem, NodeRepairConfig, Phase, Pod, PodList, Resources, Taint,
    TaintEffect,
};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const MIN: Duration = Duration::from_secs(60);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn node(name: &str, created_min_ago: u32) -> Arc<Node> {
    Arc::new(Node {
        name: name.into(),
        provider_id: format!("aws:///us-east-1a/i-{name}"),
        ready: true,
        created: Some(now() - created_min_ago * MIN),
        ..Node::default()
    })
}

fn facts(id: &str, target: i32, rebalance: bool, repair: Option<NodeRepairConfig>) -> GroupFacts {
    GroupFacts {
        group: NodeGroup {
            id: id.into(),
            min_size: 0,
            max_size: 10,
        },
        target,
        instances: Vec::new(),
        template: None,
        template_slices: Vec::new(),
        zones: Vec::new(),
        state: Some(NodeGroupState {
            status: NodeGroupStatus::Active,
            image: None,
            capacity_rebalance: rebalance,
            node_repair: repair,
            capacity_type: None,
            reservations: Vec::new(),
        }),
        options: GroupOptions::default(),
        problem: None,
    }
}

fn instance(node: &str, reason: LeavingReason, at: SystemTime) -> LeavingInstance {
    LeavingInstance {
        id: format!("aws:///us-east-1a/i-{node}"),
        node_group: "spot".into(),
        reason,
        at,
        detail: "EC2 said so".into(),
    }
}

fn running(name: &str, node: &str, kind: &str) -> Pod {
    let mut pod = Pod::pending("default", name, Resources::default());
    pod.node_name = Some(node.into());
    pod.phase = Phase::Running;
    pod.unschedulable = false;
    pod.controller = Some(Arc::new(Controller {
        kind: kind.into(),
        name: format!("{name}-owner"),
        uid: format!("uid-{name}"),
    }));
    pod
}

fn find(nodes: &[Arc<Node>], groups: &[GroupFacts], instances: &[LeavingInstance]) -> LeavingNodes {
    let node_group = vec![Some(0); nodes.len()];
    let sources = LeavingSources {
        nodes,
        node_group: &node_group,
        facts: groups,
        instances,
        endings: &[],
    };
    LeavingNodes::find(&sources, |_| None, now())
}

#[test]
fn the_three_sources_are_read_and_the_most_pressing_reason_wins() {
    let mut tainted = (*node("b", 30)).clone();
    tainted.taints.push(Taint {
        key: "aws-node-termination-handler/spot-itn".into(),
        value: "".into(),
        effect: TaintEffect::NoSchedule,
    });
    let mut sick = (*node("c", 30)).clone();
    sick.problems.push(NodeProblem {
        condition: "KernelReady".into(),
        reason: "KernelBug".into(),
        since: Some(now() - 3 * MIN),
    });
    let nodes = vec![
        node("a", 30),
        Arc::new(tainted),
        Arc::new(sick),
        node("d", 30),
    ];
    let deadline = now() + 2 * MIN;
    let instances = [
        instance("a", LeavingReason::Rebalance, now() - MIN),
        instance("a", LeavingReason::SpotInterruption, deadline),
        instance("unknown", LeavingReason::SpotInterruption, deadline),
    ];
    let found = find(&nodes, &[facts("spot", 4, true, None)], &instances);
    let said: Vec<(usize, LeavingReason, SystemTime)> = found
        .nodes
        .iter()
        .map(|l| (l.node, l.reason, l.at))
        .collect();
    assert_eq!(
        said,
        vec![
            (0, LeavingReason::SpotInterruption, deadline),
            // A termination handler's taint: the warning's two minutes from when it was first seen.
            (1, LeavingReason::SpotInterruption, now() + 2 * MIN),
            (2, LeavingReason::Unhealthy, now() - 3 * MIN),
        ]
    );
    assert!(
        found.nodes[2]
            .detail
            .contains("KernelReady False (KernelBug)")
    );
}

#[test]
fn each_reason_gets_its_action() {
    let nodes = vec![node("a", 30), node("b", 30), node("c", 30)];
    let instances = [
        instance("a", LeavingReason::SpotInterruption, now() + 2 * MIN),
        instance("b", LeavingReason::Rebalance, now()),
        instance("c", LeavingReason::ScheduledEvent, now() + 60 * MIN),
    ];
    let actions = |rebalance: bool| -> Vec<LeavingAction> {
        let found = find(&nodes, &[facts("spot", 3, rebalance, None)], &instances);
        found.nodes.iter().map(|l| decide(l).0).collect()
    };
    let (drain, none, wait) = (
        LeavingAction::Drain,
        LeavingAction::None,
        LeavingAction::Wait,
    );
    assert_eq!(actions(true), vec![drain, none, drain]);
    assert_eq!(actions(false), vec![drain, wait, drain]);
}

#[test]
fn an_unhealthy_node_is_the_groups_to_repair_unless_repair_is_off_or_halted() {
    let sick = |name: &str| {
        let mut n = (*node(name, 30)).clone();
        n.problems.push(NodeProblem {
            condition: "AcceleratedHardwareReady".into(),
            reason: "NvidiaXID".into(),
            since: None,
        });
        Arc::new(n)
    };
    let repair = NodeRepairConfig {
        enabled: true,
        ..NodeRepairConfig::default()
    };
    let nodes: Vec<Arc<Node>> = vec![sick("a"), node("b", 1), node("c", 1)];
    let on = find(&nodes, &[facts("gpu", 3, false, Some(repair.clone()))], &[]);
    assert_eq!(
        on.nodes[0].replaced_by_group,
        Some(GroupReplaces::AutoRepair)
    );
    assert_eq!(decide(&on.nodes[0]).0, LeavingAction::None);
    let off = find(&nodes, &[facts("gpu", 3, false, None)], &[]);
    assert_eq!(decide(&off.nodes[0]).0, LeavingAction::Wait);
    // Two of six unhealthy is above 20% in a group of more than five: EKS holds off.
    let mut six: Vec<Arc<Node>> = vec![sick("a"), sick("b")];
    six.extend(["c", "d", "e", "f"].map(|n| node(n, 1)));
    let halted = find(&six, &[facts("gpu", 6, false, Some(repair.clone()))], &[]);
    assert_eq!(decide(&halted.nodes[0]).0, LeavingAction::Wait);
    assert!(halted.nodes[0].detail.contains("halts"));
    assert!(!repair_halts(&repair, 1, 5) && repair_halts(&repair, 2, 6));
    let counted = NodeRepairConfig {
        max_unhealthy_node_threshold_count: Some(2),
        ..repair
    };
    assert!(!repair_halts(&counted, 2, 6) && repair_halts(&counted, 3, 100));
}

#[test]
fn pods_move_off_nodes_that_go_and_the_groups_newest_node_is_held() {
    let nodes = vec![node("a", 30), node("b", 30), node("c", 20), node("d", 5)];
    let instances = [
        instance("a", LeavingReason::SpotInterruption, now() + 2 * MIN),
        instance("b", LeavingReason::Rebalance, now()),
    ];
    let groups = [facts("spot", 4, true, None)];
    let found = find(&nodes, &groups, &instances);
    let pods = vec![
        Arc::new(running("web-0", "a", "ReplicaSet")),
        Arc::new(running("logs-a", "a", "DaemonSet")),
        Arc::new(running("web-1", "b", "ReplicaSet")),
        Arc::new(running("web-2", "c", "ReplicaSet")),
    ];
    let mut bound: Vec<usize> = (0..pods.len()).collect();
    let node_group = vec![Some(0); nodes.len()];
    let list = PodList::from(&pods);
    let effects = LeavingEffects::new(found, (&nodes, &node_group), list, &mut bound);
    assert_eq!(effects.moved, vec![0, 2]);
    assert_eq!(bound, vec![1, 3]);
    assert_eq!(effects.no_room, HashSet::from(["a".into(), "b".into()]));
    assert_eq!(effects.held, HashSet::from(["d".to_string()]));
    assert_eq!(effects.interrupted, vec![0]);
    // The group replaces one node itself: its target and one more, the old one still registered.
    let mut counts = vec![Counts {
        registered: 4,
        upcoming: 0,
        unregistered: Vec::new(),
    }];
    effects.count_replacements(&groups, &mut counts);
    assert_eq!(counts[0].upcoming, 1);
    // Once its replacement registered, nothing more is coming.
    counts[0].registered = 5;
    counts[0].upcoming = 0;
    effects.count_replacements(&groups, &mut counts);
    assert_eq!(counts[0].upcoming, 0);
    let listed = effects.statuses(&nodes, &groups);
    assert_eq!(listed[0].node, "a");
    assert_eq!(listed[0].action, LeavingAction::Drain);
    assert_eq!(listed[1].action, LeavingAction::None);
}

#[test]
fn the_memory_counts_each_node_once_and_times_its_pods_until_none_is_pending() {
    let nodes = vec![node("a", 30), node("b", 30)];
    let instances = [instance(
        "a",
        LeavingReason::SpotInterruption,
        now() + 2 * MIN,
    )];
    let groups = [facts("spot", 2, false, None)];
    let node_group = vec![Some(0); 2];
    let mut pods = vec![Arc::new(running("web-0", "a", "ReplicaSet"))];
    let mut memory = LeavingMemory::default();
    let mut follow = |pods: &Vec<Arc<Pod>>, nodes: &[Arc<Node>], at: SystemTime| {
        let mut bound: Vec<usize> = (0..pods.len()).collect();
        let found = find(nodes, &groups, &instances);
        let list = PodList::from(pods);
        let effects = LeavingEffects::new(found, (nodes, &node_group), list, &mut bound);
        let planned = Planned {
            placed: HashSet::new(),
            unmet: HashSet::new(),
        };
        memory.follow(&effects, (nodes, list), &planned, at)
    };
    let first = follow(&pods, &nodes, now());
    assert_eq!(
        first.outcomes,
        vec![(LeavingReason::SpotInterruption, "scaleUp")]
    );
    assert!(first.seconds.is_empty());
    // Evicted: its replacement pod is pending.
    let mut evicted = running("web-0x", "a", "ReplicaSet");
    evicted.node_name = None;
    evicted.controller = pods[0].controller.clone();
    pods = vec![Arc::new(evicted)];
    let second = follow(&pods, &nodes, now() + MIN);
    assert!(second.outcomes.is_empty() && second.seconds.is_empty());
    // Running on the new node, the old one gone.
    let mut placed = (*pods[0]).clone();
    placed.node_name = Some("b".into());
    pods = vec![Arc::new(placed)];
    let third = follow(&pods, &nodes[1..], now() + 2 * MIN);
    assert_eq!(
        third.seconds,
        vec![(LeavingReason::SpotInterruption, 120.0)]
    );
}
