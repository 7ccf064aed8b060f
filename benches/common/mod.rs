//! What the benchmarks share: the hot RPCs, one call at a time, as percentiles; a simulated provider served
//! in-process.
#![allow(dead_code)]

pub mod snapshot; // a view as kubectl prints it, for `simulate --snapshot`
pub mod steady; // the steady 16-CPU cluster, 30% used, nothing pending, that the loop benches share

use ekscale::clock::Clock;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::*;
use ekscale::provider::ProviderMetrics;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};

pub const HOT: [&str; 4] = [
    "NodeGroupForNode",
    "NodeGroupTargetSize",
    "NodeGroupGetOptions",
    "NodeGroupNodes",
];

/// One call of each hot RPC, the i-th of its kind.
pub async fn call(
    client: &mut CloudProviderClient<Channel>,
    groups: &[String],
    instances: &[String],
    rpc: &str,
    i: usize,
) {
    let group = groups[i % groups.len()].clone();
    match rpc {
        "NodeGroupForNode" => {
            let node = ExternalGrpcNode {
                provider_id: instances[i % instances.len()].clone(),
                ..Default::default()
            };
            client
                .node_group_for_node(NodeGroupForNodeRequest { node: Some(node) })
                .await
                .unwrap();
        }
        "NodeGroupTargetSize" => {
            client
                .node_group_target_size(NodeGroupTargetSizeRequest { id: group })
                .await
                .unwrap();
        }
        "NodeGroupGetOptions" => {
            let request = NodeGroupAutoscalingOptionsRequest {
                id: group,
                defaults: None,
            };
            client.node_group_get_options(request).await.unwrap();
        }
        "NodeGroupNodes" => {
            client
                .node_group_nodes(NodeGroupNodesRequest { id: group })
                .await
                .unwrap();
        }
        other => unreachable!("{other}"),
    }
}

/// p50 / p99 / max of each hot RPC, one call at a time, after a warm-up.
pub fn percentiles(
    rt: &tokio::runtime::Runtime,
    client: &CloudProviderClient<Channel>,
    groups: &[String],
    instances: &[String],
) {
    const CALLS: usize = 20_000;
    println!(
        "percentiles over {CALLS} sequential calls each (loopback, {} instances):",
        instances.len()
    );
    for rpc in HOT {
        let mut client = client.clone();
        let latencies = rt.block_on(async {
            for i in 0..1_000 {
                call(&mut client, groups, instances, rpc, i).await;
            }
            let mut latencies = Vec::with_capacity(CALLS);
            for i in 0..CALLS {
                let start = Instant::now();
                call(&mut client, groups, instances, rpc, i).await;
                latencies.push(start.elapsed());
            }
            latencies.sort_unstable();
            latencies
        });
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        println!(
            "  {rpc:<22} p50 {:>8.1} µs   p99 {:>8.1} µs   max {:>8.1} µs",
            micros(at(0.50)),
            micros(at(0.99)),
            micros(*latencies.last().unwrap())
        );
    }
}

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Serves `backend` in-process on a loopback port for as long as the runtime lives; its address.
pub async fn listen(
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
) -> SocketAddr {
    ekscale::tls::install_crypto_provider();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ekscale::provider::serve(
        listener,
        backend,
        metrics,
        None,
        std::future::pending(),
    ));
    addr
}

/// Serves `backend` in-process on a loopback port for as long as the runtime lives; a client of it.
pub async fn serve(
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
) -> CloudProviderClient<Channel> {
    let addr = listen(backend, metrics).await;
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    CloudProviderClient::new(channel)
}

/// The provider in-process on the simulated EKS of `scenario`, served on a loopback port.
pub async fn sim_provider(scenario: &str, metrics: Arc<ProviderMetrics>) -> SocketAddr {
    let sim = Arc::new(SimulatedEks::new(
        Scenario::parse(scenario).unwrap(),
        Clock::manual(),
    ));
    listen(sim, metrics).await
}

/// `ekscale-autoscaler simulate --format json` on `snapshot` against the provider at `addr`, `args` added: the
/// process's output, once it has succeeded. EKSCALE_SIMULATE_BIN runs another build (another tree's).
pub fn simulate(addr: &str, snapshot: &Path, args: &[String]) -> Output {
    let binary = std::env::var_os("EKSCALE_SIMULATE_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ekscale-autoscaler").into());
    let output = Command::new(binary)
        .args(["simulate", "--provider", addr, "--snapshot"])
        .arg(snapshot)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The process's resident memory, in MiB.
pub fn resident_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// A Ready node for every instance of groups `team-0` .. `team-{groups - 1}`, as kubelet registers it from
/// its group's template (name, hostname, zone and providerID its instance's); `each` finishes the i-th node
/// of group g (its age, its problems).
pub async fn registered_nodes(
    client: &ekscale::autoscaler::ProviderClient,
    groups: usize,
    mut each: impl FnMut(usize, usize, &mut ekscale::model::Node),
) -> Vec<Arc<ekscale::model::Node>> {
    use ekscale::model::{HOSTNAME_LABEL, ZONE_LABEL};
    client.refresh().await.unwrap();
    let mut nodes = Vec::new();
    for g in 0..groups {
        let group = format!("team-{g}");
        let template = client.template(&group).await.unwrap().expect("a template");
        let template = ekscale::k8s::node_from_pb(&template).unwrap();
        for (i, instance) in client.nodes(&group).await.unwrap().into_iter().enumerate() {
            let zone = instance.id.split('/').nth(3).unwrap().to_string();
            let name = format!("ip-{}", instance.id.rsplit('/').next().unwrap());
            let mut node = template.clone();
            node.labels.insert(HOSTNAME_LABEL.into(), name.clone());
            node.labels.insert(ZONE_LABEL.into(), zone);
            node.name = name;
            node.provider_id = instance.id;
            node.ready = true;
            each(g, i, &mut node);
            nodes.push(Arc::new(node));
        }
    }
    nodes
}
