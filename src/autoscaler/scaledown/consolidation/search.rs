//! Consolidation planning (`--consolidation replace`): nodes replaced by one cheaper node. A node may be
//! replaced when scale-down's checks let it go (its group above min size, no pod that blocks a drain; the
//! utilization threshold aside) and none of its pods is annotated `karpenter.sh/do-not-disrupt`. Its movable
//! pods must all fit on ONE new node of another group (with the predicates scale-up uses, and that group's
//! DaemonSet pods on it, in the zone its Auto Scaling group launches in next), and that node must cost less
//! by at least `--consolidation-min-saving`. Several under-used nodes whose pods fit on one new node are merged
//! first: that saves the most.
//!
//! It plans over the world scale-down left: nodes scale-down removes, and nodes its removals move pods onto,
//! are left to scale-down. Replacements found are committed as they are found (the old nodes take no pods,
//! their pods live on the new node, their PDB budget is spent), so that a list of them holds together.

use crate::autoscaler::scaledown::act::actuation::Cause;
use crate::autoscaler::scaledown::plan::drainability::{
    self, Blocking, Coverage, PdbBudget, Rules, Verdict,
};
use crate::autoscaler::scaledown::plan::planner::{
    self as scaledown, RemovalCandidate, Unremovable,
};
use crate::autoscaler::scaledown::plan::removal::Input;
use crate::autoscaler::scaledown::plan::removal::{FitsNowhere, Mover, Undo};
use crate::autoscaler::scaledown::settings::MinSaving;
use crate::model::{CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, Labels};
use crate::simulator::{Place, PlaceKind, Topology};
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// How long a node launched by a replacement is left alone: at most one consolidation a node a day.
pub const ONCE_A_DAY: Duration = Duration::from_secs(24 * 3600);

/// Most nodes merged into one new node.
const MAX_MERGED: usize = 10;

/// Why a node is not consolidated. The names are stable for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotConsolidatedBecause {
    /// One of scale-down's checks that consolidation shares (NotAutoscaled, BlockedByPod, ...).
    Unremovable(Unremovable),
    NotReady,
    /// Scale-down removes it, or moves the pods of a node it removes onto it: scale-down's to handle.
    ScaleDownCandidate,
    /// No pod on it needs a new place: scale-down removes it once its timers let it.
    NothingToMove,
    /// The provider gives no price for its group.
    NoPrice,
    /// No node group holds its pods on one new node that costs less.
    NoCheaperFit,
    /// The cheapest fit saves less than `--consolidation-min-saving`.
    SavingBelowThreshold,
    /// Not a candidate for `--consolidation-stable-time` yet, or a pod was scheduled to it meanwhile.
    NotStableLongEnough,
    /// In a replacement that went ahead (an old node whose drain it started, or the node it launched) less than
    /// a day ago.
    ConsolidatedRecently,
    /// Part of a replacement in progress.
    ConsolidationInProgress,
    /// A scale-up was too recent (`--scale-down-delay-after-add`), or the loop's scale-down waits.
    ConsolidationInCooldown,
    /// `--max-consolidation-parallelism` replacements are in progress or start this loop.
    ConsolidationBudgetReached,
}

impl fmt::Display for NotConsolidatedBecause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotConsolidatedBecause::Unremovable(u) => u.fmt(f),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// A node group a replacement may launch in.
pub struct ReplacementTarget<'a> {
    pub group: usize,
    /// Its template (DaemonSet pods on it) in the zone its Auto Scaling group launches in next.
    pub template: &'a Place,
    pub price: f64,
}

impl ReplacementTarget<'_> {
    pub fn instance_type(&self) -> &str {
        label(self.template, INSTANCE_TYPE_LABEL)
    }
}

fn label<'a>(place: &'a Place, key: &str) -> &'a str {
    place.node.labels.get(key).map_or("", String::as_str)
}

/// What a node is bought as: its instance type and capacity type (on-demand or spot).
fn offering(labels: &Labels) -> (Option<&str>, Option<&str>) {
    let get = |key| labels.get(key).map(String::as_str);
    (get(INSTANCE_TYPE_LABEL), get(CAPACITY_TYPE_LABEL))
}

/// Nodes replaced by one new node.
#[derive(Clone, Debug)]
pub struct Replacement {
    /// The nodes it replaces (node indices) and their groups.
    pub nodes: Vec<usize>,
    pub from_groups: Vec<usize>,
    /// The group the new node launches in, and its instance type.
    pub group: usize,
    pub instance_type: String,
    /// The pods its drains evict that need a place (they go to the new node).
    pub moving: Vec<usize>,
    /// Per hour: what the nodes cost, and what the new node costs.
    pub before: f64,
    pub after: f64,
}

impl Replacement {
    pub fn saving(&self) -> f64 {
        self.before - self.after
    }
}

/// A node not consolidated, with why.
#[derive(Clone, Debug)]
pub struct NotConsolidated {
    pub node: usize,
    pub reason: NotConsolidatedBecause,
    pub detail: String,
}

#[derive(Clone, Debug, Default)]
pub struct ConsolidationPlan {
    pub replacements: Vec<Replacement>,
    pub not: Vec<NotConsolidated>,
}

/// What the planner is given besides the cluster.
pub struct Ask<'a> {
    pub rules: &'a Rules,
    pub min_saving: MinSaving,
    /// The groups a new node may launch in, any order.
    pub targets: &'a [ReplacementTarget<'a>],
    /// Each group's node price per hour, when known.
    pub prices: &'a [Option<f64>],
    /// Nodes not to try, with why (scale-down's, held by the policy's timers and budgets).
    pub left: &'a HashMap<usize, (NotConsolidatedBecause, String)>,
    /// The groups that are no targets this loop, as `group: why`, for the nodes no target could take.
    pub left_out: &'a [String],
    /// Per group, how many nodes it may lose (over its min size, after the deletions in progress and
    /// scale-down's removals).
    pub room: Vec<i64>,
    /// Replacements that may be committed; those found beyond are reported with `over_limit`.
    pub limit: usize,
    pub over_limit: (NotConsolidatedBecause, &'a str),
}

/// Finds replacements over the world scale-down left in `topology` and `places` (the view's nodes first);
/// `pdbs` is what scale-down's removals left of the disruption budgets.
pub fn plan<'a>(
    input: &Input<'a>,
    ask: &Ask<'_>,
    pdbs: &mut PdbBudget,
    topology: &mut Topology,
    places: &mut Vec<Place>,
) -> ConsolidationPlan {
    let existing = places.len();
    let mut plan = ConsolidationPlan::default();
    let mut candidates = candidates(input, ask, pdbs, &mut plan.not);

    let mut targets: Vec<&ReplacementTarget> = ask.targets.iter().collect();
    targets.sort_by(|a, b| a.price.total_cmp(&b.price).then(a.group.cmp(&b.group)));
    let mut world = FreshNodes::new(input, &targets, topology, places);
    let mut committed = 0;
    let mut room = ask.room.clone();

    // Merges first: the least-used nodes, as many as one new node holds.
    candidates.sort_by(|(a, pa), (b, pb)| {
        (a.utilization.value().total_cmp(&b.utilization.value())).then(pb.total_cmp(pa))
    });
    while committed < ask.limit {
        let Some((k, fit)) = best_merge(&mut world, ask, pdbs, &room, &candidates) else {
            break;
        };
        let merged: Vec<(RemovalCandidate, f64)> = candidates.drain(..k).collect();
        let members: Vec<&RemovalCandidate> = merged.iter().map(|(c, _)| c).collect();
        for c in &members {
            room[c.group] -= 1;
        }
        let before = merged.iter().map(|(_, p)| p).sum();
        plan.replacements
            .push(world.commit(fit, &members, before, pdbs));
        committed += 1;
    }

    // Then single nodes, the most expensive first.
    candidates.sort_by(|(a, pa), (b, pb)| {
        (pb.total_cmp(pa)).then(a.utilization.value().total_cmp(&b.utilization.value()))
    });
    for (c, price) in candidates {
        let g = &input.groups[c.group];
        let reason = if room[c.group] < 1 {
            let why = format!(
                "{} would go under its min size {} (target {}, {} leaving)",
                g.id,
                g.min_size,
                g.target,
                i64::from(g.target) - i64::from(g.min_size) - room[c.group]
            );
            Err((
                NotConsolidatedBecause::Unremovable(Unremovable::NodeGroupMinSizeReached),
                why,
            ))
        } else {
            let admission = if committed < ask.limit {
                Admission::Admitted
            } else {
                Admission::OverLimit
            };
            single(&mut world, ask, pdbs, &c, price, admission)
        };
        match reason {
            Ok(fit) => {
                room[c.group] -= 1;
                plan.replacements
                    .push(world.commit(fit, &[&c], price, pdbs));
                committed += 1;
            }
            Err((reason, detail)) => plan.not.push(NotConsolidated {
                node: c.node,
                reason,
                detail,
            }),
        }
    }
    world.places.truncate(existing);
    plan.not.sort_by_key(|n| n.node);
    plan
}

/// The nodes consolidation may try, each with its price; the others go to `not`, with why: left alone this
/// loop, not removable by scale-down's own rules, not Ready, holding a do-not-disrupt pod, with nothing to
/// move (scale-down's), or unpriced.
fn candidates(
    input: &Input<'_>,
    ask: &Ask<'_>,
    pdbs: &PdbBudget,
    not_consolidated: &mut Vec<NotConsolidated>,
) -> Vec<(RemovalCandidate, f64)> {
    let mut candidates = Vec::new();
    let mut seen = Coverage::default();
    for (n, node) in input.nodes.iter().enumerate() {
        let mut not = |reason, detail: String| {
            not_consolidated.push(NotConsolidated {
                node: n,
                reason,
                detail,
            })
        };
        if let Some((reason, detail)) = ask.left.get(&n) {
            not(*reason, detail.clone());
            continue;
        }
        let c = match scaledown::candidate(
            input,
            ask.rules,
            pdbs,
            &mut seen,
            n,
            scaledown::UtilizationCheck::Any,
        ) {
            Ok(c) => c,
            Err((reason, detail)) => {
                not(NotConsolidatedBecause::Unremovable(reason), detail);
                continue;
            }
        };
        if !node.ready {
            not(
                NotConsolidatedBecause::NotReady,
                "not Ready: scale-down handles unready nodes".into(),
            );
            continue;
        }
        if let Some(&p) =
            (input.on_node[n].iter()).find(|&&p| input.pods[p].disruption.do_not_disrupt)
        {
            let why = format!(
                "DoNotDisrupt: {}: annotated karpenter.sh/do-not-disrupt: \"true\"",
                input.pods[p].key()
            );
            not(
                NotConsolidatedBecause::Unremovable(Unremovable::BlockedByPod),
                why,
            );
            continue;
        }
        if c.moving.is_empty() {
            not(
                NotConsolidatedBecause::NothingToMove,
                "no pod on it needs a new place: scale-down removes it".into(),
            );
            continue;
        }
        let Some(price) = ask.prices[c.group] else {
            not(
                NotConsolidatedBecause::NoPrice,
                format!("no price for node group {}", input.groups[c.group].id),
            );
            continue;
        };
        candidates.push((c, price));
    }
    candidates
}

/// Whether a replacement found may be committed, or the loop's replacements are at their limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admission {
    Admitted,
    OverLimit,
}

/// The cheapest replacement of one node that saves enough, simulated (to commit when admitted), or why
/// there is none. Never the same offering for itself (instance type and capacity type: on-demand may become
/// spot of its type); never a node that costs as much (so never spot for spot at the same price).
fn single(
    world: &mut FreshNodes<'_, '_>,
    ask: &Ask<'_>,
    pdbs: &PdbBudget,
    c: &RemovalCandidate,
    price: f64,
    admission: Admission,
) -> Result<Fit, (NotConsolidatedBecause, String)> {
    let input = world.input;
    // Replacements committed before it may have spent a budget its pods need.
    if let Some(why) = blocked(input, ask.rules, pdbs, &[c]) {
        return Err((
            NotConsolidatedBecause::Unremovable(Unremovable::BlockedByPod),
            why,
        ));
    }
    let node = &input.nodes[c.node];
    let own = offering(&node.labels);
    let mut cheapest_unfit: Option<String> = None;
    let mut found = None;
    for t in 0..world.targets.len() {
        let target = world.targets[t];
        if target.price >= price || own == offering(&target.template.node.labels) {
            continue;
        }
        match world.fit(t, &[c]) {
            Ok(fit) => {
                found = Some(fit);
                break;
            }
            Err(why) => {
                let group = &input.groups[target.group].id;
                cheapest_unfit.get_or_insert(format!("{group}: {why}"));
            }
        }
    }
    let Some(fit) = found else {
        let detail = match cheapest_unfit {
            Some(why) => format!(
                "no node group costing less than ${price:.4}/h holds its pods on one node; the \
                 cheapest: {why}"
            ),
            None => format!("no other offering costs less than ${price:.4}/h"),
        };
        let detail = match ask.left_out {
            [] => detail,
            out => format!("{detail}; not tried: {}", out.join("; ")),
        };
        return Err((NotConsolidatedBecause::NoCheaperFit, detail));
    };
    let target = world.targets[fit.target];
    let what = format!(
        "{} ({}) at ${:.4}/h for ${price:.4}/h",
        input.groups[target.group].id,
        target.instance_type(),
        target.price
    );
    if !ask.min_saving.met(price, target.price) {
        world.undo(fit);
        let detail = format!(
            "{what}: saves ${:.4}/h, under --consolidation-min-saving {}",
            price - target.price,
            ask.min_saving
        );
        return Err((NotConsolidatedBecause::SavingBelowThreshold, detail));
    }
    if admission == Admission::OverLimit {
        world.undo(fit);
        let (reason, why) = ask.over_limit;
        return Err((reason, format!("would be replaced by {what}; {why}")));
    }
    Ok(fit)
}

/// Why a replacement's old nodes can no longer go: a pod that blocks their drain, or one that fits nowhere.
#[derive(Debug, thiserror::Error)]
pub enum StillFits {
    /// `Reason: ns/name: why`.
    #[error("{0}")]
    Blocked(String),
    #[error(transparent)]
    Nowhere(FitsNowhere),
}

/// Before a replacement's old nodes drain (its new node is Ready): whether their pods still fit on the nodes
/// that stay, the new one among them. Committed when they do (the old nodes take no pods), undone when not.
/// `places` are the view's nodes. A pod no eviction may move ends a consolidation; an expired or drifted
/// node's drain waits for it until its grace period, after which its controller makes it again elsewhere:
/// it needs a place too.
pub fn still_fits<'a>(
    input: &Input<'a>,
    rules: &Rules,
    topology: &mut Topology,
    places: &mut [Place],
    old: &[usize],
    cause: Cause,
) -> Result<(), StillFits> {
    let holds = matches!(cause, Cause::Disruption { .. });
    let pdbs = PdbBudget::new(input.pdbs);
    let mut moving = Vec::new();
    for &n in old {
        let mut must_move = Vec::new();
        for &p in &input.on_node[n] {
            let pod = &input.pods[p];
            match drainability::classify(pod, rules, &pdbs, input.now) {
                // The API server enforces budgets: the drain waits for them.
                Verdict::Evicted { needs_place: true }
                | Verdict::Blocks(Blocking::NotEnoughPdb, _) => must_move.push(p),
                Verdict::Blocks(..) if holds && pod.controller.is_some() => must_move.push(p),
                Verdict::Blocks(..) if holds => {}
                Verdict::Blocks(reason, why) => {
                    return Err(StillFits::Blocked(format!("{reason}: {why}")));
                }
                Verdict::Evicted { .. } | Verdict::Stays => {}
            }
        }
        moving.push(must_move);
    }
    let order: Vec<usize> = (0..places.len()).filter(|p| !old.contains(p)).collect();
    let mut mover = Mover::new(order, places, input);
    let mut undo = Undo::default();
    let accepted: Vec<bool> = old.iter().map(|&n| places[n].accepts).collect();
    for &n in old {
        places[n].accepts = false;
    }
    for (&n, must_move) in old.iter().zip(&moving) {
        if let Err(why) = mover.move_pods(topology, places, n, must_move, &mut undo) {
            mover.undo(undo, topology, places);
            for (&n, accepts) in old.iter().zip(accepted) {
                places[n].accepts = accepts;
            }
            return Err(StillFits::Nowhere(why));
        }
    }
    Ok(())
}

/// Why draining `nodes` one after another is not allowed, if it is not: a pod that blocks, or a budget the
/// nodes before it spent (as scale-down commits its removals; the drains then wait on the API server).
fn blocked(
    input: &Input,
    rules: &Rules,
    pdbs: &PdbBudget,
    nodes: &[&RemovalCandidate],
) -> Option<String> {
    let mut pdbs = pdbs.clone();
    for c in nodes {
        if let Some(why) = scaledown::blocked(input, rules, &pdbs, c) {
            return Some(why);
        }
        pdbs.spend(&c.covered);
    }
    None
}

/// The largest run of the first candidates (two or more) whose pods fit on one new node that saves enough,
/// and that fit, simulated; `None` when no two merge.
fn best_merge(
    world: &mut FreshNodes<'_, '_>,
    ask: &Ask<'_>,
    pdbs: &PdbBudget,
    room: &[i64],
    candidates: &[(RemovalCandidate, f64)],
) -> Option<(usize, Fit)> {
    let mut best = None;
    for k in 2..=candidates.len().min(MAX_MERGED) {
        let mut left = room.to_vec();
        for (c, _) in &candidates[..k] {
            left[c.group] -= 1;
        }
        if left.iter().any(|&r| r < 0) {
            // A group under its min size: more nodes will not help.
            break;
        }
        let Some(fit) = merge(world, ask, pdbs, &candidates[..k]) else {
            // More nodes' pods will not fit where fewer did not.
            break;
        };
        world.undo(fit);
        best = Some(k);
    }
    let k = best?;
    merge(world, ask, pdbs, &candidates[..k]).map(|fit| (k, fit))
}

/// The pods of all of `members` on one new node of the cheapest target that saves enough, simulated.
fn merge(
    world: &mut FreshNodes<'_, '_>,
    ask: &Ask<'_>,
    pdbs: &PdbBudget,
    members: &[(RemovalCandidate, f64)],
) -> Option<Fit> {
    let before: f64 = members.iter().map(|(_, p)| p).sum();
    let members: Vec<&RemovalCandidate> = members.iter().map(|(c, _)| c).collect();
    if blocked(world.input, ask.rules, pdbs, &members).is_some() {
        return None;
    }
    for t in 0..world.targets.len() {
        // Targets come cheapest first: once one saves too little, the rest do too.
        if !ask.min_saving.met(before, world.targets[t].price) {
            return None;
        }
        if let Ok(fit) = world.fit(t, &members) {
            return Some(fit);
        }
    }
    None
}

/// A simulated replacement: the pods of some nodes moved onto a new node of a target, to commit or undo.
struct Fit {
    target: usize,
    place: usize,
    nodes: Vec<usize>,
    undo: Undo,
}

/// The world the planner moves pods in: one fresh node per target, each with its own mover.
struct FreshNodes<'i, 'a> {
    input: &'i Input<'a>,
    targets: Vec<&'i ReplacementTarget<'i>>,
    topology: &'i mut Topology,
    places: &'i mut Vec<Place>,
    /// Per target: its fresh node's place, and a mover whose only destination it is.
    fresh: Vec<(usize, Mover<'a>)>,
}

impl<'i, 'a> FreshNodes<'i, 'a> {
    fn new(
        input: &'i Input<'a>,
        targets: &[&'i ReplacementTarget<'i>],
        topology: &'i mut Topology,
        places: &'i mut Vec<Place>,
    ) -> FreshNodes<'i, 'a> {
        let mut world = FreshNodes {
            input,
            targets: targets.to_vec(),
            topology,
            places,
            fresh: Vec::new(),
        };
        world.fresh = (0..targets.len()).map(|t| world.new_node(t)).collect();
        world
    }

    fn new_node(&mut self, t: usize) -> (usize, Mover<'a>) {
        let place = (self.topology).copy(self.targets[t].template, PlaceKind::Planned);
        self.places.push(place);
        let at = self.places.len() - 1;
        (at, Mover::new(vec![at], self.places, self.input))
    }

    /// Moves the movable pods of `nodes` onto target `t`'s fresh node, or says why one does not fit.
    fn fit(&mut self, t: usize, nodes: &[&RemovalCandidate]) -> Result<Fit, FitsNowhere> {
        let (place, mover) = &mut self.fresh[t];
        let mut undo = Undo::default();
        for c in nodes {
            let moved = mover.move_pods(self.topology, self.places, c.node, &c.moving, &mut undo);
            if let Err(why) = moved {
                mover.undo(undo, self.topology, self.places);
                return Err(why);
            }
        }
        Ok(Fit {
            target: t,
            place: *place,
            nodes: nodes.iter().map(|c| c.node).collect(),
            undo,
        })
    }

    fn undo(&mut self, fit: Fit) {
        let (_, mover) = &mut self.fresh[fit.target];
        mover.undo(fit.undo, self.topology, self.places);
    }

    /// Keeps a fit: the old nodes take no pods, the new node keeps its pods, and its target gets a fresh node.
    fn commit(
        &mut self,
        fit: Fit,
        members: &[&RemovalCandidate],
        before: f64,
        pdbs: &mut PdbBudget,
    ) -> Replacement {
        debug_assert_eq!(
            fit.nodes,
            members.iter().map(|c| c.node).collect::<Vec<_>>()
        );
        debug_assert_eq!(fit.place, self.fresh[fit.target].0);
        for &n in &fit.nodes {
            self.places[n].accepts = false;
        }
        for c in members {
            pdbs.spend(&c.covered);
        }
        let target = self.targets[fit.target];
        self.fresh[fit.target] = self.new_node(fit.target);
        Replacement {
            nodes: fit.nodes,
            from_groups: members.iter().map(|c| c.group).collect(),
            group: target.group,
            instance_type: target.instance_type().to_string(),
            moving: members.iter().flat_map(|c| c.moving.clone()).collect(),
            before,
            after: target.price,
        }
    }
}
