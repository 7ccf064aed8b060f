//! The improvement phase's local search, over the planned nodes as free room and counts of movable pods: the
//! least-full node is drained (its pods to a pool), the pool's pods are put into the other nodes' free room
//! (best fit), and those that fit nowhere are exchanged for smaller pods a node holds (one for one, one for
//! two, two for one), each exchange leaving that node fuller and the pool lighter, until the pool is empty
//! (the node goes) or no exchange helps (the node stays, as it was). After the local search of Levine and
//! Ducatelle ("Ant colony optimization and local search for bin packing and cutting stock problems", 2004),
//! with the pods' sizes weighed over several resources as Panigrahy et al. weigh them ("Heuristics for
//! Vector Bin Packing", 2011). It knows resources only: which pods may move, and the check of the result
//! against every predicate, are the caller's ([`super::improve`]).

use crate::model::Resources;
use std::time::Instant;

/// Most exchange passes one drain may take before the node is given up: each pass that helps leaves the
/// pool lighter, and the drains that succeed on the bench's mixes take a few.
const PASSES: usize = 24;

/// Drains that may fail in a row before the search ends: the least-full node failing, the next ones are
/// fuller and fail more.
const FAILED_DRAINS: usize = 3;

/// Most work one improvement does, in exchanges weighed and nodes looked at: a bound on its time whatever
/// the plan's size (about 10 ms on this machine), below the binpacking deadline.
const WORK: u64 = 1 << 24;

/// One planned node: its zone (of the group's templates), its free room, its movable pods per demand.
#[derive(Clone, Debug)]
pub(super) struct Bin {
    pub(super) zone: usize,
    pub(super) free: Resources,
    /// (demand, pods), no count zero.
    pub(super) pods: Vec<(usize, u64)>,
    /// It holds a pod that may not move: it is never drained (it may take movable pods).
    pub(super) fixed: bool,
    /// Drained: it goes.
    pub(super) gone: bool,
}

impl Bin {
    fn take(&mut self, d: usize, requests: &Resources) {
        let i = (self.pods.iter())
            .position(|&(e, _)| e == d)
            .expect("a pod taken from where it is");
        self.pods[i].1 -= 1;
        if self.pods[i].1 == 0 {
            self.pods.swap_remove(i);
        }
        self.free = self.free.plus(*requests);
    }

    fn put(&mut self, d: usize, requests: &Resources) {
        match self.pods.iter_mut().find(|(e, _)| *e == d) {
            Some((_, k)) => *k += 1,
            None => self.pods.push((d, 1)),
        }
        self.free = self.free.minus(requests);
    }
}

/// The search: the nodes, the pool of pods taken off the node being drained, and the sizes it weighs by.
pub(super) struct Drain<'a> {
    /// Requests per demand (movable or not: only movable ones are in `bins`' pods).
    requests: &'a [Resources],
    /// Per demand: its requests as shares of an empty node, weighed by how scarce each resource is.
    size: Vec<f64>,
    weights: [f64; 5],
    full: Resources,
    pub(super) bins: Vec<Bin>,
    /// Pods to put back, per demand.
    pool: Vec<u64>,
    /// Existing nodes of the group per zone (zone balance, see [`Drain::may_drain`]).
    existing: &'a [u64],
    deadline: Option<Instant>,
    /// Work done so far, as [`WORK`] counts it.
    work: u64,
}

impl<'a> Drain<'a> {
    /// `full` is an empty node's free room; `requests` each demand's; `existing` the group's nodes per zone.
    pub(super) fn new(
        requests: &'a [Resources],
        full: Resources,
        bins: Vec<Bin>,
        existing: &'a [u64],
        deadline: Option<Instant>,
    ) -> Drain<'a> {
        // Each resource weighs as much as the plan asks of it, in empty nodes: the scarce one leads, and a
        // resource nothing asks for weighs nothing.
        let mut weights = [0.0; 5];
        for bin in &bins {
            let used = full.minus(&bin.free).shares_of(&full);
            weights.iter_mut().zip(used).for_each(|(w, u)| *w += u);
        }
        let most = weights.iter().copied().fold(0.0, f64::max);
        if most > 0.0 {
            weights.iter_mut().for_each(|w| *w /= most);
        }
        let size = (requests.iter())
            .map(|r| weigh(&weights, &r.shares_of(&full)))
            .collect();
        Drain {
            requests,
            size,
            weights,
            full,
            pool: vec![0; requests.len()],
            bins,
            existing,
            deadline,
            work: 0,
        }
    }

    /// Drains nodes until [`FAILED_DRAINS`] fail in a row, none is left to try, or the deadline; returns how
    /// many went. A drain that fails leaves every node as it was.
    pub(super) fn run(&mut self) -> usize {
        let mut drained = 0;
        let mut failed: Vec<usize> = Vec::new();
        while failed.len() < FAILED_DRAINS && !self.late() {
            let Some(b) = self.candidate(&failed) else {
                break;
            };
            let saved = self.bins.clone();
            let bin = &mut self.bins[b];
            bin.gone = true;
            for (d, k) in std::mem::take(&mut bin.pods) {
                self.pool[d] += k;
            }
            if self.settle() {
                drained += 1;
                failed.clear();
            } else {
                self.bins = saved;
                self.pool.iter_mut().for_each(|k| *k = 0);
                failed.push(b);
            }
        }
        drained
    }

    fn late(&self) -> bool {
        self.work >= WORK || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The least-full node that may be drained and has not failed since the last drain.
    fn candidate(&self, failed: &[usize]) -> Option<usize> {
        let planned = self.planned_per_zone();
        (0..self.bins.len())
            .filter(|&b| {
                let bin = &self.bins[b];
                !bin.gone && !bin.fixed && !failed.contains(&b) && self.may_drain(bin, &planned)
            })
            .min_by(|&a, &b| {
                self.fill(&self.bins[a])
                    .total_cmp(&self.fill(&self.bins[b]))
            })
    }

    fn planned_per_zone(&self) -> Vec<u64> {
        let zones = self.bins.iter().map(|b| b.zone + 1).max().unwrap_or(0);
        let mut planned = vec![0; self.existing.len().max(zones)];
        for bin in self.bins.iter().filter(|b| !b.gone) {
            planned[bin.zone] += 1;
        }
        planned
    }

    /// A group of several zones launches each node in the zone with the fewest of its nodes: a plan one node
    /// shorter is as balanced when the node comes off a zone with the most, among those the plan adds to.
    fn may_drain(&self, bin: &Bin, planned: &[u64]) -> bool {
        let nodes = |z: usize| self.existing.get(z).copied().unwrap_or(0) + planned[z];
        let most = (0..planned.len())
            .filter(|&z| planned[z] > 0)
            .map(nodes)
            .max();
        most == Some(nodes(bin.zone))
    }

    /// How full a node is, weighed as the pods' sizes are.
    fn fill(&self, bin: &Bin) -> f64 {
        weigh(
            &self.weights,
            &self.full.minus(&bin.free).shares_of(&self.full),
        )
    }

    /// Puts the pool back and exchanges until it is empty (true) or nothing helps.
    fn settle(&mut self) -> bool {
        for _ in 0..PASSES {
            self.put_pool();
            if self.pool.iter().all(|&k| k == 0) {
                return true;
            }
            if self.late() || !self.exchange() {
                return false;
            }
        }
        false
    }

    /// The pool's pods, largest first, each on the node it leaves the least room on.
    fn put_pool(&mut self) {
        let mut order: Vec<usize> = (0..self.pool.len()).filter(|&d| self.pool[d] > 0).collect();
        order.sort_by(|&a, &b| self.size[b].total_cmp(&self.size[a]));
        for d in order {
            while self.pool[d] > 0 {
                self.work += self.bins.len() as u64;
                let requests = &self.requests[d];
                let best = (0..self.bins.len())
                    .filter(|&b| !self.bins[b].gone && self.bins[b].free.fits(requests))
                    .max_by(|&a, &b| {
                        self.fill(&self.bins[a])
                            .total_cmp(&self.fill(&self.bins[b]))
                    });
                let Some(b) = best else { break };
                self.bins[b].put(d, requests);
                self.pool[d] -= 1;
            }
        }
    }

    /// One pass over the nodes: on each, the exchange with the pool that leaves it fullest, if any leaves
    /// it fuller. Whether one was made.
    fn exchange(&mut self) -> bool {
        let mut any = false;
        for b in 0..self.bins.len() {
            if self.bins[b].gone {
                continue;
            }
            let (swap, weighed) = self.best_swap(&self.bins[b]);
            self.work += weighed;
            if let Some(swap) = swap {
                for &d in swap.out.iter().flatten() {
                    self.bins[b].take(d, &self.requests[d]);
                    self.pool[d] += 1;
                }
                for &d in swap.into.iter().flatten() {
                    self.bins[b].put(d, &self.requests[d]);
                    self.pool[d] -= 1;
                }
                any = true;
            }
        }
        any
    }

    /// The exchange of one or two of the node's pods for one or two of the pool's (not two for two) that
    /// fits and adds the most size to the node.
    /// With the exchanges weighed.
    fn best_swap(&self, bin: &Bin) -> (Option<Swap>, u64) {
        let mine: Vec<(usize, u64)> = bin.pods.clone();
        let pool: Vec<(usize, u64)> = (0..self.pool.len())
            .filter(|&d| self.pool[d] > 0)
            .map(|d| (d, self.pool[d]))
            .collect();
        let mut best: Option<(f64, Swap)> = None;
        let mut consider = |out: [Option<usize>; 2], into: [Option<usize>; 2]| {
            let sum = |pods: &[Option<usize>; 2]| {
                pods.iter().flatten().map(|&d| self.size[d]).sum::<f64>()
            };
            let gain: f64 = sum(&into) - sum(&out);
            if gain <= 1e-9 || best.as_ref().is_some_and(|(g, _)| gain <= *g) {
                return;
            }
            let mut room = bin.free;
            out.iter()
                .flatten()
                .for_each(|&d| room = room.plus(self.requests[d]));
            for &d in into.iter().flatten() {
                if !room.fits(&self.requests[d]) {
                    return;
                }
                room = room.minus(&self.requests[d]);
            }
            best = Some((gain, Swap { out, into }));
        };
        // Pairs of one kind need two pods of it.
        let pairs = |pods: &[(usize, u64)]| {
            let mut pairs = Vec::new();
            for (i, &(a, ka)) in pods.iter().enumerate() {
                for &(b, _) in &pods[i..] {
                    if a != b || ka >= 2 {
                        pairs.push([Some(a), Some(b)]);
                    }
                }
            }
            pairs
        };
        let (my_pairs, pool_pairs) = (pairs(&mine), pairs(&pool));
        let weighed = mine.len() * (pool.len() + pool_pairs.len()) + my_pairs.len() * pool.len();
        for &(a, _) in &mine {
            for &(p, _) in &pool {
                consider([Some(a), None], [Some(p), None]);
            }
            for &two in &pool_pairs {
                consider([Some(a), None], two);
            }
        }
        for &two in &my_pairs {
            for &(p, _) in &pool {
                consider(two, [Some(p), None]);
            }
        }
        (best.map(|(_, swap)| swap), weighed as u64)
    }
}

/// Pods out of a node into the pool, and pods of the pool onto it.
struct Swap {
    out: [Option<usize>; 2],
    into: [Option<usize>; 2],
}

fn weigh(weights: &[f64; 5], shares: &[f64; 5]) -> f64 {
    weights.iter().zip(shares).map(|(w, s)| w * s).sum()
}
