//! Cluster and node group health, as cluster-autoscaler's cluster state registry judges it. A node is unready
//! when it is not Ready and older than `--max-node-startup-time` (a younger one is still starting). The
//! cluster is unhealthy when more than `--ok-total-unready-count` nodes and more than
//! `--max-total-unready-percentage` of them are unready: then the loop neither scales up nor down and forgets
//! its unneeded timers, since a zone or network outage makes nodes look useless that are only unreachable. A
//! node group judged the same way over its own nodes is not scaled up: its new nodes would not turn Ready either.

use crate::autoscaler::group::Group;
use crate::autoscaler::settings::HealthSettings;
use crate::autoscaler::status::ClusterHealth;
use crate::model::Node;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Judges node readiness against the settings.
pub struct Judge {
    pub settings: HealthSettings,
    pub max_node_startup_time: Duration,
    pub now: SystemTime,
}

impl Judge {
    /// Ready, unready and still-starting counts of `nodes`.
    fn count<'a>(&self, nodes: impl Iterator<Item = &'a Arc<Node>>) -> ClusterHealth {
        let mut health = ClusterHealth::default();
        for node in nodes {
            if node.ready {
                health.ready_nodes += 1;
            } else if node.starting(self.now, self.max_node_startup_time) {
                health.not_started_nodes += 1;
            } else {
                health.unready_nodes += 1;
            }
        }
        health
    }

    /// Too many unready among `registered`: over the count and over the percentage.
    fn too_many(&self, unready: usize, registered: usize) -> bool {
        let share = self.settings.max_unready_percentage / 100.0 * registered as f64;
        unready > self.settings.ok_unready_count && unready as f64 > share
    }

    /// The whole cluster's health.
    pub fn cluster(&self, nodes: &[Arc<Node>]) -> ClusterHealth {
        let mut health = self.count(nodes.iter());
        if self.too_many(health.unready_nodes, nodes.len()) {
            health.healthy = false;
            health.reason = format!(
                "{} of {} nodes are unready (more than --ok-total-unready-count {} and \
                 --max-total-unready-percentage {}%): no scale-up, no scale-down until they recover",
                health.unready_nodes,
                nodes.len(),
                self.settings.ok_unready_count,
                self.settings.max_unready_percentage
            );
        }
        health
    }

    /// Marks the groups whose own nodes are mostly unready as not to be scaled up (a backoff or other reason
    /// already there stays).
    pub fn skip_unhealthy_groups(
        &self,
        groups: &mut [Group],
        nodes: &[Arc<Node>],
        node_group: &[Option<usize>],
    ) {
        let mut members: Vec<Vec<&Arc<Node>>> = vec![Vec::new(); groups.len()];
        for (node, g) in nodes.iter().zip(node_group) {
            if let Some(g) = *g {
                members[g].push(node);
            }
        }
        for (group, mine) in groups.iter_mut().zip(members) {
            let registered = mine.len();
            let unready = self.count(mine.into_iter()).unready_nodes;
            if group.skip.is_none() && self.too_many(unready, registered) {
                group.skip = Some(format!(
                    "not ready for scale-up: {unready} of its {registered} nodes are unready"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node `age` seconds old at `now`, not Ready.
    fn unready(name: &str, age: u64, now: SystemTime) -> Node {
        Node {
            name: name.into(),
            ready: false,
            created: Some(now - Duration::from_secs(age)),
            ..Default::default()
        }
    }

    /// The same, Ready.
    fn ready(name: &str, age: u64, now: SystemTime) -> Node {
        Node {
            ready: true,
            ..unready(name, age, now)
        }
    }

    fn judge(now: SystemTime) -> Judge {
        Judge {
            settings: HealthSettings::default(),
            max_node_startup_time: Duration::from_secs(900),
            now,
        }
    }

    #[test]
    fn unhealthy_takes_both_more_than_the_count_and_more_than_the_share() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let nodes = |up: usize, down: usize, starting: usize| {
            let mut all = Vec::new();
            all.extend((0..up).map(|i| ready(&format!("r{i}"), 3600, now)));
            all.extend((0..down).map(|i| unready(&format!("u{i}"), 3600, now)));
            all.extend((0..starting).map(|i| unready(&format!("s{i}"), 60, now)));
            all.into_iter().map(Arc::new).collect::<Vec<_>>()
        };
        // 4 of 8 unready: over 3 and over 45%.
        let health = judge(now).cluster(&nodes(4, 4, 0));
        assert!(!health.healthy);
        assert_eq!((health.ready_nodes, health.unready_nodes), (4, 4));
        assert!(
            health.reason.starts_with("4 of 8 nodes are unready"),
            "{health:?}"
        );
        // 3 of 4: over 45% but not over 3.
        assert!(judge(now).cluster(&nodes(1, 3, 0)).healthy);
        // 4 of 10: over 3 but not over 45%.
        assert!(judge(now).cluster(&nodes(6, 4, 0)).healthy);
        // Starting nodes are not unready.
        let health = judge(now).cluster(&nodes(2, 0, 6));
        assert!(health.healthy);
        assert_eq!(health.not_started_nodes, 6);
    }
}
