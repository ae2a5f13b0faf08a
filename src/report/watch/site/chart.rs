//! A series over the nights as an SVG chart for its page: each point the
//! commit's ratio to the reference with the spread of its pairs of runs,
//! linked to the commit; each change a vertical line between the commits
//! it lies between, drawn by its status, or by its mark once a person
//! marked it (`pgbisect watch mark`); each failed night a cross. The axes
//! and frame are the hunt report's ([`crate::report::chart`]); the y axis
//! spans the bulk of the points and the labels are kept apart
//! ([`super::layout`]), so that a step stays visible beside a wild run.

use super::layout::{place_labels, y_span};
use super::{Slot, Spread, commit_href, date};
use crate::core::counts::Measure;
use crate::model::short_sha;
use crate::report::chart::{
    Axis, BOTTOM, COLORS, HEIGHT, LEFT, RIGHT, TOP, WIDTH, escape, frame, svg_start, x_tick,
};
use crate::report::watch::measured;
use crate::store::points::Point;
use crate::store::{ChangeMark, ChangeRow, ChangeStatus, Mark, Night, series_measure};
use std::fmt::Write;

/// The colour a change of `status` is drawn in, and its dash pattern.
pub(super) fn change_style(status: ChangeStatus) -> (&'static str, &'static str) {
    match status {
        ChangeStatus::Confirmed | ChangeStatus::Reported => (COLORS[1], "none"),
        ChangeStatus::Candidate => ("#ff7f0e", "6,3"),
        ChangeStatus::Dismissed => ("#888888", "2,3"),
    }
}

/// The colour a change a person marked is drawn in, and its dash pattern:
/// the pages' `mark-intended` green and `mark-wrong` grey, whatever its
/// status (a marked change is no longer news).
fn marked_style(mark: Mark) -> (&'static str, &'static str) {
    match mark {
        Mark::Intended => ("#2c7a2c", "none"),
        Mark::Wrong => ("#777777", "2,3"),
    }
}

/// How `change` is drawn: its colour, dash pattern and class, and its
/// state in words for its tooltip (its status, then its `mark` with when
/// and why, the class the pages' `marked mark-…` one).
fn drawn_as(
    change: &ChangeRow,
    mark: Option<&ChangeMark>,
) -> (&'static str, &'static str, String, String) {
    let status = change.status.as_str();
    let Some(m) = mark else {
        let (color, dash) = change_style(change.status);
        return (color, dash, status.to_string(), status.to_string());
    };
    let (color, dash) = marked_style(m.mark);
    let said = format!(
        "{status}, marked {} on {}: {}",
        m.mark.as_str(),
        date(m.marked),
        m.why
    );
    (
        color,
        dash,
        format!("marked mark-{}", m.mark.as_str()),
        said,
    )
}

/// The chart of a series' `slots` with its `changes`, those among them a
/// person marked (`marks`, `pgbisect watch mark`) drawn as marked; a
/// count series' points are instructions a transaction over the
/// reference's, up being a slowdown.
pub(super) fn series_chart(
    (title, series): (&str, &str),
    slots: &[Slot],
    changes: &[&ChangeRow],
    marks: &[ChangeMark],
    commit_url: Option<&str>,
) -> String {
    let y_label = match series_measure(series) {
        Measure::Tps => "ratio to the reference",
        Measure::Instructions => "instructions a transaction over the reference's",
    };
    let mut out = String::new();
    svg_start(&mut out, title);
    let x = Axis::over(
        (0..slots.len().max(1)).map(|i| i as f64),
        0.03,
        LEFT,
        WIDTH - RIGHT,
    );
    let y = y_axis(slots);
    frame(
        &mut out,
        &y,
        "night (its commits in the order they landed)",
        y_label,
    );
    let every = slots.len().div_ceil(8).max(1);
    for (i, slot) in slots.iter().enumerate().step_by(every) {
        let clock = match slot {
            Slot::Point(p, _) => p.clock,
            Slot::Failed(n) => n.clock,
        };
        x_tick(&mut out, x.px(i as f64), &date(clock));
    }
    line(&mut out, slots, &x, &y);
    change_marks(&mut out, slots, changes, marks, &x);
    for (i, slot) in slots.iter().enumerate() {
        let px = x.px(i as f64);
        match slot {
            Slot::Point(p, spread) => point_mark(&mut out, p, *spread, (px, &y), commit_url),
            Slot::Failed(n) => failed_mark(&mut out, n, px),
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The y axis over the bulk of the points' spreads, holding every point
/// (a commit's median ratio). A change's levels before and after it are
/// medians of those points, so they lie inside too.
fn y_axis(slots: &[Slot]) -> Axis {
    let mut ends = Vec::new();
    let mut medians = Vec::new();
    for slot in slots {
        if let Slot::Point(p, spread) = slot {
            medians.push(p.ratio);
            if let Some(s) = spread {
                ends.extend([s.low, s.high]);
            }
        }
    }
    let span = y_span(&ends, &medians).map(|(lo, hi)| [lo, hi]);
    Axis::over(span.into_iter().flatten(), 0.08, HEIGHT - BOTTOM, TOP)
}

/// A point: its spread as a bar (cut at the axis, a triangle pointing
/// out where an end lies past it), and a dot linked to its commit.
fn point_mark(
    out: &mut String,
    p: &Point,
    spread: Option<Spread>,
    (px, y): (f64, &Axis),
    commit_url: Option<&str>,
) {
    if let Some(s) = spread {
        let _ = writeln!(
            out,
            "<line class=\"spread\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" \
             y2=\"{:.1}\" stroke=\"{}\" stroke-opacity=\"0.5\"/>",
            y.px(s.low.clamp(y.lo, y.hi)),
            y.px(s.high.clamp(y.lo, y.hi)),
            COLORS[0]
        );
        for (end, which) in [(s.low, "lowest"), (s.high, "highest")] {
            off_axis_mark(out, p, end, which, px, y);
        }
    }
    let value = match series_measure(&p.series) {
        Measure::Tps => format!("{:.1} tps", p.tps),
        Measure::Instructions => format!("{:.0} instructions a transaction", p.tps),
    };
    let tip = format!(
        "{} {}: {:.4} of the reference ({value}); night of {}",
        p.commit,
        p.subject,
        p.ratio,
        date(p.clock)
    );
    let dot = format!(
        "<circle class=\"point\" cx=\"{px:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\">\
         <title>{}</title></circle>",
        y.px(p.ratio),
        COLORS[0],
        escape(&tip)
    );
    match commit_href(commit_url, &p.commit) {
        Some(href) => {
            let _ = writeln!(out, "<a href=\"{}\">{dot}</a>", escape(&href));
        }
        None => {
            let _ = writeln!(out, "{dot}");
        }
    }
}

/// A small triangle at the edge of the axis, pointing out, for an end of
/// a spread past it; nothing for one inside.
fn off_axis_mark(out: &mut String, p: &Point, value: f64, which: &str, px: f64, y: &Axis) {
    // The tip on the edge, the base inside the frame.
    let (edge, base) = if value > y.hi {
        (y.px(y.hi), 7.0)
    } else if value < y.lo {
        (y.px(y.lo), -7.0)
    } else {
        return;
    };
    let tip = format!(
        "{} {}: its {which} pair of runs at {value:.4} of the reference, off the axis",
        short_sha(&p.commit),
        p.subject
    );
    let _ = writeln!(
        out,
        "<path class=\"off-axis\" d=\"M{px:.1},{edge:.1} l-4.5,{:.1} h9 z\" fill=\"{}\">\
         <title>{}</title></path>",
        base,
        COLORS[1],
        escape(&tip)
    );
}

/// A cross at the foot of the chart for a night that failed.
fn failed_mark(out: &mut String, n: &Night, px: f64) {
    let tip = format!(
        "night of {} failed: {}",
        date(n.clock),
        n.reason.as_deref().unwrap_or("no reason stored")
    );
    let _ = writeln!(
        out,
        "<text class=\"failed\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
         fill=\"{}\" font-size=\"16\">\u{d7}<title>{}</title></text>",
        HEIGHT - BOTTOM - 8.0,
        COLORS[1],
        escape(&tip)
    );
}

/// A thin line through the points, broken at no failed night (the
/// level goes on across it).
fn line(out: &mut String, slots: &[Slot], x: &Axis, y: &Axis) {
    let path: Vec<String> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Slot::Point(p, _) => Some(format!("{:.1},{:.1}", x.px(i as f64), y.px(p.ratio))),
            Slot::Failed(_) => None,
        })
        .collect();
    if path.len() > 1 {
        let _ = writeln!(
            out,
            "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" \
             stroke-opacity=\"0.4\"/>",
            path.join(" "),
            COLORS[0]
        );
    }
}

/// Each change a vertical line just before the first point of its later
/// commit, labelled with its size and status (or its mark), the labels in
/// rows so that none hides another. A change whose commit is not on the
/// chart is left out.
fn change_marks(
    out: &mut String,
    slots: &[Slot],
    changes: &[&ChangeRow],
    marks: &[ChangeMark],
    x: &Axis,
) {
    let on_chart: Vec<(f64, &ChangeRow, Option<&ChangeMark>, String)> = changes
        .iter()
        .filter_map(|change| {
            let at = slots
                .iter()
                .position(|s| matches!(s, Slot::Point(p, _) if p.commit == change.after))?;
            let mark = marks.iter().find(|m| m.change == change.id);
            let said = mark.map_or(change.status.as_str(), |m| m.mark.as_str());
            let label = format!("{:+.1}% {said}", measured::size(change).pct);
            Some((x.px(at as f64 - 0.5), *change, mark, label))
        })
        .collect();
    let boxes = place_labels(
        &on_chart
            .iter()
            .map(|(px, _, _, label)| (*px, label.chars().count()))
            .collect::<Vec<_>>(),
        WIDTH - RIGHT,
        TOP + 14.0,
    );
    for ((px, change, mark, label), at) in on_chart.iter().zip(&boxes) {
        let (color, dash, class, said) = drawn_as(change, *mark);
        let tip = format!(
            "#{} {}..{} {} ({said}), change-point p = {:.3}",
            change.id,
            short_sha(&change.before),
            short_sha(&change.after),
            measured::size(change).short(),
            change.p_value
        );
        let _ = writeln!(
            out,
            "<g class=\"change {class}\"><title>{}</title><line x1=\"{px:.1}\" y1=\"{TOP}\" \
             x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"2\" \
             stroke-dasharray=\"{dash}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{}\" \
             fill=\"{color}\">{}</text></g>",
            escape(&tip),
            HEIGHT - BOTTOM,
            at.x,
            at.baseline,
            if at.end { "end" } else { "start" },
            escape(label)
        );
    }
}

/// How many of a series' last points its sparkline on the index draws.
const SPARK_POINTS: usize = 30;
const SPARK_WIDTH: f64 = 120.0;
const SPARK_HEIGHT: f64 = 28.0;

/// A series' last points (their ratios to the reference) as a small line
/// for the index, the last one a dot; its tooltip says what it spans. The
/// axis is at least 2% of the level high, so that a quiet series' noise
/// does not look like steps. Empty without a point.
pub(super) fn sparkline(key: &str, slots: &[Slot]) -> String {
    let ratios: Vec<f64> = slots
        .iter()
        .filter_map(|s| match s {
            Slot::Point(p, _) => Some(p.ratio).filter(|r| r.is_finite()),
            Slot::Failed(_) => None,
        })
        .collect();
    let recent = &ratios[ratios.len().saturating_sub(SPARK_POINTS)..];
    let Some((lo, hi)) = y_span(&[], recent) else {
        return String::new();
    };
    let mid = (lo + hi) / 2.0;
    let window = [lo, hi, mid - 0.01 * mid.abs(), mid + 0.01 * mid.abs()];
    let y = Axis::over(window.into_iter(), 0.1, SPARK_HEIGHT - 2.0, 2.0);
    let x = Axis::over(
        (0..recent.len().max(2)).map(|i| i as f64),
        0.0,
        3.0,
        SPARK_WIDTH - 4.0,
    );
    let at: Vec<(f64, f64)> = (recent.iter().enumerate())
        .map(|(i, r)| (x.px(i as f64), y.px(*r)))
        .collect();
    let path: Vec<String> = at
        .iter()
        .map(|(px, py)| format!("{px:.1},{py:.1}"))
        .collect();
    let tip = format!(
        "{key}: the last {} point(s), {lo:.4} to {hi:.4} of the reference",
        recent.len()
    );
    let (last_x, last_y) = at.last().copied().unwrap_or_default();
    format!(
        "<svg class=\"sparkline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{SPARK_WIDTH}\" \
         height=\"{SPARK_HEIGHT}\" viewBox=\"0 0 {SPARK_WIDTH} {SPARK_HEIGHT}\" role=\"img\">\
         <title>{}</title><polyline points=\"{}\" fill=\"none\" stroke=\"{}\" \
         stroke-width=\"1.5\"/><circle cx=\"{last_x:.1}\" cy=\"{last_y:.1}\" r=\"2.5\" \
         fill=\"{}\"/></svg>",
        escape(&tip),
        path.join(" "),
        COLORS[0],
        COLORS[0]
    )
}
