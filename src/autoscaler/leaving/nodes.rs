//! Which nodes are leaving, from three sources: the instances the provider says are leaving (matched to
//! nodes by providerID), the taints other tools put on leaving nodes (`model::LEAVING_TAINTS`), and the
//! problems the node monitoring agent reported (`Node::problems`: unhealthy since the condition's time).
//! One value, indexed like the view's nodes, says for each its reason, when it goes, what was said of it,
//! and whether its group replaces it itself (capacity rebalancing, EKS's node auto repair).

use crate::autoscaler::group::GroupFacts;
use crate::model::{LEAVING_TAINTS, LeavingInstance, LeavingReason, Node, NodeRepairConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

/// What replaces a leaving node without ekscale: its group itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupReplaces {
    /// The Auto Scaling group's capacity rebalancing launches a new Spot instance, then drains the old one.
    CapacityRebalancing,
    /// EKS's node auto repair (`nodeRepairConfig.enabled`) replaces or reboots the node.
    AutoRepair,
}

impl GroupReplaces {
    pub fn words(self) -> &'static str {
        match self {
            GroupReplaces::CapacityRebalancing => {
                "the Auto Scaling group replaces it (capacity rebalancing)"
            }
            GroupReplaces::AutoRepair => "EKS's node auto repair replaces it",
        }
    }
}

/// One leaving node.
#[derive(Clone, Debug, PartialEq)]
pub struct LeavingNode {
    /// Its index in the view's nodes.
    pub node: usize,
    /// Its group's index in the loop's groups, when it is in one.
    pub group: Option<usize>,
    pub reason: LeavingReason,
    /// When it goes (the warning's deadline, the event's time), or since when it is so.
    pub at: SystemTime,
    /// What the source said, in words.
    pub detail: String,
    /// Its group replaces it itself: ekscale adds nothing for it.
    pub replaced_by_group: Option<GroupReplaces>,
}

/// The leaving nodes of a view, in the order of its nodes.
#[derive(Clone, Debug, Default)]
pub struct LeavingNodes {
    /// Sorted by node index.
    pub nodes: Vec<LeavingNode>,
}

/// Which source says a node leaves, the more pressing first: a node two sources name takes the first.
fn rank(reason: LeavingReason) -> u8 {
    match reason {
        LeavingReason::SpotInterruption => 0,
        LeavingReason::InstanceStopped => 1,
        LeavingReason::ScheduledEvent => 2,
        LeavingReason::Unhealthy => 3,
        LeavingReason::Rebalance => 4,
    }
}

/// What `find` reads of the loop: the view's nodes, each one's group, the groups as the provider says them.
pub struct LeavingSources<'a> {
    pub nodes: &'a [Arc<Node>],
    pub node_group: &'a [Option<usize>],
    pub facts: &'a [GroupFacts],
    /// What the provider said is leaving (empty when it does not serve it).
    pub instances: &'a [LeavingInstance],
}

impl LeavingNodes {
    /// The leaving nodes of `sources` at `now`; `seen` says when a node was first seen leaving (the time of
    /// a taint, which says no time of its own).
    pub fn find(
        sources: &LeavingSources<'_>,
        seen: impl Fn(&str) -> Option<SystemTime>,
        now: SystemTime,
    ) -> LeavingNodes {
        let LeavingSources {
            nodes,
            node_group,
            facts,
            instances,
        } = *sources;
        let mut found: Vec<Option<(LeavingReason, SystemTime, String)>> = vec![None; nodes.len()];
        let mut offer = |n: usize, candidate: (LeavingReason, SystemTime, String)| {
            let slot = &mut found[n];
            let better = match slot {
                None => true,
                Some((r, at, _)) => (rank(candidate.0), candidate.1) < (rank(*r), *at),
            };
            if better {
                *slot = Some(candidate);
            }
        };
        if !instances.is_empty() {
            let by_id: HashMap<&str, usize> = (nodes.iter().enumerate())
                .filter(|(_, n)| !n.provider_id.is_empty())
                .map(|(i, n)| (n.provider_id.as_str(), i))
                .collect();
            for instance in instances {
                if let Some(&n) = by_id.get(instance.id.as_str()) {
                    offer(n, (instance.reason, instance.at, instance.detail.clone()));
                }
            }
        }
        for (n, node) in nodes.iter().enumerate() {
            for taint in &node.taints {
                if let Some((key, reason)) = LEAVING_TAINTS.iter().find(|(k, _)| *k == taint.key) {
                    let at = seen(&node.name).unwrap_or(now);
                    offer(n, (*reason, at, format!("tainted {key}")));
                }
            }
            if let Some(first) = node.problems.iter().min_by_key(|p| p.since) {
                let at = (first.since).unwrap_or_else(|| seen(&node.name).unwrap_or(now));
                let said: Vec<String> = (node.problems.iter())
                    .map(|p| format!("{} False ({})", p.condition, p.reason))
                    .collect();
                offer(n, (LeavingReason::Unhealthy, at, said.join(", ")));
            }
        }
        let unhealthy = unhealthy_per_group(&found, node_group, facts.len());
        let sizes = nodes_per_group(node_group, facts.len());
        let mut leaving = LeavingNodes::default();
        for (n, slot) in found.into_iter().enumerate() {
            let Some((reason, at, mut detail)) = slot else {
                continue;
            };
            let group = node_group.get(n).copied().flatten();
            let state = group.and_then(|g| facts[g].state.as_ref());
            let replaced_by_group = match reason {
                LeavingReason::Rebalance if state.is_some_and(|s| s.capacity_rebalance) => {
                    Some(GroupReplaces::CapacityRebalancing)
                }
                LeavingReason::Unhealthy => {
                    let repair = state.and_then(|s| s.node_repair.as_ref());
                    let g = group.unwrap_or(0);
                    match repair.filter(|r| r.enabled) {
                        Some(r) if repair_halts(r, unhealthy[g], sizes[g]) => {
                            detail.push_str(&format!(
                                "; EKS's auto repair halts: {} of the group's {} nodes are unhealthy",
                                unhealthy[g], sizes[g]
                            ));
                            None
                        }
                        Some(_) => Some(GroupReplaces::AutoRepair),
                        None => None,
                    }
                }
                _ => None,
            };
            leaving.nodes.push(LeavingNode {
                node: n,
                group,
                reason,
                at,
                detail,
                replaced_by_group,
            });
        }
        leaving
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

fn unhealthy_per_group(
    found: &[Option<(LeavingReason, SystemTime, String)>],
    node_group: &[Option<usize>],
    groups: usize,
) -> Vec<usize> {
    let mut count = vec![0; groups.max(1)];
    for (slot, g) in found.iter().zip(node_group) {
        if let (Some((LeavingReason::Unhealthy, ..)), Some(g)) = (slot, g) {
            count[*g] += 1;
        }
    }
    count
}

fn nodes_per_group(node_group: &[Option<usize>], groups: usize) -> Vec<usize> {
    let mut count = vec![0; groups.max(1)];
    for g in node_group.iter().flatten() {
        count[*g] += 1;
    }
    count
}

/// Whether EKS's node auto repair holds off for a group with `unhealthy` of its `nodes` unhealthy: past the
/// configured count or percentage, or, when neither is set, above 20% in a group of more than five nodes.
pub fn repair_halts(config: &NodeRepairConfig, unhealthy: usize, nodes: usize) -> bool {
    let over_percent = |p: i32| unhealthy * 100 > usize::try_from(p).unwrap_or(0) * nodes;
    match (
        config.max_unhealthy_node_threshold_count,
        config.max_unhealthy_node_threshold_percentage,
    ) {
        (Some(count), _) => unhealthy > usize::try_from(count).unwrap_or(0),
        (None, Some(percent)) => over_percent(percent),
        (None, None) => nodes > 5 && over_percent(20),
    }
}
