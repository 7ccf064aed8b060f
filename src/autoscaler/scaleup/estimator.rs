//! The estimator: how many nodes of one node group the pending equivalence groups need.
//!
//! cluster-autoscaler's binpacking estimator orders equivalence groups by `cpu/allocatable +
//! memory/allocatable`, decreasing; each pod first tries the nodes this estimation added, in a rotating
//! search that starts after the node the last pod went to, and then only the node added last before a new
//! one is added. We run that search exactly ([`Ordering::Upstream`]), first-fit decreasing in four
//! orderings, and, when every pod's fit depends on its requests alone, best-fit decreasing and two searches
//! that fill one node at a time with the pods that suit its room ([`Ordering::NodeDotProduct`],
//! [`Ordering::NodeL2Norm`]); we keep whichever places the most pods on the fewest nodes: never more
//! nodes than upstream's search. Upstream's own estimator sees the nodes in a random order, so it varies run
//! to run; the node-by-node searches are what keep ours below its lucky runs on mixed shapes. An estimate
//! that places every pod on as few nodes as the pods' total requests allow cannot be beaten, and ends the
//! search. All are fast because pods of an equivalence group are identical: for pods whose constraints do
//! not depend on other pods, how many fit on a node is computed in closed form instead of pod by pod, and
//! the first node with room (or the one with the least room, for best fit) is found in a tree
//! ([`FreeTree`]), not by a scan.
//!
//! A group that spans several zones gets its new nodes where its Auto Scaling group would launch them:
//! in the zone with the fewest of the group's nodes first ([`Templates`]).

use crate::model::{Pod, Resources};
use crate::simulator::free_tree::FreeTree;
use crate::simulator::host_marks::{HostMarks, Open};
use crate::simulator::predicates::{self, Unfit};
use crate::simulator::spread_mins::SpreadMins;
use crate::simulator::topology::{Place, PlaceKind, PodTerms, Topology};
use crate::simulator::world::Filling;
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
    fn first(&self) -> &'a Place {
        &self.zones[0]
    }

    /// The zones whose template the pod's node selector, affinity and taints pass, fewest nodes first (ties
    /// in the group's order of zones): where the Auto Scaling group's zone balancing launches next.
    fn launch_order(&self, pod: &Pod, added: &[u64]) -> Vec<usize> {
        let mut zones: Vec<usize> = (0..self.zones.len())
            .filter(|&z| predicates::node_fit(&pod.scheduling, &self.zones[z].node).is_ok())
            .collect();
        zones.sort_by_key(|&z| (self.nodes.get(z).copied().unwrap_or(0) + added[z], z));
        zones
    }
}

/// The zones of a group whose nodes a pod may go on (by its node selector, affinity and taints): every one
/// for most pods, which is not asked again node by node.
struct Zones(Option<Vec<bool>>);

impl Zones {
    /// The zones of `templates` that take the pod, found once per demand and search; when none does (what
    /// none takes, no node added here takes), why the first does not.
    fn of(templates: Templates, pod: &Pod) -> Result<Zones, Option<Unfit>> {
        let fits = |t: &Place| predicates::node_fit(&pod.scheduling, &t.node);
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
    fn all(&self) -> bool {
        self.0.is_none()
    }

    fn has(&self, zone: usize) -> bool {
        self.0.as_ref().is_none_or(|takes| takes[zone])
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
pub enum Step {
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
    pub steps: Arc<[Step]>,
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
    /// Whether the ordering's search takes its pods in runs by [`score`] and first fit over the nodes.
    fn first_fit(self) -> bool {
        matches!(
            self,
            Ordering::SumOfShares | Ordering::DominantShare | Ordering::Cpu | Ordering::Memory
        )
    }

    /// Whether the ordering's search picks nodes or pods by their requests alone: it is run only when every
    /// pod's fit depends on nothing else ([`requests_alone`]).
    fn by_requests(self) -> bool {
        self == Ordering::BestFit || self.node_by_node()
    }

    fn node_by_node(self) -> bool {
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

/// Most pods times demands a node by node search weighs (each pod weighs every demand with pods left). At the
/// bound (20,000 pods of 50 shapes) a node by node search takes 4-6 ms on this machine, a first fit 3-4 ms;
/// past it (many pods of many shapes: each its own, at worst) the weighing would grow as pods squared, and
/// the searches that take demands in order pack alone.
const NODE_BY_NODE_WORK: u64 = 1 << 20;

/// Limits of one estimation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most new nodes (per-scale-up limit, group max, cluster limits: the caller takes the smallest).
    pub max_nodes: u64,
    /// When the loop's binpacking must stop: `--max-nodegroup-binpacking-duration` from the start of the
    /// loop's scale-up planning, shared by every group and ordering.
    pub deadline: Option<Instant>,
}

/// Estimates the nodes of the group whose templates are `templates`. `existing` are the cluster's places,
/// read for topology spread minimums. Upstream's estimate is the first taken: another ordering replaces it
/// only by placing more pods, or as many on fewer nodes. A first-fit ordering that would take the groups in
/// the same runs as one already packed packs the same way, so it is not packed again (two shapes of one
/// proportion, as upstream's own benchmark has, come in one order whatever the score).
pub fn estimate(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: Limits,
) -> Estimate {
    let mut best: Option<Estimate> = None;
    let mut packed: Vec<Vec<Vec<usize>>> = Vec::new();
    let pods = demands.iter().map(|d| d.count).sum::<u64>();
    let at_least = nodes_at_least(templates.first(), demands);
    let alone = requests_alone(demands);
    let pairs = pods.saturating_mul(demands.len() as u64);
    for (i, ordering) in ORDERINGS.into_iter().enumerate() {
        if best
            .as_ref()
            .is_some_and(|b| b.stopped == Some(Stop::TimeLimit) || unbeatable(b, pods, at_least))
        {
            break;
        }
        if (ordering.by_requests() && !alone)
            || (ordering.node_by_node() && pairs > NODE_BY_NODE_WORK)
        {
            continue;
        }
        if ordering.first_fit() {
            let runs = runs(demands, templates.first(), ordering);
            if packed.contains(&runs) {
                continue;
            }
            packed.push(runs);
        }
        // The time left is shared between the orderings still to run; what one leaves, the next may use.
        let deadline = limits.deadline.map(|d| {
            let now = Instant::now();
            now + d.saturating_duration_since(now) / (ORDERINGS.len() - i) as u32
        });
        let share = Limits { deadline, ..limits };
        let other = pack(topology, existing, templates, demands, share, ordering);
        let better = best.as_ref().is_none_or(|best| {
            (other.pods_placed(), std::cmp::Reverse(other.node_count()))
                > (best.pods_placed(), std::cmp::Reverse(best.node_count()))
        });
        if better {
            best = Some(other);
        }
    }
    best.expect("at least one ordering")
}

/// The demands in the order `ordering` takes them, highest score first, in runs: groups that tie on the
/// score go together (upstream keeps every group apart: its own search does).
fn runs(demands: &[Demand], template: &Place, ordering: Ordering) -> Vec<Vec<usize>> {
    let scores: Vec<f64> = demands
        .iter()
        .map(|d| score(d.pod, template, ordering))
        .collect();
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    if ordering == Ordering::Upstream {
        return order.into_iter().map(|d| vec![d]).collect();
    }
    order
        .chunk_by(|&a, &b| scores[a] == scores[b])
        .map(<[usize]>::to_vec)
        .collect()
}

fn score(pod: &Pod, template: &Place, ordering: Ordering) -> f64 {
    let share = |want: u64, have: u64| {
        if have == 0 {
            0.0
        } else {
            want as f64 / have as f64
        }
    };
    let alloc = template.node.allocatable;
    let cpu = share(pod.demand.cpu_millis, alloc.cpu_millis);
    let memory = share(pod.demand.memory_bytes, alloc.memory_bytes);
    match ordering {
        Ordering::Upstream | Ordering::SumOfShares | Ordering::BestFit => cpu + memory,
        Ordering::DominantShare => cpu.max(memory),
        Ordering::Cpu => cpu + memory / 1000.0,
        Ordering::Memory => memory + cpu / 1000.0,
        // Node by node picks by the room each node has left, not in an order.
        Ordering::NodeDotProduct | Ordering::NodeL2Norm => 0.0,
    }
}

/// One estimation in progress: the nodes added so far and the counts with their pods.
struct Packing<'a> {
    topology: Topology,
    existing: &'a [Place],
    templates: Templates<'a>,
    limits: Limits,
    nodes: Vec<Place>,
    /// Over `nodes`, for the resource-only first fit.
    tree: FreeTree,
    /// Over `nodes`, for the first fit of pods with hostname affinity or anti-affinity.
    marks: HostMarks,
    /// Over `existing` and `nodes`, for topology spreads.
    mins: SpreadMins,
    /// Nodes added per zone of `templates`.
    added: Vec<u64>,
    /// The zone (of `templates`) of each of `nodes`.
    zone: Vec<usize>,
    stopped: Option<Stop>,
    /// Upstream's `lastIndex`: where its rotating search starts.
    last_index: usize,
    steps: Vec<Step>,
}

impl Packing<'_> {
    /// Puts up to `want` pods on node `n`; keeps the tree and the node's contents current.
    fn fill(
        &mut self,
        filling: &mut Filling,
        d: usize,
        n: usize,
        want: u64,
    ) -> (u64, Option<Unfit>) {
        let (k, why) = filling.fill(
            &mut self.topology,
            &mut self.mins,
            self.existing,
            &mut self.nodes,
            n,
            want,
        );
        if k > 0 {
            // Pods of one demand put on one node in a row are one step (node by node puts one at a time).
            let contents = &mut self.nodes[n].contents;
            match contents.last_mut() {
                Some((e, count)) if *e == d => *count += k,
                _ => contents.push((d, k)),
            }
            self.tree.set(n, &self.nodes[n].free);
            self.marks.put(filling.terms(), n);
            match self.steps.last_mut() {
                Some(Step::Put {
                    node,
                    demand,
                    count,
                }) if *node == n && *demand == d => *count += k,
                _ => self.steps.push(Step::Put {
                    node: n,
                    demand: d,
                    count: k,
                }),
            }
        }
        (k, why)
    }

    /// The first node at or after `from` that `open` offers and that has room for the pod's resources (the
    /// tree leaves extended resources out: the fill checks them). Full nodes are passed over in log time.
    fn next_fit(&self, open: &Open, pod: &Pod, from: usize) -> Option<usize> {
        let mut n = open.next(from)?;
        loop {
            let room = self.tree.first_at_or_after(n, &pod.demand)?;
            if room == n {
                return Some(n);
            }
            n = open.next(room)?;
        }
    }

    /// The first node in `from..end` of `zones` that takes one more pod, as [`Packing::next_fit`] offers them.
    fn first_taking(
        &mut self,
        filling: &Filling,
        zones: &Zones,
        open: &Open,
        from: usize,
        end: usize,
    ) -> Option<usize> {
        let mut at = self.next_fit(open, filling.pod(), from);
        while let Some(n) = at.filter(|&n| n < end) {
            if self.in_zones(zones, n)
                && filling.fits(
                    &self.topology,
                    &mut self.mins,
                    self.existing,
                    &self.nodes,
                    n,
                )
            {
                return Some(n);
            }
            at = self.next_fit(open, filling.pod(), n + 1);
        }
        None
    }

    /// Whether node `n` is in one of `zones`.
    fn in_zones(&self, zones: &Zones, n: usize) -> bool {
        zones.has(self.zone[n])
    }

    /// Whether the limits allow one more node; says which stopped it when not.
    fn may_add(&mut self) -> bool {
        if self.stopped.is_some() || self.nodes.len() as u64 >= self.limits.max_nodes {
            self.stopped.get_or_insert(Stop::NodeLimit);
            return false;
        }
        if self.limits.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stopped = Some(Stop::TimeLimit);
            return false;
        }
        true
    }

    /// Adds a node where the group would launch it and puts as many pods on it as fit (up to `want`): in
    /// the first zone, in launch order, that takes at least one. A zone whose empty node takes none is left
    /// without a node. Returns the pods placed and, when none, why not.
    fn add_node(&mut self, filling: &mut Filling, d: usize, want: u64) -> (u64, Option<Unfit>) {
        let zones = self.templates.launch_order(filling.pod(), &self.added);
        let mut why =
            predicates::node_fit(&filling.pod().scheduling, &self.templates.first().node).err();
        for z in zones {
            let fresh = self
                .topology
                .copy(&self.templates.zones[z], PlaceKind::Planned);
            self.nodes.push(fresh);
            self.zone.push(z);
            self.steps.push(Step::Add { zone: z });
            let n = self.nodes.len() - 1;
            self.tree.push(&self.nodes[n].free);
            let (k, unfit) = self.fill(filling, d, n, want);
            if k > 0 {
                self.added[z] += 1;
                return (k, unfit);
            }
            self.nodes.pop();
            self.zone.pop();
            self.tree.pop();
            self.steps.pop();
            why = unfit;
        }
        (0, why)
    }
}

/// One estimation in one `ordering`.
pub fn pack(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: Limits,
    ordering: Ordering,
) -> Estimate {
    let expected = expected_nodes(templates.first(), demands, limits.max_nodes);
    let mut packing = Packing {
        topology: topology.clone(),
        existing,
        templates,
        limits,
        nodes: Vec::with_capacity(expected),
        tree: if ordering == Ordering::BestFit {
            FreeTree::with_rooms(expected, &templates.first().free)
        } else {
            FreeTree::with_capacity(expected)
        },
        marks: HostMarks::new(topology),
        mins: SpreadMins::default(),
        added: vec![0; templates.zones.len()],
        zone: Vec::with_capacity(expected),
        stopped: None,
        last_index: 0,
        // A node is added, then filled: two steps a node, more when groups share nodes.
        steps: Vec::with_capacity(2 * expected),
    };
    let mut placed = vec![0u64; demands.len()];
    let mut unfit = vec![None; demands.len()];
    let runs = if ordering.node_by_node() {
        node_by_node(&mut packing, demands, &mut placed, &mut unfit, ordering);
        Vec::new()
    } else {
        runs(demands, templates.first(), ordering)
    };
    for run in &runs {
        let mut fillings: Vec<(usize, Filling, Zones, u64)> = Vec::with_capacity(run.len());
        for &d in run {
            let demand = demands[d];
            let zones = match Zones::of(templates, demand.pod) {
                Ok(zones) => zones,
                Err(why) => {
                    unfit[d] = why;
                    continue;
                }
            };
            let filling = Filling::new(demand.pod, demand.terms);
            // Tied groups are taken a part of a node at a time, in turn, so that pods heavy on cpu and
            // pods heavy on memory that score alike share nodes, as they would one pod at a time.
            let chunk = if run.len() == 1 {
                demand.count
            } else {
                let template = templates.first();
                let per_node = predicates::how_many(
                    &demand.pod.demand,
                    &demand.pod.extended,
                    &template.free,
                    &template.free_extended,
                );
                (per_node / 8).clamp(1, demand.count)
            };
            fillings.push((d, filling, zones, chunk));
        }
        while !fillings.is_empty() {
            fillings.retain_mut(|(d, filling, zones, chunk)| {
                let want = (demands[*d].count - placed[*d]).min(*chunk);
                let (done, why) = match ordering {
                    Ordering::Upstream => upstream(&mut packing, filling, zones, *d, want),
                    Ordering::BestFit => best_fit(&mut packing, filling, zones, *d, want),
                    _ => first_fit(&mut packing, filling, zones, *d, want),
                };
                placed[*d] += done;
                unfit[*d] = why;
                done == want && placed[*d] < demands[*d].count
            });
        }
    }
    offer_again(&mut packing, demands, &mut placed, &mut unfit);
    // A node that took no pod (upstream keeps one when a zonal constraint refuses it) is not needed.
    packing.nodes.retain(|n| !n.contents.is_empty());
    Estimate {
        nodes: packing.nodes,
        steps: packing.steps.into(),
        placed,
        unfit,
        stopped: packing.stopped,
        topology: packing.topology,
        ordering,
    }
}

/// The fewest nodes of `template` that can hold every pod of `demands`: the most asked of cpu, memory and pod
/// slots over what an empty node has free. Constraints only ever ask for more.
fn nodes_at_least(template: &Place, demands: &[Demand]) -> u64 {
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

/// Whether no ordering can do better than `estimate`: it places all `pods` on the fewest nodes any packing
/// could use. Then the orderings after it are not packed (on upstream's own benchmark, its search alone).
fn unbeatable(estimate: &Estimate, pods: u64, at_least: u64) -> bool {
    estimate.pods_placed() == pods && estimate.node_count() as u64 <= at_least
}

/// About how many nodes `demands` need on `template`: [`nodes_at_least`], a sixteenth more, within `max`. The
/// vectors that grow a node at a time are sized to it once: left to double, they copied every node planned so
/// far again and again, each time into memory never touched before, which a process's first loop pays a page
/// fault for (half of the binary's estimate on upstream's 51,000 pods). A pack that needs more grows as before.
fn expected_nodes(template: &Place, demands: &[Demand], max: u64) -> usize {
    let bound = nodes_at_least(template, demands);
    let expected = bound.saturating_add(bound / 16).saturating_add(8);
    expected.min(max).min(1 << 20) as usize
}

/// Pods refused for their pod affinity may be taken once pods packed after them are there (a pod wanting a
/// partner that scores lower): they are offered the plan's nodes again, group after group, until a pass
/// places none. Each pass that goes on placed a pod, so there are at most as many passes as pods. New nodes
/// are added for what is left when a new node would now hold the affinity (a partner in the zone a zonal
/// term asks for); for a hostname term a new node holds no partner, so none is tried. A topology spread's
/// pods are offered the older nodes again within [`first_fit`] already.
fn offer_again(
    packing: &mut Packing,
    demands: &[Demand],
    placed: &mut [u64],
    unfit: &mut [Option<Unfit>],
) {
    // The partners each group had when the plan last refused it: until that grows, it is refused again.
    let mut partners_then: Vec<Option<u64>> = vec![None; demands.len()];
    loop {
        let mut progress = false;
        for (d, demand) in demands.iter().enumerate() {
            // Refused for its affinity, or stopped by a limit before partners it could join were placed.
            let refused = matches!(unfit[d], Some(Unfit::Affinity) | None);
            if placed[d] == demand.count || !refused || !demand.terms.wants_partners() {
                continue;
            }
            let partners = packing.topology.partners(demand.terms);
            if partners_then[d] == Some(partners) {
                continue;
            }
            partners_then[d] = Some(partners);
            let Ok(zones) = Zones::of(packing.templates, demand.pod) else {
                continue;
            };
            let mut filling = Filling::new(demand.pod, demand.terms);
            let want = demand.count - placed[d];
            let templates = packing.templates.zones;
            let (k, why) =
                if (templates.iter()).any(|t| packing.topology.affinity_holds(demand.terms, t)) {
                    // A new node would hold it: the plan's nodes, then new ones.
                    first_fit(packing, &mut filling, &zones, d, want)
                } else {
                    let k = offer_plan(packing, &mut filling, &zones, d, want);
                    (k, unfit[d].clone())
                };
            placed[d] += k;
            progress |= k > 0;
            unfit[d] = if placed[d] == demand.count { None } else { why };
        }
        if !progress {
            return;
        }
    }
}

/// Up to `want` pods on the plan's nodes that hold their affinity, in order; returns how many.
fn offer_plan(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    want: u64,
) -> u64 {
    let terms = filling.terms();
    let mut done = 0;
    let open = (packing.marks).open(&packing.topology, terms, packing.nodes.len());
    let mut at = packing.next_fit(&open, filling.pod(), 0);
    while let Some(n) = at.filter(|_| done < want) {
        // Most nodes hold no partner: asked first, before the pod's whole fit.
        if packing.in_zones(zones, n) && (packing.topology).affinity_holds(terms, &packing.nodes[n])
        {
            done += packing.fill(filling, d, n, want - done).0;
        }
        at = packing.next_fit(&open, filling.pod(), n + 1);
    }
    done
}

/// First fit over the nodes added so far, then new nodes: returns the pods placed and, when an empty node
/// takes none, why. Pods whose spread constraints stop them on a node may fit on an older node once other
/// domains have caught up, so after such a stop every node is offered again before a new one is added.
fn first_fit(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    count: u64,
) -> (u64, Option<Unfit>) {
    let pod = filling.pod();
    let mut remaining = count;
    // Through the tree when only resources matter (extended resources are not in the tree), and the pod may
    // go on a node of any zone (the tree does not know zones).
    let resources_only = filling.simple() && pod.extended.is_empty() && zones.all();
    let mut offer = true;
    loop {
        if offer && resources_only {
            while let Some(n) = packing.tree.first(&pod.demand).filter(|_| remaining > 0) {
                let (k, _) = packing.fill(filling, d, n, remaining);
                if k == 0 {
                    break;
                }
                remaining -= k;
            }
        } else if offer {
            // Pass after pass while a pass places pods and some node stopped them for the spread. Nodes
            // the pod's hostname terms refuse are passed over unchecked.
            loop {
                let (mut progress, mut spread) = (false, false);
                let open =
                    (packing.marks).open(&packing.topology, filling.terms(), packing.nodes.len());
                let mut at = packing.next_fit(&open, pod, 0);
                while let Some(n) = at.filter(|_| remaining > 0) {
                    if packing.in_zones(zones, n) {
                        let (k, why) = packing.fill(filling, d, n, remaining);
                        remaining -= k;
                        progress |= k > 0;
                        spread |= why == Some(Unfit::Spread);
                    }
                    at = packing.next_fit(&open, pod, n + 1);
                }
                if remaining == 0 || !(progress && spread) {
                    break;
                }
            }
        }
        if remaining == 0 || !packing.may_add() {
            return (count - remaining, None);
        }
        let (k, why) = packing.add_node(filling, d, remaining);
        if k == 0 {
            // Not even an empty node takes it: no more nodes help this group.
            return (count - remaining, why);
        }
        remaining -= k;
        // Resources or a per-node constraint filled the new node: the older ones are no better than before.
        offer = why == Some(Unfit::Spread);
    }
}

/// Whether every pod's fit depends on its requests and the node alone (no constraint that looks at other
/// pods, no extended resource, which the tree leaves out): then the searches that pick by requests
/// ([`Ordering::by_requests`]) run.
fn requests_alone(demands: &[Demand]) -> bool {
    (demands.iter()).all(|d| d.terms.simple && d.pod.extended.is_empty())
}

/// Best fit ([`Ordering::BestFit`]): pods on the node with the least room left (the tree finds it), a new node when
/// none has room. The pods of a demand are identical, so the node best for one stays best for the next until
/// it is full: each node takes as many as fit at once. Resource-only pods.
fn best_fit(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    count: u64,
) -> (u64, Option<Unfit>) {
    let pod = filling.pod();
    let mut remaining = count;
    while remaining > 0 {
        let best = (packing.tree).least_room(&pod.demand, |n| packing.in_zones(zones, n));
        let k = match best {
            Some(n) => packing.fill(filling, d, n, remaining).0,
            None => {
                if !packing.may_add() {
                    break;
                }
                let (k, why) = packing.add_node(filling, d, remaining);
                if k == 0 {
                    return (count - remaining, why);
                }
                k
            }
        };
        remaining -= k;
    }
    (count - remaining, None)
}

/// Node by node ([`Ordering::NodeDotProduct`], [`Ordering::NodeL2Norm`]): a new node starts with the pod that
/// `ordering` scores best against an empty node, then takes, one pod at a time, the best of those that still
/// fit, until none does; then the next node. Each pod weighs every demand with pods left: pods times demands
/// in all, which [`NODE_BY_NODE_WORK`] bounds. Resource-only pods.
fn node_by_node(
    packing: &mut Packing,
    demands: &[Demand],
    placed: &mut [u64],
    unfit: &mut [Option<Unfit>],
    ordering: Ordering,
) {
    let full = packing.templates.first().free;
    // Each demand that some zone takes: its filling, the zones that take it, its requests as shares.
    let mut open: Vec<(usize, Filling, Zones, Shares)> = Vec::with_capacity(demands.len());
    for (d, demand) in demands.iter().enumerate() {
        match Zones::of(packing.templates, demand.pod) {
            Ok(zones) => open.push((
                d,
                Filling::new(demand.pod, demand.terms),
                zones,
                shares(&demand.pod.demand, &full),
            )),
            Err(why) => unfit[d] = why,
        }
    }
    let pick = |open: &[(usize, Filling, Zones, Shares)],
                placed: &[u64],
                free: &Resources,
                zone: Option<usize>| {
        let room = shares(free, &full);
        let mut best: Option<(usize, f64)> = None;
        for (i, (d, filling, zones, want)) in open.iter().enumerate() {
            if placed[*d] == demands[*d].count
                || zone.is_some_and(|z| !zones.has(z))
                || !free.fits(&filling.pod().demand)
            {
                continue;
            }
            let score = node_score(ordering, want, &room);
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    };
    // The pods one node takes, per entry of `open`, in the order first taken.
    let mut taken: Vec<(usize, u64)> = Vec::new();
    loop {
        // Demands an empty node refuses drop out here (an empty node refused them before).
        let Some(i) = pick(&open, placed, &full, None) else {
            for (d, filling, ..) in &open {
                if placed[*d] < demands[*d].count {
                    let pod = filling.pod();
                    let why = predicates::resources_fit(
                        &pod.demand,
                        &pod.extended,
                        &full,
                        &packing.templates.first().free_extended,
                    );
                    unfit[*d] = why.err();
                }
            }
            return;
        };
        if !packing.may_add() {
            return;
        }
        let (d, filling, ..) = &mut open[i];
        let (k, why) = packing.add_node(filling, *d, 1);
        if k == 0 {
            unfit[*d] = why;
            open.remove(i);
            continue;
        }
        placed[*d] += 1;
        let n = packing.nodes.len() - 1;
        let zone = Some(packing.zone[n]);
        // Resource-only pods fit by their requests alone: the node's room is counted down here, and the pods
        // put on it once it is full, a step per demand.
        let mut free = packing.nodes[n].free;
        taken.clear();
        while let Some(i) = pick(&open, placed, &free, zone) {
            let (d, filling, ..) = &open[i];
            free = predicates::minus(free, &filling.pod().demand);
            placed[*d] += 1;
            match taken.iter_mut().find(|(j, _)| *j == i) {
                Some((_, k)) => *k += 1,
                None => taken.push((i, 1)),
            }
        }
        for &(i, k) in &taken {
            let (d, filling, ..) = &mut open[i];
            let (put, _) = packing.fill(filling, *d, n, k);
            // What the count said fits does: fewer would be a bug, and those pods are not counted placed.
            debug_assert_eq!(put, k, "a node by node count that does not fill");
            placed[*d] -= k - put;
        }
    }
}

/// Resources as shares of an empty node's (`full`): cpu, memory, ephemeral storage, GPUs (0 where the node
/// has none). Pod slots are left out: every pod takes one, so they never tell two pods apart.
type Shares = [f64; 4];

fn shares(r: &Resources, full: &Resources) -> Shares {
    let share = |have: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            have as f64 / of as f64
        }
    };
    [
        share(r.cpu_millis, full.cpu_millis),
        share(r.memory_bytes, full.memory_bytes),
        share(r.ephemeral_storage_bytes, full.ephemeral_storage_bytes),
        share(r.gpus, full.gpus),
    ]
}

/// How well a pod asking `want` suits a node with `room` left, as `ordering` weighs it: the dot product of the
/// two, or how little room the pod leaves (the L2 norm of what is left, negated).
fn node_score(ordering: Ordering, want: &Shares, room: &Shares) -> f64 {
    let pairs = want.iter().zip(room);
    if ordering == Ordering::NodeDotProduct {
        pairs.map(|(w, r)| w * r).sum()
    } else {
        -pairs.map(|(w, r)| (r - w) * (r - w)).sum::<f64>()
    }
}

/// cluster-autoscaler's search (estimator/binpacking_estimator.go): each pod tries the nodes added so
/// far in a rotating search from the node after the last one that took a pod, until one pod fits none;
/// the rest try only the node added last, and a new node when it refuses them. A pod an empty new node
/// refuses ends the group.
fn upstream(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    count: u64,
) -> (u64, Option<Unfit>) {
    let pod = filling.pod();
    let resources_only = filling.simple() && pod.extended.is_empty() && zones.all();
    let mut done = 0;
    // On the nodes added so far, one pod at a time.
    while done < count {
        let len = packing.nodes.len();
        if len == 0 {
            break;
        }
        let start = packing.last_index % len;
        let found = if resources_only {
            packing.tree.first_from(start, &pod.demand)
        } else {
            let open = (packing.marks).open(&packing.topology, filling.terms(), len);
            (packing.first_taking(filling, zones, &open, start, len))
                .or_else(|| packing.first_taking(filling, zones, &open, 0, start))
        };
        let Some(n) = found else { break };
        let (k, _) = packing.fill(filling, d, n, 1);
        if k == 0 {
            break;
        }
        done += 1;
        packing.last_index = (n + 1) % len;
    }
    // The rest on the node added last, or on new ones.
    while done < count {
        let last = packing.nodes.len().checked_sub(1);
        if let Some(last) = last.filter(|&n| packing.in_zones(zones, n)) {
            // Only what this group's pods can take: the node is theirs alone from here on.
            let (k, _) = packing.fill(filling, d, last, count - done);
            done += k;
            if done == count {
                break;
            }
        }
        if !packing.may_add() {
            break;
        }
        let (k, why) = packing.add_node(filling, d, count - done);
        if k == 0 {
            return (done, why);
        }
        done += k;
    }
    (done, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::node::{HOSTNAME_LABEL, ZONE_LABEL};
    use crate::model::pod::{HostPort, PodAffinityTerm, Scheduling, SpreadConstraint};
    use crate::model::selector::LabelSelector;
    use crate::model::{Node, Resources};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    const GI: u64 = 1 << 30;

    fn node(cpu: u64, mem_gi: u64, pods: u64) -> Arc<Node> {
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

    fn pod(app: &str, cpu: u64, mem_mi: u64, scheduling: Scheduling) -> Pod {
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

    /// Packs `groups` (pod, count) onto copies of `template` with no other nodes around.
    fn run(template: Arc<Node>, groups: &[(Pod, u64)], max_nodes: u64) -> Estimate {
        run_beside(template, groups, max_nodes, 0)
    }

    /// The same beside `full` existing nodes like the template but with no room left.
    fn run_beside(
        template: Arc<Node>,
        groups: &[(Pod, u64)],
        max_nodes: u64,
        full: usize,
    ) -> Estimate {
        run_with(template, groups, max_nodes, full, None)
    }

    /// The same in one `ordering` only, or in the estimator's choice of them.
    fn run_with(
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
        let limits = Limits {
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
    fn demands<'a>(groups: &'a [(Pod, u64)], terms: &'a [PodTerms]) -> Vec<Demand<'a>> {
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

    fn lower_bound(template: &Node, groups: &[(Pod, u64)]) -> u64 {
        let sum =
            |f: fn(&Resources) -> u64| groups.iter().map(|(p, n)| f(&p.demand) * n).sum::<u64>();
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

    #[test]
    fn identical_pods_pack_to_the_lower_bound_in_closed_form() {
        let template = node(4000, 16, 110);
        let groups = [(pod("web", 500, 1024, Scheduling::default()), 10_000)];
        let estimate = run(template.clone(), &groups, 100_000);
        assert_eq!(estimate.pods_placed(), 10_000);
        assert_eq!(
            estimate.node_count() as u64,
            lower_bound(&template, &groups)
        );
        assert_eq!(estimate.node_count(), 1250, "8 per node by cpu");
        // The nodes were planned into one vector sized once (1,250 and a sixteenth, and 8), never regrown.
        assert_eq!(estimate.nodes.capacity(), 1250 + 78 + 8);
        // Where the limit is lower, it is the size.
        assert_eq!(run(template.clone(), &groups, 300).nodes.capacity(), 300);
        // Upstream's search meets the bound here: nothing can beat it, and nothing else is packed. One pod
        // fewer placed, or one node more, and another ordering might.
        let upstream = run_with(template, &groups, 100_000, 0, Some(Ordering::Upstream));
        assert!(unbeatable(&upstream, 10_000, 1250));
        assert!(!unbeatable(&upstream, 10_001, 1250));
        assert!(!unbeatable(&upstream, 10_000, 1249));
    }

    #[test]
    fn mixed_sizes_pack_as_hand_computed() {
        // 4 CPU nodes. 3 x 2500m and 3 x 1500m pair up perfectly: 3 nodes, the lower bound.
        let template = node(4000, 64, 110);
        let groups = [
            (pod("small", 1500, 100, Scheduling::default()), 3),
            (pod("big", 2500, 100, Scheduling::default()), 3),
        ];
        let estimate = run(template.clone(), &groups, 100);
        assert_eq!(estimate.node_count(), 3);
        assert_eq!(lower_bound(&template, &groups), 3);
        // Memory-bound and cpu-bound pods share nodes: 2 nodes by either resource's sum.
        let template = node(4000, 8, 110);
        let groups = [
            (pod("cpu", 1800, 512, Scheduling::default()), 4),
            (pod("mem", 100, 3584, Scheduling::default()), 4),
        ];
        let estimate = run(template.clone(), &groups, 100);
        assert_eq!(estimate.pods_placed(), 8);
        assert_eq!(
            estimate.node_count() as u64,
            lower_bound(&template, &groups)
        );
    }

    #[test]
    fn pods_per_node_bind_too() {
        let template = node(64_000, 256, 29);
        let groups = [(pod("tiny", 10, 10, Scheduling::default()), 100)];
        assert_eq!(
            run(template, &groups, 100).node_count(),
            4,
            "29 pods a node"
        );
    }

    #[test]
    fn limits_stop_adding_nodes_and_say_so() {
        let template = node(4000, 16, 110);
        let groups = [(pod("web", 1000, 100, Scheduling::default()), 100)];
        let estimate = run(template, &groups, 5);
        assert_eq!(estimate.node_count(), 5);
        assert_eq!(estimate.pods_placed(), 20);
        assert_eq!(estimate.stopped, Some(Stop::NodeLimit));
    }

    #[test]
    fn pods_too_big_for_an_empty_node_are_unfit_with_the_reason() {
        let template = node(2000, 8, 110);
        let groups = [(pod("huge", 3000, 100, Scheduling::default()), 2)];
        let estimate = run(template, &groups, 100);
        assert_eq!(estimate.node_count(), 0);
        assert_eq!(
            estimate.unfit[0],
            Some(Unfit::Insufficient(vec!["cpu".into()]))
        );
    }

    fn app_selector(app: &str) -> LabelSelector {
        LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            expressions: vec![],
        }
    }

    #[test]
    fn hostname_anti_affinity_puts_one_pod_per_node() {
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("db"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("db", 100, 100, anti), 5),
            (pod("web", 100, 100, Scheduling::default()), 10),
        ];
        let estimate = run(node(4000, 16, 110), &groups, 100);
        assert_eq!(estimate.node_count(), 5);
        assert_eq!(estimate.pods_placed(), 15, "web pods fill the db nodes");
    }

    #[test]
    fn zone_anti_affinity_allows_one_pod_in_the_templates_zone() {
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("zk"),
                namespaces: Some(vec!["default".into()]),
                topology_key: ZONE_LABEL.into(),
            }],
            ..Default::default()
        };
        let estimate = run(node(4000, 16, 110), &[(pod("zk", 100, 100, anti), 3)], 100);
        assert_eq!((estimate.node_count(), estimate.pods_placed()), (1, 1));
        assert_eq!(estimate.unfit[0], Some(Unfit::AntiAffinity));
    }

    #[test]
    fn hostname_spread_caps_pods_per_node_at_max_skew() {
        let spread = Scheduling {
            spread: vec![SpreadConstraint::new(
                2,
                HOSTNAME_LABEL,
                app_selector("api"),
            )],
            ..Default::default()
        };
        // A full node that matches counts as a domain with none of the pods: the minimum stays 0.
        let groups = [(pod("api", 100, 100, spread), 10)];
        let estimate = run_beside(node(8000, 32, 110), &groups, 100, 1);
        assert_eq!((estimate.pods_placed(), estimate.node_count()), (10, 5));
    }

    #[test]
    fn host_ports_keep_pods_apart_and_affinity_keeps_them_together() {
        let port = Scheduling {
            host_ports: vec![HostPort {
                protocol: "TCP".into(),
                port: 9100,
                ip: String::new(),
            }],
            ..Default::default()
        };
        let estimate = run(
            node(4000, 16, 110),
            &[(pod("exporter", 100, 100, port), 3)],
            100,
        );
        assert_eq!(estimate.node_count(), 3);

        let with_cache = Scheduling {
            affinity: vec![PodAffinityTerm {
                selector: app_selector("cache"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("cache", 1000, 100, Scheduling::default()), 1),
            (pod("app", 1000, 100, with_cache), 5),
        ];
        let estimate = run(node(4000, 16, 110), &groups, 100);
        // Only the cache's node satisfies the affinity: 3 apps join it, 2 cannot go anywhere new.
        assert_eq!(estimate.node_count(), 1);
        assert_eq!(estimate.placed, [1, 3]);
        assert_eq!(estimate.unfit[1], Some(Unfit::Affinity));
    }

    #[test]
    fn pods_wanting_partners_packed_after_them_are_offered_the_plan_again() {
        // Each link wants, on its node, a pod of the next link, which is smaller and so packed after it:
        // tried in score order, every link but the last finds no partner yet.
        let wanting = |next: &str| Scheduling {
            affinity: vec![PodAffinityTerm {
                selector: app_selector(next),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("a", 1500, 100, wanting("b")), 2),
            (pod("b", 1000, 100, wanting("c")), 2),
            (pod("c", 500, 100, Scheduling::default()), 2),
        ];
        for ordering in ORDERINGS {
            let estimate = run_with(node(16000, 64, 110), &groups, 100, 0, Some(ordering));
            assert_eq!(estimate.placed, [2, 2, 2], "{ordering:?}");
            assert_eq!(estimate.unfit, [None, None, None], "{ordering:?}");
            // One node holds them all, every link beside its partner.
            assert_eq!(estimate.node_count(), 1, "{ordering:?}");
            for place in &estimate.nodes {
                let apps: Vec<&str> = (place.contents.iter())
                    .map(|&(d, _)| groups[d].0.labels["app"].as_str())
                    .collect();
                assert!(!apps.contains(&"a") || apps.contains(&"b"), "{apps:?}");
                assert!(!apps.contains(&"b") || apps.contains(&"c"), "{apps:?}");
            }
        }
        assert_eq!(run(node(16000, 64, 110), &groups, 100).placed, [2, 2, 2]);
    }

    #[test]
    fn pods_wanting_a_zone_partner_placed_after_them_get_new_nodes_in_its_zone() {
        // Three big pods want a `cache` pod in their zone; the cache pod is small and packed after them.
        // Offered the plan again, two join the cache pod's node and the third needs a node of its own.
        let in_zone_of_cache = Scheduling {
            affinity: vec![PodAffinityTerm {
                selector: app_selector("cache"),
                namespaces: Some(vec!["default".into()]),
                topology_key: ZONE_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("web", 1000, 6000, in_zone_of_cache), 3),
            (pod("cache", 100, 100, Scheduling::default()), 1),
        ];
        for ordering in ORDERINGS {
            let estimate = run_with(node(4000, 16, 110), &groups, 10, 0, Some(ordering));
            assert_eq!(estimate.placed, [3, 1], "{ordering:?}");
            assert_eq!(estimate.unfit, [None, None], "{ordering:?}");
            assert_eq!(estimate.node_count(), 2, "{ordering:?}");
        }
    }

    #[test]
    fn self_affinity_lets_the_first_pod_start_a_node() {
        let together = Scheduling {
            affinity: vec![PodAffinityTerm {
                selector: app_selector("gang"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let estimate = run(
            node(4000, 16, 110),
            &[(pod("gang", 1000, 100, together), 4)],
            100,
        );
        assert_eq!((estimate.node_count(), estimate.pods_placed()), (1, 4));
    }

    #[test]
    fn upstreams_search_rotates_and_first_fit_beats_it_on_this_mix() {
        // Two big pods take a node each (1500m / 7Gi left on both). Upstream's rotating search then puts
        // the two 500m pods one on each node; first fit puts both on the first, which leaves the second
        // node room for the 1100m pod (whose lower score orders it last) where upstream needs a third.
        let template = node(4000, 16, 110);
        let groups = [
            (pod("big", 2500, 9 * 1024, Scheduling::default()), 2),
            (pod("mid", 500, 3 * 1024, Scheduling::default()), 2),
            (pod("cpu", 1100, 0, Scheduling::default()), 1),
        ];
        let upstream = run_with(template.clone(), &groups, 100, 0, Some(Ordering::Upstream));
        let first_fit = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::SumOfShares),
        );
        assert_eq!((upstream.pods_placed(), upstream.node_count()), (5, 3));
        assert_eq!((first_fit.pods_placed(), first_fit.node_count()), (5, 2));
        let mids: Vec<u64> = upstream
            .nodes
            .iter()
            .map(|n| {
                n.contents
                    .iter()
                    .filter(|(d, _)| *d == 1)
                    .map(|(_, k)| k)
                    .sum()
            })
            .collect();
        assert_eq!(
            mids,
            [1, 1, 0],
            "one mid pod on each of the first two nodes"
        );
        let chosen = run(template, &groups, 100);
        assert_eq!(chosen.node_count(), 2);
        assert_ne!(chosen.ordering, Ordering::Upstream);
    }

    /// Pods placed per node, as (demand, count) in the order put there.
    fn contents(estimate: &Estimate) -> Vec<Vec<(usize, u64)>> {
        estimate.nodes.iter().map(|n| n.contents.clone()).collect()
    }

    #[test]
    fn best_fit_puts_a_pod_where_it_leaves_the_least_room() {
        // 4 cpu / 16Gi. By score: P, the two S, Q, the two R. First fit puts Q beside P, where it takes the
        // cpu an R needed, and needs a third node; best fit puts Q beside the S pods (it leaves 0m / 1Gi
        // there, against 0m / 10Gi beside P), and both R fit beside P.
        let template = node(4000, 16, 110);
        let groups = [
            (pod("p", 3000, 3 * 1024, Scheduling::default()), 1),
            (pod("q", 1000, 3 * 1024, Scheduling::default()), 1),
            (pod("r", 500, 4 * 1024, Scheduling::default()), 2),
            (pod("s", 1500, 6 * 1024, Scheduling::default()), 2),
        ];
        let first_fit = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::SumOfShares),
        );
        assert_eq!(first_fit.node_count(), 3);
        let best_fit = run_with(template.clone(), &groups, 100, 0, Some(Ordering::BestFit));
        assert_eq!(
            contents(&best_fit),
            [vec![(0, 1), (2, 2)], vec![(3, 2), (1, 1)]]
        );
        assert_eq!(run(template, &groups, 100).node_count(), 2);
    }

    /// Pods per demand on each node.
    fn per_node(estimate: &Estimate) -> Vec<BTreeMap<usize, u64>> {
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

    #[test]
    fn node_by_node_fills_each_node_with_the_pods_that_suit_its_room() {
        // 4 cpu / 16Gi; 2 x 500m/3Gi, 3 x 1000m/4Gi, 2 x 2000m/1Gi: 8 cpu, two full nodes (2000 + 1000 + 500
        // + 500, and 2000 + 1000 + 1000). Every search that takes the shapes in an order needs three; node by
        // node by the dot product takes, after a 2000m pod, the pods the node's room points to.
        let template = node(4000, 16, 110);
        let groups = [
            (pod("a", 500, 3 * 1024, Scheduling::default()), 2),
            (pod("b", 1000, 4 * 1024, Scheduling::default()), 3),
            (pod("c", 2000, 1024, Scheduling::default()), 2),
        ];
        for ordering in ORDERINGS.into_iter().filter(|o| !o.node_by_node()) {
            let other = run_with(template.clone(), &groups, 100, 0, Some(ordering));
            assert_eq!(other.node_count(), 3, "{ordering:?}");
        }
        let dot = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::NodeDotProduct),
        );
        assert_eq!(
            per_node(&dot),
            [[(1, 2), (2, 1)].into(), [(0, 2), (1, 1), (2, 1)].into()]
        );
        let chosen = run(template, &groups, 100);
        assert_eq!(
            (chosen.node_count(), chosen.ordering),
            (2, Ordering::NodeDotProduct)
        );
    }

    #[test]
    fn node_by_node_by_the_room_left_packs_where_the_dot_product_does_not() {
        // 3 x 1000m/3Gi, 2 x 1500m/2Gi, 1 x 2000m/1Gi: two full nodes (2000 + 1000 + 1000, 1500 + 1500 +
        // 1000), which only the pod that leaves the least room finds.
        let template = node(4000, 16, 110);
        let groups = [
            (pod("a", 1000, 3 * 1024, Scheduling::default()), 3),
            (pod("b", 1500, 2 * 1024, Scheduling::default()), 2),
            (pod("c", 2000, 1024, Scheduling::default()), 1),
        ];
        let l2 = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::NodeL2Norm),
        );
        let dot = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::NodeDotProduct),
        );
        assert_eq!((l2.node_count(), dot.node_count()), (2, 3));
        assert_eq!(
            per_node(&l2),
            [[(0, 2), (2, 1)].into(), [(0, 1), (1, 2)].into()]
        );
        let chosen = run(template, &groups, 100);
        assert_eq!(
            (chosen.node_count(), chosen.ordering),
            (2, Ordering::NodeL2Norm)
        );
    }

    #[test]
    fn pods_that_depend_on_other_pods_are_not_picked_by_requests() {
        // Hostname anti-affinity: the searches that pick by requests would not see it, so they do not run.
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("a"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let template = node(4000, 16, 110);
        let groups = [
            (pod("a", 2000, 2 * 1024, anti), 2),
            (pod("b", 1500, 4 * 1024, Scheduling::default()), 2),
            (pod("c", 500, 6 * 1024, Scheduling::default()), 2),
        ];
        let chosen = run(template, &groups, 100);
        assert!(!chosen.ordering.by_requests(), "{:?}", chosen.ordering);
        assert_eq!(chosen.pods_placed(), 6);
    }

    #[test]
    fn upstreams_search_fills_the_last_node_before_adding_one() {
        // Within one group, once the older nodes are full, upstream tries only the node added last.
        let template = node(4000, 16, 110);
        let groups = [(pod("web", 1000, 1024, Scheduling::default()), 10)];
        let upstream = run_with(template, &groups, 100, 0, Some(Ordering::Upstream));
        let per_node: Vec<u64> = upstream.nodes.iter().map(|n| n.contents[0].1).collect();
        assert_eq!(per_node, [4, 4, 2]);
    }

    /// A group in three zones with `nodes` nodes in each already.
    fn zoned(groups: &[(Pod, u64)], nodes: [u64; 3]) -> Estimate {
        zoned_with(groups, nodes, None)
    }

    /// [`zoned`], in one ordering alone when one is given.
    fn zoned_with(groups: &[(Pod, u64)], nodes: [u64; 3], ordering: Option<Ordering>) -> Estimate {
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
        let limits = Limits {
            max_nodes: 100,
            deadline: None,
        };
        match ordering {
            None => estimate(&topology, &[], templates, &demands, limits),
            Some(o) => pack(&topology, &[], templates, &demands, limits, o),
        }
    }

    fn zones_of(estimate: &Estimate) -> Vec<&str> {
        estimate
            .nodes
            .iter()
            .map(|n| n.node.labels[ZONE_LABEL].as_str())
            .collect()
    }

    #[test]
    fn a_multi_zone_group_launches_in_the_zone_with_the_fewest_nodes() {
        let groups = [(pod("web", 3000, 1024, Scheduling::default()), 4)];
        let estimate = zoned(&groups, [1, 0, 0]);
        assert_eq!(
            zones_of(&estimate),
            ["us-east-1b", "us-east-1c", "us-east-1a", "us-east-1b"]
        );
        // Zonal anti-affinity, which one zone can hold once, is planned across the three.
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("zk"),
                namespaces: Some(vec!["default".into()]),
                topology_key: ZONE_LABEL.into(),
            }],
            ..Default::default()
        };
        let estimate = zoned(&[(pod("zk", 100, 100, anti), 3)], [0, 0, 0]);
        assert_eq!((estimate.pods_placed(), estimate.node_count()), (3, 3));
        assert_eq!(
            zones_of(&estimate),
            ["us-east-1a", "us-east-1b", "us-east-1c"]
        );
        // A pod pinned to one zone gets its node there, whatever the balance.
        let pinned = Scheduling {
            node_selector: [(ZONE_LABEL.to_string(), "us-east-1a".to_string())].into(),
            ..Default::default()
        };
        let estimate = zoned(&[(pod("a", 3000, 100, pinned), 2)], [5, 0, 0]);
        assert_eq!(zones_of(&estimate), ["us-east-1a", "us-east-1a"]);
    }

    #[test]
    fn a_pod_pinned_to_a_zone_shares_no_node_in_another() {
        // The unpinned pod's node goes to the emptiest zone; the pinned pod would fit beside it by its
        // requests, but not by its node selector.
        let pinned = Scheduling {
            node_selector: [(ZONE_LABEL.to_string(), "us-east-1a".to_string())].into(),
            ..Default::default()
        };
        let groups = [
            (pod("big", 3000, 1024, Scheduling::default()), 1),
            (pod("a", 500, 100, pinned), 1),
        ];
        let estimate = zoned(&groups, [5, 0, 0]);
        for place in &estimate.nodes {
            for &(d, _) in &place.contents {
                let pod = &groups[d].0;
                assert!(
                    predicates::node_fit(&pod.scheduling, &place.node).is_ok(),
                    "{} on a node in {} ({:?})",
                    pod.name,
                    place.node.labels[ZONE_LABEL],
                    estimate.ordering
                );
            }
        }
        assert_eq!(zones_of(&estimate), ["us-east-1b", "us-east-1a"]);
    }

    #[test]
    fn a_zone_spread_packs_new_nodes_evenly_across_zones() {
        let spread = Scheduling {
            spread: vec![SpreadConstraint::new(1, ZONE_LABEL, app_selector("api"))],
            ..Default::default()
        };
        // 12 pods, 4 a node by cpu: one node in each zone, 4 pods each.
        let estimate = zoned(&[(pod("api", 1000, 100, spread), 12)], [0, 0, 0]);
        assert_eq!((estimate.pods_placed(), estimate.node_count()), (12, 3));
        let per_node: Vec<u64> = estimate
            .nodes
            .iter()
            .map(|n| n.contents.iter().map(|c| c.1).sum())
            .collect();
        assert_eq!(per_node, [4, 4, 4]);
    }

    mod properties {
        //! Whatever the pods and the template, the estimator never breaks a predicate and never adds a node
        //! without a pod on it.
        use super::*;
        use crate::model::taint::{Taint, TaintEffect, Toleration};
        use proptest::prelude::*;

        /// One equivalence group: cpu, memory (MiB), count, and which constraints it carries.
        #[derive(Clone, Debug)]
        struct Group {
            cpu: u64,
            mem_mi: u64,
            count: u64,
            selector: Option<&'static str>,
            tolerates: bool,
            host_port: bool,
            anti_affinity: bool,
        }

        fn group() -> impl Strategy<Value = Group> {
            (
                0u64..5000,
                0u64..20_000,
                1u64..40,
                prop::option::of(prop::sample::select(vec!["a", "b"])),
                any::<bool>(),
                prop::bool::weighted(0.2),
                prop::bool::weighted(0.2),
            )
                .prop_map(
                    |(cpu, mem_mi, count, selector, tolerates, host_port, anti_affinity)| Group {
                        cpu,
                        mem_mi,
                        count,
                        selector,
                        tolerates,
                        host_port,
                        anti_affinity,
                    },
                )
        }

        fn template(cpu: u64, mem_gi: u64, pods: u64, tier: &str, tainted: bool) -> Arc<Node> {
            let mut n = (*node(cpu, mem_gi, pods)).clone();
            n.labels.insert("tier".into(), tier.into());
            if tainted {
                n.taints.push(Taint {
                    key: "dedicated".into(),
                    value: "batch".into(),
                    effect: TaintEffect::NoSchedule,
                });
            }
            Arc::new(n)
        }

        fn to_pod(i: usize, g: &Group) -> Pod {
            let app = format!("app-{i}");
            let scheduling = Scheduling {
                node_selector: g
                    .selector
                    .map(|t| [("tier".to_string(), t.to_string())].into())
                    .unwrap_or_default(),
                tolerations: if g.tolerates {
                    vec![Toleration {
                        key: Some("dedicated".into()),
                        exists: true,
                        value: String::new(),
                        effect: None,
                    }]
                } else {
                    vec![]
                },
                host_ports: if g.host_port {
                    vec![HostPort {
                        protocol: "TCP".into(),
                        port: 9100,
                        ip: String::new(),
                    }]
                } else {
                    vec![]
                },
                anti_affinity: if g.anti_affinity {
                    vec![PodAffinityTerm {
                        selector: app_selector(&app),
                        namespaces: Some(vec!["default".into()]),
                        topology_key: HOSTNAME_LABEL.into(),
                    }]
                } else {
                    vec![]
                },
                ..Default::default()
            };
            pod(&app, g.cpu, g.mem_mi, scheduling)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]
            /// Never more nodes than cluster-autoscaler's own search run alone, never fewer pods placed, and
            /// never below the lower bound, on random resource-only mixes.
            #[test]
            fn never_more_nodes_than_upstreams_search(
                cpu in 1000u64..16_000,
                mem_gi in 2u64..64,
                max_pods in 8u64..110,
                shapes in prop::collection::vec((50u64..4000, 64u64..16_384, 1u64..60), 1..12),
            ) {
                let node = node(cpu, mem_gi, max_pods);
                let pods: Vec<(Pod, u64)> = shapes
                    .iter()
                    .enumerate()
                    .map(|(i, (c, m, n))| (pod(&format!("s{i}"), *c, *m, Scheduling::default()), *n))
                    .collect();
                let ours = run(node.clone(), &pods, 10_000);
                let upstream = run_with(node.clone(), &pods, 10_000, 0, Some(Ordering::Upstream));
                prop_assert!(ours.pods_placed() >= upstream.pods_placed());
                // The orderings skipped as repeats lose nothing: the estimate is the best of every ordering
                // packed alone.
                let alone = ORDERINGS.map(|o| run_with(node.clone(), &pods, 10_000, 0, Some(o)));
                let rank = |e: &Estimate| (e.pods_placed(), std::cmp::Reverse(e.node_count()));
                prop_assert_eq!(Some(rank(&ours)), alone.iter().map(rank).max());
                if ours.pods_placed() == upstream.pods_placed() {
                    prop_assert!(
                        ours.node_count() <= upstream.node_count(),
                        "ours {} nodes ({:?}), upstream {}", ours.node_count(), ours.ordering,
                        upstream.node_count()
                    );
                }
                let fitting: Vec<(Pod, u64)> = pods
                    .iter()
                    .filter(|(p, _)| node.allocatable.fits(&p.demand))
                    .cloned()
                    .collect();
                prop_assert!(ours.node_count() as u64 >= lower_bound(&node, &fitting));
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            /// In a group of three zones, every search puts a pod pinned to a zone on nodes of that zone only,
            /// however the pods that may go anywhere spread the group's new nodes.
            #[test]
            fn pods_pinned_to_a_zone_stay_in_it(
                shapes in prop::collection::vec((50u64..4000, 64u64..16_384, 1u64..20, prop::option::of(0usize..3)), 1..8),
                nodes in prop::array::uniform3(0u64..4),
            ) {
                let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
                let pods: Vec<(Pod, u64)> = (shapes.iter().enumerate())
                    .map(|(i, &(cpu, mem, count, zone))| {
                        let scheduling = Scheduling {
                            node_selector: zone
                                .map(|z| [(ZONE_LABEL.to_string(), zones[z].to_string())].into())
                                .unwrap_or_default(),
                            ..Default::default()
                        };
                        (pod(&format!("s{i}"), cpu, mem, scheduling), count)
                    })
                    .collect();
                for ordering in ORDERINGS {
                    let estimate = zoned_with(&pods, nodes, Some(ordering));
                    prop_assert_eq!(estimate.pods_placed(), pods.iter().map(|(_, n)| n).sum::<u64>());
                    for place in &estimate.nodes {
                        for &(d, _) in &place.contents {
                            let pod = &pods[d].0;
                            prop_assert!(
                                predicates::node_fit(&pod.scheduling, &place.node).is_ok(),
                                "{:?}: {} on a node in {}", ordering, pod.name, place.node.labels[ZONE_LABEL]
                            );
                        }
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn no_predicate_broken_and_no_node_without_a_pod(
                cpu in 500u64..16_000,
                mem_gi in 1u64..64,
                max_pods in 1u64..110,
                tier in prop::sample::select(vec!["a", "b"]),
                tainted in any::<bool>(),
                groups in prop::collection::vec(group(), 1..5),
                max_nodes in 0u64..50,
            ) {
                let node = template(cpu, mem_gi, max_pods, tier, tainted);
                let pods: Vec<(Pod, u64)> =
                    groups.iter().enumerate().map(|(i, g)| (to_pod(i, g), g.count)).collect();
                let estimate = run(node.clone(), &pods, max_nodes);

                prop_assert!(estimate.node_count() as u64 <= max_nodes);
                prop_assert!(estimate.node_count() as u64 <= estimate.pods_placed());
                for (placed, (_, count)) in estimate.placed.iter().zip(&pods) {
                    prop_assert!(placed <= count);
                }
                let mut per_demand = vec![0u64; pods.len()];
                for place in &estimate.nodes {
                    prop_assert!(place.contents.iter().any(|(_, n)| *n > 0), "a node with no pod");
                    let mut used = Resources::default();
                    let mut port_users = 0;
                    for &(d, n) in &place.contents {
                        let (p, _) = &pods[d];
                        per_demand[d] += n;
                        prop_assert!(
                            predicates::node_fit(&p.scheduling, &node).is_ok(),
                            "{} placed on a node it does not fit: selector {:?}, taints {:?}",
                            p.name, p.scheduling.node_selector, node.taints
                        );
                        if groups[d].anti_affinity {
                            prop_assert!(n <= 1, "{n} pods of {} with hostname anti-affinity", p.name);
                        }
                        if groups[d].host_port {
                            port_users += n;
                        }
                        used.cpu_millis += p.demand.cpu_millis * n;
                        used.memory_bytes += p.demand.memory_bytes * n;
                        used.pods += n;
                    }
                    prop_assert!(port_users <= 1, "{port_users} pods on one host port");
                    let a = node.allocatable;
                    prop_assert!(
                        used.cpu_millis <= a.cpu_millis
                            && used.memory_bytes <= a.memory_bytes
                            && used.pods <= a.pods,
                        "overcommitted: {used:?} on {a:?}"
                    );
                }
                prop_assert_eq!(per_demand, estimate.placed.clone());
            }
        }
    }

    mod completeness {
        //! Karpenter's benchmark mix in small: pods with hostname and zone affinity to other pods' labels,
        //! hostname anti-affinity, zone and hostname spread, and none. Whatever the estimator leaves
        //! unplaced would fit on no node of its plan, and on no further new node while the limit allows one:
        //! a pod reported "no scale-up" is one the plan could not hold. And what it places, replayed step by
        //! step, the scheduler's predicates allow.
        use super::*;
        use crate::simulator::world;
        use proptest::prelude::*;

        #[derive(Clone, Copy, Debug)]
        enum Constraint {
            None,
            /// Wants a pod labelled `my-label=<value>` on its node, or in its zone.
            Affinity {
                value: usize,
                zone: bool,
            },
            /// One per node with its own app.
            AntiAffinity,
            /// Its own app spread by zone or by node, max skew 1.
            Spread {
                zone: bool,
            },
        }

        fn constraint() -> impl Strategy<Value = Constraint> {
            prop_oneof![
                Just(Constraint::None),
                (0usize..3, any::<bool>())
                    .prop_map(|(value, zone)| Constraint::Affinity { value, zone }),
                Just(Constraint::AntiAffinity),
                any::<bool>().prop_map(|zone| Constraint::Spread { zone }),
            ]
        }

        const VALUES: [&str; 3] = ["a", "b", "c"];

        fn to_pod(i: usize, cpu: u64, mem_mi: u64, label: usize, constraint: Constraint) -> Pod {
            let app = format!("app-{i}");
            let key = |zone: bool| if zone { ZONE_LABEL } else { HOSTNAME_LABEL };
            let term = |selector: LabelSelector, zone: bool| PodAffinityTerm {
                selector,
                namespaces: Some(vec!["default".into()]),
                topology_key: key(zone).into(),
            };
            let scheduling = match constraint {
                Constraint::None => Scheduling::default(),
                Constraint::Affinity { value, zone } => Scheduling {
                    affinity: vec![term(
                        LabelSelector {
                            match_labels: [("my-label".into(), VALUES[value].into())].into(),
                            expressions: vec![],
                        },
                        zone,
                    )],
                    ..Default::default()
                },
                Constraint::AntiAffinity => Scheduling {
                    anti_affinity: vec![term(app_selector(&app), false)],
                    ..Default::default()
                },
                Constraint::Spread { zone } => Scheduling {
                    spread: vec![SpreadConstraint::new(1, key(zone), app_selector(&app))],
                    ..Default::default()
                },
            };
            let mut pod = pod(&app, cpu, mem_mi, scheduling);
            pod.labels.insert("my-label".into(), VALUES[label].into());
            pod
        }

        type Group = (u64, u64, u64, usize, Constraint);

        /// The groups' pods (cpu, memory in MiB, count, label, constraint), the topology they registered
        /// and their terms.
        fn mix(groups: &[Group]) -> (Vec<(Pod, u64)>, Topology, Vec<PodTerms>) {
            let pods: Vec<(Pod, u64)> = groups
                .iter()
                .enumerate()
                .map(|(i, &(cpu, mem, count, label, c))| (to_pod(i, cpu, mem, label, c), count))
                .collect();
            let mut topology = Topology::default();
            for (p, _) in &pods {
                topology.register(p);
            }
            let terms = pods.iter().map(|(p, _)| topology.resolve(p)).collect();
            (pods, topology, terms)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn no_pod_left_unplaced_fits_the_plan(
                groups in prop::collection::vec(
                    (50u64..3000, 64u64..8000, 1u64..12, 0usize..3, constraint()), 1..8),
                max_nodes in 1u64..40,
            ) {
                let (pods, mut topology, terms) = mix(&groups);
                let template = topology.place(node(4000, 16, 30), Some(0), PlaceKind::Planned);
                let demands = demands(&pods, &terms);
                let limits = Limits { max_nodes, deadline: None };
                let estimate =
                    estimate(&topology, &[], Templates::one(&template), &demands, limits);
                let mut after = estimate.topology.clone();
                let another = after.copy(&template, PlaceKind::Planned);
                let room_for_another = (estimate.node_count() as u64) < max_nodes;
                for (d, (pod, count)) in pods.iter().enumerate() {
                    if estimate.placed[d] == *count {
                        continue;
                    }
                    for (n, place) in estimate.nodes.iter().enumerate() {
                        let why = world::unfit(&estimate.topology, &estimate.nodes, pod, &terms[d], place);
                        prop_assert!(
                            !why.is_empty(),
                            "{} of {} {} left unplaced, though one fits on plan node {n} of {}",
                            count - estimate.placed[d], count, pod.name, estimate.node_count()
                        );
                    }
                    if room_for_another {
                        let mut places = estimate.nodes.clone();
                        places.push(another.clone());
                        let why = world::unfit(&after, &places, pod, &terms[d], &another);
                        prop_assert!(
                            !why.is_empty(),
                            "{} of {} {} left unplaced, though one fits on a new node ({} of at most {})",
                            count - estimate.placed[d], count, pod.name, estimate.node_count(), max_nodes
                        );
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            /// The plan, replayed step by step from the cluster as it was (nodes beside it with pods of the
            /// same groups, a group in up to three zones): each pod is one the scheduler's predicates admit
            /// on its node given the pods and nodes before it.
            #[test]
            fn every_step_of_the_plan_is_one_the_scheduler_allows(
                groups in prop::collection::vec(
                    (50u64..3000, 64u64..8000, 1u64..12, 0usize..3, constraint()), 1..8),
                max_nodes in 1u64..40,
                zones in 1usize..=3,
                beside in prop::collection::vec((0usize..3, 0usize..8), 0..4),
            ) {
                let (pods, mut topology, terms) = mix(&groups);
                let in_zone = |zone: usize| {
                    let mut n = (*node(4000, 16, 30)).clone();
                    n.labels.insert(ZONE_LABEL.into(), format!("us-east-1{}", ["a", "b", "c"][zone]));
                    Arc::new(n)
                };
                // Nodes already there, each with one pod of a group on it.
                let mut existing = Vec::new();
                for &(zone, group) in &beside {
                    let mut place = topology.place(in_zone(zone), None, PlaceKind::Existing);
                    let (pod, _) = &pods[group % pods.len()];
                    topology.put(pod, &topology.resolve_placed(pod), &mut place, 1);
                    existing.push(place);
                }
                let templates: Vec<Place> = (0..zones)
                    .map(|z| topology.place(in_zone(z), Some(0), PlaceKind::Planned))
                    .collect();
                let demands = demands(&pods, &terms);
                let limits = Limits { max_nodes, deadline: None };
                let nodes = vec![0; zones];
                let templates_of = Templates { zones: &templates, nodes: &nodes };
                let estimate = estimate(&topology, &existing, templates_of, &demands, limits);

                let mut replay = topology.clone();
                let mut places = existing.clone();
                let mut placed = vec![0u64; pods.len()];
                for (i, step) in estimate.steps.iter().enumerate() {
                    match *step {
                        Step::Add { zone } => {
                            let fresh = replay.copy(&templates[zone], PlaceKind::Planned);
                            places.push(fresh);
                        }
                        Step::Put { node, demand, count } => {
                            let (pod, terms) = (&pods[demand].0, &terms[demand]);
                            let at = existing.len() + node;
                            for _ in 0..count {
                                let why = world::unfit(&replay, &places, pod, terms, &places[at]);
                                prop_assert!(
                                    why.is_empty(),
                                    "step {i}: {} on new node {node} breaks {why:?}", pod.name
                                );
                                replay.put(pod, terms, &mut places[at], 1);
                            }
                            placed[demand] += count;
                        }
                    }
                }
                prop_assert_eq!(&placed, &estimate.placed);
                let used = places[existing.len()..].iter().filter(|p| p.free != templates[0].free);
                prop_assert_eq!(used.count(), estimate.node_count());
            }
        }
    }

    #[test]
    fn orderings_that_take_groups_in_the_same_runs_are_one_packing() {
        let template = Topology::default().place(node(1000, 5, 100), Some(0), PlaceKind::Planned);
        let runs_of = |groups: &[(Pod, u64)]| {
            let terms: Vec<PodTerms> = groups.iter().map(|_| PodTerms::default()).collect();
            let demands = demands(groups, &terms);
            ORDERINGS.map(|o| runs(&demands, &template, o))
        };
        // Upstream's benchmark: two shapes of one proportion come first-big in every score.
        let proportional = [
            (pod("small", 50, 100, Scheduling::default()), 50_000),
            (pod("big", 95, 190, Scheduling::default()), 1_000),
        ];
        let [upstream, sum, dominant, cpu, memory, ..] = runs_of(&proportional);
        assert_eq!(upstream, [vec![1], vec![0]]);
        assert_eq!([&dominant, &cpu, &memory], [&sum; 3]);
        // A cpu-heavy and a memory-heavy shape: each resource's order puts its own heavy shape first.
        let mixed = [
            (pod("cpu", 600, 500, Scheduling::default()), 10),
            (pod("mem", 100, 3000, Scheduling::default()), 10),
        ];
        let [_, _, _, cpu, memory, ..] = runs_of(&mixed);
        assert_eq!(
            (cpu, memory),
            (vec![vec![0], vec![1]], vec![vec![1], vec![0]])
        );
    }

    #[test]
    fn groups_that_score_alike_pack_as_tightly_as_single_pods() {
        // 1,000 pods of 36 shapes (cpu 100m-4, memory 128Mi-8Gi), as equivalence groups collapse pods with
        // per-pod labels, and as 1,000 groups of one: cpu-heavy and memory-heavy shapes with the same score
        // must still share nodes.
        const CPU: [u64; 6] = [100, 250, 500, 1000, 2000, 4000];
        const MEM: [u64; 6] = [128, 512, 1024, 2048, 4096, 8192];
        let shapes: Vec<(u64, u64)> = (0..1000)
            .map(|i| (CPU[i * 7 % 6], MEM[i * 11 / 6 % 6]))
            .collect();
        let single: Vec<(Pod, u64)> = shapes
            .iter()
            .enumerate()
            .map(|(i, &(c, m))| (pod(&format!("p-{i}"), c, m, Scheduling::default()), 1))
            .collect();
        let mut counts: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for shape in &shapes {
            *counts.entry(*shape).or_default() += 1;
        }
        let grouped: Vec<(Pod, u64)> = counts
            .iter()
            .map(|(&(c, m), &n)| (pod("g", c, m, Scheduling::default()), n))
            .collect();
        let alone = run(node(16000, 64, 110), &single, 1000);
        let together = run(node(16000, 64, 110), &grouped, 1000);
        assert_eq!((alone.pods_placed(), together.pods_placed()), (1000, 1000));
        // 1,308 cores of pods on 16-core nodes: 82 at the very least.
        assert_eq!(alone.node_count(), 82);
        assert_eq!(together.node_count(), 82, "{:?}", together.ordering);
    }
}
