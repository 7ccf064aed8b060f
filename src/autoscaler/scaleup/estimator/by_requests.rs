//! The searches that pick by requests alone, for pods whose fit depends on nothing else: best fit, and node
//! by node (a node takes the pods that suit its room).

use super::packing::Packing;
use super::plan::{Demand, Ordering, Zones};
use crate::model::Resources;
use crate::simulator::Filling;
use crate::simulator::{Unfit, resources_fit};

/// Most pods times demands a node by node search weighs (each pod weighs every demand with pods left). At the
/// bound (20,000 pods of 50 shapes) a node by node search takes 4-6 ms on this machine, a first fit 3-4 ms;
/// past it (many pods of many shapes: each its own, at worst) the weighing would grow as pods squared, and
/// the searches that take demands in order pack alone.
pub(super) const NODE_BY_NODE_WORK: u64 = 1 << 20;

/// Best fit ([`Ordering::BestFit`]): pods on the node with the least room left (the tree finds it), a new
/// node when none has room. The pods of a demand are identical, so the node best for one stays best for the
/// next until it is full: each node takes as many as fit at once. Resource-only pods.
pub(super) fn best_fit(
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
                let (k, why) = packing.add_node(filling, zones, d, remaining);
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
pub(super) fn node_by_node(
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
                    let why = resources_fit(
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
        let (d, filling, zones, _) = &mut open[i];
        let (k, why) = packing.add_node(filling, zones, *d, 1);
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
            free = free.minus(&filling.pod().demand);
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
    let [cpu, memory, storage, _, gpus] = r.shares_of(full);
    [cpu, memory, storage, gpus]
}

/// How well a pod asking `want` suits a node with `room` left, as `ordering` weighs it: the dot product of
/// the two, or how little room the pod leaves (the L2 norm of what is left, negated).
fn node_score(ordering: Ordering, want: &Shares, room: &Shares) -> f64 {
    let pairs = want.iter().zip(room);
    if ordering == Ordering::NodeDotProduct {
        pairs.map(|(w, r)| w * r).sum()
    } else {
        -pairs.map(|(w, r)| (r - w) * (r - w)).sum::<f64>()
    }
}
