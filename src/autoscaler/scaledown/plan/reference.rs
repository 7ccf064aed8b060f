//! The planner held to a plain scale-down: the same candidates in the same order, each simulated against the
//! whole cluster as it stands after the removals before it, with nothing indexed or kept between candidates
//! (no free-room tree, no search hints, no kept explanations, no budget index), on random clusters small
//! enough for it.

use super::drainability::{Coverage, PdbBudget, Rules};
use super::planner::{self, RemovalCandidate, ScaleDownPlan, Unremovable};
use super::removal::tests::node;
use super::removal::{GroupInfo, Input};
use crate::model::{
    Controller, Disruption, GroupOptions, HOSTNAME_LABEL, LabelProjection, LabelSelector, Labels,
    Node, Pdb, Phase, Pod, PodAffinityTerm, Resources, SafeToEvict, Scheduling,
};
use crate::simulator::{equivalence, predicates, world};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

const GIB: u64 = 1 << 30;

/// One node's answer: removable with its pods' destinations and whether it is risky, or kept and why.
type Answer = BTreeMap<usize, Result<(Vec<(usize, usize)>, bool), Unremovable>>;

fn answer(plan: &ScaleDownPlan) -> Answer {
    let mut answer = Answer::new();
    for r in &plan.removable {
        let mut destinations = r.destinations.clone();
        destinations.sort_unstable();
        answer.insert(r.node, Ok((destinations, r.risky)));
    }
    for k in &plan.kept {
        answer.insert(k.node, Err(k.reason));
    }
    answer
}

/// Whether one more `pod` fits on `node`, which holds `on` now: readiness, node fit, resources, and
/// anti-affinity by hostname both ways, from the pods themselves.
fn fits(pods: &[Pod], pod: &Pod, node: &Node, on: &[usize]) -> bool {
    if !node.accepts_pods() || predicates::node_fit(&pod.scheduling, node).is_err() {
        return false;
    }
    let used = on
        .iter()
        .fold(Resources::default(), |u, &q| u.plus(pods[q].demand));
    let free = node.allocatable.minus(&used);
    let room = predicates::resources_fit(&pod.demand, &pod.extended, &free, &BTreeMap::new());
    let refuses = |by: &Pod, other: &Pod| {
        by.scheduling.anti_affinity.iter().any(|term| {
            term.topology_key == HOSTNAME_LABEL && term.matches(&other.namespace, &other.labels)
        })
    };
    room.is_ok()
        && on
            .iter()
            .all(|&q| !refuses(pod, &pods[q]) && !refuses(&pods[q], pod))
}

/// Scale-down without indexes: every candidate's pods, equivalence group by group and pod by pod, go to the
/// first node of `order` they fit on now (pods moved onto a node removed later move again); budgets are
/// counted by checking every PDB against every pod.
fn plain(input: &Input, pods: &[Pod], rules: &Rules) -> Answer {
    let mut answer = Answer::new();
    let budget = PdbBudget::new(input.pdbs);
    let mut seen = Coverage::default();
    let mut candidates: Vec<RemovalCandidate> = Vec::new();
    for (n, _) in input.nodes.iter().enumerate() {
        match planner::candidate(
            input,
            rules,
            &budget,
            &mut seen,
            n,
            planner::UtilizationCheck::Threshold,
        ) {
            Ok(c) => candidates.push(c),
            Err((reason, _)) => {
                answer.insert(n, Err(reason));
            }
        }
    }
    candidates.sort_by(|a, b| {
        (!a.moving.is_empty())
            .cmp(&!b.moving.is_empty())
            .then(a.utilization.value().total_cmp(&b.utilization.value()))
    });
    let rank: HashSet<usize> = candidates.iter().map(|c| c.node).collect();
    let mut order: Vec<usize> = (0..input.nodes.len())
        .filter(|n| !rank.contains(n))
        .collect();
    order.extend(candidates.iter().rev().map(|c| c.node));
    let mut on: Vec<Vec<usize>> = input.on_node.to_vec();
    let mut moved_onto: Vec<Vec<usize>> = vec![Vec::new(); input.nodes.len()];
    let mut removed = vec![false; input.nodes.len()];
    let mut remaining: Vec<i32> = input.pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut room: Vec<i64> = input
        .groups
        .iter()
        .map(|g| i64::from(g.target - g.min_size))
        .collect();
    for c in candidates {
        let covering = |pod: &Pod| {
            (0..input.pdbs.len())
                .filter(|&i| input.pdbs[i].covers(&pod.namespace, &pod.labels))
                .collect::<Vec<_>>()
        };
        if room[c.group] <= 0 {
            answer.insert(c.node, Err(Unremovable::NodeGroupMinSizeReached));
            continue;
        }
        let spent = |p: &usize| {
            let pod = &pods[*p];
            pod.disruption.safe_to_evict != SafeToEvict::Yes
                && covering(pod).iter().any(|&i| remaining[i] < 1)
        };
        if c.evicted.iter().any(spent) {
            answer.insert(c.node, Err(Unremovable::BlockedByPod));
            continue;
        }
        let mut world = on.clone();
        world[c.node].clear();
        let mut destinations = Vec::new();
        let moving = c.moving.iter().chain(&moved_onto[c.node]).copied();
        let groups = equivalence::group_pods(pods, moving, input.projection);
        let all_fit = groups.iter().flat_map(|g| &g.pods).all(|&p| {
            let to = (order.iter().copied()).find(|&n| {
                n != c.node && !removed[n] && fits(pods, &pods[p], &input.nodes[n], &world[n])
            });
            to.inspect(|&n| {
                world[n].push(p);
                destinations.push((p, n));
            })
            .is_some()
        });
        if !all_fit {
            answer.insert(c.node, Err(Unremovable::NoPlaceToMovePods));
            continue;
        }
        let mut wanted = vec![0; input.pdbs.len()];
        for &p in &c.evicted {
            for i in covering(&pods[p]) {
                wanted[i] += 1;
            }
        }
        let risky = (wanted.iter().zip(&remaining)).any(|(w, r)| *w > 0 && w > r);
        for (r, w) in remaining.iter_mut().zip(wanted) {
            *r -= w;
        }
        room[c.group] -= 1;
        removed[c.node] = true;
        on = world;
        moved_onto[c.node].clear();
        for &(p, n) in &destinations {
            moved_onto[n].push(p);
        }
        destinations.sort_unstable();
        answer.insert(c.node, Ok((destinations, risky)));
    }
    answer
}

fn app(name: u8) -> Labels {
    Labels::from([("app".to_string(), format!("app-{name}"))])
}

/// A pod of `kind` (0-6: ReplicaSet, ReplicaSet that refuses its own app on its node, DaemonSet, no
/// controller, kube-system ReplicaSet, StatefulSet, ReplicaSet annotated safe-to-evict) of app `name` on
/// `node`.
fn pod(i: usize, node: &str, kind: u8, name: u8, cpu: u64, gib: u64) -> Pod {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: gib * GIB,
        pods: 1,
        ..Default::default()
    };
    let controller = |kind: &str| {
        Some(Arc::new(Controller {
            kind: kind.into(),
            name: format!("app-{name}"),
            uid: format!("uid-{name}"),
        }))
    };
    let mut scheduling = Scheduling::default();
    if kind == 1 {
        scheduling.anti_affinity.push(PodAffinityTerm {
            selector: LabelSelector {
                match_labels: app(name),
                expressions: vec![],
            },
            namespaces: Some(vec!["default".into()]),
            topology_key: HOSTNAME_LABEL.into(),
        });
    }
    let namespace = if kind == 4 { "kube-system" } else { "default" };
    let mut disruption = Disruption::default();
    if kind == 6 {
        disruption.safe_to_evict = SafeToEvict::Yes;
    }
    Pod {
        disruption,
        node_name: Some(node.into()),
        phase: Phase::Running,
        unschedulable: false,
        labels: app(name),
        controller: match kind {
            2 => controller("DaemonSet"),
            3 => None,
            5 => controller("StatefulSet"),
            _ => controller("ReplicaSet"),
        },
        scheduling: Arc::new(scheduling),
        ..Pod::pending(namespace, &format!("p{i}"), demand)
    }
}

/// A pod's kind, app, cpu (in quarters of a core) and memory (GiB).
type PodShape = (u8, u8, u64, u64);

fn cluster(
    shapes: &[(u64, u64, bool, u8)],
    loads: &[Vec<PodShape>],
) -> (Vec<Arc<Node>>, Vec<Pod>, Vec<Vec<usize>>) {
    let nodes: Vec<Arc<Node>> = (shapes.iter().enumerate())
        .map(|(i, &(cpu, gib, tainted, _))| node(i, cpu * 1000, gib, tainted && i % 4 == 0))
        .collect();
    let mut pods: Vec<Pod> = Vec::new();
    let mut on_node = vec![Vec::new(); nodes.len()];
    for (n, node) in nodes.iter().enumerate() {
        for &(kind, name, cpu, gib) in &loads[n] {
            let pod = pod(pods.len(), &node.name, kind, name, cpu * 250, gib);
            if fits(&pods, &pod, node, &on_node[n]) {
                on_node[n].push(pods.len());
                pods.push(pod);
            }
        }
    }
    (nodes, pods, on_node)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// On random clusters (two groups and nodes in none, taints, DaemonSet, bare, kube-system, StatefulSet
    /// and safe-to-evict pods, hostname anti-affinity, up to a dozen PDBs, some spent), the planner finds the same
    /// removable nodes with the same destinations and riskiness, and keeps the others for the same reasons,
    /// as the plain scale-down.
    #[test]
    fn the_planner_answers_as_a_plain_scale_down(
        shapes in prop::collection::vec((2u64..=16, 4u64..=32, any::<bool>(), 0u8..5), 3..20),
        loads in prop::collection::vec(
            prop::collection::vec((0u8..7, 0u8..4, 1u64..=6, 1u64..=4), 0..6),
            20,
        ),
        budgets in prop::collection::vec((0u8..4, 0i32..3), 0..12),
        min_sizes in (0i32..4, 0i32..4),
    ) {
        let (nodes, pods, on_node) = cluster(&shapes, &loads);
        // Kinds 0-5: groups 0 and 1 mostly, and now and then a node no group manages.
        let group_of: Vec<Option<usize>> = shapes
            .iter()
            .map(|s| match s.3 { 4 => None, g => Some(usize::from(g % 2)) })
            .collect();
        let groups: Vec<GroupInfo> = [min_sizes.0, min_sizes.1]
            .iter()
            .enumerate()
            .map(|(g, &min_size)| GroupInfo {
                id: format!("g{g}"),
                min_size,
                target: group_of.iter().filter(|x| **x == Some(g)).count() as i32,
                options: GroupOptions::default(),
                deleting: 0,
                updating: false,
            })
            .collect();
        let pdbs: Vec<Pdb> = (budgets.iter().enumerate())
            .map(|(i, &(name, allowed))| Pdb {
                namespace: "default".into(),
                name: format!("pdb-{i}"),
                selector: Some(LabelSelector { match_labels: app(name), expressions: vec![] }),
                disruptions_allowed: allowed,
            })
            .collect();
        let (pods_of, now) = ((&pods).into(), SystemTime::now());
        let input = Input {
            pdbs: &pdbs,
            ..Input::new(&nodes, pods_of, &group_of, &groups, &on_node, now)
        };
        let rules = Rules::default();
        let expected = plain(&input, &pods, &rules);
        let (mut topology, mut places) =
            world::build_places(&nodes, &group_of, &pods, &on_node, &[], &LabelProjection::All);
        let plan = planner::plan(&input, &rules, &mut topology, &mut places);
        prop_assert_eq!(answer(&plan), expected);
    }
}
