//! ekscale-autoscaler: the companion autoscaler. Its flags are settled here, with cluster-autoscaler's names
//! and defaults where the meaning is the same; the loop behind them is still being built.

use clap::{Args, Parser, Subcommand, ValueEnum};
use ekscale::telemetry::{self, LogFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    Run(RunArgs),
    /// One RunOnce over a cluster snapshot; nothing is changed anywhere.
    Simulate(SimulateArgs),
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
    #[arg(long, value_enum, default_value_t = Expander::LeastWaste)]
    expander: Expander,
    /// Most nodes in all node groups together; 0 means no limit.
    #[arg(long, default_value_t = 0)]
    max_nodes_total: u32,
    #[arg(long, default_value_t = 1000)]
    max_nodes_per_scaleup: u32,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    max_nodegroup_binpacking_duration: Duration,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    scale_down_enabled: bool,
    #[arg(long, default_value_t = 0.5)]
    scale_down_utilization_threshold: f64,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    scale_down_unneeded_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    scale_down_delay_after_add: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    max_node_provision_time: Duration,
    /// Pods with a priority below this are expendable: never a reason to scale up.
    #[arg(long, default_value_t = -10, allow_negative_numbers = true)]
    expendable_pods_priority_cutoff: i32,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Expander {
    LeastWaste,
    MostPods,
    Price,
    Priority,
    Random,
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
    /// Address of /metrics, /health-check and /snapshotz.
    #[arg(long, default_value = ":8085")]
    address: String,
    #[arg(long, action = clap::ArgAction::Set)]
    leader_elect: Option<bool>,
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
    /// How many simulated seconds pass per real second.
    #[arg(long, default_value_t = 600.0)]
    speed: f64,
    /// Write a self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Your own scenario instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    telemetry::init(cli.log_format);
    let name = match cli.command {
        Command::Run(_) => "run",
        Command::Simulate(_) => "simulate",
        Command::Demo(_) => "demo",
    };
    eprintln!(
        "ekscale-autoscaler {name}: the companion's RunOnce loop is not built yet; \
         meanwhile run `ekscale-provider` and point cluster-autoscaler (--cloud-provider=externalgrpc) at it"
    );
    ExitCode::from(2)
}
