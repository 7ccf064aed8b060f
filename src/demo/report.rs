//! The demo's HTML report: one self-contained page (no scripts, no network) with SVG line charts over
//! simulated time and the decision log. The charts are a few polylines and labels, written by hand: a charting
//! crate would bring a font and raster stack for what is a page of markup.

use super::compare::Comparison;
use super::record::Record;
use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 36.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// A line chart: named series of (minutes, value).
pub struct Chart {
    pub title: String,
    pub unit: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// Text safe inside HTML and SVG.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step for about five ticks up to `max`.
fn step(max: f64) -> f64 {
    let raw = (max / 5.0).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

impl Chart {
    pub fn to_svg(&self) -> String {
        let max_x = self
            .series
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.0))
            .fold(1.0, f64::max);
        let max_y = self
            .series
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let y_step = step(if max_y > 0.0 { max_y } else { 1.0 });
        let top_y = (max_y / y_step).ceil().max(1.0) * y_step;
        let x_step = step(max_x);
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let x = |v: f64| LEFT + v / max_x * plot_w;
        let y = |v: f64| TOP + plot_h - v / top_y * plot_h;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}">"#,
            title = escape(&self.title)
        );
        let _ = write!(
            svg,
            r#"<text x="{LEFT}" y="16" font-size="14" font-weight="bold">{} ({})</text>"#,
            escape(&self.title),
            escape(&self.unit)
        );
        // Grid and axes.
        let mut tick = 0.0;
        while tick <= top_y + y_step / 2.0 {
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" y1="{py:.1}" x2="{x2:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{tx:.1}" y="{ty:.1}" font-size="11" text-anchor="end">{label}</text>"##,
                py = y(tick),
                x2 = WIDTH - RIGHT,
                tx = LEFT - 6.0,
                ty = y(tick) + 4.0,
                label = trim(tick)
            );
            tick += y_step;
        }
        let mut tick = 0.0;
        while tick <= max_x + x_step / 2.0 {
            let _ = write!(
                svg,
                r#"<text x="{px:.1}" y="{py:.1}" font-size="11" text-anchor="middle">{label}</text>"#,
                px = x(tick),
                py = HEIGHT - BOTTOM + 16.0,
                label = trim(tick)
            );
            tick += x_step;
        }
        let _ = write!(
            svg,
            r##"<text x="{cx:.1}" y="{cy:.1}" font-size="11" text-anchor="middle">simulated minutes</text><line x1="{LEFT}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}" stroke="#444"/>"##,
            cx = LEFT + plot_w / 2.0,
            cy = HEIGHT - 4.0,
            b = TOP + plot_h,
            r = WIDTH - RIGHT
        );
        for (i, (name, points)) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = points
                .iter()
                .map(|(px, py)| format!("{:.1},{:.1}", x(*px), y(*py)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
                path.join(" "),
                escape(name)
            );
            let lx = LEFT + 8.0 + (i as f64) * 120.0;
            let _ = write!(
                svg,
                r#"<rect x="{lx:.1}" y="{ly:.1}" width="10" height="10" fill="{color}"/><text x="{tx:.1}" y="{ty:.1}" font-size="11">{}</text>"#,
                escape(name),
                ly = TOP - 22.0,
                tx = lx + 14.0,
                ty = TOP - 13.0,
            );
        }
        svg.push_str("</svg>");
        svg
    }
}

fn trim(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

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
        },
        Chart {
            title: "Pending pods".into(),
            unit: "pods".into(),
            series: vec![(
                "pending".into(),
                series(&|i| record.samples[i].pending as f64),
            )],
        },
        Chart {
            title: "CPU utilization of the EC2 nodes".into(),
            unit: "% of allocatable requested".into(),
            series: vec![(
                "cpu".into(),
                series(&|i| record.samples[i].utilization * 100.0),
            )],
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
        },
    ]
}

/// The whole page; `summary` is the text summary the terminal showed; `second_day`, when played, adds its
/// cost both ways and its decisions with consolidation on.
pub fn html(record: &Record, second_day: Option<&Comparison>, summary: &str) -> String {
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
    if let Some(day) = second_day {
        page.push_str("<h2>Day 2: consolidation off and on</h2>");
        let _ = write!(page, "<figure>{}</figure>", day.chart().to_svg());
        page.push_str("<h3>Decisions with consolidation on</h3>");
        decisions(&mut page, &day.on.log);
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
            super::hms(entry.at),
            escape(entry.kind),
            escape(&entry.text)
        );
    }
    page.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_labels_short() {
        assert_eq!(step(10.0), 2.0);
        assert_eq!(step(7.0), 2.0);
        assert_eq!(step(0.9), 0.2);
        assert_eq!(step(120.0), 50.0);
        assert_eq!(trim(2.50), "2.5");
        assert_eq!(trim(3.0), "3");
    }

    #[test]
    fn a_chart_has_a_line_per_series_with_a_point_per_sample() {
        let chart = Chart {
            title: "A & B".into(),
            unit: "x".into(),
            series: vec![
                ("a".into(), vec![(0.0, 1.0), (1.0, 2.0), (2.0, 0.0)]),
                ("b<".into(), vec![(0.0, 0.0), (2.0, 5.0)]),
            ],
        };
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("A &amp; B"));
        assert!(svg.contains("b&lt;"));
        assert!(!svg.contains("NaN"));
    }
}
