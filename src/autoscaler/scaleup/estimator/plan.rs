//! What one estimation takes and gives: the demands, the group's templates and limits, the orderings it
//! may search in, and the estimate with its steps. Below every file of the estimator.

use crate::model::{HOSTNAME_LABEL, Pod, PodAffinityTerm, Resources};
use crate::simulator::{Place, PodTerms, Topology};
use crate::simulator::{Unfit, node_fit};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// One equivalence group to pack: its exemplar, its terms, how many pods.
#[derive(Clone, Copy)]
pub struct Demand<'a> {
    pub pod: &'a Pod,
    pub terms: &'a PodTerms,
    pub count: u64,
}

/// The nodes a group can add: its template in each zone it launches in (one for a single-zone group,
/// each with its DaemonSet pods on it), and how many of the group's nodes each zone already has.
#[derive(Clone, Copy)]
pub struct Templates<'a> {
    pub zones: &'a [Place],
    pub nodes: &'a [u64],
}

impl<'a> Templates<'a> {
    /// A group in one zone.
    pub fn one(template: &'a Place) -> Templates<'a> {
        Templates {
            zones: std::slice::from_ref(template),
            nodes: &[0],
        }
    }

    /// The template the ordering scores against (every zone's is the same shape).
    pub(super) fn first(&self) -> &'a Place {
        &self.zones[0]
    }

    /// The zones whose template the pod's node selector, affinity and taints pass, fewest nodes first (ties
    /// in the group's order of zones): where the Auto Scaling group's zone balancing launches next.
    pub(super) fn launch_order(&self, pod: &Pod, added: &[u64]) -> Vec<usize> {
        let mut zones: Vec<usize> = (0..self.zones.len())
            .filter(|&z| node_fit(&pod.scheduling, &self.zones[z].node).is_ok())
            .collect();
        zones.sort_by_key(|&z| (self.nodes.get(z).copied().unwrap_or(0) + added[z], z));
        zones
    }
}

/// The zones of a group whose nodes a pod may go on (by its node selector, affinity and taints): every one
/// for most pods, which is not asked again node by node.
pub(super) struct Zones(Option<Vec<bool>>);

impl Zones {
    /// The zones of `templates` that take the pod, found once per demand and search; when none does (what
    /// none takes, no node added here takes), why the first does not.
    pub(super) fn of(templates: Templates, pod: &Pod) -> Result<Zones, Option<Unfit>> {
        let fits = |t: &Place| node_fit(&pod.scheduling, &t.node);
        if let [only] = templates.zones {
            return fits(only).map(|()| Zones(None)).map_err(Some);
        }
        let takes: Vec<bool> = templates.zones.iter().map(|t| fits(t).is_ok()).collect();
        if !takes.contains(&true) {
            return Err(fits(templates.first()).err());
        }
        Ok(Zones(Some(takes).filter(|t| t.contains(&false))))
    }

    /// Whether the pod may go on a node of every zone.
    pub(super) fn all(&self) -> bool {
        self.0.is_none()
    }

    pub(super) fn has(&self, zone: usize) -> bool {
        self.0.as_ref().is_none_or(|takes| takes[zone])
    }

    /// The zones among `zones` (of the group's `count` zones) that also take another pod, whose are `self`;
    /// `None` when there are none.
    pub(super) fn within(&self, other: &Zones, count: usize) -> Option<Zones> {
        let takes: Vec<bool> = (0..count).map(|z| self.has(z) && other.has(z)).collect();
        if !takes.contains(&true) {
            return None;
        }
        Some(Zones(Some(takes).filter(|t| t.contains(&false))))
    }
}

/// Why the estimator stopped adding nodes before every pod had one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    NodeLimit,
    TimeLimit,
}

/// One step of a plan, in the order the estimator took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanStep {
    /// A new node, its group's template in zone `zone`.
    Add { zone: usize },
    /// `count` pods of demand `demand` on `node` (counted among the nodes added, before the nodes left
    /// without a pod are dropped from [`Estimate::nodes`]).
    Put {
        node: usize,
        demand: usize,
        count: u64,
    },
}

#[derive(Clone, Debug)]
pub struct Estimate {
    /// New nodes, each with at least one pod.
    pub nodes: Vec<Place>,
    /// How the plan was made, step by step: kube-scheduler would take its pods in this order. Shared, as
    /// groups that adopt an estimate share its steps.
    pub steps: Arc<[PlanStep]>,
    /// Pods placed, per demand (in the order given).
    pub placed: Vec<u64>,
    /// Why a demand's pods do not go on an empty new node, when they do not.
    pub unfit: Vec<Option<Unfit>>,
    pub stopped: Option<Stop>,
    /// The counts after placement, to commit if this estimate is chosen.
    pub topology: Topology,
    /// Which ordering won.
    pub ordering: Ordering,
}

impl Estimate {
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn pods_placed(&self) -> u64 {
        self.placed.iter().sum()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// cluster-autoscaler's own: its score (cpu share + memory share of the template's allocatable) and
    /// its search (rotating over the nodes added, then the last node added).
    Upstream,
    /// First-fit decreasing by cluster-autoscaler's score.
    SumOfShares,
    /// First-fit decreasing by the larger of the two shares.
    DominantShare,
    /// By one resource (the other breaks ties): packs best when that resource is the scarce one.
    Cpu,
    Memory,
    /// Best-fit decreasing by cluster-autoscaler's score: each pod on the node it leaves the least room on
    /// (cpu share + memory share). Resource-only pods only, as the two below.
    BestFit,
    /// Node by node, as the bin-centric heuristics of Panigrahy et al. ("Heuristics for Vector Bin Packing",
    /// 2011): a node takes, one pod at a time, the pod whose requests point most the way its free room does
    /// (the dot product of the two as shares of an empty node), until none fits; then a new node.
    NodeDotProduct,
    /// Node by node, each pod the one that leaves the node's free room smallest (its L2 norm in shares).
    NodeL2Norm,
}

impl Ordering {
    /// Whether the ordering's search takes its pods in runs by [`score`](super::estimate::score) and first fit over
    /// the nodes.
    pub(super) fn first_fit(self) -> bool {
        matches!(
            self,
            Ordering::SumOfShares | Ordering::DominantShare | Ordering::Cpu | Ordering::Memory
        )
    }

    /// Whether the ordering's search picks nodes or pods by their requests alone: it is run only when every
    /// pod's fit depends on nothing else ([`requests_alone`](super::estimate::requests_alone)).
    pub(super) fn by_requests(self) -> bool {
        self == Ordering::BestFit || self.node_by_node()
    }

    pub(super) fn node_by_node(self) -> bool {
        matches!(self, Ordering::NodeDotProduct | Ordering::NodeL2Norm)
    }
}

/// Every ordering the estimator tries, upstream's first.
pub const ORDERINGS: [Ordering; 8] = [
    Ordering::Upstream,
    Ordering::SumOfShares,
    Ordering::DominantShare,
    Ordering::Cpu,
    Ordering::Memory,
    Ordering::BestFit,
    Ordering::NodeDotProduct,
    Ordering::NodeL2Norm,
];

/// Limits of one estimation.
#[derive(Clone, Copy, Debug)]
pub struct EstimateLimits {
    /// Most new nodes (per-scale-up limit, group max, cluster limits: the caller takes the smallest).
    pub max_nodes: u64,
    /// When the loop's binpacking must stop: `--max-nodegroup-binpacking-duration` from the start of the
    /// loop's scale-up planning, shared by every group and ordering.
    pub deadline: Option<Instant>,
}

/// The fewest nodes of `template` that can hold every pod of `demands`: the most asked of cpu, memory and pod
/// slots over what an empty node has free. Constraints only ever ask for more.
pub(super) fn nodes_at_least(template: &Place, demands: &[Demand]) -> u64 {
    let need = |f: fn(&Resources) -> u64| {
        let asked = (demands.iter())
            .map(|d| f(&d.pod.demand).saturating_mul(d.count))
            .fold(0, u64::saturating_add);
        asked.div_ceil(f(&template.free).max(1))
    };
    [
        need(|r| r.cpu_millis),
        need(|r| r.memory_bytes),
        need(|r| r.pods),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

/// The required anti-affinity term by hostname that the demand's pod itself matches, if any: then each of
/// its pods needs a node of its own (a highly available Deployment's replicas, one a node).
pub(super) fn own_hostname_term<'a>(demand: &Demand<'a>) -> Option<&'a PodAffinityTerm> {
    let pod = demand.pod;
    (pod.scheduling.anti_affinity.iter())
        .find(|t| t.topology_key == HOSTNAME_LABEL && t.matches(&pod.namespace, &pod.labels))
}

/// The most pods one hostname term keeps apart: pods of every demand whose own term (`terms`) it is, each
/// of which matches it, so no two share a node. One pass over the demands.
pub(super) fn nodes_apart(demands: &[Demand], terms: &[Option<&PodAffinityTerm>]) -> u64 {
    let mut apart: HashMap<&PodAffinityTerm, u64> = HashMap::new();
    for (demand, term) in demands.iter().zip(terms) {
        if let Some(term) = term {
            *apart.entry(*term).or_default() += demand.count;
        }
    }
    apart.into_values().max().unwrap_or(0)
}
