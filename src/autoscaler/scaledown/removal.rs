//! The removal simulation of scale-down (upstream's RemovalSimulator): moves the pods of a node being removed
//! onto the nodes that stay, as the scheduler would, and undoes it exactly when one of them fits nowhere.

use crate::model::GroupOptions;
use crate::model::Node;
use crate::model::pdb::Pdb;
use crate::model::pod::{EquivalenceKey, LabelProjection, SchedulingIds};
use crate::model::{Pod, PodList};
use crate::simulator::topology::{Place, PodTerms, Topology};
use crate::simulator::world::{self, Filling};
use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A node group as scale-down sees it.
#[derive(Clone, Debug)]
pub struct GroupInfo {
    pub id: String,
    pub min_size: i32,
    pub target: i32,
    pub options: GroupOptions,
    /// Nodes of the group whose deletion is in progress.
    pub deleting: usize,
}

/// The cluster as the planner reads it.
pub struct Input<'a> {
    pub nodes: &'a [Arc<Node>],
    pub pods: PodList<'a>,
    pub pdbs: &'a [Pdb],
    /// Each node's group index.
    pub node_group: &'a [Option<usize>],
    pub groups: &'a [GroupInfo],
    /// Pods on each node: bound (or nominated) and pending pods this loop found room for there.
    pub on_node: &'a [Vec<usize>],
    /// Nodes being removed (by name; ours, or carrying a ToBeDeleted taint): never candidates, never
    /// destinations.
    pub deleting: &'a HashSet<String>,
    /// Nodes unneeded in the previous loop: tried first, so their timers keep running.
    pub previously_unneeded: &'a HashSet<String>,
    /// The labels some selector reads: pods that differ only in others move as one group.
    pub projection: &'a LabelProjection,
    /// `--cores-total` and `--memory-total` MIN (cores, GiB).
    pub min_cores: u64,
    pub min_memory_gib: u64,
    pub max_node_startup_time: Duration,
    pub unready_enabled: bool,
    pub now: SystemTime,
}

/// What a removal simulation changed, to put back when it fails.
#[derive(Default)]
pub(super) struct Undo {
    /// Pods put on destinations: (pod, place, how many, terms).
    pub(super) puts: Vec<(usize, usize, u64, Arc<PodTerms>)>,
    /// Pods taken out of the counts of a node being removed: (place, terms).
    pub(super) uncounted: Vec<(usize, Arc<PodTerms>)>,
    /// Where an equivalence group's search started before: (a pod of it, the hint). Places the attempt
    /// filled have room again once it is undone, so the hint must not stay past them.
    pub(super) hints: Vec<(usize, usize)>,
}

impl Undo {
    fn apply(self, pods: PodList<'_>, topology: &mut Topology, places: &mut [Place]) {
        for (pod, place, n, terms) in self.puts.into_iter().rev() {
            topology.take(&pods[pod], &terms, &mut places[place], n);
        }
        for (place, terms) in self.uncounted {
            topology.count(&terms, &places[place], 1);
        }
    }
}

/// Moves pods off nodes being removed, trying places in a fixed order and remembering per equivalence
/// group where in it to start: the first place not yet known to be full for it. Places only fill up during
/// a pass, so for pods that only resources and node constraints limit, a place that was full stays full
/// (upstream keeps a similar hint).
pub(super) struct Mover<'a> {
    order: Vec<usize>,
    known: HashMap<EquivalenceKey<'a>, (Arc<PodTerms>, usize)>,
    projection: &'a LabelProjection,
    ids: SchedulingIds<'a>,
    pods: PodList<'a>,
    /// Pods that committed removals moved onto each place: they move again if it goes too.
    moved_onto: Vec<Vec<usize>>,
}

impl<'a> Mover<'a> {
    pub(super) fn new(order: Vec<usize>, places: usize, input: &Input<'a>) -> Mover<'a> {
        Mover {
            order,
            known: HashMap::new(),
            projection: input.projection,
            ids: SchedulingIds::default(),
            pods: input.pods,
            moved_onto: vec![Vec::new(); places],
        }
    }

    fn entry(&mut self, topology: &Topology, pod: &'a Pod) -> &mut (Arc<PodTerms>, usize) {
        self.known
            .entry(pod.equivalence_key(self.projection, &mut self.ids))
            .or_insert_with(|| (Arc::new(topology.resolve(pod)), 0))
    }

    /// Undoes a failed removal simulation, the search hints included.
    pub(super) fn undo(&mut self, undo: Undo, topology: &mut Topology, places: &mut [Place]) {
        for &(pod, hint) in undo.hints.iter().rev() {
            let pod = self.pods.get(pod);
            self.entry(topology, pod).1 = hint;
        }
        undo.apply(self.pods, topology, places);
    }

    /// Records a committed removal of `from`: its pods now live where `destinations` says.
    pub(super) fn commit(&mut self, from: usize, destinations: &[(usize, usize)]) {
        self.moved_onto[from].clear();
        for &(pod, to) in destinations {
            self.moved_onto[to].push(pod);
        }
    }

    /// Places every pod of `moving` (on place `from`) on another place that accepts pods, first fit, as
    /// the scheduler would, and says where each went. On failure, says which pod fits nowhere and why;
    /// `undo` has what was changed.
    pub(super) fn move_pods(
        &mut self,
        input: &Input<'a>,
        topology: &mut Topology,
        places: &mut [Place],
        from: usize,
        moving: &[usize],
        undo: &mut Undo,
    ) -> Result<Vec<(usize, usize)>, String> {
        let pods = input.pods;
        let moving: Vec<usize> = moving
            .iter()
            .chain(&self.moved_onto[from])
            .copied()
            .collect();
        let mut destinations = Vec::with_capacity(moving.len());
        // They stop counting where they are: their spread and anti-affinity no longer hold there.
        for &p in &moving {
            let terms = self.entry(topology, pods.get(p)).0.clone();
            topology.uncount(&terms, &places[from], 1);
            undo.uncounted.push((from, terms));
        }
        // Identical pods move together.
        for eg in
            crate::simulator::equivalence::group(pods, moving.iter().copied(), input.projection)
        {
            let pod = eg.exemplar(pods);
            let (terms, hint) = self.entry(topology, pod).clone();
            let mut want = eg.pods.len() as u64;
            let mut filling = Filling::new(pod, &terms);
            let mut i = if terms.simple { hint } else { 0 };
            undo.hints.push((eg.pods[0], hint));
            let mut advance = terms.simple;
            while want > 0 && i < self.order.len() {
                let p = self.order[i];
                if p == from {
                    // The node being removed may stay after all: the hint must not pass it.
                    advance = false;
                    i += 1;
                    continue;
                }
                let usable = places[p].accepts
                    && crate::simulator::predicates::node_fit(&pod.scheduling, &places[p].node)
                        .is_ok();
                if usable {
                    let (k, _) = filling.fill(topology, &[], places, p, want);
                    if k > 0 {
                        undo.puts.push((eg.pods[0], p, k, terms.clone()));
                        let first = eg.pods.len() - want as usize;
                        for &pod in &eg.pods[first..first + k as usize] {
                            destinations.push((pod, p));
                        }
                        want -= k;
                    }
                }
                if want > 0 {
                    i += 1;
                    if advance {
                        self.entry(topology, pod).1 = i;
                    }
                }
            }
            if want > 0 {
                let why = world::explain(topology, places, pod, &terms, |q| q == from);
                let others = if want > 1 {
                    format!(" (and {} like it)", want - 1)
                } else {
                    String::new()
                };
                return Err(format!(
                    "{}{others} fits on no other node: {why}",
                    pod.key()
                ));
            }
        }
        Ok(destinations)
    }
}
