//! The scale-down policy, around the planner (`plan/planner.rs`): the unneeded timers (`plan/unneeded.rs`), the
//! cooldowns after a scale-up, deletion or failure, the deletion and drain budgets (`budgets/`), soft taints
//! on unneeded nodes; and the deletions in progress, one step per loop, with the ToBeDeleted taints an
//! earlier run left. With `--consolidation replace`, consolidation plans over the same world and its
//! replacements end in the same deletions (`consolidation/`). Each step returns its part of the report; what
//! the decision reads and hands back is in `decision.rs`, how a removal is described in `plan/describe.rs`.

use crate::autoscaler::capacity;
use crate::autoscaler::disruption::Reason;
use crate::autoscaler::group::{GroupFacts, Totals};
use crate::autoscaler::leaving::LeavingAction;
use crate::autoscaler::planning::planning;
use crate::autoscaler::scaledown::act::actuation::{Actuator, Cause};
use crate::autoscaler::scaledown::act::rotation::AfterDeletion;
use crate::autoscaler::scaledown::budgets::groups::DisruptionBudgets;
use crate::autoscaler::scaledown::budgets::parallelism;
use crate::autoscaler::scaledown::consolidation::consolidator::{Consolidator, Leftover};
use crate::autoscaler::scaledown::consolidation::replacement::Replacements;
use crate::autoscaler::scaledown::context::Context;
use crate::autoscaler::scaledown::decision::{
    Decision, DeletionToStart, Scene, record_disruptions,
};
use crate::autoscaler::scaledown::disruption::stage::{
    CannotGrow, DisruptionStage, GroupRoom, Sight,
};
use crate::autoscaler::scaledown::plan::describe::describe;
use crate::autoscaler::scaledown::plan::planner::{self, Held, ScaleDownPlan, Unremovable};
use crate::autoscaler::scaledown::plan::removal::{GroupInfo, Input};
use crate::autoscaler::scaledown::plan::simulation::RemovalSimulation;
use crate::autoscaler::scaledown::plan::unneeded::UnneededTimers;
use crate::autoscaler::scaledown::view_check::ViewCheck;
use crate::autoscaler::scaleup::orchestrator as scaleup;
use crate::autoscaler::schedules::{GroupNodes, OverMax};
use crate::autoscaler::status::KeptNode;
use crate::model::Node;
use crate::simulator::PoolUse;
use crate::simulator::{Place, Topology};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

/// Each node over its group's scheduled max (by index), and what becomes of it: the `Scheduled` method's.
fn over_scheduled_max(
    scene: &Scene<'_>,
    groups: &[GroupInfo],
    excluded: &HashSet<String>,
) -> Vec<Option<OverMax>> {
    let staying: Vec<i64> = (groups.iter())
        .map(|g| i64::from(g.target) - g.deleting as i64)
        .collect();
    scene.schedules.over_max(&GroupNodes {
        nodes: &scene.view.nodes,
        node_group: scene.node_group,
        on_node: scene.on_node,
        pods: scene.pods,
        excluded,
        staying: &staying,
    })
}

/// What one loop's admission reads: the loop's context, its scene, and the groups as scale-down sees them.
struct Round<'r, 'a> {
    cx: &'r Context<'a>,
    scene: &'r Scene<'a>,
    groups: &'r [GroupInfo],
}

/// The scale-down state kept between loops.
#[derive(Default)]
pub struct ScaleDownPolicy {
    pub(super) actuator: Actuator,
    pub(super) unneeded: UnneededTimers,
    /// The last successful scale-up, for `--scale-down-delay-after-add`.
    pub(super) last_scale_up: Option<SystemTime>,
    pub(super) last_delete: Option<SystemTime>,
    pub(super) last_failure: Option<SystemTime>,
    /// Our ToBeDeleted taints left by an earlier run are removed in the first loop that acts.
    pub(super) stale_taints_checked: bool,
    pub(super) view: ViewCheck,
    /// Why this loop's view is not trusted, if it is not: set by [`ScaleDownPolicy::check_view`].
    pub(super) doubt: Option<String>,
    /// Consolidation's replacements in progress and per-node timers.
    pub(super) consolidator: Consolidator,
    /// Nodes deleted this loop, by group: the target sizes read before they went are one too high each.
    pub(super) deleted: HashMap<String, i32>,
}

impl ScaleDownPolicy {
    /// Checks this loop's view before anything acts on it, from how many of its pods are on nodes
    /// (DaemonSet pods aside). A view that lost most of its pods holds the deletions in progress (a drain
    /// would find its node empty) and scale-down's decision.
    pub fn check_view(&mut self, on_nodes: usize, facts: &[GroupFacts], now: SystemTime) {
        let settle = facts.iter().map(|f| f.options.unneeded).max();
        self.doubt = (self.view).doubt(on_nodes, settle.unwrap_or_default(), now);
    }

    /// Where scale-up records its last success, for `--scale-down-delay-after-add`.
    pub fn last_scale_up(&mut self) -> &mut Option<SystemTime> {
        &mut self.last_scale_up
    }

    /// Consolidation's replacements in progress, for the loop to watch for their new nodes.
    pub fn replacements(&mut self) -> &mut Replacements {
        &mut self.consolidator.replacements
    }

    /// Unneeded timers start again: the loop saw an unhealthy cluster.
    pub fn forget_unneeded(&mut self) {
        self.unneeded.clear();
    }

    /// Whether this node is being deleted by us.
    pub fn deleting(&self, node: &str) -> bool {
        self.actuator.contains(node)
    }

    /// Whether this node is on its way out by our hand: being deleted, or the old node of a replacement.
    pub fn replacing(&self, node: &str) -> bool {
        self.deleting(node) || (self.consolidator.replacements.old_nodes()).any(|n| n == node)
    }

    /// Scale-down's decision: plan the unneeded nodes over the world scale-up left (pods it found room for on
    /// existing nodes stay counted there), run their timers, and admit the deletions the cooldowns and budgets
    /// allow; consolidation plans over what is left. Nothing is carried out here:
    /// [`ScaleDownPolicy::carry_out`] does that.
    pub fn decide(
        &mut self,
        cx: &Context<'_>,
        scene: &Scene<'_>,
        topology: &mut Topology,
        places: &mut Vec<Place>,
    ) -> Decision {
        let groups = self.groups(scene.facts);
        let acts = cx.actor.is_some();
        if let Some(why) = self.doubt.clone() {
            let untrusted = self.untrusted(scene, &groups, why);
            return Decision { acts, ..untrusted };
        }
        let sd = &cx.scale_down;
        let previously = self.unneeded.nodes();
        // The old nodes of replacements in progress are on their way out: scale-down neither removes them
        // nor moves pods onto them; nor the expired and drifted nodes, which expiry decides below.
        let mut excluded = scene.deleting.clone();
        let replacements = &self.consolidator.replacements;
        excluded.extend(replacements.old_nodes().map(str::to_string));
        let mut budgets = self.budgets(cx, scene, &groups);
        let images: Vec<Option<&str>> = scene.facts.iter().map(GroupFacts::image).collect();
        let scheduled = over_scheduled_max(scene, &groups, &excluded);
        let sight = sight(scene, &groups, &images, &scheduled);
        let disrupted = sight.candidates(&budgets, &excluded);
        let uncordon = sight.drift_gone(&budgets, &excluded);
        excluded.extend((disrupted.iter()).map(|c| scene.view.nodes[c.node].name.clone()));
        let existing = scene.view.nodes.len();
        let (device_use, reserved) = node_facts(cx, scene, &places[..existing]);
        let input = Input {
            reserved: &reserved,
            ..input(cx, scene, &groups, &excluded, &previously, &device_use)
        };
        let started = Instant::now();
        let ready = (self.consolidator).check_ready(
            scene.view,
            &input,
            &sd.rules,
            topology,
            &mut places[..existing],
        );
        let plan = planning(|| planner::plan(&input, &sd.rules, topology, &mut places[..existing]));
        let planning_ms = started.elapsed().as_secs_f64() * 1000.0;
        let waits = acts.then(|| self.waits(cx, scene)).flatten();
        let started = Instant::now();
        let (consolidate, not_consolidated) = if cx.consolidation.replaces() {
            let (view, now) = (scene.view, scene.now);
            (self.consolidator.replacements).track(view, scene.on_node, scene.pods, now);
            let leftover = Leftover {
                facts: scene.facts,
                fleet: &scene.fleet,
                actuator: &self.actuator,
                topology,
                places,
            };
            let waits = waits.as_deref();
            planning(|| (self.consolidator).plan(cx, &input, leftover, &plan, waits))
        } else {
            (Vec::new(), Vec::new())
        };
        // Expiry and drift over the world scale-down and consolidation left: they take their budgets first.
        let mut totals = Totals::of(places, &cx.quotas);
        let mut surged = vec![0; groups.len()];
        let ids = groups.iter().map(|g| g.id.as_str());
        let room = GroupRoom {
            lose: &mut plan.room_to_lose(&groups),
            rotating: &mut self.actuator.rotations.in_progress_per(ids),
            grow: &mut |g| {
                can_grow(cx, scene, g, surged[g], &mut totals)?;
                surged[g] += 1;
                Ok(())
            },
        };
        let expired = if disrupted.is_empty() {
            Vec::new()
        } else {
            let order = (0..places.len()).collect();
            DisruptionStage {
                sim: RemovalSimulation::new(&input, &sd.rules, topology, places, order),
                budgets: &mut budgets,
                room,
                sight: &sight,
            }
            .decide(disrupted)
        };
        let mut decision = Decision {
            kept: self.kept(scene, &groups, &plan, &excluded),
            unneeded: Some(plan.removable.iter().map(|r| r.node).collect()),
            acts,
            planning_ms,
            consolidation_ms: started.elapsed().as_secs_f64() * 1000.0,
            consolidate,
            not_consolidated,
            ready,
            uncordon,
            ..Decision::default()
        };
        record_disruptions(scene, &groups, expired, &mut decision);
        let round = Round {
            cx,
            scene,
            groups: &groups,
        };
        self.admit(&round, &plan, waits, &mut budgets, &mut decision);
        consolidation_budgets(scene, &mut budgets, &mut decision);
        decision.budgets = budgets.statuses();
        decision
    }

    /// Each group's disruption budgets this loop, over its nodes already on their way out (being deleted,
    /// the old nodes of replacements) or NotReady.
    fn budgets<'c>(
        &self,
        cx: &Context<'c>,
        scene: &Scene<'_>,
        groups: &[GroupInfo],
    ) -> DisruptionBudgets<'c> {
        let Some(config) = cx.disruption else {
            return DisruptionBudgets::none(groups.len());
        };
        let leaving: HashSet<&str> = self.consolidator.replacements.old_nodes().collect();
        // A leaving node ekscale has yet to replace is not being disrupted: it takes from its budget once
        // the stage decides it.
        let waiting: HashSet<&str> = (scene.leaving.each())
            .filter(|(_, action)| *action == LeavingAction::Wait)
            .map(|(l, _)| scene.view.nodes[l.node].name.as_str())
            .collect();
        let disrupting = |n: &Node| {
            !n.ready
                || scene.deleting.contains(&n.name) && !waiting.contains(n.name.as_str())
                || self.actuator.contains(&n.name)
                || leaving.contains(n.name.as_str())
        };
        let nodes = &scene.view.nodes;
        let now = scene.now;
        let mut budgets = DisruptionBudgets::new(
            Some(config),
            groups,
            nodes,
            scene.node_group,
            disrupting,
            now,
        );
        for (g, group) in groups.iter().enumerate() {
            budgets.also_disrupting(g, self.actuator.rotations.disrupting(&group.id));
        }
        budgets
    }

    /// Each group as scale-down sees it: its target less the nodes deleted this loop, and its nodes on their
    /// way out (deletions in progress, old nodes of replacements: the group must not shrink under them).
    fn groups(&self, facts: &[GroupFacts]) -> Vec<GroupInfo> {
        let replacements = &self.consolidator.replacements;
        (facts.iter())
            .map(|f| GroupInfo {
                id: f.group.id.clone(),
                min_size: f.group.min_size,
                target: f.target - self.deleted.get(&f.group.id).copied().unwrap_or(0),
                options: f.options,
                updating: f.updating(),
                deleting: (self.actuator.in_flight())
                    .filter(|d| d.group == f.group.id)
                    .count()
                    + replacements.leaving(&f.group.id),
            })
            .collect()
    }

    /// Nothing is decided on a view that lost its pods: no deletion, no soft taint moves, the timers stay as
    /// they were.
    fn untrusted(&self, scene: &Scene<'_>, groups: &[GroupInfo], why: String) -> Decision {
        let kept = (scene.view.nodes.iter().zip(scene.node_group))
            .filter(|(n, _)| !self.actuator.contains(&n.name))
            .map(|(n, g)| KeptNode {
                node: n.name.clone(),
                node_group: g.map(|g| groups[g].id.clone()),
                reason: Unremovable::UntrustedClusterView.to_string(),
                detail: why.clone(),
            })
            .collect();
        Decision {
            kept,
            ..Decision::default()
        }
    }

    /// The nodes the planner keeps, with why; our own deletions are reported in `deletions` instead.
    /// Nodes left out of the plan on purpose (replacements' old nodes, expired and drifted nodes) are said
    /// elsewhere; the deletions in progress too.
    fn kept(
        &self,
        scene: &Scene<'_>,
        groups: &[GroupInfo],
        plan: &ScaleDownPlan,
        excluded: &HashSet<String>,
    ) -> Vec<KeptNode> {
        let nodes = &scene.view.nodes;
        let said = |n: usize| {
            let name = &nodes[n].name;
            self.actuator.contains(name)
                || (excluded.contains(name) && !scene.deleting.contains(name))
        };
        (plan.kept.iter())
            .filter(|k| !said(k.node))
            .map(|k| KeptNode {
                node: nodes[k.node].name.clone(),
                node_group: k.group.map(|g| groups[g].id.clone()),
                reason: k.reason.to_string(),
                detail: k.detail.clone(),
            })
            .collect()
    }

    /// The removable nodes through their timers, the cooldowns and the budgets, into the decision: deletions
    /// to start, and the nodes held back with why. Planned only (no cluster to act on), every node whose
    /// timer has run out is reported and no budget applies.
    fn admit(
        &mut self,
        round: &Round<'_, '_>,
        plan: &ScaleDownPlan,
        waits: Option<String>,
        disruption: &mut DisruptionBudgets<'_>,
        decision: &mut Decision,
    ) {
        let Round { cx, scene, groups } = *round;
        let sd = &cx.scale_down;
        let nodes = &scene.view.nodes;
        let timed = (self.unneeded).run(&plan.removable, nodes, groups, sd.timers(), scene.now);
        let mut held = timed.waiting;
        let mut ready = timed.ready;
        // Empty nodes first, then those whose drain no PDB slows.
        ready.sort_by_key(|r| (!r.empty, r.risky));
        if decision.acts {
            if let Some(why) = waits {
                held.extend(ready.drain(..).map(|r| Held {
                    removable: r,
                    reason: Unremovable::ScaleDownInCooldown,
                    detail: why.clone(),
                }));
            }
            let admitted = parallelism::admit(ready, groups, sd, &self.actuator);
            ready = admitted.start;
            held.extend(admitted.held);
        }
        // The groups' disruption budgets hold whether or not there is a cluster to act on: they are the
        // user's, and `simulate` shows what they let go.
        let mut within = Vec::with_capacity(ready.len());
        for r in ready {
            let reason = match r.empty {
                true => Reason::Empty,
                false => Reason::Underutilized,
            };
            match disruption.take(r.group, reason) {
                Ok(()) => within.push(r),
                Err(why) => held.push(Held {
                    removable: r,
                    reason: Unremovable::DisruptionBudget,
                    detail: why.to_string(),
                }),
            }
        }
        ready = within;
        let kept = held.into_iter().map(|h| KeptNode {
            node: nodes[h.removable.node].name.clone(),
            node_group: Some(groups[h.removable.group].id.clone()),
            reason: h.reason.to_string(),
            detail: h.detail,
        });
        decision.kept.extend(kept);
        // After expiry's removals, which were decided first.
        let admitted = (ready.into_iter())
            .map(|r| DeletionToStart {
                node: r.node,
                kind: r.kind(),
                cause: Cause::ScaleDown,
                then: AfterDeletion::Nothing,
                report: describe(scene.view, scene.pods, groups, r),
            })
            .collect::<Vec<_>>();
        decision.delete.extend(admitted);
    }

    /// Why deletions wait this loop, if they do: scale-up waiting for new pods, or a cooldown.
    fn waits(&self, cx: &Context<'_>, scene: &Scene<'_>) -> Option<String> {
        (scene.paused.clone()).or_else(|| self.cooldown(cx, scene.now))
    }

    /// Why deletions wait this loop, if they do: a scale-up, deletion or failure too recent.
    fn cooldown(&self, cx: &Context<'_>, now: SystemTime) -> Option<String> {
        let sd = &cx.scale_down;
        let recent = |at: Option<SystemTime>, delay: Duration| {
            at.is_some_and(|t| now.duration_since(t).unwrap_or_default() < delay)
        };
        let text = |what: &str, flag: &str, delay: Duration| {
            format!(
                "{what} less than {} ago ({flag})",
                humantime::format_duration(delay)
            )
        };
        if recent(self.last_scale_up, sd.delay_after_add) {
            return Some(text(
                "a scale-up",
                "--scale-down-delay-after-add",
                sd.delay_after_add,
            ));
        }
        if recent(self.last_delete, sd.delay_after_delete) {
            return Some(text(
                "a deletion",
                "--scale-down-delay-after-delete",
                sd.delay_after_delete,
            ));
        }
        if recent(self.last_failure, sd.delay_after_failure) {
            return Some(text(
                "a failed scale-down",
                "--scale-down-delay-after-failure",
                sd.delay_after_failure,
            ));
        }
        None
    }
}

/// What the disruption methods look at over the scene's nodes.
fn sight<'s>(
    scene: &'s Scene<'_>,
    groups: &'s [GroupInfo],
    images: &'s [Option<&'s str>],
    scheduled: &'s [Option<OverMax>],
) -> Sight<'s> {
    Sight {
        nodes: &scene.view.nodes,
        node_group: scene.node_group,
        groups,
        images,
        now: scene.now,
        leaving: scene.leaving,
        scheduled,
    }
}

/// What the removal simulation reads of each existing node beyond the scene: its devices' use (DRA), and the
/// nodes on reserved capacity, with why (no low-utilization candidates).
fn node_facts(
    cx: &Context<'_>,
    scene: &Scene<'_>,
    existing: &[Place],
) -> (Vec<Option<PoolUse>>, HashMap<String, String>) {
    let device_use = (existing.iter())
        .map(|p| p.devices.as_ref().and_then(|d| d.utilization()))
        .collect();
    let at = (&scene.view.nodes[..], scene.node_group);
    let reserved = capacity::reserved_nodes(scene.facts, at, cx.disruption, scene.now);
    (device_use, reserved)
}

/// Whether group `g` may grow by one more node now, for a replacement (`surged` asked already this loop):
/// not held back (backoff, failed instances), under its max size after this loop's scale-ups, and within the
/// cluster's limits (the new node runs beside the old one until that one is gone), which it then takes from
/// `totals`.
fn can_grow(
    cx: &Context<'_>,
    scene: &Scene<'_>,
    g: usize,
    surged: u64,
    totals: &mut Totals,
) -> Result<(), CannotGrow> {
    let group = &scene.fleet.groups[g];
    // At its max size the group is skipped by scale-up: that is a limit, told below, not a hold. So is a full
    // Capacity Block: a node of it terminated gives its instance back to the block.
    if let Some(why) =
        (group.skip.as_ref()).filter(|w| **w != scaleup::Limited::GroupMax.to_string())
    {
        return Err(match group.full {
            true => CannotGrow::Limit(why.clone()),
            false => CannotGrow::HeldBack(why.clone()),
        });
    }
    let template = group.template.as_ref().ok_or(CannotGrow::NoTemplate)?;
    let grown = scene.fleet.grown.get(&group.id).copied().unwrap_or(0) + surged;
    let (room, limit) = scaleup::node_limit(group, grown, template, cx.limits, totals);
    match limit {
        // This loop's scale-ups used the per-loop cap: the next loop has room, no node need go first.
        scaleup::Limited::PerScaleUp if room == 0 => {
            return Err(CannotGrow::HeldBack(limit.to_string()));
        }
        _ if room == 0 => return Err(CannotGrow::Limit(limit.to_string())),
        _ => {}
    }
    totals.add(g, &template.node);
    Ok(())
}

/// Consolidation's replacements take their old nodes from the groups' `Underutilized` budgets, after expiry,
/// drift and scale-down took theirs; a replacement a budget holds is not made, and says why.
fn consolidation_budgets(
    scene: &Scene<'_>,
    budgets: &mut DisruptionBudgets<'_>,
    decision: &mut Decision,
) {
    if !budgets.any() || decision.consolidate.is_empty() {
        return;
    }
    let index: HashMap<&str, usize> = (scene.view.nodes.iter().enumerate())
        .map(|(n, node)| (node.name.as_str(), n))
        .collect();
    let group_of = |name: &str| scene.node_group[*index.get(name)?];
    let mut kept = Vec::new();
    decision.consolidate.retain(|c| {
        let mut held = None;
        for node in &c.nodes {
            let Some(g) = group_of(node) else { continue };
            if let Err(why) = budgets.check(g, Reason::Underutilized) {
                held = Some((node.clone(), g, why.to_string()));
                break;
            }
        }
        if let Some((node, g, why)) = held {
            kept.push(KeptNode {
                node,
                node_group: Some(scene.facts[g].group.id.clone()),
                reason: Unremovable::DisruptionBudget.to_string(),
                detail: why,
            });
            return false;
        }
        for node in &c.nodes {
            if let Some(g) = group_of(node) {
                let _ = budgets.take(g, Reason::Underutilized);
            }
        }
        true
    });
    decision.not_consolidated.extend(kept);
}

/// Scale-down's planner input over this loop's scene.
fn input<'a>(
    cx: &Context<'_>,
    scene: &Scene<'a>,
    groups: &'a [GroupInfo],
    excluded: &'a HashSet<String>,
    previously: &'a HashSet<String>,
    device_use: &'a [Option<PoolUse>],
) -> Input<'a> {
    Input {
        nodes: &scene.view.nodes,
        pods: scene.pods,
        pdbs: &scene.view.pdbs,
        node_group: scene.node_group,
        groups,
        on_node: scene.on_node,
        device_use,
        deleting: excluded,
        previously_unneeded: previously,
        projection: scene.projection,
        min_cores: cx.limits.min_cores,
        min_memory_gib: cx.limits.min_memory_gib,
        max_node_startup_time: cx.max_node_startup_time,
        unready_enabled: cx.scale_down.unready_enabled,
        now: scene.now,
        ..Input::new(
            &scene.view.nodes,
            scene.pods,
            scene.node_group,
            groups,
            scene.on_node,
            scene.now,
        )
    }
}
