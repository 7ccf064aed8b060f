//! One RunOnce over a 1,000-node, 30,000-pod cluster with 2,000 pending pods: the in-process loop against an
//! in-process provider on the simulated EKS (criterion), then the real `ekscale-autoscaler simulate` binary
//! over the same snapshot, for its peak memory.

#[path = "../tests/common/cluster.rs"]
#[allow(dead_code)]
mod cluster;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::client::{ProviderClient, ProviderConfig};
use ekscale::autoscaler::cluster::{ClusterSource, Snapshot};
use ekscale::autoscaler::runonce::{RunOnce, Settings};
use ekscale::clock::Clock;
use ekscale::cloud::scenario::Scenario;
use ekscale::cloud::sim::SimBackend;
use ekscale::metrics::ProviderMetrics;
use serde_json::{Value, json};
use std::net::SocketAddr;
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
    ekscale::tls::install_crypto_provider();
    let sim = Arc::new(SimBackend::new(
        Scenario::parse(SCENARIO).unwrap(),
        Clock::manual(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ekscale::provider::serve(
        listener,
        sim,
        Arc::new(ProviderMetrics::default()),
        None,
        std::future::pending(),
    ));
    addr
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
    view: Arc<ekscale::autoscaler::cluster::ClusterView>,
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
        scale_down: ekscale::autoscaler::scaledown::Settings {
            timers_elapsed: true,
            ..Default::default()
        },
        ..Settings::default()
    };
    let now = SystemTime::now();
    let mut once = RunOnce::new(client.clone(), settings.clone());
    let status = rt.block_on(once.run(&view, now)).unwrap();
    let moved: usize = status.scale_down.iter().map(|s| s.pods.len()).sum();
    println!(
        "quiet cluster: {} nodes, {} pods; one RunOnce {:.1} ms, scale-down planning {:.1} ms: {} nodes \
         removable ({} empty), {} pods moved, {} kept",
        view.nodes.len(),
        view.pods.len(),
        status.elapsed_ms,
        status.scale_down_ms,
        status.scale_down.len(),
        status
            .scale_down
            .iter()
            .filter(|s| s.reason == "empty")
            .count(),
        moved,
        status.unremovable.len()
    );
    c.bench_function("scaledown/1000 nodes, 31000 pods, 600 light nodes", |b| {
        b.to_async(&rt).iter(|| {
            let view = view.clone();
            let mut once = RunOnce::new(client.clone(), settings.clone());
            async move { once.run(&view, now).await.unwrap() }
        })
    });
    let off = Settings {
        scale_down: ekscale::autoscaler::scaledown::Settings {
            enabled: false,
            ..Default::default()
        },
        ..Settings::default()
    };
    c.bench_function("scaledown/the same RunOnce with scale-down off", |b| {
        b.to_async(&rt).iter(|| {
            let view = view.clone();
            let mut once = RunOnce::new(client.clone(), off.clone());
            async move { once.run(&view, now).await.unwrap() }
        })
    });
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
        status.elapsed_ms,
        status.estimate_ms,
        status.scale_down_ms,
        status.placed.len(),
        status
            .scale_up
            .iter()
            .map(|s| (s.node_group.as_str(), s.delta, s.pods.len()))
            .collect::<Vec<_>>(),
        status.no_scale_up.len()
    );
    c.bench_function("runonce/1000 nodes, 30000 pods, 2000 pending", |b| {
        b.to_async(&rt).iter(|| {
            let view = view.clone();
            let mut once = RunOnce::new(client.clone(), Settings::default());
            async move { once.run(&view, now).await.unwrap() }
        })
    });

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

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20));
    targets = runonce, scale_down
}
criterion_main!(benches);
