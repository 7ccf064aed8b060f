//! Load on the real `ekscale-provider` over loopback: 50 concurrent clients, each on its own connection,
//! mixing cluster-autoscaler's hot reads with calls that must be refused, against 5,000 instances.
//! Every valid call succeeds, every invalid one gets its precise status, and the process does not grow.
//!
//! Bounded: `EKSCALE_LOAD_SECONDS` (default 10; BENCHMARKS.md's figures come from 60 in release:
//! `EKSCALE_LOAD_SECONDS=60 cargo test --release --test load -- --nocapture`).

mod common;

use common::Binary;
use common::rss::rss_mib;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::Channel;

const CLIENTS: usize = 50;
const GROUPS: usize = 10;
const PER_GROUP: usize = 500;
/// Resident memory the provider may gain between the end of the warm-up and the end of the run.
const GROWTH_LIMIT_MIB: f64 = 32.0;

fn scenario() -> String {
    let mut yaml = String::from("cluster: load\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..GROUPS {
        yaml.push_str(&format!(
            "  - {{name: group-{g}, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b], minSize: 0, \
             maxSize: {PER_GROUP}, desiredSize: {PER_GROUP}, options: {{scaleDownUnneededTime: 5m}}}}\n"
        ));
    }
    yaml
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    /// Latencies of valid calls by RPC, in microseconds.
    latencies: BTreeMap<&'static str, Vec<u64>>,
    valid: u64,
    invalid: u64,
    /// Valid calls that failed, and invalid ones answered with the wrong status (or none): must stay empty.
    wrong: Vec<String>,
}

impl Tally {
    fn valid<T>(&mut self, rpc: &'static str, started: Instant, result: Result<T, tonic::Status>) {
        self.valid += 1;
        match result {
            Ok(_) => self
                .latencies
                .entry(rpc)
                .or_default()
                .push(started.elapsed().as_micros() as u64),
            Err(status) => self.wrong.push(format!("{rpc}: {status:?}")),
        }
    }

    fn invalid<T: std::fmt::Debug>(
        &mut self,
        rpc: &'static str,
        want: Code,
        result: Result<T, tonic::Status>,
    ) {
        self.invalid += 1;
        match result {
            Err(status) if status.code() == want && !status.message().is_empty() => {}
            other => self
                .wrong
                .push(format!("{rpc}: wanted {want:?}, got {other:?}")),
        }
    }
}

/// One client's calls until `until`: a round of every hot read, then one call that must be refused.
async fn client(
    mut client: CloudProviderClient<Channel>,
    instances: std::sync::Arc<Vec<String>>,
    seed: usize,
    until: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut i = seed;
    while Instant::now() < until {
        i += 1;
        let group = format!("group-{}", i % GROUPS);
        let node = ExternalGrpcNode {
            provider_id: instances[(i * 7919) % instances.len()].clone(),
            ..Default::default()
        };
        let t = Instant::now();
        let r = client
            .node_group_for_node(NodeGroupForNodeRequest {
                node: Some(node.clone()),
            })
            .await;
        tally.valid("NodeGroupForNode", t, r);
        let t = Instant::now();
        let r = client
            .node_group_target_size(NodeGroupTargetSizeRequest { id: group.clone() })
            .await;
        tally.valid("NodeGroupTargetSize", t, r);
        let t = Instant::now();
        let r = client
            .node_group_get_options(NodeGroupAutoscalingOptionsRequest {
                id: group.clone(),
                defaults: None,
            })
            .await;
        tally.valid("NodeGroupGetOptions", t, r);
        let t = Instant::now();
        let r = client
            .node_group_nodes(NodeGroupNodesRequest { id: group.clone() })
            .await;
        tally.valid("NodeGroupNodes", t, r);
        if i.is_multiple_of(10) {
            let t = Instant::now();
            let r = client.refresh(RefreshRequest {}).await;
            tally.valid("Refresh", t, r);
            let t = Instant::now();
            let r = client.node_groups(NodeGroupsRequest {}).await;
            tally.valid("NodeGroups", t, r);
            let t = Instant::now();
            let r = client
                .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest {
                    id: group.clone(),
                })
                .await;
            tally.valid("NodeGroupTemplateNodeInfo", t, r);
        }
        match i % 5 {
            0 => {
                let r = client
                    .node_group_target_size(NodeGroupTargetSizeRequest {
                        id: "no-such-group".into(),
                    })
                    .await;
                tally.invalid("NodeGroupTargetSize", Code::NotFound, r);
            }
            1 => {
                // Every group is at its max.
                let r = client
                    .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                        id: group.clone(),
                        delta: 1,
                    })
                    .await;
                tally.invalid("NodeGroupIncreaseSize", Code::FailedPrecondition, r);
            }
            2 => {
                let r = client
                    .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                        id: group.clone(),
                        delta: -3,
                    })
                    .await;
                tally.invalid("NodeGroupIncreaseSize", Code::InvalidArgument, r);
            }
            3 => {
                let r = client
                    .node_group_decrease_target_size(NodeGroupDecreaseTargetSizeRequest {
                        id: group.clone(),
                        delta: 2,
                    })
                    .await;
                tally.invalid("NodeGroupDecreaseTargetSize", Code::InvalidArgument, r);
            }
            _ => {
                // A node of another group in the request: nothing is deleted.
                let owner = (i * 7919) % instances.len() / PER_GROUP;
                let r = client
                    .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
                        id: format!("group-{}", (owner + 1) % GROUPS),
                        nodes: vec![node],
                    })
                    .await;
                tally.invalid("NodeGroupDeleteNodes", Code::FailedPrecondition, r);
            }
        }
    }
    tally
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_clients_mixing_valid_and_invalid_calls_get_every_answer_right() {
    let seconds: u64 = std::env::var("EKSCALE_LOAD_SECONDS")
        .ok()
        .map(|s| {
            s.parse()
                .expect("EKSCALE_LOAD_SECONDS: a number of seconds")
        })
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.yaml");
    std::fs::write(&file, scenario()).unwrap();
    let provider = Binary::start(&["--sim-file", file.to_str().unwrap()]);
    let pid = provider.child.id();
    let connect = || provider.channel();

    let mut first = CloudProviderClient::new(connect().await);
    let mut instances = Vec::new();
    for g in 0..GROUPS {
        let request = NodeGroupNodesRequest {
            id: format!("group-{g}"),
        };
        let answer = first.node_group_nodes(request).await.unwrap().into_inner();
        instances.extend(answer.instances.into_iter().map(|i| i.id));
    }
    assert_eq!(instances.len(), GROUPS * PER_GROUP);
    let instances = std::sync::Arc::new(instances);
    let idle = rss_mib(pid);

    // A tenth of the time to warm up (connections, buffers, allocator), then the measured run.
    let run = |seconds: f64| {
        let instances = instances.clone();
        async move {
            let until = Instant::now() + Duration::from_secs_f64(seconds);
            let mut tasks = Vec::new();
            for c in 0..CLIENTS {
                let channel = connect().await;
                tasks.push(tokio::spawn(client(
                    CloudProviderClient::new(channel),
                    instances.clone(),
                    c * 1000,
                    until,
                )));
            }
            let mut all = Tally::default();
            for task in tasks {
                let tally = task.await.unwrap();
                all.valid += tally.valid;
                all.invalid += tally.invalid;
                all.wrong.extend(tally.wrong);
                for (rpc, mut l) in tally.latencies {
                    all.latencies.entry(rpc).or_default().append(&mut l);
                }
            }
            all
        }
    };
    let warm_up = run(seconds as f64 / 10.0).await;
    assert!(warm_up.wrong.is_empty(), "{:#?}", warm_up.wrong);
    let warm = rss_mib(pid);
    let started = Instant::now();
    let tally = run(seconds as f64).await;
    let elapsed = started.elapsed().as_secs_f64();
    let after = rss_mib(pid);

    println!(
        "load: {CLIENTS} clients for {elapsed:.1} s against {} instances: {} valid calls ({:.0}/s), {} invalid",
        instances.len(),
        tally.valid,
        tally.valid as f64 / elapsed,
        tally.invalid
    );
    println!("| RPC | calls | p50 | p99 | max |");
    for (rpc, latencies) in &mut tally.latencies.clone() {
        latencies.sort_unstable();
        println!(
            "| {rpc} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
            latencies.len(),
            percentile(latencies, 0.50) as f64 / 1000.0,
            percentile(latencies, 0.99) as f64 / 1000.0,
            *latencies.last().unwrap() as f64 / 1000.0
        );
    }
    println!("resident memory: idle {idle:.1} MiB, warm {warm:.1} MiB, after {after:.1} MiB");
    // After the warm-up the provider's memory holds still (0.5 MiB over 60 s and two million calls,
    // BENCHMARKS.md): growth past GROWTH_LIMIT_MIB is a leak, not noise.
    assert!(
        after - warm < GROWTH_LIMIT_MIB,
        "resident memory grew by {:.1} MiB over the run (warm {warm:.1} MiB, after {after:.1} MiB)",
        after - warm
    );

    assert!(
        tally.wrong.is_empty(),
        "{:#?}",
        &tally.wrong[..tally.wrong.len().min(20)]
    );
    assert!(tally.valid > 0 && tally.invalid > 0);
    // Nothing was changed by the refused calls.
    for g in 0..GROUPS {
        let size = first
            .node_group_target_size(NodeGroupTargetSizeRequest {
                id: format!("group-{g}"),
            })
            .await
            .unwrap()
            .into_inner()
            .target_size;
        assert_eq!(size as usize, PER_GROUP, "group-{g}");
    }
    // Memory is a figure for BENCHMARKS.md (printed above), not a pass mark: how much a process grows
    // depends on the allocator and the machine, not only on leaks.
}
