//! ekscale-autoscaler: the companion autoscaler. Flags with cluster-autoscaler's names and defaults where the
//! meaning is the same; the loop lives in the library (`ekscale::autoscaler`).

use clap::{Args, Parser, Subcommand, ValueEnum};
use ekscale::autoscaler::actuation::Pacing;
use ekscale::autoscaler::backoff::BackoffSettings;
use ekscale::autoscaler::client::{ProviderClient, ProviderConfig};
use ekscale::autoscaler::cluster::{ClusterSource, Snapshot};
use ekscale::autoscaler::drain::Rules;
use ekscale::autoscaler::events::Publisher;
use ekscale::autoscaler::expander::{self, Expander, Strategy};
use ekscale::autoscaler::headroom;
use ekscale::autoscaler::kube::{Kube, RateLimits};
use ekscale::autoscaler::last_loop::{LastLoop, Liveness};
use ekscale::autoscaler::leader::{Election, Elector};
use ekscale::autoscaler::metrics::AutoscalerMetrics;
use ekscale::autoscaler::runonce::{RunOnce, Settings};
use ekscale::autoscaler::scaledown;
use ekscale::autoscaler::scaleup::Limits;
use ekscale::demo::{self, script::Script};
use ekscale::telemetry::{self, LogFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Companion autoscaler for EKS, over an externalgrpc provider"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Watch the cluster and scale it, through the provider.
    Run(Box<RunArgs>),
    /// One RunOnce over a cluster snapshot; nothing is changed anywhere.
    Simulate(Box<SimulateArgs>),
    /// Play a scripted day on the built-in simulated EKS.
    Demo(DemoArgs),
}

#[derive(Args, Debug)]
struct ProviderArgs {
    /// The provider's gRPC address (host:port), as cluster-autoscaler's cloud-config `address`.
    #[arg(long, value_name = "ADDR")]
    provider: String,
    /// Client certificate (PEM) for TLS to the provider.
    #[arg(long, value_name = "FILE", requires = "provider_tls_key")]
    provider_tls_cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "provider_tls_cert")]
    provider_tls_key: Option<PathBuf>,
    /// CA (PEM) that signed the provider's certificate.
    #[arg(long, value_name = "FILE")]
    provider_tls_ca: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct DecisionArgs {
    /// A strategy or a comma-separated chain: least-waste, most-pods, least-nodes, price, priority, random.
    #[arg(long, default_value = "least-waste", value_delimiter = ',', value_parser = Strategy::from_str)]
    expander: Vec<Strategy>,
    /// The priority expander's `{priority: [regex, ...]}` YAML (cluster-autoscaler's ConfigMap value).
    #[arg(long, value_name = "FILE")]
    expander_priority_config: Option<PathBuf>,
    /// Headroom to keep free ahead of demand: a YAML file with a `headroom:` list of policies (as in the
    /// demo script; see README).
    #[arg(long, value_name = "FILE")]
    headroom_config: Option<PathBuf>,
    /// Most nodes in all node groups together; 0 means no limit.
    #[arg(long, default_value_t = 0)]
    max_nodes_total: u64,
    /// MIN:MAX cores in the cluster.
    #[arg(long, default_value = "0:320000", value_parser = min_max)]
    cores_total: (u64, u64),
    /// MIN:MAX GiB of memory in the cluster.
    #[arg(long, default_value = "0:6400000", value_parser = min_max)]
    memory_total: (u64, u64),
    #[arg(long, default_value_t = 1000)]
    max_nodes_per_scaleup: u64,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    max_nodegroup_binpacking_duration: Duration,
    /// Split scale-ups across node groups that look alike (zones of one shape, say).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    balance_similar_node_groups: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    scale_down_enabled: bool,
    /// Nodes whose requests are at most this share of allocatable (cpu and memory) are candidates.
    #[arg(long, default_value_t = 0.5, value_parser = fraction)]
    scale_down_utilization_threshold: f64,
    /// The same for GPU nodes, over GPUs alone.
    #[arg(long, default_value_t = 0.5, value_parser = fraction)]
    scale_down_gpu_utilization_threshold: f64,
    /// How long a node must be unneeded before it is removed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    scale_down_unneeded_time: Duration,
    /// How long an unready node must be unneeded before it is removed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20m")]
    scale_down_unready_time: Duration,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    scale_down_unready_enabled: bool,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    scale_down_delay_after_add: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    scale_down_delay_after_delete: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3m")]
    scale_down_delay_after_failure: Duration,
    /// Most node deletions in progress at once.
    #[arg(long, default_value_t = 10)]
    max_scale_down_parallelism: usize,
    /// Most deletions of nodes with pods to evict in progress at once.
    #[arg(long, default_value_t = 1)]
    max_drain_parallelism: usize,
    /// The most grace an evicted pod gets, in seconds.
    #[arg(long, default_value_t = 600)]
    max_graceful_termination_sec: u64,
    /// How long refused evictions are retried before the node is given back.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2m")]
    max_pod_eviction_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    node_delete_delay_after_taint: Duration,
    /// Leave DaemonSet (and mirror) pods out of utilization.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    ignore_daemonsets_utilization: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    skip_nodes_with_system_pods: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    skip_nodes_with_local_storage: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    skip_nodes_with_custom_controller_pods: bool,
    /// kube-system pods without a PDB older than this no longer keep their node (upstream's spelling).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1h")]
    blocking_system_pod_distruption_timeout: Duration,
    /// Soft taints (DeletionCandidateOfClusterAutoscaler) added or removed per loop; 0 turns them off.
    #[arg(long, default_value_t = 10)]
    max_bulk_soft_taint_count: usize,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    max_node_provision_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    max_node_startup_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    initial_node_group_backoff_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    max_node_group_backoff_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3h")]
    node_group_backoff_reset_timeout: Duration,
    /// Wait this long after a pod is created before adding a node for it (`run` only).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    new_pod_scale_up_delay: Duration,
    /// Pods with a priority below this are expendable: never a reason to scale up.
    #[arg(long, default_value_t = -10, allow_negative_numbers = true)]
    expendable_pods_priority_cutoff: i32,
}

/// cluster-autoscaler's `--address`: `host:port`, or `:port` for every interface.
fn listen_address(text: &str) -> Result<std::net::SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    full.parse()
        .map_err(|_| format!("{text:?}: expected host:port or :port"))
}

/// A threshold between 0 and 1.
fn fraction(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("{text} is not between 0 and 1"));
    }
    Ok(value)
}

fn min_max(text: &str) -> Result<(u64, u64), String> {
    let (min, max) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?}: expected MIN:MAX"))?;
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("{text:?}: {s:?} is not a whole number"))
    };
    let (min, max) = (number(min)?, number(max)?);
    if min > max {
        return Err(format!("{text:?}: MIN is above MAX"));
    }
    Ok((min, max))
}

impl DecisionArgs {
    /// The loop's settings; `live` for `run` (acting unless dry, waiting for new pods), not for `simulate`.
    /// The loop's settings; `live` for `run` (waiting for new pods), `act` unless dry, `cluster` when the
    /// cluster is a live one (where requested nodes register, so those that never do are removed).
    fn settings(&self, live: bool, act: bool, cluster: bool) -> Result<Settings, String> {
        let names: Vec<String> = self.expander.iter().map(|s| s.to_string()).collect();
        let expander = Expander {
            chain: expander::parse_chain(&names.join(","))?,
            priorities: self.expander_priority_config.clone(),
        };
        if expander.chain.contains(&Strategy::Priority) {
            let path = expander
                .priorities
                .as_ref()
                .ok_or("--expander priority needs --expander-priority-config FILE")?;
            expander::read_priorities(path).map_err(|e| e.to_string())?;
        }
        Ok(Settings {
            expander,
            limits: Limits {
                max_nodes_total: self.max_nodes_total,
                max_cores: self.cores_total.1,
                max_memory_gib: self.memory_total.1,
                min_cores: self.cores_total.0,
                min_memory_gib: self.memory_total.0,
                max_nodes_per_scaleup: self.max_nodes_per_scaleup,
                max_binpacking_duration: self.max_nodegroup_binpacking_duration,
                balance_similar_node_groups: self.balance_similar_node_groups,
            },
            expendable_pods_priority_cutoff: self.expendable_pods_priority_cutoff,
            max_node_provision_time: self.max_node_provision_time,
            max_node_startup_time: self.max_node_startup_time,
            backoff: BackoffSettings {
                initial: self.initial_node_group_backoff_duration,
                max: self.max_node_group_backoff_duration,
                reset: self.node_group_backoff_reset_timeout,
            },
            act,
            // Over a snapshot, requested nodes never register: nothing to remove.
            remove_unregistered: cluster,
            wait_for_new_pods: live,
            new_pod_scale_up_delay: self.new_pod_scale_up_delay,
            headroom: match &self.headroom_config {
                Some(path) => headroom::read(path).map_err(|e| e.to_string())?,
                None => Vec::new(),
            },
            scale_down: scaledown::Settings {
                enabled: self.scale_down_enabled,
                rules: Rules {
                    skip_system_pods: self.skip_nodes_with_system_pods,
                    skip_local_storage: self.skip_nodes_with_local_storage,
                    skip_custom_controllers: self.skip_nodes_with_custom_controller_pods,
                    system_pod_timeout: self.blocking_system_pod_distruption_timeout,
                    expendable_cutoff: self.expendable_pods_priority_cutoff,
                },
                utilization_threshold: self.scale_down_utilization_threshold,
                gpu_utilization_threshold: self.scale_down_gpu_utilization_threshold,
                unneeded_time: self.scale_down_unneeded_time,
                unready_time: self.scale_down_unready_time,
                ignore_daemonsets_utilization: self.ignore_daemonsets_utilization,
                unready_enabled: self.scale_down_unready_enabled,
                delay_after_add: self.scale_down_delay_after_add,
                delay_after_delete: self.scale_down_delay_after_delete,
                delay_after_failure: self.scale_down_delay_after_failure,
                max_parallelism: self.max_scale_down_parallelism,
                max_drain_parallelism: self.max_drain_parallelism,
                pacing: Pacing {
                    delay_after_taint: self.node_delete_delay_after_taint,
                    max_pod_eviction_time: self.max_pod_eviction_time,
                    max_graceful_termination: Duration::from_secs(
                        self.max_graceful_termination_sec,
                    ),
                },
                max_soft_taints: self.max_bulk_soft_taint_count,
                // `simulate` lists every node that would go; `run` paces itself.
                timers_elapsed: !live,
            },
        })
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    provider: ProviderArgs,
    #[command(flatten)]
    decisions: DecisionArgs,
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    scan_interval: Duration,
    /// Address of /metrics, /health-check and /snapshotz (`:8085` is every interface).
    #[arg(long, default_value = ":8085", value_parser = listen_address)]
    address: std::net::SocketAddr,
    /// /health-check fails when no loop ran for this long...
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    max_inactivity: Duration,
    /// ...or no loop succeeded for this long...
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    max_failing_time: Duration,
    /// ...or, before the first success, since the start.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20m")]
    max_startup_time: Duration,
    /// Hold a Lease so that one replica acts (default: on with a live cluster, off with --snapshot).
    #[arg(long, action = clap::ArgAction::Set)]
    leader_elect: Option<bool>,
    /// Requests per second to the API server, on average...
    #[arg(long, default_value_t = 5.0)]
    kube_client_qps: f64,
    /// ...and at once.
    #[arg(long, default_value_t = 10)]
    kube_client_burst: u32,
    /// Where the status ConfigMap (`ekscale-autoscaler-status`) is written.
    #[arg(long, default_value = "kube-system")]
    namespace: String,
    #[arg(long, default_value = "ekscale-autoscaler")]
    leader_elect_resource_name: String,
    #[arg(long, default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    leader_elect_lease_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    leader_elect_renew_deadline: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    leader_elect_retry_period: Duration,
    /// Use a `kubectl get nodes,pods,pdb -A -o json` snapshot as the cluster.
    #[arg(long, value_name = "FILE")]
    snapshot: Option<PathBuf>,
    /// Plan and report, never act.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    #[command(flatten)]
    provider: ProviderArgs,
    #[command(flatten)]
    decisions: DecisionArgs,
    #[arg(long, value_name = "FILE")]
    snapshot: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Table,
    Json,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// How many simulated seconds pass per real second; 0 plays as fast as the machine goes.
    #[arg(long, default_value_t = 300.0)]
    speed: f64,
    /// Write a self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Your own demo script (node groups and a timeline of workloads) instead of the built-in one;
    /// src/demo/demo.yaml is an example.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Seeds the simulated EKS's instance ids.
    #[arg(long)]
    seed: Option<u64>,
}

impl ProviderArgs {
    fn client(&self) -> Result<ProviderClient, String> {
        let config = ProviderConfig {
            identity: self
                .provider_tls_cert
                .clone()
                .zip(self.provider_tls_key.clone()),
            ca: self.provider_tls_ca.clone(),
            ..ProviderConfig::plaintext(&self.provider)
        };
        ProviderClient::new(&config).map_err(|e| e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.command {
        Command::Demo(_) => "warn",
        _ => "info",
    };
    telemetry::init_at(cli.log_format, level);
    ekscale::tls::install_crypto_provider();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let result = match cli.command {
        Command::Simulate(args) => runtime.block_on(simulate(*args)),
        Command::Run(args) => runtime.block_on(run(*args)),
        Command::Demo(args) => runtime.block_on(demo(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("ekscale-autoscaler: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Loop(message)) => {
            eprintln!("ekscale-autoscaler: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn demo(args: DemoArgs) -> Result<(), Failure> {
    if !args.speed.is_finite() || args.speed < 0.0 {
        return Err(Failure::Usage(format!(
            "--speed {}: give simulated seconds per real second, 0 or more",
            args.speed
        )));
    }
    let script = match &args.scenario {
        Some(path) => {
            Script::read(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?
        }
        None => Script::built_in(),
    };
    let options = demo::Options {
        script,
        speed: args.speed,
        report: args.report.clone(),
        seed: args.seed,
    };
    let (_, summary) = demo::run(options)
        .await
        .map_err(|e| Failure::Loop(e.to_string()))?;
    print!("\n{summary}");
    if let Some(path) = &args.report {
        println!("  report: {}", path.display());
    }
    Ok(())
}

/// Bad input (exit 2) or a loop that could not decide (exit 1).
enum Failure {
    Usage(String),
    Loop(String),
}

async fn simulate(args: SimulateArgs) -> Result<(), Failure> {
    let settings = args
        .decisions
        .settings(false, false, false)
        .map_err(Failure::Usage)?;
    let client = args.provider.client().map_err(Failure::Usage)?;
    let snapshot = Snapshot::read(&args.snapshot).map_err(|e| Failure::Usage(e.to_string()))?;
    let view = snapshot
        .view()
        .await
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let mut once = RunOnce::new(client, settings);
    let now = view.now.unwrap_or_else(SystemTime::now);
    let status = once
        .run(&view, now)
        .await
        .map_err(|e| Failure::Loop(e.to_string()))?;
    match args.format {
        Format::Json => println!("{}", status.to_json()),
        Format::Table => print!("{}", status.to_table()),
    }
    Ok(())
}

/// The loop: over the live cluster (kube-rs watches; `--kubeconfig` or in-cluster) or a `--snapshot`, one
/// RunOnce every scan interval, and early when a pod turns Unschedulable. A snapshot cannot be changed, so
/// over one scale-down is reported, never carried out.
async fn run(args: RunArgs) -> Result<(), Failure> {
    let client = args.provider.client().map_err(Failure::Usage)?;
    let mut election = None;
    let mut publisher = None;
    let (source, kube): (Arc<dyn ClusterSource>, Option<Arc<Kube>>) = match &args.snapshot {
        Some(path) => {
            if args.leader_elect == Some(true) {
                return Err(Failure::Usage(
                    "--leader-elect needs a live cluster; a snapshot has no Lease to hold".into(),
                ));
            }
            let snapshot = Snapshot::read(path).map_err(|e| Failure::Usage(e.to_string()))?;
            (Arc::new(snapshot), None)
        }
        None => {
            let config = kube_config(args.kubeconfig.as_deref()).await?;
            if args.leader_elect != Some(false) {
                election = Some(args.election(config.clone())?);
            }
            let limits = RateLimits {
                qps: args.kube_client_qps,
                burst: args.kube_client_burst,
            };
            if !args.dry_run {
                // Its own rate-limited client, so that events never hold up the loop's own requests.
                let client = ekscale::autoscaler::kube::client(config.clone(), limits)
                    .map_err(|e| Failure::Usage(e.to_string()))?;
                publisher = Some(Arc::new(Publisher::new(
                    client,
                    &args.namespace,
                    &identity(),
                )));
            }
            let kube = Kube::connect(config, limits)
                .await
                .map_err(|e| Failure::Loop(e.to_string()))?;
            let kube = Arc::new(kube);
            (kube.clone(), Some(kube))
        }
    };
    let settings = args
        .decisions
        .settings(true, !args.dry_run, kube.is_some())
        .map_err(Failure::Usage)?;
    let mut once = RunOnce::new(client, settings);
    if !args.dry_run {
        once = once.acting_on(source.clone());
    }

    // /metrics, /health-check and /snapshotz, until the loop stops.
    let metrics = Arc::new(AutoscalerMetrics::default());
    let liveness = Liveness {
        max_inactivity: args.max_inactivity,
        max_failing_time: args.max_failing_time,
        max_startup_time: args.max_startup_time,
    };
    let last = Arc::new(LastLoop::new(liveness, SystemTime::now()));
    let listener = tokio::net::TcpListener::bind(args.address)
        .await
        .map_err(|e| Failure::Usage(format!("--address {}: {e}", args.address)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::Loop(e.to_string()))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = ekscale::autoscaler::http::router(metrics.clone(), last.clone());
    let server = tokio::spawn(ekscale::http::serve(listener, router, async {
        let _ = stopped.await;
    }));
    tracing::info!(%address, dry_run = args.dry_run, "listening");
    let mut leading = match election {
        Some(elector) => Some(lead(elector, &last).await?),
        None => None,
    };

    let mut publishing = None;
    let mut ticks = tokio::time::interval(args.scan_interval);
    let signal = |kind| tokio::signal::unix::signal(kind).map_err(|e| Failure::Loop(e.to_string()));
    let mut term = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut interrupt = signal(tokio::signal::unix::SignalKind::interrupt())?;
    loop {
        // A signal is taken between loops, never in the middle of one.
        let unschedulable = async {
            match &kube {
                Some(kube) => kube.unschedulable_pod().await,
                None => std::future::pending().await,
            }
        };
        let lost = async {
            match &mut leading {
                Some(leading) => {
                    let _ = leading.wait_for(|l| !l).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = ticks.tick() => {}
            _ = lost => {
                // Another replica may act from now on: stop at once, as cluster-autoscaler does.
                let _ = stop.send(());
                return Err(Failure::Loop(format!(
                    "lost the lease {}/{}; stopping",
                    args.leader_elect_resource_namespace, args.leader_elect_resource_name
                )));
            }
            _ = unschedulable => {
                // A moment for the rest of a burst to arrive, as cluster-autoscaler's frequent loops do.
                tokio::time::sleep(Duration::from_secs(1)).await;
                ticks.reset();
            }
            _ = term.recv() => break,
            _ = interrupt.recv() => break,
        }
        let view = source
            .view()
            .await
            .map_err(|e| Failure::Loop(e.to_string()))?;
        let now = SystemTime::now();
        match once.run(&view, now).await {
            Ok(status) => {
                // Shared as it is with /snapshotz and the publisher: neither copies it.
                let status = Arc::new(status);
                metrics.observe_loop(&view, &status, !args.dry_run, now);
                last.succeeded(&view, status.clone(), now);
                log(&status, args.dry_run);
                // Events and the status ConfigMap are written beside the loop; while the last loop's are
                // still being written (the client's rate limit), this loop's are skipped, not queued.
                if let Some(publisher) = &publisher
                    && publishing
                        .as_ref()
                        .is_none_or(|p: &tokio::task::JoinHandle<()>| p.is_finished())
                {
                    let (publisher, status) = (publisher.clone(), status.clone());
                    publishing = Some(tokio::spawn(async move {
                        for problem in publisher.publish(&status, now).await {
                            tracing::warn!(%problem, "events and status");
                        }
                    }));
                }
            }
            Err(e) => {
                metrics.observe_failure("cloudProviderError", now);
                last.failed(&e.to_string(), now);
                tracing::warn!(error = %e, "loop failed; nothing was done");
            }
        }
    }
    let _ = stop.send(());
    let _ = server.await;
    Ok(())
}

impl RunArgs {
    /// The Lease election for this replica; its identity is the pod's (or host's) name and the process id.
    fn election(&self, config: kube::Config) -> Result<Elector, Failure> {
        let election = Election {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            ..Election::new(
                &self.leader_elect_resource_namespace,
                &self.leader_elect_resource_name,
                &identity(),
            )
        };
        let client = kube::Client::try_from(config).map_err(|e| Failure::Usage(e.to_string()))?;
        Ok(Elector::new(client, election))
    }
}

/// Who this replica is, in the Lease and in Events: the pod's (or host's) name and the process id.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "ekscale-autoscaler".into());
    format!("{host}_{}", std::process::id())
}

/// Waits until this replica holds the lease (a standby meanwhile), then keeps renewing it in the
/// background; the watch turns false the moment the lease is lost.
async fn lead(
    mut elector: Elector,
    last: &LastLoop,
) -> Result<tokio::sync::watch::Receiver<bool>, Failure> {
    let retry = elector.retry_period();
    last.standby(true, SystemTime::now());
    tracing::info!("waiting for the lease");
    while !elector.try_once(SystemTime::now()).await {
        tokio::time::sleep(retry).await;
    }
    last.standby(false, SystemTime::now());
    tracing::info!("holding the lease: this replica acts");
    let (leading, watch) = tokio::sync::watch::channel(true);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(retry).await;
            let held = elector.try_once(SystemTime::now()).await;
            if let Err(e) = elector.check(SystemTime::now()) {
                tracing::error!(error = %e, "leader election");
                let _ = leading.send(false);
                return;
            }
            if !held {
                tracing::error!("another replica holds the lease");
                let _ = leading.send(false);
                return;
            }
        }
    });
    Ok(watch)
}

/// The kube config: `--kubeconfig FILE`, or the environment's (KUBECONFIG, ~/.kube/config, in-cluster).
async fn kube_config(path: Option<&std::path::Path>) -> Result<kube::Config, Failure> {
    match path {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Failure::Usage(format!("--kubeconfig {}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| Failure::Usage(format!("--kubeconfig {}: {e}", path.display())))
        }
        None => kube::Config::infer().await.map_err(|e| {
            Failure::Usage(format!(
                "no cluster to watch ({e}): give --kubeconfig FILE, run in a pod, or use --snapshot FILE"
            ))
        }),
    }
}

/// One loop's decisions in the log.
fn log(status: &ekscale::autoscaler::status::Status, dry_run: bool) {
    for s in &status.scale_up {
        tracing::info!(node_group = %s.node_group, delta = s.delta, pods = s.pods.len(), reason = %s.reason, error = ?s.error, "scale-up");
    }
    for s in &status.scale_down {
        tracing::info!(node = %s.node, node_group = %s.node_group, reason = %s.reason, detail = %s.detail, "scale-down");
    }
    for d in &status.deletions {
        tracing::info!(node = %d.node, node_group = %d.node_group, state = %d.state, detail = %d.detail, "deletion");
    }
    for e in &status.errors {
        tracing::warn!(error = %e, "loop problem");
    }
    tracing::info!(
        pending_helped = status.scale_up.iter().map(|s| s.pods.len()).sum::<usize>(),
        no_scale_up = status.no_scale_up.len(),
        unneeded = status.scale_down.len(),
        fargate = status.fargate.len(),
        elapsed_ms = status.elapsed_ms,
        dry_run,
        "loop done"
    );
}
