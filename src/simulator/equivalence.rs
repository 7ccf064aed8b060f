//! Equivalence groups: pending pods the estimator cannot tell apart, so that predicates run once per group
//! and packing moves whole groups at a time.
//!
//! cluster-autoscaler groups by controller and a deep comparison of the spec (at most 10 groups per
//! controller, pods without a controller alone). We group by exactly what the predicates and the packing
//! read (namespace, labels, demand, priority and the scheduling constraints), so identical pods from
//! different controllers, or with no controller, share a group too.

use crate::model::{FastMap, LabelProjection, Pod, PodList, SchedulingIds};

/// Pods that schedule identically. `pods` index the pod list they were grouped from; the first is the
/// exemplar that the predicates are run on.
#[derive(Clone, Debug)]
pub struct EquivalenceGroup {
    pub pods: Vec<usize>,
}

impl EquivalenceGroup {
    pub fn exemplar<'a>(&self, pods: impl Into<PodList<'a>>) -> &'a Pod {
        pods.into().get(self.pods[0])
    }
}

/// Groups `members` (indices into `pods`), keeping the order in which each group first appears, then
/// ordering groups by priority, highest first, as cluster-autoscaler tries pods. Labels count as far as
/// `projection` keeps them.
pub fn group_pods<'a>(
    pods: impl Into<PodList<'a>>,
    members: impl IntoIterator<Item = usize>,
    projection: &LabelProjection,
) -> Vec<EquivalenceGroup> {
    let pods = pods.into();
    let mut ids = SchedulingIds::default();
    group_pods_by(pods, members, |i| {
        pods.get(i).equivalence_key(projection, &mut ids)
    })
}

/// Groups `members` as [`group`] does, by a key `key_of` gives each (one that stands for the equivalence
/// key: the removal simulation keeps a number per pod).
pub fn group_pods_by<'a, K: Clone + Eq + std::hash::Hash>(
    pods: impl Into<PodList<'a>>,
    members: impl IntoIterator<Item = usize>,
    mut key_of: impl FnMut(usize) -> K,
) -> Vec<EquivalenceGroup> {
    let pods = pods.into();
    let mut index = FastMap::default();
    let mut groups: Vec<EquivalenceGroup> = Vec::new();
    // Pods of one workload come in a row: a pod like the one before joins its group without a lookup.
    let mut last: Option<(K, usize)> = None;
    for i in members {
        let key = key_of(i);
        let slot = match &last {
            Some((previous, slot)) if *previous == key => *slot,
            _ => {
                let slot = *index.entry(key.clone()).or_insert_with(|| {
                    groups.push(EquivalenceGroup { pods: Vec::new() });
                    groups.len() - 1
                });
                last = Some((key, slot));
                slot
            }
        };
        groups[slot].pods.push(i);
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.exemplar(pods).priority.unwrap_or(0)));
    groups
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{Resources, Scheduling};
    use std::sync::Arc;

    pub(crate) fn pod(name: &str, app: &str, cpu: u64) -> Pod {
        let demand = Resources {
            cpu_millis: cpu,
            pods: 1,
            ..Default::default()
        };
        Pod {
            labels: [("app".to_string(), app.to_string())].into(),
            ..Pod::pending("default", name, demand)
        }
    }

    #[test]
    fn identical_pods_share_a_group_whatever_their_names() {
        let mut pods = vec![
            pod("a-1", "a", 100),
            pod("b-1", "b", 100),
            pod("a-2", "a", 100),
            pod("a-big", "a", 200),
        ];
        pods.push(Pod {
            priority: Some(100),
            ..pod("urgent", "a", 100)
        });
        let groups = group_pods(&pods, 0..pods.len(), &LabelProjection::All);
        let names: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.pods.iter().map(|&i| pods[i].name.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            [
                vec!["urgent"],
                vec!["a-1", "a-2"],
                vec!["b-1"],
                vec!["a-big"]
            ]
        );
    }

    #[test]
    fn labels_no_selector_reads_do_not_split_groups() {
        let pods: Vec<Pod> = (0..100)
            .map(|i| pod(&format!("job-{i}"), &format!("index-{i}"), 100))
            .collect();
        let nothing_selects = LabelProjection::of(&pods, []);
        assert_eq!(group_pods(&pods, 0..100, &nothing_selects).len(), 1);
        // A running pod that selects on `app` anywhere makes every value of it count.
        let mut guard = pod("guard", "guard", 100);
        guard.node_name = Some("node".into());
        guard.scheduling = Arc::new(Scheduling {
            anti_affinity: vec![crate::model::PodAffinityTerm {
                selector: crate::model::LabelSelector {
                    match_labels: [("app".to_string(), "index-7".to_string())].into(),
                    expressions: Vec::new(),
                },
                namespaces: None,
                topology_key: "kubernetes.io/hostname".into(),
            }],
            ..Default::default()
        });
        let all: Vec<&Pod> = pods.iter().chain([&guard]).collect();
        let app_selected = LabelProjection::of(all, []);
        assert_eq!(app_selected, LabelProjection::Keys(vec!["app".into()]));
        assert_eq!(group_pods(&pods, 0..100, &app_selected).len(), 100);
    }

    #[test]
    fn labels_read_in_some_namespaces_split_groups_there_alone() {
        // A Fargate profile takes namespace `serverless` pods labelled `compute: fargate`.
        let labelled = |namespace: &str, name: &str, compute: &str| Pod {
            labels: [("compute".to_string(), compute.to_string())].into(),
            ..Pod::pending(namespace, name, pod(name, "a", 100).demand)
        };
        let pods = vec![
            labelled("default", "d-1", "fargate"),
            labelled("default", "d-2", "ec2"),
            labelled("serverless", "s-1", "fargate"),
            labelled("serverless", "s-2", "ec2"),
        ];
        let scoped = LabelProjection::of(&pods, []).scoped(
            ["compute".to_string()].into(),
            ["serverless".to_string()].into(),
        );
        let groups = group_pods(&pods, 0..4, &scoped);
        let members: Vec<&[usize]> = groups.iter().map(|g| g.pods.as_slice()).collect();
        assert_eq!(members, [&[0, 1][..], &[2], &[3]]);
        // Read everywhere, the label splits `default` too.
        let everywhere = LabelProjection::of(&pods, ["compute".to_string()]);
        assert_eq!(group_pods(&pods, 0..4, &everywhere).len(), 4);
    }

    #[test]
    fn constraints_split_groups() {
        let mut tolerant = pod("t", "a", 100);
        tolerant.scheduling = Arc::new(Scheduling {
            node_selector: [("team".to_string(), "web".to_string())].into(),
            ..Default::default()
        });
        let pods = vec![pod("p", "a", 100), tolerant];
        assert_eq!(group_pods(&pods, 0..2, &LabelProjection::All).len(), 2);
    }
}
