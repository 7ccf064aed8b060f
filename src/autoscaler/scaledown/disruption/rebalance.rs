//! Rebalance: a Spot node EC2 recommends rebalancing (it is at elevated risk of interruption) whose group's
//! Auto Scaling group does not rebalance it itself is replaced by ekscale, the new node first, within the
//! group's budget for `Rebalance` (aws/karpenter-provider-aws #2813 asks Karpenter for it). A group with
//! capacity rebalancing on replaces the node itself: the node is then `none` in the leaving list, and this
//! method does not see it.

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::leaving::LeavingAction;
use crate::autoscaler::scaledown::disruption::method::{GroupSight, Method, Order};
use crate::model::{LeavingReason, Node};

pub(in crate::autoscaler::scaledown) struct Rebalance;

impl Method for Rebalance {
    fn reason(&self) -> Reason {
        Reason::Rebalance
    }

    fn disrupts(&self, _: &Node, group: &GroupSight<'_>) -> bool {
        !group.updating
            && group.leaving.is_some_and(|(l, action)| {
                l.reason == LeavingReason::Rebalance && action == LeavingAction::Wait
            })
    }

    /// `EC2 recommends rebalancing it (since 2026-...); spot does not rebalance itself`.
    fn describe(&self, _: &Node, group: &GroupSight<'_>) -> String {
        let since = group
            .leaving
            .map(|(l, _)| humantime::format_rfc3339_seconds(l.at));
        let since = since.map(|t| format!(" (since {t})")).unwrap_or_default();
        format!(
            "EC2 recommends rebalancing it{since}; {} does not rebalance itself",
            group.id
        )
    }

    fn order(&self) -> Order {
        Order::ReplacementFirst
    }
}
