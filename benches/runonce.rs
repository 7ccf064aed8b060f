//! One RunOnce over a 1,000-node, 30,000-pod cluster with 2,000 pending pods: the in-process loop against an
//! in-process provider on the simulated EKS (criterion), then the real `ekscale-autoscaler simulate` binary
//! over the same snapshot, for its peak memory. Then the loop on pending pods alone, as real clusters make
//! them (`-- pending`): per-pod labels, an Indexed Job, upstream's own estimator benchmark input.

mod common;

#[path = "../tests/common/cluster.rs"]
#[allow(dead_code)]
mod cluster;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::{ClusterSource, Snapshot};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::clock::Clock;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::model::{HOSTNAME_LABEL, ZONE_LABEL};
use ekscale::provider::ProviderMetrics;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SCENARIO: &str = "
cluster: bench
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.4xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], minSize: 0, maxSize: 1500, desiredSize: 1000, labels: {workload: general}}
  - {name: compute, instanceType: c5.2xlarge, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 500, desiredSize: 0, labels: {workload: general}}
  - {name: memory, instanceType: r5.2xlarge, zones: [us-east-1a], minSize: 0, maxSize: 200, desiredSize: 0, labels: {workload: general}}
  - {name: batch, instanceType: c5.2xlarge, zones: [us-east-1a], minSize: 0, maxSize: 100, desiredSize: 0, labels: {workload: batch}, taints: [{key: dedicated, value: batch, effect: NoSchedule}]}
fargateProfiles:
  - {name: serverless, selectors: [{namespace: serverless}]}
";

async fn provider() -> SocketAddr {
    common::sim_provider(SCENARIO, Arc::new(ProviderMetrics::default())).await
}

/// The provider's 1,000 general nodes as Node items, and their names.
async fn general_nodes(addr: SocketAddr) -> (Vec<Value>, Vec<String>) {
    let items = cluster::nodes_of(addr, &["general"]).await;
    let names = items
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    (items, names)
}

/// 1,000 nodes each running 28 pods (500m / 1Gi) and a DaemonSet pod; 2,000 pending pods of six kinds.
async fn snapshot(addr: SocketAddr) -> Value {
    let (mut items, names) = general_nodes(addr).await;
    for (n, node) in names.iter().enumerate() {
        for p in 0..28 {
            let app = format!("app-{}", (n * 28 + p) % 50);
            items.push(cluster::running(
                node,
                &format!("{app}-{n}-{p}"),
                &app,
                "500m",
                "1Gi",
            ));
        }
        items.push(cluster::exporter(node, "100m", "128Mi"));
    }
    items.extend(cluster::replicas(600, "api", "1500m", "2Gi"));
    items.extend(cluster::replicas(800, "worker", "2", "4Gi"));
    for i in 0..200 {
        items.push(cluster::with_spec(
            cluster::pending("default", &format!("cache-{i}"), "cache", "250m", "8Gi"),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        ));
    }
    for i in 0..200 {
        items.push(cluster::with_spec(
            cluster::pending("default", &format!("spread-{i}"), "spread", "1", "1Gi"),
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}]}),
        ));
    }
    for i in 0..100 {
        items.push(cluster::with_spec(
            cluster::pending("default", &format!("etl-{i}"), "etl", "2", "4Gi"),
            json!({"nodeSelector": {"workload": "batch"},
                   "tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
        ));
    }
    items.extend(cluster::replicas(100, "huge", "64", "1Gi"));
    cluster::list(items)
}

/// Peak resident memory of a process, polled from /proc until it exits (VmHWM only grows).
fn peak_mib(child: &mut std::process::Child) -> f64 {
    let mut peak = 0.0;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            let kib: Option<f64> = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            if let Some(kib) = kib {
                peak = f64::max(peak, kib / 1024.0);
            }
        }
        if child.try_wait().unwrap().is_some() {
            return peak;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A quiet afternoon on the same 1,000 nodes: 400 busy (30 pods of 500m), 600 light (30 pods of 100m, 19%
/// used) that scale-down must drain into each other; 50 apps, 20 of them under a PDB; a DaemonSet pod each.
async fn quiet_snapshot(addr: SocketAddr) -> Value {
    let (mut items, names) = general_nodes(addr).await;
    for (n, node) in names.iter().enumerate() {
        let cpu = if n < 400 { "500m" } else { "100m" };
        for p in 0..30 {
            let app = format!("app-{}", (n * 30 + p) % 50);
            items.push(cluster::running(
                node,
                &format!("{app}-{n}-{p}"),
                &app,
                cpu,
                "512Mi",
            ));
        }
        items.push(cluster::exporter(node, "100m", "128Mi"));
    }
    for a in 0..20 {
        items.push(json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": format!("app-{a}"), "namespace": "default"},
            "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": format!("app-{a}")}}},
            "status": {"disruptionsAllowed": 300}
        }));
    }
    cluster::list(items)
}

/// `snapshot` written to a file and read back as `simulate` reads it, with a client of the provider.
struct Prepared {
    view: Arc<ekscale::autoscaler::ClusterView>,
    path: std::path::PathBuf,
    client: ProviderClient,
    _dir: tempfile::TempDir,
}

fn prepare(rt: &tokio::runtime::Runtime, addr: SocketAddr, snapshot: Value) -> Prepared {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let view = rt.block_on(Snapshot::read(&path).unwrap().view()).unwrap();
    let client = rt.block_on(async {
        ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap()
    });
    Prepared {
        view,
        path,
        client,
        _dir: dir,
    }
}

fn scale_down(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(provider());
    let Prepared { view, client, .. } = prepare(&rt, addr, rt.block_on(quiet_snapshot(addr)));
    // As `simulate` plans: every unneeded node listed, timers taken as elapsed.
    let settings = Settings {
        scale_down: ekscale::autoscaler::ScaleDownSettings {
            timers_elapsed: true,
            ..Default::default()
        },
        ..Settings::default()
    };
    let now = SystemTime::now();
    let mut once = RunOnce::new(client.clone(), settings.clone());
    let status = rt.block_on(once.run(&view, now)).unwrap();
    let moved: usize = status.scale_down.nodes.iter().map(|s| s.pods.len()).sum();
    println!(
        "quiet cluster: {} nodes, {} pods; one RunOnce {:.1} ms, scale-down planning {:.1} ms: {} nodes \
         removable ({} empty), {} pods moved, {} kept",
        view.nodes.len(),
        view.pods.len(),
        status.times.elapsed_ms,
        status.times.scale_down_ms,
        status.scale_down.nodes.len(),
        status
            .scale_down
            .nodes
            .iter()
            .filter(|s| s.reason == "empty")
            .count(),
        moved,
        status.scale_down.unremovable.len()
    );
    bench_loop(
        c,
        &rt,
        "scaledown/1000 nodes, 31000 pods, 600 light nodes",
        LoopInput {
            view: &view,
            client: &client,
            now,
        },
        &settings,
    );
    let off = Settings {
        scale_down: ekscale::autoscaler::ScaleDownSettings {
            enabled: false,
            ..Default::default()
        },
        ..Settings::default()
    };
    bench_loop(
        c,
        &rt,
        "scaledown/the same RunOnce with scale-down off",
        LoopInput {
            view: &view,
            client: &client,
            now,
        },
        &off,
    );
}

/// Consolidation planning over the quiet afternoon, as `simulate --consolidation replace` plans (timers
/// elapsed, every replacement listed): after scale-down's removals (the busy nodes then receive pods and are
/// left to it), and with a 10% utilization threshold, where scale-down removes nothing and all 1,000 nodes
/// are consolidation candidates: each light node fits on a c5.2xlarge alone, or with another on an
/// r5.2xlarge, both cheaper than an m5.4xlarge.
fn consolidation(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(provider());
    let Prepared { view, client, .. } = prepare(&rt, addr, rt.block_on(quiet_snapshot(addr)));
    let now = SystemTime::now();
    for (name, threshold) in [
        ("consolidation/quiet afternoon, after scale-down", 0.5),
        ("consolidation/quiet afternoon, every node a candidate", 0.1),
    ] {
        let mut settings = Settings {
            scale_down: ekscale::autoscaler::ScaleDownSettings {
                timers_elapsed: true,
                utilization_threshold: threshold,
                ..Default::default()
            },
            ..Settings::default()
        };
        settings.consolidation.mode = ekscale::autoscaler::ConsolidationMode::Replace;
        let mut once = RunOnce::new(client.clone(), settings.clone());
        let status = rt.block_on(once.run(&view, now)).unwrap();
        let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
        for n in &status.scale_down.not_consolidated {
            *reasons.entry(n.reason.as_str()).or_default() += 1;
        }
        let merged = status
            .scale_down
            .consolidation
            .iter()
            .filter(|c| c.nodes.len() > 1)
            .count();
        println!(
            "{name}: one RunOnce {:.1} ms, scale-down planning {:.1} ms ({} removable), consolidation \
             planning {:.1} ms: {} replacements ({merged} merging two or more nodes), saving ${:.2}/h; not \
             consolidated: {reasons:?}",
            status.times.elapsed_ms,
            status.times.scale_down_ms,
            status.scale_down.nodes.len(),
            status.times.consolidation_ms,
            status.scale_down.consolidation.len(),
            status
                .scale_down
                .consolidation
                .iter()
                .map(|c| c.saving_per_hour)
                .sum::<f64>(),
        );
        bench_loop(
            c,
            &rt,
            name,
            LoopInput {
                view: &view,
                client: &client,
                now,
            },
            &settings,
        );
    }
}

fn runonce(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(provider());
    let prepared = prepare(&rt, addr, rt.block_on(snapshot(addr)));
    let (view, path, client) = (
        prepared.view.clone(),
        &prepared.path,
        prepared.client.clone(),
    );
    println!(
        "cluster: {} nodes, {} pods ({} bytes of JSON)",
        view.nodes.len(),
        view.pods.len(),
        std::fs::metadata(path).unwrap().len()
    );
    let mut once = RunOnce::new(client.clone(), Settings::default());
    let now = SystemTime::now();
    let status = rt.block_on(once.run(&view, now)).unwrap();
    println!(
        "one RunOnce: {:.1} ms (estimator {:.1} ms, scale-down {:.1} ms); {} placed on existing nodes, scale-ups {:?}, {} cannot be helped",
        status.times.elapsed_ms,
        status.times.estimate_ms,
        status.times.scale_down_ms,
        status.placed.len(),
        scale_ups(&status),
        status.no_scale_up.len()
    );
    bench_loop(
        c,
        &rt,
        "runonce/1000 nodes, 30000 pods, 2000 pending",
        LoopInput {
            view: &view,
            client: &client,
            now,
        },
        &Settings::default(),
    );
    // Headroom's virtual pods join the view's pods for the loop: that must not cost a copy of every pod.
    let spare = Settings {
        headroom: ekscale::autoscaler::headroom::parse("headroom: [{name: spare, pods: 3}]")
            .unwrap(),
        ..Settings::default()
    };
    bench_loop(
        c,
        &rt,
        "runonce/the same with a headroom policy of 3 pods",
        LoopInput {
            view: &view,
            client: &client,
            now,
        },
        &spare,
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args([
            "simulate",
            "--provider",
            &addr.to_string(),
            "--format",
            "json",
            "--snapshot",
        ])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let peak = peak_mib(&mut child);
    println!(
        "ekscale-autoscaler simulate over this snapshot: peak RSS {peak:.1} MiB (parsing included)"
    );
}

/// A loop's scale-ups for the bench's own line: (group, nodes, pods).
fn scale_ups(status: &ekscale::autoscaler::status::Status) -> Vec<(&str, u64, usize)> {
    status
        .scale_up
        .iter()
        .map(|s| (s.node_group.as_str(), s.delta, s.pods.len()))
        .collect()
}

/// What one RunOnce reads: the cluster's view, the provider it asks, and the time it runs at.
struct LoopInput<'a> {
    view: &'a Arc<ekscale::autoscaler::ClusterView>,
    client: &'a ProviderClient,
    now: SystemTime,
}

/// Criterion over one whole RunOnce of `input`'s view, from a fresh loop state each time.
fn bench_loop(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    input: LoopInput,
    settings: &Settings,
) {
    let LoopInput { view, client, now } = input;
    c.bench_function(name, |b| {
        b.to_async(rt).iter(|| {
            let view = view.clone();
            let mut once = RunOnce::new(client.clone(), settings.clone());
            async move { once.run(&view, now).await.unwrap() }
        })
    });
}

/// One group of 16 CPU / 64 GiB / 110 pods, as the user had; no Fargate profile.
const GENERAL: &str = "
cluster: bench
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.4xlarge, zones: [us-east-1a], minSize: 0, maxSize: 5000, desiredSize: 0,
     allocatable: {cpu: '16', memory: 64Gi, pods: '110'}}
";

/// The same group in a cluster with a Fargate profile, as EKS clusters commonly have (CoreDNS on Fargate):
/// none of the pending pods is in its namespace.
fn general_with_fargate() -> String {
    format!(
        "{GENERAL}fargateProfiles:\n  - {{name: serverless, selectors: [{{namespace: serverless, labels: \
         {{compute: fargate}}}}]}}\n"
    )
}

/// Fifty groups of the one shape, a group per team in three zones, as large EKS clusters have them.
fn fifty_groups() -> String {
    let mut text = String::from("cluster: bench\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..50 {
        let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][g % 3];
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: m5.4xlarge, zones: [{zone}], minSize: 0, maxSize: 5000, \
             desiredSize: 0, labels: {{team: team-{g}}}, allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}}}\n"
        ));
    }
    text
}

/// Upstream's `BenchmarkBinpackingEstimate` template: 1 CPU / 5000 Mi / 100 pods.
const UPSTREAM: &str = "
cluster: bench
region: us-east-1
nodeGroups:
  - {name: template, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 3000, desiredSize: 0,
     allocatable: {cpu: '1', memory: 5000Mi, pods: '100'}}
";

/// `count` pods, each its own ReplicaSet and `app` label (StatefulSets, per-pod Deployments, Indexed Jobs
/// make such pods), of 36 shapes: cpu 100m-4, memory 128Mi-8Gi.
fn distinct_labels(count: usize) -> Vec<Value> {
    const CPU: [&str; 6] = ["100m", "250m", "500m", "1", "2", "4"];
    const MEMORY: [&str; 6] = ["128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"];
    (0..count)
        .map(|i| {
            let app = format!("app-{i}");
            cluster::pending(
                "default",
                &app,
                &app,
                CPU[i * 7 % 6],
                MEMORY[i * 11 / 6 % 6],
            )
        })
        .collect()
}

/// An Indexed Job: `count` identical pods that differ in their completion-index label and name.
fn indexed_job(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            let mut pod =
                cluster::pending("batch", &format!("etl-{i}-x7k2p"), "etl", "500m", "1Gi");
            pod["metadata"]["labels"] = json!({
                "job-name": "etl", "batch.kubernetes.io/job-name": "etl",
                "controller-uid": "uid-etl", "batch.kubernetes.io/controller-uid": "uid-etl",
                "batch.kubernetes.io/job-completion-index": i.to_string()});
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
                "name": "etl", "uid": "uid-etl", "controller": true}]);
            pod
        })
        .collect()
}

/// Upstream's `BenchmarkBinpackingEstimate` input: 50,000 pods of 50m / 100Mi, 1,000 of 95m / 190Mi.
fn upstream_input() -> Vec<Value> {
    let shape = |i: usize, cpu: &str, memory: &str| {
        cluster::pending(
            "universe",
            &format!("estimatee-{i}"),
            "estimatee",
            cpu,
            memory,
        )
    };
    (0..50_000)
        .map(|i| shape(i, "50m", "100Mi"))
        .chain((0..1_000).map(|i| shape(50_000 + i, "95m", "190Mi")))
        .collect()
}

/// Karpenter's scheduling benchmark mix (`makeDiversePods` in kubernetes-sigs/karpenter
/// `pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go`), `count` pods: a sixth each of
/// generic pods, zone and hostname topology spreads (max skew 1), hostname and zone pod affinity, and
/// hostname anti-affinity among all `app: nginx` pods (so at least a sixth of `count` nodes); labels
/// `my-label` / `my-affininity` (Karpenter's spelling) drawn from a-g, cpu 100m-1500m, memory 100Mi-4Gi.
/// Drawn from a fixed-seed generator, so every run packs the same pods.
fn karpenter_mix(count: usize) -> Vec<Value> {
    const VALUES: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];
    const CPU: [&str; 5] = ["100m", "250m", "500m", "1000m", "1500m"];
    const MEMORY: [&str; 6] = ["100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut draw = move |n: usize| {
        // xorshift64: enough for a fixed, even spread of choices.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let sixth = count / 6;
    let mut pods = Vec::with_capacity(count);
    for i in 0..count {
        let kind = if i < 6 * sixth { i / sixth } else { 0 };
        let (cpu, memory) = (CPU[draw(CPU.len())], MEMORY[draw(MEMORY.len())]);
        let mut pod = cluster::pending("default", &format!("diverse-{i}"), "x", cpu, memory);
        let label = |key: &str, value: &str| json!({ key: value });
        let (labels, spec) = match kind {
            1 | 2 => {
                let key = if kind == 1 {
                    ZONE_LABEL
                } else {
                    HOSTNAME_LABEL
                };
                let selector = label("my-label", VALUES[draw(7)]);
                let spread = json!([{"maxSkew": 1, "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": selector}}]);
                (
                    label("my-label", VALUES[draw(7)]),
                    json!({"topologySpreadConstraints": spread}),
                )
            }
            3 | 4 => {
                let key = if kind == 3 {
                    HOSTNAME_LABEL
                } else {
                    ZONE_LABEL
                };
                let labels = label("my-affininity", VALUES[draw(7)]);
                let selector = label("my-affininity", VALUES[draw(7)]);
                let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    [{"labelSelector": {"matchLabels": selector}, "topologyKey": key}]}});
                (labels, json!({"affinity": affinity}))
            }
            5 => {
                let nginx = label("app", "nginx");
                let affinity = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    [{"labelSelector": {"matchLabels": nginx}, "topologyKey": HOSTNAME_LABEL}]}});
                (nginx, json!({"affinity": affinity}))
            }
            _ => (label("my-label", VALUES[draw(7)]), json!({})),
        };
        pod["metadata"]["labels"] = labels;
        pods.push(cluster::with_spec(pod, spec));
    }
    pods
}

/// gRPC requests the provider has served, all methods.
fn requests(metrics: &ProviderMetrics, backend: &dyn ekscale::cloud::NodeGroupBackend) -> u64 {
    metrics
        .encode(backend)
        .lines()
        .filter(|l| l.starts_with("ekscale_provider_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

fn pending(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Settings that let one scale-up add `nodes` nodes, and otherwise the defaults.
    let up_to = |nodes: u64| Settings {
        limits: ekscale::autoscaler::ClusterLimits {
            max_nodes_per_scaleup: nodes,
            ..Default::default()
        },
        ..Settings::default()
    };
    // Upstream's benchmark lets the estimator add 3,000 nodes; Karpenter's mix needs a node per
    // anti-affinity pod, a sixth of 20,000.
    let (upstream, karpenter) = (up_to(3000), up_to(5000));
    let fifty = fifty_groups();
    let with_fargate = general_with_fargate();
    let cases: [(&str, &str, Vec<Value>, Settings); 7] = [
        (
            "1000 distinct-label pods",
            GENERAL,
            distinct_labels(1_000),
            Settings::default(),
        ),
        (
            "10000 distinct-label pods",
            GENERAL,
            distinct_labels(10_000),
            Settings::default(),
        ),
        (
            "10000 distinct-label pods, a Fargate profile in the cluster",
            &with_fargate,
            distinct_labels(10_000),
            Settings::default(),
        ),
        (
            "10000 distinct-label pods over 50 node groups of one shape",
            &fifty,
            distinct_labels(10_000),
            Settings::default(),
        ),
        (
            "10000-pod Indexed Job",
            GENERAL,
            indexed_job(10_000),
            Settings::default(),
        ),
        (
            "20000 pods of Karpenter's scheduling benchmark mix",
            GENERAL,
            karpenter_mix(20_000),
            karpenter,
        ),
        (
            "51000 pods of upstream's estimator bench",
            UPSTREAM,
            upstream_input(),
            upstream,
        ),
    ];
    for (name, scenario, pods, settings) in cases {
        let metrics = Arc::new(ProviderMetrics::default());
        let backend = SimulatedEks::new(Scenario::parse(scenario).unwrap(), Clock::manual());
        let addr = rt.block_on(common::sim_provider(scenario, metrics.clone()));
        let prepared = prepare(&rt, addr, cluster::list(pods));
        let Prepared {
            ref view,
            ref client,
            ref path,
            ..
        } = prepared;
        let now = SystemTime::now();
        let before = requests(&metrics, &backend);
        let mut once = RunOnce::new(client.clone(), settings.clone());
        let status = rt.block_on(once.run(view, now)).unwrap();
        let rpcs = requests(&metrics, &backend) - before;
        println!(
            "{name}: one RunOnce {:.1} ms (estimator {:.1} ms), {rpcs} RPCs; scale-ups {:?}, {} cannot be helped",
            status.times.elapsed_ms,
            status.times.estimate_ms,
            scale_ups(&status),
            status.no_scale_up.len()
        );
        let mut why: BTreeMap<&str, usize> = BTreeMap::new();
        for reason in status.no_scale_up.iter().flat_map(|p| p.reasons.values()) {
            *why.entry(reason.as_str()).or_default() += 1;
        }
        if !why.is_empty() {
            println!("{name}: not helped, by reason: {why:?}");
        }
        keep(path, scenario, name);
        simulate_loops(addr, path, &settings, name);
        bench_loop(
            c,
            &rt,
            &format!("pending/{name}"),
            LoopInput { view, client, now },
            &settings,
        );
    }
}

/// With `EKSCALE_BENCH_KEEP=<dir>`, the case's snapshot and scenario are copied there, so that two trees'
/// binaries can be timed on the same files, process by process (`ekscale-provider --sim-file`, `simulate`).
fn keep(path: &Path, scenario: &str, name: &str) {
    let Some(dir) = std::env::var_os("EKSCALE_BENCH_KEEP") else {
        return;
    };
    let dir = Path::new(&dir);
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(path, dir.join(format!("{slug}.json"))).unwrap();
    std::fs::write(dir.join(format!("{slug}.yaml")), scenario).unwrap();
}

/// The shipped binary's loop on the same pods: `simulate` run five times on the case's snapshot, each
/// process's own `elapsedMs` (its first and only loop, cold) printed beside the in-process figures.
fn simulate_loops(addr: SocketAddr, path: &Path, settings: &Settings, name: &str) {
    let limit = settings.limits.max_nodes_per_scaleup.to_string();
    let args = ["--max-nodes-per-scaleup".to_string(), limit];
    let runs: Vec<(f64, f64)> = (0..5)
        .map(|_| {
            let output = common::simulate(&addr.to_string(), path, &args);
            let status: Value = serde_json::from_slice(&output.stdout).unwrap();
            let ms = |key: &str| status[key].as_f64().unwrap();
            (ms("elapsedMs"), ms("estimateMs"))
        })
        .collect();
    let list = |f: fn(&(f64, f64)) -> f64| {
        let figures: Vec<String> = runs.iter().map(|r| format!("{:.1}", f(r))).collect();
        figures.join(", ")
    };
    println!(
        "{name}: simulate's loop (the binary, 5 processes) {} ms (estimator {} ms)",
        list(|r| r.0),
        list(|r| r.1)
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20));
    targets = runonce, scale_down, consolidation, pending
}
criterion_main!(benches);
