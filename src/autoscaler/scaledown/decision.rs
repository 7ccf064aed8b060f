//! What scale-down's decision reads of the loop (the scene) and what it hands back for carrying out (the
//! decision: deletions to start, nodes kept, replacements asked for, consolidation's plan), with expiry's
//! decisions written into it.

use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::disruption::Reason;
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::leaving::LeavingEffects;
use crate::autoscaler::scaledown::act::actuation::Cause;
use crate::autoscaler::scaledown::act::rotation::AfterDeletion;
use crate::autoscaler::scaledown::consolidation::consolidator::{Fleet, Readiness};
use crate::autoscaler::scaledown::disruption::stage::{
    DisruptionAction, DisruptionDecision, cordoned_while,
};
use crate::autoscaler::scaledown::plan::describe::evicted_from;
use crate::autoscaler::scaledown::plan::planner::DeletionKind;
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::autoscaler::schedules::SizesInForce;
use crate::autoscaler::status::{
    Consolidation, DisruptionBudgetStatus, DisruptionStatus, KeptNode, ScaleDown, ScaleUp,
};
use crate::model::{LabelProjection, PodList, PodNames};
use std::collections::HashSet;
use std::time::SystemTime;

/// What scale-down decided this loop, for `ScaleDownPolicy::carry_out` to act on and report.
#[derive(Default)]
pub struct Decision {
    /// The deletions to start (when only planning: every node that may go).
    pub delete: Vec<DeletionToStart>,
    /// The nodes that stay, and why.
    pub kept: Vec<KeptNode>,
    /// The unneeded nodes (by node index), for the soft taints; `None` leaves them as they are.
    pub(super) unneeded: Option<HashSet<usize>>,
    /// Whether there is a cluster to act on.
    pub(super) acts: bool,
    pub(super) planning_ms: f64,
    pub(super) consolidation_ms: f64,
    /// Consolidation: replacements to launch, and the nodes not replaced with why.
    pub(super) consolidate: Vec<Consolidation>,
    pub(super) not_consolidated: Vec<KeptNode>,
    /// Replacements in progress whose old nodes drain now, and those given up.
    pub(super) ready: Readiness,
    /// Expired and drifted nodes whose replacement is asked for this loop.
    pub(super) surges: Vec<Surge>,
    /// Every expired or drifted node, and what happens to it.
    pub(super) disruptions: Vec<DisruptionStatus>,
    /// What each configured group's budgets allow this loop.
    pub(super) budgets: Vec<DisruptionBudgetStatus>,
    /// Drifted nodes (by node index) to cordon ahead of their turn, and nodes ekscale cordoned for a drift
    /// that went away, to uncordon.
    pub(super) cordon: Vec<usize>,
    pub(super) uncordon: Vec<usize>,
}

/// A replacement asked for an expired or drifted node: a new node of its group, before it drains.
pub struct Surge {
    pub node: String,
    pub group: String,
    pub cause: Cause,
}

impl Surge {
    /// The scale-up it makes, as the report lists it.
    pub fn scale_up(&self) -> ScaleUp {
        let reason = match self.cause {
            Cause::Disruption { reason, .. } | Cause::Leaving { reason, .. } => reason,
            Cause::ScaleDown => "replaced",
        };
        ScaleUp {
            node_group: self.group.clone(),
            delta: 1,
            pods: PodNames::default(),
            reason: format!("replaces {reason} node {} before it drains", self.node),
            zones: Default::default(),
            error: None,
            replaces: vec![self.node.clone()],
            provisioning_request: None,
        }
    }
}

/// A node whose deletion scale-down (or expiry) starts, with its report.
pub struct DeletionToStart {
    pub node: usize,
    pub kind: DeletionKind,
    pub cause: Cause,
    /// Whether its group's replacement is asked once it is gone (terminated first).
    pub then: AfterDeletion,
    pub report: ScaleDown,
}

/// What the decision reads of this loop: the view, the groups, the world scale-up left.
pub struct Scene<'a> {
    pub view: &'a ClusterView,
    pub pods: PodList<'a>,
    pub facts: &'a [GroupFacts],
    pub fleet: Fleet<'a>,
    /// Each node's group index.
    pub node_group: &'a [Option<usize>],
    /// Pods on each node, pending pods this loop found room for there included.
    pub on_node: &'a [Vec<usize>],
    /// Nodes on their way out: ours, and any carrying a ToBeDeleted taint.
    pub deleting: &'a HashSet<String>,
    /// The leaving nodes (all of them among `deleting`), for the rebalance and repair methods.
    pub leaving: &'a LeavingEffects,
    pub projection: &'a LabelProjection,
    /// Why scale-up waits this loop (new pods still arriving): deletions wait too.
    pub paused: Option<String>,
    /// The scheduled sizes in force: the nodes over a lowered max are the `Scheduled` method's.
    pub schedules: &'a SizesInForce,
    pub now: SystemTime,
}

/// Expiry's decisions into scale-down's: removals start as deletions (with their drain's grace period),
/// replacements are asked for, nodes terminated first start as deletions whose replacement follows, and
/// nodes held are kept with why; every one is in the disruptions list. A drifted node about to go (replaced,
/// or waiting for its budget or for room) is cordoned ahead of its turn, so that no evicted pod lands there:
/// one waiting so is listed as `cordon`.
pub(super) fn record_disruptions(
    scene: &Scene<'_>,
    groups: &[GroupInfo],
    expired: Vec<DisruptionDecision>,
    decision: &mut Decision,
) {
    let nodes = &scene.view.nodes;
    for d in expired {
        let (node, group) = (&nodes[d.candidate.node], &groups[d.candidate.group]);
        let reason = d.candidate.reason.word();
        let cause = Cause::Disruption {
            reason,
            grace: d.grace,
        };
        let drifted = d.candidate.reason == Reason::Drifted;
        let cordon = drifted
            && match &d.action {
                DisruptionAction::Replace => true,
                DisruptionAction::Wait(hold, _) => cordoned_while(*hold),
                DisruptionAction::Remove(_) | DisruptionAction::TerminateFirst(_) => false,
            };
        if cordon && !node.unschedulable {
            decision.cordon.push(d.candidate.node);
        }
        let deletion = |detail: String, then: AfterDeletion| DeletionToStart {
            node: d.candidate.node,
            kind: DeletionKind::Drain,
            cause,
            then,
            report: ScaleDown {
                node: node.name.clone(),
                node_group: group.id.clone(),
                reason: reason.into(),
                detail,
                pods: evicted_from(scene.pods, &scene.on_node[d.candidate.node]),
                risky: false,
            },
        };
        let (action, detail) = match d.action {
            DisruptionAction::Remove(detail) => {
                decision
                    .delete
                    .push(deletion(detail, AfterDeletion::Nothing));
                let why = match d.candidate.reason {
                    Reason::Scheduled => "it drains now: its pods go where they fit, the rest wait",
                    _ => "its pods fit on the other nodes: it drains now",
                };
                ("remove", why.to_string())
            }
            DisruptionAction::TerminateFirst(why) => {
                decision
                    .delete
                    .push(deletion(why.clone(), AfterDeletion::Replacement));
                ("terminateFirst", why)
            }
            DisruptionAction::Replace => {
                decision.surges.push(Surge {
                    node: node.name.clone(),
                    group: group.id.clone(),
                    cause,
                });
                let why = format!(
                    "a new {} node first; it drains once that node is Ready",
                    group.id
                );
                ("replace", why)
            }
            DisruptionAction::Wait(hold, why) => {
                decision.kept.push(KeptNode {
                    node: node.name.clone(),
                    node_group: Some(group.id.clone()),
                    reason: hold.unremovable().to_string(),
                    detail: why.clone(),
                });
                match cordon {
                    true => ("cordon", format!("cordoned ahead of its turn: {why}")),
                    false => ("wait", why),
                }
            }
        };
        decision.disruptions.push(DisruptionStatus {
            node: node.name.clone(),
            node_group: group.id.clone(),
            reason: reason.into(),
            action: action.into(),
            detail,
        });
    }
}
