//! The estimator: how many nodes of one node group the pending equivalence groups need.
//!
//! cluster-autoscaler's binpacking estimator is first-fit decreasing: groups ordered by
//! `cpu/allocatable + memory/allocatable`, each pod first-fit over the nodes added so far, then onto a new
//! node. We run the same algorithm, and a second ordering by the dominant share (the largest of the two),
//! and keep whichever places more pods on fewer nodes, so we never need more nodes than upstream.
//! Both are fast because pods of an equivalence group are identical: for pods whose constraints do not
//! depend on other pods, how many fit on a node is computed in closed form instead of pod by pod.

use super::free_tree::FreeTree;
use super::predicates::{self, Unfit};
use super::world::{Filling, Place, PlaceKind, PodTerms, Topology};
use crate::model::Pod;
use std::time::Instant;

/// One equivalence group to pack: its exemplar, its terms, how many pods.
#[derive(Clone, Copy)]
pub struct Demand<'a> {
    pub pod: &'a Pod,
    pub terms: &'a PodTerms,
    pub count: u64,
}

/// Why the estimator stopped adding nodes before every pod had one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    NodeLimit,
    TimeLimit,
}

#[derive(Clone, Debug)]
pub struct Estimate {
    /// New nodes, each with at least one pod.
    pub nodes: Vec<Place>,
    /// Pods placed, per demand (in the order given).
    pub placed: Vec<u64>,
    /// Why a demand's pods do not go on an empty new node, when they do not.
    pub unfit: Vec<Option<Unfit>>,
    pub stopped: Option<Stop>,
    /// The counts after placement, to commit if this estimate is chosen.
    pub topology: Topology,
    /// Which ordering won.
    pub ordering: Ordering,
}

impl Estimate {
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn pods_placed(&self) -> u64 {
        self.placed.iter().sum()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// cluster-autoscaler's: cpu share + memory share of the template's allocatable.
    SumOfShares,
    /// The larger of the two shares.
    DominantShare,
    /// By one resource (the other breaks ties): packs best when that resource is the scarce one.
    Cpu,
    Memory,
}

/// Limits of one estimation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most new nodes (per-scale-up limit, group max, cluster limits: the caller takes the smallest).
    pub max_nodes: u64,
    /// `--max-nodegroup-binpacking-duration` from the start of this estimation.
    pub deadline: Option<Instant>,
}

/// Estimates the nodes of the group whose template place (allocatable less its DaemonSet pods) is
/// `template`. `existing` are the cluster's places, read for topology spread minimums.
pub fn estimate(
    topology: &Topology,
    existing: &[Place],
    template: &Place,
    demands: &[Demand],
    limits: Limits,
) -> Estimate {
    let mut best = pack(
        topology,
        existing,
        template,
        demands,
        limits,
        Ordering::SumOfShares,
    );
    for ordering in [Ordering::DominantShare, Ordering::Cpu, Ordering::Memory] {
        if best.stopped == Some(Stop::TimeLimit) {
            break;
        }
        let other = pack(topology, existing, template, demands, limits, ordering);
        let better = (other.pods_placed(), std::cmp::Reverse(other.node_count()))
            > (best.pods_placed(), std::cmp::Reverse(best.node_count()));
        if better {
            best = other;
        }
    }
    best
}

fn score(pod: &Pod, template: &Place, ordering: Ordering) -> f64 {
    let share = |want: u64, have: u64| {
        if have == 0 {
            0.0
        } else {
            want as f64 / have as f64
        }
    };
    let alloc = template.node.allocatable;
    let cpu = share(pod.demand.cpu_millis, alloc.cpu_millis);
    let memory = share(pod.demand.memory_bytes, alloc.memory_bytes);
    match ordering {
        Ordering::SumOfShares => cpu + memory,
        Ordering::DominantShare => cpu.max(memory),
        Ordering::Cpu => cpu + memory / 1000.0,
        Ordering::Memory => memory + cpu / 1000.0,
    }
}

/// First-fit decreasing in one `ordering` (cluster-autoscaler's algorithm with [`Ordering::SumOfShares`]).
pub fn pack(
    topology: &Topology,
    existing: &[Place],
    template: &Place,
    demands: &[Demand],
    limits: Limits,
    ordering: Ordering,
) -> Estimate {
    let mut topology = topology.clone();
    let mut order: Vec<usize> = (0..demands.len()).collect();
    let scores: Vec<f64> = demands
        .iter()
        .map(|d| score(d.pod, template, ordering))
        .collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));

    let mut nodes: Vec<Place> = Vec::new();
    let mut tree = FreeTree::default();
    let mut placed = vec![0u64; demands.len()];
    let mut unfit = vec![None; demands.len()];
    let mut stopped = None;
    for i in order {
        let demand = demands[i];
        let pod = demand.pod;
        let mut remaining = demand.count;

        // Every node added here is a copy of the template: what the template refuses, they all refuse.
        if let Err(why) = predicates::node_fit(&pod.scheduling, &template.node) {
            unfit[i] = Some(why);
            continue;
        }
        let mut filling = Filling::new(pod, demand.terms);
        let mut fill =
            |topology: &mut Topology, nodes: &mut Vec<Place>, n: usize, remaining: u64| {
                filling.fill(topology, existing, nodes, n, remaining)
            };

        // First fit over the nodes this estimation added: through the tree when only resources matter
        // (extended resources are not in the tree), node by node otherwise.
        if demand.terms.simple && pod.extended.is_empty() {
            while remaining > 0 {
                let Some(n) = tree.first(&pod.demand) else {
                    break;
                };
                let (k, _) = fill(&mut topology, &mut nodes, n, remaining);
                tree.set(n, &nodes[n].free);
                if k == 0 {
                    break;
                }
                nodes[n].contents.push((i, k));
                remaining -= k;
            }
        } else {
            for n in 0..nodes.len() {
                if remaining == 0 {
                    break;
                }
                let (k, _) = fill(&mut topology, &mut nodes, n, remaining);
                if k > 0 {
                    nodes[n].contents.push((i, k));
                    tree.set(n, &nodes[n].free);
                }
                remaining -= k;
            }
        }
        // Then new nodes, as long as the limits allow.
        while remaining > 0 {
            if stopped.is_some() || nodes.len() as u64 >= limits.max_nodes {
                stopped.get_or_insert(Stop::NodeLimit);
                break;
            }
            if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                stopped = Some(Stop::TimeLimit);
                break;
            }
            let fresh = topology.copy(template, PlaceKind::Planned);
            nodes.push(fresh);
            let n = nodes.len() - 1;
            let (k, why) = fill(&mut topology, &mut nodes, n, remaining);
            if k == 0 {
                // Not even an empty node takes it: no more nodes help this group.
                nodes.pop();
                unfit[i] = why;
                break;
            }
            nodes[n].contents.push((i, k));
            tree.push(&nodes[n].free);
            remaining -= k;
        }
        placed[i] = demand.count - remaining;
    }
    Estimate {
        nodes,
        placed,
        unfit,
        stopped,
        topology,
        ordering,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::node::{HOSTNAME_LABEL, ZONE_LABEL};
    use crate::model::pod::{HostPort, PodAffinityTerm, Scheduling, SpreadConstraint};
    use crate::model::selector::LabelSelector;
    use crate::model::{Node, Resources};
    use std::sync::Arc;

    const GI: u64 = 1 << 30;

    fn node(cpu: u64, mem_gi: u64, pods: u64) -> Arc<Node> {
        Arc::new(Node {
            name: "template".into(),
            labels: [
                (HOSTNAME_LABEL.to_string(), "template".to_string()),
                (ZONE_LABEL.to_string(), "us-east-1a".to_string()),
            ]
            .into(),
            allocatable: Resources {
                cpu_millis: cpu,
                memory_bytes: mem_gi * GI,
                pods,
                ..Default::default()
            },
            ready: true,
            ..Default::default()
        })
    }

    fn pod(app: &str, cpu: u64, mem_mi: u64, scheduling: Scheduling) -> Pod {
        Pod {
            demand: Resources {
                cpu_millis: cpu,
                memory_bytes: mem_mi << 20,
                pods: 1,
                ..Default::default()
            },
            scheduling: Arc::new(scheduling),
            ..crate::autoscaler::equivalence::tests::pod(app, app, 0)
        }
    }

    /// Packs `groups` (pod, count) onto copies of `template` with no other nodes around.
    fn run(template: Arc<Node>, groups: &[(Pod, u64)], max_nodes: u64) -> Estimate {
        run_beside(template, groups, max_nodes, 0)
    }

    /// The same beside `full` existing nodes like the template but with no room left.
    fn run_beside(
        template: Arc<Node>,
        groups: &[(Pod, u64)],
        max_nodes: u64,
        full: usize,
    ) -> Estimate {
        run_with(template, groups, max_nodes, full, None)
    }

    /// The same in one `ordering` only, or in the estimator's choice of them.
    fn run_with(
        template: Arc<Node>,
        groups: &[(Pod, u64)],
        max_nodes: u64,
        full: usize,
        ordering: Option<Ordering>,
    ) -> Estimate {
        let mut topology = Topology::default();
        for (p, _) in groups {
            topology.register(p);
        }
        let terms: Vec<PodTerms> = groups.iter().map(|(p, _)| topology.resolve(p)).collect();
        let existing: Vec<Place> = (0..full)
            .map(|_| {
                let mut place = topology.place(template.clone(), None, PlaceKind::Existing);
                place.free = Resources::default();
                place
            })
            .collect();
        let template = topology.place(template, Some(0), PlaceKind::Planned);
        let demands: Vec<Demand> = groups
            .iter()
            .zip(&terms)
            .map(|((pod, count), terms)| Demand {
                pod,
                terms,
                count: *count,
            })
            .collect();
        let limits = Limits {
            max_nodes,
            deadline: None,
        };
        match ordering {
            None => estimate(&topology, &existing, &template, &demands, limits),
            Some(o) => pack(&topology, &existing, &template, &demands, limits, o),
        }
    }

    fn lower_bound(template: &Node, groups: &[(Pod, u64)]) -> u64 {
        let sum =
            |f: fn(&Resources) -> u64| groups.iter().map(|(p, n)| f(&p.demand) * n).sum::<u64>();
        let a = template.allocatable;
        [
            sum(|r| r.cpu_millis).div_ceil(a.cpu_millis),
            sum(|r| r.memory_bytes).div_ceil(a.memory_bytes),
            sum(|r| r.pods).div_ceil(a.pods),
        ]
        .into_iter()
        .max()
        .unwrap()
    }

    #[test]
    fn identical_pods_pack_to_the_lower_bound_in_closed_form() {
        let template = node(4000, 16, 110);
        let groups = [(pod("web", 500, 1024, Scheduling::default()), 10_000)];
        let estimate = run(template.clone(), &groups, 100_000);
        assert_eq!(estimate.pods_placed(), 10_000);
        assert_eq!(
            estimate.node_count() as u64,
            lower_bound(&template, &groups)
        );
        assert_eq!(estimate.node_count(), 1250, "8 per node by cpu");
    }

    #[test]
    fn mixed_sizes_pack_as_hand_computed() {
        // 4 CPU nodes. 3 x 2500m and 3 x 1500m pair up perfectly: 3 nodes, the lower bound.
        let template = node(4000, 64, 110);
        let groups = [
            (pod("small", 1500, 100, Scheduling::default()), 3),
            (pod("big", 2500, 100, Scheduling::default()), 3),
        ];
        let estimate = run(template.clone(), &groups, 100);
        assert_eq!(estimate.node_count(), 3);
        assert_eq!(lower_bound(&template, &groups), 3);
        // Memory-bound and cpu-bound pods share nodes: 2 nodes by either resource's sum.
        let template = node(4000, 8, 110);
        let groups = [
            (pod("cpu", 1800, 512, Scheduling::default()), 4),
            (pod("mem", 100, 3584, Scheduling::default()), 4),
        ];
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
        let groups = [(pod("tiny", 10, 10, Scheduling::default()), 100)];
        assert_eq!(
            run(template, &groups, 100).node_count(),
            4,
            "29 pods a node"
        );
    }

    #[test]
    fn limits_stop_adding_nodes_and_say_so() {
        let template = node(4000, 16, 110);
        let groups = [(pod("web", 1000, 100, Scheduling::default()), 100)];
        let estimate = run(template, &groups, 5);
        assert_eq!(estimate.node_count(), 5);
        assert_eq!(estimate.pods_placed(), 20);
        assert_eq!(estimate.stopped, Some(Stop::NodeLimit));
    }

    #[test]
    fn pods_too_big_for_an_empty_node_are_unfit_with_the_reason() {
        let template = node(2000, 8, 110);
        let groups = [(pod("huge", 3000, 100, Scheduling::default()), 2)];
        let estimate = run(template, &groups, 100);
        assert_eq!(estimate.node_count(), 0);
        assert_eq!(estimate.unfit[0], Some(Unfit::Insufficient("cpu".into())));
    }

    fn app_selector(app: &str) -> LabelSelector {
        LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            expressions: vec![],
        }
    }

    #[test]
    fn hostname_anti_affinity_puts_one_pod_per_node() {
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("db"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("db", 100, 100, anti), 5),
            (pod("web", 100, 100, Scheduling::default()), 10),
        ];
        let estimate = run(node(4000, 16, 110), &groups, 100);
        assert_eq!(estimate.node_count(), 5);
        assert_eq!(estimate.pods_placed(), 15, "web pods fill the db nodes");
    }

    #[test]
    fn zone_anti_affinity_allows_one_pod_in_the_templates_zone() {
        let anti = Scheduling {
            anti_affinity: vec![PodAffinityTerm {
                selector: app_selector("zk"),
                namespaces: Some(vec!["default".into()]),
                topology_key: ZONE_LABEL.into(),
            }],
            ..Default::default()
        };
        let estimate = run(node(4000, 16, 110), &[(pod("zk", 100, 100, anti), 3)], 100);
        assert_eq!((estimate.node_count(), estimate.pods_placed()), (1, 1));
        assert_eq!(estimate.unfit[0], Some(Unfit::AntiAffinity));
    }

    #[test]
    fn hostname_spread_caps_pods_per_node_at_max_skew() {
        let spread = Scheduling {
            spread: vec![SpreadConstraint {
                max_skew: 2,
                min_domains: 1,
                topology_key: HOSTNAME_LABEL.into(),
                selector: app_selector("api"),
            }],
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
            affinity: vec![PodAffinityTerm {
                selector: app_selector("cache"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
            ..Default::default()
        };
        let groups = [
            (pod("cache", 1000, 100, Scheduling::default()), 1),
            (pod("app", 1000, 100, with_cache), 5),
        ];
        let estimate = run(node(4000, 16, 110), &groups, 100);
        // Only the cache's node satisfies the affinity: 3 apps join it, 2 cannot go anywhere new.
        assert_eq!(estimate.node_count(), 1);
        assert_eq!(estimate.placed, [1, 3]);
        assert_eq!(estimate.unfit[1], Some(Unfit::Affinity));
    }

    #[test]
    fn self_affinity_lets_the_first_pod_start_a_node() {
        let together = Scheduling {
            affinity: vec![PodAffinityTerm {
                selector: app_selector("gang"),
                namespaces: Some(vec!["default".into()]),
                topology_key: HOSTNAME_LABEL.into(),
            }],
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
    fn never_more_nodes_than_first_fit_decreasing_by_upstreams_score() {
        // A mix where the dominant-share order packs tighter than the sum-of-shares order or ties.
        let template = node(4000, 16, 110);
        let groups = [
            (pod("a", 2000, 1024, Scheduling::default()), 7),
            (pod("b", 500, 6144, Scheduling::default()), 7),
            (pod("c", 1500, 2048, Scheduling::default()), 7),
        ];
        let chosen = run(template.clone(), &groups, 100);
        let upstream = run_with(
            template.clone(),
            &groups,
            100,
            0,
            Some(Ordering::SumOfShares),
        );
        assert!(chosen.node_count() <= upstream.node_count());
        assert!(chosen.node_count() as u64 >= lower_bound(&template, &groups));
    }

    mod properties {
        //! Whatever the pods and the template, the estimator never breaks a predicate and never adds a node
        //! without a pod on it.
        use super::*;
        use crate::model::taint::{Taint, TaintEffect, Toleration};
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
                    vec![PodAffinityTerm {
                        selector: app_selector(&app),
                        namespaces: Some(vec!["default".into()]),
                        topology_key: HOSTNAME_LABEL.into(),
                    }]
                } else {
                    vec![]
                },
                ..Default::default()
            };
            pod(&app, g.cpu, g.mem_mi, scheduling)
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
    }
}
