//! Terminate-first rotations (Karpenter 1.15's terminate-first, kubernetes-sigs/karpenter #2905; EKS's update
//! strategy `MINIMAL`): a disrupted node whose group has no room to surge is drained and removed first, and
//! its group's replacement (IncreaseSize by one, so the group keeps its size) is asked in the loop that sees
//! it gone. A refused IncreaseSize is retried every loop, and said, until the provider takes it or the group
//! is back at its size by other means: a size change is never left half made. Until the new node is Ready
//! the rotation counts as a node of its group being disrupted, so the budgets let the next one start only
//! then.

use crate::model::Node;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long a rotation's new node is waited for once asked (`--max-node-provision-time`'s default, and its
/// startup): past it the rotation ends, and the group's health checks say the rest.
const NEW_NODE_PATIENCE: Duration = Duration::from_secs(20 * 60);

/// What follows a deletion once the node is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterDeletion {
    /// Nothing: the group is smaller by one.
    Nothing,
    /// Its group's replacement is asked: the node was terminated first.
    Replacement,
}

/// Where a rotation stands.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// The old node drains (a deletion in progress).
    Draining,
    /// The old node is gone; the replacement is to be asked until the group is back at `target`. The last
    /// refusal, if any.
    Owed {
        target: i32,
        refused: Option<String>,
    },
    /// The replacement was asked at `at`; it ends when a new node of the group is Ready.
    Asked { at: SystemTime },
}

#[derive(Clone, Debug)]
struct Rotation {
    group: String,
    /// The disruption's reason (`drifted`, `expired`, ...).
    reason: &'static str,
    stage: Stage,
}

/// A replacement owed this loop: the old node, its group, the reason, and the target to get back to.
#[derive(Clone, Debug)]
pub struct Owed {
    pub node: String,
    pub group: String,
    pub reason: &'static str,
    pub target: i32,
}

/// The rotations in progress, by old node.
#[derive(Debug, Default)]
pub struct Rotations {
    by_node: BTreeMap<String, Rotation>,
}

impl Rotations {
    /// A node terminated first begins to drain.
    pub fn start(&mut self, node: &str, group: &str, reason: &'static str) {
        let rotation = Rotation {
            group: group.to_string(),
            reason,
            stage: Stage::Draining,
        };
        self.by_node.insert(node.to_string(), rotation);
    }

    /// The node's deletion is done: its group, whose target was `target` with the node, is owed a new node.
    pub fn deleted(&mut self, node: &str, target: i32) {
        if let Some(r) = self.by_node.get_mut(node) {
            r.stage = Stage::Owed {
                target,
                refused: None,
            };
        }
    }

    /// The node's deletion was given up (it is back in service): nothing is owed.
    pub fn given_up(&mut self, node: &str) {
        self.by_node.remove(node);
    }

    /// The replacements owed now.
    pub fn owed(&self) -> Vec<Owed> {
        (self.by_node.iter())
            .filter_map(|(node, r)| match r.stage {
                Stage::Owed { target, .. } => Some(Owed {
                    node: node.clone(),
                    group: r.group.clone(),
                    reason: r.reason,
                    target,
                }),
                _ => None,
            })
            .collect()
    }

    /// The replacement of `node` was asked (or the group is back at its size already).
    pub fn asked(&mut self, node: &str, at: SystemTime) {
        if let Some(r) = self.by_node.get_mut(node) {
            r.stage = Stage::Asked { at };
        }
    }

    /// The provider refused the replacement of `node`: retried next loop.
    pub fn refused(&mut self, node: &str, why: String) {
        if let Some(Rotation {
            stage: Stage::Owed { refused, .. },
            ..
        }) = self.by_node.get_mut(node)
        {
            *refused = Some(why);
        }
    }

    /// Rotations of `group` whose old node is gone and whose new node is not Ready yet.
    pub fn disrupting(&self, group: &str) -> u64 {
        (self.by_node.values())
            .filter(|r| r.group == group && r.stage != Stage::Draining)
            .count() as u64
    }

    /// Rotations of `group` in progress, the draining ones included.
    pub fn in_progress(&self, group: &str) -> usize {
        self.by_node.values().filter(|r| r.group == group).count()
    }

    /// [`Rotations::in_progress`] of each of `groups`, in their order.
    pub fn in_progress_per<'g>(&self, groups: impl Iterator<Item = &'g str>) -> Vec<usize> {
        groups.map(|g| self.in_progress(g)).collect()
    }

    /// Ends the rotations whose new node is Ready: each asked one takes a Ready node of its group created
    /// since it was asked (`group_of` says a node's group), the earliest asked first; those waited for past
    /// their patience end too. Returns the old nodes whose rotation ended.
    pub fn settle(
        &mut self,
        nodes: &[Arc<Node>],
        group_of: impl Fn(&Node) -> Option<String>,
        now: SystemTime,
    ) -> Vec<String> {
        let mut asked: Vec<(SystemTime, String, String)> = (self.by_node.iter())
            .filter_map(|(node, r)| match r.stage {
                Stage::Asked { at } => Some((at, node.clone(), r.group.clone())),
                _ => None,
            })
            .collect();
        asked.sort();
        let mut fresh: Vec<(Option<String>, SystemTime)> = (nodes.iter())
            .filter(|n| n.ready)
            .filter_map(|n| Some((group_of(n), n.created?)))
            .collect();
        let mut ended = Vec::new();
        for (at, node, group) in asked {
            let taken = (fresh.iter())
                .position(|(g, created)| g.as_deref() == Some(group.as_str()) && *created >= at);
            let late = now.duration_since(at).unwrap_or_default() > NEW_NODE_PATIENCE;
            if let Some(i) = taken {
                fresh.remove(i);
            } else if !late {
                continue;
            }
            self.by_node.remove(&node);
            ended.push(node);
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, ready: bool, created: SystemTime) -> Arc<Node> {
        Arc::new(Node {
            name: name.into(),
            ready,
            created: Some(created),
            ..Node::default()
        })
    }

    #[test]
    fn a_rotation_is_owed_once_deleted_and_ends_with_a_ready_new_node() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut r = Rotations::default();
        r.start("old", "gpu", "drifted");
        assert!(r.owed().is_empty(), "nothing owed while it drains");
        assert_eq!((r.disrupting("gpu"), r.in_progress("gpu")), (0, 1));
        r.deleted("old", 2);
        let owed = r.owed();
        assert_eq!((owed[0].node.as_str(), owed[0].target), ("old", 2));
        assert_eq!(r.disrupting("gpu"), 1);
        r.refused("old", "throttled".into());
        assert_eq!(r.owed().len(), 1, "a refusal is retried");
        r.asked("old", now);
        let group = |_: &Node| Some("gpu".to_string());
        // A node of the group older than the ask is not the new one, nor is one not Ready.
        let before = node("a", true, now - Duration::from_secs(60));
        let starting = node("b", false, now + Duration::from_secs(30));
        let later = now + Duration::from_secs(60);
        assert!(
            r.settle(&[before.clone(), starting], group, later)
                .is_empty()
        );
        let ready = node("b", true, now + Duration::from_secs(30));
        assert_eq!(r.settle(&[before, ready], group, later), ["old"]);
        assert_eq!(r.in_progress("gpu"), 0);
    }

    #[test]
    fn a_new_node_that_never_comes_ends_the_rotation_after_its_patience() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut r = Rotations::default();
        r.start("old", "gpu", "expired");
        r.deleted("old", 1);
        r.asked("old", now);
        let group = |_: &Node| Some("gpu".to_string());
        assert!(r.settle(&[], group, now + NEW_NODE_PATIENCE).is_empty());
        let late = now + NEW_NODE_PATIENCE + Duration::from_secs(1);
        assert_eq!(r.settle(&[], group, late), ["old"]);
    }
}
