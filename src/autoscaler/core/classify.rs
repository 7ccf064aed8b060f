//! Pod classification and batching: which pods of a view scale-up is for, which Fargate takes, which hold
//! room where they are, and which are said and left (terminating, expendable, not yet tried by the scheduler,
//! DaemonSet copies, too young). Every pending pod is said somewhere.
//!
//! The one pass over every pod of a loop also takes what other stages read of all pods (the view check's
//! count, the DaemonSet pods, the constraints that select by label): each pass over tens of thousands of
//! pods is a cache miss a pod, and separate passes were a fifth of a 51,000-pod loop.

use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::status::NoScaleUp;
use crate::model::{FARGATE_SCHEDULER, Phase, Pod, PodList, Scheduling};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

/// The pods of a view, by what the loop does with them.
pub struct Sorted {
    /// Unschedulable, not expendable, not DaemonSet: what scale-up is for.
    pub to_help: Vec<usize>,
    /// Pending with the fargate-scheduler.
    pub fargate: Vec<usize>,
    /// On a node (or nominated to one) and not expendable: they hold room.
    pub bound: Vec<usize>,
    /// Pending pods nothing is done for, with why (every pending pod is said somewhere).
    pub said: Vec<NoScaleUp>,
    /// Every pod a DaemonSet runs, whatever its phase: the snapshot's DaemonSet exemplars come from them.
    pub daemonsets: Vec<usize>,
    /// Pods on a node, DaemonSet pods aside: what the view check counts.
    pub on_nodes: usize,
    /// A pod for each distinct set of scheduling constraints that selects pods by label (pod affinity,
    /// anti-affinity, topology spread), whatever its phase: the label projection reads their selectors.
    pub selecting: Vec<usize>,
}

/// Says why nothing is done for a pending pod, for every node group.
fn unhelped(pod: &Pod, why: String) -> NoScaleUp {
    NoScaleUp {
        pod: pod.key(),
        reasons: BTreeMap::from([(String::new(), why)]),
    }
}

pub fn sort_pods<S: std::hash::BuildHasher>(
    pods: PodList<'_>,
    nodes: &HashSet<&str, S>,
    cutoff: i32,
) -> Sorted {
    let mut sorted = Sorted {
        to_help: Vec::new(),
        fargate: Vec::new(),
        // Most pods are bound: the list is made at its size, not grown through a million pushes.
        bound: Vec::with_capacity(pods.len()),
        said: Vec::new(),
        daemonsets: Vec::new(),
        on_nodes: 0,
        selecting: Vec::new(),
    };
    // Pods of one workload come in a row and share their constraints: a pod like the one before costs no
    // lookup.
    let mut last: *const Scheduling = std::ptr::null();
    let mut seen: HashSet<*const Scheduling> = HashSet::new();
    for (i, pod) in pods.iter().enumerate() {
        let daemonset = pod.daemonset();
        if daemonset {
            sorted.daemonsets.push(i);
        } else if pod.node_name.is_some() {
            sorted.on_nodes += 1;
        }
        let scheduling = std::sync::Arc::as_ptr(&pod.scheduling);
        if scheduling != last {
            last = scheduling;
            if pod.scheduling.selects_pods() && seen.insert(scheduling) {
                sorted.selecting.push(i);
            }
        }
        if pod.phase == Phase::Terminal {
            continue;
        }
        if pod.node_name.is_some() {
            if !pod.expendable(cutoff) {
                sorted.bound.push(i);
            }
            continue;
        }
        // Every pending pod is said somewhere: those nothing is done for, here, with why.
        if pod.deleted.is_some() {
            let why = "terminating: it is being deleted".into();
            sorted.said.push(unhelped(pod, why));
            continue;
        }
        if pod.scheduler_name == FARGATE_SCHEDULER {
            sorted.fargate.push(i);
        } else if pod
            .nominated_node
            .as_deref()
            .is_some_and(|n| nodes.contains(n))
            && !pod.expendable(cutoff)
        {
            // Nominated to a node that exists: the scheduler will bind it there. A nomination to a node
            // that is gone is no promise; the pod is pending like any other.
            sorted.bound.push(i);
        } else if pod.expendable(cutoff) {
            // Ignored, as documented (and as upstream does): its room is free and it never asks for a node.
        } else if !pod.unschedulable {
            // Said, because a hand-written snapshot often lacks the condition and silence would puzzle.
            let why = "the scheduler has not marked it Unschedulable (PodScheduled=False, reason \
                       Unschedulable): nothing to do until it has tried";
            sorted.said.push(unhelped(pod, why.into()));
        } else if daemonset {
            let why = "DaemonSet pod: a new node would run its own copy, not this one";
            sorted.said.push(unhelped(pod, why.into()));
        } else {
            sorted.to_help.push(i);
        }
    }
    sorted
}

/// The pods old enough to scale up for; the others are said with their delay.
pub fn old_enough(
    pods: PodList<'_>,
    candidates: Vec<usize>,
    new_pod_scale_up_delay: Duration,
    now: SystemTime,
) -> (Vec<usize>, Vec<NoScaleUp>) {
    let mut kept = Vec::with_capacity(candidates.len());
    let mut young = Vec::new();
    for i in candidates {
        let pod = &pods[i];
        let delay = pod
            .scale_up_delay
            .map_or(new_pod_scale_up_delay, |d| d.max(new_pod_scale_up_delay));
        if age(pod, now) >= delay {
            kept.push(i);
        } else {
            let why = format!(
                "younger than its scale-up delay ({}; --new-pod-scale-up-delay or the \
                 cluster-autoscaler.kubernetes.io/pod-scale-up-delay annotation)",
                humantime::format_duration(delay)
            );
            young.push(unhelped(pod, why));
        }
    }
    (kept, young)
}

/// How long ago the pod was created (forever if unknown).
fn age(pod: &Pod, now: SystemTime) -> Duration {
    pod.created.map_or(Duration::MAX, |c| {
        now.duration_since(c).unwrap_or(Duration::ZERO)
    })
}

/// Upstream's batching of new pods: why to wait this loop, if the oldest pod that needs a new node is
/// under 2 s old, or the oldest such GPU pod under 30 s (device plugins make GPU nodes slow to be useful).
pub fn batching(pending: &Pending, now: SystemTime) -> Option<String> {
    let waiting = || {
        pending
            .groups
            .iter()
            .enumerate()
            .flat_map(|(e, eg)| eg.pods[pending.done[e]..].iter().map(|&p| &pending.pods[p]))
    };
    let oldest = waiting().map(|p| age(p, now)).max()?;
    if oldest < Duration::from_secs(2) {
        return Some("waiting for more pods: every pod that needs a node is under 2s old".into());
    }
    let oldest_gpu = waiting()
        .filter(|p| p.wants_gpu())
        .map(|p| age(p, now))
        .max();
    if oldest_gpu.is_some_and(|a| a < Duration::from_secs(30)) {
        return Some(
            "waiting for more pods: every GPU pod that needs a node is under 30s old".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Controller, LabelSelector, PodAffinityTerm, Resources};
    use std::sync::Arc;

    fn on(node: &str, pod: Pod) -> Pod {
        Pod {
            node_name: Some(node.into()),
            phase: Phase::Running,
            unschedulable: false,
            ..pod
        }
    }

    fn run_by(kind: &str, pod: Pod) -> Pod {
        let controller = Arc::new(Controller {
            kind: kind.into(),
            name: "owner".into(),
            uid: format!("uid-{kind}"),
        });
        Pod {
            controller: Some(controller),
            ..pod
        }
    }

    #[test]
    fn one_pass_counts_what_the_other_stages_read_of_every_pod() {
        let pod = |name: &str| Pod::pending("default", name, Resources::default());
        let apart = Arc::new(Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: LabelSelector {
                    match_labels: [("app".to_string(), "web".to_string())].into(),
                    expressions: Vec::new(),
                },
                namespaces: None,
                topology_key: "kubernetes.io/hostname".into(),
            }],
            ..Default::default()
        });
        // An equal value in another allocation: told apart by pointer, so it is read again (harmless).
        let apart_too = Arc::new((*apart).clone());
        let selecting = |pod: Pod, scheduling: &Arc<Scheduling>| Pod {
            scheduling: scheduling.clone(),
            ..pod
        };
        let pods = vec![
            on("n1", pod("running")),
            on("n1", run_by("DaemonSet", pod("ds-running"))),
            run_by("DaemonSet", pod("ds-pending")),
            Pod {
                phase: Phase::Terminal,
                ..on("n2", run_by("DaemonSet", pod("ds-done")))
            },
            Pod {
                phase: Phase::Terminal,
                ..selecting(on("n2", pod("done-selecting")), &apart)
            },
            selecting(pod("pending-selecting"), &apart),
            selecting(pod("again"), &apart),
            selecting(pod("elsewhere"), &apart_too),
            run_by("ReplicaSet", pod("pending")),
            selecting(pod("back"), &apart),
        ];
        let nodes: HashSet<&str> = ["n1", "n2"].into();
        let sorted = sort_pods((&pods).into(), &nodes, -10);
        // DaemonSet pods whatever their phase; pods on nodes (a finished one too) without them.
        assert_eq!(sorted.daemonsets, [1, 2, 3]);
        assert_eq!(sorted.on_nodes, 2);
        // The first pod of each distinct allocation of constraints that select pods, a finished one's too;
        // an allocation met again after another is not read again.
        assert_eq!(sorted.selecting, [4, 7]);
        assert_eq!(sorted.bound, [0, 1]);
        assert_eq!(sorted.to_help, [5, 6, 7, 8, 9]);
        let said: Vec<&str> = sorted.said.iter().map(|s| s.pod.as_str()).collect();
        assert_eq!(said, ["default/ds-pending"]);
    }
}
