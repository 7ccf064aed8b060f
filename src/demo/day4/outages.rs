//! Each pod's time without a node when its node goes away: from the moment its node was first seen leaving
//! (a Spot interruption's warning, a rebalance recommendation, a scheduled event, the monitoring agent's
//! problem) to the first loop that sees it running on a node that is not leaving. Read from what the
//! simulated EKS says (its leaving instances) and the simulated cluster's nodes, not from the companion, so
//! the measure is the same whether the companion handles leaving nodes or ignores them.

use crate::autoscaler::ClusterView;
use crate::model::{FARGATE_SCHEDULER, LeavingInstance, LeavingReason, NODE_GROUP_LABEL, Node};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

/// A node seen leaving: since when, why, and when it goes (the warning's deadline), in simulated time.
#[derive(Clone, Debug)]
struct Seen {
    since: Duration,
    reason: LeavingReason,
    deadline: Option<Duration>,
}

/// One pod's time without a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Outage {
    /// `namespace/name`.
    pub pod: String,
    /// The leaving node it ran on, and that node's group.
    pub node: String,
    pub node_group: String,
    pub reason: LeavingReason,
    /// When its node was first seen leaving.
    pub from: Duration,
    /// When its node goes, when the source said (a Spot interruption's deadline).
    pub deadline: Option<Duration>,
    /// The first loop that saw it off its node (evicted, or lost with the node).
    pub left: Option<Duration>,
    /// The first loop that saw it running on a node that is not leaving; `None`: not by the day's end.
    pub to: Option<Duration>,
}

impl Outage {
    /// Its time without a node, when it ended.
    pub fn time(&self) -> Option<Duration> {
        Some(self.to? - self.from)
    }

    /// Whether it ran elsewhere before its node's warning ended.
    pub fn before_deadline(&self) -> bool {
        matches!((self.to, self.deadline), (Some(to), Some(d)) if to < d)
    }

    /// Whether it stayed on its node until the node went (it left at or after the deadline).
    pub fn waited_for_the_node(&self) -> bool {
        matches!((self.left, self.deadline), (Some(left), Some(d)) if left >= d)
    }
}

/// The pods of leaving nodes, followed loop by loop.
#[derive(Debug, Default)]
pub struct Outages {
    seen: HashMap<String, Seen>,
    open: BTreeMap<String, Outage>,
    /// Ended, in the order they ended.
    pub done: Vec<Outage>,
    /// The nodes the monitoring agent marked unhealthy, with their group.
    pub unhealthy: BTreeSet<(String, String)>,
}

fn group_of(node: &Node) -> String {
    node.labels
        .get(NODE_GROUP_LABEL)
        .cloned()
        .unwrap_or_default()
}

impl Outages {
    /// Takes in one loop at `at` (the simulated wall clock reads `wall` then): the cluster's nodes and pods,
    /// and the instances the simulated EKS says are leaving.
    pub fn observe(
        &mut self,
        at: Duration,
        view: &ClusterView,
        leaving: &[LeavingInstance],
        wall: SystemTime,
    ) {
        let by_instance: HashMap<&str, &LeavingInstance> =
            leaving.iter().map(|l| (l.id.as_str(), l)).collect();
        let mut now_leaving: HashMap<&str, &Node> = HashMap::new();
        for node in view.nodes.iter() {
            let said = by_instance.get(node.provider_id.as_str());
            let (reason, deadline) = match said {
                Some(l) => {
                    let left = l.at.duration_since(wall).ok();
                    let deadline = (l.reason == LeavingReason::SpotInterruption)
                        .then(|| at + left.unwrap_or_default());
                    (l.reason, deadline)
                }
                None if !node.problems.is_empty() => {
                    self.unhealthy.insert((node.name.clone(), group_of(node)));
                    (LeavingReason::Unhealthy, None)
                }
                None => continue,
            };
            now_leaving.insert(node.name.as_str(), node);
            (self.seen.entry(node.name.clone())).or_insert(Seen {
                since: at,
                reason,
                deadline,
            });
        }
        for pod in view.pods.iter() {
            if pod.controller.is_none()
                || pod.daemonset()
                || pod.scheduler_name == FARGATE_SCHEDULER
            {
                continue;
            }
            let key = pod.key();
            match pod.node_name.as_deref() {
                Some(node) if now_leaving.contains_key(node) => {
                    if !self.open.contains_key(&key) {
                        let seen = &self.seen[node];
                        let outage = Outage {
                            pod: key.clone(),
                            node: node.to_string(),
                            node_group: group_of(now_leaving[node]),
                            reason: seen.reason,
                            from: seen.since,
                            deadline: seen.deadline,
                            left: None,
                            to: None,
                        };
                        self.open.insert(key, outage);
                    }
                }
                Some(_) => {
                    if let Some(mut outage) = self.open.remove(&key) {
                        outage.to = Some(at);
                        outage.left.get_or_insert(at);
                        self.done.push(outage);
                    }
                }
                None => {
                    if let Some(outage) = self.open.get_mut(&key) {
                        outage.left.get_or_insert(at);
                    }
                }
            }
        }
    }

    /// Every outage, ended or not (those still open last).
    pub fn all(&self) -> impl Iterator<Item = &Outage> {
        self.done.iter().chain(self.open.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Controller, Pod, PodNames, Resources};
    use std::sync::Arc;

    fn node(name: &str, id: &str) -> Arc<Node> {
        let mut node = Node {
            name: name.into(),
            provider_id: id.into(),
            ready: true,
            ..Node::default()
        };
        node.labels.insert(NODE_GROUP_LABEL.into(), "spot".into());
        Arc::new(node)
    }

    fn view(nodes: &[Arc<Node>], on: Option<&str>) -> ClusterView {
        let mut pod = Pod::pending("default", "web-0", Resources::default());
        pod.controller = Some(Arc::new(Controller {
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "u".into(),
        }));
        pod.node_name = on.map(Into::into);
        let pods = vec![pod];
        ClusterView {
            keys: PodNames::of(&pods).into(),
            nodes: nodes.to_vec(),
            pods: pods.into_iter().map(Arc::new).collect(),
            ..ClusterView::default()
        }
    }

    /// EC2's two-minute Spot warning for node `a`'s instance, as the provider lists it.
    fn spot_warning(wall: SystemTime) -> LeavingInstance {
        LeavingInstance {
            id: "i-a".into(),
            node_group: "spot".into(),
            reason: LeavingReason::SpotInterruption,
            at: wall + Duration::from_secs(120),
            detail: String::new(),
        }
    }

    #[test]
    fn a_pod_is_without_a_node_from_the_warning_to_running_on_a_node_that_stays() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let (a, b) = (node("a", "i-a"), node("b", "i-b"));
        let warning = [spot_warning(wall)];
        let mut outages = Outages::default();
        let t = Duration::from_secs;
        outages.observe(t(0), &view(std::slice::from_ref(&a), Some("a")), &[], wall);
        outages.observe(
            t(15),
            &view(std::slice::from_ref(&a), Some("a")),
            &warning,
            wall,
        );
        // Later loops see the same deadline from their own clock: it stays the first loop's.
        let later = wall + t(15);
        outages.observe(
            t(30),
            &view(std::slice::from_ref(&a), None),
            &warning,
            later,
        );
        assert!(outages.done.is_empty());
        outages.observe(t(105), &view(&[a, b], Some("b")), &warning, later);
        let [outage] = &outages.done[..] else {
            panic!("{:?}", outages.done)
        };
        assert_eq!(outage.pod, "default/web-0");
        assert_eq!(
            (outage.from, outage.left, outage.to),
            (t(15), Some(t(30)), Some(t(105)))
        );
        assert_eq!(outage.deadline, Some(t(135)));
        assert_eq!(outage.time(), Some(t(90)));
        assert!(outage.before_deadline() && !outage.waited_for_the_node());
    }

    #[test]
    fn a_pod_that_stays_until_its_node_goes_waited_for_it() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let (a, b) = (node("a", "i-a"), node("b", "i-b"));
        let warning = [spot_warning(wall)];
        let t = Duration::from_secs;
        let mut outages = Outages::default();
        outages.observe(
            t(0),
            &view(std::slice::from_ref(&a), Some("a")),
            &warning,
            wall,
        );
        outages.observe(t(120), &view(&[], None), &[], wall + t(120));
        outages.observe(t(225), &view(&[b], Some("b")), &[], wall + t(225));
        let outage = &outages.done[0];
        assert_eq!(outage.time(), Some(t(225)));
        assert!(outage.waited_for_the_node() && !outage.before_deadline());
    }
}
