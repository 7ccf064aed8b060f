//! The demo's second day, played twice on the same script: with consolidation off (upstream's behaviour) and
//! with `--consolidation replace`. What each cost, and the replacements that made the difference.

use super::chart::Chart;
use super::record::Record;
use super::script::Script;
use super::summary::{hms, story};
use std::fmt::Write;
use std::time::Duration;

pub struct Comparison {
    pub off: Record,
    pub on: Record,
    interval: Duration,
    duration: Duration,
    /// The timeline's own words, for the summary.
    story: Vec<String>,
}

impl Comparison {
    pub fn new(off: Record, on: Record, day: &Script) -> Comparison {
        let story = story(day);
        Comparison {
            off,
            on,
            interval: day.scan_interval,
            duration: day.duration,
            story,
        }
    }

    /// The second day for people: its story, the cost both ways, and each replacement made.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let (off, on) = (self.off.cost(self.interval), self.on.cost(self.interval));
        let _ = writeln!(
            out,
            "\nDay 2 ({} of simulated time, played twice):",
            humantime::format_duration(self.duration)
        );
        for line in &self.story {
            let _ = writeln!(out, "    {line}");
        }
        let disagreements = (self.off.disagreements.iter()).chain(&self.on.disagreements);
        let _ = writeln!(
            out,
            "    disagreements between the companion's predicates and the plain scheduler: {}",
            disagreements.clone().count()
        );
        for d in disagreements {
            let _ = writeln!(out, "      {d}");
        }
        let nodes = |r: &Record| -> String {
            (r.groups.iter().zip(r.added.iter().zip(&r.removed)))
                .map(|(g, (a, d))| format!("{g} +{a} -{d}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "  consolidation off:     ${off:.2} for the day ({})",
            nodes(&self.off)
        );
        let less = if off > 0.0 {
            (off - on) / off * 100.0
        } else {
            0.0
        };
        let replaced = &self.on.replacements;
        let done = (replaced.iter())
            .filter(|r| {
                r.ended
                    .as_ref()
                    .is_some_and(|(_, state, _)| state == "done")
            })
            .count();
        let _ = writeln!(
            out,
            "  consolidation replace: ${on:.2} for the day ({}), {less:.0}% less; {} replacement(s) \
             launched, {done} done:",
            nodes(&self.on),
            replaced.len()
        );
        for r in replaced {
            let ended = match &r.ended {
                Some((at, state, _)) if state == "done" => format!("done at {}", hms(*at)),
                Some((at, state, why)) => format!("{state} at {}: {why}", hms(*at)),
                None => "still in progress when the day ended".into(),
            };
            let _ = writeln!(out, "    {} {}; {ended}", hms(r.at), r.what);
        }
        out
    }

    /// The cost per hour over the day, both ways.
    pub fn chart(&self) -> Chart {
        let series = |r: &Record| -> Vec<(f64, f64)> {
            (r.samples.iter())
                .map(|s| (s.at.as_secs_f64() / 60.0, s.ec2_cost + s.fargate_cost))
                .collect()
        };
        Chart {
            title: "Day 2: cost with consolidation off and on".into(),
            unit: "$ per hour".into(),
            series: vec![
                ("consolidation off".into(), series(&self.off)),
                ("consolidation replace".into(), series(&self.on)),
            ],
            ..Chart::default()
        }
    }
}
