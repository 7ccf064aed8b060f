//! What the loop changes for its leaving nodes, as for nodes being deleted: they are no room (for pending
//! pods, for pods moved off other nodes, for what else is unneeded); the pods a drain would move off those
//! that go now (`drain`) or that their group replaces now (`none`) are pods to help this loop; a group that
//! replaces its nodes itself has their replacements coming (upcoming nodes, where those pods go); and the
//! newest nodes of such a group are held from scale-down while the old ones drain (the extra instance
//! capacity rebalancing launched is the group's, not unneeded).

use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::leaving::action::{self, LeavingAction, LeavingHandling};
use crate::autoscaler::leaving::nodes::{LeavingNode, LeavingNodes};
use crate::autoscaler::leaving::report::LeavingStatus;
use crate::model::{LeavingReason, Node, Pod, PodList};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How long a group a Spot interruption came from gets no new Spot capacity: Karpenter's unavailable
/// offerings cache keeps an interrupted offering out for 3 minutes.
pub const SPOT_UNAVAILABLE: std::time::Duration = std::time::Duration::from_secs(3 * 60);

/// The leaving nodes with what is done for each, and what the loop changes for them.
#[derive(Clone, Debug, Default)]
pub struct LeavingEffects {
    pub nodes: LeavingNodes,
    /// What is done for each of `nodes.nodes` (same order), and why.
    pub actions: Vec<(LeavingAction, String)>,
    /// Every leaving node's name: no pod goes there.
    pub no_room: HashSet<String>,
    /// The pods planned elsewhere this loop (indices into the loop's pods), taken off the pods that hold
    /// room where they are.
    pub moved: Vec<usize>,
    /// For each of `moved` (same order): the group (index) of the leaving node it moves off, its home group,
    /// which scale-up prefers for it when that group can take it.
    pub homes: Vec<Option<usize>>,
    /// Nodes held from scale-down though they take pods: the newest of each group that replaces a node
    /// itself, one per such node.
    pub held: HashSet<String>,
    /// Groups (indices) a Spot interruption came from: no new Spot capacity there for a while.
    pub interrupted: Vec<usize>,
    /// Whether the loop handles them (`--leaving-nodes`): ignored, they are only listed.
    pub handling: LeavingHandling,
}

/// Whether a drain would move `pod` (a controller makes it again elsewhere): not a DaemonSet's, not a
/// static pod's mirror, not already terminating or finished, and owned by a controller.
pub fn moves(pod: &Pod) -> bool {
    pod.controller.is_some()
        && !pod.daemonset()
        && !pod.disruption.mirror
        && pod.deleted.is_none()
        && pod.holds_room()
}

impl LeavingEffects {
    /// What `leaving` changes: the actions decided, and the pods of `bound` (indices into `pods`, those
    /// that hold room) on nodes whose pods move taken out of `bound` into `moved`.
    pub fn new(
        leaving: LeavingNodes,
        (nodes, node_group): (&[Arc<Node>], &[Option<usize>]),
        pods: PodList<'_>,
        bound: &mut Vec<usize>,
    ) -> LeavingEffects {
        let actions: Vec<(LeavingAction, String)> =
            leaving.nodes.iter().map(action::decide).collect();
        let no_room = (leaving.nodes.iter())
            .map(|l| nodes[l.node].name.clone())
            .collect();
        let moving: HashMap<&str, Option<usize>> = (leaving.nodes.iter().zip(&actions))
            .filter(|(_, (a, _))| a.moves_pods())
            .map(|(l, _)| (nodes[l.node].name.as_str(), l.group))
            .collect();
        let (mut moved, mut homes) = (Vec::new(), Vec::new());
        if !moving.is_empty() {
            bound.retain(|&i| {
                let pod = pods.get(i);
                let on = pod.node_name.as_deref().and_then(|n| moving.get(n));
                match on {
                    Some(&home) if moves(pod) => {
                        moved.push(i);
                        homes.push(home);
                        false
                    }
                    _ => true,
                }
            });
        }
        let interrupted = (leaving.nodes.iter().zip(&actions))
            .filter(|(l, (a, _))| {
                l.reason == LeavingReason::SpotInterruption && *a == LeavingAction::Drain
            })
            .filter_map(|(l, _)| l.group)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut effects = LeavingEffects {
            nodes: leaving,
            actions,
            no_room,
            moved,
            homes,
            held: HashSet::new(),
            interrupted,
            handling: LeavingHandling::Handle,
        };
        effects.held = effects.newest_held(nodes, node_group);
        effects
    }

    /// The nodes ekscale would replace (action `wait`) that it is replacing already (`ours`): `replace`.
    pub fn replacing(&mut self, nodes: &[Arc<Node>], ours: impl Fn(&str) -> bool) {
        for (l, (action, why)) in self.nodes.nodes.iter().zip(&mut self.actions) {
            if *action == LeavingAction::Wait && ours(&nodes[l.node].name) {
                *action = LeavingAction::Replace;
                *why = "ekscale is replacing it: its new node first, then it drains".into();
            }
        }
    }

    /// This loop's disruption decisions for the nodes ekscale replaces itself (`decided`: node, reason word,
    /// action, detail, as the report's disruptions say them), into the report's `leaving` list.
    pub fn decided<'d>(
        listed: &mut [LeavingStatus],
        decided: impl IntoIterator<Item = (&'d str, &'d str, &'d str, &'d str)>,
    ) {
        let by_node: HashMap<&str, (&str, &str, &str)> = (decided.into_iter())
            .filter(|(_, reason, ..)| matches!(*reason, "rebalance" | "unhealthy"))
            .map(|(node, reason, action, detail)| (node, (reason, action, detail)))
            .collect();
        for l in listed
            .iter_mut()
            .filter(|l| l.action == LeavingAction::Wait)
        {
            let Some(&(reason, action, detail)) = by_node.get(l.node.as_str()) else {
                continue;
            };
            let source = &l.source;
            (l.action, l.detail) = match action {
                "wait" => (
                    LeavingAction::Wait,
                    format!("{source}: ekscale's {reason} replacement waits: {detail}"),
                ),
                _ => (
                    LeavingAction::Replace,
                    format!("{source}: ekscale replaces it: {detail}"),
                ),
            };
        }
    }

    /// The leaving nodes while handling is off (`--leaving-nodes ignore`): each listed with action `none`
    /// and nothing changed for them (room like any node, no pod moved, no replacement counted or held).
    pub fn ignored(leaving: LeavingNodes) -> LeavingEffects {
        let actions = (leaving.nodes.iter())
            .map(|_| (LeavingAction::None, action::IGNORED.to_string()))
            .collect();
        LeavingEffects {
            nodes: leaving,
            actions,
            handling: LeavingHandling::Ignore,
            ..LeavingEffects::default()
        }
    }

    /// For each group, how many of its nodes it replaces itself (action `none`).
    pub fn replaced_by_groups(&self, groups: usize) -> Vec<usize> {
        let mut count = vec![0; groups];
        for (l, (a, _)) in self.nodes.nodes.iter().zip(&self.actions) {
            if let (LeavingAction::None, Some(g)) = (a, l.group) {
                count[g] += 1;
            }
        }
        count
    }

    /// The replacements groups launch themselves, counted as coming: while it replaces `k` nodes, a group
    /// has its target and `k` more (the old ones still registered), so at least that less its registered
    /// nodes is upcoming. A replacement already registered or launched is not counted twice.
    pub fn count_replacements(&self, facts: &[GroupFacts], counts: &mut [Counts]) {
        for (g, k) in self.replaced_by_groups(facts.len()).into_iter().enumerate() {
            if k == 0 || facts[g].problem.is_some() {
                continue;
            }
            let target = usize::try_from(facts[g].target).unwrap_or(0);
            let c = &mut counts[g];
            c.upcoming = c.upcoming.max((target + k).saturating_sub(c.registered));
        }
    }

    /// The newest `k` nodes of each group replacing `k` nodes itself that are not leaving: the group's
    /// replacements (or what stands for them), never unneeded while the old ones drain.
    fn newest_held(&self, nodes: &[Arc<Node>], node_group: &[Option<usize>]) -> HashSet<String> {
        let mut by_group: HashMap<usize, usize> = HashMap::new();
        for (l, (a, _)) in self.nodes.nodes.iter().zip(&self.actions) {
            if let (LeavingAction::None, Some(g)) = (a, l.group) {
                *by_group.entry(g).or_default() += 1;
            }
        }
        if by_group.is_empty() {
            return HashSet::new();
        }
        let mut members: HashMap<usize, Vec<&Node>> = HashMap::new();
        for (node, g) in nodes.iter().zip(node_group) {
            if let Some(g) = g.filter(|g| by_group.contains_key(g))
                && !self.no_room.contains(&node.name)
            {
                members.entry(g).or_default().push(node);
            }
        }
        let mut held = HashSet::new();
        for (g, mut members) in members {
            members.sort_by(|a, b| b.created.cmp(&a.created).then(a.name.cmp(&b.name)));
            let k = by_group[&g];
            held.extend(members.into_iter().take(k).map(|n| n.name.clone()));
        }
        held
    }

    /// The report's list: each leaving node with its group, reason, time and action, sorted by node.
    pub fn statuses(&self, nodes: &[Arc<Node>], facts: &[GroupFacts]) -> Vec<LeavingStatus> {
        let mut listed: Vec<LeavingStatus> = (self.nodes.nodes.iter().zip(&self.actions))
            .map(|(l, (action, why))| LeavingStatus {
                node: nodes[l.node].name.clone(),
                node_group: l
                    .group
                    .map(|g| facts[g].group.id.clone())
                    .unwrap_or_default(),
                reason: l.reason.as_str().to_string(),
                at: humantime::format_rfc3339_seconds(l.at).to_string(),
                action: *action,
                detail: format!("{}: {why}", l.detail),
                source: l.detail.clone(),
            })
            .collect();
        listed.sort_by(|a, b| a.node.cmp(&b.node));
        listed
    }

    /// The node at view index `node` when it is leaving, and what is done for it.
    pub fn of(&self, node: usize) -> Option<(&LeavingNode, LeavingAction)> {
        let at = self.nodes.position(node)?;
        Some((&self.nodes.nodes[at], self.actions[at].0))
    }

    /// The leaving node and its action, in the order of `nodes.nodes`.
    pub fn each(&self) -> impl Iterator<Item = (&LeavingNode, LeavingAction)> {
        self.nodes
            .nodes
            .iter()
            .zip(self.actions.iter().map(|(a, _)| *a))
    }
}
