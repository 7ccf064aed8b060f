//! What the estimator's tests share: nodes, pods and terms made plainly, estimates run a few ways.

use crate::autoscaler::scaleup::estimator::estimate::*;
use crate::autoscaler::scaleup::estimator::plan::*;
use crate::model::{
    HOSTNAME_LABEL, LabelSelector, Node, Pod, PodAffinityTerm, Resources, Scheduling, ZONE_LABEL,
};
use crate::simulator::topology::{Place, PlaceKind, PodTerms, Topology};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) const GI: u64 = 1 << 30;

pub(super) fn node(cpu: u64, mem_gi: u64, pods: u64) -> Arc<Node> {
    Arc::new(Node {
        name: "template".into(),
        labels: [
            (HOSTNAME_LABEL.to_string(), "template".to_string()),
            (ZONE_LABEL.to_string(), "us-east-1a".to_string()),
        ]
        .into(),
        allocatable: Resources {
            cpu_millis: cpu,
            memory_bytes: mem_gi * GI,
            pods,
            ..Default::default()
        },
        ready: true,
        ..Default::default()
    })
}

pub(super) fn pod(app: &str, cpu: u64, mem_mi: u64, scheduling: Scheduling) -> Pod {
    Pod {
        demand: Resources {
            cpu_millis: cpu,
            memory_bytes: mem_mi << 20,
            pods: 1,
            ..Default::default()
        },
        scheduling: Arc::new(scheduling),
        ..crate::simulator::equivalence::tests::pod(app, app, 0)
    }
}

/// A pod affinity (or anti-affinity) term on pods labelled `app: app` in `default`, per `key` domain.
pub(super) fn term(app: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: app_selector(app),
        namespaces: Some(vec!["default".into()]),
        topology_key: key.into(),
    }
}

/// `count` pods that ask for resources only.
pub(super) fn plain(app: &str, cpu: u64, mem_mi: u64, count: u64) -> (Pod, u64) {
    (pod(app, cpu, mem_mi, Scheduling::default()), count)
}

/// `groups` packed in `ordering` alone, onto at most 100 copies of `template`.
pub(super) fn alone(template: &Arc<Node>, groups: &[(Pod, u64)], ordering: Ordering) -> Estimate {
    run_with(template.clone(), groups, 100, 0, Some(ordering))
}

/// Packs `groups` (pod, count) onto copies of `template` with no other nodes around.
pub(super) fn run(template: Arc<Node>, groups: &[(Pod, u64)], max_nodes: u64) -> Estimate {
    run_beside(template, groups, max_nodes, 0)
}

/// The same beside `full` existing nodes like the template but with no room left.
pub(super) fn run_beside(
    template: Arc<Node>,
    groups: &[(Pod, u64)],
    max_nodes: u64,
    full: usize,
) -> Estimate {
    run_with(template, groups, max_nodes, full, None)
}

/// The same in one `ordering` only, or in the estimator's choice of them.
pub(super) fn run_with(
    template: Arc<Node>,
    groups: &[(Pod, u64)],
    max_nodes: u64,
    full: usize,
    ordering: Option<Ordering>,
) -> Estimate {
    let mut topology = Topology::default();
    for (p, _) in groups {
        topology.register(p);
    }
    let terms: Vec<PodTerms> = groups.iter().map(|(p, _)| topology.resolve(p)).collect();
    let existing: Vec<Place> = (0..full)
        .map(|_| {
            let mut place = topology.place(template.clone(), None, PlaceKind::Existing);
            place.free = Resources::default();
            place
        })
        .collect();
    let template = topology.place(template, Some(0), PlaceKind::Planned);
    let demands = demands(groups, &terms);
    let limits = EstimateLimits {
        max_nodes,
        deadline: None,
    };
    let templates = Templates::one(&template);
    match ordering {
        None => estimate(&topology, &existing, templates, &demands, limits),
        Some(o) => pack(&topology, &existing, templates, &demands, limits, o),
    }
}

/// Each (pod, count) with its terms, as the estimator takes them.
pub(super) fn demands<'a>(groups: &'a [(Pod, u64)], terms: &'a [PodTerms]) -> Vec<Demand<'a>> {
    groups
        .iter()
        .zip(terms)
        .map(|((pod, count), terms)| Demand {
            pod,
            terms,
            count: *count,
        })
        .collect()
}

pub(super) fn lower_bound(template: &Node, groups: &[(Pod, u64)]) -> u64 {
    let sum = |f: fn(&Resources) -> u64| groups.iter().map(|(p, n)| f(&p.demand) * n).sum::<u64>();
    let a = template.allocatable;
    [
        sum(|r| r.cpu_millis).div_ceil(a.cpu_millis),
        sum(|r| r.memory_bytes).div_ceil(a.memory_bytes),
        sum(|r| r.pods).div_ceil(a.pods),
    ]
    .into_iter()
    .max()
    .unwrap()
}

pub(super) fn app_selector(app: &str) -> LabelSelector {
    LabelSelector {
        match_labels: [("app".to_string(), app.to_string())].into(),
        expressions: vec![],
    }
}

/// Pods placed per node, as (demand, count) in the order put there.
pub(super) fn contents(estimate: &Estimate) -> Vec<Vec<(usize, u64)>> {
    estimate.nodes.iter().map(|n| n.contents.clone()).collect()
}

/// Pods per demand on each node.
pub(super) fn per_node(estimate: &Estimate) -> Vec<BTreeMap<usize, u64>> {
    (contents(estimate).iter())
        .map(|c| {
            let mut pods = BTreeMap::new();
            for &(d, k) in c {
                *pods.entry(d).or_default() += k;
            }
            pods
        })
        .collect()
}

/// A group in three zones with `nodes` nodes in each already.
pub(super) fn zoned(groups: &[(Pod, u64)], nodes: [u64; 3]) -> Estimate {
    zoned_with(groups, nodes, None)
}

/// [`zoned`], in one ordering alone when one is given.
pub(super) fn zoned_with(
    groups: &[(Pod, u64)],
    nodes: [u64; 3],
    ordering: Option<Ordering>,
) -> Estimate {
    let mut topology = Topology::default();
    for (p, _) in groups {
        topology.register(p);
    }
    let terms: Vec<PodTerms> = groups.iter().map(|(p, _)| topology.resolve(p)).collect();
    let zones: Vec<Place> = ["us-east-1a", "us-east-1b", "us-east-1c"]
        .iter()
        .map(|zone| {
            let mut n = (*node(4000, 16, 110)).clone();
            n.labels.insert(ZONE_LABEL.into(), zone.to_string());
            topology.place(Arc::new(n), Some(0), PlaceKind::Planned)
        })
        .collect();
    let demands = demands(groups, &terms);
    let templates = Templates {
        zones: &zones,
        nodes: &nodes,
    };
    let limits = EstimateLimits {
        max_nodes: 100,
        deadline: None,
    };
    match ordering {
        None => estimate(&topology, &[], templates, &demands, limits),
        Some(o) => pack(&topology, &[], templates, &demands, limits, o),
    }
}

pub(super) fn zones_of(estimate: &Estimate) -> Vec<&str> {
    estimate
        .nodes
        .iter()
        .map(|n| n.node.labels[ZONE_LABEL].as_str())
        .collect()
}
