//! After the searches: the best packing improved, nodes taken off it by moving their pods into the other
//! nodes' free room ([`Drain`]). The searches never move a pod they placed; this phase moves pods whose fit
//! depends on their requests alone (no pod affinity, anti-affinity, spread or host port of their own, no one
//! else's anti-affinity against them, no DRA claim or extended resource) and that may go on a node of any of
//! the group's zones, and runs only when every pod of the plan is such a pod: moves beside pods that may not
//! move were measured costly and mostly refused. The improved plan is then taken again, step by step,
//! through the same predicates the searches ask ([`replay`]): if any step no longer fits, the searches' plan
//! is kept.

use super::drain::{Bin, Drain};
use super::plan::{Demand, Estimate, EstimateLimits, PlanStep, Templates, Zones, nodes_at_least};
use super::replay::replay;
use crate::model::Resources;
use crate::simulator::{Place, Topology};

/// `estimate` with as many nodes taken off as the local search finds within the limits' deadline, every pod
/// still placed, every step still allowed by the predicates; `estimate` itself when none comes off. A plan
/// that leaves pods unplaced, or stopped at a limit, is not touched: room freed on a node could take a pod
/// left out, which the plan would then wrongly say fits nowhere. Nor is a plan within half a percent of the
/// fewest nodes the requests allow, or one holding a pod that may not move.
pub fn improve(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    limits: EstimateLimits,
    estimate: Estimate,
) -> Estimate {
    let pods: u64 = demands.iter().map(|d| d.count).sum();
    // Within half a percent of the bound the drains fail and each failed one passes over every node (10,000
    // distinct-label pods, 819 nodes against 818: 60 ms for none taken off).
    let nodes = estimate.node_count() as u64;
    if estimate.stopped.is_some()
        || estimate.pods_placed() < pods
        || nodes.saturating_mul(200)
            <= nodes_at_least(templates.first(), demands).saturating_mul(201)
    {
        return estimate;
    }
    let movable: Vec<bool> = (demands.iter())
        .map(|d| {
            d.terms.simple
                && d.pod.extended.is_empty()
                && Zones::of(templates, d.pod).is_ok_and(|z| z.all())
        })
        .collect();
    // Only plans every pod of which may move: with pods that may not, moves that the replay then refused
    // cost the most and gained the least (20,000 pods of Karpenter's mix: a loop of 94 ms took 1.3 s).
    if movable.contains(&false) {
        return estimate;
    }
    let requests: Vec<Resources> = demands.iter().map(|d| d.pod.demand).collect();
    let before = bins(&estimate.steps, templates, &requests, &movable);
    let mut drain = Drain::new(
        &requests,
        templates.first().free,
        before.clone(),
        templates.nodes,
        limits.deadline,
    );
    if drain.run() == 0 {
        return estimate;
    }
    let steps = steps(&estimate.steps, &before, &drain.bins, &movable);
    match replay(topology, existing, templates, demands, &steps) {
        Some((nodes, topology)) => Estimate {
            nodes,
            steps: steps.into(),
            topology,
            ..estimate
        },
        None => estimate,
    }
}

/// The plan's nodes that hold a pod (in the order added) as the local search sees them: free room, movable
/// pods per demand, whether any pod on them may not move.
fn bins(
    steps: &[PlanStep],
    templates: Templates,
    requests: &[Resources],
    movable: &[bool],
) -> Vec<Bin> {
    let mut bins: Vec<Bin> = Vec::new();
    let mut held = Vec::new();
    for step in steps {
        match *step {
            PlanStep::Add { zone } => {
                bins.push(Bin {
                    zone,
                    free: templates.zones[zone].free,
                    pods: Vec::new(),
                    fixed: false,
                    gone: false,
                });
                held.push(false);
            }
            PlanStep::Put {
                node,
                demand,
                count,
            } => {
                let bin = &mut bins[node];
                bin.free = bin.free.minus(&requests[demand].times(count));
                held[node] = true;
                if !movable[demand] {
                    bin.fixed = true;
                } else {
                    match bin.pods.iter_mut().find(|(d, _)| *d == demand) {
                        Some((_, k)) => *k += count,
                        None => bin.pods.push((demand, count)),
                    }
                }
            }
        }
    }
    // Nodes no pod went on are not in the plan (the searches drop them).
    bins.into_iter()
        .zip(held)
        .filter_map(|(bin, held)| held.then_some(bin))
        .collect()
}

/// The steps of the improved plan: the searches' steps on the nodes that stay, each movable demand's pods
/// kept where they were up to what stays there, then the pods moved in, node by node. Pods that do not move
/// keep their place in the order (their predicates may count what came before them).
fn steps(old: &[PlanStep], before: &[Bin], after: &[Bin], movable: &[bool]) -> Vec<PlanStep> {
    let mut held = Vec::new();
    for step in old {
        match *step {
            PlanStep::Add { .. } => held.push(false),
            PlanStep::Put { node, .. } => held[node] = true,
        }
    }
    // Each node the searches added -> its index among `before` (the nodes that held a pod), and each of
    // those -> its index in the improved plan, unless it went.
    let mut at = 0;
    let in_before: Vec<Option<usize>> = (held.iter())
        .map(|&h| {
            h.then(|| {
                at += 1;
                at - 1
            })
        })
        .collect();
    let mut at = 0;
    let in_plan: Vec<Option<usize>> = (after.iter())
        .map(|bin| {
            (!bin.gone).then(|| {
                at += 1;
                at - 1
            })
        })
        .collect();
    let count = |bin: &Bin, d: usize| {
        (bin.pods.iter())
            .find(|(e, _)| *e == d)
            .map_or(0, |&(_, k)| k)
    };
    // Per node of `before`, per movable demand: how many of its pods there stay, still to be put.
    let mut stay: Vec<Vec<(usize, u64)>> = (before.iter().zip(after))
        .map(|(b, a)| {
            (b.pods.iter())
                .map(|&(d, k)| (d, k.min(count(a, d))))
                .collect()
        })
        .collect();
    let mut steps = Vec::with_capacity(old.len());
    let mut added = 0;
    for step in old {
        match *step {
            PlanStep::Add { zone } => {
                if in_before[added].and_then(|b| in_plan[b]).is_some() {
                    steps.push(PlanStep::Add { zone });
                }
                added += 1;
            }
            PlanStep::Put {
                node,
                demand,
                count,
            } => {
                let Some(b) = in_before[node] else { continue };
                // A node that went held movable pods only, all moved.
                let Some(to) = in_plan[b] else { continue };
                let count = if movable[demand] {
                    let left = (stay[b].iter_mut())
                        .find(|(d, _)| *d == demand)
                        .map(|(_, k)| k)
                        .expect("a movable demand's pods counted on their node");
                    let k = count.min(*left);
                    *left -= k;
                    k
                } else {
                    count
                };
                if count > 0 {
                    steps.push(PlanStep::Put {
                        node: to,
                        demand,
                        count,
                    });
                }
            }
        }
    }
    // The pods moved in, after every pod that stayed.
    for (b, bin) in after.iter().enumerate() {
        let Some(to) = in_plan[b] else { continue };
        for &(demand, k) in &bin.pods {
            let moved = k - k.min(count(&before[b], demand));
            if moved > 0 {
                steps.push(PlanStep::Put {
                    node: to,
                    demand,
                    count: moved,
                });
            }
        }
    }
    steps
}
