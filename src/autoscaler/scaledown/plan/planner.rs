//! Scale-down planning (cluster-autoscaler's planner): which nodes are unneeded. A node is a candidate when its
//! group may shrink and its utilization is at or under the threshold; it is removable when none of its pods
//! forbids it (the drainability rules) and every pod that must move fits on a node that stays, with the same
//! predicates scale-up uses. Removals are committed as they are found: the moved pods keep their new places
//! and the removed node takes no one, so the whole list can go together and nothing depends on a node that
//! goes too.

use crate::autoscaler::scaledown::plan::drainability::{self, Coverage, PdbBudget, Rules, Verdict};
use crate::autoscaler::scaledown::plan::removal::{GroupInfo, Input, Undo};
use crate::autoscaler::scaledown::plan::simulation::RemovalSimulation;
use crate::model::{Node, Pod, Resources};
use crate::simulator::PoolUse;
use crate::simulator::{Place, Topology};
use std::collections::HashMap;
use std::fmt;

/// Why a node stays. The names are upstream's (`simulator.UnremovableReason`), stable for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unremovable {
    /// In no node group the provider manages.
    NotAutoscaled,
    ScaleDownDisabledAnnotation,
    /// Our ToBeDeleted taint is on it, or its deletion is in progress.
    CurrentlyBeingDeleted,
    /// Not Ready yet and younger than `--max-node-startup-time`: it is still starting.
    NotStarted,
    /// Not Ready and `--scale-down-unready-enabled=false`.
    ScaleDownUnreadyDisabled,
    NotUnderutilized,
    NodeGroupMinSizeReached,
    /// Removing it would take the cluster under `--cores-total` / `--memory-total` MIN.
    MinimalResourceLimitExceeded,
    /// A zeroOrMaxNodeScaling group goes whole or not at all, and not all of it can go.
    AtomicScaleDownFailed,
    BlockedByPod,
    NoPlaceToMovePods,
    /// Removable, but its unneeded (or unready) time has not passed yet.
    NotUnneededLongEnough,
    NotUnreadyLongEnough,
    /// Removable, but deletions wait: a scale-up, deletion or failure was too recent.
    ScaleDownInCooldown,
    /// Removable, but `--max-scale-down-parallelism` or `--max-drain-parallelism` deletions are running, or
    /// `--max-empty-bulk-delete` empty nodes already go this loop.
    DeletionBudgetReached,
    /// The cluster view lost most of its pods since the last loop (a relist answered empty, a cache not yet
    /// synced): scale-down waits for a view it can trust. Not one of upstream's reasons.
    UntrustedClusterView,
    /// A disruption budget of its group has no room for its reason now (`--disruption-config`). Not one of
    /// upstream's reasons: Karpenter's `spec.disruption.budgets`.
    DisruptionBudget,
    /// Its managed node group is being updated (status UPDATING): EKS replaces the group's nodes itself, and
    /// removing any of them (or its surge nodes) would fight the update. Not one of upstream's reasons.
    NodeGroupUpdating,
    /// On capacity paid for ahead (a Capacity Block while active, an ODCR's instances in use): removing it
    /// saves nothing, unless its disruption entry says `scaleDownReserved: true`. Not one of upstream's
    /// reasons.
    ReservedCapacity,
}

impl fmt::Display for Unremovable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A node's utilization: requests over allocatable per resource. GPU nodes are judged by GPUs alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Utilization {
    pub cpu: f64,
    pub memory: f64,
    pub gpu: Option<f64>,
    /// Its own devices' (DRA), as cluster-autoscaler counts them (its busiest pool's): when it has any,
    /// all that counts.
    pub devices: Option<PoolUse>,
}

impl Utilization {
    /// What the threshold is compared with.
    pub fn value(&self) -> f64 {
        (self.devices.as_ref().map(|d| d.used).or(self.gpu)).unwrap_or(self.cpu.max(self.memory))
    }

    pub fn describe(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Utilization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(devices) = &self.devices {
            return write!(f, "devices {devices}");
        }
        match self.gpu {
            Some(gpu) => write!(f, "gpu {}%", percent(gpu)),
            None => write!(
                f,
                "cpu {}%, memory {}%",
                percent(self.cpu),
                percent(self.memory)
            ),
        }
    }
}

/// A share as a whole percent, as `{:.0}` prints `share * 100.0` (ties to even), without the float
/// formatting machinery: a 100,000-node loop describes 70,000 removable nodes.
pub(in crate::autoscaler::scaledown) fn percent(share: f64) -> i64 {
    (share * 100.0).round_ties_even() as i64
}

/// Whether a removal has pods to move, as cluster-autoscaler tells its empty deletions from its drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletionKind {
    /// Planned with no pod to move: aborted if pods arrive.
    Empty,
    /// Its pods are evicted first.
    Drain,
}

/// Whether a node's utilization counts its DaemonSet and mirror pods (`ignoreDaemonSetsUtilization`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DaemonSetUtilization {
    Counted,
    Ignored,
}

/// A node that can go: its pods fit elsewhere (or it has none to move).
#[derive(Clone, Debug)]
pub struct Removable {
    pub node: usize,
    pub group: usize,
    /// No pod needs a new place (DaemonSet, mirror and expendable pods do not count).
    pub empty: bool,
    pub utilization: Utilization,
    /// The pods its removal evicts.
    pub evicted: Vec<usize>,
    /// The budgets covering them ([`PdbBudget::coverage`]).
    pub covered: Vec<(usize, usize)>,
    /// Evicting them all at once exceeds a PDB: the drain will wait on refused evictions.
    pub risky: bool,
    /// Where the simulation put each pod that needed a place: (pod, node).
    pub destinations: Vec<(usize, usize)>,
}

impl Removable {
    /// Whether its deletion is an empty one or a drain.
    pub fn kind(&self) -> DeletionKind {
        if self.empty {
            DeletionKind::Empty
        } else {
            DeletionKind::Drain
        }
    }
}

#[derive(Clone, Debug)]
pub struct UnremovableNode {
    pub node: usize,
    pub group: Option<usize>,
    pub reason: Unremovable,
    pub detail: String,
}

/// A removable node that stays this loop all the same (its timer, a cooldown, a budget), with why.
pub struct Held<'p> {
    pub removable: &'p Removable,
    pub reason: Unremovable,
    pub detail: String,
}

#[derive(Clone, Debug, Default)]
pub struct ScaleDownPlan {
    pub removable: Vec<Removable>,
    pub kept: Vec<UnremovableNode>,
}

impl ScaleDownPlan {
    /// How many more nodes each group may lose this loop: over its min size, after the deletions in
    /// progress and this plan's removals (consolidation and expiry take from what is left).
    pub fn room_to_lose(&self, groups: &[GroupInfo]) -> Vec<i64> {
        let mut room: Vec<i64> = (groups.iter())
            .map(|g| i64::from(g.target) - i64::from(g.min_size) - g.deleting as i64)
            .collect();
        for r in &self.removable {
            room[r.group] -= 1;
        }
        room
    }
}

/// A candidate after the checks that need no simulation.
pub(in crate::autoscaler::scaledown) struct RemovalCandidate {
    pub(in crate::autoscaler::scaledown) node: usize,
    pub(in crate::autoscaler::scaledown) group: usize,
    pub(in crate::autoscaler::scaledown) utilization: Utilization,
    pub(in crate::autoscaler::scaledown) evicted: Vec<usize>,
    /// The evicted pods that need a place.
    pub(in crate::autoscaler::scaledown) moving: Vec<usize>,
    /// The budgets covering the evicted pods ([`PdbBudget::coverage`]).
    pub(in crate::autoscaler::scaledown) covered: Vec<(usize, usize)>,
}

/// The node's utilization, from the pods on it that hold room.
pub fn utilization(node: &Node, pods: &[&Pod], daemonsets: DaemonSetUtilization) -> Utilization {
    let ignore_daemonsets = daemonsets == DaemonSetUtilization::Ignored;
    let mut used = Resources::default();
    let mut ignored = Resources::default();
    for pod in pods {
        if ignore_daemonsets && (pod.daemonset() || pod.disruption.mirror) {
            ignored = ignored.plus(pod.demand);
        } else {
            used = used.plus(pod.demand);
        }
    }
    let ratio = |used: u64, allocatable: u64, ignored: u64| {
        let room = allocatable.saturating_sub(ignored);
        if room == 0 {
            0.0
        } else {
            used as f64 / room as f64
        }
    };
    let allocatable = &node.allocatable;
    let gpu_node = allocatable.gpus > 0 || node.labels.contains_key(crate::model::GPU_LABEL);
    Utilization {
        cpu: ratio(used.cpu_millis, allocatable.cpu_millis, ignored.cpu_millis),
        memory: ratio(
            used.memory_bytes,
            allocatable.memory_bytes,
            ignored.memory_bytes,
        ),
        gpu: gpu_node.then(|| ratio(used.gpus, allocatable.gpus, ignored.gpus)),
        devices: None,
    }
}

/// Finds the unneeded nodes. `places` are the registered nodes' places (same order as `input.nodes`) in
/// `topology`, with the pods of `input.on_node` on them; removals found are committed there.
pub fn plan<'a>(
    input: &Input<'a>,
    rules: &Rules,
    topology: &mut Topology,
    places: &mut [Place],
) -> ScaleDownPlan {
    let mut plan = ScaleDownPlan::default();
    let pdbs = PdbBudget::new(input.pdbs);
    let mut seen = Coverage::default();
    let mut candidates = Vec::with_capacity(input.nodes.len());
    for (n, _) in input.nodes.iter().enumerate() {
        let threshold = UtilizationCheck::Threshold;
        match candidate(input, rules, &pdbs, &mut seen, n, threshold) {
            Ok(c) => candidates.push(c),
            Err((reason, detail)) => plan.kept.push(UnremovableNode {
                node: n,
                group: input.node_group[n],
                reason,
                detail,
            }),
        }
    }
    // Empty nodes first, then those unneeded last loop, then the least used. Each key is read once (a
    // name looked up in a set), not at every comparison.
    let mut keyed: Vec<_> = (candidates.into_iter())
        .map(|c| {
            let previously = (input.previously_unneeded).contains(&input.nodes[c.node].name);
            (
                (!c.moving.is_empty(), !previously),
                c.utilization.value(),
                c,
            )
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let candidates: Vec<RemovalCandidate> = keyed.into_iter().map(|(_, _, c)| c).collect();

    let mut room: Vec<i64> = input
        .groups
        .iter()
        .map(|g| i64::from(g.target) - i64::from(g.min_size) - g.deleting as i64)
        .collect();
    let (mut cores, mut memory) = input.nodes.iter().fold((0u64, 0u64), |(c, m), n| {
        (c + n.capacity.cpu_millis, m + n.capacity.memory_bytes)
    });
    // Pods moving off a candidate go first to nodes that are no candidate, then to the candidates tried
    // last: filling a node that is about to be removed would only move the same pods again.
    let mut candidate = vec![false; places.len()];
    for c in &candidates {
        candidate[c.node] = true;
    }
    let mut order: Vec<usize> = (0..places.len()).filter(|&p| !candidate[p]).collect();
    order.extend(candidates.iter().rev().map(|c| c.node));
    let mut sim = RemovalSimulation::new(input, rules, topology, places, order);
    // zeroOrMaxNodeScaling groups go whole: their candidates are simulated together, after the rest.
    let (atomic, single): (Vec<RemovalCandidate>, Vec<RemovalCandidate>) = candidates
        .into_iter()
        .partition(|c| input.groups[c.group].options.zero_or_max);
    for c in single {
        let node = &input.nodes[c.node];
        let keep = |reason, detail: String| UnremovableNode {
            node: c.node,
            group: Some(c.group),
            reason,
            detail,
        };
        if room[c.group] <= 0 {
            let g = &input.groups[c.group];
            plan.kept.push(keep(
                Unremovable::NodeGroupMinSizeReached,
                format!(
                    "{} is at its min size {} (target {}, {} being deleted, others of it removed first)",
                    g.id, g.min_size, g.target, g.deleting
                ),
            ));
            continue;
        }
        if let Some(why) = under_minimum(input, cores, memory, node) {
            plan.kept
                .push(keep(Unremovable::MinimalResourceLimitExceeded, why));
            continue;
        }
        // A PDB may have been spent by a node committed earlier in this pass.
        if let Some(why) = blocked(input, rules, &sim.pdbs, &c) {
            plan.kept.push(keep(Unremovable::BlockedByPod, why));
            continue;
        }
        match sim.remove(c.node, &c.moving) {
            Ok(destinations) => {
                room[c.group] -= 1;
                cores -= node.capacity.cpu_millis;
                memory -= node.capacity.memory_bytes;
                plan.removable.push(commit(&mut sim.pdbs, c, destinations));
            }
            Err(why) => plan
                .kept
                .push(keep(Unremovable::NoPlaceToMovePods, why.to_string())),
        }
    }
    atomic_groups(&mut sim, atomic, &mut plan);
    plan.kept.sort_by_key(|k| k.node);
    plan
}

/// Whether a candidate's utilization is held to its group's threshold: scale-down's are, consolidation
/// replaces nodes however used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::autoscaler::scaledown) enum UtilizationCheck {
    Threshold,
    Any,
}

/// The checks of one node that need no simulation: group, annotation, deletion, readiness, utilization (as
/// `check` says), and its pods' drainability.
pub(in crate::autoscaler::scaledown) fn candidate<'a>(
    input: &Input<'a>,
    rules: &Rules,
    pdbs: &PdbBudget,
    seen: &mut Coverage<'a>,
    n: usize,
    check: UtilizationCheck,
) -> Result<RemovalCandidate, (Unremovable, String)> {
    let node = &input.nodes[n];
    let g = node_checks(input, n, node)?;
    if let Some(why) = input.reserved.get(&node.name) {
        return Err((Unremovable::ReservedCapacity, why.clone()));
    }
    let group = &input.groups[g];
    let mut on_node: Vec<&Pod> = Vec::with_capacity(input.on_node[n].len());
    on_node.extend(
        (input.on_node[n].iter())
            .map(|&p| &input.pods[p])
            .filter(|p| !drainability::long_terminating(p, input.now)),
    );
    let daemonsets = if group.options.ignore_daemon_sets {
        DaemonSetUtilization::Ignored
    } else {
        DaemonSetUtilization::Counted
    };
    let used = Utilization {
        devices: input.device_use.get(n).cloned().flatten(),
        ..utilization(node, &on_node, daemonsets)
    };
    let limit = if used.gpu.is_some() {
        group.options.gpu_utilization
    } else {
        group.options.utilization
    };
    if used.value() > limit && check == UtilizationCheck::Threshold {
        return Err((
            Unremovable::NotUnderutilized,
            format!(
                "utilization {} is above the threshold {:.0}%",
                used.describe(),
                limit * 100.0
            ),
        ));
    }
    // One classification per pod: the first that blocks keeps the node, the others sort into evicted and
    // moving.
    let mut evicted = Vec::with_capacity(on_node.len());
    let mut moving = Vec::with_capacity(on_node.len());
    for &p in &input.on_node[n] {
        match drainability::classify(&input.pods[p], rules, pdbs, input.now) {
            Verdict::Blocks(reason, why) => {
                return Err((Unremovable::BlockedByPod, format!("{reason}: {why}")));
            }
            Verdict::Evicted { needs_place } => {
                evicted.push(p);
                if needs_place {
                    moving.push(p);
                }
            }
            Verdict::Stays => {}
        }
    }
    let covered = pdbs.coverage(seen, evicted.iter().map(|&p| (p, input.pods.get(p))));
    Ok(RemovalCandidate {
        node: n,
        group: g,
        utilization: used,
        evicted,
        moving,
        covered,
    })
}

/// The checks of node `n` itself: its group, its group's state and size, annotations, deletion, readiness;
/// its group when it passes them.
fn node_checks(input: &Input<'_>, n: usize, node: &Node) -> Result<usize, (Unremovable, String)> {
    let Some(g) = input.node_group[n] else {
        return Err((
            Unremovable::NotAutoscaled,
            "in no node group of the provider".into(),
        ));
    };
    let group = &input.groups[g];
    if group.updating {
        return Err((
            Unremovable::NodeGroupUpdating,
            format!(
                "{} is UPDATING: its nodes stay until the update ends",
                group.id
            ),
        ));
    }
    if node.scale_down_disabled {
        return Err((
            Unremovable::ScaleDownDisabledAnnotation,
            "annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"".into(),
        ));
    }
    if node.do_not_disrupt {
        return Err((
            Unremovable::ScaleDownDisabledAnnotation,
            "annotated karpenter.sh/do-not-disrupt: \"true\"".into(),
        ));
    }
    if input.deleting.contains(&node.name) {
        return Err((
            Unremovable::CurrentlyBeingDeleted,
            "its removal is in progress".into(),
        ));
    }
    if !node.ready {
        if node.starting(input.now, input.max_node_startup_time) {
            return Err((
                Unremovable::NotStarted,
                "not Ready yet and still within --max-node-startup-time".into(),
            ));
        }
        if !input.unready_enabled {
            return Err((
                Unremovable::ScaleDownUnreadyDisabled,
                "not Ready, and --scale-down-unready-enabled=false".into(),
            ));
        }
    }
    if group.target <= group.min_size {
        return Err((
            Unremovable::NodeGroupMinSizeReached,
            format!(
                "{} is at its min size {} (target {})",
                group.id, group.min_size, group.target
            ),
        ));
    }
    Ok(g)
}

/// The first of a candidate's evicted pods that keeps its node now, as `Reason: ns/name: why`.
pub(in crate::autoscaler::scaledown) fn blocked(
    input: &Input,
    rules: &Rules,
    pdbs: &PdbBudget,
    c: &RemovalCandidate,
) -> Option<String> {
    // The pods passed the rules when their node became a candidate; since then only budgets were spent.
    // (A pod annotated safe-to-evict goes whatever its budgets say.)
    pdbs.exhausted_pods(&c.covered).find_map(|p| {
        match drainability::classify(&input.pods[p], rules, pdbs, input.now) {
            Verdict::Blocks(reason, why) => Some(format!("{reason}: {why}")),
            _ => None,
        }
    })
}

/// Why removing `node` would take the cluster under its minimum cores or memory, if it would.
fn under_minimum(input: &Input, cores: u64, memory: u64, node: &Node) -> Option<String> {
    let min_cores = input.min_cores * 1000;
    let min_memory = input.min_memory_gib << 30;
    let left_cores = cores.saturating_sub(node.capacity.cpu_millis);
    let left_memory = memory.saturating_sub(node.capacity.memory_bytes);
    if input.min_cores > 0 && left_cores < min_cores {
        return Some(format!(
            "the cluster would have {:.1} cores, under --cores-total MIN {}",
            left_cores as f64 / 1000.0,
            input.min_cores
        ));
    }
    if input.min_memory_gib > 0 && left_memory < min_memory {
        return Some(format!(
            "the cluster would have {:.1} GiB, under --memory-total MIN {}",
            left_memory as f64 / f64::from(1u32 << 30),
            input.min_memory_gib
        ));
    }
    None
}

fn commit(
    pdbs: &mut PdbBudget,
    c: RemovalCandidate,
    destinations: Vec<(usize, usize)>,
) -> Removable {
    let risky = !pdbs.allows_all(&c.covered);
    pdbs.spend(&c.covered);
    Removable {
        node: c.node,
        group: c.group,
        empty: c.moving.is_empty(),
        utilization: c.utilization,
        evicted: c.evicted,
        covered: c.covered,
        risky,
        destinations,
    }
}

/// zeroOrMaxNodeScaling groups: all of a group's nodes must be removable together, or none is removed.
fn atomic_groups(
    sim: &mut RemovalSimulation<'_, '_>,
    candidates: Vec<RemovalCandidate>,
    plan: &mut ScaleDownPlan,
) {
    let input = sim.input;
    let mut by_group: HashMap<usize, Vec<RemovalCandidate>> = HashMap::new();
    for c in candidates {
        by_group.entry(c.group).or_default().push(c);
    }
    let mut groups: Vec<_> = by_group.into_iter().collect();
    groups.sort_by_key(|(g, _)| *g);
    for (g, members) in groups {
        let group = &input.groups[g];
        let registered = input.node_group.iter().filter(|x| **x == Some(g)).count();
        let fail =
            |plan: &mut ScaleDownPlan, members: Vec<RemovalCandidate>, reason, detail: String| {
                for c in members {
                    plan.kept.push(UnremovableNode {
                        node: c.node,
                        group: Some(g),
                        reason,
                        detail: detail.clone(),
                    });
                }
            };
        if group.min_size > 0 {
            let why = format!(
                "{} scales to zero or max, and its min size is {}",
                group.id, group.min_size
            );
            fail(plan, members, Unremovable::NodeGroupMinSizeReached, why);
            continue;
        }
        if members.len() < registered || i64::from(group.target) != registered as i64 {
            let why = format!(
                "{} scales to zero or max: {} of its {} node(s) are unneeded (target {})",
                group.id,
                members.len(),
                registered,
                group.target
            );
            fail(plan, members, Unremovable::AtomicScaleDownFailed, why);
            continue;
        }
        let mut undo = Undo::default();
        let mut failed = None;
        let mut moved = Vec::new();
        for c in &members {
            sim.set_accepts(c.node, false);
        }
        for c in &members {
            if let Some(why) = blocked(input, sim.rules, &sim.pdbs, c) {
                failed = Some((Unremovable::BlockedByPod, why));
                break;
            }
            match sim.move_pods(c.node, &c.moving, &mut undo) {
                Ok(destinations) => moved.push(destinations),
                Err(why) => {
                    failed = Some((Unremovable::NoPlaceToMovePods, why.to_string()));
                    break;
                }
            }
        }
        match failed {
            None => {
                for (c, destinations) in members.into_iter().zip(moved) {
                    sim.mover.commit(c.node, &destinations);
                    plan.removable.push(commit(&mut sim.pdbs, c, destinations));
                }
            }
            Some((reason, why)) => {
                sim.undo(undo);
                for c in &members {
                    let node = &input.nodes[c.node];
                    let accepts = node.accepts_pods() && !input.deleting.contains(&node.name);
                    sim.set_accepts(c.node, accepts);
                }
                let why = format!(
                    "{} scales to zero or max and one of its nodes cannot go: {why}",
                    group.id
                );
                fail(plan, members, reason, why);
            }
        }
    }
}
