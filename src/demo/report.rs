//! The demo's HTML report: one self-contained page (no scripts, no network) with SVG line charts over
//! simulated time (`chart.rs`) and the decision log.

use super::chart::{Chart, escape};
use super::compare::Comparison;
use super::day4::LeavingDay;
use super::night::Night;
use super::record::Record;
use super::summary::hms;
use std::fmt::Write;

fn minutes(d: std::time::Duration) -> f64 {
    d.as_secs_f64() / 60.0
}

/// The charts of a demo run: nodes per group, pending pods, utilization, capacity buffers, cost per hour.
pub fn charts(record: &Record) -> Vec<Chart> {
    let at = |i: usize| minutes(record.samples[i].at);
    let series = |f: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        (0..record.samples.len()).map(|i| (at(i), f(i))).collect()
    };
    vec![
        Chart {
            title: "Nodes per node group".into(),
            unit: "nodes".into(),
            series: record
                .groups
                .iter()
                .enumerate()
                .map(|(g, name)| (name.clone(), series(&|i| record.samples[i].nodes[g] as f64)))
                .collect(),
            ..Chart::default()
        },
        Chart {
            title: "Pending pods".into(),
            unit: "pods".into(),
            series: vec![(
                "pending".into(),
                series(&|i| record.samples[i].pending as f64),
            )],
            ..Chart::default()
        },
        Chart {
            title: "CPU utilization of the EC2 nodes".into(),
            unit: "% of allocatable requested".into(),
            series: vec![(
                "cpu".into(),
                series(&|i| record.samples[i].utilization * 100.0),
            )],
            ..Chart::default()
        },
        Chart {
            title: "Capacity buffers".into(),
            unit: "chunks".into(),
            series: vec![
                (
                    "asked for".into(),
                    series(&|i| record.samples[i].buffer_chunks as f64),
                ),
                (
                    "in free room".into(),
                    series(&|i| record.samples[i].buffer_free as f64),
                ),
            ],
            ..Chart::default()
        },
        Chart {
            title: "Cost".into(),
            unit: "$ per hour".into(),
            series: vec![
                ("EC2".into(), series(&|i| record.samples[i].ec2_cost)),
                (
                    "Fargate".into(),
                    series(&|i| record.samples[i].fargate_cost),
                ),
            ],
            ..Chart::default()
        },
    ]
}

/// The days played after the first, when they were.
pub struct Days<'a> {
    pub second: Option<&'a Comparison>,
    pub third: Option<&'a Night>,
    pub fourth: Option<&'a LeavingDay>,
}

/// The whole page; `summary` is the text summary the terminal showed; the second day, when played, adds its
/// cost both ways and its decisions with consolidation on; the third its nodes with what held them and what
/// was replaced marked, and its decisions; the fourth its pending pods both ways, each pod's time without a
/// node both ways, and its decisions with leaving nodes handled.
pub fn html(record: &Record, days: Days<'_>, summary: &str) -> String {
    let mut page = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ekscale demo</title>\
         <style>body{font-family:sans-serif;margin:2em;max-width:60em}td,th{padding:2px 8px;text-align:left;\
         vertical-align:top}tr:nth-child(even){background:#f4f4f4}pre{background:#f8f8f8;padding:1em;white-space:pre-wrap}</style>\
         </head><body><h1>ekscale demo: a day on the simulated EKS</h1>",
    );
    let _ = write!(page, "<h2>Summary</h2><pre>{}</pre>", escape(summary));
    page.push_str("<h2>Over the day</h2>");
    for chart in charts(record) {
        let _ = write!(page, "<figure>{}</figure>", chart.to_svg());
    }
    page.push_str("<h2>Decisions</h2>");
    decisions(&mut page, &record.log);
    if let Some(day) = days.second {
        page.push_str("<h2>Day 2: consolidation off and on</h2>");
        let _ = write!(page, "<figure>{}</figure>", day.chart().to_svg());
        page.push_str("<h3>Decisions with consolidation on</h3>");
        decisions(&mut page, &day.on.log);
    }
    if let Some(night) = days.third {
        page.push_str("<h2>Day 3: disruption budgets, a node group update, expiry</h2>");
        page.push_str(
            "<p>Shaded: when a group's nodes were kept by its disruption budget or its update; dashed: \
             an expired or drifted node removed or replaced.</p>",
        );
        let _ = write!(page, "<figure>{}</figure>", night.chart().to_svg());
        decisions(&mut page, &night.record.log);
    }
    if let Some(day) = days.fourth {
        page.push_str("<h2>Day 4: nodes that go away, handled and ignored</h2>");
        let _ = write!(page, "<figure>{}</figure>", day.chart().to_svg());
        page.push_str(
            "<h3>Each pod's time without a node</h3><p>From its node's warning (or problem) to running on \
             a node that stays; a Spot interruption's warning lasts two minutes.</p>",
        );
        page.push_str(&day.table());
        page.push_str("<h3>Decisions with leaving nodes handled</h3>");
        decisions(&mut page, &day.handled.0.log);
    }
    page.push_str("</body></html>\n");
    page
}

fn decisions(page: &mut String, log: &[super::record::Entry]) {
    page.push_str("<table><tr><th>time</th><th>what</th><th>why</th></tr>");
    for entry in log {
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            hms(entry.at),
            escape(entry.kind),
            escape(&entry.text)
        );
    }
    page.push_str("</table>");
}
