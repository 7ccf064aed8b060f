//! What reserved and scheduled capacity (issue 61) cost the loop: the steady 10,000-node cluster (50 node
//! groups of 200 nodes of 16 CPU, each node running a DaemonSet pod and 30 ReplicaSet pods that take 30% of its
//! CPU, nothing pending; a disruption entry per group with a 10% budget) plain, against the same cluster with
//! a scheduled size on every group (25 windows open, their sizes above the group's nodes, 25 closed) and 20
//! groups on reservations (15 On-Demand Capacity Reservations of 250 instances, 5 Capacity Blocks active for a
//! week). The issue asks the loop to cost at most 5% more.
//!
//! One whole RunOnce as `simulate` runs it (criterion), the first loop's outline printed once per case; then
//! the shipped binary, `ekscale-autoscaler simulate` as a process on each cluster's snapshot file.
//!
//! `cargo bench --bench capacity` runs both; `-- "^capacity/"` the loops, `-- "simulate process"` the binary's.

mod common;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::{
    ClusterView, DisruptionConfig, ProviderClient, ProviderConfig, RunOnce, Settings,
};
use ekscale::model::Node;
use ekscale::provider::ProviderMetrics;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const GROUPS: usize = 50;
const GROUP_NODES: usize = 200;
/// Groups 0 to 14 target an ODCR, 15 to 19 a Capacity Block.
const ODCR_GROUPS: usize = 15;
const RESERVED_GROUPS: usize = 20;

/// Whether the groups have schedules and reservations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capacity {
    Plain,
    ScheduledAndReserved,
}

impl Capacity {
    fn name(self) -> &'static str {
        match self {
            Capacity::Plain => "no schedules, no reservations",
            Capacity::ScheduledAndReserved => "50 scheduled groups, 20 reservations",
        }
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// 50 groups of 200 running nodes; with `capacity`, the first 20 on reservations.
fn scenario(capacity: Capacity, now: SystemTime) -> String {
    let mut text = format!(
        "cluster: bench\nregion: us-east-1\nstart: {}\nnodeGroups:\n",
        rfc3339(now)
    );
    let (start, end) = (
        now - Duration::from_secs(3600),
        now + Duration::from_secs(7 * 86_400),
    );
    for g in 0..GROUPS {
        let (capacity_type, reservations) = match (capacity, g) {
            (Capacity::ScheduledAndReserved, g) if g < ODCR_GROUPS => (
                "ON_DEMAND",
                format!(", reservations: [{{id: cr-{g:08x}, type: odcr, total: 250}}]"),
            ),
            (Capacity::ScheduledAndReserved, g) if g < RESERVED_GROUPS => (
                "CAPACITY_BLOCK",
                format!(
                    ", reservations: [{{id: cr-{g:08x}, type: capacity-block, start: \"{}\", end: \"{}\", \
                     total: 250}}]",
                    rfc3339(start),
                    rfc3339(end)
                ),
            ),
            _ => ("ON_DEMAND", String::new()),
        };
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: m5.4xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], \
             minSize: 0, maxSize: 2000, desiredSize: {GROUP_NODES}, capacityType: {capacity_type}, \
             labels: {{team: team-{g}}}, allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}{reservations}}}\n"
        ));
    }
    text
}

/// A disruption entry per group with a 10% budget; with `capacity`, a scheduled size on each: the even groups'
/// window open all day (sizes 0 to 400, above their 200 nodes: in force, changing nothing), the odd groups'
/// open one minute a night in Berlin (closed at the bench's instant); the reserved groups' nodes may be scaled
/// down (without it, their 4,000 nodes are no candidates and the loop does less: 212 ms against 267 ms in
/// one run).
fn disruption_text(capacity: Capacity) -> String {
    let mut text = String::from("nodeGroups:\n");
    for g in 0..GROUPS {
        text.push_str(&format!(
            "  - match: \"^team-{g}$\"\n    budgets: [{{nodes: \"10%\"}}]\n"
        ));
        if capacity == Capacity::Plain {
            continue;
        }
        let window = match g % 2 {
            0 => "schedule: \"0 0 * * *\", duration: 24h",
            _ => "schedule: \"0 3 * * *\", duration: 1m, timeZone: Europe/Berlin",
        };
        text.push_str(&format!(
            "    schedules: [{{{window}, minSize: 0, maxSize: 400}}]\n"
        ));
        // The reserved groups' nodes stay scale-down candidates, so that both clusters plan the same removals
        // and the difference is what schedules and reservations cost, not the work they spare.
        if g < RESERVED_GROUPS {
            text.push_str("    scaleDownReserved: true\n");
        }
    }
    text
}

fn disruption(capacity: Capacity) -> Arc<DisruptionConfig> {
    Arc::new(DisruptionConfig::parse(&disruption_text(capacity)).unwrap())
}

/// A node for every instance of every group, an hour old.
async fn nodes(client: &ProviderClient, now: SystemTime) -> Vec<Arc<Node>> {
    common::registered_nodes(client, GROUPS, |_, _, node| {
        node.created = Some(now - Duration::from_secs(3600));
    })
    .await
}

/// What `simulate` decides with: cluster-autoscaler's defaults, the timers taken as run out, the disruption
/// document of `capacity`.
fn settings(capacity: Capacity) -> Settings {
    let mut settings = Settings::default();
    settings.scale_down.timers_elapsed = true;
    settings.disruption = Some(disruption(capacity));
    settings
}

/// The provider of `capacity`'s cluster, its client and view, and one loop over them, outlined.
fn build(
    rt: &tokio::runtime::Runtime,
    capacity: Capacity,
    now: SystemTime,
) -> (SocketAddr, ProviderClient, Arc<ClusterView>) {
    let (addr, client, view) = rt.block_on(async {
        let metrics = Arc::new(ProviderMetrics::default());
        let addr = common::sim_provider(&scenario(capacity, now), metrics).await;
        let client = ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
        let nodes = nodes(&client, now).await;
        let view = common::steady::view(nodes, GROUP_NODES, now);
        (addr, client, Arc::new(view))
    });
    let status = rt.block_on(async {
        let mut once = RunOnce::new(client.clone(), settings(capacity));
        once.run(&view, now).await.unwrap()
    });
    let reserved = (status.node_groups.iter())
        .filter(|g| !g.reservations.is_empty())
        .count();
    let scheduled = (status.node_groups.iter())
        .filter(|g| g.schedule.is_some())
        .count();
    println!(
        "\ncapacity/{}: one RunOnce {:.0} ms (scale-down {:.0} ms), {} removable, {} disruptions, {} scale-ups; \
         {reserved} groups with reservations, {scheduled} with a window open",
        capacity.name(),
        status.times.elapsed_ms,
        status.times.scale_down_ms,
        status.scale_down.nodes.len(),
        status.scale_down.disruptions.len(),
        status.scale_up.len(),
    );
    (addr, client, view)
}

fn loops(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    for capacity in [Capacity::Plain, Capacity::ScheduledAndReserved] {
        let name = format!("capacity/10000 nodes, {}", capacity.name());
        let mut built = None;
        c.bench_function(&name, |b| {
            let (_, client, view) = built.get_or_insert_with(|| build(&rt, capacity, now));
            b.to_async(&rt).iter(|| {
                let view = view.clone();
                let mut once = RunOnce::new(client.clone(), settings(capacity));
                async move { once.run(&view, now).await.unwrap() }
            })
        });
    }
}

/// `ekscale-autoscaler simulate --format json` as a process on each cluster's snapshot file and disruption
/// document; the first run's own `elapsedMs` (the loop alone) printed beside criterion's time (the process,
/// files read included).
fn simulate_process(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    for capacity in [Capacity::Plain, Capacity::ScheduledAndReserved] {
        let name = format!("simulate process/10000 nodes, {}", capacity.name());
        let mut built = None;
        c.bench_function(&name, |b| {
            let (addr, files, args) = built.get_or_insert_with(|| {
                let (addr, _, view) = build(&rt, capacity, now);
                let stem = format!("ekscale-capacity-{}-{capacity:?}", std::process::id());
                let snapshot = std::env::temp_dir().join(format!("{stem}.json"));
                let config = std::env::temp_dir().join(format!("{stem}.yaml"));
                common::snapshot::write(&view, &snapshot);
                std::fs::write(&config, disruption_text(capacity)).unwrap();
                let args = vec![
                    "--disruption-config".to_string(),
                    config.display().to_string(),
                    "--now".to_string(),
                    rfc3339(now),
                ];
                let output = common::simulate(&addr.to_string(), &snapshot, &args);
                let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
                let groups = report["nodeGroups"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice);
                let scheduled = groups.iter().filter(|g| !g["schedule"].is_null()).count();
                println!(
                    "\n{name}: the process's elapsedMs {}, {scheduled} groups with a window open",
                    report["elapsedMs"]
                );
                (addr.to_string(), [snapshot, config], args)
            });
            b.iter(|| common::simulate(addr, &files[0], args).stdout.len())
        });
        if let Some((_, files, _)) = built {
            files.iter().for_each(|f| drop(std::fs::remove_file(f)));
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20));
    targets = loops, simulate_process
}
criterion_main!(benches);
