//! Balancing similar node groups (cluster-autoscaler's `--balance-similar-node-groups`, its nodegroupset
//! processor): which groups are alike, and how a chosen estimate is spread over them.

use crate::autoscaler::group::Group;
use crate::autoscaler::scaleup::estimator::Estimate;
use crate::model::{HOSTNAME_LABEL, Pod, Resources, ZONE_LABEL};
use crate::simulator::Place;
use crate::simulator::{SharedClaims, claims_fit};
use std::collections::BTreeMap;

/// Labels that differ between otherwise identical groups (cluster-autoscaler's ignore list for AWS).
const BALANCE_IGNORED_LABELS: &[&str] = &[
    HOSTNAME_LABEL,
    ZONE_LABEL,
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
    "alpha.eksctl.io/instance-id",
    "alpha.eksctl.io/nodegroup-name",
    "eks.amazonaws.com/nodegroup",
    "k8s.amazonaws.com/eniConfig",
    "lifecycle",
    "topology.ebs.csi.aws.com/zone",
    "topology.k8s.aws/zone-id",
];

/// cluster-autoscaler's similarity: same capacity (memory within 1.5%), allocatable and free within 5%, and
/// the same labels apart from zone, hostname and node group names.
pub fn similar(a: &Place, b: &Place) -> bool {
    let within = |x: u64, y: u64, ratio: f64| {
        let (lo, hi) = (x.min(y) as f64, x.max(y) as f64);
        hi == 0.0 || (hi - lo) / hi <= ratio
    };
    let (ca, cb) = (a.node.capacity, b.node.capacity);
    let same_capacity = ca.cpu_millis == cb.cpu_millis
        && ca.gpus == cb.gpus
        && ca.pods == cb.pods
        && within(ca.memory_bytes, cb.memory_bytes, 0.015);
    let close = |x: &Resources, y: &Resources| {
        within(x.cpu_millis, y.cpu_millis, 0.05)
            && within(x.memory_bytes, y.memory_bytes, 0.05)
            && within(x.pods, y.pods, 0.05)
    };
    let labels = |p: &Place| {
        p.node
            .labels
            .iter()
            .filter(|(k, _)| !BALANCE_IGNORED_LABELS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    same_capacity
        && close(&a.node.allocatable, &b.node.allocatable)
        && close(&a.free, &b.free)
        && a.node.extended == b.node.extended
        && a.node.taints == b.node.taints
        && labels(a) == labels(b)
}

/// Whether a new node of `group` can allocate `pod`'s claims (in any of its zones). A similar group takes
/// part only where every pod group the estimate places is schedulable on it, which upstream checks with the
/// scheduler's filters, its DRA plugin among them: groups alike in size and labels may differ in devices.
pub(super) fn claims_fit_on(pod: &Pod, group: &Group) -> bool {
    let shared = SharedClaims::default();
    (group.templates().iter())
        .any(|t| claims_fit(pod, &t.node, t.devices.as_deref(), &shared).is_ok())
}

/// Spreads the chosen estimate over the chosen group and its similar groups: one node at a time to the
/// smallest, as cluster-autoscaler does, within each group's max size. `schedulable(e, gi)`: whether
/// equivalence group `e` is schedulable on group `gi`'s new nodes.
pub(super) fn balance(
    chosen: usize,
    estimate: &Estimate,
    members: &[usize],
    groups: &[Group],
    planned: &[u64],
    schedulable: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, u64)> {
    let Some(template) = &groups[chosen].template else {
        return vec![(chosen, estimate.node_count() as u64)];
    };
    let placed: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(k, _)| estimate.placed[*k] > 0)
        .map(|(_, &e)| e)
        .collect();
    let mut set: Vec<usize> = vec![chosen];
    for (gi, group) in groups.iter().enumerate() {
        if gi == chosen || group.skip.is_some() || group.zero_or_max {
            continue;
        }
        let Some(other) = &group.template else {
            continue;
        };
        if similar(template, other) && placed.iter().all(|&e| schedulable(e, gi)) {
            set.push(gi);
        }
    }
    let size = |gi: usize| i64::from(groups[gi].target_size) + planned[gi] as i64;
    let room = |gi: usize| (i64::from(groups[gi].max_size) - size(gi)).max(0) as u64;
    let mut given: BTreeMap<usize, u64> = set.iter().map(|&g| (g, 0)).collect();
    for _ in 0..estimate.node_count() {
        let next = set
            .iter()
            .copied()
            .filter(|&g| given[&g] < room(g))
            .min_by_key(|&g| (size(g) + given[&g] as i64, g != chosen));
        match next {
            Some(g) => *given.get_mut(&g).unwrap() += 1,
            None => break,
        }
    }
    let mut share: Vec<(usize, u64)> = given.into_iter().filter(|(_, n)| *n > 0).collect();
    // The chosen group first, so it is named as the expander's choice.
    share.sort_by_key(|(g, _)| *g != chosen);
    share
}
