//! The affinity surge (issue 62; cluster-autoscaler's `BenchmarkRunOnceAffinitySurge`): 5,000 Ready nodes and
//! 50,000 pending pods of 5,000 Deployments, every pod with required hostname anti-affinity on its own app
//! label; 49,000 fit existing nodes one a node, 1,000 need a new node each. One whole RunOnce in process
//! against an in-process provider on the simulated EKS (criterion), then the shipped binary's `simulate` over
//! the same snapshot, a few processes; each prints the nodes asked and the pods placed, so a reader checks
//! the answer. `-- 500` or `-- 1000` picks the smaller surges (500 nodes x 5,000 pods, 1,000 x 10,000) alone.
//!
//! With `EKSCALE_BENCH_KEEP=<dir>` the snapshot (`simulate --snapshot`) and scenario (`ekscale-provider
//! --sim-file`) of each size are written there as `surge.json`/`surge.yaml`, `surge-500.*`, `surge-1000.*`,
//! so that cluster-autoscaler's RunOnce and other trees' binaries run on the same files.

mod common;

#[path = "../tests/common/cluster.rs"]
#[allow(dead_code)]
mod cluster;
#[path = "../tests/common/surge.rs"]
mod surge;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::{
    ClusterSource, ProviderClient, ProviderConfig, RunOnce, Settings, Snapshot,
};
use ekscale::provider::ProviderMetrics;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use surge::Shape;

/// The sizes: (existing nodes, the name its kept files take).
const SIZES: [(usize, &str); 3] = [(500, "surge-500"), (1000, "surge-1000"), (5000, "surge")];

/// One surge, written and read back as `simulate` reads it, with a client of its provider.
struct Prepared {
    addr: SocketAddr,
    view: Arc<ekscale::autoscaler::ClusterView>,
    client: ProviderClient,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn prepare(rt: &tokio::runtime::Runtime, shape: Shape, name: &str) -> Prepared {
    let scenario = surge::scenario(shape);
    let addr = rt.block_on(common::sim_provider(
        &scenario,
        Arc::new(ProviderMetrics::default()),
    ));
    let groups = surge::groups();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let nodes = rt.block_on(cluster::nodes_of(addr, &groups));
    assert_eq!(nodes.len(), shape.nodes, "the provider runs every node");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    let list = cluster::list(surge::items(shape, nodes));
    std::fs::write(&path, list.to_string()).unwrap();
    drop(list);
    keep(&path, &scenario, name);
    let view = rt.block_on(Snapshot::read(&path).unwrap().view()).unwrap();
    let client = rt.block_on(async {
        ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap()
    });
    Prepared {
        addr,
        view,
        client,
        path,
        _dir: dir,
    }
}

/// With `EKSCALE_BENCH_KEEP=<dir>`, the surge's snapshot and scenario are copied there as `<name>.json` and
/// `<name>.yaml`, as `benches/runonce.rs` keeps its cases.
fn keep(path: &Path, scenario: &str, name: &str) {
    let Some(dir) = std::env::var_os("EKSCALE_BENCH_KEEP") else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(path, dir.join(format!("{name}.json"))).unwrap();
    std::fs::write(dir.join(format!("{name}.yaml")), scenario).unwrap();
}

/// The loop's answer: pods placed on existing nodes, new nodes asked (all groups), pods no node helps.
fn answer(status: &ekscale::autoscaler::status::Status) -> (usize, u64, usize) {
    let existing = status
        .placed
        .iter()
        .filter(|p| p.on_existing_node())
        .count();
    let asked = status.scale_up.iter().map(|s| s.delta).sum();
    (existing, asked, status.no_scale_up.len())
}

/// The shipped binary's loop on the same snapshot: `simulate` run `runs` times, each process's `elapsedMs`
/// (its first and only loop, cold) and its answer.
fn simulate_loops(addr: SocketAddr, path: &Path, name: &str, runs: usize) {
    let mut times = Vec::new();
    for _ in 0..runs {
        let output = common::simulate(&addr.to_string(), path, &[]);
        let status: Value = serde_json::from_slice(&output.stdout).unwrap();
        let placed = status["placed"].as_array().unwrap();
        let existing = placed.iter().filter(|p| p["node"] != "upcoming").count();
        let asked: u64 = status["scaleUp"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["delta"].as_u64().unwrap())
            .sum();
        times.push(format!("{:.1}", status["elapsedMs"].as_f64().unwrap()));
        if times.len() == 1 {
            println!(
                "{name}: simulate placed {existing} pods on existing nodes, asked {asked} new nodes, {} \
                 pods not helped",
                status["noScaleUp"].as_array().unwrap().len()
            );
        }
    }
    println!(
        "{name}: simulate's loop (the binary, {runs} processes) {} ms",
        times.join(", ")
    );
}

fn surge(c: &mut Criterion) {
    let only: Option<usize> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (nodes, name) in SIZES {
        if only.is_some_and(|only| only != nodes) {
            continue;
        }
        let shape = Shape { nodes };
        let prepared = prepare(&rt, shape, name);
        let Prepared {
            addr,
            ref view,
            ref client,
            ref path,
            ..
        } = prepared;
        let now = SystemTime::now();
        let mut once = RunOnce::new(client.clone(), Settings::default());
        let status = rt.block_on(once.run(view, now)).unwrap();
        let (existing, asked, not_helped) = answer(&status);
        println!(
            "{name}: {} nodes, {} pods; one RunOnce {:.1} ms (estimator {:.1} ms): {existing} pods placed on \
             existing nodes (right: {}), {asked} new nodes asked (right: {}), {not_helped} not helped",
            view.nodes.len(),
            view.pods.len(),
            status.times.elapsed_ms,
            status.times.estimate_ms,
            shape.small_pods(),
            shape.new_nodes(),
        );
        simulate_loops(addr, path, name, 3);
        let title = format!(
            "surge/{nodes} nodes, {} pending pods with hostname anti-affinity",
            shape.small_pods() + shape.new_nodes()
        );
        c.bench_function(&title, |b| {
            b.to_async(&rt).iter(|| {
                let view = view.clone();
                let mut once = RunOnce::new(client.clone(), Settings::default());
                async move { once.run(&view, now).await.unwrap() }
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(10));
    targets = surge
}
criterion_main!(benches);
