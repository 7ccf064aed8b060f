//! Counts of pods per topology domain, for the predicates that depend on other pods: host ports, required
//! pod affinity and anti-affinity (both ways), topology spread; and the places they are counted on.
//!
//! Counting is prepared once per loop: every term any pod uses is registered first, then each pod is
//! reduced to term ids ([`PodTerms`]) so that a placement check is a few array reads. The counts are a
//! small clonable [`Topology`], so an estimation forks it instead of copying the cluster.

use super::dra::{self as devices, PlaceDevices, SharedClaims};
use super::predicates::Unfit;
use super::spread_mins::{Domains, SpreadScope};
use super::terms::{PerDomain, TermIndex};
use crate::model::{
    HOSTNAME_LABEL, HostPort, LabelSelector, Labels, Node, Pod, PodAffinityTerm, Resources,
    Scheduling,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub type TermId = usize;

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
    /// The devices its node publishes (DRA), when it publishes any.
    pub devices: Option<Box<PlaceDevices>>,
    /// Its domain for each registered topology key.
    domains: Vec<u32>,
}

/// Whose constraints are resolved: a pending pod's are all of them; a placed pod's only what it holds
/// against others (its anti-affinity), its own affinity and spread being met already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodState {
    Pending,
    Placed,
}

/// Which way pods move in a place's counts: put there, or taken off again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shift {
    Add,
    Take,
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
    /// The terms by a label their selector requires: resolving a pod checks only those its labels name.
    /// Shared between forks (terms are registered before any fork).
    by_label: Arc<TermIndex>,
    /// Terms some pod holds as required anti-affinity: pods they match are kept away from the holder.
    held_anti: Vec<bool>,
    /// `[term][domain]`: pods the term matches.
    counts: Vec<PerDomain>,
    /// `[term][domain]`: pods holding the term as anti-affinity.
    holders: Vec<PerDomain>,
    totals: Vec<u64>,
    /// `[term]`: how many times its counts have changed, so that a minimum read from them can tell whether
    /// it still holds.
    changes: Vec<u64>,
    /// Places made so far: a list of places that grew by as many as were made only had places added.
    made: u64,
    /// Shared claims the simulation allocated: where the first pod that names one went pins the others.
    claims: SharedClaims,
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
    pub(super) fn affinity(&self) -> &[(TermId, bool)] {
        &self.affinity
    }

    pub(super) fn anti(&self) -> &[TermId] {
        &self.anti
    }

    pub(super) fn matched_by(&self) -> &[TermId] {
        &self.matched_by
    }

    pub(super) fn blocked_by(&self) -> &[TermId] {
        &self.blocked_by
    }

    /// Whether it has topology spread constraints.
    pub(super) fn spreads(&self) -> bool {
        !self.spread.is_empty()
    }

    /// Whether it has required pod affinity: where it may go grows as other pods are placed.
    pub fn wants_partners(&self) -> bool {
        !self.affinity.is_empty()
    }

    /// Whether a pod with these terms counts for one of `wanting`'s required affinity terms: placed in the
    /// term's domain, it lets a pod with `wanting`'s terms join it there.
    pub fn partner_of(&self, wanting: &PodTerms) -> bool {
        (wanting.affinity.iter()).any(|(t, _)| self.matched_by.contains(t))
    }
}

/// The affinity terms some pods match, gathered once: whether a pod has a partner among them is then one
/// lookup per term it wants, where asking [`PodTerms::partner_of`] of each would pair every pod wanting
/// partners with every pod (10,000 equivalence groups wanting labels no pod has: 10^8 pairs a loop).
#[derive(Default)]
pub struct Partners(std::collections::HashSet<TermId>);

impl Partners {
    pub fn of<'a>(pods: impl IntoIterator<Item = &'a PodTerms>) -> Partners {
        Partners(
            (pods.into_iter())
                .flat_map(|t| t.matched_by.iter().copied())
                .collect(),
        )
    }

    /// Whether a pod of these pods counts for one of `wanting`'s required affinity terms.
    pub fn any_for(&self, wanting: &PodTerms) -> bool {
        (wanting.affinity.iter()).any(|(t, _)| self.0.contains(t))
    }
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
        Arc::make_mut(&mut self.by_label).add(self.terms.len() - 1, &term.selector);
        self.term_index.insert(term, self.terms.len() - 1);
        self.held_anti.push(false);
        self.counts.push(PerDomain::default());
        self.holders.push(PerDomain::default());
        self.totals.push(0);
        self.changes.push(0);
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
                Some(vec![pod.namespace.to_string()]),
            );
        }
    }

    /// Per term, whether its key is the hostname: each node is a domain of its own.
    pub(super) fn per_host_terms(&self) -> Vec<bool> {
        (self.terms.iter())
            .map(|t| self.keys[t.key] == HOSTNAME_LABEL)
            .collect()
    }

    /// Whether term `t`'s key is the hostname: placing a pod counts on its own node only.
    pub(super) fn per_host(&self, t: TermId) -> bool {
        self.keys[self.terms[t].key] == HOSTNAME_LABEL
    }

    /// Placed pods the term matches, all domains counted.
    pub(super) fn total(&self, term: TermId) -> u64 {
        self.totals[term]
    }

    /// Whether any pod registered a term: without one, every pod's terms are empty.
    pub fn has_terms(&self) -> bool {
        !self.terms.is_empty()
    }

    /// A pending pod's constraints as term ids; its terms must have been registered.
    pub fn resolve(&self, pod: &Pod) -> PodTerms {
        self.terms_of(pod, PodState::Pending)
    }

    /// What counting needs of a pod already on a node: the terms that match it and its anti-affinity
    /// (registered by [`build`]). Its own affinity and spread only mattered when it was placed.
    pub fn resolve_placed(&self, pod: &Pod) -> PodTerms {
        self.terms_of(pod, PodState::Placed)
    }

    fn terms_of(&self, pod: &Pod, state: PodState) -> PodTerms {
        let pending = state == PodState::Pending;
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
                    Some(vec![pod.namespace.to_string()]),
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
        for t in self.by_label.candidates(&pod.labels) {
            if self.terms[t].matches(&pod.namespace, &pod.labels) {
                matched_by.push(t);
                if self.held_anti[t] {
                    blocked_by.push(t);
                }
            }
        }
        PodTerms {
            // A pod's claims are allocated device by device: pods that claim go one at a time.
            simple: !s.has_pod_constraints() && blocked_by.is_empty() && pod.needs().is_none(),
            affinity,
            anti,
            spread,
            matched_by,
            blocked_by,
        }
    }

    /// A place for `node`, with nothing on it yet. Every place is its own hostname domain.
    pub fn place(&mut self, node: Arc<Node>, group: Option<usize>, kind: PlaceKind) -> Place {
        self.made += 1;
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
            devices: None,
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
        place.devices = template.devices.clone();
        place.free = template.free;
        place.free_extended = template.free_extended.clone();
        place.ports = template.ports.clone();
        place
    }

    /// The shared claims allocated so far in this simulation.
    pub fn shared_claims(&self) -> &SharedClaims {
        &self.claims
    }

    /// The topology keys registered: the node labels whose values are domains.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// How many placed pods match the pod's affinity terms, all domains counted: a pod its affinity refused
    /// everywhere can fit nowhere new until this grows.
    pub fn partners(&self, pod: &PodTerms) -> u64 {
        pod.affinity.iter().map(|&(t, _)| self.totals[t]).sum()
    }

    /// Whether every required affinity term of the pod has a matching pod in `place`'s domain (or, for a
    /// term the pod matches itself, nowhere yet, as the scheduler allows the first such pod anywhere).
    pub fn affinity_holds(&self, pod: &PodTerms, place: &Place) -> bool {
        pod.affinity.iter().all(|&(t, own)| {
            let d = self.domain(place, t);
            let here = d != NO_DOMAIN && self.counts[t].read(d) > 0;
            here || own && self.totals[t] == 0
        })
    }

    fn domain(&self, place: &Place, term: TermId) -> u32 {
        place.domains[self.terms[term].key]
    }

    /// Whether a pod with these terms may join the pods on `place` (ports, affinity, anti-affinity,
    /// spread). `scope`'s others and `places` (which holds `place`) are the places its spread constraints
    /// count as domains when they pass its node selector and affinity; `scope`'s mins is what is known of
    /// their minimums.
    pub fn allows(
        &self,
        pod: &PodTerms,
        scheduling: &Scheduling,
        place: &Place,
        scope: &mut SpreadScope<Place>,
        places: &[Place],
    ) -> Result<(), Unfit> {
        if scheduling
            .host_ports
            .iter()
            .any(|p| place.ports.iter().any(|q| p.conflicts(q)))
        {
            return Err(Unfit::HostPorts);
        }
        if !self.affinity_holds(pod, place) {
            return Err(Unfit::Affinity);
        }
        for &t in &pod.anti {
            let d = self.domain(place, t);
            if d != NO_DOMAIN && self.counts[t].read(d) > 0 {
                return Err(Unfit::AntiAffinity);
            }
        }
        for &t in &pod.blocked_by {
            let d = self.domain(place, t);
            if d != NO_DOMAIN && self.holders[t].read(d) > 0 {
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
        for spread in &pod.spread {
            let t = spread.term;
            let d = self.domain(place, t);
            let here = self.counts[t].read(d);
            // Which places are domains depends on the term alone, unless the pod's node affinity, taints
            // or other spreads narrow them: then the minimum is the pod's own.
            let own_domains = pod.spread.len() > 1
                || spread.honor_taints
                || spread.honor_affinity && scheduling.constrains_nodes();
            let key = (
                t,
                if own_domains {
                    scheduling as *const Scheduling as usize
                } else {
                    0
                },
            );
            let domains = Domains {
                others: scope.others,
                places,
                domain: &|other| {
                    (self.spread_domain(pod, spread, scheduling, other))
                        .then(|| self.domain(other, t))
                },
                count: &|d| self.counts[t].read(d),
                changes: self.changes[t],
                made: self.made,
            };
            let after = here + u32::from(spread.own);
            if !scope.mins.within(
                key,
                (after, here),
                (spread.max_skew, spread.min_domains),
                &domains,
            ) {
                return Err(Unfit::Spread);
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
                || crate::model::untolerated(&place.node.taints, &scheduling.tolerations).is_none())
    }

    /// Puts `n` pods with these terms on `place`.
    pub fn put(&mut self, pod: &Pod, terms: &PodTerms, place: &mut Place, n: u64) {
        place.free = place.free.minus(&pod.demand.times(n));
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
        if pod.needs().is_some() {
            if let Some((demand, extended)) = devices::served_by_plugins(pod, &place.node) {
                place.free = place.free.minus(&demand.times(n));
                for (name, amount) in &extended {
                    if let Some(free) = place.free_extended.get_mut(name) {
                        *free = free.saturating_sub(amount.saturating_mul(n));
                    }
                }
            }
            for _ in 0..n {
                devices::reserve(
                    pod,
                    &place.node,
                    place.devices.as_deref_mut(),
                    &mut self.claims,
                );
            }
        }
        self.count(terms, place, n);
    }

    /// Counts `n` pods with these terms in `place`'s domains (the counting half of [`Topology::put`]).
    pub fn count(&mut self, terms: &PodTerms, place: &Place, n: u64) {
        self.shift(terms, place, n, Shift::Add);
    }

    /// Adds or takes (as `shift` says) `n` pods to or from the counts of the terms that match them and the
    /// anti-affinity they hold, in `place`'s domains.
    fn shift(&mut self, terms: &PodTerms, place: &Place, n: u64, shift: Shift) {
        let up = shift == Shift::Add;
        let by = u32::try_from(n).unwrap_or(u32::MAX);
        for &t in &terms.matched_by {
            let d = self.domain(place, t);
            if d != NO_DOMAIN {
                self.changes[t] += 1;
                if up {
                    self.counts[t].bump(d, by);
                    self.totals[t] += n;
                } else {
                    self.counts[t].drop_by(d, by);
                    self.totals[t] = self.totals[t].saturating_sub(n);
                }
            }
        }
        for &t in &terms.anti {
            let d = self.domain(place, t);
            if d != NO_DOMAIN {
                if up {
                    self.holders[t].bump(d, by);
                } else {
                    self.holders[t].drop_by(d, by);
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
        if pod.needs().is_some() {
            if let Some((demand, extended)) = devices::served_by_plugins(pod, &place.node) {
                place.free = place.free.plus(demand.times(n));
                for (name, amount) in &extended {
                    if let Some(free) = place.free_extended.get_mut(name) {
                        *free = free.saturating_add(amount.saturating_mul(n));
                    }
                }
            }
            for _ in 0..n {
                devices::release(pod, place.devices.as_deref_mut(), &mut self.claims);
            }
        }
        self.uncount(terms, place, n);
    }

    /// Takes `n` pods out of the counts of `place`'s domains, leaving its room as it is: the pods of a node
    /// being removed stop counting where they were. Undone by [`Topology::count`].
    pub fn uncount(&mut self, terms: &PodTerms, place: &Place, n: u64) {
        self.shift(terms, place, n, Shift::Take);
    }
}
