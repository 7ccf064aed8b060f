//! Which nodes are over a group's scheduled max: as many as the group has beyond the window's `maxSize`,
//! chosen as Karpenter orders disruption candidates, by the cost of disrupting them: the emptiest first
//! (fewest pods to move), then the newest (the nodes added last, as an Auto Scaling group's `NewestInstance`
//! termination policy picks). A node with a pod no controller recreates, or one annotated
//! `karpenter.sh/do-not-disrupt`, comes last; chosen all the same (the group has no other), it waits, with
//! why: a schedule never loses a pod. Scale-down's `Scheduled` method disrupts the nodes chosen here.

use crate::autoscaler::schedules::in_force::SizesInForce;
use crate::model::{Node, Pod, PodList};
use std::cmp::Reverse;
use std::collections::HashSet;
use std::sync::Arc;

/// A node over its group's scheduled max: its place in the order they go in, and what becomes of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverMax {
    /// 0 for the first of its group to go.
    pub rank: usize,
    pub fate: ScheduledFate,
}

/// What becomes of a node over its group's scheduled max.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduledFate {
    /// It goes, for this reason (in words).
    Goes(String),
    /// It stays: what holds it, in words.
    Waits(String),
}

/// The loop's nodes as the choice reads them.
pub struct GroupNodes<'a> {
    pub nodes: &'a [Arc<Node>],
    /// Each node's group index.
    pub node_group: &'a [Option<usize>],
    /// Pods on each node.
    pub on_node: &'a [Vec<usize>],
    pub pods: PodList<'a>,
    /// Nodes on their way out already: neither counted nor chosen.
    pub excluded: &'a HashSet<String>,
    /// Each group's nodes that stay (its target, less its deletions in progress).
    pub staying: &'a [i64],
}

/// Whether a pod moves with its node's drain: DaemonSet and mirror pods stay where they are.
fn moves(pod: &Pod) -> bool {
    !pod.disruption.mirror
        && pod
            .controller
            .as_ref()
            .is_none_or(|c| c.kind != "DaemonSet")
}

impl SizesInForce {
    /// For each node (by index), whether it is over its group's scheduled max and what becomes of it.
    pub fn over_max(&self, seen: &GroupNodes<'_>) -> Vec<Option<OverMax>> {
        let mut chosen = vec![None; seen.nodes.len()];
        for (g, sizes) in self.each() {
            let staying = seen.staying.get(g).copied().unwrap_or(0);
            let over = staying - i64::from(sizes.max_size);
            if !sizes.lowers_max() || over <= 0 {
                continue;
            }
            let mut ranked: Vec<_> = (0..seen.nodes.len())
                .filter(|&n| seen.node_group[n] == Some(g))
                .filter(|&n| !seen.excluded.contains(&seen.nodes[n].name))
                .map(|n| {
                    let node = &seen.nodes[n];
                    let pods = || (seen.on_node[n].iter()).map(|&p| seen.pods.get(p));
                    let lost = pods().find(|p| moves(p) && p.controller.is_none());
                    let moving = pods().filter(|p| moves(p)).count();
                    let last = lost.is_some() || node.do_not_disrupt;
                    let lost = lost.map(|p| p.key().to_string());
                    ((last, moving, Reverse(node.created)), n, lost)
                })
                .collect();
            ranked.sort_by_key(|(rank, _, _)| *rank);
            let over = usize::try_from(over).unwrap_or(usize::MAX);
            for (rank, (_, n, lost)) in ranked.into_iter().take(over).enumerate() {
                let fate = match lost {
                    Some(pod) => ScheduledFate::Waits(format!(
                        "{pod} has no controller to make it again elsewhere: a node is never removed for a \
                         schedule while that would lose a pod"
                    )),
                    None => ScheduledFate::Goes(format!(
                        "over its scheduled maxSize: {}",
                        sizes.held_at_max()
                    )),
                };
                chosen[n] = Some(OverMax { rank, fate });
            }
        }
        chosen
    }
}
