//! Karpenter's benchmark mix in small: pods with hostname and zone affinity to other pods' labels,
//! hostname anti-affinity, zone and hostname spread, and none. Whatever the estimator leaves
//! unplaced would fit on no node of its plan, and on no further new node while the limit allows one:
//! a pod reported "no scale-up" is one the plan could not hold. And what it places, replayed step by
//! step, the scheduler's predicates allow.
use super::helpers::*;
use crate::autoscaler::scaleup::estimator::estimate::*;
use crate::autoscaler::scaleup::estimator::plan::*;
use crate::model::{
    HOSTNAME_LABEL, LabelSelector, Pod, PodAffinityTerm, Scheduling, SpreadConstraint, ZONE_LABEL,
};
use crate::simulator::topology::{Place, PlaceKind, PodTerms, Topology};
use std::sync::Arc;

use crate::simulator::world;
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Constraint {
    None,
    /// Wants a pod labelled `my-label=<value>` on its node, or in its zone.
    Affinity {
        value: usize,
        zone: bool,
    },
    /// One per node with its own app.
    AntiAffinity,
    /// Its own app spread by zone or by node, max skew 1.
    Spread {
        zone: bool,
    },
}

fn constraint() -> impl Strategy<Value = Constraint> {
    prop_oneof![
        Just(Constraint::None),
        (0usize..3, any::<bool>()).prop_map(|(value, zone)| Constraint::Affinity { value, zone }),
        Just(Constraint::AntiAffinity),
        any::<bool>().prop_map(|zone| Constraint::Spread { zone }),
    ]
}

const VALUES: [&str; 3] = ["a", "b", "c"];

fn to_pod(i: usize, cpu: u64, mem_mi: u64, label: usize, constraint: Constraint) -> Pod {
    let app = format!("app-{i}");
    let key = |zone: bool| if zone { ZONE_LABEL } else { HOSTNAME_LABEL };
    let term = |selector: LabelSelector, zone: bool| PodAffinityTerm {
        selector,
        namespaces: Some(vec!["default".into()]),
        topology_key: key(zone).into(),
    };
    let scheduling = match constraint {
        Constraint::None => Scheduling::default(),
        Constraint::Affinity { value, zone } => Scheduling {
            affinity: vec![term(
                LabelSelector {
                    match_labels: [("my-label".into(), VALUES[value].into())].into(),
                    expressions: vec![],
                },
                zone,
            )],
            ..Default::default()
        },
        Constraint::AntiAffinity => Scheduling {
            anti_affinity: vec![term(app_selector(&app), false)],
            ..Default::default()
        },
        Constraint::Spread { zone } => Scheduling {
            spread: vec![SpreadConstraint::new(1, key(zone), app_selector(&app))],
            ..Default::default()
        },
    };
    let mut pod = pod(&app, cpu, mem_mi, scheduling);
    pod.labels.insert("my-label".into(), VALUES[label].into());
    pod
}

type Group = (u64, u64, u64, usize, Constraint);

/// The groups' pods (cpu, memory in MiB, count, label, constraint), the topology they registered
/// and their terms.
fn mix(groups: &[Group]) -> (Vec<(Pod, u64)>, Topology, Vec<PodTerms>) {
    let pods: Vec<(Pod, u64)> = groups
        .iter()
        .enumerate()
        .map(|(i, &(cpu, mem, count, label, c))| (to_pod(i, cpu, mem, label, c), count))
        .collect();
    let mut topology = Topology::default();
    for (p, _) in &pods {
        topology.register(p);
    }
    let terms = pods.iter().map(|(p, _)| topology.resolve(p)).collect();
    (pods, topology, terms)
}

fn groups() -> impl Strategy<Value = Vec<Group>> {
    prop::collection::vec(
        (50u64..3000, 64u64..8000, 1u64..12, 0usize..3, constraint()),
        1..8,
    )
}

/// The groups of pods and the most nodes the estimate may plan.
fn unplaced_cases() -> impl Strategy<Value = (Vec<Group>, u64)> {
    (groups(), 1u64..40)
}

/// The same, with the zones the template's group launches in and nodes beside (zone, group of its pod).
fn step_cases() -> impl Strategy<Value = (Vec<Group>, u64, usize, Vec<(usize, usize)>)> {
    (
        groups(),
        1u64..40,
        1usize..=3,
        prop::collection::vec((0usize..3, 0usize..8), 0..4),
    )
}

#[test]
fn the_saved_cases_replay() {
    use crate::saved_seeds::replay;
    let variants = ["None", "Affinity", "AntiAffinity", "Spread"];
    let one = replay(
        file!(),
        &["groups", "max_nodes"],
        unplaced_cases(),
        &variants,
    );
    let names = ["groups", "max_nodes", "zones", "beside"];
    let other = replay(file!(), &names, step_cases(), &variants);
    assert_eq!((one, other), (2, 1));
    assert_eq!(one + other, crate::saved_seeds::count(file!()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_pod_left_unplaced_fits_the_plan((groups, max_nodes) in unplaced_cases()) {
        let (pods, mut topology, terms) = mix(&groups);
        let template = topology.place(node(4000, 16, 30), Some(0), PlaceKind::Planned);
        let demands = demands(&pods, &terms);
        let limits = EstimateLimits { max_nodes, deadline: None };
        let estimate =
            estimate(&topology, &[], Templates::one(&template), &demands, limits);
        let mut after = estimate.topology.clone();
        let another = after.copy(&template, PlaceKind::Planned);
        let room_for_another = (estimate.node_count() as u64) < max_nodes;
        for (d, (pod, count)) in pods.iter().enumerate() {
            if estimate.placed[d] == *count {
                continue;
            }
            for (n, place) in estimate.nodes.iter().enumerate() {
                let why = world::unfit(&estimate.topology, &estimate.nodes, pod, &terms[d], place);
                prop_assert!(
                    !why.is_empty(),
                    "{} of {} {} left unplaced, though one fits on plan node {n} of {}",
                    count - estimate.placed[d], count, pod.name, estimate.node_count()
                );
            }
            if room_for_another {
                let mut places = estimate.nodes.clone();
                places.push(another.clone());
                let why = world::unfit(&after, &places, pod, &terms[d], &another);
                prop_assert!(
                    !why.is_empty(),
                    "{} of {} {} left unplaced, though one fits on a new node ({} of at most {})",
                    count - estimate.placed[d], count, pod.name, estimate.node_count(), max_nodes
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// The plan, replayed step by step from the cluster as it was (nodes beside it with pods of the
    /// same groups, a group in up to three zones): each pod is one the scheduler's predicates admit
    /// on its node given the pods and nodes before it.
    #[test]
    fn every_step_of_the_plan_is_one_the_scheduler_allows(
        (groups, max_nodes, zones, beside) in step_cases(),
    ) {
        let (pods, mut topology, terms) = mix(&groups);
        let in_zone = |zone: usize| {
            let mut n = (*node(4000, 16, 30)).clone();
            n.labels.insert(ZONE_LABEL.into(), format!("us-east-1{}", ["a", "b", "c"][zone]));
            Arc::new(n)
        };
        // Nodes already there, each with one pod of a group on it.
        let mut existing = Vec::new();
        for &(zone, group) in &beside {
            let mut place = topology.place(in_zone(zone), None, PlaceKind::Existing);
            let (pod, _) = &pods[group % pods.len()];
            topology.put(pod, &topology.resolve_placed(pod), &mut place, 1);
            existing.push(place);
        }
        let templates: Vec<Place> = (0..zones)
            .map(|z| topology.place(in_zone(z), Some(0), PlaceKind::Planned))
            .collect();
        let demands = demands(&pods, &terms);
        let limits = EstimateLimits { max_nodes, deadline: None };
        let nodes = vec![0; zones];
        let templates_of = Templates { zones: &templates, nodes: &nodes };
        let estimate = estimate(&topology, &existing, templates_of, &demands, limits);

        let mut replay = topology.clone();
        let mut places = existing.clone();
        let mut placed = vec![0u64; pods.len()];
        for (i, step) in estimate.steps.iter().enumerate() {
            match *step {
                PlanStep::Add { zone } => {
                    let fresh = replay.copy(&templates[zone], PlaceKind::Planned);
                    places.push(fresh);
                }
                PlanStep::Put { node, demand, count } => {
                    let (pod, terms) = (&pods[demand].0, &terms[demand]);
                    let at = existing.len() + node;
                    for _ in 0..count {
                        let why = world::unfit(&replay, &places, pod, terms, &places[at]);
                        prop_assert!(
                            why.is_empty(),
                            "step {i}: {} on new node {node} breaks {why:?}", pod.name
                        );
                        replay.put(pod, terms, &mut places[at], 1);
                    }
                    placed[demand] += count;
                }
            }
        }
        prop_assert_eq!(&placed, &estimate.placed);
        let used = places[existing.len()..].iter().filter(|p| p.free != templates[0].free);
        prop_assert_eq!(used.count(), estimate.node_count());
    }
}
