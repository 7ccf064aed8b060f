//! The estimate of one group: the searches run in turn, the best kept, the search ended early when none
//! can beat what it has; and the packing of one search.

use super::affinity::offer_again;
use super::by_requests::{NODE_BY_NODE_WORK, best_fit, node_by_node};
use super::exact::{EXACT_WORK, exact};
use super::first_fit::{first_fit, upstream};
use super::improve::improve;
use super::packing::Packing;
use super::plan::{
    Demand, Estimate, EstimateLimits, ORDERINGS, Ordering, PlanStep, Stop, Templates, Zones,
    nodes_apart, nodes_at_least, own_hostname_term,
};
use super::repair::repair;
use super::replan::Replan;
use crate::model::{Pod, PodAffinityTerm};
use crate::simulator::Filling;
use crate::simulator::FreeTree;
use crate::simulator::how_many;
use crate::simulator::{Place, Topology};
use std::time::Instant;

/// Estimates the nodes of the group whose templates are `templates`: the best of the searches ([`search`]),
/// pods its pod affinity left out placed by moving their partners ([`repair`]) and, on small plans, by an
/// exhaustive search ([`exact`]), improved after ([`improve`]). `existing` are the cluster's places, read for
/// topology spread minimums.
pub fn estimate(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: EstimateLimits,
) -> Estimate {
    let best = search(topology, existing, templates, demands, limits);
    let ordering = best.ordering;
    let cluster = Replan {
        topology,
        existing,
        templates,
        demands,
        limits,
    };
    let first = |p| pack_first(&cluster, ordering, p);
    let best = repair(cluster, &first, best);
    let best = exact(&cluster, best, EXACT_WORK);
    improve(topology, existing, templates, demands, limits, best)
}

/// The best of the searches, as they packed it. Upstream's estimate is the first taken: another ordering replaces it
/// only by placing more pods, or as many on fewer nodes. A first-fit ordering that would take the groups in
/// the same runs as one already packed packs the same way, so it is not packed again (two shapes of one
/// proportion, as upstream's own benchmark has, come in one order whatever the score).
pub fn search(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: EstimateLimits,
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
        let share = EstimateLimits { deadline, ..limits };
        let other = pack(topology, existing, templates, demands, share, ordering);
        best = Some(better_of(best, other));
    }
    let best = best.expect("at least one ordering");
    let cluster = Replan {
        topology,
        existing,
        templates,
        demands,
        limits,
    };
    slots_first(&cluster, best, &packed, (pods, at_least))
}

/// Whichever of `best` and `other` places more pods, or as many on fewer nodes; `best` on a tie.
fn better_of(best: Option<Estimate>, other: Estimate) -> Estimate {
    match best {
        Some(best)
            if (other.pods_placed(), std::cmp::Reverse(other.node_count()))
                <= (best.pods_placed(), std::cmp::Reverse(best.node_count())) =>
        {
            best
        }
        _ => other,
    }
}

/// `best`, or a first fit that takes the groups whose pods each need a node of their own
/// ([`own_hostname_term`]) before the others, when that does better: the runs of `best`'s ordering
/// (SumOfShares' after upstream's search or one that picks by requests), those groups' runs moved to the
/// front. Taken by size, bigger pods without such a constraint fill nodes first, and the pods that need a
/// node each then find no room beside them and get nodes alone (four such pods beside four pods two of
/// which fill a node: six nodes, where one of each on four nodes do). Taken first, they are slots the
/// other pods fill. One pack more, only for plans with both kinds of groups, and none when no plan could beat
/// `best`: the fewest nodes any plan needs are `bounds`' ([`unbeatable`]) or as many as the most pods one
/// hostname term keeps apart. Nor when `best` has no node the slots could take in ([`node_to_empty`]).
/// Runs that come out as ones already packed (`packed`) are not packed twice.
fn slots_first(
    cluster: &Replan,
    best: Estimate,
    packed: &[Vec<Vec<usize>>],
    (pods, at_least): (u64, u64),
) -> Estimate {
    let terms: Vec<Option<&PodAffinityTerm>> =
        cluster.demands.iter().map(own_hostname_term).collect();
    if terms.iter().all(Option::is_some) || terms.iter().all(Option::is_none) {
        return best;
    }
    let apart = nodes_apart(cluster.demands, &terms);
    if best.stopped == Some(Stop::TimeLimit)
        || unbeatable(&best, pods, at_least.max(apart))
        || !node_to_empty(&best, cluster.demands, &terms)
    {
        return best;
    }
    let ordering = if best.ordering.first_fit() {
        best.ordering
    } else {
        Ordering::SumOfShares
    };
    let (mut first, rest): (Vec<Vec<usize>>, Vec<Vec<usize>>) =
        (runs(cluster.demands, cluster.templates.first(), ordering).into_iter())
            .map(|run| {
                run.into_iter()
                    .partition::<Vec<usize>, _>(|&d| terms[d].is_some())
            })
            .unzip();
    first.extend(rest);
    first.retain(|run| !run.is_empty());
    if packed.contains(&first) {
        return best;
    }
    let other = pack_runs(cluster, ordering, &first);
    better_of(Some(best), other)
}

/// Whether `best` has a node without a pod of the groups that need a node each (`terms`) whose pods all fit
/// by their requests alone (`PodTerms::simple`): the node a slots-first pack would save, its
/// pods moved into the slots' free room. Pods whose place depends on other pods' (pod affinity, topology
/// spread) went where they are for that: on Karpenter's scheduling benchmark mix, the 27 nodes without a
/// slot all hold such pods, and taken first, its 3,333 slots left 3,300 of them unplaced, a pack (a quarter
/// of the loop) that could not win.
fn node_to_empty(best: &Estimate, demands: &[Demand], terms: &[Option<&PodAffinityTerm>]) -> bool {
    // What each node added holds: a pod at all (a node added and left empty is not in the plan), a slot pod,
    // a pod bound to others.
    const HELD: u8 = 1;
    const SLOT: u8 = 2;
    const BOUND: u8 = 4;
    let mut nodes: Vec<u8> = Vec::new();
    for step in best.steps.iter() {
        match *step {
            PlanStep::Add { .. } => nodes.push(0),
            PlanStep::Put { node, demand, .. } => {
                nodes[node] |= HELD;
                if terms[demand].is_some() {
                    nodes[node] |= SLOT;
                } else if !demands[demand].terms.simple {
                    nodes[node] |= BOUND;
                }
            }
        }
    }
    nodes.contains(&HELD)
}

/// The demands in the order `ordering` takes them, highest score first, in runs: groups that tie on the
/// score go together (upstream keeps every group apart: its own search does).
pub(super) fn runs(demands: &[Demand], template: &Place, ordering: Ordering) -> Vec<Vec<usize>> {
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

pub(super) fn score(pod: &Pod, template: &Place, ordering: Ordering) -> f64 {
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

/// One estimation in one `ordering`.
pub fn pack(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: EstimateLimits,
    ordering: Ordering,
) -> Estimate {
    let runs = if ordering.node_by_node() {
        Vec::new()
    } else {
        runs(demands, templates.first(), ordering)
    };
    let cluster = Replan {
        topology,
        existing,
        templates,
        demands,
        limits,
    };
    pack_runs(&cluster, ordering, &runs)
}

/// One estimation in `ordering` (upstream's or a first fit) with demand `p` taken first, the others in the
/// ordering's runs: the repair's other order ([`repair`]).
pub(super) fn pack_first(cluster: &Replan, ordering: Ordering, p: usize) -> Estimate {
    let mut runs = runs(cluster.demands, cluster.templates.first(), ordering);
    for run in &mut runs {
        run.retain(|&d| d != p);
    }
    runs.retain(|run| !run.is_empty());
    runs.insert(0, vec![p]);
    pack_runs(cluster, ordering, &runs)
}

/// One estimation of `cluster`'s demands in one `ordering`, taken in `runs`.
fn pack_runs(cluster: &Replan, ordering: Ordering, runs: &[Vec<usize>]) -> Estimate {
    let Replan {
        topology,
        existing,
        templates,
        demands,
        limits,
    } = *cluster;
    let expected = expected_nodes(templates.first(), demands, limits.max_nodes);
    let tree = if ordering == Ordering::BestFit {
        FreeTree::with_rooms(expected, &templates.first().free)
    } else {
        FreeTree::with_capacity(expected)
    };
    let mut packing = Packing::new(topology, existing, templates, limits, expected, tree);
    let mut placed = vec![0u64; demands.len()];
    let mut unfit = vec![None; demands.len()];
    if ordering.node_by_node() {
        node_by_node(&mut packing, demands, &mut placed, &mut unfit, ordering);
    }
    for run in runs {
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
                let per_node = how_many(
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
    packing.into_estimate(placed, unfit, ordering)
}

/// Whether no ordering can do better than `estimate`: it places all `pods` on the fewest nodes any packing
/// could use. Then the orderings after it are not packed (on upstream's own benchmark, its search alone).
pub(super) fn unbeatable(estimate: &Estimate, pods: u64, at_least: u64) -> bool {
    estimate.pods_placed() == pods && estimate.node_count() as u64 <= at_least
}

/// About how many nodes `demands` need on `template`: [`nodes_at_least`], a sixteenth more, within `max`. The
/// vectors that grow a node at a time are sized to it once: left to double, they copied every node planned so
/// far again and again, each time into memory never touched before, which a process's first loop pays a page
/// fault for (half of the binary's estimate on upstream's 51,000 pods). A pack that needs more grows as before.
pub(super) fn expected_nodes(template: &Place, demands: &[Demand], max: u64) -> usize {
    let bound = nodes_at_least(template, demands);
    let expected = bound.saturating_add(bound / 16).saturating_add(8);
    expected.min(max).min(1 << 20) as usize
}

/// Whether every pod's fit depends on its requests and the node alone (no constraint that looks at other
/// pods, no extended resource, which the tree leaves out): then the searches that pick by requests
/// ([`Ordering::by_requests`]) run.
pub(super) fn requests_alone(demands: &[Demand]) -> bool {
    (demands.iter()).all(|d| d.terms.simple && d.pod.extended.is_empty())
}
