//! The disruption stage (`--disruption-config`): the nodes each [`Method`] disrupts now (drift, expiration)
//! are replaced gracefully within their group's budget for the reason. When its pods fit on the other nodes a
//! node is drained and removed; when they do not, a new node of its group is asked for first, and it drains
//! once that node is Ready. When its group cannot grow for that new node (its max size, a CapacityQuota,
//! the cluster's limits: no room to surge), it is terminated first (Karpenter's terminate-first,
//! kubernetes-sigs/karpenter #2905): drained and removed within the same budgets, its group's replacement
//! asked once it is gone (the actuator remembers it). A hold that terminating does not cure (a backoff, no
//! template) keeps it waiting. Drifted nodes go first, then the oldest.
//!
//! Nothing of a group being updated goes: EKS replaces its nodes itself, and drift is only told once the
//! update is over (the nodes it left on the old image are then drifted).

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::leaving::{LeavingAction, LeavingEffects};
use crate::autoscaler::scaledown::budgets::groups::DisruptionBudgets;
use crate::autoscaler::scaledown::disruption::drift::Drift;
use crate::autoscaler::scaledown::disruption::expiration::Expiration;
use crate::autoscaler::scaledown::disruption::method::{
    DisruptionCandidate, GroupSight, Method, Order,
};
use crate::autoscaler::scaledown::disruption::rebalance::Rebalance;
use crate::autoscaler::scaledown::disruption::scheduled::Scheduled;
use crate::autoscaler::scaledown::disruption::unhealthy::Unhealthy;
use crate::autoscaler::scaledown::plan::drainability::{self, Blocking, Verdict};
use crate::autoscaler::scaledown::plan::planner::Unremovable;
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::autoscaler::scaledown::plan::simulation::RemovalSimulation;
use crate::autoscaler::schedules::OverMax;
use crate::model::{CORDONED_FOR_DRIFT, Node};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The methods, in the order they are asked: a node is a candidate of the first that disrupts it, and the
/// candidates of an earlier method go first.
const METHODS: [&dyn Method; 5] = [&Scheduled, &Unhealthy, &Rebalance, &Drift, &Expiration];

/// The reasons whose methods look at leaving nodes; the others never disrupt one.
fn for_leaving(reason: Reason) -> bool {
    matches!(reason, Reason::Unhealthy | Reason::Rebalance)
}

/// What happens to a disrupted node this loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisruptionAction {
    /// Its pods fit on the other nodes: it is drained and removed now, for this reason (in words).
    Remove(String),
    /// A new node of its group is asked for first; it drains once that node is Ready.
    Replace,
    /// Its group cannot grow for a replacement (a limit, in words): it is drained and removed first, and
    /// its group's replacement is asked once it is gone (Karpenter's terminate-first, EKS's update
    /// strategy `MINIMAL`).
    TerminateFirst(String),
    /// It stays this loop: what holds it, in words.
    Wait(DisruptionHold, String),
}

/// What holds a disrupted node this loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisruptionHold {
    /// Its group's budget for the reason is in use (an Event `DisruptionBlocked` says so).
    Budget,
    /// Its group is UPDATING.
    Updating,
    /// The node is annotated not to be disrupted.
    Annotation,
    /// A pod that must not be evicted, with no grace period to force the drain.
    Pod,
    /// Its pods fit nowhere else, and its group cannot grow for a replacement.
    NoRoom,
}

/// Whether a node is cordoned ahead of its turn while it waits so: a drifted node waiting for its budget or
/// for room is about to go, and no evicted pod should land there; one held for good (an annotation, a pod
/// nothing forces out, its group updating) would stay cordoned indefinitely, so it is not.
pub(in crate::autoscaler::scaledown) fn cordoned_while(hold: DisruptionHold) -> bool {
    matches!(hold, DisruptionHold::Budget | DisruptionHold::NoRoom)
}

impl DisruptionHold {
    /// The reason the report's `unremovable` gives a node held so.
    pub fn unremovable(self) -> Unremovable {
        match self {
            DisruptionHold::Budget => Unremovable::DisruptionBudget,
            DisruptionHold::Updating => Unremovable::NodeGroupUpdating,
            DisruptionHold::Annotation => Unremovable::ScaleDownDisabledAnnotation,
            DisruptionHold::Pod => Unremovable::BlockedByPod,
            DisruptionHold::NoRoom => Unremovable::NoPlaceToMovePods,
        }
    }
}

/// A disrupted node, what happens to it, and (for a removal) the grace period of its drain.
#[derive(Clone, Debug)]
pub struct DisruptionDecision {
    pub candidate: DisruptionCandidate,
    pub action: DisruptionAction,
    pub grace: Option<Duration>,
}

/// Why a group cannot grow by one more node for a replacement.
#[derive(Debug, thiserror::Error)]
pub enum CannotGrow {
    /// Held back (backoff, failed instances), with why.
    #[error("{0}")]
    HeldBack(String),
    #[error("it has no template")]
    NoTemplate,
    /// Its max size, a CapacityQuota or the cluster's limits, in words: terminating a node first cures it.
    #[error("{0}")]
    Limit(String),
}

/// A drain a pod would hold for good: nothing forces it.
#[derive(Debug, thiserror::Error)]
#[error("{pod}, and its group has no terminationGracePeriod to force the drain")]
struct UnforcedDrain {
    /// The pod that holds it, and why.
    pod: String,
}

/// The groups' room this loop: how many nodes each may lose (over its min size, after the deletions in
/// progress and this loop's other removals), and whether it may grow by one more node for a replacement
/// (each replacement asked takes its node from the group's and the cluster's limits).
pub struct GroupRoom<'r> {
    pub lose: &'r mut [i64],
    /// Each group's nodes being terminated first (draining, or gone with their replacement not Ready).
    pub rotating: &'r mut [usize],
    pub grow: &'r mut dyn FnMut(usize) -> Result<(), CannotGrow>,
}

/// What the methods look at over the loop's nodes: each node's group, the groups, and the image each
/// group's new nodes get (when the provider says it).
pub struct Sight<'s> {
    pub nodes: &'s [Arc<Node>],
    pub node_group: &'s [Option<usize>],
    pub groups: &'s [GroupInfo],
    pub images: &'s [Option<&'s str>],
    pub now: SystemTime,
    /// The leaving nodes: those ekscale replaces itself (action `wait`) are the rebalance and repair
    /// methods' to look at; the others are on their way out.
    pub leaving: &'s LeavingEffects,
    /// Each node over its group's scheduled max, and what becomes of it (by node index).
    pub scheduled: &'s [Option<OverMax>],
}

impl Sight<'_> {
    /// What a method sees of group `g`, which has a policy, and of node `n` in it.
    fn group<'s>(
        &'s self,
        (g, n): (usize, usize),
        budgets: &DisruptionBudgets<'s>,
    ) -> Option<GroupSight<'s>> {
        Some(GroupSight {
            id: &self.groups[g].id,
            policy: budgets.policy(g)?,
            image: self.images[g],
            updating: self.groups[g].updating,
            now: self.now,
            leaving: self.leaving.of(n),
            scheduled: self.scheduled.get(n).and_then(Option::as_ref),
        })
    }

    /// The nodes of groups that have a policy that a method disrupts now, those of earlier methods first
    /// (drifted before expired), then the oldest first. Nodes in `excluded` (on their way out already) are
    /// left out.
    pub fn candidates(
        &self,
        budgets: &DisruptionBudgets<'_>,
        excluded: &HashSet<String>,
    ) -> Vec<DisruptionCandidate> {
        let mut found: Vec<(usize, usize, DisruptionCandidate, Option<SystemTime>)> = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            let Some(g) = self.node_group[n] else {
                continue;
            };
            let Some(group) = self.group((g, n), budgets) else {
                continue;
            };
            // A leaving node ekscale replaces itself is the rebalance and repair methods' own.
            let waits = group.leaving.is_some_and(|(_, a)| a == LeavingAction::Wait);
            if excluded.contains(&node.name) && !waits {
                continue;
            }
            let Some(m) = (METHODS.iter())
                .position(|m| (!waits || for_leaving(m.reason())) && m.disrupts(node, &group))
            else {
                continue;
            };
            let reason = METHODS[m].reason();
            let candidate = DisruptionCandidate {
                node: n,
                group: g,
                reason,
            };
            let rank = METHODS[m].rank(node, &group);
            found.push((m, rank, candidate, node.created));
        }
        // An earlier method's first, then by the method's rank, then the oldest; a node whose creation is
        // unknown last.
        found.sort_by_key(|(m, rank, _, created)| (*m, *rank, created.is_none(), *created));
        found.into_iter().map(|(_, _, c, _)| c).collect()
    }
}

impl Sight<'_> {
    /// The nodes ekscale cordoned for a drift that is no more (their group's image back to theirs, or no
    /// policy for their group any more), to uncordon; never one of a group being updated (its drift is told
    /// once the update is over), nor one in `excluded` (on its way out).
    pub fn drift_gone(
        &self,
        budgets: &DisruptionBudgets<'_>,
        excluded: &HashSet<String>,
    ) -> Vec<usize> {
        let mut gone = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            let ours = node.cordoned_by_ekscale.as_deref() == Some(CORDONED_FOR_DRIFT);
            if !(ours && node.unschedulable) || excluded.contains(&node.name) {
                continue;
            }
            let Some(g) = self.node_group[n].filter(|&g| !self.groups[g].updating) else {
                continue;
            };
            let sight = self.group((g, n), budgets);
            if !sight.is_some_and(|sight| Drift.disrupts(node, &sight)) {
                gone.push(n);
            }
        }
        gone
    }
}

/// The method of `reason`.
fn method(reason: Reason) -> &'static dyn Method {
    let found = METHODS.iter().find(|m| m.reason() == reason);
    *found.expect("every candidate's reason is a method's")
}

/// The stage over one loop: the removal simulation its removals are committed in (as scale-down commits its
/// own), the budgets each removal or replacement takes one from, and the groups' room.
pub struct DisruptionStage<'s, 'a, 'c> {
    pub(in crate::autoscaler::scaledown) sim: RemovalSimulation<'s, 'a>,
    pub(in crate::autoscaler::scaledown) budgets: &'s mut DisruptionBudgets<'c>,
    pub(in crate::autoscaler::scaledown) room: GroupRoom<'s>,
    pub(in crate::autoscaler::scaledown) sight: &'s Sight<'s>,
}

impl DisruptionStage<'_, '_, '_> {
    /// Decides each candidate in order, within the budgets.
    pub fn decide(mut self, candidates: Vec<DisruptionCandidate>) -> Vec<DisruptionDecision> {
        let mut decided = Vec::with_capacity(candidates.len());
        for c in candidates {
            let grace = (self.budgets.policy(c.group)).and_then(|p| p.termination_grace_period());
            let action = self.decide_one(c, grace);
            if matches!(action, DisruptionAction::Wait(..)) {
                decided.push(DisruptionDecision {
                    candidate: c,
                    action,
                    grace,
                });
                continue;
            }
            (self.budgets)
                .take(c.group, c.reason)
                .expect("checked before the decision");
            if let DisruptionAction::Remove(_) | DisruptionAction::TerminateFirst(_) = action {
                self.room.lose[c.group] -= 1;
            }
            if let DisruptionAction::TerminateFirst(_) = action {
                self.room.rotating[c.group] += 1;
            }
            decided.push(DisruptionDecision {
                candidate: c,
                action,
                grace,
            });
        }
        decided
    }

    /// One node's decision; a removal's move is committed in the simulation.
    fn decide_one(&mut self, c: DisruptionCandidate, grace: Option<Duration>) -> DisruptionAction {
        let input = self.sim.input;
        let node = &input.nodes[c.node];
        let group = &input.groups[c.group];
        if group.updating {
            let why = format!(
                "{} is UPDATING: its nodes stay until the update ends",
                group.id
            );
            return DisruptionAction::Wait(DisruptionHold::Updating, why);
        }
        if node.do_not_disrupt {
            let why = "annotated karpenter.sh/do-not-disrupt: \"true\"";
            return DisruptionAction::Wait(DisruptionHold::Annotation, why.into());
        }
        if node.scale_down_disabled {
            let why = "annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"";
            return DisruptionAction::Wait(DisruptionHold::Annotation, why.into());
        }
        let sight = self.sight.group((c.group, c.node), self.budgets);
        if let Some(why) = sight.as_ref().and_then(|s| method(c.reason).holds(node, s)) {
            return DisruptionAction::Wait(DisruptionHold::Pod, why);
        }
        let moving = match self.movable(c.node, grace) {
            Ok(moving) => moving,
            Err(why) => return DisruptionAction::Wait(DisruptionHold::Pod, why.to_string()),
        };
        if let Err(why) = self.budgets.check(c.group, c.reason) {
            return DisruptionAction::Wait(DisruptionHold::Budget, why.to_string());
        }
        if method(c.reason).order() == Order::RemoveWhatFits {
            if self.room.lose[c.group] <= 0 {
                let why = format!("{} is at its min size: none of its nodes may go", group.id);
                return DisruptionAction::Wait(DisruptionHold::NoRoom, why);
            }
            self.sim.remove_what_fits(c.node, &moving);
            let why = sight.map(|s| method(c.reason).describe(node, &s));
            return DisruptionAction::Remove(why.unwrap_or_default());
        }
        let removable = method(c.reason).order() == Order::RemoveWhenPodsFit;
        if removable && self.room.lose[c.group] > 0 && self.sim.remove(c.node, &moving).is_ok() {
            let sight = (self.sight.group((c.group, c.node), self.budgets))
                .expect("a candidate's group has a policy");
            return DisruptionAction::Remove(method(c.reason).describe(node, &sight));
        }
        let no_room = |why: String| {
            let why = format!(
                "its pods fit on no other node and {} cannot grow for a replacement: {why}",
                group.id
            );
            DisruptionAction::Wait(DisruptionHold::NoRoom, why)
        };
        // One node terminated first at a time, unless a budget for the reason allows more.
        let one_at_a_time =
            !self.budgets.limits(c.group, c.reason) && self.room.rotating[c.group] > 0;
        match (self.room.grow)(c.group) {
            Ok(()) => DisruptionAction::Replace,
            Err(CannotGrow::Limit(limit)) if one_at_a_time => DisruptionAction::Wait(
                DisruptionHold::Budget,
                format!(
                    "no room to surge ({limit}) and another {} node is being terminated first: one at a \
                     time, as no budget for {} allows more",
                    group.id, c.reason
                ),
            ),
            // Only a limit is cured by a node less; a group it would take under its min size waits.
            Err(CannotGrow::Limit(limit)) if self.room.lose[c.group] > 0 => {
                DisruptionAction::TerminateFirst(format!(
                    "no room to surge ({limit}): it drains first, then {} gets its replacement",
                    group.id
                ))
            }
            Err(CannotGrow::Limit(limit)) => no_room(format!(
                "{limit}, and it is at its min size {}: terminating first would take it under",
                group.min_size
            )),
            Err(why) => no_room(why.to_string()),
        }
    }

    /// The pods of node `n` that need a place elsewhere. A pod no eviction may move (do-not-disrupt,
    /// safe-to-evict "false", a budget with no room) holds the drain until the grace period forces it, and a
    /// controller makes it again elsewhere then: it needs a place too. Without a grace period such a pod would
    /// hold the drain for good, so the node waits (as Karpenter does not start a drift it cannot finish).
    fn movable(&self, n: usize, grace: Option<Duration>) -> Result<Vec<usize>, UnforcedDrain> {
        let (input, rules, pdbs) = (self.sim.input, self.sim.rules, &self.sim.pdbs);
        let mut moving = Vec::new();
        for &p in &input.on_node[n] {
            let pod = input.pods.get(p);
            let blocks = if pod.disruption.do_not_disrupt {
                format!("{}: annotated karpenter.sh/do-not-disrupt", pod.key())
            } else {
                match drainability::classify(pod, rules, pdbs, input.now) {
                    Verdict::Stays => continue,
                    Verdict::Evicted { needs_place } => {
                        if needs_place {
                            moving.push(p);
                        }
                        continue;
                    }
                    // The API server enforces budgets: the drain waits for room, then the pod moves.
                    Verdict::Blocks(Blocking::NotEnoughPdb, _) => {
                        moving.push(p);
                        continue;
                    }
                    Verdict::Blocks(reason, why) => format!("{reason}: {why}"),
                }
            };
            if grace.is_none() {
                return Err(UnforcedDrain { pod: blocks });
            }
            if pod.controller.is_some() {
                moving.push(p);
            }
        }
        Ok(moving)
    }
}
