//! The demo's third day, a Monday afternoon into Tuesday morning, played with disruption control: the
//! story, and what held each group's nodes and when, and which expired or drifted nodes were replaced.

use super::chart::Chart;
use super::record::Record;
use super::script::Script;
use super::summary::{hms, story};
use std::fmt::Write;
use std::time::{Duration, SystemTime};

pub struct Night {
    pub record: Record,
    duration: Duration,
    start: Option<SystemTime>,
    story: Vec<String>,
}

impl Night {
    pub fn new(record: Record, day: &Script) -> Night {
        let story = story(day);
        Night {
            record,
            duration: day.duration,
            start: day.start,
            story,
        }
    }

    /// The third day for people: its story, each span nodes were held, each node replaced.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let starts = self.start.map_or(String::new(), |s| {
            format!(", from {}", humantime::format_rfc3339_seconds(s))
        });
        let _ = writeln!(
            out,
            "\nDay 3: disruption control ({} of simulated time{starts}):",
            humantime::format_duration(self.duration)
        );
        for line in &self.story {
            let _ = writeln!(out, "    {line}");
        }
        let _ = writeln!(
            out,
            "    disagreements between the companion's predicates and the plain scheduler: {}",
            self.record.disagreements.len()
        );
        for d in &self.record.disagreements {
            let _ = writeln!(out, "      {d}");
        }
        let marks = &self.record.marks;
        for span in &marks.spans {
            let to = span.to.map_or("the end".to_string(), hms);
            let _ = writeln!(
                out,
                "  {} from {} to {to}: up to {} node(s) kept",
                span.label,
                hms(span.from),
                span.most_held
            );
        }
        for m in &marks.moments {
            let _ = writeln!(out, "  {} {}", hms(m.at), m.label);
        }
        let nodes: Vec<String> = (self.record.groups.iter())
            .zip(self.record.added.iter().zip(&self.record.removed))
            .map(|(g, (a, d))| format!("{g} +{a} -{d}"))
            .collect();
        let _ = writeln!(out, "  nodes: {}", nodes.join(", "));
        out
    }

    /// Nodes per group over the night, the spans shaded and the replacements marked.
    pub fn chart(&self) -> Chart {
        let minutes = |d: Duration| d.as_secs_f64() / 60.0;
        let record = &self.record;
        let end = record.samples.last().map_or(Duration::ZERO, |s| s.at);
        Chart {
            title: "Day 3: nodes per node group".into(),
            unit: "nodes".into(),
            series: (record.groups.iter().enumerate())
                .map(|(g, name)| {
                    let points = (record.samples.iter())
                        .map(|s| (minutes(s.at), s.nodes[g] as f64))
                        .collect();
                    (name.clone(), points)
                })
                .collect(),
            spans: (record.marks.spans.iter())
                .map(|s| {
                    (
                        minutes(s.from),
                        minutes(s.to.unwrap_or(end)),
                        s.label.clone(),
                    )
                })
                .collect(),
            moments: (record.marks.moments.iter())
                .map(|m| (minutes(m.at), m.label.clone()))
                .collect(),
        }
    }
}
