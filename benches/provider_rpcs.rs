//! Hot RPCs of the provider over loopback against a 5,000-instance simulated EKS (10 groups x 500).
//!
//! `cargo bench --bench provider_rpcs` runs criterion for each RPC, then a percentile pass (criterion
//! reports means; cluster-autoscaler cares about tails), then the real binary's resident memory idle and
//! after load. Results go to BENCHMARKS.md by hand, with the command.

mod common;
#[path = "../tests/common/rss.rs"]
mod rss;

use common::{HOT, call, percentiles};
use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::clock::Clock;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::*;
use ekscale::provider::ProviderMetrics;
use rss::rss_mib;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

const GROUPS: usize = 10;
const PER_GROUP: usize = 500;

fn scenario() -> String {
    let mut yaml = String::from("cluster: bench\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..GROUPS {
        yaml.push_str(&format!(
            "  - name: group-{g}\n    instanceType: m5.xlarge\n    zones: [us-east-1a, us-east-1b, us-east-1c]\n    \
             minSize: 0\n    maxSize: 1000\n    desiredSize: {PER_GROUP}\n    options: {{scaleDownUnneededTime: 5m}}\n"
        ));
    }
    yaml
}

struct Fixture {
    client: CloudProviderClient<Channel>,
    groups: Vec<String>,
    instances: Vec<String>,
}

fn start(rt: &tokio::runtime::Runtime) -> Fixture {
    rt.block_on(async {
        ekscale::tls::install_crypto_provider();
        let sim = Arc::new(SimulatedEks::new(
            Scenario::parse(&scenario()).unwrap(),
            Clock::real(),
        ));
        let instances: Vec<String> = (0..GROUPS)
            .flat_map(|g| sim.instances(&format!("group-{g}")).unwrap())
            .map(|i| i.id)
            .collect();
        assert_eq!(instances.len(), GROUPS * PER_GROUP);
        let backend: Arc<dyn NodeGroupBackend> = sim;
        let client = common::serve(backend, Arc::new(ProviderMetrics::default())).await;
        Fixture {
            client,
            groups: (0..GROUPS).map(|g| format!("group-{g}")).collect(),
            instances,
        }
    })
}

fn hot_rpcs(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fixture = start(&rt);
    let mut group = c.benchmark_group("hot_rpcs_5000_instances");
    for rpc in HOT {
        let mut i = 0;
        group.bench_function(rpc, |b| {
            b.to_async(&rt).iter(|| {
                i += 1;
                let mut client = fixture.client.clone();
                let (groups, instances) = (&fixture.groups, &fixture.instances);
                async move { call(&mut client, groups, instances, rpc, i).await }
            })
        });
    }
    group.finish();
    percentiles(&rt, &fixture.client, &fixture.groups, &fixture.instances);
    resident_memory();
}

/// The real binary's resident memory: idle on the built-in scenario, idle on 5,000 instances, and after
/// 40,000 hot calls.
fn resident_memory() {
    let dir = std::env::temp_dir().join(format!("ekscale-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.yaml");
    std::fs::write(&file, scenario()).unwrap();
    println!(
        "\nresident memory of ekscale-provider ({}):",
        env!("CARGO_BIN_EXE_ekscale-provider")
    );
    let (mut builtin, _) = spawn(&[]);
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "  built-in scenario, idle:          {:>6.1} MiB",
        rss_mib(builtin.id())
    );
    let _ = builtin.kill();
    let _ = builtin.wait();

    let (mut large, addr) = spawn(&["--sim-file", file.to_str().unwrap()]);
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "  5,000 instances, idle:            {:>6.1} MiB",
        rss_mib(large.id())
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = CloudProviderClient::new(channel);
        let groups: Vec<String> = (0..GROUPS).map(|g| format!("group-{g}")).collect();
        let instances: Vec<String> = {
            let mut all = Vec::new();
            for g in 0..GROUPS {
                let request = NodeGroupNodesRequest {
                    id: format!("group-{g}"),
                };
                all.extend(
                    client
                        .node_group_nodes(request)
                        .await
                        .unwrap()
                        .into_inner()
                        .instances
                        .into_iter()
                        .map(|i| i.id),
                );
            }
            all
        };
        for i in 0..10_000 {
            for rpc in HOT {
                call(&mut client, &groups, &instances, rpc, i).await;
            }
        }
    });
    println!(
        "  5,000 instances, after 40k calls: {:>6.1} MiB",
        rss_mib(large.id())
    );
    let _ = large.kill();
    let _ = large.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

fn spawn(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ekscale-provider"))
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("listening"))
        .expect("provider started");
    std::thread::spawn(move || lines.for_each(drop));
    let addr = line
        .split("grpc=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    (child, addr)
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(5));
    targets = hot_rpcs
}
criterion_main!(benches);
