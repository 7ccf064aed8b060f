//! What is done for a leaving node, in four words: `drain` (ekscale cordons and drains it now and plans its
//! pods elsewhere this loop), `replace` (ekscale replaces it, the new node first, within the disruption
//! budget), `none` (ekscale does nothing: its group replaces it itself) and `wait` (ekscale will act later,
//! or nothing may act yet).

use crate::autoscaler::leaving::nodes::LeavingNode;
use crate::model::LeavingReason;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LeavingAction {
    /// Cordoned, tainted and drained at once (PodDisruptionBudgets respected until the node goes, never
    /// past), then deleted; its pods planned elsewhere this loop.
    Drain,
    /// Replaced by ekscale, the new node first, within the group's disruption budget.
    Replace,
    /// Nothing by ekscale: the node group replaces it itself, and its replacement is counted as coming.
    None,
    /// Not yet: ekscale will act later (a repair's wait, a budget in use), or nothing may act.
    Wait,
}

impl LeavingAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LeavingAction::Drain => "drain",
            LeavingAction::Replace => "replace",
            LeavingAction::None => "none",
            LeavingAction::Wait => "wait",
        }
    }

    /// Whether its pods are planned elsewhere this loop (existing room, a scale-up, or the group's own
    /// replacement): the node goes now, or its group replaces it now.
    pub fn moves_pods(self) -> bool {
        matches!(self, LeavingAction::Drain | LeavingAction::None)
    }
}

/// `--leaving-nodes`: whether the loop handles leaving nodes (issue 60) or ignores them as it did before,
/// treating them as room and acting for none of them (each still listed, action `none`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LeavingHandling {
    /// No room, never a scale-down or disruption candidate, their pods planned elsewhere ahead.
    #[default]
    Handle,
    /// As before issue 60: leaving nodes are room like any other, nothing is drained or replaced ahead.
    Ignore,
}

/// The detail of a leaving node while handling is off.
pub const IGNORED: &str = "handling of leaving nodes is off (--leaving-nodes ignore): it is room like any \
                           node, nothing is drained or replaced ahead";

impl std::fmt::Display for LeavingAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is done for `node` before the disruption methods look at it, and why, in words.
pub fn decide(node: &LeavingNode) -> (LeavingAction, String) {
    if let Some(by) = node.replaced_by_group {
        return (LeavingAction::None, by.words().to_string());
    }
    let until = match node.deadline {
        Some(at) => format!("until {}", humantime::format_rfc3339_seconds(at)),
        None => "(no deadline is known)".into(),
    };
    match node.reason {
        LeavingReason::SpotInterruption
        | LeavingReason::ScheduledEvent
        | LeavingReason::InstanceStopped
        | LeavingReason::CapacityBlockEnding => (
            LeavingAction::Drain,
            format!(
                "cordoned and drained now, PodDisruptionBudgets respected {until}; its pods are planned \
                 elsewhere this loop"
            ),
        ),
        LeavingReason::Rebalance => (
            LeavingAction::Wait,
            "its group does not rebalance itself: ekscale replaces it, the new node first, within the \
             disruption budget (reason Rebalance) where a disruption configuration covers the group"
                .into(),
        ),
        LeavingReason::Unhealthy if cluster_wide(node.unhealthy_in_group) => {
            let (unhealthy, of) = node.unhealthy_in_group;
            let why = format!(
                "{unhealthy} of its group's {of} nodes are unhealthy, more than 20%: a cluster-wide \
                 problem is no node problem, and ekscale repairs none of them"
            );
            (LeavingAction::Wait, why)
        }
        LeavingReason::Unhealthy => (
            LeavingAction::Wait,
            "its group's auto repair is off: ekscale replaces it when the disruption configuration's \
             repair asks, within the budget (reason Unhealthy)"
                .into(),
        ),
    }
}

/// Whether more than 20% of a group's nodes are unhealthy (`(unhealthy, nodes)`): ekscale repairs none of
/// them then, as EKS's auto repair halts.
pub fn cluster_wide((unhealthy, nodes): (usize, usize)) -> bool {
    unhealthy * 5 > nodes
}
