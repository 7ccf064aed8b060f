//! What a day came to, for people, and the one line for scripts.

use super::record::Record;
use super::script::Script;
use std::fmt::Write;
use std::time::Duration;

/// A day's timeline in its own words, each line at its time: what a compared day's summary tells first.
pub(super) fn story(day: &Script) -> Vec<String> {
    (day.timeline.iter())
        .filter_map(|e| Some(format!("{} {}", hms(e.at), e.say.as_deref()?)))
        .collect()
}

/// `hh:mm:ss` of simulated time.
pub fn hms(at: Duration) -> String {
    let s = at.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
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
        "  disagreements between the companion's predicates and the plain scheduler: {}",
        record.disagreements.len()
    );
    for d in &record.disagreements {
        let _ = writeln!(out, "    {d}");
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
        .filter(|(pod, _)| !crate::autoscaler::headroom::is_virtual(pod))
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
        .filter(|pod| !crate::autoscaler::headroom::is_virtual(pod))
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
