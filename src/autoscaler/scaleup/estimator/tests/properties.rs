//! Whatever the pods and the template, the estimator never breaks a predicate and never adds a node
//! without a pod on it.
use super::helpers::*;
use crate::autoscaler::scaleup::estimator::plan::*;
use crate::model::{
    HOSTNAME_LABEL, HostPort, Node, Pod, Resources, Scheduling, Taint, TaintEffect, Toleration,
    ZONE_LABEL,
};
use crate::simulator::predicates::{self};
use std::sync::Arc;

use proptest::prelude::*;

/// One equivalence group: cpu, memory (MiB), count, and which constraints it carries.
#[derive(Clone, Debug)]
struct Group {
    cpu: u64,
    mem_mi: u64,
    count: u64,
    selector: Option<&'static str>,
    tolerates: bool,
    host_port: bool,
    anti_affinity: bool,
}

fn group() -> impl Strategy<Value = Group> {
    (
        0u64..5000,
        0u64..20_000,
        1u64..40,
        prop::option::of(prop::sample::select(vec!["a", "b"])),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(cpu, mem_mi, count, selector, tolerates, host_port, anti_affinity)| Group {
                cpu,
                mem_mi,
                count,
                selector,
                tolerates,
                host_port,
                anti_affinity,
            },
        )
}

fn template(cpu: u64, mem_gi: u64, pods: u64, tier: &str, tainted: bool) -> Arc<Node> {
    let mut n = (*node(cpu, mem_gi, pods)).clone();
    n.labels.insert("tier".into(), tier.into());
    if tainted {
        n.taints.push(Taint {
            key: "dedicated".into(),
            value: "batch".into(),
            effect: TaintEffect::NoSchedule,
        });
    }
    Arc::new(n)
}

fn to_pod(i: usize, g: &Group) -> Pod {
    let app = format!("app-{i}");
    let scheduling = Scheduling {
        node_selector: g
            .selector
            .map(|t| [("tier".to_string(), t.to_string())].into())
            .unwrap_or_default(),
        tolerations: if g.tolerates {
            vec![Toleration {
                key: Some("dedicated".into()),
                exists: true,
                value: String::new(),
                effect: None,
            }]
        } else {
            vec![]
        },
        host_ports: if g.host_port {
            vec![HostPort {
                protocol: "TCP".into(),
                port: 9100,
                ip: String::new(),
            }]
        } else {
            vec![]
        },
        anti_affinity: if g.anti_affinity {
            vec![term(&app, HOSTNAME_LABEL)]
        } else {
            vec![]
        },
        ..Default::default()
    };
    pod(&app, g.cpu, g.mem_mi, scheduling)
}

/// A node's CPUs (millicores), memory (GiB) and pods, and the pods' shapes (CPU, MiB, count).
type Upstream = (u64, u64, u64, Vec<(u64, u64, u64)>);

fn upstream_cases() -> impl Strategy<Value = Upstream> {
    (
        1000u64..16_000,
        2u64..64,
        8u64..110,
        prop::collection::vec((50u64..4000, 64u64..16_384, 1u64..60), 1..12),
    )
}

/// The pods' shapes (CPU, MiB, count, the zone they are pinned to) and the nodes each zone has already.
type Pinned = (Vec<(u64, u64, u64, Option<usize>)>, [u64; 3]);

fn pinned_cases() -> impl Strategy<Value = Pinned> {
    (
        prop::collection::vec(
            (
                50u64..4000,
                64u64..16_384,
                1u64..20,
                prop::option::of(0usize..3),
            ),
            1..8,
        ),
        prop::array::uniform3(0u64..4),
    )
}

#[test]
fn the_saved_cases_replay() {
    use crate::saved_seeds::replay;
    let names = ["cpu", "mem_gi", "max_pods", "shapes"];
    let upstream = replay(file!(), &names, upstream_cases(), &[]);
    let pinned = replay(file!(), &["shapes", "nodes"], pinned_cases(), &[]);
    assert_eq!((upstream, pinned), (1, 1));
    assert_eq!(upstream + pinned, crate::saved_seeds::count(file!()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Never more nodes than cluster-autoscaler's own search run alone, never fewer pods placed, and
    /// never below the lower bound, on random resource-only mixes.
    #[test]
    fn never_more_nodes_than_upstreams_search((cpu, mem_gi, max_pods, shapes) in upstream_cases()) {
        let node = node(cpu, mem_gi, max_pods);
        let pods: Vec<(Pod, u64)> = shapes
            .iter()
            .enumerate()
            .map(|(i, (c, m, n))| (pod(&format!("s{i}"), *c, *m, Scheduling::default()), *n))
            .collect();
        let ours = run(node.clone(), &pods, 10_000);
        let upstream = run_with(node.clone(), &pods, 10_000, 0, Some(Ordering::Upstream));
        prop_assert!(ours.pods_placed() >= upstream.pods_placed());
        // The orderings skipped as repeats lose nothing: the estimate is the best of every ordering
        // packed alone, or as many pods on fewer nodes once improved.
        let alone = ORDERINGS.map(|o| run_with(node.clone(), &pods, 10_000, 0, Some(o)));
        let best = alone
            .iter()
            .max_by_key(|e| (e.pods_placed(), std::cmp::Reverse(e.node_count())))
            .expect("eight orderings");
        prop_assert_eq!(ours.pods_placed(), best.pods_placed());
        prop_assert!(ours.node_count() <= best.node_count());
        if ours.pods_placed() == upstream.pods_placed() {
            prop_assert!(
                ours.node_count() <= upstream.node_count(),
                "ours {} nodes ({:?}), upstream {}", ours.node_count(), ours.ordering,
                upstream.node_count()
            );
        }
        let fitting: Vec<(Pod, u64)> = pods
            .iter()
            .filter(|(p, _)| node.allocatable.fits(&p.demand))
            .cloned()
            .collect();
        prop_assert!(ours.node_count() as u64 >= lower_bound(&node, &fitting));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// In a group of three zones, every search puts a pod pinned to a zone on nodes of that zone only,
    /// however the pods that may go anywhere spread the group's new nodes.
    #[test]
    fn pods_pinned_to_a_zone_stay_in_it((shapes, nodes) in pinned_cases()) {
        let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
        let pods: Vec<(Pod, u64)> = (shapes.iter().enumerate())
            .map(|(i, &(cpu, mem, count, zone))| {
                let scheduling = Scheduling {
                    node_selector: zone
                        .map(|z| [(ZONE_LABEL.to_string(), zones[z].to_string())].into())
                        .unwrap_or_default(),
                    ..Default::default()
                };
                (pod(&format!("s{i}"), cpu, mem, scheduling), count)
            })
            .collect();
        for ordering in ORDERINGS {
            let estimate = zoned_with(&pods, nodes, Some(ordering));
            // Every pod is placed, unless the group's 100 new nodes are all taken first.
            if estimate.stopped != Some(Stop::NodeLimit) {
                prop_assert_eq!(estimate.pods_placed(), pods.iter().map(|(_, n)| n).sum::<u64>());
            } else {
                prop_assert_eq!(estimate.node_count(), 100);
            }
            for place in &estimate.nodes {
                for &(d, _) in &place.contents {
                    let pod = &pods[d].0;
                    prop_assert!(
                        predicates::node_fit(&pod.scheduling, &place.node).is_ok(),
                        "{:?}: {} on a node in {}", ordering, pod.name, place.node.labels[ZONE_LABEL]
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_predicate_broken_and_no_node_without_a_pod(
        cpu in 500u64..16_000,
        mem_gi in 1u64..64,
        max_pods in 1u64..110,
        tier in prop::sample::select(vec!["a", "b"]),
        tainted in any::<bool>(),
        groups in prop::collection::vec(group(), 1..5),
        max_nodes in 0u64..50,
    ) {
        let node = template(cpu, mem_gi, max_pods, tier, tainted);
        let pods: Vec<(Pod, u64)> =
            groups.iter().enumerate().map(|(i, g)| (to_pod(i, g), g.count)).collect();
        let estimate = run(node.clone(), &pods, max_nodes);

        prop_assert!(estimate.node_count() as u64 <= max_nodes);
        prop_assert!(estimate.node_count() as u64 <= estimate.pods_placed());
        for (placed, (_, count)) in estimate.placed.iter().zip(&pods) {
            prop_assert!(placed <= count);
        }
        let mut per_demand = vec![0u64; pods.len()];
        for place in &estimate.nodes {
            prop_assert!(place.contents.iter().any(|(_, n)| *n > 0), "a node with no pod");
            let mut used = Resources::default();
            let mut port_users = 0;
            for &(d, n) in &place.contents {
                let (p, _) = &pods[d];
                per_demand[d] += n;
                prop_assert!(
                    predicates::node_fit(&p.scheduling, &node).is_ok(),
                    "{} placed on a node it does not fit: selector {:?}, taints {:?}",
                    p.name, p.scheduling.node_selector, node.taints
                );
                if groups[d].anti_affinity {
                    prop_assert!(n <= 1, "{n} pods of {} with hostname anti-affinity", p.name);
                }
                if groups[d].host_port {
                    port_users += n;
                }
                used.cpu_millis += p.demand.cpu_millis * n;
                used.memory_bytes += p.demand.memory_bytes * n;
                used.pods += n;
            }
            prop_assert!(port_users <= 1, "{port_users} pods on one host port");
            let a = node.allocatable;
            prop_assert!(
                used.cpu_millis <= a.cpu_millis
                    && used.memory_bytes <= a.memory_bytes
                    && used.pods <= a.pods,
                "overcommitted: {used:?} on {a:?}"
            );
        }
        prop_assert_eq!(per_demand, estimate.placed.clone());
    }
}
