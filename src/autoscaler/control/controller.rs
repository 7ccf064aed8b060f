//! What the companion's commands do: `simulate` (one RunOnce over a snapshot) and `run` (the controller: the
//! loop over the live cluster or a snapshot, its HTTP endpoints, the Lease, events and the status ConfigMap).

use crate::autoscaler::cluster::{ClusterSource, Snapshot};
use crate::autoscaler::control::events::Publisher;
use crate::autoscaler::control::flags::{Acting, Cluster, Command, Format, RunArgs, SimulateArgs};
use crate::autoscaler::control::kube::{Kube, RateLimits};
use crate::autoscaler::control::last_loop::{LastLoop, Liveness};
use crate::autoscaler::control::leader::{Election, Elector};
use crate::autoscaler::control::metrics::AutoscalerMetrics;
use crate::autoscaler::core::runonce::RunOnce;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Bad input (exit 2) or a loop that could not decide (exit 1).
pub enum Failure {
    Usage(String),
    Loop(String),
}

/// [`simulate`] to completion on a new multi-thread runtime, for the binary. The blocking entry points are
/// here and not generic: where `block_on` of a command's future is called, the whole program's state
/// machines are compiled, and in the binary that had been 85 s of a 2-core cold build besides the library's.
pub fn simulate_blocking(args: SimulateArgs) -> Result<(), Failure> {
    runtime().block_on(simulate(args))
}

/// [`run`] to completion on a new multi-thread runtime, for the binary (see [`simulate_blocking`]).
pub fn run_blocking(args: RunArgs) -> Result<(), Failure> {
    runtime().block_on(run(args))
}

/// The companion's runtime: multi-thread, so that planning on a blocking thread never stalls the loop's I/O.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

pub async fn simulate(args: SimulateArgs) -> Result<(), Failure> {
    let settings = args
        .decisions
        .settings(Command::Simulate)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let client = (args.provider.client()).map_err(|e| Failure::Usage(e.to_string()))?;
    // The provider is connected to while the snapshot is read (on this thread).
    let connecting = tokio::spawn(client.connected());
    let started = std::time::Instant::now();
    let snapshot = Snapshot::read(&args.snapshot).map_err(|e| Failure::Usage(e.to_string()))?;
    let read = started.elapsed();
    let view = snapshot
        .view()
        .await
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let client = connecting.await.map_err(|e| Failure::Loop(e.to_string()))?;
    small_pages();
    let mut once = RunOnce::new(client, settings);
    let now = (args.now).or(view.now).unwrap_or_else(SystemTime::now);
    let status = once
        .run(&view, now)
        .await
        .map_err(|e| Failure::Loop(e.to_string()))?;
    let decided = started.elapsed();
    match args.format {
        Format::Json => println!("{}", status.to_json()),
        Format::Table => print!("{}", status.to_table()),
    }
    tracing::debug!(
        read_ms = read.as_millis(),
        loop_ms = (decided - read).as_millis(),
        printed_ms = (started.elapsed() - decided).as_millis(),
        "simulate"
    );
    // The process ends here: freeing a large cluster's objects one by one would only make it end later.
    std::mem::forget((snapshot, view));
    Ok(())
}

/// Transparent huge pages off from here on, once the cluster has been read. mimalloc asks for huge pages, so
/// the first touch of a fresh 2 MiB region zeroes all of it. That suits reading a snapshot or a cluster's
/// first lists (hundreds of megabytes, filled densely), not a loop, whose first touches of fresh memory are
/// few and scattered (under 1 MiB in upstream's 51,000-pod loop) and each zeroed a whole huge page: 0.25-3.5
/// ms each on the machines measured (BENCHMARKS.md). Where the kernel refuses (an old one, a sandbox), the
/// process goes on as it was.
fn small_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(error = %e, "transparent huge pages left as they are");
    }
}

/// What `run` is, for the settings (acting or dry, on a live cluster or a snapshot), and whether it acts.
fn run_command(args: &RunArgs, live: bool) -> (Command, Acting) {
    let acting = match args.dry_run {
        true => Acting::DryRun,
        false => Acting::Act,
    };
    let cluster = match live {
        true => Cluster::Live,
        false => Cluster::Snapshot,
    };
    (Command::Run { acting, cluster }, acting)
}

/// The loop: over the live cluster (kube-rs watches; `--kubeconfig` or in-cluster) or a `--snapshot`, one
/// RunOnce every scan interval, and early when a pod turns Unschedulable. A snapshot cannot be changed, so
/// over one scale-down is reported, never carried out.
pub async fn run(args: RunArgs) -> Result<(), Failure> {
    let client = (args.provider.client()).map_err(|e| Failure::Usage(e.to_string()))?;
    let sources = args.sources().await?;
    small_pages();
    let (command, acting) = run_command(&args, sources.kube.is_some());
    let settings = (args.decisions.settings(command)).map_err(|e| Failure::Usage(e.to_string()))?;
    let keeps_quotas = settings.capacity_quotas;
    let mut once = RunOnce::new(client, settings);
    if !args.dry_run {
        once = once.acting_on(sources.source.clone());
    }
    let metrics = Arc::new(AutoscalerMetrics::default());
    let liveness = Liveness {
        max_inactivity: args.max_inactivity,
        max_failing_time: args.max_failing_time,
        max_startup_time: args.max_startup_time,
    };
    let last = LastLoop::new(liveness, SystemTime::now(), once.progress());
    let last = Arc::new(last);
    let endpoints = Endpoints::start(&args, metrics.clone(), last.clone()).await?;
    let mut leading = match sources.election {
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
            match &sources.kube {
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
                let _ = endpoints.stop.send(());
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
        let mut view = (sources.source.view().await).map_err(|e| Failure::Loop(e.to_string()))?;
        if !keeps_quotas && !view.quotas.is_empty() {
            // `--capacity-quotas-enabled=false`: no quota is enforced, measured or told about.
            let all = Arc::make_mut(&mut view);
            all.quotas = Arc::default();
        }
        let now = SystemTime::now();
        tracing::info!(
            pods = view.pods.len(),
            nodes = view.nodes.len(),
            "loop started"
        );
        match once.run(&view, now).await {
            Ok(status) => {
                // Shared as it is with /snapshotz and the publisher: neither copies it.
                let status = Arc::new(status);
                metrics.observe_loop(&view, &status, acting, now);
                last.succeeded(&view, status.clone(), now);
                log(&status, acting);
                if let Some(publisher) = &sources.publisher {
                    let quotas = view.quotas.clone();
                    publish(publisher, &mut publishing, (status, quotas), now);
                }
            }
            Err(e) => {
                metrics.observe_failure("cloudProviderError", now);
                last.failed(&e.to_string(), now);
                tracing::warn!(error = %e, "loop failed; nothing was done");
            }
        }
    }
    let _ = endpoints.stop.send(());
    let _ = tokio::task::spawn_blocking(move || endpoints.server.join()).await;
    Ok(())
}

/// Events and the status ConfigMap are written beside the loop; while the last loop's are still being written
/// (the client's rate limit), this loop's are skipped, not queued.
fn publish(
    publisher: &Arc<Publisher>,
    publishing: &mut Option<tokio::task::JoinHandle<()>>,
    (status, quotas): (
        Arc<crate::autoscaler::status::Status>,
        Arc<[crate::model::CapacityQuota]>,
    ),
    now: SystemTime,
) {
    if publishing.as_ref().is_some_and(|p| !p.is_finished()) {
        return;
    }
    let publisher = publisher.clone();
    *publishing = Some(tokio::spawn(async move {
        let mut problems = publisher.publish(&status, now).await;
        problems.extend(publisher.publish_quota_problems(&quotas).await);
        for problem in problems {
            tracing::warn!(%problem, "events and status");
        }
    }));
}

/// Where `run` reads the cluster, and what it needs of a live one: the Lease election and the Events
/// publisher.
struct Sources {
    source: Arc<dyn ClusterSource>,
    /// The live cluster, for the early loop when a pod turns Unschedulable.
    kube: Option<Arc<Kube>>,
    election: Option<Elector>,
    publisher: Option<Arc<Publisher>>,
}

/// `/metrics`, `/health-check` and `/snapshotz`, served until the loop stops, on a thread and runtime of their
/// own: however long a loop's CPU work holds the loop's runtime, they answer.
struct Endpoints {
    stop: tokio::sync::oneshot::Sender<()>,
    server: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Endpoints {
    async fn start(
        args: &RunArgs,
        metrics: Arc<AutoscalerMetrics>,
        last: Arc<LastLoop>,
    ) -> Result<Endpoints, Failure> {
        let listener = tokio::net::TcpListener::bind(args.address)
            .await
            .map_err(|e| Failure::Usage(format!("--address {}: {e}", args.address)))?;
        let address = (listener.local_addr()).map_err(|e| Failure::Loop(e.to_string()))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let router = crate::autoscaler::control::http::router(metrics, last);
        let listener = (listener.into_std()).map_err(|e| Failure::Loop(e.to_string()))?;
        let server = std::thread::Builder::new().name("endpoints".into());
        let server = server.spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let stopped = async {
                    let _ = stopped.await;
                };
                crate::http::serve(listener, router, stopped).await
            })
        });
        let server = server.map_err(|e| Failure::Loop(e.to_string()))?;
        tracing::info!(%address, dry_run = args.dry_run, "listening");
        Ok(Endpoints { stop, server })
    }
}

impl RunArgs {
    /// The cluster `run` reads: a `--snapshot` (no Lease, no Events: it cannot be changed), or the live
    /// cluster through kube-rs, with the Lease election (unless `--leader-elect=false`) and, unless dry,
    /// the Events publisher on a client of its own.
    async fn sources(&self) -> Result<Sources, Failure> {
        if let Some(path) = &self.snapshot {
            if self.leader_elect == Some(true) {
                return Err(Failure::Usage(
                    "--leader-elect needs a live cluster; a snapshot has no Lease to hold".into(),
                ));
            }
            let snapshot = Snapshot::read(path).map_err(|e| Failure::Usage(e.to_string()))?;
            return Ok(Sources {
                source: Arc::new(snapshot),
                kube: None,
                election: None,
                publisher: None,
            });
        }
        let config = kube_config(self.kubeconfig.as_deref()).await?;
        let election = match self.leader_elect {
            Some(false) => None,
            _ => Some(self.election(config.clone())?),
        };
        let limits = RateLimits {
            qps: self.kube_client_qps,
            burst: self.kube_client_burst,
        };
        let mut publisher = None;
        if !self.dry_run {
            // Its own rate-limited client, so that events never hold up the loop's own requests.
            let client = crate::autoscaler::control::kube::client(config.clone(), limits)
                .map_err(|e| Failure::Usage(e.to_string()))?;
            let events = Publisher::new(client, &self.namespace, &identity());
            publisher = Some(Arc::new(events));
        }
        let mut kube = Kube::connect(config, limits)
            .await
            .map_err(|e| Failure::Loop(e.to_string()))?;
        (kube.watch_disruption_config(&self.namespace).await)
            .map_err(|e| Failure::Loop(e.to_string()))?;
        let kube = Arc::new(kube);
        Ok(Sources {
            source: kube.clone(),
            kube: Some(kube),
            election,
            publisher,
        })
    }

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
    tracing::info!("waiting for the lease");
    while !elector.try_once(SystemTime::now()).await {
        // Only a refused attempt says that another replica holds the lease: a standby from then on.
        last.standby(true, SystemTime::now());
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
fn log(status: &crate::autoscaler::status::Status, acting: Acting) {
    let dry_run = acting == Acting::DryRun;
    for s in &status.scale_up {
        tracing::info!(node_group = %s.node_group, delta = s.delta, pods = s.pods.len(), reason = %s.reason, error = ?s.error, "scale-up");
    }
    for s in &status.scale_down.nodes {
        tracing::info!(node = %s.node, node_group = %s.node_group, reason = %s.reason, detail = %s.detail, "scale-down");
    }
    for d in &status.scale_down.deletions {
        tracing::info!(node = %d.node, node_group = %d.node_group, state = %d.state, detail = %d.detail, "deletion");
    }
    for e in &status.errors {
        tracing::warn!(error = %e, "loop problem");
    }
    tracing::info!(
        pending_helped = status.scale_up.iter().map(|s| s.pods.len()).sum::<usize>(),
        no_scale_up = status.no_scale_up.len(),
        unneeded = status.scale_down.nodes.len(),
        fargate = status.fargate.len(),
        elapsed_ms = status.times.elapsed_ms,
        dry_run,
        "loop done"
    );
}
