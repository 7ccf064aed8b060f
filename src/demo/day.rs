//! One day of a script: the provider in-process, the simulated cluster over it, the loop acting on both, the
//! timeline played in simulated time, progress shown as it goes.

use super::day4::Outages;
use super::error::DemoError;
use super::leaving;
use super::provider::InProcessProvider;
use super::record::{Entry, Record};
use super::script::Script;
use super::summary::hms;
use super::timeline::Targets;
use crate::autoscaler::{
    ClientError, ClusterSource, ConsolidationMode as Mode, LeavingHandling, ProviderClient,
    ProviderConfig, RunOnce, Settings,
};
use crate::clock::Clock;
use crate::cloud::NodeGroupBackend;
use crate::k8s::node_from_pb;
use crate::simulated_cluster::SimulatedCluster;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether a day prints its progress bar and decisions as it plays (the demo's own day) or plays quietly
/// (the days compared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Progress {
    Shown,
    Hidden,
}

/// One day of `script` with consolidation in `mode` and leaving nodes handled or not (`leaving`): the
/// provider in-process on the script's simulated EKS, the simulated cluster over it, and the loop acting on
/// both, `speed` simulated seconds a real second (0: as fast as it goes); `display` says whether progress and
/// decisions are printed.
pub(super) async fn play(
    script: &Script,
    modes: (Mode, LeavingHandling),
    speed: f64,
    display: Progress,
) -> Result<Record, DemoError> {
    Ok(play_followed(script, modes, speed, display).await?.0)
}

/// [`play`], with the pods of the nodes that went away followed: each one's time without a node.
pub(super) async fn play_followed(
    script: &Script,
    (mode, leaving): (Mode, LeavingHandling),
    speed: f64,
    display: Progress,
) -> Result<(Record, Outages), DemoError> {
    let clock = Clock::manual();
    let provider = InProcessProvider::start(script, clock.clone()).await?;
    let config = ProviderConfig::plaintext(provider.addr.to_string());
    let client = ProviderClient::new(&config)?;
    // One wall clock for both: the script's start, else the scenario's, else now.
    let cluster = SimulatedCluster::new(&config, clock.clone())?;
    let cluster = Arc::new(cluster.starting_at(provider.backend.epoch()));
    let mut settings = Settings {
        act: true,
        remove_unregistered: true,
        wait_for_new_pods: true,
        headroom: script.headroom.clone(),
        disruption: script.disruption.clone(),
        leaving_nodes: leaving,
        ..Settings::default()
    };
    settings.consolidation.mode = mode;
    let mut once = RunOnce::new(client.clone(), settings).acting_on(cluster.clone());
    cluster.create_buffers(script.buffers.clone());
    cluster.create_templates(script.templates.clone());
    cluster.create_quotas(script.quotas.clone());
    cluster.create_device_classes(script.device_classes.iter().cloned());
    cluster.create_claim_templates(script.claim_templates.iter().cloned());
    let mut targets = Targets {
        cluster: &cluster,
        backend: &provider.backend,
        deployments: BTreeMap::new(),
    };
    let mut record = prices(&client).await?;
    let mut outages = Outages::default();
    let bar = progress_bar(display, script.duration);
    let show = |entry: &Entry| {
        if display == Progress::Hidden {
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
            let what = targets.apply(&event.action, &mut record, at)?;
            let text = match &event.say {
                Some(say) => format!("{say} ({what})"),
                None => what,
            };
            show(record.say(at, "timeline", text));
        }
        leaving::clear_repaired(&provider.backend, &cluster)?;
        let view = (cluster.view().await).map_err(|e| DemoError::Loop(e.to_string()))?;
        let going = provider.backend.leaving_instances();
        outages.observe(at, &view, &going, provider.backend.wall_now());
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
    record.disagreements = (cluster.disagreements().iter())
        .map(ToString::to_string)
        .collect();
    provider.stop().await;
    Ok((record, outages))
}

fn progress_bar(display: Progress, duration: Duration) -> ProgressBar {
    let bar = match display {
        Progress::Shown => ProgressBar::new(duration.as_secs()),
        Progress::Hidden => ProgressBar::hidden(),
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
        let price = match template.as_deref().map(node_from_pb) {
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
