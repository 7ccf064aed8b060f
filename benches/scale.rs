//! Clusters of 2,000 to 100,000 nodes, built in-process (no giant files): node groups of 1,000 nodes of
//! 16 CPU / 64 GiB / 110 pods on the simulated EKS (a 100,000-node cluster is a hundred groups, as EKS's
//! managed node groups are), every node running a DaemonSet pod and ReplicaSet pods of three shapes that take
//! 30% of its CPU (the last node of each group runs its DaemonSet pod only), a few apps under PDBs; no pending
//! pods, and 2% more pods pending. One whole RunOnce as `simulate` runs it (criterion), with its stages and
//! the resident memory the view and a loop take, printed once per case.
//!
//! Also the shipped binary: `ekscale-autoscaler simulate` timed as a process on a 10,000-node cluster's
//! snapshot file as `kubectl get nodes,pods,pdb -A -o json` prints it (written once, about 400 MB, to a
//! temporary file), against the same in-process provider.
//!
//! And ProvisioningRequests: the 10,000-node cluster with the most requests a loop tries (ten check-capacity
//! requests of 100 pods no node has room for), each tried on its own copy of the snapshot.
//!
//! And disruption control: the 10,000-node cluster with every group under budgets (10% or 100% at once,
//! and a weekend window in Berlin, inactive then) and `expireAfter: 720h`, one node in fifty (made 40 days
//! before the others) expired.
//!
//! And CapacityQuotas: the 10,000-node cluster with 2% pending, without quotas and with 100 (one per team
//! and zone, and per zone, none of them binding), back to back: as `simulate` loops, with 1,000 pods that
//! need new nodes, and as `run` loops (statuses written, metrics observed).
//!
//! And GPUs (`dra_cluster`): the 10,000-node cluster's nodes publishing 8 GPUs each through a DRA driver
//! and 1,000 pending pods claiming one by a CEL selector, against the same nodes and pods through the device
//! plugin's `nvidia.com/gpu`; each loop by a new companion, and the next loops of one.
//!
//! `cargo bench --bench scale` runs every case; `cargo bench --bench scale -- "^scale/10000 nodes"` one of
//! them, `cargo bench --bench scale -- "simulate process"` the binary's, `-- requests` the requests',
//! `-- disruption` disruption control's, `-- "^dra/"` the GPUs', `-- quotas` the quotas'.

mod common;
mod dra_cluster;
mod quota_cluster;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::ClusterView;
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::control::AutoscalerMetrics;
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::k8s::{RequestObjects, Template, VersionedRequest};
use ekscale::model::{
    Alike, Controller, LabelSelector, Labels, Node, Pdb, Phase, Pod, PodNames, Resources,
};
use ekscale::provider::ProviderMetrics;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const GROUP_NODES: usize = 1000;
const MI: u64 = 1 << 20;

/// One cluster: its nodes, the ReplicaSet pods on each, and the share of pods pending on top.
struct Case {
    nodes: usize,
    pods_per_node: usize,
    pending_percent: usize,
}

impl Case {
    fn name(&self) -> String {
        let pods = self.nodes * self.pods_per_node;
        let pending = pods * self.pending_percent / 100;
        format!("{} nodes, {pods} pods, {pending} pending", self.nodes)
    }
}

const CASES: &[Case] = &[
    Case {
        nodes: 2_000,
        pods_per_node: 30,
        pending_percent: 0,
    },
    Case {
        nodes: 2_000,
        pods_per_node: 30,
        pending_percent: 2,
    },
    Case {
        nodes: 10_000,
        pods_per_node: 30,
        pending_percent: 0,
    },
    Case {
        nodes: 10_000,
        pods_per_node: 30,
        pending_percent: 2,
    },
    Case {
        nodes: 30_000,
        pods_per_node: 10,
        pending_percent: 0,
    },
    Case {
        nodes: 30_000,
        pods_per_node: 10,
        pending_percent: 2,
    },
    Case {
        nodes: 100_000,
        pods_per_node: 10,
        pending_percent: 0,
    },
    Case {
        nodes: 100_000,
        pods_per_node: 10,
        pending_percent: 2,
    },
];

/// `groups` node groups of 1,000 running nodes each, one per team, in three zones.
fn scenario(groups: usize) -> String {
    let mut text = String::from("cluster: bench\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..groups {
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: m5.4xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], \
             minSize: 0, maxSize: 2000, desiredSize: {GROUP_NODES}, labels: {{team: team-{g}}}, \
             allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}}}\n"
        ));
    }
    text
}

/// A node for every instance of every group, as kubelet registers it from the group's template.
async fn nodes(client: &ProviderClient, groups: usize, created: SystemTime) -> Vec<Arc<Node>> {
    let mut count = 0;
    common::registered_nodes(client, groups, |_, _, node| {
        // One node in fifty is 40 days older: past a 720h expireAfter.
        let old = Duration::from_secs(40 * 86_400) * u32::from(count % 50 == 0);
        node.created = Some(created - old);
        count += 1;
    })
    .await
}

fn pod(name: String, app: &str, kind: &str, cpu: u64, memory: u64) -> Pod {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: memory,
        pods: 1,
        ..Default::default()
    };
    Pod {
        labels: Labels::from([("app".to_string(), app.to_string())]),
        controller: Some(Arc::new(Controller {
            kind: kind.into(),
            name: app.into(),
            uid: format!("uid-{app}"),
        })),
        ..Pod::pending("default", &name, demand)
    }
}

/// The cluster of `case`: its nodes with their pods, the pending pods, `extra` pods after them, and PDBs on
/// three apps.
fn view(case: &Case, nodes: Vec<Arc<Node>>, now: SystemTime, extra: Vec<Pod>) -> ClusterView {
    // Three shapes whose average is 30% of 16 CPU over the node's pods: 4.8 CPU in all.
    let average = 4800 / case.pods_per_node as u64;
    let shapes = [
        (average / 2, 256 * MI),
        (average, 512 * MI),
        (average * 3 / 2, 768 * MI),
    ];
    // Each pod shared and put in its `Arc` as it is made, as a watch reads them one at a time: made all first
    // and wrapped after, their vector (a pod's size each) was still resident, freed or as spare room, when
    // the view's memory was read, and counted in it.
    let mut pods = Vec::with_capacity(nodes.len() * (case.pods_per_node + 1));
    let mut alike = Alike::default();
    let mut add = |mut pod: Pod| {
        alike.share(&mut pod);
        pods.push(Arc::new(pod));
    };
    for (n, node) in nodes.iter().enumerate() {
        let mut exporter = pod(
            format!("node-exporter-{}", node.name),
            "node-exporter",
            "DaemonSet",
            100,
            128 * MI,
        );
        exporter.node_name = Some(node.name.as_str().into());
        exporter.phase = Phase::Running;
        exporter.unschedulable = false;
        add(exporter);
        // The last node of each group runs nothing else: it goes, empty, wherever the others stay.
        if n % GROUP_NODES == GROUP_NODES - 1 {
            continue;
        }
        for p in 0..case.pods_per_node {
            let k = n * case.pods_per_node + p;
            let app = format!("app-{}", k % 50);
            let (cpu, memory) = shapes[k % 3];
            let mut running = pod(format!("{app}-{k}"), &app, "ReplicaSet", cpu, memory);
            running.node_name = Some(node.name.as_str().into());
            running.phase = Phase::Running;
            running.unschedulable = false;
            running.created = Some(now);
            add(running);
        }
    }
    let pending = nodes.len() * case.pods_per_node * case.pending_percent / 100;
    for i in 0..pending {
        let mut burst = pod(format!("burst-{i}"), "burst", "ReplicaSet", 500, 1024 * MI);
        burst.created = Some(now);
        add(burst);
    }
    extra.into_iter().for_each(add);
    let pdbs = (0..3)
        .map(|a| Pdb {
            namespace: "default".into(),
            name: format!("app-{a}"),
            selector: Some(LabelSelector {
                match_labels: Labels::from([("app".to_string(), format!("app-{a}"))]),
                expressions: Vec::new(),
            }),
            disruptions_allowed: 10,
        })
        .collect();
    ClusterView {
        keys: PodNames::of(&pods).into(),
        nodes,
        pods,
        pdbs,
        now: Some(now),
        ..ClusterView::default()
    }
}

/// `n` check-capacity requests of 100 pods of 15 CPU each: no node has that room (they all run 30% of 16 CPU),
/// so every loop tries each of them and finds nothing.
fn unfit_requests(n: usize) -> RequestObjects {
    use serde_json::json;
    let template: k8s_openapi::api::core::v1::PodTemplate = serde_json::from_value(json!({
        "metadata": {"name": "big", "namespace": "batch"},
        "template": {"spec": {"containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "15", "memory": "4Gi"}}}]}}
    }))
    .unwrap();
    let requests = (0..n)
        .map(|i| {
            VersionedRequest::from_value(json!({
                "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                "metadata": {"name": format!("job-{i}"), "namespace": "batch"},
                "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                         "podSets": [{"podTemplateRef": {"name": "big"}, "count": 100}]}
            }))
            .unwrap()
        })
        .collect();
    RequestObjects {
        requests,
        templates: vec![Template::from_api(&template)],
    }
}

/// What `simulate` decides with: cluster-autoscaler's defaults, the timers taken as run out.
fn settings() -> Settings {
    let mut settings = Settings::default();
    settings.scale_down.timers_elapsed = true;
    settings
}

/// Every group under budgets (`AT_ONCE` at once; none for empty or underused nodes on weekend days in
/// Berlin, a schedule evaluated every loop and inactive at the bench's Wednesday noon) with nodes expiring
/// after 30 days.
const DISRUPTION: &str = r#"
nodeGroups:
  - match: "^team-"
    budgets:
      - nodes: "AT_ONCE"
      - nodes: "0"
        schedule: "0 0 * * sat,sun"
        duration: 24h
        timeZone: Europe/Berlin
        reasons: [Empty, Underutilized]
    expireAfter: 720h
    terminationGracePeriod: 2h
"#;

/// The settings with `DISRUPTION`, `at_once` of each group disrupted at once.
fn with_disruption(at_once: &str) -> Settings {
    let text = DISRUPTION.replace("AT_ONCE", at_once);
    let config = ekscale::autoscaler::DisruptionConfig::parse(&text).unwrap();
    Settings {
        disruption: Some(Arc::new(config)),
        ..settings()
    }
}

fn scale(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let created = now - Duration::from_secs(3600);
    let none = RequestObjects::default;
    let cases = (CASES.iter()).map(|case| (format!("scale/{}", case.name()), case, none()));
    let requests = (
        format!(
            "requests/{}, 10 check-capacity requests that find no room",
            CASES[2].name()
        ),
        &CASES[2],
        unfit_requests(10),
    );
    // Budgets that hold most removals back (10% of a group at once), and budgets that hold none (100%): the
    // cost of the machinery alone, over the same removals as without a configuration, 2% expired on top.
    let disruption =
        [("10%", "budgets of 10%"), ("100%", "budgets of 100%")].map(|(at_once, what)| {
            let name = format!("disruption/{}, {what} and 2% expired", CASES[2].name());
            (name, &CASES[2], none(), with_disruption(at_once))
        });
    let cases = (cases.map(|(name, case, requests)| (name, case, requests, settings())))
        .chain([(requests.0, requests.1, requests.2, settings())])
        .chain(disruption);
    for (name, case, requests, settings) in cases {
        // Built once, and only when criterion runs the case (its filter matches): a big one takes a while.
        let mut built = None;
        c.bench_function(&name, |b| {
            let (client, view) = built.get_or_insert_with(|| {
                build(
                    &rt,
                    (case, requests.clone(), &settings),
                    &name,
                    created,
                    now,
                )
            });
            b.to_async(&rt).iter(|| {
                let view = view.clone();
                let mut once = RunOnce::new(client.clone(), settings.clone());
                async move { once.run(&view, now).await.unwrap() }
            })
        });
    }
}

/// GPUs claimed through DRA against GPUs asked of the device plugin, on the same 10,000 nodes, their pods
/// and 1,000 pending GPU pods (`dra_cluster`), back to back: a loop by a new companion each time (what
/// `simulate` runs), then the loops after the first of one companion (what `run` runs, with what it keeps
/// between loops).
fn dra(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let case = &CASES[2];
    for (dra, how) in [
        (true, "GPUs claimed (DRA)"),
        (false, "nvidia.com/gpu (device plugin)"),
    ] {
        let cluster = format!(
            "dra/{}, {} pending: {how}",
            case.name(),
            dra_cluster::GPU_PODS
        );
        let mut built = None;
        let mut build = || {
            let groups = case.nodes / GROUP_NODES;
            let (client, view) = rt.block_on(async {
                let metrics = Arc::new(ProviderMetrics::default());
                let scenario = dra_cluster::scenario(groups, GROUP_NODES, dra);
                let addr = common::sim_provider(&scenario, metrics).await;
                let client =
                    ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
                let nodes = nodes(&client, groups, now - Duration::from_secs(3600)).await;
                let objects = match dra {
                    true => dra_cluster::objects(&client, &nodes).await,
                    false => Default::default(),
                };
                let pods = dra_cluster::pods(dra, now);
                let view = ClusterView {
                    dra: Arc::new(objects),
                    ..view(case, nodes, now, pods)
                };
                (client, Arc::new(view))
            });
            first_loop(&rt, (&client, &view, &settings()), &cluster, 0.0);
            (client, view)
        };
        c.bench_function(&format!("{cluster}, a new companion each loop"), |b| {
            let (client, view) = built.get_or_insert_with(&mut build);
            b.to_async(&rt).iter(|| {
                let view = view.clone();
                let mut once = RunOnce::new(client.clone(), settings());
                async move { once.run(&view, now).await.unwrap() }
            })
        });
        c.bench_function(&format!("{cluster}, one companion's next loops"), |b| {
            let (client, view) = built.get_or_insert_with(&mut build);
            let mut once = RunOnce::new(client.clone(), settings());
            b.iter(|| rt.block_on(once.run(view, now)).unwrap())
        });
    }
}

/// CapacityQuotas (`quota_cluster`) on the 10,000-node cluster with 2% pending, each case without quotas and
/// then with the hundred, back to back: the loop as `simulate` runs it (the pending pods fit where they are:
/// no new node), the same with 1,000 pods that each need a new node (every planned node moves the quotas
/// its template matches), and `run`'s loop: acting (scale-down off, so that nothing else is acted on), the
/// quotas' statuses reconciled and written to a cluster that takes them, then the loop's metrics observed.
fn quotas(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let case = &CASES[3];
    let groups = case.nodes / GROUP_NODES;
    let mut acting = settings();
    acting.act = true;
    acting.scale_down.enabled = false;
    let kinds = [
        ("", 0, false),
        (", 1000 pods needing new nodes", 1000, false),
        (", run's loop (statuses written, metrics observed)", 0, true),
    ];
    for (what, big, run) in kinds {
        let mut built = None;
        for with in [false, true] {
            let name = format!(
                "quotas/{}{what}, {}",
                case.name(),
                if with { "100 quotas" } else { "no quotas" }
            );
            let (client, plain) = built.get_or_insert_with(|| {
                rt.block_on(async {
                    let metrics = Arc::new(ProviderMetrics::default());
                    let addr = common::sim_provider(&scenario(groups), metrics).await;
                    let config = ProviderConfig::plaintext(addr.to_string());
                    let client = ProviderClient::new(&config).unwrap();
                    let nodes = nodes(&client, groups, now - Duration::from_secs(3600)).await;
                    let pods = quota_cluster::big_pods(big, now);
                    (client, view(case, nodes, now, pods))
                })
            });
            let view = Arc::new(ClusterView {
                quotas: if with {
                    quota_cluster::hundred(groups)
                } else {
                    Arc::default()
                },
                ..plain.clone()
            });
            let settings = if run { acting.clone() } else { settings() };
            first_loop(&rt, (client, &view, &settings), &name, 0.0);
            let sink = Arc::new(quota_cluster::TakesStatuses {
                view: view.clone(),
                written: Default::default(),
            });
            let metrics = AutoscalerMetrics::default();
            c.bench_function(&name, |b| {
                b.to_async(&rt).iter(|| {
                    let view = view.clone();
                    let mut once = RunOnce::new(client.clone(), settings.clone());
                    if run {
                        once = once.acting_on(sink.clone());
                    }
                    let metrics = &metrics;
                    async move {
                        let status = once.run(&view, now).await.unwrap();
                        if run {
                            metrics.observe_loop(
                                &view,
                                &status,
                                ekscale::autoscaler::control::Acting::Act,
                                now,
                            );
                        }
                        status
                    }
                })
            });
            let written = sink.written.load(std::sync::atomic::Ordering::Relaxed);
            println!("{name}: {written} quota statuses written over the bench's loops");
        }
    }
}

/// The provider and the view of `case`, and one loop over them: its stages and resident memory, printed.
fn build(
    rt: &tokio::runtime::Runtime,
    (case, requests, settings): (&Case, RequestObjects, &Settings),
    name: &str,
    created: SystemTime,
    now: SystemTime,
) -> (ProviderClient, Arc<ClusterView>) {
    let groups = case.nodes / GROUP_NODES;
    let (client, view, view_mib) = rt.block_on(async {
        let metrics = Arc::new(ProviderMetrics::default());
        let addr = common::sim_provider(&scenario(groups), metrics).await;
        let config = ProviderConfig::plaintext(addr.to_string());
        let client = ProviderClient::new(&config).unwrap();
        let nodes = nodes(&client, groups, created).await;
        let before = common::resident_mib();
        let view = ClusterView {
            requests,
            ..view(case, nodes, now, Vec::new())
        };
        let view_mib = common::resident_mib() - before;
        (client, Arc::new(view), view_mib)
    });
    first_loop(rt, (&client, &view, settings), name, view_mib);
    (client, view)
}

/// One loop over `view`, by a new companion: its stages and resident memory, printed.
fn first_loop(
    rt: &tokio::runtime::Runtime,
    (client, view, settings): (&ProviderClient, &ClusterView, &Settings),
    name: &str,
    view_mib: f64,
) {
    let before = common::resident_mib();
    let status = rt.block_on(async {
        let mut once = RunOnce::new(client.clone(), settings.clone());
        once.run(view, view.now.unwrap()).await.unwrap()
    });
    let loop_mib = common::resident_mib() - before;
    let helped: usize = status.scale_up.iter().map(|s| s.pods.len()).sum();
    println!(
        "\n{name}: one RunOnce {:.0} ms (scale-down {:.0} ms, estimator {:.0} ms), {} removable, \
                 {} kept, {} scale-ups for {helped} pods, {} placed, {} expired or drifted; resident: view \
                 {view_mib:.0} MiB ({:.0} bytes a pod, of which the model's Pod itself {} bytes), the loop's \
                 peak over it {loop_mib:.0} MiB",
        status.times.elapsed_ms,
        status.times.scale_down_ms,
        status.times.estimate_ms,
        status.scale_down.nodes.len(),
        status.scale_down.unremovable.len(),
        status.scale_up.len(),
        status.placed.len(),
        status.scale_down.disruptions.len(),
        view_mib * (1 << 20) as f64 / view.pods.len() as f64,
        std::mem::size_of::<ekscale::model::Pod>(),
    );
}

/// `ekscale-autoscaler simulate` as a process over the 10,000-node cluster's snapshot file: what a user
/// waits for, reading the file included.
fn simulate_process(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let case = &CASES[2];
    let name = format!("simulate process/{}", case.name());
    let mut built = None;
    c.bench_function(&name, |b| {
        let (addr, path) = built.get_or_insert_with(|| {
            let groups = case.nodes / GROUP_NODES;
            let (addr, view) = rt.block_on(async {
                let metrics = Arc::new(ProviderMetrics::default());
                let addr = common::sim_provider(&scenario(groups), metrics).await;
                let client =
                    ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
                let nodes = nodes(&client, groups, now - Duration::from_secs(3600)).await;
                (addr, view(case, nodes, now, Vec::new()))
            });
            let path =
                std::env::temp_dir().join(format!("ekscale-scale-{}.json", std::process::id()));
            common::snapshot::write(&view, &path);
            let size = std::fs::metadata(&path).unwrap().len();
            println!("\n{name}: snapshot {} MB", size / 1_000_000);
            (addr.to_string(), path)
        });
        b.iter(|| {
            // EKSCALE_SIMULATE_BIN times another build of the binary (another tree's) on the same file.
            let output = common::simulate(addr, path, &[]);
            // With RUST_LOG=debug, the process's own breakdown (read, loop, printed) of every run.
            if std::env::var_os("RUST_LOG").is_some() {
                eprint!("{}", String::from_utf8_lossy(&output.stderr));
            }
            output.stdout.len()
        })
    });
    // EKSCALE_KEEP_SNAPSHOT keeps the file, to run `simulate` on it by hand.
    if let Some((_, path)) = built {
        match std::env::var_os("EKSCALE_KEEP_SNAPSHOT") {
            Some(_) => println!("snapshot kept: {}", path.display()),
            None => drop(std::fs::remove_file(path)),
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20));
    targets = scale, dra, quotas, simulate_process
}
criterion_main!(benches);
