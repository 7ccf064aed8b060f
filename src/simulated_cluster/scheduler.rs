//! The simulated cluster's kube-scheduler: binding by the plain rules (`plain.rs`), with the companion's
//! placement asked alongside to find where the two disagree, and preemption as far as resources go.

use super::plain::{self, Disagreement};
use super::{claims, extended};
use crate::model::{DraObjects, FARGATE_SCHEDULER, LabelProjection, Node, Phase, Pod};
use crate::simulator::{Dra, EquivalenceGroup, build_places, group_pods, place_all, pods_by_node};
use std::collections::HashMap;
use std::sync::Arc;

/// Binds every pending pod that the plain rules admit somewhere (highest priority first), its claims
/// allocated where it goes (`serial` names the claims it makes for extended resources devices serve); the
/// rest are marked Unschedulable, as kube-scheduler marks them. Returns where the companion's predicates,
/// asked where each pod goes, disagreed with the plain rules.
pub(super) fn schedule(
    nodes: &[Arc<Node>],
    pods: &mut [Pod],
    dra: &mut DraObjects,
    serial: &mut u64,
) -> Vec<Disagreement> {
    let waiting = |p: &Pod| {
        p.node_name.is_none()
            && p.phase != Phase::Terminal
            && p.deleted.is_none()
            && p.scheduler_name != FARGATE_SCHEDULER
    };
    let pending: Vec<usize> = (0..pods.len()).filter(|&i| waiting(&pods[i])).collect();
    if pending.is_empty() {
        return Vec::new();
    }
    let groups = group_pods(&*pods, pending, &LabelProjection::All);
    let order: Vec<usize> = groups.iter().flat_map(|g| g.pods.iter().copied()).collect();
    let planned = companion_placement(nodes, pods, dra, &groups);
    let (bound, disagreements) = plain::bind(nodes, pods, dra, &order, &planned);
    let mut placed: HashMap<usize, usize> = HashMap::new();
    let mut allocations = Vec::new();
    for b in bound {
        placed.insert(b.pod, b.node);
        allocations.push((b.pod, b.allocations));
    }
    for &i in &order {
        let pod = &mut pods[i];
        match placed.get(&i) {
            Some(&n) => {
                pod.node_name = Some(nodes[n].name.as_str().into());
                pod.phase = Phase::Running;
                pod.unschedulable = false;
            }
            None => pod.unschedulable = true,
        }
    }
    claims::write_allocations(dra, pods, allocations, serial);
    disagreements
}

/// Where the companion's predicates (`simulator/`, the placement its loop plans with) put each pending pod
/// of `groups`, by node index: what the plain rules are checked against, and the node they try first.
fn companion_placement(
    nodes: &[Arc<Node>],
    pods: &[Pod],
    dra: &DraObjects,
    groups: &[EquivalenceGroup],
) -> HashMap<usize, usize> {
    let bound: Vec<usize> = (0..pods.len()).filter(|&i| pods[i].holds_room()).collect();
    let exemplars: Vec<&Pod> = groups.iter().map(|g| g.exemplar(pods)).collect();
    let on_node = pods_by_node(nodes, pods, &bound);
    let (mut topology, mut places) = build_places(
        nodes,
        &vec![None; nodes.len()],
        pods,
        &on_node,
        &exemplars,
        &LabelProjection::All,
    );
    // Each node's devices and what claims hold of them, only where there are DRA objects.
    if !dra.is_empty() {
        let devices = Dra::new(dra);
        for (place, node) in places.iter_mut().zip(nodes) {
            place.devices = devices.devices_of(node);
        }
    }
    let mut planned = HashMap::new();
    for group in groups {
        let terms = topology.resolve(group.exemplar(pods));
        let placed = place_all(&mut topology, &mut places, pods, &group.pods, &terms);
        for (k, p) in placed.into_iter().enumerate() {
            if let Some(n) = nodes.iter().position(|n| n.name == places[p].node.name) {
                planned.insert(group.pods[k], n);
            }
        }
    }
    planned
}

/// kube-scheduler's preemption, as far as resources go: a pod left unschedulable takes the place of pods of
/// lower priority on the first node where evicting the lowest of them makes room (cluster-autoscaler's
/// overprovisioning pattern relies on it). The evicted go back to pending, without the claim made for their
/// extended resources.
pub(super) fn preempt(nodes: &[Arc<Node>], pods: &mut [Pod], dra: &mut DraObjects) {
    let mut waiting: Vec<usize> = (0..pods.len())
        .filter(|&i| {
            let p = &pods[i];
            p.node_name.is_none() && p.unschedulable && p.scheduler_name != FARGATE_SCHEDULER
        })
        .collect();
    waiting.sort_by_key(|&i| std::cmp::Reverse(pods[i].priority.unwrap_or(0)));
    for i in waiting {
        // Preemption here weighs resources only: a pod that claims devices waits for a node that has them.
        if pods[i].needs().is_some() {
            continue;
        }
        let priority = pods[i].priority.unwrap_or(0);
        for node in nodes.iter().filter(|n| n.accepts_pods()) {
            if crate::simulator::node_fit(&pods[i].scheduling, node).is_err() {
                continue;
            }
            let on: Vec<usize> = (0..pods.len())
                .filter(|&j| {
                    pods[j].holds_room() && pods[j].node_name.as_deref() == Some(&node.name)
                })
                .collect();
            let used = on.iter().fold(crate::model::Resources::default(), |r, &j| {
                r.plus(pods[j].demand)
            });
            let mut free = node.allocatable.minus(&used);
            let mut lower: Vec<usize> = on
                .into_iter()
                .filter(|&j| pods[j].priority.unwrap_or(0) < priority)
                .collect();
            lower.sort_by_key(|&j| pods[j].priority.unwrap_or(0));
            let mut victims = Vec::new();
            for j in lower {
                if free.fits(&pods[i].demand) {
                    break;
                }
                free = free.plus(pods[j].demand);
                victims.push(j);
            }
            if victims.is_empty() || !free.fits(&pods[i].demand) {
                continue;
            }
            for j in victims {
                let victim = &mut pods[j];
                extended::forget(dra, victim);
                victim.node_name = None;
                victim.phase = Phase::Pending;
                victim.unschedulable = true;
            }
            let pod = &mut pods[i];
            pod.node_name = Some(node.name.as_str().into());
            pod.phase = Phase::Running;
            pod.unschedulable = false;
            break;
        }
    }
}
