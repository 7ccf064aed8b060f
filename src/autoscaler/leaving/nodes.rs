//! Which nodes are leaving, from four sources: the instances the provider says are leaving (matched to
//! nodes by providerID), the taints other tools put on leaving nodes (`model::LEAVING_TAINTS`), the
//! problems the node monitoring agent reported (`Node::problems`: unhealthy since the condition's time), and
//! the Capacity Blocks that end (every node of the group, from `drainLead` before EKS scales it in).
//! One value, indexed like the view's nodes, says for each its reason, when it goes, what was said of it,
//! and whether its group replaces it itself (capacity rebalancing, EKS's node auto repair).

use crate::autoscaler::capacity::BlockEnding;
use crate::autoscaler::group::GroupFacts;
use crate::model::{
    LEAVING_TAINTS, LeavingInstance, LeavingReason, Node, NodeGroupState, NodeRepairConfig,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long EC2's Spot interruption warning gives: a node a termination handler tainted for one goes at
/// most this long after the taint was first seen.
pub const SPOT_WARNING: Duration = Duration::from_secs(120);

/// What one source says of a node: why, when, in words, and by when its drain must be over (`None`: the
/// source gives no deadline).
type Said = (LeavingReason, SystemTime, String, Option<SystemTime>);

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
    /// By when a drain must be over: the instance goes then. `None` when the source gives no time (a
    /// termination handler's taint for anything but a Spot interruption, a node problem).
    pub deadline: Option<SystemTime>,
    /// Its group replaces it itself: ekscale adds nothing for it.
    pub replaced_by_group: Option<GroupReplaces>,
    /// Of its group's nodes, how many are unhealthy, and how many there are.
    pub unhealthy_in_group: (usize, usize),
}

/// The leaving nodes of a view, in the order of its nodes.
#[derive(Clone, Debug, Default)]
pub struct LeavingNodes {
    /// Sorted by node index.
    pub nodes: Vec<LeavingNode>,
    /// For each view node, its position in `nodes`.
    by_node: Vec<Option<u32>>,
}

/// Which source says a node leaves, the more pressing first: a node two sources name takes the first.
fn rank(reason: LeavingReason) -> u8 {
    match reason {
        LeavingReason::SpotInterruption => 0,
        LeavingReason::InstanceStopped => 1,
        LeavingReason::CapacityBlockEnding => 1,
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
    /// Per group (indexed like `facts`, or empty): its Capacity Block's ending, when its nodes drain now.
    pub endings: &'a [Option<BlockEnding>],
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
            endings,
        } = *sources;
        let mut found: Vec<Option<Said>> = vec![None; nodes.len()];
        let mut offer = |n: usize, candidate: Said| {
            let slot = &mut found[n];
            let better = match slot {
                None => true,
                Some((r, at, ..)) => (rank(candidate.0), candidate.1) < (rank(*r), *at),
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
                    let deadline =
                        (instance.reason != LeavingReason::Rebalance).then_some(instance.at);
                    offer(
                        n,
                        (
                            instance.reason,
                            instance.at,
                            instance.detail.clone(),
                            deadline,
                        ),
                    );
                }
            }
        }
        for (n, node) in nodes.iter().enumerate() {
            let group = node_group.get(n).copied().flatten();
            if let Some(ending) = group.and_then(|g| endings.get(g)).and_then(Option::as_ref) {
                let at = ending.scale_in;
                let said = ending.detail.clone();
                offer(n, (LeavingReason::CapacityBlockEnding, at, said, Some(at)));
            }
            for taint in &node.taints {
                if let Some((key, reason)) = LEAVING_TAINTS.iter().find(|(k, _)| *k == taint.key) {
                    let since = seen(&node.name).unwrap_or(now);
                    let (at, deadline) = match reason {
                        LeavingReason::SpotInterruption => {
                            (since + SPOT_WARNING, Some(since + SPOT_WARNING))
                        }
                        _ => (since, None),
                    };
                    offer(n, (*reason, at, format!("tainted {key}"), deadline));
                }
            }
            if let Some(first) = node.problems.iter().min_by_key(|p| p.since) {
                let at = (first.since).unwrap_or_else(|| seen(&node.name).unwrap_or(now));
                let said: Vec<String> = (node.problems.iter())
                    .map(|p| format!("{} False ({})", p.condition, p.reason))
                    .collect();
                offer(n, (LeavingReason::Unhealthy, at, said.join(", "), None));
            }
        }
        let unhealthy = unhealthy_per_group(&found, node_group, facts.len());
        let sizes = nodes_per_group(node_group, facts.len());
        let mut leaving = LeavingNodes {
            nodes: Vec::new(),
            by_node: vec![None; nodes.len()],
        };
        for (n, slot) in found.into_iter().enumerate() {
            let Some((reason, at, mut detail, deadline)) = slot else {
                continue;
            };
            let group = node_group.get(n).copied().flatten();
            let state = group.and_then(|g| facts[g].state.as_ref());
            let counts = group.map_or((0, 0), |g| (unhealthy[g], sizes[g]));
            let replaced_by_group = replaced_by_group(reason, state, counts, &mut detail);
            leaving.by_node[n] = Some(leaving.nodes.len() as u32);
            leaving.nodes.push(LeavingNode {
                node: n,
                group,
                reason,
                at,
                detail,
                deadline,
                replaced_by_group,
                unhealthy_in_group: counts,
            });
        }
        leaving
    }

    /// The position in `nodes` of the leaving node at view index `node`, if it is one.
    pub fn position(&self, node: usize) -> Option<usize> {
        Some((*self.by_node.get(node)?)? as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Whether a node leaving for `reason` is its group's to replace (`state`: the group's, `(unhealthy, nodes)`:
/// its counts); why EKS's repair holds off, added to `detail`.
fn replaced_by_group(
    reason: LeavingReason,
    state: Option<&NodeGroupState>,
    (unhealthy, nodes): (usize, usize),
    detail: &mut String,
) -> Option<GroupReplaces> {
    match reason {
        LeavingReason::Rebalance if state.is_some_and(|s| s.capacity_rebalance) => {
            Some(GroupReplaces::CapacityRebalancing)
        }
        LeavingReason::Unhealthy => {
            let repair = state.and_then(|s| s.node_repair.as_ref());
            match repair.filter(|r| r.enabled) {
                Some(r) if repair_halts(r, unhealthy, nodes) => {
                    detail.push_str(&format!(
                        "; EKS's auto repair halts: {unhealthy} of the group's {nodes} nodes are unhealthy"
                    ));
                    None
                }
                Some(_) => Some(GroupReplaces::AutoRepair),
                None => None,
            }
        }
        _ => None,
    }
}

fn unhealthy_per_group(
    found: &[Option<Said>],
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
