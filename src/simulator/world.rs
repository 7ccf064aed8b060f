//! The cluster as the scheduler would see it, in memory (cluster-autoscaler's ClusterSnapshot): the places
//! (existing nodes, upcoming nodes, nodes planned in this loop) built from a view, and pods put on them as the
//! scheduler would, with its reasons when they fit nowhere. What is free on a place and the counts per
//! topology domain are in [`super::topology`].

use super::dra as devices;
use super::predicates::{self, Unfit};
use super::spread_mins::{SpreadMins, SpreadScope};
use super::topology::{Place, PlaceKind, PodTerms, Topology};
use crate::model::{FastMap, LabelProjection, Node, Pod, PodList, Scheduling, SchedulingIds};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

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
        for why in unfit(topology, places, pod, terms, place) {
            *reasons.entry(why).or_default() += 1;
        }
    }
    unavailable(considered, &reasons)
}

/// Why one more `pod` does not fit on `place`, each reason as [`explain`] counts it (none when it fits).
pub fn unfit(
    topology: &Topology,
    places: &[Place],
    pod: &Pod,
    terms: &PodTerms,
    place: &Place,
) -> Vec<String> {
    match fits_among(topology, pod, terms, place, places) {
        Ok(()) => Vec::new(),
        // The scheduler counts each resource a node is short of on its own.
        Err(Unfit::Insufficient(resources)) => (resources.into_iter())
            .map(|r| Unfit::Insufficient(vec![r]).to_string())
            .collect(),
        Err(why) => vec![why.to_string()],
    }
}

/// `0/N nodes are available: ...`, from how many places gave each reason.
pub fn unavailable(considered: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut text = format!("0/{considered} nodes are available");
    for (i, (why, n)) in reasons.iter().enumerate() {
        text.push_str(if i == 0 { ": " } else { ", " });
        text.push_str(&format!("{n} {why}"));
    }
    text
}

/// Whether one more pod fits on `place`, the spreads' minimums counted over `places` for it alone.
fn fits_among(
    topology: &Topology,
    pod: &Pod,
    terms: &PodTerms,
    place: &Place,
    places: &[Place],
) -> Result<(), Unfit> {
    let mut mins = SpreadMins::default();
    fits(
        topology,
        pod,
        terms,
        place,
        &mut mins.with_others(&[]),
        places,
    )
}

/// Whether one more pod fits on `place`: readiness, node fit, resources, then the topology checks (with the
/// places of `scope`'s others and `places` as the domains of its spreads).
fn fits(
    topology: &Topology,
    pod: &Pod,
    terms: &PodTerms,
    place: &Place,
    scope: &mut SpreadScope<Place>,
    places: &[Place],
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
    // Extended resources devices could serve, where a device plugin serves them instead.
    if let Some((demand, extended)) = devices::served_by_plugins(pod, &place.node) {
        predicates::resources_fit(&demand, &extended, &place.free, &place.free_extended)?;
    }
    topology.allows(terms, &pod.scheduling, place, scope, places)?;
    let shared = topology.shared_claims();
    devices::claims_fit(pod, &place.node, place.devices.as_deref(), shared).map(drop)
}

/// The pods of `members` on each of `nodes` (bound, or nominated to it), by node index; pods on no node of
/// them are left out. The one place a pod's node is looked up by name in a loop.
pub fn pods_by_node<'a>(
    nodes: &[Arc<Node>],
    pods: impl Into<PodList<'a>>,
    members: &[usize],
) -> Vec<Vec<usize>> {
    let pods = pods.into();
    // A fast hasher: this is one lookup per pod of the cluster.
    let index: FastMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    // Each pod's node first, then each node's list made at its size: no list grows pod by pod.
    let mut counts = vec![0usize; nodes.len()];
    let at: Vec<usize> = (members.iter())
        .map(|&p| {
            let pod = pods.get(p);
            let name = pod.node_name.as_deref().or(pod.nominated_node.as_deref());
            let n = name.and_then(|n| index.get(n)).copied();
            n.inspect(|&n| counts[n] += 1).unwrap_or(usize::MAX)
        })
        .collect();
    let mut on_node: Vec<Vec<usize>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    for (&p, &n) in members.iter().zip(&at) {
        if n != usize::MAX {
            on_node[n].push(p);
        }
    }
    on_node
}

/// The cluster's nodes as places (`group_of` each node's group index), with the pods of `on_node` (by node
/// index, from [`pods_by_node`]) put on them. Terms are registered first: those of `pending` pods and those
/// of pods already placed (their anti-affinity keeps matching pods away; all of them matter when scale-down
/// moves those pods), once per distinct set of constraints.
pub fn build_places<'a>(
    nodes: &[Arc<Node>],
    group_of: &[Option<usize>],
    pods: impl Into<PodList<'a>>,
    on_node: &[Vec<usize>],
    pending: &[&Pod],
    projection: &LabelProjection,
) -> (Topology, Vec<Place>) {
    let pods = pods.into();
    let mut topology = Topology::default();
    for pod in pending {
        topology.register(pod);
    }
    let mut seen: HashSet<(&str, &Scheduling)> = HashSet::new();
    for &i in on_node.iter().flatten() {
        let pod = pods.get(i);
        if pod.scheduling.has_pod_constraints() && seen.insert((&pod.namespace, &pod.scheduling)) {
            topology.register(pod);
        }
    }
    let mut places: Vec<Place> = nodes
        .iter()
        .zip(group_of)
        .map(|(node, g)| topology.place(node.clone(), *g, PlaceKind::Existing))
        .collect();
    // Where no pod has a constraint on other pods, every pod's terms are empty: it takes room, nothing else.
    let counted = topology.has_terms();
    let mut resolved: FastMap<crate::model::EquivalenceKey, PodTerms> = FastMap::default();
    let mut ids = SchedulingIds::default();
    let none = PodTerms::default();
    for (place, on) in places.iter_mut().zip(on_node) {
        for &i in on {
            let pod = pods.get(i);
            let terms = if counted {
                resolved
                    .entry(pod.equivalence_key(projection, &mut ids))
                    .or_insert_with(|| topology.resolve_placed(pod))
            } else {
                &none
            };
            topology.put(pod, terms, place, 1);
        }
    }
    (topology, places)
}

/// Places identical pods (`members` of `pods`, with `terms`) on the places that accept them, as the
/// scheduler would; returns the place of each pod placed, in order. Pods whose constraints depend only on
/// the node fill places first fit; the others go one at a time, each to the next place that takes it after
/// the one the previous pod went to (cluster-autoscaler's rotating search), so that a zone spread fills
/// every zone's nodes instead of stopping at the first node the skew refuses.
pub fn place_all<'a>(
    topology: &mut Topology,
    places: &mut [Place],
    pods: impl Into<PodList<'a>>,
    members: &[usize],
    terms: &PodTerms,
) -> Vec<usize> {
    let Some(&first) = members.first() else {
        return Vec::new();
    };
    let pod = pods.into().get(first);
    let usable: Vec<usize> = (0..places.len())
        .filter(|&p| {
            places[p].accepts && predicates::node_fit(&pod.scheduling, &places[p].node).is_ok()
        })
        .collect();
    let filling = Filling::new(pod, terms);
    let mut mins = SpreadMins::default();
    let mut out = Vec::new();
    if terms.simple {
        for &p in &usable {
            if out.len() == members.len() {
                break;
            }
            let want = (members.len() - out.len()) as u64;
            let (k, _) = filling.fill(topology, &mut mins.with_others(&[]), places, p, want);
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
            match filling.check(topology, &mut mins.with_others(&[]), places, open[i]) {
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
}

impl<'a> Filling<'a> {
    pub fn new(pod: &'a Pod, terms: &'a PodTerms) -> Filling<'a> {
        Filling { pod, terms }
    }

    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    pub fn terms(&self) -> &'a PodTerms {
        self.terms
    }

    /// No constraint of the pod depends on other pods.
    pub fn simple(&self) -> bool {
        self.terms.simple
    }

    /// Whether one more pod fits on `places[p]`; `scope` as in [`Filling::fill`].
    pub fn fits(
        &self,
        topology: &Topology,
        scope: &mut SpreadScope<Place>,
        places: &[Place],
        p: usize,
    ) -> bool {
        self.check(topology, scope, places, p).is_ok()
    }

    /// Whether one more pod fits on `places[p]`, and why not.
    fn check(
        &self,
        topology: &Topology,
        scope: &mut SpreadScope<Place>,
        places: &[Place],
        p: usize,
    ) -> Result<(), Unfit> {
        fits(topology, self.pod, self.terms, &places[p], scope, places)
    }

    /// Puts up to `want` more pods on `places[p]`, a place whose node selector, affinity and taints the pod
    /// passes (the caller checks once per node, or once per template), as many as the other predicates allow:
    /// in closed form when only resources matter, one by one otherwise. `scope`'s others are places outside
    /// `places` that spread constraints count as domains; its mins is what is known of the spreads'
    /// minimums over both, kept by the owner of the lists. Returns how many went there and, when fewer than
    /// wanted, why no more.
    pub fn fill(
        &self,
        topology: &mut Topology,
        scope: &mut SpreadScope<Place>,
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
            if let Err(why) = self.check(topology, scope, places, p) {
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
    use crate::model::{
        HOSTNAME_LABEL, LabelSelector, PodAffinityTerm, Resources, SpreadConstraint, ZONE_LABEL,
    };

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
        fits_among(topology, pod, terms, place, all)
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
        let (mut topology, mut places) = build_places(
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
        let (topology, places) = build_places(
            &nodes,
            &[None],
            &[running],
            &[vec![0]],
            &[&pending],
            &LabelProjection::All,
        );
        assert_eq!(places[0].free.cpu_millis, 3900);
        assert!(topology.resolve(&pending).simple);
    }
}
