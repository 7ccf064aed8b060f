//! The removal simulation of scale-down (upstream's RemovalSimulator): moves the pods of a node being removed
//! onto the nodes that stay, as the scheduler would, and undoes it exactly when one of them fits nowhere.

use crate::model::{
    EquivalenceKey, FastMap, GroupOptions, LabelProjection, Node, Pdb, Pod, PodList, Resources,
    SchedulingIds,
};
use crate::simulator::{
    EquivalenceGroup, Filling, FreeTree, Place, PodTerms, PoolUse, SpreadMins, Topology,
    explain as why_nowhere, group_pods_by, node_fit, unavailable, unfit as why_not_on,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, LazyLock};
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
    /// The managed node group is being updated: none of its nodes is removed, its target never lowered.
    pub updating: bool,
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
    /// How used each node's own devices are (DRA), for nodes that publish any: then alone their utilization.
    pub device_use: &'a [Option<PoolUse>],
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
    /// Nodes on capacity paid for ahead (by name, with why): never candidates for low utilization.
    pub reserved: &'a HashMap<String, String>,
    pub now: SystemTime,
}

/// Nothing being deleted and nothing unneeded before, for [`Input::new`].
static NONE: LazyLock<HashSet<String>> = LazyLock::new(HashSet::new);
/// Every label counts, for [`Input::new`].
static ALL_LABELS: LabelProjection = LabelProjection::All;
/// No node on reserved capacity, for [`Input::new`].
static UNRESERVED: LazyLock<HashMap<String, String>> = LazyLock::new(HashMap::new);

impl<'a> Input<'a> {
    /// An input over these nodes, pods and groups at `now`, and nothing else: no PDBs, no device use,
    /// nothing being deleted or unneeded before, every label counted, no cluster minimums, upstream's
    /// default `--max-node-startup-time` (15 minutes), unready nodes removable. For the tests and the
    /// reference searches, which set what else they need (`Input { pdbs, ..Input::new(..) }`).
    pub fn new(
        nodes: &'a [Arc<Node>],
        pods: PodList<'a>,
        node_group: &'a [Option<usize>],
        groups: &'a [GroupInfo],
        on_node: &'a [Vec<usize>],
        now: SystemTime,
    ) -> Input<'a> {
        Input {
            nodes,
            pods,
            pdbs: &[],
            node_group,
            groups,
            on_node,
            device_use: &[],
            deleting: &NONE,
            previously_unneeded: &NONE,
            projection: &ALL_LABELS,
            min_cores: 0,
            min_memory_gib: 0,
            max_node_startup_time: Duration::from_secs(15 * 60),
            unready_enabled: true,
            reserved: &UNRESERVED,
            now,
        }
    }
}

/// What a removal simulation changed, to put back when it fails.
#[derive(Default)]
pub(in crate::autoscaler::scaledown) struct Undo {
    /// Pods put on destinations: (pod, place, how many, terms).
    pub(in crate::autoscaler::scaledown) puts: Vec<(usize, usize, u64, Arc<PodTerms>)>,
    /// Pods taken out of the counts of a node being removed: (place, terms).
    pub(in crate::autoscaler::scaledown) uncounted: Vec<(usize, Arc<PodTerms>)>,
    /// Where an equivalence group's search started before: (a pod of it, the hint). Places the attempt
    /// filled have room again once it is undone, so the hint must not stay past them.
    pub(in crate::autoscaler::scaledown) hints: Vec<(usize, usize)>,
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
/// (upstream keeps a similar hint). The free room of every place in the order is kept in a tree, updated as
/// pods are put and taken: a search skips whole runs of places that cannot hold the pod and finds the place a
/// scan would, so a node whose pods fit nowhere costs a few lookups, not a pass over the cluster. A mover
/// assumes it alone changes the places of its order while it lives, and that their `accepts` changes go
/// through [`Mover::set_accepts`].
pub(in crate::autoscaler::scaledown) struct Mover<'a> {
    order: Vec<usize>,
    /// Each place's position in `order` (`usize::MAX` for places not in it).
    position: Vec<usize>,
    /// By position: the free room of places that accept pods (none for those that do not).
    free: FreeTree,
    /// Each equivalence group's terms and search hint, by slot.
    entries: Vec<(Arc<PodTerms>, usize)>,
    /// Slots by equivalence key, and by pod once a pod has been asked about: a pod's key (its labels among
    /// it) is read once a pass, not at every step of every search.
    slots: FastMap<EquivalenceKey<'a>, usize>,
    slot_of_pod: Vec<u32>,
    projection: &'a LabelProjection,
    ids: SchedulingIds<'a>,
    pods: PodList<'a>,
    /// Pods that committed removals moved onto each place: they move again if it goes too.
    moved_onto: Vec<Vec<usize>>,
    /// The places whose free room changed, in order: what an explanation kept from before must look at again.
    changed: Vec<usize>,
    /// Why pods of each equivalence group that fit nowhere fit nowhere, kept up to date with `changed`.
    unplaced: FastMap<usize, Unplaced>,
}

/// Why one more pod of an equivalence group fits on no place: each place's reasons as of the last look, how
/// many places give each reason, and how far into the mover's `changed` places it has looked.
struct Unplaced {
    reasons: Vec<Vec<String>>,
    counts: BTreeMap<String, usize>,
    seen: usize,
}

/// Whether a place's reasons join the counts or leave them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tally {
    Add,
    TakeAway,
}

/// Adds `reasons` to `counts`, or takes them away (a reason no place gives any more goes).
fn tally(counts: &mut BTreeMap<String, usize>, reasons: &[String], how: Tally) {
    for why in reasons {
        if how == Tally::Add {
            *counts.entry(why.clone()).or_default() += 1;
        } else if let Some(n) = counts.get_mut(why) {
            *n -= 1;
            if *n == 0 {
                counts.remove(why);
            }
        }
    }
}

impl<'a> Mover<'a> {
    pub(in crate::autoscaler::scaledown) fn new(
        order: Vec<usize>,
        places: &[Place],
        input: &Input<'a>,
    ) -> Mover<'a> {
        let mut position = vec![usize::MAX; places.len()];
        let mut rooms = Vec::with_capacity(order.len());
        for (i, &p) in order.iter().enumerate() {
            position[p] = i;
            rooms.push(room(&places[p]));
        }
        let free = FreeTree::of(&rooms);
        Mover {
            order,
            position,
            free,
            entries: Vec::new(),
            slots: FastMap::default(),
            slot_of_pod: vec![u32::MAX; input.pods.len()],
            projection: input.projection,
            ids: SchedulingIds::default(),
            pods: input.pods,
            moved_onto: vec![Vec::new(); places.len()],
            changed: Vec::new(),
            unplaced: FastMap::default(),
        }
    }

    /// Pod `p`'s equivalence group's slot in `entries`.
    fn slot(&mut self, topology: &Topology, p: usize) -> usize {
        let known = self.slot_of_pod[p];
        if known != u32::MAX {
            return known as usize;
        }
        let pod = self.pods.get(p);
        let entries = &mut self.entries;
        let slot = *(self.slots)
            .entry(pod.equivalence_key(self.projection, &mut self.ids))
            .or_insert_with(|| {
                entries.push((Arc::new(topology.resolve(pod)), 0));
                entries.len() - 1
            });
        self.slot_of_pod[p] = u32::try_from(slot).expect("fewer than 2^32 groups");
        slot
    }

    /// `moving` in equivalence groups, as [`group_pods_by`] groups them (in the order each first appears,
    /// then the highest priority first). A node's pods are few and of few groups: they are grouped by a
    /// look along the groups found so far, not in a map built for each removal.
    fn groups(&mut self, topology: &Topology, moving: &[usize]) -> Vec<EquivalenceGroup> {
        const BY_LOOK: usize = 32;
        if moving.len() > BY_LOOK {
            for &p in moving {
                self.slot(topology, p);
            }
            let known = &self.slot_of_pod;
            return group_pods_by(self.pods, moving.iter().copied(), |p| known[p]);
        }
        let mut slots: Vec<usize> = Vec::with_capacity(moving.len());
        let mut groups: Vec<EquivalenceGroup> = Vec::with_capacity(moving.len());
        for &p in moving {
            let slot = self.slot(topology, p);
            match slots.iter().position(|&s| s == slot) {
                Some(g) => groups[g].pods.push(p),
                None => {
                    slots.push(slot);
                    groups.push(EquivalenceGroup { pods: vec![p] });
                }
            }
        }
        let pods = self.pods;
        groups.sort_by_key(|g| std::cmp::Reverse(g.exemplar(pods).priority.unwrap_or(0)));
        groups
    }

    /// Place `p` now takes pods, or no longer does.
    pub(in crate::autoscaler::scaledown) fn set_accepts(
        &mut self,
        places: &mut [Place],
        p: usize,
        accepts: bool,
    ) {
        places[p].accepts = accepts;
        self.refresh(places, p);
    }

    /// The tree learns place `p`'s free room as it is now.
    fn refresh(&mut self, places: &[Place], p: usize) {
        if let Some(&i) = self.position.get(p).filter(|&&i| i != usize::MAX) {
            self.free.set(i, &room(&places[p]));
        }
        self.changed.push(p);
    }

    /// Why `pod` fits on no place but `from`, as [`why_nowhere`] says it. For a pod only resources and its
    /// node's constraints limit, over a mover whose order is every place (scale-down's own), each place's
    /// reasons are kept and only the places changed since the last explanation are looked at again: the
    /// nodes whose pods fit nowhere are many once the cluster is full, and each would otherwise cost a look
    /// at every node.
    fn explain(
        &mut self,
        topology: &Topology,
        places: &[Place],
        pod: &'a Pod,
        slot: usize,
        from: usize,
    ) -> String {
        let terms = &*self.entries[slot].0.clone();
        if !terms.simple || self.order.len() != places.len() {
            return why_nowhere(topology, places, pod, terms, |q| q == from);
        }
        let unfit = |place: &Place| why_not_on(topology, places, pod, terms, place);
        let changed = &self.changed;
        let unplaced = self.unplaced.entry(slot).or_insert_with(|| {
            let reasons: Vec<Vec<String>> = places.iter().map(unfit).collect();
            let mut counts = BTreeMap::new();
            for r in &reasons {
                tally(&mut counts, r, Tally::Add);
            }
            Unplaced {
                reasons,
                counts,
                seen: changed.len(),
            }
        });
        for &p in &changed[unplaced.seen..] {
            let now = unfit(&places[p]);
            if now != unplaced.reasons[p] {
                tally(&mut unplaced.counts, &unplaced.reasons[p], Tally::TakeAway);
                tally(&mut unplaced.counts, &now, Tally::Add);
                unplaced.reasons[p] = now;
            }
        }
        unplaced.seen = changed.len();
        // Every place but `from` is considered.
        let mut counts = unplaced.counts.clone();
        tally(&mut counts, &unplaced.reasons[from], Tally::TakeAway);
        unavailable(places.len() - 1, &counts)
    }

    /// Undoes a failed removal simulation, the search hints included.
    pub(in crate::autoscaler::scaledown) fn undo(
        &mut self,
        undo: Undo,
        topology: &mut Topology,
        places: &mut [Place],
    ) {
        for &(pod, hint) in undo.hints.iter().rev() {
            let slot = self.slot(topology, pod);
            self.entries[slot].1 = hint;
        }
        let touched: Vec<usize> = undo.puts.iter().map(|&(_, p, ..)| p).collect();
        undo.apply(self.pods, topology, places);
        for p in touched {
            self.refresh(places, p);
        }
    }

    /// Records a committed removal of `from`: its pods now live where `destinations` says.
    pub(in crate::autoscaler::scaledown) fn commit(
        &mut self,
        from: usize,
        destinations: &[(usize, usize)],
    ) {
        self.moved_onto[from].clear();
        for &(pod, to) in destinations {
            self.moved_onto[to].push(pod);
        }
    }

    /// Places every pod of `moving` (on place `from`) on another place that accepts pods, first fit, as
    /// the scheduler would, and says where each went. On failure, says which pod fits nowhere and why;
    /// `undo` has what was changed.
    pub(in crate::autoscaler::scaledown) fn move_pods(
        &mut self,
        topology: &mut Topology,
        places: &mut [Place],
        from: usize,
        moving: &[usize],
        undo: &mut Undo,
    ) -> Result<Vec<(usize, usize)>, FitsNowhere> {
        let pods = self.pods;
        let mut all = Vec::with_capacity(moving.len() + self.moved_onto[from].len());
        all.extend_from_slice(moving);
        all.extend_from_slice(&self.moved_onto[from]);
        let moving = all;
        let mut destinations = Vec::with_capacity(moving.len());
        undo.uncounted.reserve(moving.len());
        // They stop counting where they are: their spread and anti-affinity no longer hold there.
        for &p in &moving {
            let slot = self.slot(topology, p);
            let terms = self.entries[slot].0.clone();
            topology.uncount(&terms, &places[from], 1);
            undo.uncounted.push((from, terms));
        }
        // Identical pods move together.
        for eg in self.groups(topology, &moving) {
            let slot = self.slot(topology, eg.pods[0]);
            let pod = eg.exemplar(pods);
            let (terms, hint) = self.entries[slot].clone();
            let mut want = eg.pods.len() as u64;
            let filling = Filling::new(pod, &terms);
            // Counts went down with the pods leaving `from`: what was known of minimums is not kept.
            let mut mins = SpreadMins::default();
            let mut i = if terms.simple { hint } else { 0 };
            undo.hints.push((eg.pods[0], hint));
            let mut advance = terms.simple;
            let from_at = self.position.get(from).copied().unwrap_or(usize::MAX);
            while want > 0 {
                // The places before the next one with room for a pod cannot take it: a scan passes them.
                let next = self.free.first_at_or_after(i, &pod.demand);
                let end = next.map_or(self.order.len(), |at| at + 1);
                if advance && (i..end).contains(&from_at) {
                    // The node being removed may stay after all: the hint must not pass it.
                    self.entries[slot].1 = from_at;
                    advance = false;
                }
                let Some(at) = next else {
                    if advance {
                        self.entries[slot].1 = self.order.len();
                    }
                    break;
                };
                let p = self.order[at];
                if p != from
                    && places[p].accepts
                    && node_fit(&pod.scheduling, &places[p].node).is_ok()
                {
                    let (k, _) =
                        filling.fill(topology, &mut mins.with_others(&[]), places, p, want);
                    self.refresh(places, p);
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
                    i = at + 1;
                    if advance {
                        self.entries[slot].1 = i;
                    }
                } else if advance {
                    self.entries[slot].1 = at;
                }
            }
            if want > 0 {
                let why = self.explain(topology, places, pod, slot, from);
                return Err(fits_nowhere(pod, want, &why));
            }
        }
        Ok(destinations)
    }
}

/// A pod of a node being removed that fits on no other node, and why:
/// `ns/pod (and 2 like it) fits on no other node: why`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pod}{} fits on no other node: {why}", like_it(*.others))]
pub struct FitsNowhere {
    /// The pod, as `namespace/name`.
    pub pod: String,
    /// How many pods like it fit nowhere either.
    pub others: u64,
    pub why: String,
}

/// ` (and 2 like it)`, or nothing.
fn like_it(others: u64) -> String {
    match others {
        0 => String::new(),
        _ => format!(" (and {others} like it)"),
    }
}

fn fits_nowhere(pod: &Pod, want: u64, why: &str) -> FitsNowhere {
    FitsNowhere {
        pod: pod.key().to_string(),
        others: want.saturating_sub(1),
        why: why.to_string(),
    }
}

/// What a place can still take, as the mover's tree holds it: nothing when it takes no pods.
fn room(place: &Place) -> Resources {
    if place.accepts {
        place.free
    } else {
        Resources::default()
    }
}

#[cfg(test)]
pub(in crate::autoscaler::scaledown) mod tests {
    use super::*;
    use crate::model::{HOSTNAME_LABEL, Labels, Node, Phase, Taint, TaintEffect};
    use crate::simulator::{predicates, world};
    use proptest::prelude::*;

    const GIB: u64 = 1 << 30;

    /// A node of `cpu` millicores and `gib` GiB; tainted ones take only pods that tolerate nothing (none).
    pub(in crate::autoscaler::scaledown) fn node(
        i: usize,
        cpu: u64,
        gib: u64,
        tainted: bool,
    ) -> Arc<Node> {
        let resources = Resources {
            cpu_millis: cpu,
            memory_bytes: gib * GIB,
            pods: 110,
            ..Default::default()
        };
        let name = format!("n{i}");
        Arc::new(Node {
            labels: Labels::from([(HOSTNAME_LABEL.to_string(), name.clone())]),
            name,
            capacity: resources,
            allocatable: resources,
            ready: true,
            taints: if tainted {
                vec![Taint {
                    key: "dedicated".into(),
                    value: "x".into(),
                    effect: TaintEffect::NoSchedule,
                }]
            } else {
                Vec::new()
            },
            ..Default::default()
        })
    }

    fn pod(i: usize, node: &str, cpu: u64, gib: u64) -> Pod {
        let demand = Resources {
            cpu_millis: cpu,
            memory_bytes: gib * GIB,
            pods: 1,
            ..Default::default()
        };
        Pod {
            node_name: Some(node.into()),
            phase: Phase::Running,
            unschedulable: false,
            ..Pod::pending("default", &format!("p{i}"), demand)
        }
    }

    /// The plain answer: each identical run of pods, first fit over the whole order from its start (no
    /// hint, no index), on a copy of the world; and why the first pod that fits nowhere fits nowhere.
    fn plain(
        topology: &mut Topology,
        places: &mut [Place],
        pods: PodList<'_>,
        order: &[usize],
        from: usize,
        moving: &[usize],
    ) -> Result<Vec<(usize, usize)>, FitsNowhere> {
        let mut destinations = Vec::new();
        for eg in crate::simulator::equivalence::group_pods(
            pods,
            moving.iter().copied(),
            &LabelProjection::All,
        ) {
            let pod = eg.exemplar(pods);
            let terms = topology.resolve(pod);
            let filling = Filling::new(pod, &terms);
            let mut mins = SpreadMins::default();
            let mut want = eg.pods.len() as u64;
            for &p in order {
                if want == 0 {
                    break;
                }
                let usable = p != from
                    && places[p].accepts
                    && predicates::node_fit(&pod.scheduling, &places[p].node).is_ok();
                if usable {
                    let (k, _) =
                        filling.fill(topology, &mut mins.with_others(&[]), places, p, want);
                    let first = eg.pods.len() - want as usize;
                    for &q in &eg.pods[first..first + k as usize] {
                        destinations.push((q, p));
                    }
                    want -= k;
                }
            }
            if want > 0 {
                let why = world::explain(topology, places, pod, &terms, |q| q == from);
                return Err(fits_nowhere(pod, want, &why));
            }
        }
        Ok(destinations)
    }

    /// Nodes (CPUs, GiB, tainted), the pods on each (CPUs, GiB), and the seed of the removal order.
    type MoverCase = (Vec<(u64, u64, bool)>, Vec<Vec<(u64, u64)>>, u64);

    fn mover_cases() -> impl Strategy<Value = MoverCase> {
        (
            prop::collection::vec((1u64..=8, 1u64..=16, any::<bool>()), 4..24),
            prop::collection::vec(prop::collection::vec((1u64..=6, 1u64..=4), 0..6), 24),
            any::<u64>(),
        )
    }

    #[test]
    fn the_saved_cases_replay() {
        let names = ["shapes", "loads", "order_seed"];
        let replayed = crate::saved_seeds::replay(file!(), &names, mover_cases(), &[]);
        assert_eq!(replayed, 1);
        assert_eq!(replayed, crate::saved_seeds::count(file!()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Removing nodes one after another, as scale-down does (a removal that fits is kept, one that does
        /// not is undone): the mover's indexed search and kept explanations give what a plain first fit over
        /// the whole cluster gives, destinations and reasons alike.
        #[test]
        fn the_indexed_mover_moves_as_a_plain_first_fit((shapes, loads, order_seed) in mover_cases()) {
            let nodes: Vec<Arc<Node>> = (shapes.iter().enumerate())
                .map(|(i, &(cpu, gib, tainted))| node(i, cpu * 1000, gib, tainted && i % 3 == 0))
                .collect();
            let mut pods = Vec::new();
            for (n, node) in nodes.iter().enumerate() {
                let mut used = (0, 0);
                for &(cpu, gib) in &loads[n] {
                    // Shapes from a few sizes, so that pods of a node often move together.
                    let (cpu, gib) = (cpu * 250, gib);
                    if used.0 + cpu <= node.allocatable.cpu_millis
                        && (used.1 + gib) * GIB <= node.allocatable.memory_bytes
                    {
                        used = (used.0 + cpu, used.1 + gib);
                        pods.push(pod(pods.len(), &node.name, cpu, gib));
                    }
                }
            }
            let group_of = vec![Some(0); nodes.len()];
            let on: Vec<usize> = (0..pods.len()).collect();
            let on_node = world::pods_by_node(&nodes, &pods, &on);
            let (mut topology, mut places) =
                world::build_places(&nodes, &group_of, &pods, &on_node, &[], &LabelProjection::All);
            let mut order: Vec<usize> = (0..nodes.len()).collect();
            let mut seed = order_seed;
            for i in (1..order.len()).rev() {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                order.swap(i, (seed >> 33) as usize % (i + 1));
            }
            let groups = [GroupInfo {
                id: "g".into(),
                min_size: 0,
                target: nodes.len() as i32,
                options: GroupOptions::default(),
                deleting: 0,
                updating: false,
            }];
            let (pods_of, now) = ((&pods).into(), SystemTime::now());
            let input = Input::new(&nodes, pods_of, &group_of, &groups, &on_node, now);
            let mut mover = Mover::new(order.clone(), &places, &input);
            let (mut plain_topology, mut plain_places) = (topology.clone(), places.clone());
            // Candidates from the back of the order, as scale-down tries them.
            for &from in order.iter().rev() {
                let moving: Vec<usize> = on_node[from]
                    .iter()
                    .copied()
                    .chain(mover.moved_onto[from].iter().copied())
                    .collect();
                let expected = {
                    let (mut t, mut p) = (plain_topology.clone(), plain_places.clone());
                    let got = plain(&mut t, &mut p, input.pods, &order, from, &moving);
                    if got.is_ok() {
                        (plain_topology, plain_places) = (t, p);
                        plain_places[from].accepts = false;
                    }
                    got
                };
                let mut undo = Undo::default();
                let got = mover.move_pods(&mut topology, &mut places, from, &on_node[from], &mut undo);
                match &got {
                    Ok(destinations) => {
                        mover.set_accepts(&mut places, from, false);
                        mover.commit(from, destinations);
                    }
                    Err(_) => mover.undo(undo, &mut topology, &mut places),
                }
                prop_assert_eq!(&got, &expected, "removing {}", from);
                for (p, q) in places.iter().zip(&plain_places) {
                    prop_assert_eq!(p.free, q.free);
                }
            }
        }
    }
}
