//! ekscale-autoscaler: the companion autoscaler. Parsing and wiring only: the flags and what each command does
//! live in the library (`ekscale::autoscaler::control::flags`, `ekscale::autoscaler::control::controller`).

use clap::{Args, Parser, Subcommand};
use ekscale::autoscaler::control::{self, Failure};
use ekscale::autoscaler::control::{RunArgs, SimulateArgs};
use ekscale::demo::{self, Script};
use ekscale::telemetry::{self, LogFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc: a long-running loop over a 2 GB cluster view fragmented glibc's free lists until a 100,000-node
/// loop took half again as long as the first (see Cargo.toml); mimalloc keeps steady loops at the first's pace.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Disruption budgets, expiry and grace periods for the script's day (over the script's own
    /// `disruption:`), as `run` and `simulate` take them.
    #[arg(long, value_name = "FILE")]
    disruption_config: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.command {
        Command::Demo(_) => "warn",
        _ => "info",
    };
    telemetry::init_at(cli.log_format, level);
    ekscale::tls::install_crypto_provider();
    let result = match cli.command {
        Command::Simulate(args) => control::simulate_blocking(*args),
        Command::Run(args) => control::run_blocking(*args),
        Command::Demo(args) => demo(args),
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

fn demo(args: DemoArgs) -> Result<(), Failure> {
    if !args.speed.is_finite() || args.speed < 0.0 {
        return Err(Failure::Usage(format!(
            "--speed {}: give simulated seconds per real second, 0 or more",
            args.speed
        )));
    }
    // The built-in day comes with a second one, played with consolidation off and on, a third, with
    // disruption control, and a fourth, with leaving nodes handled and ignored; a user's script is played as
    // it is.
    let (mut script, second_day, third_day, fourth_day) = match &args.scenario {
        Some(path) => {
            let script = Script::read(path)
                .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
            (script, None, None, None)
        }
        None => (
            Script::built_in(),
            Some(Script::second_day()),
            Some(Script::third_day()),
            Some(Script::fourth_day()),
        ),
    };
    if let Some(path) = &args.disruption_config {
        let config = control::read_disruption(path).map_err(|e| Failure::Usage(e.to_string()))?;
        script.disruption = Some(Arc::new(config));
    }
    let options = demo::Options {
        script,
        second_day,
        third_day,
        fourth_day,
        speed: args.speed,
        report: args.report.clone(),
        seed: args.seed,
    };
    let (_, summary) = demo::run_blocking(options).map_err(|e| Failure::Loop(e.to_string()))?;
    if let Some(path) = &args.report {
        println!("report: {}", path.display());
    }
    // The summary ends with the line scripts read: it stays the last.
    print!("\n{summary}");
    Ok(())
}
