//! Node groups whose estimates are one: a cluster with a node group per team and zone has dozens of one
//! shape, and estimating each of them for the same pods repeated the whole estimate per group. Groups whose
//! templates schedule alike for the pods at hand (the same room, taints, DaemonSet ports and the labels the
//! pods or a topology term read), with as many nodes per zone and the same limit, pack the same pods the same
//! way: one is estimated and the others adopt its estimate, their own template nodes put in when one of them
//! is chosen. Zones are such a label: groups of one shape in different zones (EKS's node group per
//! availability zone) are alike for pods no zonal term, selector or spread reads. Devices are what the pods
//! read too: when some pod claims devices (DRA), groups are alike only if their new nodes publish the same
//! ones, so that two groups of one instance type, one with NVIDIA's GPUs and one with an FPGA, are estimated
//! each for itself.

use crate::autoscaler::group::Group;
use crate::model::{HOSTNAME_LABEL, Pod};
use crate::simulator::Place;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::Arc;

/// The node labels some pods' node selectors and node affinity read, whether any of them names nodes
/// (`matchFields` on the node's name), and whether any reads devices (claims them, or asks extended
/// resources devices may serve: a pod that does neither is placed alike whatever devices a node has).
pub struct Reads<'a> {
    labels: BTreeSet<&'a str>,
    by_name: bool,
    devices: bool,
}

impl<'a> Reads<'a> {
    pub fn of(pods: impl IntoIterator<Item = &'a Pod>) -> Reads<'a> {
        let mut reads = Reads {
            labels: BTreeSet::new(),
            by_name: false,
            devices: false,
        };
        for pod in pods {
            reads.devices |= pod.dra.is_some();
            let s = &pod.scheduling;
            reads
                .labels
                .extend(s.node_selector.keys().map(String::as_str));
            for term in s.node_affinity.iter().flat_map(|a| &a.terms) {
                reads
                    .labels
                    .extend(term.expressions.iter().map(|r| r.key.as_str()));
                reads.by_name |= !term.fields.is_empty();
            }
        }
        reads
    }
}

/// What a static check, and an estimate, of `group`'s templates reads for pods that read `reads`: equal
/// keys, equal answers for those pods. A pod that names nodes keeps every group apart; pods that read
/// devices keep groups apart whose templates publish different ones (cluster-autoscaler keeps a template
/// node's ResourceSlices with it, and its scheduler's DRA plugin reads them).
pub fn templates_key(group: &Group, index: usize, reads: &Reads) -> String {
    let mut key = String::new();
    if reads.by_name {
        let _ = write!(key, "group {index}");
    }
    for t in group.templates() {
        let node = &t.node;
        let labels: Vec<Option<&String>> =
            (reads.labels.iter()).map(|k| node.labels.get(*k)).collect();
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
        if reads.devices {
            let devices = t.devices.as_ref().map(|d| d.identity());
            let _ = write!(key, " {devices:?}");
        }
    }
    key
}

/// What an estimate of `group` depends on besides the pods: equal keys, equal estimates. `class` is its
/// static class ([`templates_key`] over what every pending pod reads), so alike groups have the same
/// members and templates; beyond it, an estimate reads the templates' domain for every topology key (its
/// counts are kept by domain, and committed), but not the hostname: every new node is a hostname domain of
/// its own whatever its template's hostname label says.
pub fn key(
    group: &Group,
    class: usize,
    zone_nodes: &[u64],
    limit: u64,
    topology_keys: &[String],
) -> String {
    let mut key = format!("{class} {limit} {zone_nodes:?}");
    let keys = topology_keys.iter().filter(|k| *k != HOSTNAME_LABEL);
    for t in group.templates() {
        let labels: Vec<Option<&String>> = keys.clone().map(|k| t.node.labels.get(k)).collect();
        let _ = write!(key, " {labels:?}");
    }
    key
}

/// An estimate's new nodes, made for `from`, as `to`'s own (the groups' keys are equal): each becomes
/// `to`'s template of the same zone.
pub fn adopt(nodes: &mut [Place], from: &Group, to: &Group) {
    for place in nodes {
        let zone = (from.templates().iter())
            .position(|t| Arc::ptr_eq(&t.node, &place.node))
            .expect("an estimate's nodes are copies of its group's templates");
        place.node = to.templates()[zone].node.clone();
    }
}
