//! Node groups whose estimates are one: a cluster with a node group per team and zone has dozens of one
//! shape, and estimating each of them for the same pods repeated the whole estimate per group. Groups whose
//! templates schedule alike for the pods at hand (the same room, taints, DaemonSet ports and the labels the
//! pods or a topology term read), with as many nodes per zone and the same limit, pack the same pods the same
//! way: one is estimated and the others adopt its estimate, their own template nodes put in. Zones are such a
//! label: groups of one shape in different zones (EKS's node group per availability zone) are alike for pods
//! no zonal term, selector or spread reads.

use crate::autoscaler::group::Group;
use crate::autoscaler::scaleup::estimator::Estimate;
use crate::model::Pod;
use crate::model::node::HOSTNAME_LABEL;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::Arc;

/// What an estimate of `group` for `pods` (the members' exemplars, in order) depends on besides the pods:
/// equal keys, equal estimates. The labels compared are those the pods read and every topology key (the
/// estimate's counts are kept by domain, and committed). A pod that names nodes (`matchFields` on the node's
/// name) keeps its groups apart.
pub fn key(
    group: &Group,
    index: usize,
    zone_nodes: &[u64],
    pods: &[&Pod],
    limit: u64,
    topology_keys: &[String],
) -> String {
    let mut read: BTreeSet<&str> = topology_keys.iter().map(String::as_str).collect();
    let mut by_name = false;
    for pod in pods {
        let s = &pod.scheduling;
        read.extend(s.node_selector.keys().map(String::as_str));
        for term in s.node_affinity.iter().flat_map(|a| &a.terms) {
            read.extend(term.expressions.iter().map(|r| r.key.as_str()));
            by_name |= !term.fields.is_empty();
        }
        let terms = s.affinity.iter().chain(&s.anti_affinity);
        read.extend(terms.map(|t| t.topology_key.as_str()));
        read.extend(s.spread.iter().map(|c| c.topology_key.as_str()));
    }
    // Every new node is a hostname domain of its own, whatever its template's hostname label says.
    read.remove(HOSTNAME_LABEL);
    let mut key = format!("{limit} {zone_nodes:?}");
    if by_name {
        let _ = write!(key, " group {index}");
    }
    for t in group.templates() {
        let node = &t.node;
        let labels: Vec<Option<&String>> = read.iter().map(|k| node.labels.get(*k)).collect();
        let _ = write!(
            key,
            " [{:?} {:?} {:?} {:?} {:?} {:?} {labels:?} {}]",
            t.free,
            t.free_extended,
            node.allocatable,
            node.extended,
            node.taints,
            t.ports,
            t.accepts
        );
    }
    key
}

/// `estimate`, made for `from`, as `to`'s own (the groups' keys are equal): each new node becomes `to`'s
/// template of the same zone, and is `to`'s.
pub fn adopt(estimate: &Estimate, from: &Group, to: &Group, to_index: usize) -> Estimate {
    let mut adopted = estimate.clone();
    for place in &mut adopted.nodes {
        let zone = (from.templates().iter())
            .position(|t| Arc::ptr_eq(&t.node, &place.node))
            .expect("an estimate's nodes are copies of its group's templates");
        place.node = to.templates()[zone].node.clone();
        place.group = Some(to_index);
    }
    adopted
}
