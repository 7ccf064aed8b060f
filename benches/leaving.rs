//! What leaving nodes (issue 60) cost the loop: the steady 10,000-node cluster (ten node groups of 1,000
//! nodes of 16 CPU, five of them Spot, each node running a DaemonSet pod and 30 ReplicaSet pods that take
//! 30% of its CPU, nothing pending) with none leaving, against the same cluster with 200 leaving: 100 Spot
//! interruption warnings (20 in each Spot group), 50 rebalance recommendations (in a group with capacity
//! rebalancing and in one without), served by the simulated EKS's `ListLeavingInstances`, and 50 nodes the
//! node monitoring agent marked unhealthy (`KernelReady` False; in a group with node auto repair and in one
//! without). The issue asks the loop to cost at most 10% more.
//!
//! One whole RunOnce as `simulate` runs it (criterion), the first loop's leaving list printed once per case;
//! then the shipped binary, `ekscale-autoscaler simulate` as a process on each cluster's snapshot file.
//!
//! `cargo bench --bench leaving` runs both; `-- "^leaving/"` the loops, `-- "simulate process"` the binary's.

mod common;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::{ClusterView, ProviderClient, ProviderConfig, RunOnce, Settings};
use ekscale::model::{Node, NodeProblem};
use ekscale::provider::ProviderMetrics;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const GROUPS: usize = 10;
const GROUP_NODES: usize = 1000;
/// Groups 0 to 4 are Spot.
const SPOT_GROUPS: usize = 5;

/// Whether the cluster has nodes leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leaving {
    None,
    Some200,
}

impl Leaving {
    fn name(self) -> &'static str {
        match self {
            Leaving::None => "none leaving",
            Leaving::Some200 => {
                "200 leaving (100 Spot interruptions, 50 rebalance recommendations, 50 unhealthy)"
            }
        }
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Ten groups of 1,000 running nodes, the first five Spot (group 1 without capacity rebalancing), group 9
/// with node auto repair; with `leaving`, the instance events EC2 said.
fn scenario(leaving: Leaving, now: SystemTime) -> String {
    let mut text = format!(
        "cluster: bench\nregion: us-east-1\nstart: {}\nnodeGroups:\n",
        rfc3339(now)
    );
    for g in 0..GROUPS {
        let capacity = match g < SPOT_GROUPS {
            true => "SPOT",
            false => "ON_DEMAND",
        };
        let extra = match g {
            1 => ", capacityRebalance: false",
            9 => ", nodeRepairConfig: {enabled: true}",
            _ => "",
        };
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: m5.4xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], \
             minSize: 0, maxSize: 2000, desiredSize: {GROUP_NODES}, capacityType: {capacity}, \
             labels: {{team: team-{g}}}, allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}{extra}}}\n"
        ));
    }
    if leaving == Leaving::None {
        return text;
    }
    text.push_str("instanceEvents:\n");
    // A minute left of each warning; the recommendations said now.
    let deadline = rfc3339(now + Duration::from_secs(60));
    for g in 0..SPOT_GROUPS {
        for i in 0..20 {
            text.push_str(&format!(
                "  - {{nodeGroup: team-{g}, index: {}, kind: spotInterruption, at: \"{deadline}\"}}\n",
                100 + i * 7
            ));
        }
    }
    for g in [0, 1] {
        for i in 0..25 {
            text.push_str(&format!(
                "  - {{nodeGroup: team-{g}, index: {}, kind: rebalance, at: \"{}\"}}\n",
                500 + i * 11,
                rfc3339(now)
            ));
        }
    }
    text
}

/// A node for every instance of every group, as kubelet registers it from the group's template; with
/// `leaving`, 25 nodes of groups 8 and 9 each marked unhealthy by the node monitoring agent 20 minutes ago.
async fn nodes(client: &ProviderClient, leaving: Leaving, now: SystemTime) -> Vec<Arc<Node>> {
    common::registered_nodes(client, GROUPS, |g, i, node| {
        node.created = Some(now - Duration::from_secs(3600));
        if leaving == Leaving::Some200 && g >= 8 && (300..325).contains(&i) {
            node.problems.push(NodeProblem {
                condition: "KernelReady".into(),
                reason: "KernelBug".into(),
                since: Some(now - Duration::from_secs(20 * 60)),
            });
        }
    })
    .await
}

/// What `simulate` decides with: cluster-autoscaler's defaults, the timers taken as run out.
fn settings() -> Settings {
    let mut settings = Settings::default();
    settings.scale_down.timers_elapsed = true;
    settings
}

/// The provider of `leaving`'s cluster, its view, and one loop over them with its leaving list, printed.
fn build(
    rt: &tokio::runtime::Runtime,
    leaving: Leaving,
    now: SystemTime,
) -> (SocketAddr, ProviderClient, Arc<ClusterView>) {
    let (addr, client, view) = rt.block_on(async {
        let metrics = Arc::new(ProviderMetrics::default());
        let addr = common::sim_provider(&scenario(leaving, now), metrics).await;
        let client = ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
        let nodes = nodes(&client, leaving, now).await;
        (
            addr,
            client,
            Arc::new(common::steady::view(nodes, GROUP_NODES, now)),
        )
    });
    let status = rt.block_on(async {
        let mut once = RunOnce::new(client.clone(), settings());
        once.run(&view, now).await.unwrap()
    });
    let mut listed: BTreeMap<(String, String), usize> = BTreeMap::new();
    for l in &status.leaving {
        *listed
            .entry((l.reason.clone(), l.action.to_string()))
            .or_default() += 1;
    }
    let expected = match leaving {
        Leaving::None => 0,
        Leaving::Some200 => 200,
    };
    assert_eq!(status.leaving.len(), expected, "{listed:?}");
    let helped: usize = status.scale_up.iter().map(|s| s.pods.len()).sum();
    println!(
        "\nleaving/{}: one RunOnce {:.0} ms (scale-down {:.0} ms), {} removable, {} scale-ups for {helped} \
         pods, {} placed; leaving by reason and action: {listed:?}",
        leaving.name(),
        status.times.elapsed_ms,
        status.times.scale_down_ms,
        status.scale_down.nodes.len(),
        status.scale_up.len(),
        status.placed.len(),
    );
    (addr, client, view)
}

fn loops(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    for leaving in [Leaving::None, Leaving::Some200] {
        let name = format!("leaving/10000 nodes, {}", leaving.name());
        let mut built = None;
        c.bench_function(&name, |b| {
            let (_, client, view) = built.get_or_insert_with(|| build(&rt, leaving, now));
            b.to_async(&rt).iter(|| {
                let view = view.clone();
                let mut once = RunOnce::new(client.clone(), settings());
                async move { once.run(&view, now).await.unwrap() }
            })
        });
    }
}

/// `ekscale-autoscaler simulate --format json` as a process on each cluster's snapshot file; the first
/// run's own `elapsedMs` (the loop alone) printed beside criterion's time (the process, file read included).
fn simulate_process(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    for leaving in [Leaving::None, Leaving::Some200] {
        let name = format!("simulate process/10000 nodes, {}", leaving.name());
        let mut built = None;
        c.bench_function(&name, |b| {
            let (addr, path) = built.get_or_insert_with(|| {
                let (addr, _, view) = build(&rt, leaving, now);
                let path = std::env::temp_dir().join(format!(
                    "ekscale-leaving-{}-{}.json",
                    std::process::id(),
                    leaving == Leaving::None
                ));
                common::snapshot::write(&view, &path);
                let output = common::simulate(&addr.to_string(), &path, &[]);
                let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
                let listed = report["leaving"].as_array().map_or(0, Vec::len);
                println!(
                    "\n{name}: the process's elapsedMs {}, {listed} leaving listed",
                    report["elapsedMs"]
                );
                (addr.to_string(), path)
            });
            b.iter(|| common::simulate(addr, path, &[]).stdout.len())
        });
        if let Some((_, path)) = built {
            drop(std::fs::remove_file(path));
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20));
    targets = loops, simulate_process
}
criterion_main!(benches);
