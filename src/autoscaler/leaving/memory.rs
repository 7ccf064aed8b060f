//! What the loop remembers of leaving nodes between iterations: when each was first seen leaving (the time
//! a taint stands for, the start of its replacement's clock), how its pods were planned for (counted once),
//! and when none of them is pending any more (`ekscale_autoscaler_leaving_replacement_seconds`).

use crate::autoscaler::leaving::effects::{LeavingEffects, moves};
use crate::autoscaler::leaving::report::LeavingReplaced;
use crate::model::{LeavingReason, Node, PodList};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A node followed after it stops leaving no longer than this: its pods' owners may never be pending again.
const FOLLOWED_AT_MOST: Duration = Duration::from_secs(3600);

#[derive(Clone, Debug)]
struct Tracked {
    since: SystemTime,
    reason: LeavingReason,
    /// The controllers (uids) of the pods it had to move, while they are followed: `None` when nothing was
    /// moved, or once they all found room.
    owners: Option<HashSet<String>>,
}

/// Where this loop's plan put pods, by `namespace/name`: placed on existing or upcoming nodes, or unmet.
pub struct Planned<'a> {
    pub placed: HashSet<&'a str>,
    pub unmet: HashSet<&'a str>,
}

#[derive(Clone, Debug, Default)]
pub struct LeavingMemory {
    tracked: HashMap<String, Tracked>,
}

impl LeavingMemory {
    /// When `node` was first seen leaving.
    pub fn first_seen(&self, node: &str) -> Option<SystemTime> {
        self.tracked.get(node).map(|t| t.since)
    }

    /// Follows this loop's leaving nodes: the new ones are remembered with how their pods were planned for
    /// (`planned`), those whose moved pods are no longer pending anywhere are timed. Returns what the metrics
    /// count.
    pub fn follow(
        &mut self,
        effects: &LeavingEffects,
        (nodes, pods): (&[Arc<Node>], PodList<'_>),
        planned: &Planned<'_>,
        now: SystemTime,
    ) -> LeavingReplaced {
        let mut replaced = LeavingReplaced::default();
        let mut moved_by_node: HashMap<&str, Vec<usize>> = HashMap::new();
        for &i in &effects.moved {
            if let Some(n) = pods.get(i).node_name.as_deref() {
                moved_by_node.entry(n).or_default().push(i);
            }
        }
        let mut current = HashSet::new();
        for (l, action) in effects.each() {
            let name = nodes[l.node].name.as_str();
            current.insert(name);
            if self.tracked.contains_key(name) {
                continue;
            }
            let moved = moved_by_node
                .get(name)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let keys: Vec<String> = moved.iter().map(|&i| pods.get(i).key()).collect();
            let outcome = if l.replaced_by_group.is_some() {
                "nodeGroup"
            } else if !action.moves_pods() {
                "later"
            } else if keys.iter().any(|k| planned.unmet.contains(k.as_str())) {
                "unmet"
            } else if keys.iter().all(|k| planned.placed.contains(k.as_str())) {
                "existingRoom"
            } else {
                "scaleUp"
            };
            replaced.outcomes.push((l.reason, outcome));
            let owners: HashSet<String> = (moved.iter())
                .filter_map(|&i| pods.get(i).controller.as_ref().map(|c| c.uid.clone()))
                .collect();
            let tracked = Tracked {
                since: now,
                reason: l.reason,
                owners: (!owners.is_empty()).then_some(owners),
            };
            self.tracked.insert(name.to_string(), tracked);
        }
        self.time_replacements(nodes, pods, now, &mut replaced);
        self.tracked.retain(|name, t| {
            let young = now.duration_since(t.since).unwrap_or_default() < FOLLOWED_AT_MOST;
            current.contains(name.as_str()) || (t.owners.is_some() && young)
        });
        replaced
    }

    /// The followed nodes none of whose moved pods is on it or pending any more: their replacement's time.
    fn time_replacements(
        &mut self,
        nodes: &[Arc<Node>],
        pods: PodList<'_>,
        now: SystemTime,
        replaced: &mut LeavingReplaced,
    ) {
        let followed: HashSet<&str> = (self.tracked.iter())
            .filter(|(_, t)| t.owners.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        if followed.is_empty() {
            return;
        }
        let present: HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let mut still_on: HashSet<&str> = HashSet::new();
        let mut pending_owners: HashSet<&str> = HashSet::new();
        for pod in pods.iter() {
            match pod.node_name.as_deref() {
                Some(n) if followed.contains(n) && moves(pod) => {
                    still_on.insert(n);
                }
                None if pod.deleted.is_none() && pod.phase != crate::model::Phase::Terminal => {
                    if let Some(c) = &pod.controller {
                        pending_owners.insert(c.uid.as_str());
                    }
                }
                _ => {}
            }
        }
        let mut done = Vec::new();
        for (name, t) in &self.tracked {
            let Some(owners) = &t.owners else { continue };
            let on_node = present.contains(name.as_str()) && still_on.contains(name.as_str());
            if on_node || owners.iter().any(|o| pending_owners.contains(o.as_str())) {
                continue;
            }
            let seconds = now
                .duration_since(t.since)
                .unwrap_or_default()
                .as_secs_f64();
            replaced.seconds.push((t.reason, seconds));
            done.push(name.clone());
        }
        for name in done {
            if let Some(t) = self.tracked.get_mut(&name) {
                t.owners = None;
            }
        }
    }
}
