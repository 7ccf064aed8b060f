//! The demo's fourth day, played twice on the same script: leaving nodes handled (`--leaving-nodes handle`)
//! and ignored (`--leaving-nodes ignore`, the behaviour before). Each pod's time without a node both ways,
//! per reason its p50 and worst, and what the companion did to the node its group repaired.

use super::outages::{Outage, Outages};
use crate::demo::chart::{Chart, escape};
use crate::demo::record::Record;
use crate::demo::script::Script;
use crate::demo::summary::{hms, story};
use crate::model::LeavingReason;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// One way's day: what the demo saw, and the pods of the nodes that went away.
pub type Played = (Record, Outages);

pub struct LeavingDay {
    pub handled: Played,
    pub ignored: Played,
    duration: Duration,
    story: Vec<String>,
}

/// The `q` quantile (nearest rank) of `times`, sorted.
fn quantile(times: &[Duration], q: f64) -> Duration {
    let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

/// `1m 30s`.
fn took(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// One way's figures for one reason: `4 pod(s), p50 1m 30s, worst 1m 30s; ...`.
fn figures(outages: &[&Outage], reason: LeavingReason) -> String {
    let mine: Vec<&&Outage> = outages.iter().filter(|o| o.reason == reason).collect();
    let mut times: Vec<Duration> = mine.iter().filter_map(|o| o.time()).collect();
    times.sort();
    let unended = mine.len() - times.len();
    let mut text = format!("{} pod(s)", mine.len());
    if !times.is_empty() {
        let _ = write!(
            text,
            ", p50 {}, worst {}",
            took(quantile(&times, 0.5)),
            took(*times.last().expect("not empty"))
        );
    }
    if unended > 0 {
        let _ = write!(text, ", {unended} not running again by the day's end");
    }
    if reason == LeavingReason::SpotInterruption {
        let before = mine.iter().filter(|o| o.before_deadline()).count();
        let waited = mine.iter().filter(|o| o.waited_for_the_node()).count();
        let _ = write!(
            text,
            "; {before} running elsewhere before the warning ended, {waited} waited for the node to go"
        );
    }
    text
}

impl LeavingDay {
    pub fn new(handled: Played, ignored: Played, day: &Script) -> LeavingDay {
        let story = story(day);
        LeavingDay {
            handled,
            ignored,
            duration: day.duration,
            story,
        }
    }

    fn both(&self) -> [(&'static str, &Played); 2] {
        [("handled", &self.handled), ("ignored", &self.ignored)]
    }

    /// The reasons any pod lost its node for, either way.
    fn reasons(&self) -> Vec<LeavingReason> {
        let mut reasons: Vec<LeavingReason> = (self.both().iter())
            .flat_map(|(_, (_, outages))| outages.all().map(|o| o.reason))
            .collect();
        reasons.sort_by_key(|r| r.as_str());
        reasons.dedup();
        reasons
    }

    /// Each pod's time both ways, by pod and reason: (handled, ignored).
    fn per_pod(&self) -> BTreeMap<(String, &'static str), [Option<&Outage>; 2]> {
        let mut rows: BTreeMap<(String, &'static str), [Option<&Outage>; 2]> = BTreeMap::new();
        for (way, (_, (_, outages))) in self.both().into_iter().enumerate() {
            for o in outages.all() {
                let row = rows.entry((o.pod.clone(), o.reason.as_str())).or_default();
                row[way].get_or_insert(o);
            }
        }
        rows
    }

    /// What the companion did to the nodes their group repaired: the scale-down and consolidation lines
    /// naming them, in one way's log.
    fn touched((record, outages): &Played) -> Vec<String> {
        let mut lines = Vec::new();
        for (node, _) in &outages.unhealthy {
            let named = (record.log.iter())
                .filter(|e| matches!(e.kind, "scale-down" | "consolidation" | "replacement"))
                .filter(|e| e.text.contains(node.as_str()));
            lines.extend(named.map(|e| format!("{} {} {}", hms(e.at), e.kind, e.text)));
        }
        lines
    }

    /// The fourth day for people: its story, each reason's figures both ways, each pod's times, the
    /// repaired node.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nDay 4: nodes that go away ({} of simulated time, played twice: leaving nodes handled, then \
             ignored as before):",
            humantime::format_duration(self.duration)
        );
        for line in &self.story {
            let _ = writeln!(out, "    {line}");
        }
        let disagreements =
            (self.handled.0.disagreements.iter()).chain(&self.ignored.0.disagreements);
        let _ = writeln!(
            out,
            "    disagreements between the companion's predicates and the plain scheduler: {}",
            disagreements.clone().count()
        );
        for d in disagreements {
            let _ = writeln!(out, "      {d}");
        }
        let _ = writeln!(
            out,
            "  each pod's time without a node, from its node's warning (or problem) to running on a node \
             that stays:"
        );
        for reason in self.reasons() {
            for (way, (_, outages)) in self.both() {
                let outages: Vec<&Outage> = outages.all().collect();
                let text = figures(&outages, reason);
                let _ = writeln!(out, "    {way}: {}: {text}", reason.as_str());
            }
        }
        let _ = writeln!(out, "  per pod (handled / ignored):");
        for ((pod, reason), [handled, ignored]) in self.per_pod() {
            let time = |o: Option<&Outage>| match o.map(Outage::time) {
                Some(Some(t)) => took(t),
                Some(None) => "not again".into(),
                None => "-".into(),
            };
            let _ = writeln!(
                out,
                "    {pod} ({reason}): {} / {}",
                time(handled),
                time(ignored)
            );
        }
        for (node, group) in &self.handled.1.unhealthy {
            let _ = writeln!(
                out,
                "  unhealthy node {node} ({group}), repaired by its group:"
            );
            for (way, played) in self.both() {
                let touched = LeavingDay::touched(played);
                let said = match touched.is_empty() {
                    true => "never scaled down, consolidated or replaced by ekscale".to_string(),
                    false => touched.join("; "),
                };
                let _ = writeln!(out, "    {way}: {said}");
            }
        }
        for (way, (r, _)) in self.both() {
            let nodes: Vec<String> = (r.groups.iter().zip(r.added.iter().zip(&r.removed)))
                .map(|(g, (a, d))| format!("{g} +{a} -{d}"))
                .collect();
            let _ = writeln!(out, "  nodes, {way}: {}", nodes.join(", "));
        }
        out
    }

    /// Pending pods over the day, both ways.
    pub fn chart(&self) -> Chart {
        let series = |r: &Record| -> Vec<(f64, f64)> {
            (r.samples.iter())
                .map(|s| (s.at.as_secs_f64() / 60.0, s.pending as f64))
                .collect()
        };
        Chart {
            title: "Day 4: pending pods with leaving nodes handled and ignored".into(),
            unit: "pods".into(),
            series: vec![
                ("handled".into(), series(&self.handled.0)),
                ("ignored".into(), series(&self.ignored.0)),
            ],
            ..Chart::default()
        }
    }

    /// The per-pod table for the report.
    pub fn table(&self) -> String {
        let mut page = String::from(
            "<table><tr><th>pod</th><th>reason</th><th>node</th><th>seen leaving</th><th>handled</th>\
             <th>ignored</th></tr>",
        );
        for ((pod, reason), [handled, ignored]) in self.per_pod() {
            let first = handled.or(ignored).expect("one way at least");
            let time = |o: Option<&Outage>| match o.map(Outage::time) {
                Some(Some(t)) => took(t),
                Some(None) => "not again".into(),
                None => "-".into(),
            };
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{reason}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&pod),
                escape(&first.node),
                hms(first.from),
                time(handled),
                time(ignored)
            );
        }
        page.push_str("</table>");
        page
    }
}
