//! SVG charts of results.
//!
//! Hackers on the list often attach a chart: the throughput of every tested
//! commit, where the drop happened, or throughput against clients for two
//! builds. The renderers here are pure (data in, SVG text out), built by
//! hand because the drawing is a few lines, dots and labels, and every
//! coordinate is checked to be finite so the file always opens.

use crate::core::stats;
use crate::report::findings::HuntReport;
use std::fmt::Write;

pub(super) const WIDTH: f64 = 900.0;
pub(super) const HEIGHT: f64 = 480.0;
pub(super) const LEFT: f64 = 80.0;
pub(super) const RIGHT: f64 = 30.0;
pub(super) const TOP: f64 = 50.0;
pub(super) const BOTTOM: f64 = 70.0;
pub(super) const COLORS: [&str; 2] = ["#1f77b4", "#d62728"];

/// One series of the compare chart: a build and its runs per client count.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// `(clients, every run's TPS)`, in increasing client order.
    pub points: Vec<(u32, Vec<f64>)>,
}

/// Escapes text for use in XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A linear map from data values to pixels.
#[derive(Debug, Clone, Copy)]
pub(super) struct Axis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    from: f64,
    to: f64,
}

impl Axis {
    /// An axis over the finite values of `values` (a unit range when there
    /// are none or all are equal), widened by `pad` of the span each side.
    pub(super) fn over(values: impl Iterator<Item = f64>, pad: f64, from: f64, to: f64) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if hi - lo <= f64::EPSILON * lo.abs().max(1.0) {
            let half = (lo.abs() * 0.05).max(0.5);
            (lo, hi) = (lo - half, hi + half);
        }
        let span = hi - lo;
        Axis {
            lo: lo - pad * span,
            hi: hi + pad * span,
            from,
            to,
        }
    }

    pub(super) fn px(&self, v: f64) -> f64 {
        let v = if v.is_finite() { v } else { self.lo };
        self.from + (v - self.lo) / (self.hi - self.lo) * (self.to - self.from)
    }

    /// Round tick values inside the axis, about `target` of them.
    pub(super) fn ticks(&self, target: usize) -> Vec<f64> {
        let raw = (self.hi - self.lo) / target.max(1) as f64;
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * magnitude)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * magnitude);
        let mut ticks = Vec::new();
        let mut t = (self.lo / step).ceil() * step;
        while t <= self.hi + step * 1e-9 && ticks.len() < 50 {
            // Snapped to the step, so sums of steps never read -0 or 0.30000000000000004.
            ticks.push((t / step).round() * step + 0.0);
            t += step;
        }
        ticks
    }
}

/// A number for a tick label: no needless decimals.
pub(super) fn tick_label(v: f64) -> String {
    // -0.0 == 0.0: print zero without a sign.
    let v = if v == 0.0 { 0.0 } else { v };
    if v.abs() >= 100.0 || v.fract().abs() < 1e-9 {
        return format!("{v:.0}");
    }
    // As many decimals as the tick needs (0.925, not 0.93), up to 4.
    let decimals = (2..4)
        .find(|&d| {
            let scale = 10f64.powi(d);
            ((v * scale).round() / scale - v).abs() < 1e-9
        })
        .unwrap_or(4) as usize;
    format!("{v:.decimals$}")
}

fn open_svg(out: &mut String, title: &str) {
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    svg_start(out, title);
}

/// The `<svg>` element opened, with its white ground and title: what a
/// page holds inline (no XML declaration).
pub(super) fn svg_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>\n\
         <text x=\"{:.1}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" class=\"title\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
}

/// The frame, the y ticks with numbers and the axis titles.
pub(super) fn frame(out: &mut String, y: &Axis, x_title: &str, y_title: &str) {
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
    let _ = writeln!(
        out,
        "<rect x=\"{x0}\" y=\"{y0}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#444\"/>",
        x1 - x0,
        y1 - y0
    );
    for t in y.ticks(6) {
        let py = y.px(t);
        let _ = writeln!(
            out,
            "<line x1=\"{x0}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"ytick\">{}</text>",
            x0 - 6.0,
            py + 4.0,
            tick_label(t)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text x=\"18\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {:.1})\">{}</text>",
        (x0 + x1) / 2.0,
        HEIGHT - 18.0,
        escape(x_title),
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        escape(y_title)
    );
}

pub(super) fn x_tick(out: &mut String, px: f64, label: &str) {
    let y = HEIGHT - BOTTOM;
    let _ = writeln!(
        out,
        "<line x1=\"{px:.1}\" y1=\"{y}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#444\"/>\
         <text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"xtick\">{}</text>",
        y + 5.0,
        y + 18.0,
        escape(label)
    );
}

/// Throughput of every tested commit in history order: each run a dot,
/// the median a bar, each culprit a vertical line with its short SHA.
pub fn hunt_chart(report: &HuntReport) -> String {
    let mut out = String::new();
    let title = format!(
        "pgbisect: {} .. {}, {} clients, {}",
        report.good.short(),
        report.bad.short(),
        report.clients,
        report.outcome.as_str()
    );
    open_svg(&mut out, &title);
    let positions = report.tested.iter().map(|t| t.position as f64);
    let x = Axis::over(
        positions.chain([0.0, report.candidates as f64]),
        0.03,
        LEFT,
        WIDTH - RIGHT,
    );
    let all_tps = report
        .tested
        .iter()
        .flat_map(|t| t.samples.iter().map(|s| s.tps));
    let y = Axis::over(all_tps, 0.08, HEIGHT - BOTTOM, TOP);
    frame(&mut out, &y, "commit (history order)", "TPS");
    for t in x.ticks(10) {
        x_tick(&mut out, x.px(t), &tick_label(t));
    }
    for tested in &report.tested {
        let px = x.px(tested.position as f64);
        let values: Vec<f64> = tested.samples.iter().map(|s| s.tps).collect();
        for v in &values {
            let _ = writeln!(
                out,
                "<circle class=\"run\" cx=\"{px:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"0.6\"/>",
                y.px(*v),
                COLORS[0]
            );
        }
        if let Some(median) = median_of(&values) {
            let py = y.px(median);
            let _ = writeln!(
                out,
                "<line class=\"median\" x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"black\" stroke-width=\"2\"/>",
                px - 7.0,
                px + 7.0
            );
        }
    }
    for (label, position) in [("good", 0.0), ("bad", report.candidates as f64)] {
        let commit = if label == "good" {
            &report.good
        } else {
            &report.bad
        };
        let _ = writeln!(
            out,
            "<text class=\"endpoint\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label} {}</text>",
            x.px(position),
            HEIGHT - BOTTOM + 34.0,
            escape(commit.short())
        );
    }
    culprit_marks(&mut out, report, &x);
    out.push_str("</svg>\n");
    out
}

/// A dashed line between each culprit and its parent, labelled with the
/// culprit's short SHA and its change.
fn culprit_marks(out: &mut String, report: &HuntReport, x: &Axis) {
    for culprit in &report.culprits {
        let Some(tested) = report.tested.iter().find(|t| t.commit.id == culprit.commit) else {
            continue;
        };
        let px = x.px(tested.position as f64 - 0.5);
        let _ = writeln!(
            out,
            "<g class=\"culprit\"><line x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\" \
             stroke=\"{}\" stroke-dasharray=\"5,3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\">{} {:+.1}%</text></g>",
            HEIGHT - BOTTOM,
            COLORS[1],
            px + 4.0,
            TOP + 14.0,
            COLORS[1],
            escape(tested.commit.short()),
            culprit.change.pct
        );
    }
}

fn median_of(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some(stats::median(&sorted))
}

/// Throughput against clients for each series: the median as a line with
/// markers, the min..max spread as error bars, and a legend.
pub fn compare_chart(title: &str, series: &[Series]) -> String {
    let mut out = String::new();
    open_svg(&mut out, title);
    let mut clients: Vec<u32> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|(c, _)| *c))
        .collect();
    clients.sort_unstable();
    clients.dedup();
    // Client counts are spread evenly (1, 8, 16, ... 128 would crowd a linear axis).
    let slot = |c: u32| clients.iter().position(|x| *x == c).unwrap_or(0) as f64;
    let x = Axis::over(
        (0..clients.len().max(1)).map(|i| i as f64),
        0.08,
        LEFT,
        WIDTH - RIGHT,
    );
    let all_tps = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|(_, v)| v.iter().copied()));
    let mut y = Axis::over(all_tps.chain([0.0]), 0.05, HEIGHT - BOTTOM, TOP);
    y.lo = 0.0;
    frame(&mut out, &y, "clients", "TPS");
    for c in &clients {
        x_tick(&mut out, x.px(slot(*c)), &c.to_string());
    }
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let offset = (i as f64 - (series.len() as f64 - 1.0) / 2.0) * 6.0;
        let mut path = Vec::new();
        for (c, values) in &s.points {
            let Some(median) = median_of(values) else {
                continue;
            };
            let px = x.px(slot(*c)) + offset;
            let finite = values.iter().copied().filter(|v| v.is_finite());
            let lo = finite.clone().fold(f64::INFINITY, f64::min);
            let hi = finite.fold(f64::NEG_INFINITY, f64::max);
            let _ = writeln!(
                out,
                "<line class=\"spread\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{color}\"/>\
                 <circle class=\"median\" cx=\"{px:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\"/>",
                y.px(lo),
                y.px(hi),
                y.px(median)
            );
            path.push(format!("{px:.1},{:.1}", y.px(median)));
        }
        if path.len() > 1 {
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>",
                path.join(" ")
            );
        }
        let ly = TOP + 16.0 + 18.0 * i as f64;
        let _ = writeln!(
            out,
            "<g class=\"legend\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            LEFT + 12.0,
            ly - 10.0,
            LEFT + 30.0,
            ly,
            escape(&s.label)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::{Change, Comparison, Method, Verdict};
    use crate::model::Commit;
    use crate::report::findings::{
        Culprit, HuntOutcome, Judgement, RunSample, TestedCommit, Totals,
    };

    fn sha(i: usize) -> String {
        format!("{i:040x}")
    }

    fn tested(position: usize, tps: &[f64]) -> TestedCommit {
        TestedCommit {
            commit: Commit::bare(sha(position)),
            position,
            judgement: Judgement::GoodLike,
            samples: tps
                .iter()
                .enumerate()
                .map(|(i, t)| RunSample {
                    run: i as u64,
                    tps: *t,
                    host: None,
                })
                .collect(),
            summary: None,
            note: None,
        }
    }

    fn report(culprits: Vec<Culprit>) -> HuntReport {
        let change = Change {
            pct: -10.0,
            low_pct: -12.0,
            high_pct: -8.0,
            confidence: 0.98,
        };
        HuntReport {
            outcome: if culprits.is_empty() {
                HuntOutcome::NoRegression
            } else {
                HuntOutcome::CulpritFound
            },
            good: Commit::bare(sha(0)),
            bad: Commit::bare(sha(8)),
            candidates: 8,
            threshold: 0.05,
            clients: 16,
            measurement: "pgbench -S <x>".into(),
            endpoints: Comparison {
                verdict: Verdict::Regressed,
                change,
                p_value: 0.001,
                method: Method::WelchT,
                n_base: 4,
                n_new: 4,
            },
            culprits,
            unresolved: vec![],
            notes: vec![],
            tested: vec![
                tested(0, &[1000.0, 1010.0, 990.0]),
                tested(4, &[1005.0, 995.0]),
                tested(5, &[900.0, 905.0]),
                tested(8, &[899.0, 902.0, 898.0]),
            ],
            totals: Totals::default(),
            machine: None,
            profile_name: String::new(),
            profile_toml: String::new(),
            server_settings: Vec::new(),
            configure_flags: Vec::new(),
            resolution: Vec::new(),
            release_check: None,
            measure_chosen: None,
            made: None,
            why: Vec::new(),
            measure: Default::default(),
        }
    }

    fn culprit_at(position: usize) -> Culprit {
        Culprit {
            commit: sha(position),
            subject: "Use a <faster> lock & more".into(),
            author: String::new(),
            date: String::new(),
            parent: sha(position - 1),
            before_tps: 1000.0,
            after_tps: 900.0,
            change: Change {
                pct: -10.0,
                low_pct: -11.0,
                high_pct: -9.0,
                confidence: 0.98,
            },
            p_value: 0.001,
            method: Method::WelchT,
            runs_before: 4,
            runs_after: 4,
            per_host: Vec::new(),
            functions: Vec::new(),
        }
    }

    /// Every numeric attribute of every element is finite.
    fn assert_finite(doc: &roxmltree::Document) {
        for node in doc.descendants().filter(|n| n.is_element()) {
            for attr in node.attributes() {
                if ["x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r"].contains(&attr.name()) {
                    let v: f64 = attr.value().parse().expect("numeric coordinate");
                    assert!(v.is_finite(), "{} = {}", attr.name(), attr.value());
                }
                assert!(!attr.value().contains("NaN") && !attr.value().contains("inf"));
            }
        }
    }

    fn class_count(doc: &roxmltree::Document, class: &str) -> usize {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .count()
    }

    #[test]
    fn hunt_chart_marks_the_culprit() {
        let svg = hunt_chart(&report(vec![culprit_at(5)]));
        let doc = roxmltree::Document::parse(&svg).expect("valid XML");
        assert_finite(&doc);
        let culprit = doc
            .descendants()
            .find(|n| n.attribute("class") == Some("culprit"))
            .expect("a culprit mark");
        let label: String = culprit
            .descendants()
            .filter_map(|n| n.text())
            .collect::<Vec<_>>()
            .join("");
        assert!(label.contains(&sha(5)[..8]), "{label}");
        assert_eq!(class_count(&doc, "run"), 10);
        assert_eq!(class_count(&doc, "median"), 4);
        assert_eq!(class_count(&doc, "endpoint"), 2);
        assert!(class_count(&doc, "ytick") >= 3);
    }

    #[test]
    fn hunt_chart_without_culprits_has_no_mark() {
        let svg = hunt_chart(&report(vec![]));
        let doc = roxmltree::Document::parse(&svg).expect("valid XML");
        assert_finite(&doc);
        assert_eq!(class_count(&doc, "culprit"), 0);
        let title = doc
            .descendants()
            .find(|n| n.attribute("class") == Some("title"))
            .and_then(|n| n.text())
            .unwrap_or_default();
        assert!(title.contains("no-regression"), "{title}");
    }

    #[test]
    fn empty_and_flat_data_stay_finite() {
        let mut r = report(vec![]);
        r.tested = vec![tested(0, &[500.0, 500.0]), tested(8, &[])];
        let doc_text = hunt_chart(&r);
        assert_finite(&roxmltree::Document::parse(&doc_text).unwrap());
        let svg = compare_chart("empty", &[]);
        assert_finite(&roxmltree::Document::parse(&svg).unwrap());
    }

    #[test]
    fn compare_chart_has_two_series_and_a_legend() {
        let series = vec![
            Series {
                label: "master <a&b>".into(),
                points: vec![(1, vec![100.0, 110.0]), (8, vec![700.0, 720.0, 710.0])],
            },
            Series {
                label: "patched".into(),
                points: vec![(1, vec![105.0, 107.0]), (8, vec![800.0, 790.0])],
            },
        ];
        let svg = compare_chart("A vs B", &series);
        let doc = roxmltree::Document::parse(&svg).expect("valid XML");
        assert_finite(&doc);
        assert_eq!(class_count(&doc, "legend"), 2);
        assert_eq!(class_count(&doc, "median"), 4);
        assert_eq!(class_count(&doc, "spread"), 4);
        assert!(svg.contains("master &lt;a&amp;b&gt;"));
    }

    #[test]
    fn tick_labels_have_no_negative_zero() {
        let axis = Axis::over([0.0, 4000.0].into_iter(), 0.05, 0.0, 100.0);
        let labels: Vec<String> = axis.ticks(6).into_iter().map(tick_label).collect();
        assert!(labels.contains(&"0".to_string()), "{labels:?}");
        assert!(labels.iter().all(|l| !l.starts_with("-0")), "{labels:?}");
        assert_eq!(tick_label(-0.0), "0");
        assert_eq!(tick_label(0.5), "0.50");
        assert_eq!(tick_label(0.925), "0.925");
    }

    #[test]
    fn escape_handles_markup() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    }
}
