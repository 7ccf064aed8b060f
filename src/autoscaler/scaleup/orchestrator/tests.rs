//! The scale-up plan over hand-built clusters: which group each round chooses, balancing, limits.

use super::*;
use crate::autoscaler::scaleup::expander::Strategy;
use crate::model::{Node, Pod, ZONE_LABEL};
use crate::simulator::equivalence;
use std::sync::Arc;

const GI: u64 = 1 << 30;

fn template(name: &str, cpu: u64, mem_gi: u64, zone: &str) -> Arc<Node> {
    let allocatable = Resources {
        cpu_millis: cpu,
        memory_bytes: mem_gi * GI,
        pods: 58,
        ..Default::default()
    };
    Arc::new(Node {
        name: name.into(),
        labels: [
            (ZONE_LABEL.to_string(), zone.to_string()),
            ("eks.amazonaws.com/nodegroup".to_string(), name.to_string()),
            ("workload".to_string(), "general".to_string()),
        ]
        .into(),
        capacity: allocatable,
        allocatable,
        ready: true,
        ..Default::default()
    })
}

fn pods(n: usize, cpu: u64) -> Vec<Pod> {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: GI,
        pods: 1,
        ..Default::default()
    };
    (0..n)
        .map(|i| Pod::pending("default", &format!("p-{i}"), demand))
        .collect()
}

struct Setup {
    topology: Topology,
    groups: Vec<Group>,
    pods: Vec<Pod>,
}

fn setup(templates: &[(Arc<Node>, i32, i32)], pods: Vec<Pod>) -> Setup {
    let mut topology = Topology::default();
    let groups = templates
        .iter()
        .enumerate()
        .map(|(i, (node, target, max))| Group {
            id: node.name.clone(),
            min_size: 0,
            max_size: *max,
            target_size: *target,
            template: Some(topology.place(node.clone(), Some(i), PlaceKind::Planned)),
            zones: Vec::new(),
            skip: None,
            node_price: None,
            zero_or_max: false,
            prepaid: 0,
            full: false,
        })
        .collect();
    Setup {
        topology,
        groups,
        pods,
    }
}

/// `pods` as the planner takes them: in equivalence groups, their terms resolved, none placed yet.
fn pending<'a>(pods: &'a [Pod], topology: &Topology, keys: &'a PodNames) -> Pending<'a> {
    let groups = equivalence::group_pods(pods, 0..pods.len(), &crate::model::LabelProjection::All);
    let terms = (groups.iter())
        .map(|g| topology.resolve(g.exemplar(pods)))
        .collect();
    Pending {
        pods: pods.into(),
        keys,
        done: vec![0; groups.len()],
        prices: vec![None; groups.len()],
        device_prices: Default::default(),
        groups,
        terms,
        stabilizer: 0.0,
        homes: Vec::new(),
    }
}

fn run(setup: &mut Setup, limits: &ClusterLimits, totals: Totals) -> (ScaleUpPlan, Vec<Place>) {
    let keys = PodNames::default();
    let mut pending = pending(&setup.pods, &setup.topology, &keys);
    let expander = Expander {
        chain: vec![Strategy::LeastWaste],
        priorities: None,
    };
    let mut places = Vec::new();
    let orchestrator = ScaleUpOrchestrator {
        groups: &setup.groups,
        limits,
        expander: &expander,
        totals,
    };
    let plan = orchestrator
        .plan(&mut setup.topology, &mut places, &mut pending)
        .unwrap();
    (plan, places)
}

fn deltas(plan: &ScaleUpPlan) -> Vec<(String, u64, usize)> {
    plan.scale_ups
        .iter()
        .map(|s| (s.node_group.clone(), s.delta, s.pods.len()))
        .collect()
}

#[test]
fn the_plan_continues_where_the_chosen_group_runs_out() {
    // 10 pods of 1 CPU; "small" (2 CPUs, max 2) wastes least but holds only 2 pods per node ... 4 pods.
    let mut s = setup(
        &[
            (template("small", 2000, 8, "a"), 0, 2),
            (template("big", 8000, 64, "a"), 0, 10),
        ],
        pods(10, 1000),
    );
    let (plan, places) = run(&mut s, &ClusterLimits::default(), Totals::default());
    assert_eq!(
        deltas(&plan),
        [("small".into(), 2, 4), ("big".into(), 1, 6)]
    );
    assert_eq!(places.len(), 3, "planned nodes join the world");
    assert!(
        plan.reasons.iter().all(|r| r.is_empty()),
        "every pod helped"
    );
}

#[test]
fn groups_of_one_shape_are_estimated_once_and_each_plans_its_own_nodes() {
    let mut s = setup(
        &[
            (template("team-a", 2000, 8, "a"), 0, 2),
            (template("team-b", 2000, 8, "a"), 0, 2),
            (template("team-c", 2000, 8, "b"), 0, 2),
        ],
        pods(12, 1000),
    );
    // team-a and team-b differ in a label no pod reads; team-c is in another zone, which these pods do
    // not read either. A pod that selects a zone tells team-c apart.
    let terms = s.topology.keys().to_vec();
    let plain = Statics::new(&s.groups, &[&s.pods[0]]);
    assert_eq!(plain.classes(), 1);
    let key = |statics: &Statics, g: usize, terms: &[String]| {
        alike::key(&s.groups[g], statics.class(g), &[0], 2, terms)
    };
    assert_eq!(key(&plain, 0, &terms), key(&plain, 1, &terms));
    assert_eq!(key(&plain, 0, &terms), key(&plain, 2, &terms));
    // A zonal term in the world: its counts are kept by zone.
    let zonal_terms = [ZONE_LABEL.to_string()];
    assert_eq!(key(&plain, 0, &zonal_terms), key(&plain, 1, &zonal_terms));
    assert_ne!(key(&plain, 0, &zonal_terms), key(&plain, 2, &zonal_terms));
    let mut zonal = s.pods[0].clone();
    zonal.scheduling = Arc::new(crate::model::Scheduling {
        node_selector: [(ZONE_LABEL.to_string(), "a".to_string())].into(),
        ..Default::default()
    });
    let selecting = Statics::new(&s.groups, &[&s.pods[0], &zonal]);
    assert_eq!(selecting.class(0), selecting.class(1));
    assert_ne!(selecting.class(0), selecting.class(2));
    assert!(selecting.of(1, 0).is_ok() && selecting.of(1, 2).is_err());
    let (plan, places) = run(&mut s, &ClusterLimits::default(), Totals::default());
    // Twelve pods of 1 CPU: six nodes of 2 CPUs, each group's two.
    let mut planned = deltas(&plan);
    planned.sort();
    assert_eq!(
        planned,
        [
            ("team-a".into(), 2, 4),
            ("team-b".into(), 2, 4),
            ("team-c".into(), 2, 4)
        ]
    );
    assert_eq!(places.len(), 6);
    for place in &places {
        assert_eq!(place.node.name, s.groups[place.group.unwrap()].id);
    }

    // team-b adopts team-a's estimate: the same packing, on team-b's own template nodes.
    let s = setup(
        &[
            (template("team-a", 2000, 8, "a"), 0, 2),
            (template("team-b", 2000, 8, "a"), 0, 2),
        ],
        pods(4, 1000),
    );
    let keys = PodNames::default();
    let pending = pending(&s.pods, &s.topology, &keys);
    let job = |group: usize| Job {
        group,
        class: 0,
        members: vec![0].into(),
        limit: 2,
        limited_by: Limited::GroupMax,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let estimates = estimate_all(
        &[job(0), job(1)],
        &s.groups,
        &s.topology,
        &[],
        &pending,
        deadline,
    );
    let [(a, by_a), (b, by_b)] = &estimates[..] else {
        panic!("one estimate per job")
    };
    assert!(Arc::ptr_eq(a, b), "one estimate, shared");
    assert_eq!((by_a, by_b), (&0, &0));
    assert_eq!((a.node_count(), a.pods_placed()), (2, 4));
    let mut nodes = a.nodes.clone();
    alike::adopt(&mut nodes, &s.groups[0], &s.groups[1]);
    for (made, adopted) in a.nodes.iter().zip(&nodes) {
        assert_eq!(made.node.name, "team-a");
        assert_eq!(adopted.node.name, "team-b");
        assert_eq!(made.contents, adopted.contents);
    }
}

#[test]
fn cluster_limits_cap_nodes_and_say_which() {
    let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
    let limits = ClusterLimits {
        max_nodes_total: 5,
        ..ClusterLimits::default()
    };
    let existing = Totals {
        nodes: 2,
        cpu_millis: 4000,
        memory_bytes: 16 * GI,
        ..Totals::default()
    };
    let (plan, _) = run(&mut s, &limits, existing.clone());
    assert_eq!(deltas(&plan), [("small".into(), 3, 6)]);
    assert_eq!(
        plan.reasons[0]["small"],
        "max total nodes in cluster reached (--max-nodes-total)"
    );
    let limits = ClusterLimits {
        max_cores: 9,
        ..ClusterLimits::default()
    };
    let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
    let (plan, _) = run(&mut s, &limits, existing.clone());
    assert_eq!(
        deltas(&plan),
        [("small".into(), 2, 4)],
        "9 cores: 4 used, 2 more nodes"
    );
    assert!(plan.reasons[0]["small"].contains("--cores-total"));
    let limits = ClusterLimits {
        max_memory_gib: 30,
        ..ClusterLimits::default()
    };
    let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
    let (plan, _) = run(&mut s, &limits, existing);
    assert_eq!(
        deltas(&plan),
        [("small".into(), 1, 2)],
        "30 GiB: 16 used, one 8 GiB node"
    );
    assert!(plan.reasons[0]["small"].contains("--memory-total"));
}

#[test]
fn group_max_and_skips_are_reasons() {
    let mut s = setup(
        &[
            (template("full", 2000, 8, "a"), 3, 3),
            (template("backed-off", 2000, 8, "a"), 0, 3),
        ],
        pods(1, 1000),
    );
    s.groups[1].skip = Some("in backoff after failed scale-up (x)".into());
    let (plan, _) = run(&mut s, &ClusterLimits::default(), Totals::default());
    assert!(plan.scale_ups.is_empty());
    assert_eq!(plan.reasons[0]["full"], "max node group size reached");
    assert_eq!(
        plan.reasons[0]["backed-off"],
        "in backoff after failed scale-up (x)"
    );
}

#[test]
fn similar_groups_are_alike_but_for_zone_and_name() {
    use crate::autoscaler::scaleup::balance::similar;
    let mut topology = Topology::default();
    let place = |t: &mut Topology, node| t.place(node, None, PlaceKind::Planned);
    let a = place(&mut topology, template("a", 2000, 8, "us-east-1a"));
    let b = place(&mut topology, template("b", 2000, 8, "us-east-1b"));
    let bigger = place(&mut topology, template("c", 4000, 16, "us-east-1b"));
    assert!(similar(&a, &b));
    assert!(!similar(&a, &bigger));
    let mut other_labels = (*template("d", 2000, 8, "us-east-1a")).clone();
    other_labels
        .labels
        .insert("workload".into(), "batch".into());
    let d = place(&mut topology, Arc::new(other_labels));
    assert!(!similar(&a, &d));
}

#[test]
fn balancing_water_fills_the_smallest_group_first() {
    let mut s = setup(
        &[
            (template("a", 2000, 8, "us-east-1a"), 2, 10),
            (template("b", 2000, 8, "us-east-1b"), 0, 10),
            (template("c", 2000, 8, "us-east-1c"), 1, 2),
        ],
        pods(10, 1000),
    );
    let limits = ClusterLimits {
        balance_similar_node_groups: true,
        ..ClusterLimits::default()
    };
    let (plan, _) = run(&mut s, &limits, Totals::default());
    // 5 nodes (the three groups tie under least-waste; whichever is chosen, the split is the same):
    // b to 1, b and c to 2 (c is then at its max), then a and b to 3.
    let mut got: Vec<(String, u64)> = plan
        .scale_ups
        .iter()
        .map(|s| (s.node_group.clone(), s.delta))
        .collect();
    got.sort();
    assert_eq!(got, [("a".into(), 1), ("b".into(), 3), ("c".into(), 1)]);
    let total: usize = plan.scale_ups.iter().map(|s| s.pods.len()).sum();
    assert_eq!(total, 10);
}

#[test]
fn zero_or_max_groups_go_to_max_or_not_at_all() {
    let mut s = setup(&[(template("gang", 2000, 8, "a"), 0, 4)], pods(2, 1000));
    s.groups[0].zero_or_max = true;
    let (plan, places) = run(&mut s, &ClusterLimits::default(), Totals::default());
    assert_eq!(deltas(&plan), [("gang".into(), 4, 2)]);
    assert_eq!(places.len(), 4, "the empty nodes are planned too");
    assert!(plan.scale_ups[0].reason.contains("zeroOrMaxNodeScaling"));

    let mut s = setup(&[(template("gang", 2000, 8, "a"), 0, 4)], pods(2, 1000));
    s.groups[0].zero_or_max = true;
    let limits = ClusterLimits {
        max_nodes_total: 3,
        ..ClusterLimits::default()
    };
    let (plan, _) = run(&mut s, &limits, Totals::default());
    assert!(plan.scale_ups.is_empty(), "3 nodes allowed, 4 needed");
    assert_eq!(
        plan.reasons[0]["gang"],
        "max total nodes in cluster reached (--max-nodes-total)"
    );
}
