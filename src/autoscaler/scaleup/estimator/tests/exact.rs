//! The exhaustive search after the repair (`estimator/exact.rs`), given a plan that placed nothing (packed
//! with no node allowed) and allowed nodes: it places what it can when it runs, and leaves the plan as it
//! got it when it must not run or its work bound stops it.

use super::helpers::{demands, node, plain, pod, term};
use crate::autoscaler::scaleup::estimator::estimate::pack;
use crate::autoscaler::scaleup::estimator::exact::{EXACT_PODS, EXACT_WORK, exact};
use crate::autoscaler::scaleup::estimator::plan::*;
use crate::autoscaler::scaleup::estimator::replan::Replan;
use crate::model::{HOSTNAME_LABEL, Pod, Scheduling};
use crate::simulator::topology::{Partners, PlaceKind, PodTerms, Topology};

/// (the plan that placed nothing, what the search makes of it within `work` pods put), on 4000m nodes.
fn searched(groups: &[(Pod, u64)], work: u64) -> (Estimate, Estimate) {
    let mut topology = Topology::default();
    for (p, _) in groups {
        topology.register(p);
    }
    let terms: Vec<PodTerms> = groups.iter().map(|(p, _)| topology.resolve(p)).collect();
    let template = topology.place(node(4000, 16, 110), Some(0), PlaceKind::Planned);
    let demands = demands(groups, &terms);
    let templates = Templates::one(&template);
    let none = EstimateLimits {
        max_nodes: 0,
        deadline: None,
    };
    let plan = pack(
        &topology,
        &[],
        templates,
        &demands,
        none,
        Ordering::Upstream,
    );
    assert_eq!(plan.pods_placed(), 0);
    let limits = EstimateLimits {
        max_nodes: 100,
        deadline: None,
    };
    let cluster = Replan {
        topology: &topology,
        existing: &[],
        templates,
        demands: &demands,
        limits,
    };
    let after = exact(&cluster, plan.clone(), work);
    (plan, after)
}

fn untouched(plan: &Estimate, after: &Estimate) {
    assert_eq!(after.steps, plan.steps);
    assert_eq!(after.placed, plan.placed);
    assert_eq!(after.node_count(), plan.node_count());
}

/// `count` pods of 500m wanting a pod labelled `app: b` on their node, and `partners` such pods.
fn wanting(count: u64, partners: u64) -> Vec<(Pod, u64)> {
    let scheduling = Scheduling {
        affinity: vec![term("b", HOSTNAME_LABEL)],
        ..Scheduling::default()
    };
    vec![
        (pod("a", 500, 128, scheduling), count),
        plain("b", 500, 128, partners),
    ]
}

#[test]
fn pods_wanting_partners_left_out_are_placed_with_them() {
    let (_, after) = searched(&wanting(3, 2), EXACT_WORK);
    assert_eq!(after.placed, vec![3, 2]);
    // 2500m of pods on 4000m nodes: one.
    assert_eq!(after.node_count(), 1);
}

#[test]
fn the_work_bound_stops_it_and_the_plan_it_got_is_kept() {
    let (plan, after) = searched(&wanting(3, 2), 0);
    untouched(&plan, &after);
}

#[test]
fn a_plan_without_pods_wanting_partners_left_out_is_not_searched() {
    // Nothing placed, but no pod with pod affinity: returned as it came, though a node would hold both.
    let (plan, after) = searched(
        &[plain("a", 500, 128, 2), plain("b", 500, 128, 2)],
        EXACT_WORK,
    );
    untouched(&plan, &after);
}

#[test]
fn a_plan_of_more_pods_than_the_bound_is_not_searched() {
    let (plan, after) = searched(&wanting(EXACT_PODS - 1, 2), EXACT_WORK);
    untouched(&plan, &after);
    // One fewer is searched: every pod on two nodes, a partner on each.
    let (_, after) = searched(&wanting(EXACT_PODS - 2, 2), EXACT_WORK);
    assert_eq!(after.pods_placed(), EXACT_PODS);
}

#[test]
fn a_plan_whose_pods_left_out_have_no_pending_partner_is_not_searched() {
    // The pods wanting `app: b` have no partner anywhere; the plain pods would fit on a node, but the plan is
    // returned as it came: no placement of the pending pods helps the pods left out.
    let mut groups = wanting(3, 0);
    groups[1] = plain("c", 500, 128, 2);
    let (plan, after) = searched(&groups, EXACT_WORK);
    untouched(&plan, &after);
}

#[test]
fn partners_gathered_once_say_what_pairing_each_pod_says() {
    let wants = |on: &str| Scheduling {
        affinity: vec![term(on, HOSTNAME_LABEL)],
        ..Scheduling::default()
    };
    // a wants b, which is there; c wants d, which no pod is; e wants its own kind.
    let groups = [
        (pod("a", 500, 128, wants("b")), 1),
        plain("b", 500, 128, 1),
        (pod("c", 500, 128, wants("d")), 1),
        (pod("e", 500, 128, wants("e")), 1),
    ];
    let mut topology = Topology::default();
    for (p, _) in &groups {
        topology.register(p);
    }
    let terms: Vec<PodTerms> = groups.iter().map(|(p, _)| topology.resolve(p)).collect();
    let partners = Partners::of(&terms);
    let gathered: Vec<bool> = terms.iter().map(|t| partners.any_for(t)).collect();
    let paired: Vec<bool> = (terms.iter())
        .map(|t| terms.iter().any(|q| q.partner_of(t)))
        .collect();
    assert_eq!(gathered, vec![true, false, false, true]);
    assert_eq!(gathered, paired);
}
