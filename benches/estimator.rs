//! The estimator (scale-up planning over every node group) at 100 / 1,000 / 10,000 pending pods x 1 / 10 /
//! 50 node groups, on two pod mixes: "deployments" (20 shapes, as replicas of Deployments are) and
//! "distinct" (every pod a shape of its own, the worst case for equivalence groups). Then the packing
//! quality: nodes ours vs cluster-autoscaler's ordering vs the lower bound, on those mixes, Karpenter's
//! scheduling-benchmark mix and memory-heavy mixes on r5.xlarge (two families: 12 and 40 seeds). With
//! `ESTIMATOR_MIX_DIR=<dir>` the memory-heavy mixes are also written there as JSON (`{"node": [cpu m,
//! MiB, pods], "groups": [[cpu m, bytes, count], ...]}`), so that cluster-autoscaler's own estimator can
//! be run on the same pods (`benches/upstream/`).

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::scaleup::estimator::{self as binpack, Demand, Ordering};
use ekscale::autoscaler::scaleup::{self, ClusterLimits, Pending};
use ekscale::autoscaler::scaleup::{Expander, Strategy};
use ekscale::autoscaler::{Group, Totals};
use ekscale::model::{
    HOSTNAME_LABEL, LabelSelector, Node, Pod, PodAffinityTerm, PodNames, Resources, Scheduling,
    SpreadConstraint, ZONE_LABEL,
};
use ekscale::simulator::{EquivalenceGroup, PlaceKind, PodTerms, Topology, group_pods};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Duration;

const MI: u64 = 1 << 20;

/// Instance shapes as EKS allocates them (cpu millis, memory MiB, pods).
const SHAPES: [(u64, u64, u64); 6] = [
    (1930, 7_220, 29),     // m5.large
    (3920, 14_600, 58),    // m5.xlarge
    (7910, 29_700, 58),    // m5.2xlarge
    (7910, 13_100, 58),    // c5.2xlarge
    (3920, 29_300, 58),    // r5.xlarge
    (15_890, 59_300, 234), // m5.4xlarge
];

fn template(i: usize) -> Arc<Node> {
    let (cpu, mem, pods) = SHAPES[i % SHAPES.len()];
    let allocatable = Resources {
        cpu_millis: cpu,
        memory_bytes: mem * MI,
        pods,
        ..Default::default()
    };
    Arc::new(Node {
        name: format!("template-{i}"),
        labels: [
            (HOSTNAME_LABEL.to_string(), format!("template-{i}")),
            (ZONE_LABEL.to_string(), "us-east-1a".to_string()),
        ]
        .into(),
        capacity: Resources {
            cpu_millis: cpu.div_ceil(1000) * 1000,
            ..allocatable
        },
        allocatable,
        ready: true,
        ..Default::default()
    })
}

#[derive(Clone, Copy, Debug)]
enum Mix {
    Deployments,
    Distinct,
    /// Karpenter's `makeDiversePods` (as `benches/runonce.rs`'s `karpenter_mix`): a sixth each of
    /// generic pods, zone and hostname spreads, hostname and zone pod affinity, hostname anti-affinity.
    Karpenter,
}

fn pods(count: usize, mix: Mix) -> Vec<Pod> {
    let mut rng = StdRng::seed_from_u64(7);
    let shapes: Vec<(u64, u64)> = (0..20)
        .map(|_| {
            (
                rng.random_range(1..=16) * 125,
                rng.random_range(1..=32) * 128,
            )
        })
        .collect();
    (0..count)
        .map(|i| {
            let (cpu, mem) = match mix {
                Mix::Deployments => shapes[i % shapes.len()],
                Mix::Distinct => (rng.random_range(100..=2000), rng.random_range(128..=4096)),
                Mix::Karpenter => (
                    [100, 250, 500, 1000, 1500][rng.random_range(0..5)],
                    [100, 256, 512, 1024, 2048, 4096][rng.random_range(0..6)],
                ),
            };
            let demand = Resources {
                cpu_millis: cpu,
                memory_bytes: mem * MI,
                pods: 1,
                ..Default::default()
            };
            let pod = Pod::pending("default", &format!("p-{i}"), demand);
            match mix {
                Mix::Karpenter => diverse(pod, (6 * i / count).min(5), &mut rng),
                _ => pod,
            }
        })
        .collect()
}

/// `pod` as the `kind`-th sixth of Karpenter's mix: labels and selectors drawn from a-g.
fn diverse(mut pod: Pod, kind: usize, rng: &mut StdRng) -> Pod {
    let mut value = || ["a", "b", "c", "d", "e", "f", "g"][rng.random_range(0..7)].to_string();
    let selector = |key: &str, value: String| LabelSelector {
        match_labels: [(key.to_string(), value)].into(),
        expressions: vec![],
    };
    let term = |selector, key: &str| PodAffinityTerm {
        selector,
        namespaces: Some(vec!["default".into()]),
        topology_key: key.into(),
    };
    let key = |zone: bool| if zone { ZONE_LABEL } else { HOSTNAME_LABEL };
    let (label, scheduling) = match kind {
        1 | 2 => {
            let spread = SpreadConstraint::new(1, key(kind == 1), selector("my-label", value()));
            (
                ("my-label", value()),
                Scheduling {
                    spread: vec![spread],
                    ..Default::default()
                },
            )
        }
        3 | 4 => {
            let affinity = term(selector("my-affininity", value()), key(kind == 4));
            (
                ("my-affininity", value()),
                Scheduling {
                    affinity: vec![affinity],
                    ..Default::default()
                },
            )
        }
        5 => {
            let anti = term(selector("app", "nginx".into()), HOSTNAME_LABEL);
            (
                ("app", "nginx".into()),
                Scheduling {
                    anti_affinity: vec![anti],
                    ..Default::default()
                },
            )
        }
        _ => (("my-label", value()), Scheduling::default()),
    };
    pod.labels = [(label.0.to_string(), label.1)].into();
    pod.scheduling = Arc::new(scheduling);
    pod
}

struct Input {
    pods: Vec<Pod>,
    groups: Vec<EquivalenceGroup>,
    terms: Vec<PodTerms>,
    topology: Topology,
    node_groups: Vec<Group>,
}

fn input(count: usize, node_groups: usize, mix: Mix) -> Input {
    let pods = pods(count, mix);
    let groups = group_pods(&pods, 0..pods.len(), &ekscale::model::LabelProjection::All);
    let mut topology = Topology::default();
    for pod in &pods {
        topology.register(pod);
    }
    let terms = groups
        .iter()
        .map(|g| topology.resolve(g.exemplar(&pods)))
        .collect();
    let node_groups = (0..node_groups)
        .map(|i| Group {
            id: format!("group-{i}"),
            min_size: 0,
            max_size: 10_000,
            target_size: 0,
            template: Some(topology.place(template(i), Some(i), PlaceKind::Planned)),
            zones: Vec::new(),
            skip: None,
            node_price: None,
            zero_or_max: false,
            prepaid: 0,
            full: false,
        })
        .collect();
    Input {
        pods,
        groups,
        terms,
        topology,
        node_groups,
    }
}

fn limits() -> ClusterLimits {
    ClusterLimits {
        max_nodes_per_scaleup: 10_000,
        ..ClusterLimits::default()
    }
}

/// One planning pass, as RunOnce runs it.
fn plan(input: &Input) -> u64 {
    let expander = Expander {
        chain: vec![Strategy::LeastWaste],
        priorities: None,
    };
    let mut topology = input.topology.clone();
    let mut places = Vec::new();
    let mut pending = Pending {
        pods: (&input.pods).into(),
        keys: &PodNames::default(),
        groups: input.groups.clone(),
        terms: input.terms.clone(),
        done: vec![0; input.groups.len()],
        prices: vec![None; input.groups.len()],
        device_prices: Default::default(),
        stabilizer: 0.0,
        homes: Vec::new(),
    };
    let orchestrator = scaleup::ScaleUpOrchestrator {
        groups: &input.node_groups,
        limits: &limits(),
        expander: &expander,
        totals: Totals::default(),
    };
    let plan = orchestrator
        .plan(&mut topology, &mut places, &mut pending)
        .unwrap();
    plan.scale_ups.iter().map(|s| s.delta).sum()
}

fn estimator(c: &mut Criterion) {
    for mix in [Mix::Deployments, Mix::Distinct] {
        let mut group = c.benchmark_group(format!("estimator/{mix:?}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(5));
        for count in [100, 1_000, 10_000] {
            for node_groups in [1, 10, 50] {
                let input = input(count, node_groups, mix);
                group.bench_with_input(
                    BenchmarkId::new(format!("{count} pods"), format!("{node_groups} groups")),
                    &input,
                    |b, input| b.iter_batched(|| (), |_| plan(input), BatchSize::SmallInput),
                );
            }
        }
        group.finish();
    }
    quality();
    memory_heavy_quality();
}

/// Nodes for each mix on one group of each shape: ours, cluster-autoscaler's own search alone, and the
/// lower bound max_r ceil(sum demand_r / allocatable_r).
fn quality() {
    println!("\npacking quality (one node group):");
    println!(
        "pods | mix | shape (cpu m / mem MiB / pods) | pods placed | ours | upstream | lower bound | ours over bound"
    );
    for (count, mix) in [
        (2_000, Mix::Distinct),
        (10_000, Mix::Deployments),
        (10_000, Mix::Distinct),
        (20_000, Mix::Karpenter),
    ] {
        for (shape, &(cpu, mem, pods)) in SHAPES.iter().enumerate() {
            let input = input(count, shape + 1, mix);
            let template = input.node_groups[shape].template.as_ref().unwrap();
            let demands: Vec<Demand> = input
                .groups
                .iter()
                .zip(&input.terms)
                .map(|(g, terms)| Demand {
                    pod: g.exemplar(&input.pods),
                    terms,
                    count: g.pods.len() as u64,
                })
                .collect();
            let limits = binpack::EstimateLimits {
                max_nodes: u64::MAX,
                deadline: None,
            };
            let templates = binpack::Templates::one(template);
            let ours = binpack::estimate(&input.topology, &[], templates, &demands, limits);
            let upstream = binpack::pack(
                &input.topology,
                &[],
                templates,
                &demands,
                limits,
                Ordering::Upstream,
            );
            // The bound counts the pods an empty node can hold at all (bigger ones need another group).
            let a = template.node.allocatable;
            let fitting: Vec<&Pod> = input.pods.iter().filter(|p| a.fits(&p.demand)).collect();
            let sum = |f: fn(&Resources) -> u64| fitting.iter().map(|p| f(&p.demand)).sum::<u64>();
            // Pods that keep apart by hostname need a node each.
            let apart = fitting
                .iter()
                .filter(|p| !p.scheduling.anti_affinity.is_empty());
            let bound = sum(|r| r.cpu_millis)
                .div_ceil(a.cpu_millis)
                .max(sum(|r| r.memory_bytes).div_ceil(a.memory_bytes))
                .max(sum(|r| r.pods).div_ceil(a.pods))
                .max(apart.count() as u64);
            println!(
                "{count} | {mix:?} | {cpu} / {mem} / {pods} | {} | {} | {} | {bound} | {:.2}%",
                ours.pods_placed(),
                ours.node_count(),
                upstream.node_count(),
                (ours.node_count() as f64 / bound as f64 - 1.0) * 100.0
            );
        }
    }
}

/// Memory-heavy mix `seed`: 1,884 pods in 16 shapes (cpu 100-1000m, memory 1-14 GiB), as services with
/// large heaps ask; the counts split 1,884 at 15 random points.
fn memory_heavy(seed: u64) -> Vec<(Resources, u64)> {
    const GIB_HALVES: [u64; 11] = [2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 28];
    let mut rng = StdRng::seed_from_u64(seed);
    let shapes: Vec<Resources> = (0..16)
        .map(|_| Resources {
            cpu_millis: rng.random_range(2..=20) * 50,
            memory_bytes: GIB_HALVES[rng.random_range(0..GIB_HALVES.len())] * 512 * MI,
            pods: 1,
            ..Default::default()
        })
        .collect();
    let mut cuts: Vec<u64> = rand::seq::index::sample(&mut rng, 1883, 15)
        .into_iter()
        .map(|c| c as u64 + 1)
        .collect();
    cuts.sort_unstable();
    cuts.push(1884);
    let counts = cuts
        .iter()
        .scan(0, |at, &c| Some(c - std::mem::replace(at, c)));
    shapes.into_iter().zip(counts).collect()
}

/// Memory-heavy mix `seed` of the second family: the same kind (1,884 pods in 16 shapes, cpu 50-1000m in
/// 50m steps, memory from the same eleven sizes) drawn another way, so that a packing tuned on the first
/// twelve is tried on pods it was not tuned on: each shape gets a random weight of 1-100 and the 1,884
/// pods are split in proportion to the weights (largest remainders first) instead of at random cuts.
fn memory_heavy_weighted(seed: u64) -> Vec<(Resources, u64)> {
    const GIB_HALVES: [u64; 11] = [2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 28];
    const PODS: u64 = 1884;
    let mut rng = StdRng::seed_from_u64(seed);
    let shapes: Vec<(Resources, u64)> = (0..16)
        .map(|_| {
            let demand = Resources {
                cpu_millis: rng.random_range(1..=20) * 50,
                memory_bytes: GIB_HALVES[rng.random_range(0..GIB_HALVES.len())] * 512 * MI,
                pods: 1,
                ..Default::default()
            };
            (demand, rng.random_range(1..=100))
        })
        .collect();
    let weights: u64 = shapes.iter().map(|(_, w)| w).sum();
    let mut counts: Vec<u64> = shapes.iter().map(|(_, w)| PODS * w / weights).collect();
    // The pods the floors left go one each to the largest remainders (the first shape on a tie).
    let mut by_remainder: Vec<usize> = (0..shapes.len()).collect();
    by_remainder.sort_by_key(|&i| std::cmp::Reverse(PODS * shapes[i].1 % weights));
    let left = PODS - counts.iter().sum::<u64>();
    for &i in &by_remainder[..left as usize] {
        counts[i] += 1;
    }
    shapes.into_iter().map(|(r, _)| r).zip(counts).collect()
}

/// Nodes for the memory-heavy mixes on r5.xlarge, both families: ours, the searches' best before the
/// improvement phase, upstream's search alone, the lower bound; and the improvement phase's time.
fn memory_heavy_quality() {
    let dump = std::env::var_os("ESTIMATOR_MIX_DIR").map(std::path::PathBuf::from);
    let shape = 4;
    let (cpu, mem, slots) = SHAPES[shape];
    let first = (0..12).map(|seed| ("memory-heavy", seed, memory_heavy(seed)));
    let weighted = (0..40).map(|seed| ("memory-heavy-weighted", seed, memory_heavy_weighted(seed)));
    for (family, seed, mix) in first.chain(weighted) {
        if seed == 0 {
            println!("\n{family} mixes (1,884 pods, one r5.xlarge group):");
            println!(
                "seed | pods placed | ours | the searches alone (before the improvement) | upstream | lower bound | ours over bound | improvement ms"
            );
        }
        let pods: Vec<(Pod, u64)> = (mix.iter().enumerate())
            .map(|(i, &(demand, count))| {
                (Pod::pending("default", &format!("m-{i}"), demand), count)
            })
            .collect();
        let mut topology = Topology::default();
        for (pod, _) in &pods {
            topology.register(pod);
        }
        let terms: Vec<PodTerms> = pods.iter().map(|(p, _)| topology.resolve(p)).collect();
        let template = topology.place(template(shape), Some(0), PlaceKind::Planned);
        let demands: Vec<Demand> = (pods.iter().zip(&terms))
            .map(|((pod, count), terms)| Demand {
                pod,
                terms,
                count: *count,
            })
            .collect();
        let limits = binpack::EstimateLimits {
            max_nodes: u64::MAX,
            deadline: None,
        };
        let templates = binpack::Templates::one(&template);
        let searched = binpack::search(&topology, &[], templates, &demands, limits);
        let alone = searched.node_count();
        let started = std::time::Instant::now();
        let ours = binpack::improve(&topology, &[], templates, &demands, limits, searched);
        let improving = started.elapsed().as_secs_f64() * 1e3;
        let upstream = binpack::pack(
            &topology,
            &[],
            templates,
            &demands,
            limits,
            Ordering::Upstream,
        );
        let a = template.node.allocatable;
        let sum = |f: fn(&Resources) -> u64| mix.iter().map(|(r, c)| f(r) * c).sum::<u64>();
        let bound = sum(|r| r.cpu_millis)
            .div_ceil(a.cpu_millis)
            .max(sum(|r| r.memory_bytes).div_ceil(a.memory_bytes))
            .max(sum(|r| r.pods).div_ceil(a.pods));
        println!(
            "{seed} | {} | {} | {alone} | {} | {bound} | {:.2}% | {improving:.2}",
            ours.pods_placed(),
            ours.node_count(),
            upstream.node_count(),
            (ours.node_count() as f64 / bound as f64 - 1.0) * 100.0
        );
        if let Some(dir) = &dump {
            let groups: Vec<[u64; 3]> = (mix.iter())
                .map(|(r, c)| [r.cpu_millis, r.memory_bytes, *c])
                .collect();
            let json = serde_json::json!({"node": [cpu, mem, slots], "groups": groups});
            let path = dir.join(format!("{family}-{seed}.json"));
            std::fs::write(&path, json.to_string()).expect("ESTIMATOR_MIX_DIR is writable");
        }
    }
}

criterion_group!(benches, estimator);
criterion_main!(benches);
