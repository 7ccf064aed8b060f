//! The cluster as the scheduler would see it, in memory (cluster-autoscaler's ClusterSnapshot): places
//! (existing nodes, upcoming nodes, nodes planned in this loop) with what is free on them, and counts of pods
//! per topology domain for the predicates that depend on other pods: host ports, required pod affinity and
//! anti-affinity (both ways), topology spread.
//!
//! Counting is prepared once per loop: every term any pod uses is registered first, then each pod is
//! reduced to term ids ([`PodTerms`]) so that a placement check is a few array reads. The counts are a
//! small clonable [`Topology`], so an estimation forks it instead of copying the cluster.

use super::predicates::{self, Unfit};
use crate::model::node::HOSTNAME_LABEL;
use crate::model::pod::{HostPort, LabelProjection, PodAffinityTerm, Scheduling, SchedulingIds};
use crate::model::selector::{LabelSelector, Labels};
use crate::model::{Node, Pod, Resources};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub type TermId = usize;

/// Visits the places a pod's spread constraints count as domains (those matching its node affinity).
pub type Eligible<'a> = dyn FnMut(&mut dyn FnMut(&Place)) + 'a;
const NO_DOMAIN: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceKind {
    /// A registered node.
    Existing,
    /// Requested from the provider, not registered yet: a copy of the group's template.
    Upcoming,
    /// Added by this loop's scale-up plan.
    Planned,
}

/// A node pods can be placed on, with what is left on it.
#[derive(Clone, Debug)]
pub struct Place {
    pub node: Arc<Node>,
    /// Index of its node group in the loop's group list; `None` for nodes no group manages.
    pub group: Option<usize>,
    pub kind: PlaceKind,
    pub accepts: bool,
    pub free: Resources,
    pub free_extended: BTreeMap<String, u64>,
    pub ports: Vec<HostPort>,
    /// On nodes an estimation adds: (demand index, pods) it put here.
    pub contents: Vec<(usize, u64)>,
    /// Its domain for each registered topology key.
    domains: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Term {
    key: usize,
    selector: LabelSelector,
    namespaces: Option<Vec<String>>,
}

impl Term {
    fn matches(&self, namespace: &str, labels: &Labels) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| n == namespace))
            && self.selector.matches(labels)
    }
}

/// Pods per topology domain, for every registered term.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    keys: Vec<String>,
    domains: Vec<HashMap<String, u32>>,
    next_domain: Vec<u32>,
    terms: Vec<Term>,
    term_index: HashMap<Term, TermId>,
    /// Terms some pod holds as required anti-affinity: pods they match are kept away from the holder.
    held_anti: Vec<bool>,
    /// `[term][domain]`: pods the term matches.
    counts: Vec<Vec<u32>>,
    /// `[term][domain]`: pods holding the term as anti-affinity.
    holders: Vec<Vec<u32>>,
    totals: Vec<u64>,
}

/// A pod's constraints as term ids.
#[derive(Clone, Debug, Default)]
pub struct PodTerms {
    /// Required affinity terms, and whether the pod matches the term itself (then the first such pod may go
    /// anywhere, as the scheduler allows).
    affinity: Vec<(TermId, bool)>,
    anti: Vec<TermId>,
    /// Spread constraints as terms.
    spread: Vec<Spread>,
    /// Terms that match this pod: placing it raises their counts.
    matched_by: Vec<TermId>,
    /// Anti-affinity terms of other pods that match this pod.
    blocked_by: Vec<TermId>,
    /// No constraint depends on other pods: packing may fill nodes in closed form.
    pub simple: bool,
}

#[derive(Clone, Copy, Debug)]
struct Spread {
    term: TermId,
    max_skew: u32,
    /// The pod matches its own selector, so it counts itself.
    own: bool,
    /// Fewer eligible domains than this make the global minimum 0.
    min_domains: u32,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes the pod's node selector and affinity pass
    /// are domains.
    honor_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: only nodes whose taints the pod tolerates are domains (by default taints
    /// are ignored).
    honor_taints: bool,
}

impl PodTerms {
    fn spread_count(&self) -> usize {
        self.spread.len()
    }
}

fn bump(list: &mut Vec<u32>, domain: u32, by: u32) {
    let i = domain as usize;
    if list.len() <= i {
        list.resize(i + 1, 0);
    }
    list[i] += by;
}

fn drop_by(list: &mut [u32], domain: u32, by: u32) {
    if let Some(count) = list.get_mut(domain as usize) {
        *count = count.saturating_sub(by);
    }
}

fn read(list: &[u32], domain: u32) -> u32 {
    list.get(domain as usize).copied().unwrap_or(0)
}

impl Topology {
    fn key(&mut self, key: &str) -> usize {
        if let Some(i) = self.keys.iter().position(|k| k == key) {
            return i;
        }
        self.keys.push(key.to_string());
        self.domains.push(HashMap::new());
        self.next_domain.push(0);
        self.keys.len() - 1
    }

    fn term(
        &mut self,
        key: &str,
        selector: &LabelSelector,
        namespaces: Option<Vec<String>>,
    ) -> TermId {
        let term = Term {
            key: self.key(key),
            selector: selector.clone(),
            namespaces,
        };
        if let Some(&id) = self.term_index.get(&term) {
            return id;
        }
        self.terms.push(term.clone());
        self.term_index.insert(term, self.terms.len() - 1);
        self.held_anti.push(false);
        self.counts.push(Vec::new());
        self.holders.push(Vec::new());
        self.totals.push(0);
        self.terms.len() - 1
    }

    fn affinity_term(&mut self, t: &PodAffinityTerm) -> TermId {
        self.term(&t.topology_key, &t.selector, t.namespaces.clone())
    }

    /// Registers the terms of a pod (pending, or placed with anti-affinity). All registration comes before
    /// the first place is added.
    pub fn register(&mut self, pod: &Pod) {
        let s = &pod.scheduling;
        for t in &s.affinity {
            self.affinity_term(t);
        }
        for t in &s.anti_affinity {
            let id = self.affinity_term(t);
            self.held_anti[id] = true;
        }
        for c in &s.spread {
            self.term(
                &c.topology_key,
                &c.selector,
                Some(vec![pod.namespace.clone()]),
            );
        }
    }

    /// A pending pod's constraints as term ids; its terms must have been registered.
    pub fn resolve(&self, pod: &Pod) -> PodTerms {
        self.terms_of(pod, true)
    }

    /// What counting needs of a pod already on a node: the terms that match it and its anti-affinity
    /// (registered by [`build`]). Its own affinity and spread only mattered when it was placed.
    pub fn resolve_placed(&self, pod: &Pod) -> PodTerms {
        self.terms_of(pod, false)
    }

    fn terms_of(&self, pod: &Pod, pending: bool) -> PodTerms {
        let s = &pod.scheduling;
        let id = |key: &str, selector: &LabelSelector, namespaces: Option<Vec<String>>| {
            let key = self
                .keys
                .iter()
                .position(|k| k == key)
                .expect("registered key");
            self.term_index[&Term {
                key,
                selector: selector.clone(),
                namespaces,
            }]
        };
        let own = |t: &PodAffinityTerm| t.matches(&pod.namespace, &pod.labels);
        let affinity = s
            .affinity
            .iter()
            .filter(|_| pending)
            .map(|t| {
                (
                    id(&t.topology_key, &t.selector, t.namespaces.clone()),
                    own(t),
                )
            })
            .collect();
        let anti = s
            .anti_affinity
            .iter()
            .map(|t| id(&t.topology_key, &t.selector, t.namespaces.clone()))
            .collect();
        let spread = s
            .spread
            .iter()
            .filter(|_| pending)
            .map(|c| Spread {
                term: id(
                    &c.topology_key,
                    &c.selector,
                    Some(vec![pod.namespace.clone()]),
                ),
                max_skew: c.max_skew,
                own: c.selector.matches(&pod.labels),
                min_domains: c.min_domains,
                honor_affinity: c.honor_node_affinity,
                honor_taints: c.honor_node_taints,
            })
            .collect();
        let mut matched_by = Vec::new();
        let mut blocked_by = Vec::new();
        for (t, term) in self.terms.iter().enumerate() {
            if term.matches(&pod.namespace, &pod.labels) {
                matched_by.push(t);
                if self.held_anti[t] {
                    blocked_by.push(t);
                }
            }
        }
        PodTerms {
            simple: !s.has_pod_constraints() && blocked_by.is_empty(),
            affinity,
            anti,
            spread,
            matched_by,
            blocked_by,
        }
    }

    /// A place for `node`, with nothing on it yet. Every place is its own hostname domain.
    pub fn place(&mut self, node: Arc<Node>, group: Option<usize>, kind: PlaceKind) -> Place {
        let domains = (0..self.keys.len())
            .map(|k| {
                let fresh = |next: &mut u32| {
                    *next += 1;
                    *next - 1
                };
                if self.keys[k] == HOSTNAME_LABEL {
                    return fresh(&mut self.next_domain[k]);
                }
                match node.labels.get(&self.keys[k]) {
                    None => NO_DOMAIN,
                    Some(value) => {
                        if let Some(&d) = self.domains[k].get(value) {
                            return d;
                        }
                        let d = fresh(&mut self.next_domain[k]);
                        self.domains[k].insert(value.clone(), d);
                        d
                    }
                }
            })
            .collect();
        Place {
            accepts: node.accepts_pods(),
            free: node.allocatable,
            free_extended: node.extended.clone(),
            ports: Vec::new(),
            contents: Vec::new(),
            node,
            group,
            kind,
            domains,
        }
    }

    /// Another node like `template` (a group's template with its DaemonSet pods), in a hostname domain
    /// of its own.
    pub fn copy(&mut self, template: &Place, kind: PlaceKind) -> Place {
        let mut place = self.place(template.node.clone(), template.group, kind);
        place.free = template.free;
        place.free_extended = template.free_extended.clone();
        place.ports = template.ports.clone();
        place
    }

    fn domain(&self, place: &Place, term: TermId) -> u32 {
        place.domains[self.terms[term].key]
    }

    /// Whether a pod with these terms may join the pods on `place` (ports, affinity, anti-affinity,
    /// spread). `eligible` lists the other places its spread constraints count (nodes matching its node
    /// selector and affinity), and is read only when a spread check fails on the cached minimum.
    pub fn allows(
        &self,
        pod: &PodTerms,
        scheduling: &Scheduling,
        place: &Place,
        spread_min: &mut [u32],
        eligible: &mut Eligible,
    ) -> Result<(), Unfit> {
        if scheduling
            .host_ports
            .iter()
            .any(|p| place.ports.iter().any(|q| p.conflicts(q)))
        {
            return Err(Unfit::HostPorts);
        }
        for &(t, own) in &pod.affinity {
            let d = self.domain(place, t);
            let here = d != NO_DOMAIN && read(&self.counts[t], d) > 0;
            if !(here || own && self.totals[t] == 0) {
                return Err(Unfit::Affinity);
            }
        }
        for &t in &pod.anti {
            let d = self.domain(place, t);
            if d != NO_DOMAIN && read(&self.counts[t], d) > 0 {
                return Err(Unfit::AntiAffinity);
            }
        }
        for &t in &pod.blocked_by {
            let d = self.domain(place, t);
            if d != NO_DOMAIN && read(&self.holders[t], d) > 0 {
                return Err(Unfit::AntiAffinity);
            }
        }
        // kube-scheduler's PodTopologySpread: a node must carry every constraint's key; the skew is the
        // count in its domain (with this pod) over the minimum across the eligible domains.
        for spread in &pod.spread {
            if self.domain(place, spread.term) == NO_DOMAIN {
                let t = spread.term;
                return Err(Unfit::MissingTopology(self.keys[self.terms[t].key].clone()));
            }
        }
        for (i, spread) in pod.spread.iter().enumerate() {
            let t = spread.term;
            let d = self.domain(place, t);
            let after = read(&self.counts[t], d) + u32::from(spread.own);
            // Counts only grow while a pod is being placed, so a cached minimum is a lower bound: recount
            // only when it says no.
            if after > spread_min[i] + spread.max_skew {
                let mut min = read(&self.counts[t], d);
                let mut domains = HashSet::from([d]);
                eligible(&mut |other: &Place| {
                    if !self.spread_domain(pod, spread, scheduling, other) {
                        return;
                    }
                    let od = self.domain(other, t);
                    min = min.min(read(&self.counts[t], od));
                    domains.insert(od);
                });
                if (domains.len() as u64) < u64::from(spread.min_domains) {
                    min = 0;
                }
                spread_min[i] = min;
                if after > min + spread.max_skew {
                    return Err(Unfit::Spread);
                }
            }
        }
        Ok(())
    }

    /// Whether `place` is one of the domains `spread` counts, as kube-scheduler decides it: it has every
    /// key the pod spreads over, and passes the pod's node affinity and taints as the policies say.
    fn spread_domain(
        &self,
        pod: &PodTerms,
        spread: &Spread,
        scheduling: &Scheduling,
        place: &Place,
    ) -> bool {
        pod.spread
            .iter()
            .all(|s| self.domain(place, s.term) != NO_DOMAIN)
            && (!spread.honor_affinity
                || scheduling.node_matches(&place.node.name, &place.node.labels))
            && (!spread.honor_taints
                || crate::model::taint::untolerated(&place.node.taints, &scheduling.tolerations)
                    .is_none())
    }

    /// Puts `n` pods with these terms on `place`.
    pub fn put(&mut self, pod: &Pod, terms: &PodTerms, place: &mut Place, n: u64) {
        place.free = predicates::minus(place.free, &pod.demand.times(n));
        for (name, amount) in &pod.extended {
            if let Some(free) = place.free_extended.get_mut(name) {
                *free = free.saturating_sub(amount.saturating_mul(n));
            }
        }
        if n > 0 {
            place
                .ports
                .extend(pod.scheduling.host_ports.iter().cloned());
        }
        self.count(terms, place, n);
    }

    /// Counts `n` pods with these terms in `place`'s domains (the counting half of [`Topology::put`]).
    pub fn count(&mut self, terms: &PodTerms, place: &Place, n: u64) {
        self.shift(terms, place, n, true);
    }

    /// Adds (`up`) or takes `n` pods to or from the counts of the terms that match them and the anti-affinity
    /// they hold, in `place`'s domains.
    fn shift(&mut self, terms: &PodTerms, place: &Place, n: u64, up: bool) {
        let by = u32::try_from(n).unwrap_or(u32::MAX);
        for &t in &terms.matched_by {
            let d = self.domain(place, t);
            if d != NO_DOMAIN {
                if up {
                    bump(&mut self.counts[t], d, by);
                    self.totals[t] += n;
                } else {
                    drop_by(&mut self.counts[t], d, by);
                    self.totals[t] = self.totals[t].saturating_sub(n);
                }
            }
        }
        for &t in &terms.anti {
            let d = self.domain(place, t);
            if d != NO_DOMAIN {
                if up {
                    bump(&mut self.holders[t], d, by);
                } else {
                    drop_by(&mut self.holders[t], d, by);
                }
            }
        }
    }

    /// Takes `n` pods put with [`Topology::put`] off `place` again: their room is free and they no longer
    /// count in its domains. Scale-down undoes a removal simulation that failed with it.
    pub fn take(&mut self, pod: &Pod, terms: &PodTerms, place: &mut Place, n: u64) {
        place.free = place.free.plus(pod.demand.times(n));
        for (name, amount) in &pod.extended {
            if let Some(free) = place.free_extended.get_mut(name) {
                *free = free.saturating_add(amount.saturating_mul(n));
            }
        }
        if n > 0 {
            for port in &pod.scheduling.host_ports {
                if let Some(i) = place.ports.iter().position(|p| p == port) {
                    place.ports.swap_remove(i);
                }
            }
        }
        self.uncount(terms, place, n);
    }

    /// Takes `n` pods out of the counts of `place`'s domains, leaving its room as it is: the pods of a node
    /// being removed stop counting where they were. Undone by [`Topology::count`].
    pub fn uncount(&mut self, terms: &PodTerms, place: &Place, n: u64) {
        self.shift(terms, place, n, false);
    }
}

/// Why `pod` fits on none of `places` (those `skip` says nothing of), as the scheduler words it:
/// `0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint ...`.
pub fn explain(
    topology: &Topology,
    places: &[Place],
    pod: &Pod,
    terms: &PodTerms,
    skip: impl Fn(usize) -> bool,
) -> String {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut considered = 0;
    for (p, place) in places.iter().enumerate() {
        if skip(p) {
            continue;
        }
        considered += 1;
        let mut min = vec![0; terms.spread_count()];
        let mut eligible = |visit: &mut dyn FnMut(&Place)| places.iter().for_each(&mut *visit);
        match fits(topology, pod, terms, place, &mut min, &mut eligible) {
            Ok(()) => {}
            // The scheduler counts each resource a node is short of on its own.
            Err(Unfit::Insufficient(resources)) => {
                for r in resources {
                    *reasons
                        .entry(Unfit::Insufficient(vec![r]).to_string())
                        .or_default() += 1;
                }
            }
            Err(why) => *reasons.entry(why.to_string()).or_default() += 1,
        }
    }
    let mut text = format!("0/{considered} nodes are available");
    for (i, (why, n)) in reasons.iter().enumerate() {
        text.push_str(if i == 0 { ": " } else { ", " });
        text.push_str(&format!("{n} {why}"));
    }
    text
}

/// Whether one more pod fits on `place`: readiness, node fit, resources, then the topology checks.
fn fits(
    topology: &Topology,
    pod: &Pod,
    terms: &PodTerms,
    place: &Place,
    spread_min: &mut [u32],
    eligible: &mut Eligible,
) -> Result<(), Unfit> {
    if !place.node.ready {
        return Err(Unfit::NotReady);
    }
    if place.node.unschedulable {
        return Err(Unfit::Unschedulable);
    }
    predicates::node_fit(&pod.scheduling, &place.node)?;
    predicates::resources_fit(
        &pod.demand,
        &pod.extended,
        &place.free,
        &place.free_extended,
    )?;
    if terms.simple {
        return Ok(());
    }
    topology.allows(terms, &pod.scheduling, place, spread_min, eligible)
}

/// The cluster's nodes as places (`group_of` each node's group index), with the pods in `on_nodes` put on
/// theirs (bound, or nominated). Terms are registered first: those of `pending` pods and those of pods
/// already placed (their anti-affinity keeps matching pods away; all of them matter when scale-down moves
/// those pods), once per distinct set of constraints.
pub fn build(
    nodes: &[Arc<Node>],
    group_of: &[Option<usize>],
    pods: &[Pod],
    on_nodes: &[usize],
    pending: &[&Pod],
    projection: &LabelProjection,
) -> (Topology, Vec<Place>) {
    let mut topology = Topology::default();
    for pod in pending {
        topology.register(pod);
    }
    let mut seen: HashSet<(&str, &Scheduling)> = HashSet::new();
    for &i in on_nodes {
        let pod = &pods[i];
        if pod.scheduling.has_pod_constraints() && seen.insert((&pod.namespace, &pod.scheduling)) {
            topology.register(pod);
        }
    }
    let mut places: Vec<Place> = nodes
        .iter()
        .zip(group_of)
        .map(|(node, g)| topology.place(node.clone(), *g, PlaceKind::Existing))
        .collect();
    let place_of: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut resolved: HashMap<crate::model::pod::EquivalenceKey, PodTerms> = HashMap::new();
    let mut ids = SchedulingIds::default();
    for &i in on_nodes {
        let pod = &pods[i];
        let node = pod.node_name.as_deref().or(pod.nominated_node.as_deref());
        if let Some(&p) = node.and_then(|n| place_of.get(n)) {
            let terms = resolved
                .entry(pod.equivalence_key(projection, &mut ids))
                .or_insert_with(|| topology.resolve_placed(pod));
            topology.put(pod, terms, &mut places[p], 1);
        }
    }
    (topology, places)
}

/// Places identical pods (`members` of `pods`, with `terms`) on the places that accept them, as the
/// scheduler would; returns the place of each pod placed, in order. Pods whose constraints depend only on
/// the node fill places first fit; the others go one at a time, each to the next place that takes it after
/// the one the previous pod went to (cluster-autoscaler's rotating search), so that a zone spread fills
/// every zone's nodes instead of stopping at the first node the skew refuses.
pub fn place_all(
    topology: &mut Topology,
    places: &mut [Place],
    pods: &[Pod],
    members: &[usize],
    terms: &PodTerms,
) -> Vec<usize> {
    let Some(&first) = members.first() else {
        return Vec::new();
    };
    let pod = &pods[first];
    let usable: Vec<usize> = (0..places.len())
        .filter(|&p| {
            places[p].accepts && predicates::node_fit(&pod.scheduling, &places[p].node).is_ok()
        })
        .collect();
    let mut filling = Filling::new(pod, terms);
    let mut out = Vec::new();
    if terms.simple {
        for &p in &usable {
            if out.len() == members.len() {
                break;
            }
            let want = (members.len() - out.len()) as u64;
            let (k, _) = filling.fill(topology, &[], places, p, want);
            out.extend(std::iter::repeat_n(p, k as usize));
        }
        return out;
    }
    // Places that refused a pod for a reason placing more pods cannot undo are not offered again.
    let mut open = usable;
    let mut next = 0;
    while out.len() < members.len() && !open.is_empty() {
        let len = open.len();
        let mut found = None;
        let mut closed = Vec::new();
        for step in 0..len {
            let i = (next + step) % len;
            match filling.check(topology, &[], places, open[i]) {
                Ok(()) => {
                    found = Some(i);
                    break;
                }
                Err(Unfit::Spread) => {}
                Err(_) => closed.push(i),
            }
        }
        let Some(i) = found else { break };
        let p = open[i];
        topology.put(pod, terms, &mut places[p], 1);
        out.push(p);
        next = i + 1;
        // Close the places found full on the way (their indices are all before or after `i`).
        closed.sort_unstable();
        for &c in closed.iter().rev() {
            open.remove(c);
            if c < next {
                next -= 1;
            }
        }
        if next >= open.len() {
            next = 0;
        }
    }
    out
}

/// Pods like one exemplar going onto places, one place at a time: the scheduler's placement and the
/// estimator's packing share it.
pub struct Filling<'a> {
    pod: &'a Pod,
    terms: &'a PodTerms,
    /// Cached minimums of its spread constraints (see [`Topology::allows`]), valid while the places
    /// are the same: a new place is a new domain, and may lower a minimum.
    spread_min: Vec<u32>,
    places_seen: usize,
}

impl<'a> Filling<'a> {
    pub fn new(pod: &'a Pod, terms: &'a PodTerms) -> Filling<'a> {
        Filling {
            pod,
            terms,
            spread_min: vec![0; terms.spread_count()],
            places_seen: 0,
        }
    }

    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    /// No constraint of the pod depends on other pods.
    pub fn simple(&self) -> bool {
        self.terms.simple
    }

    /// Whether one more pod fits on `places[p]`; `others` as in [`Filling::fill`].
    pub fn fits(
        &mut self,
        topology: &Topology,
        others: &[Place],
        places: &[Place],
        p: usize,
    ) -> bool {
        self.check(topology, others, places, p).is_ok()
    }

    /// Whether one more pod fits on `places[p]`, and why not.
    fn check(
        &mut self,
        topology: &Topology,
        others: &[Place],
        places: &[Place],
        p: usize,
    ) -> Result<(), Unfit> {
        let (pod, terms) = (self.pod, self.terms);
        if others.len() + places.len() != self.places_seen {
            self.places_seen = others.len() + places.len();
            self.spread_min.iter_mut().for_each(|m| *m = 0);
        }
        let mut eligible = |visit: &mut dyn FnMut(&Place)| {
            others.iter().chain(places.iter()).for_each(&mut *visit);
        };
        fits(
            topology,
            pod,
            terms,
            &places[p],
            &mut self.spread_min,
            &mut eligible,
        )
    }

    /// Puts up to `want` more pods on `places[p]`, a place whose node selector, affinity and taints the pod
    /// passes (the caller checks once per node, or once per template), as many as the other predicates allow:
    /// in closed form when only resources matter, one by one otherwise. `others` are places outside `places`
    /// that spread constraints count as domains. Returns how many went there and, when fewer than wanted, why
    /// no more.
    pub fn fill(
        &mut self,
        topology: &mut Topology,
        others: &[Place],
        places: &mut [Place],
        p: usize,
        want: u64,
    ) -> (u64, Option<Unfit>) {
        let (pod, terms) = (self.pod, self.terms);
        if terms.simple {
            let place = &places[p];
            let k = predicates::how_many(
                &pod.demand,
                &pod.extended,
                &place.free,
                &place.free_extended,
            )
            .min(want);
            let why = if k < want {
                predicates::resources_fit(
                    &pod.demand,
                    &pod.extended,
                    &place.free,
                    &place.free_extended,
                )
                .err()
            } else {
                None
            };
            topology.put(pod, terms, &mut places[p], k);
            return (k, why);
        }
        let mut k = 0;
        while k < want {
            if let Err(why) = self.check(topology, others, places, p) {
                return (k, Some(why));
            }
            topology.put(pod, terms, &mut places[p], 1);
            k += 1;
        }
        (k, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::node::ZONE_LABEL;
    use crate::model::pod::SpreadConstraint;

    fn node(name: &str, zone: &str) -> Arc<Node> {
        Arc::new(Node {
            name: name.into(),
            labels: [
                (HOSTNAME_LABEL.to_string(), name.to_string()),
                (ZONE_LABEL.to_string(), zone.to_string()),
            ]
            .into(),
            allocatable: Resources {
                cpu_millis: 4000,
                memory_bytes: 8 << 30,
                pods: 10,
                ..Default::default()
            },
            ready: true,
            ..Default::default()
        })
    }

    fn pod(app: &str, scheduling: Scheduling) -> Pod {
        let demand = Resources {
            cpu_millis: 100,
            pods: 1,
            ..Default::default()
        };
        Pod {
            labels: [("app".to_string(), app.to_string())].into(),
            scheduling: Arc::new(scheduling),
            ..Pod::pending("default", app, demand)
        }
    }

    fn selector(app: &str) -> LabelSelector {
        LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            expressions: vec![],
        }
    }

    fn check(
        topology: &Topology,
        pod: &Pod,
        terms: &PodTerms,
        place: &Place,
        all: &[Place],
    ) -> Result<(), Unfit> {
        let mut min = vec![0; terms.spread_count()];
        let mut eligible = |visit: &mut dyn FnMut(&Place)| all.iter().for_each(&mut *visit);
        fits(topology, pod, terms, place, &mut min, &mut eligible)
    }

    #[test]
    fn anti_affinity_of_a_running_pod_keeps_matching_pods_away() {
        // A running pod that refuses `web` neighbours in its zone; the pending web pod has no rule itself.
        let guard = pod(
            "guard",
            Scheduling {
                anti_affinity: vec![PodAffinityTerm {
                    selector: selector("web"),
                    namespaces: Some(vec!["default".into()]),
                    topology_key: ZONE_LABEL.into(),
                }],
                ..Default::default()
            },
        );
        let web = pod("web", Scheduling::default());
        let mut topology = Topology::default();
        topology.register(&guard);
        topology.register(&web);
        let mut places = vec![
            topology.place(node("a1", "a"), None, PlaceKind::Existing),
            topology.place(node("a2", "a"), None, PlaceKind::Existing),
            topology.place(node("b1", "b"), None, PlaceKind::Existing),
        ];
        let guard_terms = topology.resolve(&guard);
        topology.put(&guard, &guard_terms, &mut places[0], 1);
        let web_terms = topology.resolve(&web);
        assert!(!web_terms.simple, "someone's anti-affinity matches it");
        assert_eq!(
            check(&topology, &web, &web_terms, &places[1], &places),
            Err(Unfit::AntiAffinity)
        );
        assert_eq!(
            check(&topology, &web, &web_terms, &places[2], &places),
            Ok(())
        );
    }

    #[test]
    fn zone_spread_counts_only_nodes_the_pod_may_use() {
        let spread = pod(
            "api",
            Scheduling {
                spread: vec![SpreadConstraint::new(1, ZONE_LABEL, selector("api"))],
                ..Default::default()
            },
        );
        let mut topology = Topology::default();
        topology.register(&spread);
        let mut places = vec![
            topology.place(node("a1", "a"), None, PlaceKind::Existing),
            topology.place(node("b1", "b"), None, PlaceKind::Existing),
        ];
        let terms = topology.resolve(&spread);
        topology.put(&spread, &terms, &mut places[0], 1);
        // Zone a has one, zone b none: the next goes to b, not a.
        assert_eq!(
            check(&topology, &spread, &terms, &places[0], &places),
            Err(Unfit::Spread)
        );
        assert_eq!(
            check(&topology, &spread, &terms, &places[1], &places),
            Ok(())
        );
        // Counting only zone a (as if zone b's nodes did not match the pod's affinity), a is fine.
        assert_eq!(
            check(&topology, &spread, &terms, &places[0], &places[..1]),
            Ok(())
        );
        // A node without the zone label cannot take it.
        let mut bare = (*node("x", "a")).clone();
        bare.labels.remove(ZONE_LABEL);
        let bare = topology.place(Arc::new(bare), None, PlaceKind::Existing);
        assert_eq!(
            check(&topology, &spread, &terms, &bare, &places),
            Err(Unfit::MissingTopology(ZONE_LABEL.into()))
        );
    }

    #[test]
    fn min_domains_takes_the_minimum_as_zero_when_domains_are_few() {
        let spread = |min_domains| {
            pod(
                "api",
                Scheduling {
                    spread: vec![SpreadConstraint {
                        min_domains,
                        ..SpreadConstraint::new(1, ZONE_LABEL, selector("api"))
                    }],
                    ..Default::default()
                },
            )
        };
        for (min_domains, third_in_b) in [(1, Ok(())), (3, Err(Unfit::Spread))] {
            let api = spread(min_domains);
            let mut topology = Topology::default();
            topology.register(&api);
            let mut places = vec![
                topology.place(node("a1", "a"), None, PlaceKind::Existing),
                topology.place(node("b1", "b"), None, PlaceKind::Existing),
            ];
            let terms = topology.resolve(&api);
            topology.put(&api, &terms, &mut places[0], 1);
            topology.put(&api, &terms, &mut places[1], 1);
            // One in each zone: a second in b is a skew of 1 over a minimum of 1, or of 2 over 0 when
            // two zones are fewer than minDomains.
            assert_eq!(
                check(&topology, &api, &terms, &places[1], &places),
                third_in_b,
                "minDomains {min_domains}"
            );
        }
    }

    #[test]
    fn a_zone_spread_fills_every_zones_nodes_as_the_scheduler_would() {
        // Three nodes in three zones with room for five pods each; 30 pods spread by zone (maxSkew 1).
        let api = pod(
            "api",
            Scheduling {
                spread: vec![SpreadConstraint::new(1, ZONE_LABEL, selector("api"))],
                ..Default::default()
            },
        );
        let room = |name: &str, zone: &str| {
            let mut n = (*node(name, zone)).clone();
            n.allocatable.pods = 5;
            Arc::new(n)
        };
        let nodes = [room("a1", "a"), room("b1", "b"), room("c1", "c")];
        let pods: Vec<Pod> = (0..30)
            .map(|i| Pod {
                name: format!("api-{i}"),
                ..api.clone()
            })
            .collect();
        let members: Vec<usize> = (0..pods.len()).collect();
        let (mut topology, mut places) = build(
            &nodes,
            &[None; 3],
            &pods,
            &[],
            &[&pods[0]],
            &LabelProjection::All,
        );
        let terms = topology.resolve(&pods[0]);
        let placed = place_all(&mut topology, &mut places, &pods, &members, &terms);
        assert_eq!(placed.len(), 15, "all the room, five in each zone");
        let per_node: Vec<usize> = (0..3)
            .map(|p| placed.iter().filter(|&&q| q == p).count())
            .collect();
        assert_eq!(per_node, [5, 5, 5]);
    }

    #[test]
    fn spread_domains_follow_the_node_inclusion_policies() {
        // A tainted node in zone c holds nothing; whether zone c is a domain decides if zone a may take a
        // second pod. By default (nodeTaintsPolicy Ignore) c counts with 0 and a refuses; with Honor it does
        // not count, the minimum is 1 and a accepts.
        for (honor_taints, second_in_a) in [(false, Err(Unfit::Spread)), (true, Ok(()))] {
            let api = pod(
                "api",
                Scheduling {
                    spread: vec![SpreadConstraint {
                        honor_node_taints: honor_taints,
                        ..SpreadConstraint::new(1, ZONE_LABEL, selector("api"))
                    }],
                    ..Default::default()
                },
            );
            let mut tainted = (*node("c1", "c")).clone();
            tainted.taints.push(crate::model::Taint {
                key: "dedicated".into(),
                value: "batch".into(),
                effect: crate::model::TaintEffect::NoSchedule,
            });
            let mut topology = Topology::default();
            topology.register(&api);
            let mut places = vec![
                topology.place(node("a1", "a"), None, PlaceKind::Existing),
                topology.place(node("b1", "b"), None, PlaceKind::Existing),
                topology.place(Arc::new(tainted), None, PlaceKind::Existing),
            ];
            let terms = topology.resolve(&api);
            topology.put(&api, &terms, &mut places[0], 1);
            topology.put(&api, &terms, &mut places[1], 1);
            assert_eq!(
                check(&topology, &api, &terms, &places[0], &places),
                second_in_a,
                "nodeTaintsPolicy Honor: {honor_taints}"
            );
        }
    }

    #[test]
    fn pods_on_nodes_may_carry_constraints_nobody_pending_uses() {
        // Deployments with spread constraints and affinity run everywhere; only pending pods' terms and
        // running pods' anti-affinity are registered, and building must not trip on the rest.
        let running = Pod {
            node_name: Some("a1".into()),
            ..pod(
                "old",
                Scheduling {
                    affinity: vec![PodAffinityTerm {
                        selector: selector("db"),
                        namespaces: None,
                        topology_key: ZONE_LABEL.into(),
                    }],
                    spread: vec![SpreadConstraint::new(1, HOSTNAME_LABEL, selector("old"))],
                    ..Default::default()
                },
            )
        };
        let pending = pod("web", Scheduling::default());
        let nodes = [node("a1", "a")];
        let (topology, places) = build(
            &nodes,
            &[None],
            &[running],
            &[0],
            &[&pending],
            &LabelProjection::All,
        );
        assert_eq!(places[0].free.cpu_millis, 3900);
        assert!(topology.resolve(&pending).simple);
    }
}
