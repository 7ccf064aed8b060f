//! One estimation in progress: the nodes added so far, with the indexes its searches ask (free room, hostname
//! marks, spread minimums), and the steps taken. Every search adds and fills nodes through it, so the indexes
//! and the steps stay in step with the nodes.

use super::plan::{Demand, Estimate, EstimateLimits, Ordering, PlanStep, Stop, Templates, Zones};
use crate::model::Pod;
use crate::simulator::Filling;
use crate::simulator::FreeTree;
use crate::simulator::SpreadMins;
use crate::simulator::{HostMarks, Open};
use crate::simulator::{Place, PlaceKind, Topology};
use crate::simulator::{Unfit, node_fit};
use std::time::Instant;

/// One estimation in progress: the nodes added so far and the counts with their pods.
pub(super) struct Packing<'a> {
    pub(super) topology: Topology,
    pub(super) existing: &'a [Place],
    pub(super) templates: Templates<'a>,
    pub(super) limits: EstimateLimits,
    pub(super) nodes: Vec<Place>,
    /// Over `nodes`, for the resource-only first fit.
    pub(super) tree: FreeTree,
    /// Over `nodes`, for the first fit of pods with hostname affinity or anti-affinity.
    pub(super) marks: HostMarks,
    /// Over `existing` and `nodes`, for topology spreads.
    pub(super) mins: SpreadMins,
    /// Nodes added per zone of `templates`.
    pub(super) added: Vec<u64>,
    /// The zone (of `templates`) of each of `nodes`.
    pub(super) zone: Vec<usize>,
    pub(super) stopped: Option<Stop>,
    /// Upstream's `lastIndex`: where its rotating search starts.
    pub(super) last_index: usize,
    pub(super) steps: Vec<PlanStep>,
}

impl<'a> Packing<'a> {
    /// An estimation with no node added yet, on a copy of the counts; its vectors sized for `expected`
    /// nodes, its tree given (best fit sizes its rooms up front).
    pub(super) fn new(
        topology: &Topology,
        existing: &'a [Place],
        templates: Templates<'a>,
        limits: EstimateLimits,
        expected: usize,
        tree: FreeTree,
    ) -> Packing<'a> {
        Packing {
            topology: topology.clone(),
            existing,
            templates,
            limits,
            nodes: Vec::with_capacity(expected),
            tree,
            marks: HostMarks::new(topology),
            mins: SpreadMins::default(),
            added: vec![0; templates.zones.len()],
            zone: Vec::with_capacity(expected),
            stopped: None,
            last_index: 0,
            // A node is added, then filled: two steps a node, more when groups share nodes.
            steps: Vec::with_capacity(2 * expected),
        }
    }

    /// The estimate this packing makes, with what each demand got: a node that took no pod (upstream keeps
    /// one when a zonal constraint refuses it) is not needed, and goes.
    pub(super) fn into_estimate(
        mut self,
        placed: Vec<u64>,
        unfit: Vec<Option<Unfit>>,
        ordering: Ordering,
    ) -> Estimate {
        self.nodes.retain(|n| !n.contents.is_empty());
        Estimate {
            nodes: self.nodes,
            steps: self.steps.into(),
            placed,
            unfit,
            stopped: self.stopped,
            topology: self.topology,
            ordering,
        }
    }

    /// Takes one step of a plan again, its pods put through the predicates as the searches put them (the
    /// caller has the pods' node selector, affinity and taints pass the node's zone); false when they do
    /// not all fit.
    pub(super) fn take(&mut self, demands: &[Demand], step: PlanStep) -> bool {
        match step {
            PlanStep::Add { zone } => {
                let fresh = (self.topology).copy(&self.templates.zones[zone], PlaceKind::Planned);
                self.tree.push(&fresh.free);
                self.nodes.push(fresh);
                self.zone.push(zone);
                self.added[zone] += 1;
                self.steps.push(step);
                true
            }
            PlanStep::Put {
                node,
                demand,
                count,
            } => {
                let d = demands[demand];
                let mut filling = Filling::new(d.pod, d.terms);
                self.fill(&mut filling, demand, node, count).0 == count
            }
        }
    }

    /// Puts up to `want` pods on node `n`; keeps the tree and the node's contents current.
    pub(super) fn fill(
        &mut self,
        filling: &mut Filling,
        d: usize,
        n: usize,
        want: u64,
    ) -> (u64, Option<Unfit>) {
        let (k, why) = filling.fill(
            &mut self.topology,
            &mut self.mins.with_others(self.existing),
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
                Some(PlanStep::Put {
                    node,
                    demand,
                    count,
                }) if *node == n && *demand == d => *count += k,
                _ => self.steps.push(PlanStep::Put {
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
    pub(super) fn next_fit(&self, open: &Open, pod: &Pod, from: usize) -> Option<usize> {
        let mut n = open.next(from)?;
        loop {
            let room = self.tree.first_at_or_after(n, &pod.demand)?;
            if room == n {
                return Some(n);
            }
            n = open.next(room)?;
        }
    }

    /// The first node in `from..end` of `zones` that takes one more pod, as [`Packing::next_fit`] offers
    /// them.
    pub(super) fn first_taking(
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
                    &mut self.mins.with_others(self.existing),
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
    pub(super) fn in_zones(&self, zones: &Zones, n: usize) -> bool {
        zones.has(self.zone[n])
    }

    /// Whether the limits allow one more node; says which stopped it when not.
    pub(super) fn may_add(&mut self) -> bool {
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
    /// the first zone of `zones`, in launch order, that takes at least one. A zone whose empty node takes
    /// none is left without a node. Returns the pods placed and, when none, why not.
    pub(super) fn add_node(
        &mut self,
        filling: &mut Filling,
        zones: &Zones,
        d: usize,
        want: u64,
    ) -> (u64, Option<Unfit>) {
        let mut order = self.templates.launch_order(filling.pod(), &self.added);
        // The pod's own zones, unless the caller narrowed them (the repair packs partners in a pod's zones).
        order.retain(|&z| zones.has(z));
        let zones = order;
        let mut why = node_fit(&filling.pod().scheduling, &self.templates.first().node).err();
        for z in zones {
            let fresh = self
                .topology
                .copy(&self.templates.zones[z], PlaceKind::Planned);
            self.nodes.push(fresh);
            self.zone.push(z);
            self.steps.push(PlanStep::Add { zone: z });
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
