//! kube-scheduler's filters written out plainly: what the tests that hold the estimator and the scale-down
//! planner to an exhaustive search, and the simulated cluster's scheduler, ask whether a pod fits. Slow on
//! purpose (every question reads every pod of the cluster), so that it shares no index, count or shortcut
//! with what it checks; only the model's types are common.

use crate::model::{
    HostPort, LabelSelector, Labels, Node, NodeSelector, Operator, Pod, PodAffinityTerm,
    Requirement, Taint, TaintEffect, Toleration,
};

/// The nodes there are and where each pod runs (an index into `nodes`).
pub(crate) struct Cluster<'a> {
    pub(crate) nodes: Vec<&'a Node>,
    pub(crate) pods: Vec<(&'a Pod, usize)>,
}

/// Whether kube-scheduler would bind `pod` to `nodes[node]` now; when not, the filter that refuses it.
pub(crate) fn admits(cluster: &Cluster, pod: &Pod, node: usize) -> Result<(), &'static str> {
    let n = cluster.nodes[node];
    if !n.ready || n.unschedulable {
        return Err("NodeUnschedulable");
    }
    if !node_selected(pod, n) {
        return Err("NodeAffinity");
    }
    if !tolerated(&n.taints, &pod.scheduling.tolerations) {
        return Err("TaintToleration");
    }
    if !room(cluster, pod, node) {
        return Err("NodeResourcesFit");
    }
    let on_node = || cluster.pods.iter().filter(|(_, at)| *at == node);
    let ports = &pod.scheduling.host_ports;
    if on_node().any(|(other, _)| {
        (other.scheduling.host_ports.iter()).any(|p| ports.iter().any(|q| ports_clash(p, q)))
    }) {
        return Err("NodePorts");
    }
    if !affinity_holds(cluster, pod, n) {
        return Err("InterPodAffinity: affinity");
    }
    if !anti_affinity_holds(cluster, pod, n) {
        return Err("InterPodAffinity: anti-affinity");
    }
    if !spread_holds(cluster, pod, n) {
        return Err("PodTopologySpread");
    }
    Ok(())
}

/// nodeSelector (every label equal) and required node affinity (any term, each requirement of it).
fn node_selected(pod: &Pod, node: &Node) -> bool {
    let s = &pod.scheduling;
    (s.node_selector.iter()).all(|(k, v)| node.labels.get(k) == Some(v))
        && s.node_affinity
            .as_ref()
            .is_none_or(|a| node_affinity(a, node))
}

pub(crate) fn node_affinity(affinity: &NodeSelector, node: &Node) -> bool {
    affinity.terms.iter().any(|term| {
        let name = Labels::from([("metadata.name".to_string(), node.name.clone())]);
        !(term.expressions.is_empty() && term.fields.is_empty())
            && term
                .expressions
                .iter()
                .all(|r| requirement(r, &node.labels))
            && term.fields.iter().all(|r| requirement(r, &name))
    })
}

fn requirement(r: &Requirement, labels: &Labels) -> bool {
    let value = labels.get(&r.key);
    let int = |v: &String| v.parse::<i64>().ok();
    let bound = r.values.first().and_then(int);
    match r.operator {
        Operator::In => value.is_some_and(|v| r.values.contains(v)),
        Operator::NotIn => !value.is_some_and(|v| r.values.contains(v)),
        Operator::Exists => value.is_some(),
        Operator::DoesNotExist => value.is_none(),
        Operator::Gt => matches!((value.and_then(int), bound), (Some(a), Some(b)) if a > b),
        Operator::Lt => matches!((value.and_then(int), bound), (Some(a), Some(b)) if a < b),
    }
}

fn selects(selector: &LabelSelector, labels: &Labels) -> bool {
    (selector.match_labels.iter()).all(|(k, v)| labels.get(k) == Some(v))
        && selector.expressions.iter().all(|r| requirement(r, labels))
}

/// Every NoSchedule and NoExecute taint has a toleration (PreferNoSchedule only steers).
fn tolerated(taints: &[Taint], tolerations: &[Toleration]) -> bool {
    let tolerates = |t: &Toleration, taint: &Taint| {
        t.effect.is_none_or(|e| e == taint.effect)
            && match &t.key {
                None => t.exists,
                Some(key) => key == &taint.key && (t.exists || t.value == taint.value),
            }
    };
    taints.iter().all(|taint| {
        taint.effect == TaintEffect::PreferNoSchedule
            || tolerations.iter().any(|t| tolerates(t, taint))
    })
}

/// The pod's requests and those of the pods on the node within its allocatable, resource by resource, for
/// each resource the pod requests (NodeResourcesFit's `fitsRequest`: a resource the pod does not ask for is
/// not checked, so a node's devices serving its pods' `nvidia.com/gpu` through DRA do not refuse a pod that
/// asks for none), and the pod count always.
fn room(cluster: &Cluster, pod: &Pod, node: usize) -> bool {
    let n = cluster.nodes[node];
    let on: Vec<&Pod> = (cluster.pods.iter())
        .filter(|(_, at)| *at == node)
        .map(|(p, _)| *p)
        .collect();
    let fits = |f: fn(&Pod) -> u64, allocatable: u64| {
        f(pod) == 0 || on.iter().map(|p| f(p)).sum::<u64>() + f(pod) <= allocatable
    };
    let a = &n.allocatable;
    fits(|p| p.demand.cpu_millis, a.cpu_millis)
        && fits(|p| p.demand.memory_bytes, a.memory_bytes)
        && fits(
            |p| p.demand.ephemeral_storage_bytes,
            a.ephemeral_storage_bytes,
        )
        && on.iter().map(|p| p.demand.pods).sum::<u64>() + pod.demand.pods <= a.pods
        && fits(|p| p.demand.gpus, a.gpus)
        && pod.extended.iter().all(|(name, want)| {
            let taken: u64 = on.iter().filter_map(|p| p.extended.get(name)).sum();
            *want == 0 || taken + want <= n.extended.get(name).copied().unwrap_or(0)
        })
}

fn ports_clash(a: &HostPort, b: &HostPort) -> bool {
    let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
    a.protocol == b.protocol && a.port == b.port && (any(&a.ip) || any(&b.ip) || a.ip == b.ip)
}

/// Whether the term (of a pod in `namespace`) selects `other`.
fn term_selects(term: &PodAffinityTerm, namespace: &str, other: &Pod) -> bool {
    let namespaces = match &term.namespaces {
        None => true,
        Some(list) if list.is_empty() => *other.namespace == *namespace,
        Some(list) => list.iter().any(|n| **n == *other.namespace),
    };
    namespaces && selects(&term.selector, &other.labels)
}

/// Required pod affinity, as kube-scheduler's InterPodAffinity filter: a pod counts as a partner only if it
/// matches every term; the node must carry every term's key, and each term's domain there must hold a
/// partner. A pod that no pod anywhere matches, but that matches its own terms, may go first.
fn affinity_holds(cluster: &Cluster, pod: &Pod, node: &Node) -> bool {
    let terms = &pod.scheduling.affinity;
    if terms.is_empty() {
        return true;
    }
    let ns = &pod.namespace;
    let partner = |other: &Pod| terms.iter().all(|t| term_selects(t, ns, other));
    let mut any_partner = false;
    let mut every_domain = true;
    for term in terms {
        let Some(value) = node.labels.get(&term.topology_key) else {
            return false;
        };
        let mut here = false;
        for (other, at) in &cluster.pods {
            let labels = &cluster.nodes[*at].labels;
            if partner(other) && labels.contains_key(&term.topology_key) {
                any_partner = true;
                here |= labels.get(&term.topology_key) == Some(value);
            }
        }
        every_domain &= here;
    }
    every_domain || (!any_partner && partner(pod))
}

/// Required anti-affinity both ways: the pod's own terms refuse a domain holding a pod they select, and a
/// pod already placed refuses the pod in its own domain when one of its terms selects it. A node without
/// the term's key is in no domain of it.
fn anti_affinity_holds(cluster: &Cluster, pod: &Pod, node: &Node) -> bool {
    let same_domain = |key: &str, at: usize| {
        let there = cluster.nodes[at].labels.get(key);
        there.is_some() && there == node.labels.get(key)
    };
    cluster.pods.iter().all(|(other, at)| {
        let mine = (pod.scheduling.anti_affinity.iter())
            .any(|t| term_selects(t, &pod.namespace, other) && same_domain(&t.topology_key, *at));
        let theirs = (other.scheduling.anti_affinity.iter())
            .any(|t| term_selects(t, &other.namespace, pod) && same_domain(&t.topology_key, *at));
        !mine && !theirs
    })
}

/// Topology spread, DoNotSchedule: the node must carry the key; the domains are the values of the nodes that
/// carry every key of the pod's constraints (and, as the policies say, pass its node affinity and tolerate
/// its taints); pods counted are the pod's namespace's, not terminating, that the selector matches. Placing
/// the pod must leave its domain at most `max_skew` above the least populated domain (0 with fewer than
/// `min_domains` domains).
fn spread_holds(cluster: &Cluster, pod: &Pod, node: &Node) -> bool {
    let constraints = &pod.scheduling.spread;
    let keys_all = |n: &Node| {
        constraints
            .iter()
            .all(|c| n.labels.contains_key(&c.topology_key))
    };
    constraints.iter().all(|c| {
        let Some(value) = node.labels.get(&c.topology_key) else {
            return false;
        };
        let eligible = |n: &Node| {
            keys_all(n)
                && (!c.honor_node_affinity || node_selected(pod, n))
                && (!c.honor_node_taints || tolerated(&n.taints, &pod.scheduling.tolerations))
        };
        let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
        for n in cluster.nodes.iter().filter(|n| eligible(n)) {
            counts
                .entry(n.labels[&c.topology_key].as_str())
                .or_default();
        }
        for (other, at) in &cluster.pods {
            let n = cluster.nodes[*at];
            if eligible(n)
                && other.namespace == pod.namespace
                && other.deleted.is_none()
                && selects(&c.selector, &other.labels)
            {
                *counts
                    .entry(n.labels[&c.topology_key].as_str())
                    .or_default() += 1;
            }
        }
        let min = if (counts.len() as u32) < c.min_domains {
            0
        } else {
            counts.values().copied().min().unwrap_or(0)
        };
        let here = counts.get(value.as_str()).copied().unwrap_or(0);
        let own = u64::from(selects(&c.selector, &pod.labels));
        here + own <= min + u64::from(c.max_skew)
    })
}
