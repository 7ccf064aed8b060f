//! After the repair, on small plans only: every placement of the pods searched, for pods with required pod
//! affinity still left out. The searches and the repair never move more than one thing at a time, so a pod
//! that needs two changes at once (a chain of zonal partners, each placed in another zone) or an order no
//! search takes (partners packed first, alone on a node of the pod's zone) stays out where an exhaustive
//! search places it. Here, depth first, each pod next goes onto a node the search added or onto a new node
//! in any zone of the group that takes it; every plan reached is a candidate (the pods not yet put are left
//! out). Branch and bound: a plan that cannot place more pods than the best found (the plan it got at
//! first), or as many on fewer nodes, is not followed. Symmetry: pods of one demand are alike and new nodes
//! of one zone are interchangeable, so a plan is visited once whatever the order of its pods and nodes (its
//! nodes' zones and pods, sorted), nodes alike are tried once, and one new node per zone. Each pod is put
//! through the searches' own predicates (`Filling::fill` on the plan's nodes) and taken off again
//! (`Topology::take`) when the search backs up.
//!
//! It runs only when the plan has at most [`EXACT_PODS`] pods, and a pod wanting partners that are pending
//! too is left out or the plan may have more nodes than it needs (`loose`), within [`EXACT_WORK`] and the
//! deadline: nothing for big plans. The best plan found is
//! taken again through the predicates as the repair takes its plans, what it left out offered the plan and
//! new nodes as the searches offer them (a search stopped by its bound may leave out a pod that fits), and
//! kept only when it places more pods than the plan it got, or as many on fewer nodes.

use super::plan::{
    Demand, Estimate, EstimateLimits, PlanStep, Templates, Zones, nodes_apart, nodes_at_least,
    own_hostname_term,
};
use super::replan::Replan;
use crate::simulator::Filling;
use crate::simulator::SpreadMins;
use crate::simulator::{Partners, Place, PlaceKind, Topology};
use std::collections::HashSet;
use std::time::Instant;

/// The most pending pods (over every demand) a plan may have for the exhaustive search to run: the plans it
/// visits grow about as the number of ways to share the pods out.
pub(super) const EXACT_PODS: u64 = 12;
/// Pods put (tried on a node) per estimate: beyond it the best plan found so far is what the search gives.
pub(super) const EXACT_WORK: u64 = 1 << 16;
/// The same for a plan that may have more nodes than its placed pods need (`loose`): a quarter of the
/// bound, as such plans are common (any small scale-up with anti-affinity or a spread) and what the search
/// takes off them it finds early: on the oracle's 2,700 fixed-seed mixes, 2,699 at the optimum with this
/// bound, all 2,700 with four times it.
const LOOSE_WORK: u64 = 1 << 14;

/// `estimate` replaced by the best plan an exhaustive search finds when it places more pods (or as many on
/// fewer nodes); `estimate` itself when none does, or when the search does not run: more than
/// [`EXACT_PODS`] pods, no pod with required pod affinity left out whose partners are pending too and no
/// node the plan may not need (`loose`), or the deadline passed.
///
/// `cluster` is the cluster as it was and the demands; `work` bounds the pods put ([`EXACT_WORK`] in the
/// estimate).
pub(super) fn exact(cluster: &Replan, estimate: Estimate, work: u64) -> Estimate {
    let Replan {
        topology,
        existing,
        templates,
        demands,
        limits,
    } = *cluster;
    // The plan's size first: what follows pairs demands, and big plans never run.
    let pods = demands.iter().map(|d| d.count).fold(0, u64::saturating_add);
    if pods > EXACT_PODS {
        return estimate;
    }
    // A pod whose partners are only on the cluster's nodes, or nowhere, is not helped by any other placement
    // of the pending pods (as in the repair); searching for it would spend the whole work bound every loop
    // while it waits (a pod wanting a label no pod has).
    let partners = Partners::of(demands.iter().map(|d| d.terms));
    let wanting = (demands.iter().zip(&estimate.placed))
        .any(|(d, &k)| k < d.count && d.terms.wants_partners() && partners.any_for(d.terms));
    let work = match wanting {
        true => work,
        false if loose(&estimate, templates, demands) => work.min(LOOSE_WORK),
        false => return estimate,
    };
    let zones: Vec<Option<Zones>> = (demands.iter())
        .map(|d| Zones::of(templates, d.pod).ok())
        .collect();
    // Pods no zone of the group takes are never placed: they do not count as pods still to place.
    let left = (demands.iter().zip(&zones))
        .map(|(d, z)| if z.is_some() { d.count } else { 0 })
        .collect();
    let mut search = Search {
        existing,
        templates,
        demands,
        limits,
        zones,
        topology: topology.clone(),
        mins: SpreadMins::default(),
        nodes: Vec::new(),
        zone: Vec::new(),
        counts: Vec::new(),
        left,
        path: Vec::new(),
        best: (estimate.pods_placed(), estimate.node_count()),
        best_path: None,
        seen: HashSet::new(),
        work: 0,
        bound: work,
        spent: false,
    };
    search.visit();
    let Some(path) = search.best_path else {
        return estimate;
    };
    // Taken again through the predicates as the repair takes its plans (`None` when a step no longer fits),
    // what it left out offered the plan: a search stopped by its bound may leave out a pod that fits.
    match cluster.replan(&estimate, &steps(&path), 0, None) {
        Some(better)
            if (better.pods_placed(), std::cmp::Reverse(better.node_count()))
                > (
                    estimate.pods_placed(),
                    std::cmp::Reverse(estimate.node_count()),
                ) =>
        {
            better
        }
        _ => estimate,
    }
}

/// Whether a small plan may have more nodes than it needs because of the order its pods were taken in: some
/// pod's place depends on other pods' (anti-affinity, spread, affinity), and the plan has more nodes than the
/// fewest its placed pods need (their requests, or the most pods one hostname term keeps apart). The greedy
/// searches take such pods in one order, the biggest first, and a spread by node counts the nodes already
/// there, so an order that puts the spread pods first can need fewer nodes. On small random mixes with those
/// constraints, the greedy order alone left one plan in fifty one or two nodes over the optimum.
fn loose(estimate: &Estimate, templates: Templates, demands: &[Demand]) -> bool {
    if demands.iter().all(|d| d.terms.simple) {
        return false;
    }
    let placed: Vec<Demand> = (demands.iter().zip(&estimate.placed))
        .map(|(d, &count)| Demand { count, ..*d })
        .collect();
    let terms: Vec<_> = placed.iter().map(own_hostname_term).collect();
    let fewest = nodes_at_least(templates.first(), &placed).max(nodes_apart(&placed, &terms));
    estimate.node_count() as u64 > fewest
}

/// One pod put in the search: onto node `node`, a new one when `new`.
#[derive(Clone, Copy)]
struct Move {
    node: usize,
    demand: usize,
    new: Option<usize>,
}

/// The search in progress: the plan it is at (nodes, counts, the topology with their pods), undone as it
/// backs up, and the best plan found.
struct Search<'a> {
    existing: &'a [Place],
    templates: Templates<'a>,
    demands: &'a [Demand<'a>],
    limits: EstimateLimits,
    /// The zones each demand's pods may go to; `None` for none.
    zones: Vec<Option<Zones>>,
    topology: Topology,
    mins: SpreadMins,
    nodes: Vec<Place>,
    /// The zone of each node, and its pods per demand.
    zone: Vec<usize>,
    counts: Vec<Vec<u64>>,
    /// Pods of each demand not yet put.
    left: Vec<u64>,
    path: Vec<Move>,
    /// (pods placed, nodes) of the best plan: at first the plan the search got, which it must beat.
    best: (u64, usize),
    best_path: Option<Vec<Move>>,
    /// Plans visited, as their nodes' zones and counts, sorted.
    seen: HashSet<Vec<(usize, Vec<u64>)>>,
    work: u64,
    bound: u64,
    /// The work bound or the deadline was reached: the search unwinds.
    spent: bool,
}

impl Search<'_> {
    fn visit(&mut self) {
        let placed: u64 = self.counts.iter().flatten().sum();
        let nodes = self.nodes.len();
        let better = |(pods, nodes): (u64, usize), (than_pods, than_nodes): (u64, usize)| {
            (pods, std::cmp::Reverse(nodes)) > (than_pods, std::cmp::Reverse(than_nodes))
        };
        if better((placed, nodes), self.best) {
            self.best = (placed, nodes);
            self.best_path = Some(self.path.clone());
        }
        // Below, no pod comes off and no node goes: at most every pod left is placed, on as many nodes.
        let most = placed + self.left.iter().sum::<u64>();
        if most < self.best.0 || (most == self.best.0 && nodes >= self.best.1) {
            return;
        }
        let mut key: Vec<(usize, Vec<u64>)> = (self.zone.iter().copied())
            .zip(self.counts.iter().cloned())
            .collect();
        key.sort();
        if !self.seen.insert(key) {
            return;
        }
        for d in 0..self.demands.len() {
            if self.left[d] == 0 {
                continue;
            }
            for n in 0..nodes {
                let alike = (0..n)
                    .any(|m| self.zone[m] == self.zone[n] && self.counts[m] == self.counts[n]);
                let in_zones = self.zones[d].as_ref().is_some_and(|z| z.has(self.zone[n]));
                if alike || !in_zones {
                    continue;
                }
                self.try_put(d, n, None);
                if self.spent {
                    return;
                }
            }
            if nodes as u64 >= self.limits.max_nodes {
                continue;
            }
            for z in 0..self.templates.zones.len() {
                if self.zones[d].as_ref().is_some_and(|zones| zones.has(z)) {
                    self.try_put(d, nodes, Some(z));
                    if self.spent {
                        return;
                    }
                }
            }
        }
    }

    /// One pod of demand `d` put on node `n` (a new node of zone `new`, when given), the plans after it
    /// searched, and the pod (and node) taken off again.
    fn try_put(&mut self, d: usize, n: usize, new: Option<usize>) {
        if self.work >= self.bound || self.limits.deadline.is_some_and(|t| Instant::now() >= t) {
            self.spent = true;
            return;
        }
        self.work += 1;
        if let Some(z) = new {
            let fresh = (self.topology).copy(&self.templates.zones[z], PlaceKind::Planned);
            self.nodes.push(fresh);
            self.zone.push(z);
            self.counts.push(vec![0; self.demands.len()]);
        }
        // The minimums known now hold again once the pod is off: counts only grow while one is in use.
        let mins = self.mins.clone();
        let demand = self.demands[d];
        let filling = Filling::new(demand.pod, demand.terms);
        let (k, _) = filling.fill(
            &mut self.topology,
            &mut self.mins.with_others(self.existing),
            &mut self.nodes,
            n,
            1,
        );
        if k == 1 {
            self.counts[n][d] += 1;
            self.left[d] -= 1;
            self.path.push(Move {
                node: n,
                demand: d,
                new,
            });
            self.visit();
            self.path.pop();
            self.left[d] += 1;
            self.counts[n][d] -= 1;
            (self.topology).take(demand.pod, demand.terms, &mut self.nodes[n], 1);
        }
        self.mins = mins;
        if new.is_some() {
            self.nodes.pop();
            self.zone.pop();
            self.counts.pop();
        }
    }
}

/// A path of the search as a plan's steps: a node added before the first pod put on it, pods of one demand
/// put on one node in a row as one step.
fn steps(path: &[Move]) -> Vec<PlanStep> {
    let mut steps: Vec<PlanStep> = Vec::with_capacity(2 * path.len());
    for m in path {
        if let Some(zone) = m.new {
            steps.push(PlanStep::Add { zone });
        }
        match steps.last_mut() {
            Some(PlanStep::Put {
                node,
                demand,
                count,
            }) if *node == m.node && *demand == m.demand => {
                *count += 1;
            }
            _ => steps.push(PlanStep::Put {
                node: m.node,
                demand: m.demand,
                count: 1,
            }),
        }
    }
    steps
}
