//! `ekscale-autoscaler demo`: the provider in-process on a simulated EKS, the simulated cluster around it,
//! and the companion's loop acting on both, while a script plays a day of workloads in accelerated time.
//! Everything runs over loopback gRPC as in production; only the clock is the simulator's.

pub mod chart; // line charts over simulated time, as SVG
pub mod compare; // the second day, with consolidation off and on: what each cost, what was replaced
pub mod record; // what the demo saw: samples, the decision log, summary facts
pub mod report; // the HTML page with SVG charts
pub mod script; // the demo file: scenario, timeline, headroom

use crate::autoscaler::client::{ClientError, ProviderClient, ProviderConfig};
use crate::autoscaler::cluster::ClusterSource;
use crate::autoscaler::core::runonce::RunOnce;
use crate::autoscaler::scaledown::consolidation::planner::Mode;
use crate::autoscaler::settings::Settings;
use crate::clock::Clock;
use crate::cloud::SimulatedEks;
use crate::k8s::capacity_buffer::Scalable;
use crate::k8s::objects;
use crate::provider::metrics::ProviderMetrics;
use crate::sim::SimCluster;
use indicatif::{ProgressBar, ProgressStyle};
use record::{Arrival, Entry, Record};
use script::{Action, Script};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Options {
    pub script: Script,
    /// A second day, played after the first with consolidation off and then on; `None` plays one day.
    pub second_day: Option<Script>,
    /// Simulated seconds per real second; 0 plays as fast as the machine goes.
    pub speed: f64,
    pub report: Option<PathBuf>,
    /// Overrides the scenario's seed (instance ids).
    pub seed: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("starting the provider: {0}")]
    Provider(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the loop failed: {0}")]
    Loop(String),
    #[error("the simulated EKS: {0}")]
    Cloud(String),
    #[error("writing the report {path}: {source}")]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `hh:mm:ss` of simulated time.
pub fn hms(at: Duration) -> String {
    let s = at.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// [`run`] to completion on a new multi-thread runtime, for the binary (see
/// [`crate::autoscaler::control::controller::simulate_blocking`] for why it is here).
pub fn run_blocking(options: Options) -> Result<(Record, String), DemoError> {
    crate::autoscaler::control::controller::runtime().block_on(run(options))
}

/// Plays the script's day (printing progress and decisions as they happen), then the second day, if there is
/// one, with consolidation off and on; returns the first day's record and the summary of both, which ends
/// with the one-line `demo summary:` scripts read.
pub async fn run(options: Options) -> Result<(Record, String), DemoError> {
    let started = Instant::now();
    let Options {
        mut script,
        second_day,
        speed,
        report,
        seed,
    } = options;
    if let Some(seed) = seed {
        script.scenario.seed = seed;
    }
    let record = play(&script, Mode::Off, speed, true).await?;
    let mut text = summary(&record, script.duration, started.elapsed());
    let second = match second_day {
        Some(mut day) => {
            if let Some(seed) = seed {
                day.scenario.seed = seed;
            }
            let off = play(&day, Mode::Off, 0.0, false).await?;
            let on = play(&day, Mode::Replace, 0.0, false).await?;
            let day = compare::Comparison::new(off, on, &day);
            text.push_str(&day.summary());
            Some(day)
        }
        None => None,
    };
    text.push_str(&summary_line(&record));
    if let Some(path) = report {
        std::fs::write(&path, report::html(&record, second.as_ref(), &text))
            .map_err(|source| DemoError::Report { path, source })?;
    }
    Ok((record, text))
}

/// One day of `script` with consolidation in `mode`: the provider in-process on the script's simulated EKS,
/// the simulated cluster over it, and the loop acting on both, `speed` simulated seconds a real second (0:
/// as fast as it goes); `show` prints progress and decisions.
async fn play(script: &Script, mode: Mode, speed: f64, show: bool) -> Result<Record, DemoError> {
    let clock = Clock::manual();
    let provider = Provider::start(script, clock.clone()).await?;
    let config = ProviderConfig::plaintext(provider.addr.to_string());
    let client = ProviderClient::new(&config)?;
    let cluster = Arc::new(SimCluster::new(&config, clock.clone())?);
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        wait_for_new_pods: true,
        headroom: script.headroom.clone(),
        ..Settings::default()
    };
    settings.consolidation.mode = mode;
    let mut once = RunOnce::new(client.clone(), settings).acting_on(cluster.clone());
    cluster.create_buffers(script.buffers.clone());
    cluster.create_templates(script.templates.clone());
    let mut world = World {
        cluster: &cluster,
        backend: &provider.backend,
        deployments: BTreeMap::new(),
    };
    let mut record = prices(&client).await?;
    let bar = progress_bar(show, script.duration);
    let show = |entry: &Entry| {
        if !show {
            return;
        }
        let line = format!("[{}] {:<17} {}", hms(entry.at), entry.kind, entry.text);
        if bar.is_hidden() {
            println!("{line}");
        } else {
            bar.println(line);
        }
    };
    let mut next = 0;
    let mut at = Duration::ZERO;
    while at <= script.duration {
        let tick = Instant::now();
        while let Some(event) = script.timeline.get(next).filter(|e| e.at <= at) {
            next += 1;
            let what = world.apply(&event.action, &mut record, at)?;
            let text = match &event.say {
                Some(say) => format!("{say} ({what})"),
                None => what,
            };
            show(record.say(at, "timeline", text));
        }
        let view = (cluster.view().await).map_err(|e| DemoError::Loop(e.to_string()))?;
        let status = once.run(&view, cluster.now()).await;
        let status = status.map_err(|e| DemoError::Loop(e.to_string()))?;
        for entry in record.observe(at, &view, &status) {
            show(&entry);
        }
        bar.set_position(at.as_secs());
        bar.set_message(progress(&record, at));
        clock.advance(script.scan_interval);
        at += script.scan_interval;
        if speed > 0.0 {
            let budget = script.scan_interval.as_secs_f64() / speed;
            let spent = tick.elapsed().as_secs_f64();
            if budget > spent {
                tokio::time::sleep(Duration::from_secs_f64(budget - spent)).await;
            }
        }
    }
    bar.finish_and_clear();
    provider.stop().await;
    Ok(record)
}

/// The provider, in-process on the script's simulated EKS, served on a loopback port until stopped.
struct Provider {
    backend: Arc<SimulatedEks>,
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), crate::provider::ServeError>>,
}

impl Provider {
    async fn start(script: &Script, clock: Clock) -> Result<Provider, DemoError> {
        let backend = Arc::new(SimulatedEks::new(script.scenario.clone(), clock));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| DemoError::Provider(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| DemoError::Provider(e.to_string()))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::provider::serve(
            listener,
            backend.clone(),
            Arc::new(ProviderMetrics::default()),
            None,
            async {
                let _ = stopped.await;
            },
        ));
        Ok(Provider {
            backend,
            addr,
            stop,
            server,
        })
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}

/// What the timeline acts on: the simulated cluster, the simulated EKS, and the Deployments the workloads
/// stand for.
struct World<'a> {
    cluster: &'a SimCluster,
    backend: &'a SimulatedEks,
    /// Each workload owned by a ReplicaSet stands for a Deployment of its name, which buffers may follow.
    deployments: BTreeMap<String, Scalable>,
}

impl World<'_> {
    /// Plays one timeline event at `at`; returns what it did, for the log.
    fn apply(
        &mut self,
        action: &Action,
        record: &mut Record,
        at: Duration,
    ) -> Result<String, DemoError> {
        let cluster = self.cluster;
        match action {
            Action::Create(workload, pods) => {
                cluster.create_pods(pods.clone());
                if let Some(pod) = pods.first().filter(|_| workload.owner == "ReplicaSet") {
                    let deployment = Scalable {
                        api_group: "apps".into(),
                        kind: "Deployment".into(),
                        namespace: workload.namespace.clone(),
                        name: workload.name.clone(),
                        replicas: i32::try_from(pods.len()).unwrap_or(i32::MAX),
                        pod: Ok(pod.clone()),
                    };
                    cluster.scale(deployment.clone());
                    self.deployments.insert(workload.name.clone(), deployment);
                }
                record.arrivals.push(Arrival {
                    name: workload.name.clone(),
                    namespace: workload.namespace.clone(),
                    pods: pods.len(),
                    created: at,
                    all_running: None,
                });
                Ok(format!("+{} {} pod(s)", workload.count, workload.name))
            }
            Action::Delete(name) => {
                let prefix = format!("{name}-");
                cluster.delete_pods(|p| p.name.starts_with(&prefix));
                if let Some(deployment) = self.deployments.get_mut(name) {
                    deployment.replicas = 0;
                    cluster.scale(deployment.clone());
                }
                Ok(format!("{name} pods deleted"))
            }
            Action::Request(read) => {
                cluster.create_request(read.as_ref().clone());
                let request = &read.request;
                let pods: i32 = request.spec.pod_sets.iter().map(|s| s.count).sum();
                Ok(format!(
                    "ProvisioningRequest {} ({}) for {pods} pod(s)",
                    crate::k8s::provisioning_request::key(request),
                    request.spec.provisioning_class_name
                ))
            }
            Action::Capacity(change) => {
                (self.backend)
                    .set_available_capacity(&change.node_group, change.available)
                    .map_err(|e| DemoError::Cloud(e.to_string()))?;
                Ok(match change.available {
                    Some(n) => format!("{} can have {n} instance(s)", change.node_group),
                    None => format!("{} has capacity without limit", change.node_group),
                })
            }
        }
    }
}

fn progress_bar(show: bool, duration: Duration) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(duration.as_secs())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:20} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

/// The progress bar's message: the time, pending pods, nodes per group, the cost per hour.
fn progress(record: &Record, at: Duration) -> String {
    let last = record.samples.last().expect("observed");
    let nodes: Vec<String> = (record.groups.iter().zip(&last.nodes))
        .map(|(g, n)| format!("{g} {n}"))
        .collect();
    format!(
        "{} | pending {} | {} | ${:.2}/h",
        hms(at),
        last.pending,
        nodes.join(", "),
        last.ec2_cost + last.fargate_cost
    )
}

/// The node groups, and what a node of each costs per hour (the provider's pricing RPC).
async fn prices(client: &ProviderClient) -> Result<Record, ClientError> {
    client.refresh().await?;
    let mut groups = Vec::new();
    let mut prices = Vec::new();
    for group in client.node_groups().await?.iter() {
        let template = client.template(&group.id).await?;
        let price = match template.as_deref().map(objects::node_from_pb) {
            Some(Ok(template)) => {
                let price = client
                    .node_price(&template.name, &template.labels, 1.0)
                    .await?;
                price.unwrap_or(0.0)
            }
            _ => 0.0,
        };
        groups.push(group.id.clone());
        prices.push(price);
    }
    Ok(Record::new(groups, prices))
}

/// What the day came to, for people.
pub fn summary(record: &Record, day: Duration, took: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Summary: {} of simulated time in {:.1} s",
        humantime::format_duration(day),
        took.as_secs_f64()
    );
    let _ = writeln!(out, "  nodes added and removed per node group:");
    for (g, name) in record.groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "    {name:<10} +{} -{} (${:.4}/h a node)",
            record.added[g], record.removed[g], record.prices[g]
        );
    }
    let _ = writeln!(
        out,
        "  pods placed on EC2 nodes: {}; on Fargate: {}",
        record.ran_on_ec2.len(),
        record.fargate.len()
    );
    for run in record.fargate.values() {
        let _ = writeln!(
            out,
            "    {} on Fargate (profile {}): {}, ${:.4}/h",
            run.pod, run.profile, run.capacity, run.hourly_price
        );
    }
    let unplaced: Vec<_> = record
        .not_helped
        .iter()
        .filter(|(pod, _)| !crate::autoscaler::headroom::policy::is_virtual(pod))
        .collect();
    if unplaced.is_empty() {
        let _ = writeln!(out, "  every pod found a place");
    }
    for (pod, reasons) in unplaced {
        let _ = writeln!(out, "  never placed: {pod}");
        for (group, why) in reasons {
            let group = if group.is_empty() { "all" } else { group };
            let _ = writeln!(out, "    {group}: {why}");
        }
    }
    let _ = writeln!(out, "  time from creation to all pods running:");
    for a in &record.arrivals {
        let when = match a.all_running {
            Some(t) => humantime::format_duration(t - a.created).to_string(),
            None => "never, see above".into(),
        };
        let _ = writeln!(
            out,
            "    {}/{} ({} pods): {when}",
            a.namespace, a.name, a.pods
        );
    }
    for h in &record.headroom {
        let _ = writeln!(out, "  headroom {}", h.describe());
    }
    for r in &record.provisioning_requests {
        let _ = writeln!(out, "  provisioning request {}", r.describe());
    }
    for b in &record.capacity_buffers {
        let _ = writeln!(out, "  capacity buffer {}", b.describe());
    }
    let loops = record.loop_ms.len().max(1) as f64;
    let mean = record.loop_ms.iter().sum::<f64>() / loops;
    let max = record.loop_ms.iter().copied().fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "  decision time per loop (RunOnce, gRPC included): mean {mean:.1} ms, max {max:.1} ms over {} loops",
        record.loop_ms.len()
    );
    let last = record.samples.last();
    if let Some(last) = last {
        let _ = writeln!(
            out,
            "  at the end: {} node(s), {} pending, ${:.2}/h",
            last.nodes.iter().sum::<usize>(),
            last.pending,
            last.ec2_cost + last.fargate_cost
        );
    }
    out
}

/// The day in one line for scripts: `demo summary: added=N removed=N placed=P/T fargate=F unschedulable=U
/// steady_after=Ss`. Placed counts the timeline's pods that ran (on EC2 or Fargate) of all it created;
/// steady_after is the simulated time from which nodes and pending pods no longer changed.
pub fn summary_line(record: &Record) -> String {
    let created: usize = record.arrivals.iter().map(|a| a.pods).sum();
    let ran = record.ran_on_ec2.len() + record.fargate.len();
    let unschedulable = (record.not_helped.keys())
        .filter(|pod| !crate::autoscaler::headroom::policy::is_virtual(pod))
        .count();
    format!(
        "demo summary: added={} removed={} placed={}/{created} fargate={} unschedulable={unschedulable} \
         steady_after={}s\n",
        record.added.iter().sum::<u64>(),
        record.removed.iter().sum::<u64>(),
        ran.min(created),
        record.fargate.len(),
        record.steady_after().as_secs()
    )
}
