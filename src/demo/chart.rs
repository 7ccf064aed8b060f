//! The demo's line charts as SVG: named series over simulated time. A few polylines and labels, written by
//! hand: a charting crate would bring a font and raster stack for what is a page of markup. The report and
//! the second day's comparison both draw them.

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

/// A line chart: named series of (minutes, value), with spans of time shaded (from, to, label) and moments
/// marked by a line (at, label).
#[derive(Default)]
pub struct Chart {
    pub title: String,
    pub unit: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    pub spans: Vec<(f64, f64, String)>,
    pub moments: Vec<(f64, String)>,
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

/// Where the plot sits and its scales: the x axis in minutes up to `max_x`, the y axis up to `top_y`.
struct Frame {
    max_x: f64,
    top_y: f64,
    x_step: f64,
    y_step: f64,
    plot_w: f64,
    plot_h: f64,
}

impl Frame {
    fn of(chart: &Chart) -> Frame {
        let max_x = chart
            .series
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.0))
            .fold(1.0, f64::max);
        let max_y = chart
            .series
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let y_step = step(if max_y > 0.0 { max_y } else { 1.0 });
        Frame {
            max_x,
            top_y: (max_y / y_step).ceil().max(1.0) * y_step,
            x_step: step(max_x),
            y_step,
            plot_w: WIDTH - LEFT - RIGHT,
            plot_h: HEIGHT - TOP - BOTTOM,
        }
    }

    fn x(&self, v: f64) -> f64 {
        LEFT + v / self.max_x * self.plot_w
    }

    fn y(&self, v: f64) -> f64 {
        TOP + self.plot_h - v / self.top_y * self.plot_h
    }

    /// Grid and axes.
    fn axes(&self, svg: &mut String) {
        let (x, y) = (|v: f64| self.x(v), |v: f64| self.y(v));
        let (top_y, y_step, max_x, x_step) = (self.top_y, self.y_step, self.max_x, self.x_step);
        let plot_w = self.plot_w;
        let plot_h = self.plot_h;
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
    }

    /// Spans under the lines, each a shade with its label at its top; moments as dashed lines.
    fn marks(&self, chart: &Chart, svg: &mut String) {
        let x = |v: f64| self.x(v);
        let plot_h = self.plot_h;
        for (i, (from, to, label)) in chart.spans.iter().enumerate() {
            let _ = write!(
                svg,
                r##"<rect x="{sx:.1}" y="{TOP}" width="{w:.1}" height="{plot_h:.1}" fill="#f2c744" fill-opacity="0.25"><title>{label}</title></rect><text x="{tx:.1}" y="{ty:.1}" font-size="10" fill="#7a5c00">{label}</text>"##,
                sx = x(*from),
                w = (x(*to) - x(*from)).max(1.0),
                tx = x(*from) + 2.0,
                ty = TOP + 10.0 + (i % 3) as f64 * 11.0,
                label = escape(label)
            );
        }
        for (at, label) in &chart.moments {
            let _ = write!(
                svg,
                r##"<line x1="{mx:.1}" y1="{TOP}" x2="{mx:.1}" y2="{b:.1}" stroke="#b33" stroke-dasharray="3,3"><title>{label}</title></line>"##,
                mx = x(*at),
                b = TOP + plot_h,
                label = escape(label)
            );
        }
    }

    /// Each series as a line, with its name in the legend above the plot.
    fn series(&self, chart: &Chart, svg: &mut String) {
        let (x, y) = (|v: f64| self.x(v), |v: f64| self.y(v));
        for (i, (name, points)) in chart.series.iter().enumerate() {
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
    }
}

impl Chart {
    pub fn to_svg(&self) -> String {
        let frame = Frame::of(self);
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
        frame.axes(&mut svg);
        frame.marks(self, &mut svg);
        frame.series(self, &mut svg);
        svg.push_str("</svg>");
        svg
    }
}

fn trim(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
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
            spans: vec![(0.5, 1.5, "held".into())],
            moments: vec![(1.0, "replaced".into())],
        };
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<title>held</title></rect>").count(), 1);
        assert_eq!(svg.matches("stroke-dasharray").count(), 1);
        assert!(svg.contains("A &amp; B"));
        assert!(svg.contains("b&lt;"));
        assert!(!svg.contains("NaN"));
    }
}
