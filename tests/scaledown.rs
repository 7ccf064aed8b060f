//! The scale-down planner over clusters built here: each blocking rule alone on a node and together, PDBs,
//! min sizes, nodes whose pods fit only if another candidate stays, GPU nodes, zeroOrMax groups, and a pass
//! whose failed simulation must leave the cluster as it was.

use ekscale::autoscaler::scaledown::Rules;
use ekscale::autoscaler::scaledown::{self, Plan};
use ekscale::autoscaler::scaledown::{GroupInfo, Input};
use ekscale::model::{
    Controller, GPU_LABEL, GroupOptions, HOSTNAME_LABEL, LabelProjection, LabelSelector, Labels,
    Node, Pdb, Phase, Pod, PodAffinityTerm, Resources, SafeToEvict, Scheduling,
};
use ekscale::simulator::{build_places, pods_by_node};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const GIB: u64 = 1 << 30;

/// Something done to a pod to make a case.
type Change = Box<dyn FnOnce(&mut Pod)>;

/// A cluster: nodes of groups, pods on them, budgets.
struct Cluster {
    nodes: Vec<Arc<Node>>,
    node_group: Vec<Option<usize>>,
    groups: Vec<GroupInfo>,
    pods: Vec<Pod>,
    pdbs: Vec<Pdb>,
    min_cores: u64,
}

impl Cluster {
    /// Groups as (id, min, target); nodes are added with [`Cluster::node`].
    fn new(groups: &[(&str, i32, i32)]) -> Cluster {
        Cluster {
            nodes: Vec::new(),
            node_group: Vec::new(),
            groups: groups
                .iter()
                .map(|&(id, min_size, target)| GroupInfo {
                    id: id.into(),
                    min_size,
                    target,
                    options: GroupOptions::default(),
                    deleting: 0,
                    updating: false,
                })
                .collect(),
            pods: Vec::new(),
            pdbs: Vec::new(),
            min_cores: 0,
        }
    }

    /// A 4-CPU, 16 GiB node in `group` (`None`: no group).
    fn node(&mut self, name: &str, group: Option<usize>) -> &mut Cluster {
        self.node_with(name, group, |_| {})
    }

    fn node_with(
        &mut self,
        name: &str,
        group: Option<usize>,
        change: impl FnOnce(&mut Node),
    ) -> &mut Cluster {
        let resources = Resources {
            cpu_millis: 4000,
            memory_bytes: 16 * GIB,
            pods: 110,
            ..Default::default()
        };
        let mut node = Node {
            name: name.into(),
            provider_id: format!("aws:///us-east-1a/i-{name}"),
            labels: Labels::from([(HOSTNAME_LABEL.to_string(), name.to_string())]),
            capacity: resources,
            allocatable: resources,
            ready: true,
            ..Default::default()
        };
        change(&mut node);
        self.nodes.push(Arc::new(node));
        self.node_group.push(group);
        self
    }

    /// A ReplicaSet pod of `app` asking `cpu` millicores and 1 GiB, running on `node`.
    fn pod(&mut self, node: &str, name: &str, app: &str, cpu: u64) -> &mut Cluster {
        self.pod_with(node, name, app, cpu, |_| {})
    }

    fn pod_with(
        &mut self,
        node: &str,
        name: &str,
        app: &str,
        cpu: u64,
        change: impl FnOnce(&mut Pod),
    ) -> &mut Cluster {
        let demand = Resources {
            cpu_millis: cpu,
            memory_bytes: GIB,
            pods: 1,
            ..Default::default()
        };
        let mut pod = Pod {
            labels: Labels::from([("app".to_string(), app.to_string())]),
            controller: Some(Arc::new(Controller {
                kind: "ReplicaSet".into(),
                name: app.into(),
                uid: format!("uid-{app}"),
            })),
            node_name: Some(node.into()),
            phase: Phase::Running,
            unschedulable: false,
            ..Pod::pending("default", name, demand)
        };
        change(&mut pod);
        self.pods.push(pod);
        self
    }

    fn plan(&self) -> Plan {
        self.plan_with(&Rules::default())
    }

    fn plan_with(&self, rules: &Rules) -> Plan {
        let bound: Vec<usize> = (0..self.pods.len()).collect();
        let on_node = pods_by_node(&self.nodes, &self.pods, &bound);
        let (mut topology, mut places) = build_places(
            &self.nodes,
            &self.node_group,
            &self.pods,
            &on_node,
            &[],
            &LabelProjection::All,
        );
        let (pods, now) = ((&self.pods).into(), SystemTime::now());
        let input = Input {
            pdbs: &self.pdbs,
            min_cores: self.min_cores,
            ..Input::new(
                &self.nodes,
                pods,
                &self.node_group,
                &self.groups,
                &on_node,
                now,
            )
        };
        scaledown::plan(&input, rules, &mut topology, &mut places)
    }

    fn name(&self, n: usize) -> &str {
        &self.nodes[n].name
    }
}

/// The removable nodes' names, in the order found.
fn removable(cluster: &Cluster, plan: &Plan) -> Vec<String> {
    plan.removable
        .iter()
        .map(|r| cluster.name(r.node).to_string())
        .collect()
}

/// Why `node` stays: (reason, detail).
fn kept(cluster: &Cluster, plan: &Plan, node: &str) -> (String, String) {
    let k = plan
        .kept
        .iter()
        .find(|k| cluster.name(k.node) == node)
        .unwrap_or_else(|| panic!("{node} is not kept: {plan:#?}"));
    (k.reason.to_string(), k.detail.clone())
}

/// A busy node (3 CPU used) and a candidate `light` with one pod of 500m whose blocking rule `change` sets.
fn one_pod_on_a_light_node(change: impl FnOnce(&mut Pod)) -> Cluster {
    let mut c = Cluster::new(&[("general", 0, 2)]);
    c.node("busy", Some(0))
        .node("light", Some(0))
        .pod("busy", "big", "big", 3000)
        .pod_with("light", "small", "small", 500, change);
    c
}

#[test]
fn an_empty_node_and_a_light_node_go_and_their_pods_fit_elsewhere() {
    let mut c = Cluster::new(&[("general", 0, 3)]);
    c.node("busy", Some(0))
        .node("light", Some(0))
        .node("empty", Some(0))
        .pod("busy", "big", "big", 2500)
        .pod("light", "small", "small", 500)
        .pod_with("empty", "exporter", "exporter", 100, |p| {
            Arc::make_mut(p.controller.as_mut().unwrap()).kind = "DaemonSet".into();
        });
    let plan = c.plan();
    assert_eq!(removable(&c, &plan), ["empty", "light"], "{plan:#?}");
    assert!(plan.removable[0].empty, "a DaemonSet pod does not count");
    assert!(plan.removable[0].evicted.is_empty());
    assert!(!plan.removable[1].empty);
    assert_eq!(c.pods[plan.removable[1].evicted[0]].name, "small");
    let (reason, detail) = kept(&c, &plan, "busy");
    assert_eq!(reason, "NotUnderutilized");
    assert!(detail.contains("cpu 62%"), "{detail}");
}

#[test]
fn each_blocking_rule_alone_keeps_the_node_with_its_reason() {
    let cases: Vec<(&str, Change)> = vec![
        ("NotReplicated", Box::new(|p: &mut Pod| p.controller = None)),
        (
            "NotReplicated",
            Box::new(|p: &mut Pod| {
                Arc::make_mut(p.controller.as_mut().unwrap()).kind = "Rollout".into()
            }),
        ),
        (
            "LocalStorageRequested",
            Box::new(|p: &mut Pod| p.disruption.local_volumes = vec!["cache".into()]),
        ),
        (
            "NotSafeToEvictAnnotation",
            Box::new(|p: &mut Pod| p.disruption.safe_to_evict = SafeToEvict::No),
        ),
        (
            "UnmovableKubeSystemPod",
            Box::new(|p: &mut Pod| {
                p.namespace = "kube-system".into();
                p.created = Some(SystemTime::now());
            }),
        ),
        (
            "BlockedByOnCompletionPod",
            Box::new(|p: &mut Pod| p.disruption.safe_to_evict = SafeToEvict::OnCompletion),
        ),
    ];
    for (expected, change) in cases {
        let c = one_pod_on_a_light_node(change);
        let plan = c.plan();
        assert!(plan.removable.is_empty(), "{expected}: {plan:#?}");
        let (reason, detail) = kept(&c, &plan, "light");
        assert_eq!(reason, "BlockedByPod");
        assert!(
            detail.starts_with(&format!("{expected}: default/small"))
                || detail.starts_with(&format!("{expected}: kube-system/small")),
            "{detail}"
        );
    }
    // Mirror pods, DaemonSet pods and finished pods do not block; safe-to-evict "true" overrides the rest.
    let harmless: Vec<Change> = vec![
        Box::new(|p: &mut Pod| {
            p.controller = None;
            p.disruption.mirror = true;
        }),
        Box::new(|p: &mut Pod| {
            Arc::make_mut(p.controller.as_mut().unwrap()).kind = "DaemonSet".into()
        }),
        Box::new(|p: &mut Pod| {
            p.controller = None;
            p.phase = Phase::Terminal;
        }),
        Box::new(|p: &mut Pod| {
            p.controller = None;
            p.disruption.local_volumes = vec!["cache".into()];
            p.disruption.safe_to_evict = SafeToEvict::Yes;
        }),
    ];
    for change in harmless {
        let c = one_pod_on_a_light_node(change);
        assert_eq!(removable(&c, &c.plan()), ["light"]);
    }
}

#[test]
fn the_first_blocking_pod_is_named_and_flags_turn_rules_off() {
    let mut c = one_pod_on_a_light_node(|p| p.disruption.local_volumes = vec!["cache".into()]);
    c.pod_with("light", "unowned", "unowned", 100, |p| p.controller = None);
    let plan = c.plan();
    let (_, detail) = kept(&c, &plan, "light");
    assert!(
        detail.starts_with("LocalStorageRequested: default/small"),
        "{detail}"
    );
    let lenient = Rules {
        skip_local_storage: false,
        ..Rules::default()
    };
    let (_, detail) = kept(&c, &c.plan_with(&lenient), "light");
    assert!(
        detail.starts_with("NotReplicated: default/unowned"),
        "{detail}"
    );
}

#[test]
fn pdbs_without_disruptions_block_and_committed_removals_spend_them() {
    let selector = |app: &str| {
        Some(LabelSelector {
            match_labels: Labels::from([("app".to_string(), app.to_string())]),
            expressions: vec![],
        })
    };
    let budget = |allowed| Pdb {
        namespace: "default".into(),
        name: "web".into(),
        selector: selector("web"),
        disruptions_allowed: allowed,
    };
    // Two light nodes, one web pod each, room for both on the busy node.
    let cluster = |allowed| {
        let mut c = Cluster::new(&[("general", 0, 3)]);
        c.node("busy", Some(0))
            .node("a", Some(0))
            .node("b", Some(0))
            .pod("busy", "big", "big", 2500)
            .pod("a", "web-1", "web", 500)
            .pod("b", "web-2", "web", 500);
        c.pdbs.push(budget(allowed));
        c
    };
    let c = cluster(0);
    let plan = c.plan();
    assert!(plan.removable.is_empty());
    let (_, detail) = kept(&c, &plan, "a");
    assert!(
        detail.starts_with("NotEnoughPdb: default/web-1: PodDisruptionBudget default/web"),
        "{detail}"
    );
    // One disruption allowed: one node goes, the budget is spent for the other.
    let c = cluster(1);
    let plan = c.plan();
    assert_eq!(removable(&c, &plan), ["a"]);
    assert!(!plan.removable[0].risky);
    assert!(kept(&c, &plan, "b").1.starts_with("NotEnoughPdb"));
    // Two allowed: both go.
    let c = cluster(2);
    assert_eq!(removable(&c, &c.plan()), ["a", "b"]);

    // Two pods of one budget allowing one, on one node: removable, but risky (the drain waits).
    let mut c = Cluster::new(&[("general", 0, 2)]);
    c.node("busy", Some(0))
        .node("a", Some(0))
        .pod("busy", "big", "big", 2500)
        .pod("a", "web-1", "web", 500)
        .pod("a", "web-2", "web", 500);
    c.pdbs.push(budget(1));
    let plan = c.plan();
    assert_eq!(removable(&c, &plan), ["a"]);
    assert!(plan.removable[0].risky);
}

#[test]
fn min_size_is_respected_when_many_nodes_are_unneeded() {
    let mut c = Cluster::new(&[("general", 2, 5)]);
    for n in ["n1", "n2", "n3", "n4", "n5"] {
        c.node(n, Some(0));
    }
    let plan = c.plan();
    assert_eq!(plan.removable.len(), 3, "target 5, min 2: {plan:#?}");
    let at_min: Vec<_> = plan
        .kept
        .iter()
        .filter(|k| k.reason.to_string() == "NodeGroupMinSizeReached")
        .collect();
    assert_eq!(at_min.len(), 2);

    // Nodes in no group are never removed; a group at its min has no candidates at all.
    let mut c = Cluster::new(&[("fixed", 1, 1)]);
    c.node("lonely", None).node("fixed-1", Some(0));
    let plan = c.plan();
    assert!(plan.removable.is_empty());
    assert_eq!(kept(&c, &plan, "lonely").0, "NotAutoscaled");
    assert_eq!(kept(&c, &plan, "fixed-1").0, "NodeGroupMinSizeReached");
}

#[test]
fn the_cluster_minimum_of_cores_is_kept() {
    let mut c = Cluster::new(&[("general", 0, 3)]);
    c.node("n1", Some(0))
        .node("n2", Some(0))
        .node("n3", Some(0));
    c.min_cores = 8;
    let plan = c.plan();
    assert_eq!(plan.removable.len(), 1, "12 cores, 8 must stay: {plan:#?}");
    assert_eq!(
        plan.kept
            .iter()
            .filter(|k| k.reason.to_string() == "MinimalResourceLimitExceeded")
            .count(),
        2
    );
}

#[test]
fn a_node_whose_pods_fit_only_if_another_candidate_stays_is_kept() {
    // a and b each hold 1500m; each can take the other's pod, not both: only one goes.
    let mut c = Cluster::new(&[("general", 0, 2)]);
    c.node("a", Some(0))
        .node("b", Some(0))
        .pod("a", "p-a", "x", 1500)
        .pod("b", "p-b", "y", 1500);
    let plan = c.plan();
    assert_eq!(removable(&c, &plan), ["a"], "{plan:#?}");
    let (reason, detail) = kept(&c, &plan, "b");
    assert_eq!(reason, "NoPlaceToMovePods");
    assert!(
        detail.contains("default/p-b fits on no other node: 0/1 nodes are available"),
        "{detail}"
    );
}

#[test]
fn a_failed_simulation_leaves_the_cluster_as_it_was() {
    // Only `target` may take the pods of `first` and `second` (a node selector). `first` (48.75%) is tried
    // before `second` (50% by memory): f-1 fits on target, f-2 then does not, so `first` stays. `second`'s
    // 1500m pod fits in target's 1900m only if f-1's placement was undone.
    let only_target = Arc::new(Scheduling {
        node_selector: Labels::from([("pool".to_string(), "target".to_string())]),
        ..Default::default()
    });
    let mut c = Cluster::new(&[("general", 0, 3)]);
    c.node_with("target", Some(0), |n| {
        n.labels.insert("pool".into(), "target".into());
    })
    .node("first", Some(0))
    .node("second", Some(0))
    .pod("target", "base", "base", 2100);
    let pinned = |p: &mut Pod| p.scheduling = only_target.clone();
    c.pod_with("first", "f-1", "f", 1000, pinned)
        .pod_with("first", "f-2", "f", 950, pinned)
        .pod_with("second", "s", "s", 1500, |p| {
            pinned(p);
            p.demand.memory_bytes = 8 * GIB;
        });
    let plan = c.plan();
    let (reason, detail) = kept(&c, &plan, "first");
    assert_eq!(reason, "NoPlaceToMovePods", "{plan:#?}");
    assert!(
        detail.contains("default/f-2 fits on no other node"),
        "{detail}"
    );
    assert_eq!(removable(&c, &plan), ["second"], "{plan:#?}");
}

#[test]
fn a_failed_simulation_gives_back_the_room_it_searched_past() {
    // Only d1 and d2 may take the moving pods (a node selector); d1 has room for one 900m pod, d2 for none.
    // `first` (45%) is tried before `second` (46%): f-1 takes d1, f-2 fits nowhere, `first` stays. Its
    // search went past d1; `second`'s pod, identical to f-1, must still find d1's room given back.
    let pool = Arc::new(Scheduling {
        node_selector: Labels::from([("pool".to_string(), "target".to_string())]),
        ..Default::default()
    });
    let target = |n: &mut Node| {
        n.labels.insert("pool".into(), "target".into());
    };
    let mut c = Cluster::new(&[("general", 0, 4)]);
    c.node_with("d1", Some(0), target)
        .node_with("d2", Some(0), target)
        .node("first", Some(0))
        .node("second", Some(0))
        .pod("d1", "base-1", "base", 3000)
        .pod("d2", "base-2", "base", 3500);
    let pinned = |p: &mut Pod| p.scheduling = pool.clone();
    c.pod_with("first", "f-1", "f", 900, pinned)
        .pod_with("first", "f-2", "f", 900, pinned)
        .pod_with("second", "s-1", "f", 900, pinned)
        .pod_with("second", "agent", "agent", 950, |p| {
            p.controller = Some(Arc::new(Controller {
                kind: "DaemonSet".into(),
                name: "agent".into(),
                uid: "uid-agent".into(),
            }));
        });
    let plan = c.plan();
    assert_eq!(kept(&c, &plan, "first").0, "NoPlaceToMovePods", "{plan:#?}");
    assert_eq!(removable(&c, &plan), ["second"], "{plan:#?}");
}

#[test]
fn gpu_nodes_are_judged_by_gpus_alone() {
    let gpu_node = |n: &mut Node| {
        n.allocatable.gpus = 1;
        n.capacity.gpus = 1;
        n.labels.insert(GPU_LABEL.into(), "nvidia-tesla-t4".into());
    };
    let mut c = Cluster::new(&[("gpu", 0, 2), ("general", 0, 1)]);
    c.node_with("g1", Some(0), gpu_node)
        .node_with("g2", Some(0), gpu_node)
        .node("cpu", Some(1))
        // Little cpu but its one GPU in use: fully used.
        .pod_with("g1", "trainer", "trainer", 100, |p| p.demand.gpus = 1)
        // 75% of its cpu but no GPU in use: idle, and its pod fits on g1.
        .pod("g2", "cruncher", "cruncher", 3000);
    let plan = c.plan();
    let (reason, detail) = kept(&c, &plan, "g1");
    assert_eq!(reason, "NotUnderutilized");
    assert!(detail.contains("gpu 100%"), "{detail}");
    assert_eq!(removable(&c, &plan), ["cpu", "g2"], "{plan:#?}");
    assert_eq!(plan.removable[1].utilization.gpu, Some(0.0));

    // A GPU pod moves only to a node with a free GPU.
    let mut c = Cluster::new(&[("gpu", 0, 2), ("general", 0, 1)]);
    c.node_with("g1", Some(0), |n| {
        gpu_node(n);
        n.allocatable.gpus = 2;
    })
    .node("cpu", Some(1))
    .pod("cpu", "web", "web", 3000)
    .pod_with("g1", "trainer", "trainer", 100, |p| p.demand.gpus = 1);
    let plan = c.plan();
    let (reason, detail) = kept(&c, &plan, "g1");
    assert_eq!(reason, "NoPlaceToMovePods", "{plan:#?}");
    assert!(detail.contains("Insufficient nvidia.com/gpu"), "{detail}");
}

#[test]
fn a_zero_or_max_group_goes_whole_or_not_at_all() {
    let atomic = |c: &mut Cluster| {
        c.groups[1].options.zero_or_max = true;
    };
    // Both batch nodes idle: both go.
    let mut c = Cluster::new(&[("general", 1, 1), ("batch", 0, 2)]);
    atomic(&mut c);
    c.node("general-1", Some(0))
        .node("batch-1", Some(1))
        .node("batch-2", Some(1));
    assert_eq!(removable(&c, &c.plan()), ["batch-1", "batch-2"]);
    // One of them busy: neither goes.
    c.pod("batch-2", "job", "job", 3000);
    let plan = c.plan();
    assert!(plan.removable.is_empty(), "{plan:#?}");
    assert_eq!(kept(&c, &plan, "batch-1").0, "AtomicScaleDownFailed");
}

#[test]
fn expendable_pods_need_no_place_and_pods_with_anti_affinity_respect_it_when_moved() {
    // `light`'s pod refuses to share a node with another `solo` pod; the only other node runs one.
    let solo = Arc::new(Scheduling {
        anti_affinity: vec![PodAffinityTerm {
            selector: LabelSelector {
                match_labels: Labels::from([("app".to_string(), "solo".to_string())]),
                expressions: vec![],
            },
            namespaces: Some(vec!["default".into()]),
            topology_key: HOSTNAME_LABEL.into(),
        }],
        ..Default::default()
    });
    let mut c = Cluster::new(&[("general", 0, 2)]);
    c.node("busy", Some(0))
        .node("light", Some(0))
        .pod_with("busy", "solo-1", "solo", 2500, |p| {
            p.scheduling = solo.clone()
        })
        .pod_with("light", "solo-2", "solo", 500, |p| {
            p.scheduling = solo.clone()
        });
    let plan = c.plan();
    let (reason, detail) = kept(&c, &plan, "light");
    assert_eq!(reason, "NoPlaceToMovePods");
    assert!(detail.contains("anti-affinity"), "{detail}");

    // An expendable pod (priority under the cutoff) is evicted with its node but needs no place.
    let mut c = Cluster::new(&[("general", 0, 2)]);
    c.node("busy", Some(0))
        .node("light", Some(0))
        .pod("busy", "big", "big", 3900)
        .pod_with("light", "filler", "filler", 1000, |p| {
            p.priority = Some(-100)
        });
    let plan = c.plan();
    assert_eq!(removable(&c, &plan), ["light"], "{plan:#?}");
    assert!(plan.removable[0].empty);
    assert_eq!(plan.removable[0].evicted.len(), 1);
}

#[test]
fn removals_together_never_overcommit_the_nodes_that_stay_nor_lose_a_pod() {
    // 10 busy nodes (3 CPU used) and 30 light ones (5 x 300m) of shapes that chain: pods moved off one
    // light node may land on another that goes later, and must then move again.
    let mut c = Cluster::new(&[("general", 0, 40)]);
    for n in 0..40 {
        let name = format!("n{n:02}");
        c.node(&name, Some(0));
        let (count, cpu) = if n < 10 { (6, 500) } else { (5, 300) };
        for p in 0..count {
            c.pod(
                &name,
                &format!("{name}-{p}"),
                &format!("app-{}", p % 3),
                cpu,
            );
        }
    }
    let plan = c.plan();
    assert!(
        plan.removable.len() >= 20,
        "{} removable",
        plan.removable.len()
    );
    let removed: HashSet<usize> = plan.removable.iter().map(|r| r.node).collect();
    // Where each pod ends: its node, or where the last removal that moved it put it.
    let index: BTreeMap<&str, usize> = c
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut at: Vec<usize> = c
        .pods
        .iter()
        .map(|p| index[p.node_name.as_deref().unwrap()])
        .collect();
    for r in &plan.removable {
        for &(pod, to) in &r.destinations {
            assert_eq!(
                at[pod], r.node,
                "{} moved from where it is not",
                c.pods[pod].name
            );
            at[pod] = to;
        }
    }
    let mut used = vec![Resources::default(); c.nodes.len()];
    for (p, &n) in at.iter().enumerate() {
        assert!(
            !removed.contains(&n),
            "{} left on a removed node",
            c.pods[p].name
        );
        used[n] = used[n].plus(c.pods[p].demand);
    }
    for (n, u) in used.iter().enumerate() {
        assert!(
            c.nodes[n].allocatable.fits(u),
            "{} overcommitted: {u:?}",
            c.name(n)
        );
    }
}

#[test]
fn unready_nodes_are_candidates_once_they_are_past_starting() {
    let mut c = Cluster::new(&[("general", 0, 2)]);
    let unready = |age: u64| {
        move |n: &mut Node| {
            n.ready = false;
            n.created = Some(SystemTime::now() - Duration::from_secs(age));
        }
    };
    c.node_with("starting", Some(0), unready(60))
        .node_with("broken", Some(0), unready(3600));
    let plan = c.plan();
    assert_eq!(kept(&c, &plan, "starting").0, "NotStarted");
    assert_eq!(removable(&c, &plan), ["broken"]);
}
