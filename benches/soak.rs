//! The companion's loop soaked: one `RunOnce`, acting as `run` acts, over the simulated cluster for
//! thousands of loops while workloads come and go (services scaled up and down at random, batch jobs that
//! arrive and finish), ten seconds of the simulated EKS's clock a loop, so that groups grow, nodes register,
//! go unneeded and are drained and deleted. What it measures is what `run` must not do over days: grow.
//!
//! A warm-up of `WARM_LOOPS` loops first (the cluster grows to its working size, every cache and buffer takes
//! its shape); then criterion times the loops it asks for (each a `RunOnce::run`, the view's making and the
//! simulated cluster's own step not counted), and the process's resident memory is read after every loop
//! (not after criterion's own analysis, which allocates for its resamples). Printed once, at the end: how many
//! loops ran, the cluster's size over them, resident memory after the warm-up, after the last loop and at
//! its highest, and the growth.
//!
//! `cargo bench --bench soak`

mod common;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::{ClusterSource, ProviderClient, ProviderConfig, RunOnce, Settings};
use ekscale::cloud::SimulatedEks;
use ekscale::model::{Controller, Pod, Resources};
use ekscale::simulated_cluster::SimulatedCluster;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Loops before anything is measured.
const WARM_LOOPS: usize = 300;
/// Simulated time a loop stands for (`--scan-interval`'s default).
const SCAN_INTERVAL: Duration = Duration::from_secs(10);
const SERVICES: usize = 24;
const GI: u64 = 1 << 30;

const SCENARIO: &str = "
cluster: soak
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], minSize: 1, maxSize: 300, desiredSize: 1, provisioningDelay: 40s}
  - {name: compute, instanceType: c5.2xlarge, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 150, desiredSize: 0, provisioningDelay: 40s}
  - {name: memory, instanceType: r5.xlarge, zones: [us-east-1c], minSize: 0, maxSize: 150, desiredSize: 0, provisioningDelay: 40s}
";

/// The cluster, the loop over it, and the workloads that change it.
struct Soak {
    sim: Arc<SimulatedEks>,
    cluster: Arc<SimulatedCluster>,
    once: RunOnce,
    rng: StdRng,
    /// Each service's pods by serial number (a ReplicaSet names its pods).
    services: Vec<Vec<u64>>,
    /// Running batch jobs: name and the loop they finish at.
    jobs: Vec<(String, usize)>,
    serial: u64,
    loops: usize,
    nodes: (usize, usize),
    pods: (usize, usize),
}

fn pod(app: &str, serial: u64, cpu: u64, memory: u64) -> Pod {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: memory,
        pods: 1,
        ..Default::default()
    };
    let mut pod = Pod::pending("default", &format!("{app}-{serial}"), demand);
    pod.labels.insert("app".into(), app.into());
    pod.controller = Some(Arc::new(Controller {
        kind: "ReplicaSet".into(),
        name: app.into(),
        uid: format!("uid-{app}"),
    }));
    pod
}

/// Service `s`'s shape: cpu-, memory- or evenly-weighted, so that every group is wanted.
fn service_shape(s: usize) -> (u64, u64) {
    match s % 3 {
        0 => (250 + 125 * (s as u64 % 4), GI / 2 + GI / 4 * (s as u64 % 3)),
        1 => (1000 + 250 * (s as u64 % 3), GI),
        _ => (200, 3 * GI + GI / 2 * (s as u64 % 4)),
    }
}

impl Soak {
    async fn new(addr: std::net::SocketAddr, sim: Arc<SimulatedEks>) -> Soak {
        let config = ProviderConfig::plaintext(addr.to_string());
        let cluster = Arc::new(SimulatedCluster::new(&config, sim.clock().clone()).unwrap());
        let settings = Settings {
            act: true,
            remove_unregistered: true,
            ..Settings::default()
        };
        let once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings)
            .acting_on(cluster.clone());
        Soak {
            sim,
            cluster,
            once,
            rng: StdRng::seed_from_u64(7),
            services: vec![Vec::new(); SERVICES],
            jobs: Vec::new(),
            serial: 0,
            loops: 0,
            nodes: (usize::MAX, 0),
            pods: (usize::MAX, 0),
        }
    }

    /// What the cluster's users do between two loops: a service or two rescaled, a batch job now and then.
    fn churn(&mut self) {
        for _ in 0..2 {
            let s = self.rng.random_range(0..SERVICES);
            let app = format!("svc-{s}");
            let want = self.rng.random_range(4..=60usize);
            let have = self.services[s].len();
            if want > have {
                let (cpu, memory) = service_shape(s);
                let pods: Vec<Pod> = (have..want)
                    .map(|_| {
                        self.serial += 1;
                        self.services[s].push(self.serial);
                        pod(&app, self.serial, cpu, memory)
                    })
                    .collect();
                self.cluster.create_pods(pods);
            } else {
                // A ReplicaSet scaled in deletes its newest pods first.
                let gone: std::collections::HashSet<String> = (self.services[s].drain(want..))
                    .map(|n| format!("{app}-{n}"))
                    .collect();
                self.cluster.delete_pods(|p| gone.contains(&p.name));
            }
        }
        if self.rng.random_range(0..40) == 0 {
            self.serial += 1;
            let name = format!("job-{}", self.serial);
            let count = self.rng.random_range(20..=120u64);
            let pods = (0..count).map(|i| pod(&name, i, 900, 2 * GI));
            self.cluster.create_pods(pods);
            let lasts = self.rng.random_range(30..=180);
            self.jobs.push((name, self.loops + lasts));
        }
        let loops = self.loops;
        let (done, running): (Vec<_>, Vec<_>) = self.jobs.drain(..).partition(|j| j.1 <= loops);
        self.jobs = running;
        for (name, _) in done {
            let prefix = format!("{name}-");
            self.cluster.delete_pods(|p| p.name.starts_with(&prefix));
        }
    }

    /// One loop: the users' changes, the cluster's view, the companion's loop over it (timed), the clock on.
    async fn step(&mut self) -> Duration {
        self.churn();
        let view = self.cluster.view().await.unwrap();
        self.nodes = (
            self.nodes.0.min(view.nodes.len()),
            self.nodes.1.max(view.nodes.len()),
        );
        self.pods = (
            self.pods.0.min(view.pods.len()),
            self.pods.1.max(view.pods.len()),
        );
        let started = Instant::now();
        let status = self.once.run(&view, self.cluster.now()).await.unwrap();
        let took = started.elapsed();
        assert!(
            status.errors.is_empty(),
            "loop {}: {:?}",
            self.loops,
            status.errors
        );
        self.loops += 1;
        self.sim.clock().advance(SCAN_INTERVAL);
        took
    }
}

fn soak(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut soak = rt.block_on(async {
        let sim = Arc::new(SimulatedEks::new(
            ekscale::cloud::Scenario::parse(SCENARIO).unwrap(),
            ekscale::clock::Clock::manual(),
        ));
        let metrics = Arc::new(ekscale::provider::ProviderMetrics::default());
        let addr = common::listen(sim.clone(), metrics).await;
        let mut soak = Soak::new(addr, sim).await;
        for _ in 0..WARM_LOOPS {
            soak.step().await;
        }
        soak
    });
    let warm = common::resident_mib();
    let (warm_nodes, warm_pods) = (soak.nodes, soak.pods);
    let (mut highest, mut last) = (warm, warm);
    c.bench_function("soak/a loop of run's over a changing cluster", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    took += soak.step().await;
                    last = common::resident_mib();
                    highest = highest.max(last);
                }
                took
            })
        })
    });
    println!(
        "\nsoak: {} loops ({WARM_LOOPS} of warm-up), {:.1} simulated hours; nodes {}-{} ({}-{} in the \
         warm-up), pods {}-{} ({}-{}); resident memory after the warm-up {warm:.1} MiB, after the \
         last loop {last:.1} MiB, highest {highest:.1} MiB: growth {:.1} MiB over {} measured loops",
        soak.loops,
        (soak.loops as f64 * SCAN_INTERVAL.as_secs_f64()) / 3600.0,
        soak.nodes.0,
        soak.nodes.1,
        warm_nodes.0,
        warm_nodes.1,
        soak.pods.0,
        soak.pods.1,
        warm_pods.0,
        warm_pods.1,
        last - warm,
        soak.loops - WARM_LOOPS,
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(60));
    targets = soak
}
criterion_main!(benches);
