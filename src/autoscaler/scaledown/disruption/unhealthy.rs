//! Unhealthy: ekscale's node repair, for groups whose EKS node auto repair is off and whose disruption entry
//! asks for it (`repair: {after, conditions}`, Karpenter's node repair paced per group as
//! kubernetes-sigs/karpenter #2811 asks): a node whose monitoring agent problem has lasted its wait is
//! replaced, the new node first, within the group's budget for `Unhealthy`. A group with more than 20% of its
//! nodes unhealthy is not repaired (a cluster-wide problem is no node problem: the leaving list says so), and
//! a node annotated `karpenter.sh/do-not-disrupt` is held by the stage, never repaired.

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::leaving::{LeavingAction, cluster_wide};
use crate::autoscaler::scaledown::disruption::method::{GroupSight, Method, Order};
use crate::model::{LeavingReason, Node};

pub(in crate::autoscaler::scaledown) struct Unhealthy;

impl Method for Unhealthy {
    fn reason(&self) -> Reason {
        Reason::Unhealthy
    }

    fn disrupts(&self, node: &Node, group: &GroupSight<'_>) -> bool {
        let Some((l, action)) = group.leaving else {
            return false;
        };
        let Some(repair) = group.policy.repair() else {
            return false;
        };
        let due = repair.due(&node.problems);
        l.reason == LeavingReason::Unhealthy
            && action == LeavingAction::Wait
            && !group.updating
            && !cluster_wide(l.unhealthy_in_group)
            && due.is_some_and(|due| group.now >= due)
    }

    /// `KernelReady False (KernelBug) since 2026-...`.
    fn describe(&self, node: &Node, _: &GroupSight<'_>) -> String {
        let said: Vec<String> = (node.problems.iter())
            .map(|p| {
                let since = p
                    .since
                    .map(|t| humantime::format_rfc3339_seconds(t).to_string());
                let since = since.map(|t| format!(" since {t}")).unwrap_or_default();
                format!("{} False ({}){since}", p.condition, p.reason)
            })
            .collect();
        said.join(", ")
    }

    fn order(&self) -> Order {
        Order::ReplacementFirst
    }
}
