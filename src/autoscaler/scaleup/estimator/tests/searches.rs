//! Hand-computed mixes for each search: what it packs where, and why one beats another.

use super::helpers::*;
use crate::autoscaler::scaleup::estimator::estimate::*;
use crate::autoscaler::scaleup::estimator::plan::*;
use crate::model::{HOSTNAME_LABEL, HostPort, Pod, Scheduling, SpreadConstraint, ZONE_LABEL};
use crate::simulator::predicates::{self, Unfit};
use crate::simulator::topology::{PlaceKind, PodTerms, Topology};
use std::collections::BTreeMap;

#[test]
fn identical_pods_pack_to_the_lower_bound_in_closed_form() {
    let template = node(4000, 16, 110);
    let groups = [plain("web", 500, 1024, 10_000)];
    let estimate = run(template.clone(), &groups, 100_000);
    assert_eq!(estimate.pods_placed(), 10_000);
    assert_eq!(
        estimate.node_count() as u64,
        lower_bound(&template, &groups)
    );
    assert_eq!(estimate.node_count(), 1250, "8 per node by cpu");
    // The nodes were planned into one vector sized once (1,250 and a sixteenth, and 8), never regrown.
    assert_eq!(estimate.nodes.capacity(), 1250 + 78 + 8);
    // Where the limit is lower, it is the size.
    assert_eq!(run(template.clone(), &groups, 300).nodes.capacity(), 300);
    // Upstream's search meets the bound here: nothing can beat it, and nothing else is packed. One pod
    // fewer placed, or one node more, and another ordering might.
    let upstream = run_with(template, &groups, 100_000, 0, Some(Ordering::Upstream));
    assert!(unbeatable(&upstream, 10_000, 1250));
    assert!(!unbeatable(&upstream, 10_001, 1250));
    assert!(!unbeatable(&upstream, 10_000, 1249));
}

#[test]
fn mixed_sizes_pack_as_hand_computed() {
    // 4 CPU nodes. 3 x 2500m and 3 x 1500m pair up perfectly: 3 nodes, the lower bound.
    let template = node(4000, 64, 110);
    let groups = [plain("small", 1500, 100, 3), plain("big", 2500, 100, 3)];
    let estimate = run(template.clone(), &groups, 100);
    assert_eq!(estimate.node_count(), 3);
    assert_eq!(lower_bound(&template, &groups), 3);
    // Memory-bound and cpu-bound pods share nodes: 2 nodes by either resource's sum.
    let template = node(4000, 8, 110);
    let groups = [plain("cpu", 1800, 512, 4), plain("mem", 100, 3584, 4)];
    let estimate = run(template.clone(), &groups, 100);
    assert_eq!(estimate.pods_placed(), 8);
    assert_eq!(
        estimate.node_count() as u64,
        lower_bound(&template, &groups)
    );
}

#[test]
fn pods_per_node_bind_too() {
    let template = node(64_000, 256, 29);
    let groups = [plain("tiny", 10, 10, 100)];
    assert_eq!(
        run(template, &groups, 100).node_count(),
        4,
        "29 pods a node"
    );
}

#[test]
fn limits_stop_adding_nodes_and_say_so() {
    let template = node(4000, 16, 110);
    let groups = [plain("web", 1000, 100, 100)];
    let estimate = run(template, &groups, 5);
    assert_eq!(estimate.node_count(), 5);
    assert_eq!(estimate.pods_placed(), 20);
    assert_eq!(estimate.stopped, Some(Stop::NodeLimit));
}

#[test]
fn pods_too_big_for_an_empty_node_are_unfit_with_the_reason() {
    let template = node(2000, 8, 110);
    let groups = [plain("huge", 3000, 100, 2)];
    let estimate = run(template, &groups, 100);
    assert_eq!(estimate.node_count(), 0);
    assert_eq!(
        estimate.unfit[0],
        Some(Unfit::Insufficient(vec!["cpu".into()]))
    );
}

#[test]
fn hostname_anti_affinity_puts_one_pod_per_node() {
    let anti = Scheduling {
        anti_affinity: vec![term("db", HOSTNAME_LABEL)],
        ..Default::default()
    };
    let groups = [(pod("db", 100, 100, anti), 5), plain("web", 100, 100, 10)];
    let estimate = run(node(4000, 16, 110), &groups, 100);
    assert_eq!(estimate.node_count(), 5);
    assert_eq!(estimate.pods_placed(), 15, "web pods fill the db nodes");
}

#[test]
fn zone_anti_affinity_allows_one_pod_in_the_templates_zone() {
    let anti = Scheduling {
        anti_affinity: vec![term("zk", ZONE_LABEL)],
        ..Default::default()
    };
    let estimate = run(node(4000, 16, 110), &[(pod("zk", 100, 100, anti), 3)], 100);
    assert_eq!((estimate.node_count(), estimate.pods_placed()), (1, 1));
    assert_eq!(estimate.unfit[0], Some(Unfit::AntiAffinity));
}

#[test]
fn hostname_spread_caps_pods_per_node_at_max_skew() {
    let spread = Scheduling {
        spread: vec![SpreadConstraint::new(
            2,
            HOSTNAME_LABEL,
            app_selector("api"),
        )],
        ..Default::default()
    };
    // A full node that matches counts as a domain with none of the pods: the minimum stays 0.
    let groups = [(pod("api", 100, 100, spread), 10)];
    let estimate = run_beside(node(8000, 32, 110), &groups, 100, 1);
    assert_eq!((estimate.pods_placed(), estimate.node_count()), (10, 5));
}

#[test]
fn host_ports_keep_pods_apart_and_affinity_keeps_them_together() {
    let port = Scheduling {
        host_ports: vec![HostPort {
            protocol: "TCP".into(),
            port: 9100,
            ip: String::new(),
        }],
        ..Default::default()
    };
    let estimate = run(
        node(4000, 16, 110),
        &[(pod("exporter", 100, 100, port), 3)],
        100,
    );
    assert_eq!(estimate.node_count(), 3);

    let with_cache = Scheduling {
        affinity: vec![term("cache", HOSTNAME_LABEL)],
        ..Default::default()
    };
    let groups = [
        plain("cache", 1000, 100, 1),
        (pod("app", 1000, 100, with_cache), 5),
    ];
    let estimate = run(node(4000, 16, 110), &groups, 100);
    // Only the cache's node satisfies the affinity: 3 apps join it, 2 cannot go anywhere new.
    assert_eq!(estimate.node_count(), 1);
    assert_eq!(estimate.placed, [1, 3]);
    assert_eq!(estimate.unfit[1], Some(Unfit::Affinity));
}

#[test]
fn pods_wanting_partners_packed_after_them_are_offered_the_plan_again() {
    // Each link wants, on its node, a pod of the next link, which is smaller and so packed after it:
    // tried in score order, every link but the last finds no partner yet.
    let wanting = |next: &str| Scheduling {
        affinity: vec![term(next, HOSTNAME_LABEL)],
        ..Default::default()
    };
    let groups = [
        (pod("a", 1500, 100, wanting("b")), 2),
        (pod("b", 1000, 100, wanting("c")), 2),
        plain("c", 500, 100, 2),
    ];
    for ordering in ORDERINGS {
        let estimate = run_with(node(16000, 64, 110), &groups, 100, 0, Some(ordering));
        assert_eq!(estimate.placed, [2, 2, 2], "{ordering:?}");
        assert_eq!(estimate.unfit, [None, None, None], "{ordering:?}");
        // One node holds them all, every link beside its partner.
        assert_eq!(estimate.node_count(), 1, "{ordering:?}");
        for place in &estimate.nodes {
            let apps: Vec<&str> = (place.contents.iter())
                .map(|&(d, _)| groups[d].0.labels["app"].as_str())
                .collect();
            assert!(!apps.contains(&"a") || apps.contains(&"b"), "{apps:?}");
            assert!(!apps.contains(&"b") || apps.contains(&"c"), "{apps:?}");
        }
    }
    assert_eq!(run(node(16000, 64, 110), &groups, 100).placed, [2, 2, 2]);
}

#[test]
fn pods_wanting_a_zone_partner_placed_after_them_get_new_nodes_in_its_zone() {
    // Three big pods want a `cache` pod in their zone; the cache pod is small and packed after them.
    // Offered the plan again, two join the cache pod's node and the third needs a node of its own.
    let in_zone_of_cache = Scheduling {
        affinity: vec![term("cache", ZONE_LABEL)],
        ..Default::default()
    };
    let groups = [
        (pod("web", 1000, 6000, in_zone_of_cache), 3),
        plain("cache", 100, 100, 1),
    ];
    for ordering in ORDERINGS {
        let estimate = run_with(node(4000, 16, 110), &groups, 10, 0, Some(ordering));
        assert_eq!(estimate.placed, [3, 1], "{ordering:?}");
        assert_eq!(estimate.unfit, [None, None], "{ordering:?}");
        assert_eq!(estimate.node_count(), 2, "{ordering:?}");
    }
}

#[test]
fn self_affinity_lets_the_first_pod_start_a_node() {
    let together = Scheduling {
        affinity: vec![term("gang", HOSTNAME_LABEL)],
        ..Default::default()
    };
    let estimate = run(
        node(4000, 16, 110),
        &[(pod("gang", 1000, 100, together), 4)],
        100,
    );
    assert_eq!((estimate.node_count(), estimate.pods_placed()), (1, 4));
}

#[test]
fn upstreams_search_rotates_and_first_fit_beats_it_on_this_mix() {
    // Two big pods take a node each (1500m / 7Gi left on both). Upstream's rotating search then puts
    // the two 500m pods one on each node; first fit puts both on the first, which leaves the second
    // node room for the 1100m pod (whose lower score orders it last) where upstream needs a third.
    let template = node(4000, 16, 110);
    let groups = [
        plain("big", 2500, 9 * 1024, 2),
        plain("mid", 500, 3 * 1024, 2),
        plain("cpu", 1100, 0, 1),
    ];
    let upstream = alone(&template, &groups, Ordering::Upstream);
    let first_fit = alone(&template, &groups, Ordering::SumOfShares);
    assert_eq!((upstream.pods_placed(), upstream.node_count()), (5, 3));
    assert_eq!((first_fit.pods_placed(), first_fit.node_count()), (5, 2));
    let mids: Vec<u64> = upstream
        .nodes
        .iter()
        .map(|n| {
            n.contents
                .iter()
                .filter(|(d, _)| *d == 1)
                .map(|(_, k)| k)
                .sum()
        })
        .collect();
    assert_eq!(
        mids,
        [1, 1, 0],
        "one mid pod on each of the first two nodes"
    );
    let chosen = run(template, &groups, 100);
    assert_eq!(chosen.node_count(), 2);
    assert_ne!(chosen.ordering, Ordering::Upstream);
}

#[test]
fn best_fit_puts_a_pod_where_it_leaves_the_least_room() {
    // 4 cpu / 16Gi. By score: P, the two S, Q, the two R. First fit puts Q beside P, where it takes the
    // cpu an R needed, and needs a third node; best fit puts Q beside the S pods (it leaves 0m / 1Gi
    // there, against 0m / 10Gi beside P), and both R fit beside P.
    let template = node(4000, 16, 110);
    let groups = [
        plain("p", 3000, 3 * 1024, 1),
        plain("q", 1000, 3 * 1024, 1),
        plain("r", 500, 4 * 1024, 2),
        plain("s", 1500, 6 * 1024, 2),
    ];
    let first_fit = alone(&template, &groups, Ordering::SumOfShares);
    assert_eq!(first_fit.node_count(), 3);
    let best_fit = alone(&template, &groups, Ordering::BestFit);
    assert_eq!(
        contents(&best_fit),
        [vec![(0, 1), (2, 2)], vec![(3, 2), (1, 1)]]
    );
    assert_eq!(run(template, &groups, 100).node_count(), 2);
}

#[test]
fn node_by_node_fills_each_node_with_the_pods_that_suit_its_room() {
    // 4 cpu / 16Gi; 2 x 500m/3Gi, 3 x 1000m/4Gi, 2 x 2000m/1Gi: 8 cpu, two full nodes (2000 + 1000 + 500
    // + 500, and 2000 + 1000 + 1000). Every search that takes the shapes in an order needs three; node by
    // node by the dot product takes, after a 2000m pod, the pods the node's room points to.
    let template = node(4000, 16, 110);
    let groups = [
        plain("a", 500, 3 * 1024, 2),
        plain("b", 1000, 4 * 1024, 3),
        plain("c", 2000, 1024, 2),
    ];
    for ordering in ORDERINGS.into_iter().filter(|o| !o.node_by_node()) {
        let other = alone(&template, &groups, ordering);
        assert_eq!(other.node_count(), 3, "{ordering:?}");
    }
    let dot = alone(&template, &groups, Ordering::NodeDotProduct);
    assert_eq!(
        per_node(&dot),
        [[(1, 2), (2, 1)].into(), [(0, 2), (1, 1), (2, 1)].into()]
    );
    let chosen = run(template, &groups, 100);
    assert_eq!(
        (chosen.node_count(), chosen.ordering),
        (2, Ordering::NodeDotProduct)
    );
}

#[test]
fn node_by_node_by_the_room_left_packs_where_the_dot_product_does_not() {
    // 3 x 1000m/3Gi, 2 x 1500m/2Gi, 1 x 2000m/1Gi: two full nodes (2000 + 1000 + 1000, 1500 + 1500 +
    // 1000), which only the pod that leaves the least room finds.
    let template = node(4000, 16, 110);
    let groups = [
        plain("a", 1000, 3 * 1024, 3),
        plain("b", 1500, 2 * 1024, 2),
        plain("c", 2000, 1024, 1),
    ];
    let l2 = run_with(
        template.clone(),
        &groups,
        100,
        0,
        Some(Ordering::NodeL2Norm),
    );
    let dot = alone(&template, &groups, Ordering::NodeDotProduct);
    assert_eq!((l2.node_count(), dot.node_count()), (2, 3));
    assert_eq!(
        per_node(&l2),
        [[(0, 2), (2, 1)].into(), [(0, 1), (1, 2)].into()]
    );
    let chosen = run(template, &groups, 100);
    assert_eq!(
        (chosen.node_count(), chosen.ordering),
        (2, Ordering::NodeL2Norm)
    );
}

#[test]
fn pods_that_depend_on_other_pods_are_not_picked_by_requests() {
    // Hostname anti-affinity: the searches that pick by requests would not see it, so they do not run.
    let anti = Scheduling {
        anti_affinity: vec![term("a", HOSTNAME_LABEL)],
        ..Default::default()
    };
    let template = node(4000, 16, 110);
    let groups = [
        (pod("a", 2000, 2 * 1024, anti), 2),
        plain("b", 1500, 4 * 1024, 2),
        plain("c", 500, 6 * 1024, 2),
    ];
    let chosen = run(template, &groups, 100);
    assert!(!chosen.ordering.by_requests(), "{:?}", chosen.ordering);
    assert_eq!(chosen.pods_placed(), 6);
}

#[test]
fn upstreams_search_fills_the_last_node_before_adding_one() {
    // Within one group, once the older nodes are full, upstream tries only the node added last.
    let template = node(4000, 16, 110);
    let groups = [plain("web", 1000, 1024, 10)];
    let upstream = alone(&template, &groups, Ordering::Upstream);
    let per_node: Vec<u64> = upstream.nodes.iter().map(|n| n.contents[0].1).collect();
    assert_eq!(per_node, [4, 4, 2]);
}

#[test]
fn a_multi_zone_group_launches_in_the_zone_with_the_fewest_nodes() {
    let groups = [plain("web", 3000, 1024, 4)];
    let estimate = zoned(&groups, [1, 0, 0]);
    assert_eq!(
        zones_of(&estimate),
        ["us-east-1b", "us-east-1c", "us-east-1a", "us-east-1b"]
    );
    // Zonal anti-affinity, which one zone can hold once, is planned across the three.
    let anti = Scheduling {
        anti_affinity: vec![term("zk", ZONE_LABEL)],
        ..Default::default()
    };
    let estimate = zoned(&[(pod("zk", 100, 100, anti), 3)], [0, 0, 0]);
    assert_eq!((estimate.pods_placed(), estimate.node_count()), (3, 3));
    assert_eq!(
        zones_of(&estimate),
        ["us-east-1a", "us-east-1b", "us-east-1c"]
    );
    // A pod pinned to one zone gets its node there, whatever the balance.
    let pinned = Scheduling {
        node_selector: [(ZONE_LABEL.to_string(), "us-east-1a".to_string())].into(),
        ..Default::default()
    };
    let estimate = zoned(&[(pod("a", 3000, 100, pinned), 2)], [5, 0, 0]);
    assert_eq!(zones_of(&estimate), ["us-east-1a", "us-east-1a"]);
}

#[test]
fn a_pod_pinned_to_a_zone_shares_no_node_in_another() {
    // The unpinned pod's node goes to the emptiest zone; the pinned pod would fit beside it by its
    // requests, but not by its node selector.
    let pinned = Scheduling {
        node_selector: [(ZONE_LABEL.to_string(), "us-east-1a".to_string())].into(),
        ..Default::default()
    };
    let groups = [plain("big", 3000, 1024, 1), (pod("a", 500, 100, pinned), 1)];
    let estimate = zoned(&groups, [5, 0, 0]);
    for place in &estimate.nodes {
        for &(d, _) in &place.contents {
            let pod = &groups[d].0;
            assert!(
                predicates::node_fit(&pod.scheduling, &place.node).is_ok(),
                "{} on a node in {} ({:?})",
                pod.name,
                place.node.labels[ZONE_LABEL],
                estimate.ordering
            );
        }
    }
    assert_eq!(zones_of(&estimate), ["us-east-1b", "us-east-1a"]);
}

#[test]
fn a_zone_spread_packs_new_nodes_evenly_across_zones() {
    let spread = Scheduling {
        spread: vec![SpreadConstraint::new(1, ZONE_LABEL, app_selector("api"))],
        ..Default::default()
    };
    // 12 pods, 4 a node by cpu: one node in each zone, 4 pods each.
    let estimate = zoned(&[(pod("api", 1000, 100, spread), 12)], [0, 0, 0]);
    assert_eq!((estimate.pods_placed(), estimate.node_count()), (12, 3));
    let per_node: Vec<u64> = estimate
        .nodes
        .iter()
        .map(|n| n.contents.iter().map(|c| c.1).sum())
        .collect();
    assert_eq!(per_node, [4, 4, 4]);
}

#[test]
fn orderings_that_take_groups_in_the_same_runs_are_one_packing() {
    let template = Topology::default().place(node(1000, 5, 100), Some(0), PlaceKind::Planned);
    let runs_of = |groups: &[(Pod, u64)]| {
        let terms: Vec<PodTerms> = groups.iter().map(|_| PodTerms::default()).collect();
        let demands = demands(groups, &terms);
        ORDERINGS.map(|o| runs(&demands, &template, o))
    };
    // Upstream's benchmark: two shapes of one proportion come first-big in every score.
    let proportional = [
        plain("small", 50, 100, 50_000),
        plain("big", 95, 190, 1_000),
    ];
    let [upstream, sum, dominant, cpu, memory, ..] = runs_of(&proportional);
    assert_eq!(upstream, [vec![1], vec![0]]);
    assert_eq!([&dominant, &cpu, &memory], [&sum; 3]);
    // A cpu-heavy and a memory-heavy shape: each resource's order puts its own heavy shape first.
    let mixed = [plain("cpu", 600, 500, 10), plain("mem", 100, 3000, 10)];
    let [_, _, _, cpu, memory, ..] = runs_of(&mixed);
    assert_eq!(
        (cpu, memory),
        (vec![vec![0], vec![1]], vec![vec![1], vec![0]])
    );
}

#[test]
fn groups_that_score_alike_pack_as_tightly_as_single_pods() {
    // 1,000 pods of 36 shapes (cpu 100m-4, memory 128Mi-8Gi), as equivalence groups collapse pods with
    // per-pod labels, and as 1,000 groups of one: cpu-heavy and memory-heavy shapes with the same score
    // must still share nodes.
    const CPU: [u64; 6] = [100, 250, 500, 1000, 2000, 4000];
    const MEM: [u64; 6] = [128, 512, 1024, 2048, 4096, 8192];
    let shapes: Vec<(u64, u64)> = (0..1000)
        .map(|i| (CPU[i * 7 % 6], MEM[i * 11 / 6 % 6]))
        .collect();
    let single: Vec<(Pod, u64)> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(c, m))| (pod(&format!("p-{i}"), c, m, Scheduling::default()), 1))
        .collect();
    let mut counts: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for shape in &shapes {
        *counts.entry(*shape).or_default() += 1;
    }
    let grouped: Vec<(Pod, u64)> = counts
        .iter()
        .map(|(&(c, m), &n)| (pod("g", c, m, Scheduling::default()), n))
        .collect();
    let alone = run(node(16000, 64, 110), &single, 1000);
    let together = run(node(16000, 64, 110), &grouped, 1000);
    assert_eq!((alone.pods_placed(), together.pods_placed()), (1000, 1000));
    // 1,308 cores of pods on 16-core nodes: 82 at the very least.
    assert_eq!(alone.node_count(), 82);
    assert_eq!(together.node_count(), 82, "{:?}", together.ordering);
}
