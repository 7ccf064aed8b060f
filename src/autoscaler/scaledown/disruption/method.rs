//! A reason for disruption, as Karpenter's disruption `Method`: which nodes it disrupts now, the budget reason
//! it takes from, and why a node goes, for the report. The stage asks each method in turn; a node is a
//! candidate of the first that disrupts it.

use crate::autoscaler::disruption::{GroupPolicy, Reason};
use crate::autoscaler::leaving::{LeavingAction, LeavingNode};
use crate::autoscaler::schedules::OverMax;
use crate::model::Node;
use std::time::SystemTime;

/// What a method sees of a node's group: its policy, the image its new nodes get (when the provider says),
/// whether it is being updated, and the loop's instant; and of the node itself, whether it is leaving.
pub(in crate::autoscaler::scaledown) struct GroupSight<'s> {
    pub(in crate::autoscaler::scaledown) id: &'s str,
    pub(in crate::autoscaler::scaledown) policy: &'s GroupPolicy,
    pub(in crate::autoscaler::scaledown) image: Option<&'s str>,
    pub(in crate::autoscaler::scaledown) updating: bool,
    pub(in crate::autoscaler::scaledown) now: SystemTime,
    /// The node, when it is leaving (`autoscaler/leaving/`), and what is done for it before the methods.
    pub(in crate::autoscaler::scaledown) leaving: Option<(&'s LeavingNode, LeavingAction)>,
    /// The node, when it is over its group's scheduled max (`autoscaler/schedules/`), and what becomes of it.
    pub(in crate::autoscaler::scaledown) scheduled: Option<&'s OverMax>,
}

/// Whether a method's node goes once its pods fit elsewhere, or only after a new node of its group is asked
/// for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::autoscaler::scaledown) enum Order {
    /// Removed when its pods fit on the other nodes, else replaced surge-first (drift, expiry).
    RemoveWhenPodsFit,
    /// Always replaced, the new node first (a rebalance, a repair: the node is at risk, its room is not).
    ReplacementFirst,
    /// Removed, its pods moved where they fit and the rest left pending; never replaced (a scheduled max).
    RemoveWhatFits,
}

/// One reason for disruption.
pub(in crate::autoscaler::scaledown) trait Method: Sync {
    /// The reason it takes from its group's budgets, and the report names.
    fn reason(&self) -> Reason;

    /// Whether `node` is disrupted for this reason now.
    fn disrupts(&self, node: &Node, group: &GroupSight<'_>) -> bool;

    /// Why `node` goes, for the report of its removal.
    fn describe(&self, node: &Node, group: &GroupSight<'_>) -> String;

    /// What holds `node` for this reason whatever its budget, in words; `None` when nothing does.
    fn holds(&self, _node: &Node, _group: &GroupSight<'_>) -> Option<String> {
        None
    }

    /// Where `node` goes among this reason's candidates (lower first); those of equal rank go oldest first.
    fn rank(&self, _node: &Node, _group: &GroupSight<'_>) -> usize {
        0
    }

    /// Whether its nodes may go without a replacement.
    fn order(&self) -> Order {
        Order::RemoveWhenPodsFit
    }
}

/// A node a method disrupts now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DisruptionCandidate {
    pub node: usize,
    pub group: usize,
    pub reason: Reason,
}
