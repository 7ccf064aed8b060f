//! Expiry and drift (`--disruption-config`): a node older than its group's `expireAfter`, or whose
//! `eks.amazonaws.com/nodegroup-image` is not the image its group's new nodes get (drift), is replaced
//! gracefully within its group's `Expired` or `Drifted` budget. When its pods fit on the other nodes it is
//! drained and removed; when they do not, a new node of its group is asked for first, and it drains once
//! that node is Ready. Drifted and older nodes go first. Karpenter deletes an expired node outright,
//! whatever its budgets; here expiry waits for its budget as drift does (docs/decisions.md).
//!
//! Nothing of a group being updated goes: EKS replaces its nodes itself, and drift is only told once the
//! update is over (the nodes it left on the old image are then drifted).

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::scaledown::budgets::groups::DisruptionBudgets;
use crate::autoscaler::scaledown::plan::drainability::{self, Blocking, PdbBudget, Rules, Verdict};
use crate::autoscaler::scaledown::plan::planner::Unremovable;
use crate::autoscaler::scaledown::plan::removal::{GroupInfo, Input, Mover, Undo};
use crate::model::{NODE_GROUP_IMAGE_LABEL, Node};
use crate::simulator::topology::{Place, Topology};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A node past its group's `expireAfter`, or drifted from its group's image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aging {
    pub node: usize,
    pub group: usize,
    pub reason: Reason,
}

/// What happens to an expired or drifted node this loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Its pods fit on the other nodes: it is drained and removed now.
    Remove,
    /// A new node of its group is asked for first; it drains once that node is Ready.
    Replace,
    /// It stays this loop: what holds it, in words.
    Wait(Hold, String),
}

/// What holds an expired or drifted node this loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
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

impl Hold {
    /// The reason the report's `unremovable` gives a node held so.
    pub fn unremovable(self) -> Unremovable {
        match self {
            Hold::Budget => Unremovable::DisruptionBudget,
            Hold::Updating => Unremovable::NodeGroupUpdating,
            Hold::Annotation => Unremovable::ScaleDownDisabledAnnotation,
            Hold::Pod => Unremovable::BlockedByPod,
            Hold::NoRoom => Unremovable::NoPlaceToMovePods,
        }
    }
}

/// Why an expired or drifted node goes, for the report of its removal: `created 31d 2h ago`, or `runs
/// ami-1; general's new nodes get ami-2`.
pub fn describe(
    a: &Aging,
    node: &Node,
    group: &str,
    image: Option<&str>,
    now: SystemTime,
) -> String {
    if a.reason == Reason::Drifted {
        let runs = node
            .labels
            .get(NODE_GROUP_IMAGE_LABEL)
            .map_or("", String::as_str);
        return format!(
            "runs {runs}; {group}'s new nodes get {}",
            image.unwrap_or("")
        );
    }
    let Some(age) = node.created.and_then(|c| now.duration_since(c).ok()) else {
        return "its creation time is unknown".into();
    };
    let secs = age.as_secs();
    let (days, hours, minutes) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (days, hours) {
        (0, 0) => format!("created {minutes}m ago"),
        (0, _) => format!("created {hours}h {minutes}m ago"),
        _ => format!("created {days}d {hours}h ago"),
    }
}

/// An expired or drifted node, what happens to it, and (for a removal) the grace period of its drain.
#[derive(Clone, Debug)]
pub struct Decided {
    pub aging: Aging,
    pub action: Action,
    pub grace: Option<Duration>,
}

/// The nodes of groups that have a policy that are drifted or expired now, drifted first, then the oldest
/// first; `images` is the image each group's new nodes get, when the provider says it. Nodes in
/// `excluded` (on their way out already) are left out.
pub fn find(
    nodes: &[Arc<Node>],
    node_group: &[Option<usize>],
    groups: &[GroupInfo],
    budgets: &DisruptionBudgets<'_>,
    images: &[Option<&str>],
    excluded: &HashSet<String>,
    now: SystemTime,
) -> Vec<Aging> {
    let mut found: Vec<(Aging, Option<SystemTime>)> = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        let Some(g) = node_group[n] else {
            continue;
        };
        let Some(policy) = budgets.policy(g) else {
            continue;
        };
        if excluded.contains(&node.name) {
            continue;
        }
        let reason = if drifted(node, images[g], groups[g].updating) {
            Reason::Drifted
        } else if node.created.is_some_and(|c| policy.expired(c, now)) {
            Reason::Expired
        } else {
            continue;
        };
        let aging = Aging {
            node: n,
            group: g,
            reason,
        };
        found.push((aging, node.created));
    }
    // Drifted before expired, then the oldest; a node whose creation is unknown last.
    found.sort_by_key(|(a, created)| (a.reason != Reason::Drifted, created.is_none(), *created));
    found.into_iter().map(|(a, _)| a).collect()
}

/// A node runs another image than its group's new nodes get. Unknown either way (a provider that does not
/// say, a node without the label), it is not drifted; nor while its group is updating, as EKS is then
/// replacing it.
fn drifted(node: &Node, image: Option<&str>, updating: bool) -> bool {
    let label = node.labels.get(NODE_GROUP_IMAGE_LABEL);
    !updating && label.zip(image).is_some_and(|(l, i)| l != i)
}

/// The groups' room this loop: how many nodes each may lose (over its min size, after the deletions in
/// progress and this loop's other removals), and whether it may grow by one more node for a replacement
/// (each replacement asked takes its node from the group's and the cluster's limits).
pub struct Room<'r> {
    pub lose: &'r mut [i64],
    pub grow: &'r mut dyn FnMut(usize) -> Result<(), String>,
}

/// Decides each of `aging` in order, within the budgets: a removal's pods are moved in `places` (committed
/// as scale-down commits its removals), and each removal or replacement takes one from its group's budget.
pub fn plan<'a>(
    input: &Input<'a>,
    rules: &Rules,
    aging: Vec<Aging>,
    budgets: &mut DisruptionBudgets<'_>,
    mut room: Room<'_>,
    topology: &mut Topology,
    places: &mut [Place],
) -> Vec<Decided> {
    if aging.is_empty() {
        return Vec::new();
    }
    let pdbs = PdbBudget::new(input.pdbs);
    let order: Vec<usize> = (0..places.len()).collect();
    let mut mover = Mover::new(order, places, input);
    let mut decided = Vec::with_capacity(aging.len());
    for a in aging {
        let grace = budgets
            .policy(a.group)
            .and_then(|p| p.termination_grace_period());
        let action = decide(
            input, rules, &pdbs, &mut mover, a, grace, budgets, &mut room, topology, places,
        );
        if action != Action::Remove && action != Action::Replace {
            decided.push(Decided {
                aging: a,
                action,
                grace,
            });
            continue;
        }
        budgets
            .take(a.group, a.reason)
            .expect("checked before the decision");
        if action == Action::Remove {
            room.lose[a.group] -= 1;
        }
        decided.push(Decided {
            aging: a,
            action,
            grace,
        });
    }
    decided
}

/// One node's decision; a removal's move is committed in `places`.
#[allow(clippy::too_many_arguments)]
fn decide<'a>(
    input: &Input<'a>,
    rules: &Rules,
    pdbs: &PdbBudget<'_>,
    mover: &mut Mover<'a>,
    a: Aging,
    grace: Option<Duration>,
    budgets: &DisruptionBudgets<'_>,
    room: &mut Room<'_>,
    topology: &mut Topology,
    places: &mut [Place],
) -> Action {
    let node = &input.nodes[a.node];
    let group = &input.groups[a.group];
    if group.updating {
        let why = format!(
            "{} is UPDATING: its nodes stay until the update ends",
            group.id
        );
        return Action::Wait(Hold::Updating, why);
    }
    if node.do_not_disrupt {
        let why = "annotated karpenter.sh/do-not-disrupt: \"true\"";
        return Action::Wait(Hold::Annotation, why.into());
    }
    if node.scale_down_disabled {
        let why = "annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"";
        return Action::Wait(Hold::Annotation, why.into());
    }
    let moving = match movable(input, rules, pdbs, a.node, grace) {
        Ok(moving) => moving,
        Err(why) => return Action::Wait(Hold::Pod, why),
    };
    if let Err(why) = budgets.check(a.group, a.reason) {
        return Action::Wait(Hold::Budget, why);
    }
    if room.lose[a.group] > 0 {
        let mut undo = Undo::default();
        match mover.move_pods(input, topology, places, a.node, &moving, &mut undo) {
            Ok(destinations) => {
                mover.set_accepts(places, a.node, false);
                mover.commit(a.node, &destinations);
                return Action::Remove;
            }
            Err(_) => mover.undo(undo, topology, places),
        }
    }
    match (room.grow)(a.group) {
        Ok(()) => Action::Replace,
        Err(why) => Action::Wait(
            Hold::NoRoom,
            format!(
                "its pods fit on no other node and {} cannot grow for a replacement: {why}",
                group.id
            ),
        ),
    }
}

/// The pods of node `n` that need a place elsewhere. A pod no eviction may move (do-not-disrupt,
/// safe-to-evict "false", a budget with no room) holds the drain until the grace period forces it, and a
/// controller makes it again elsewhere then: it needs a place too. Without a grace period such a pod would
/// hold the drain for good, so the node waits (as Karpenter does not start a drift it cannot finish).
fn movable(
    input: &Input<'_>,
    rules: &Rules,
    pdbs: &PdbBudget<'_>,
    n: usize,
    grace: Option<Duration>,
) -> Result<Vec<usize>, String> {
    let mut moving = Vec::new();
    for &p in &input.on_node[n] {
        let pod = input.pods.get(p);
        let blocks = if pod.disruption.do_not_disrupt {
            Some(format!(
                "{}: annotated karpenter.sh/do-not-disrupt",
                pod.key()
            ))
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
                Verdict::Blocks(reason, why) => Some(format!("{reason}: {why}")),
            }
        };
        if let Some(why) = blocks {
            if grace.is_none() {
                return Err(format!(
                    "{why}, and its group has no terminationGracePeriod to force the drain"
                ));
            }
            if pod.controller.is_some() {
                moving.push(p);
            }
        }
    }
    Ok(moving)
}
