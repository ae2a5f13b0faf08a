//! A series over the nights as an SVG chart for its page: each point the
//! commit's ratio to the reference with the spread of its pairs of runs,
//! linked to the commit; each change a vertical line between the commits
//! it lies between, drawn by its status; each failed night a cross. The
//! axes and frame are the hunt report's ([`crate::report::chart`]).

use super::{Slot, commit_href, date};
use crate::report::chart::{
    Axis, BOTTOM, COLORS, HEIGHT, LEFT, RIGHT, TOP, WIDTH, escape, frame, svg_start, x_tick,
};
use crate::store::{ChangeRow, ChangeStatus};
use std::fmt::Write;

/// The colour a change of `status` is drawn in, and its dash pattern.
pub(super) fn change_style(status: ChangeStatus) -> (&'static str, &'static str) {
    match status {
        ChangeStatus::Confirmed | ChangeStatus::Reported => (COLORS[1], "none"),
        ChangeStatus::Candidate => ("#ff7f0e", "6,3"),
        ChangeStatus::Dismissed => ("#888888", "2,3"),
    }
}

/// The chart of a series' `slots` with its `changes`.
pub(super) fn series_chart(
    title: &str,
    slots: &[Slot],
    changes: &[&ChangeRow],
    commit_url: Option<&str>,
) -> String {
    let mut out = String::new();
    svg_start(&mut out, title);
    let x = Axis::over(
        (0..slots.len().max(1)).map(|i| i as f64),
        0.03,
        LEFT,
        WIDTH - RIGHT,
    );
    let values = slots.iter().flat_map(|s| match s {
        Slot::Point(p, spread) => {
            let (lo, hi) = spread.map_or((p.ratio, p.ratio), |s| (s.low, s.high));
            vec![p.ratio, lo, hi]
        }
        Slot::Failed(_) => vec![],
    });
    let y = Axis::over(values, 0.08, HEIGHT - BOTTOM, TOP);
    frame(
        &mut out,
        &y,
        "night (its commits in the order they landed)",
        "ratio to the reference",
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
    for (k, change) in changes.iter().enumerate() {
        change_mark(&mut out, slots, change, k, &x);
    }
    for (i, slot) in slots.iter().enumerate() {
        let px = x.px(i as f64);
        match slot {
            Slot::Point(p, spread) => {
                if let Some(s) = spread {
                    let _ = writeln!(
                        out,
                        "<line class=\"spread\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" \
                         y2=\"{:.1}\" stroke=\"{}\" stroke-opacity=\"0.5\"/>",
                        y.px(s.low),
                        y.px(s.high),
                        COLORS[0]
                    );
                }
                let tip = format!(
                    "{} {}: {:.4} of the reference ({:.1} tps); night of {}",
                    p.commit,
                    p.subject,
                    p.ratio,
                    p.tps,
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
            Slot::Failed(n) => {
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
        }
    }
    out.push_str("</svg>\n");
    out
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

/// A vertical line just before the first point of the change's later
/// commit, labelled with its size and status (labels stepped down so that
/// neighbours do not overlap). A change whose commit is not on the chart
/// is left out.
fn change_mark(out: &mut String, slots: &[Slot], change: &ChangeRow, k: usize, x: &Axis) {
    let Some(at) = slots
        .iter()
        .position(|s| matches!(s, Slot::Point(p, _) if p.commit == change.after))
    else {
        return;
    };
    let (color, dash) = change_style(change.status);
    let px = x.px(at as f64 - 0.5);
    let label = format!("{:+.1}% {}", change.pct, change.status.as_str());
    let tip = format!(
        "{}..{} {:+.1}% ({}), change-point p = {:.3}",
        crate::model::short_sha(&change.before),
        crate::model::short_sha(&change.after),
        change.pct,
        change.status.as_str(),
        change.p_value
    );
    let _ = writeln!(
        out,
        "<g class=\"change {}\"><title>{}</title><line x1=\"{px:.1}\" y1=\"{TOP}\" \
         x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"2\" \
         stroke-dasharray=\"{dash}\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{color}\">{}</text></g>",
        change.status.as_str(),
        escape(&tip),
        HEIGHT - BOTTOM,
        px + 4.0,
        TOP + 14.0 + 14.0 * (k % 4) as f64,
        escape(&label)
    );
}
