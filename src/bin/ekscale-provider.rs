//! ekscale-provider: cluster-autoscaler's externalgrpc cloud provider for Amazon EKS.

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use ekscale::clock::Clock;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::provider::ProviderMetrics;
use ekscale::provider::{self, TlsFiles};
use ekscale::telemetry::{self, LogFormat};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "cluster-autoscaler externalgrpc cloud provider for Amazon EKS"
)]
struct Args {
    /// gRPC address (host:port).
    #[arg(long, default_value = "0.0.0.0:8086")]
    listen: String,
    /// Address of /metrics and /healthz (host:port).
    #[arg(long, default_value = "0.0.0.0:8087")]
    metrics_listen: String,
    /// Where node groups come from: the embedded simulated EKS, or EKS managed node groups on AWS.
    #[arg(long, value_enum, default_value_t = Backend::Sim)]
    backend: Backend,
    /// Scenario YAML for the simulated EKS (default: the built-in scenario).
    #[arg(long, value_name = "FILE")]
    sim_file: Option<PathBuf>,
    /// aws: configuration YAML (cluster, region, node group globs, prices, refresh interval, options).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// aws: the EKS cluster's name (overrides the config file).
    #[arg(long)]
    cluster: Option<String>,
    /// aws: the region (overrides the config file and the SDK's own resolution).
    #[arg(long)]
    region: Option<String>,
    /// aws: the SQS queue EventBridge sends Spot interruption warnings, rebalance recommendations, scheduled
    /// changes and state changes to, by URL or name (overrides `interruptionQueue:` in the config file).
    #[arg(long, value_name = "URL")]
    interruption_queue: Option<String>,
    /// Server certificate (PEM); enables TLS.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Server private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// CA (PEM) that must have signed client certificates: enables mutual TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// How often the TLS files are checked for changes (a renewed certificate is served without a restart).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    tls_reload_interval: Duration,
    /// Serve gRPC in plaintext on a non-loopback address (refused without it: anyone who can reach the port
    /// could resize node groups).
    #[arg(long)]
    insecure: bool,
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// Whether every address `listen` resolves to is a loopback one; `None` when it does not resolve (binding
/// then says what is wrong with it).
fn loopback(listen: &str) -> Option<bool> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = listen.to_socket_addrs().ok()?.collect();
    Some(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    Sim,
    Aws,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    telemetry::init(args.log_format);
    ekscale::tls::install_crypto_provider();
    if args.tls_cert.is_none() && !args.insecure && loopback(&args.listen) == Some(false) {
        anyhow::bail!(
            "refusing to serve gRPC without TLS on --listen {}: give --tls-cert and --tls-key, listen on a \
             loopback address, or pass --insecure",
            args.listen
        );
    }

    let metrics = Arc::new(ProviderMetrics::default());
    let backend: Arc<dyn NodeGroupBackend> = match args.backend {
        Backend::Sim => {
            if args.config.is_some() || args.cluster.is_some() || args.region.is_some() {
                bail!(
                    "--config, --cluster and --region are for --backend aws; the sim reads --sim-file"
                );
            }
            if args.interruption_queue.is_some() {
                bail!(
                    "--interruption-queue is for --backend aws: the simulated EKS plays its scenario's \
                     instanceEvents instead"
                );
            }
            let (scenario, source) = match &args.sim_file {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let scenario = Scenario::parse(&text)
                        .with_context(|| format!("loading {}", path.display()))?;
                    (scenario, path.display().to_string())
                }
                None => (Scenario::built_in(), "built-in".to_string()),
            };
            tracing::info!(
                backend = "sim",
                scenario = source,
                cluster = scenario.cluster,
                node_groups = scenario.node_groups.len(),
                "serving the embedded simulated EKS: no AWS account is used"
            );
            Arc::new(SimulatedEks::new(scenario, Clock::real()))
        }
        Backend::Aws => aws_backend(&args, &metrics).await?,
    };
    let tls = args
        .tls_cert
        .clone()
        .zip(args.tls_key.clone())
        .map(|(cert, key)| TlsFiles {
            cert,
            key,
            client_ca: args.tls_client_ca.clone(),
            reload_interval: args.tls_reload_interval,
        });

    let grpc = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let http = TcpListener::bind(&args.metrics_listen)
        .await
        .with_context(|| format!("--metrics-listen {}", args.metrics_listen))?;
    let grpc_addr = grpc.local_addr()?;
    // Handlers go in before "listening" is said: a SIGTERM right after must drain, not kill.
    let shutdown = shutdown_signal()?;
    tracing::info!(
        grpc = %grpc_addr,
        metrics = %http.local_addr()?,
        tls = tls.is_some(),
        mtls = args.tls_client_ca.is_some(),
        "listening; try: grpcurl {}{grpc_addr} list",
        if tls.is_some() { "" } else { "-plaintext " },
    );

    let (stop, stopped) = watch::channel(false);
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down");
        let _ = stop.send(true);
    });

    let router = ekscale::provider::http_router(metrics.clone(), backend.clone());
    let http_server = tokio::spawn(ekscale::http::serve(
        http,
        router,
        until_stopped(stopped.clone()),
    ));
    provider::serve(grpc, backend, metrics, tls.as_ref(), until_stopped(stopped)).await?;
    http_server.await??;
    tracing::info!("stopped");
    Ok(())
}

/// EKS managed node groups on AWS: the config (file and flags) checked, then the node groups read once before
/// the first RPC is served.
#[cfg(feature = "aws")]
async fn aws_backend(
    args: &Args,
    metrics: &Arc<ProviderMetrics>,
) -> anyhow::Result<Arc<dyn NodeGroupBackend>> {
    use ekscale::cloud::aws::AwsBackend;
    use ekscale::cloud::aws::AwsConfig;
    if args.sim_file.is_some() {
        bail!("--sim-file is for --backend sim");
    }
    let text = match &args.config {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => String::new(),
    };
    let mut config =
        AwsConfig::load(&text, args.cluster.clone(), args.region.clone()).map_err(|e| {
            let source = args
                .config
                .as_ref()
                .map_or("config".into(), |p| p.display().to_string());
            anyhow::anyhow!("{source}: {e}")
        })?;
    if let Some(queue) = args.interruption_queue.clone() {
        config = config.with_interruption_queue(queue)?;
    }
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(region) = &config.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    let sdk = loader.load().await;
    let backend = AwsBackend::new(config, &sdk, metrics.clone());
    backend.refresh().await.with_context(|| {
        format!(
            "reading the node groups of EKS cluster {}",
            backend.cluster()
        )
    })?;
    // Groups in flux are re-read between refreshes, for as long as the process serves.
    backend.watch_flux();
    // What EventBridge says of the instances, recorded as it comes, for as long as the process serves.
    let queue = backend.watch_interruptions(&sdk).map(|_| ());
    tracing::info!(
        backend = "aws",
        cluster = backend.cluster(),
        region = sdk.region().map(|r| r.to_string()),
        node_groups = backend.node_groups().len(),
        interruption_queue = queue.is_some(),
        "serving EKS managed node groups"
    );
    Ok(Arc::new(backend))
}

/// A build without the `aws` feature has no AWS backend: say how to get one rather than fail later.
#[cfg(not(feature = "aws"))]
async fn aws_backend(
    _args: &Args,
    _metrics: &Arc<ProviderMetrics>,
) -> anyhow::Result<Arc<dyn NodeGroupBackend>> {
    bail!(
        "--backend aws: this build leaves the AWS backend out; build with `cargo build --release --features aws` \
         (deploy/Dockerfile does)"
    )
}

/// A future that resolves on SIGINT or SIGTERM; both handlers are installed when this returns.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = term.recv() => {}
        }
    })
}
