//! After the searches: pods their required pod affinity left out, placed by changing where their partners
//! went. No search moves a pod it placed, so a pod whose partners went first to nodes (or a zone) it cannot
//! join stays out where an exhaustive search puts the partners with it (the smallest: a plain pod put in
//! zone a, then a pod pinned to zone b that wants it on its node). For each group with such pods left out,
//! in turn: its search is run again with it first (a pod matching its own affinity may go anywhere while no
//! partner is placed); one placed partner is moved to a planned or new node of a zone both may go to; one
//! pod beside a partner is taken off to make room; the partners' whole group is packed again in the zones
//! both take (partners that must stay with each other move only together). A changed plan is taken again
//! from the cluster as it was through the searches' predicates, the pods left out are offered it again as
//! the searches offer them, and it is kept only when every step holds and more pods are placed; then the
//! repair starts over from it.
//!
//! What it does not find: a pod that needs two changes at once, as a chain of partners in the pod's zone
//! (a pod wanting b in its zone, b wanting c in its zone, both partners placed in another zone).

use super::plan::{Demand, Estimate, EstimateLimits, PlanStep, Zones};
use super::replan::Replan;
use crate::simulator::Partners;
use std::time::Instant;

/// Pods taken again, over every move tried for one estimate: each try takes the whole plan again, so a
/// plan of many pods gets fewer tries (65,536 pods' worth: 16 tries of a plan of 4,000 pods).
const REPAIR_WORK: u64 = 1 << 16;
/// Nodes a partner is moved from, and planned nodes it is moved to, per pod left out and partner group:
/// what is tried before a new node.
const SOURCES: usize = 8;
const TARGETS: usize = 8;

/// `estimate` with pods left out for their required pod affinity placed, as long as a change places more
/// pods and the work bound and the deadline allow; `estimate` itself when none does. `cluster` is what every
/// changed plan is made whole from; `pack_first` runs the estimate's search again with a demand first.
/// Returns at once unless a pod is left out that has required pod affinity (no work for plans without).
pub(super) fn repair(
    cluster: Replan,
    pack_first: &dyn Fn(usize) -> Estimate,
    estimate: Estimate,
) -> Estimate {
    let demands = cluster.demands;
    let wanting = |e: &Estimate| {
        (demands.iter().zip(&e.placed)).any(|(d, &k)| k < d.count && d.terms.wants_partners())
    };
    if !wanting(&estimate) {
        return estimate;
    }
    let mut repair = Repair {
        cluster,
        pack_first,
        work: 0,
    };
    let mut best = estimate;
    while wanting(&best) {
        match repair.one_move(&best) {
            Some(better) => best = better,
            None => break,
        }
    }
    best
}

struct Repair<'a> {
    /// The cluster as it was and the demands, which every changed plan is made whole from.
    cluster: Replan<'a>,
    /// The plan's search packed again with a demand first (the searches are above this file).
    pack_first: &'a dyn Fn(usize) -> Estimate,
    /// Pods taken again so far.
    work: u64,
}

/// A node the plan added, as its steps say: its zone and the pods put on it per demand.
struct Added {
    zone: usize,
    pods: Vec<(usize, u64)>,
}

impl Added {
    fn holds(&self, demand: usize) -> bool {
        self.pods.iter().any(|&(d, k)| d == demand && k > 0)
    }
}

impl Repair<'_> {
    /// The first change (in the order of the module's doc) that places more pods than `plan`, as the plan
    /// it makes.
    fn one_move(&mut self, plan: &Estimate) -> Option<Estimate> {
        let added = added(&plan.steps);
        let templates = self.cluster.templates;
        let zones_of = |d: &Demand| Zones::of(templates, d.pod).ok();
        let partners = Partners::of(self.cluster.demands.iter().map(|d| d.terms));
        for (p, wants) in self.cluster.demands.iter().enumerate() {
            if plan.placed[p] == wants.count || !wants.terms.wants_partners() {
                continue;
            }
            // Partners placed only on the cluster's nodes stay where they are: no change of the plan helps.
            let pending = partners.any_for(wants.terms);
            let Some(p_zones) = zones_of(wants).filter(|_| pending) else {
                continue;
            };
            if let Some(better) = self.first(plan, p) {
                return Some(better);
            }
            for (q, partner) in self.cluster.demands.iter().enumerate() {
                if plan.placed[q] == 0 || !partner.terms.partner_of(wants.terms) {
                    continue;
                }
                let Some(q_zones) = zones_of(partner) else {
                    continue;
                };
                // Zones where both may go: the partner's new place must be one.
                let Some(within) = q_zones.within(&p_zones, templates.zones.len()) else {
                    continue;
                };
                let both: Vec<usize> = (0..templates.zones.len())
                    .filter(|&z| within.has(z))
                    .collect();
                // The partner's latest places first: the pods put after it there are fewest.
                let sources = (0..added.len()).rev().filter(|&s| added[s].holds(q));
                for s in sources.take(SOURCES) {
                    let planned = (0..added.len())
                        .filter(|&t| t != s && both.contains(&added[t].zone))
                        .take(TARGETS)
                        .map(RepairTarget::Planned);
                    for target in planned.chain(both.iter().map(|&z| RepairTarget::New(z))) {
                        if self.spent(plan) {
                            return None;
                        }
                        let Some(steps) =
                            moved(&plan.steps, &added, q, s, target, self.cluster.limits)
                        else {
                            continue;
                        };
                        let Some(next) = self.cluster.replan(plan, &steps, p, None) else {
                            continue;
                        };
                        if next.pods_placed() > plan.pods_placed() {
                            return Some(next);
                        }
                    }
                }
                // A partner's node full of others: one of them taken off, offered the plan again after the
                // pod left out.
                let beside = (0..added.len())
                    .rev()
                    .filter(|&s| added[s].holds(q) && within.has(added[s].zone));
                for s in beside.take(SOURCES) {
                    for &(x, _) in &added[s].pods {
                        if x == q || x == p {
                            continue;
                        }
                        if self.spent(plan) {
                            return None;
                        }
                        let Some(steps) = moved(
                            &plan.steps,
                            &added,
                            x,
                            s,
                            RepairTarget::Off,
                            self.cluster.limits,
                        ) else {
                            continue;
                        };
                        let next = self.cluster.replan(plan, &steps, p, None);
                        if let Some(next) = next.filter(|n| n.pods_placed() > plan.pods_placed()) {
                            return Some(next);
                        }
                    }
                }
                // Partners that hold each other (their own affinity, by node or by zone) move only
                // together: every pod of the group taken off and packed again, in the zones both take.
                if self.spent(plan) {
                    return None;
                }
                let steps: Vec<PlanStep> = (plan.steps.iter())
                    .filter(|s| !matches!(s, PlanStep::Put { demand, .. } if *demand == q))
                    .copied()
                    .collect();
                let next = self.cluster.replan(plan, &steps, p, Some((q, &within)));
                if let Some(next) = next.filter(|n| n.pods_placed() > plan.pods_placed()) {
                    return Some(next);
                }
            }
        }
        None
    }

    /// The plan's search packed again with demand `p` first: a pod that matches its own affinity may go
    /// anywhere while no partner is placed, which partners packed before it took away (a pod wanting its
    /// own kind on its node, left out beside a bigger pod of that label that went first).
    fn first(&mut self, plan: &Estimate, p: usize) -> Option<Estimate> {
        // Only the searches that take demands in an order: pods with affinity never go by requests alone.
        if plan.ordering.by_requests() || self.spent(plan) {
            return None;
        }
        let next = (self.pack_first)(p);
        (next.pods_placed() > plan.pods_placed()).then_some(next)
    }

    /// Whether the work bound or the deadline ends the repair; counts one more try of `plan` when not.
    fn spent(&mut self, plan: &Estimate) -> bool {
        if self.work >= REPAIR_WORK
            || self
                .cluster
                .limits
                .deadline
                .is_some_and(|d| Instant::now() >= d)
        {
            return true;
        }
        self.work += plan.pods_placed().max(1);
        false
    }
}

/// Where a pod taken off a node goes: a node the plan added, a new node in a zone, or back among the pods
/// left out (offered the plan again after the pod it made room for).
#[derive(Clone, Copy)]
enum RepairTarget {
    Planned(usize),
    New(usize),
    Off,
}

/// The nodes `steps` add, with their pods.
fn added(steps: &[PlanStep]) -> Vec<Added> {
    let mut added: Vec<Added> = Vec::new();
    for step in steps {
        match *step {
            PlanStep::Add { zone } => added.push(Added {
                zone,
                pods: Vec::new(),
            }),
            PlanStep::Put {
                node,
                demand,
                count,
            } => {
                let pods = &mut added[node].pods;
                match pods.iter_mut().find(|(d, _)| *d == demand) {
                    Some((_, k)) => *k += count,
                    None => pods.push((demand, count)),
                }
            }
        }
    }
    added
}

/// `steps` with one pod of demand `q` taken off node `s` (from its last step there) and put on `target`
/// after every other step; `None` when a new node would pass the limit on nodes.
fn moved(
    steps: &[PlanStep],
    added: &[Added],
    q: usize,
    s: usize,
    target: RepairTarget,
    limits: EstimateLimits,
) -> Option<Vec<PlanStep>> {
    let mut steps = steps.to_vec();
    let last = (steps.iter()).rposition(
        |step| matches!(*step, PlanStep::Put { node, demand, .. } if node == s && demand == q),
    )?;
    if let PlanStep::Put { count, .. } = &mut steps[last] {
        *count -= 1;
        if *count == 0 {
            steps.remove(last);
        }
    }
    let node = match target {
        RepairTarget::Off => return Some(steps),
        RepairTarget::Planned(t) => t,
        RepairTarget::New(zone) => {
            if added.len() as u64 >= limits.max_nodes {
                return None;
            }
            steps.push(PlanStep::Add { zone });
            added.len()
        }
    };
    steps.push(PlanStep::Put {
        node,
        demand: q,
        count: 1,
    });
    Some(steps)
}
