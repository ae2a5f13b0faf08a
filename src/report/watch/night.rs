//! What a night of the watcher prints: what it measured, each series'
//! last points, and the changes found with their confirmation, each named
//! by its number `#N`, the one `pgbisect watch mark` and `watch hunt` take.

use crate::model::short_sha;
use crate::report::watch::measured;
use crate::store::points::Point;
use crate::store::{ChangeHunt, ChangeKind, ChangeRow, ChangeStatus, Night};
use std::fmt::Write;
use std::path::PathBuf;

/// What one start of the watcher did, as its text tells it.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The nights run, in order.
    pub nights: &'a [Night],
    /// The points those nights made.
    pub measured: &'a [Point],
    /// Each series' last points.
    pub last_points: &'a [Point],
    /// Changes found or measured again.
    pub changes: &'a [ChangeRow],
    /// The hunts taken up or begun.
    pub hunts: Vec<Hunt<'a>>,
    /// Why the night stopped before its end.
    pub stopped: Option<&'a str>,
}

/// A hunt of a change, as the night's text tells it.
#[derive(Debug, Clone)]
pub struct Hunt<'a> {
    pub change: &'a ChangeRow,
    pub hunt: &'a ChangeHunt,
    /// Its text report, once written.
    pub report: Option<PathBuf>,
}

/// The text `pgbisect watch` prints after a night.
pub fn text(w: &Start) -> String {
    let mut out = String::new();
    for night in w.nights {
        let _ = writeln!(
            out,
            "night of {}: {} commit(s) of {}, reference {}",
            crate::time::rfc3339_from_unix(night.clock),
            night.commits.len(),
            night.branch,
            short_sha(&night.reference)
        );
    }
    if w.nights.is_empty() {
        out.push_str("nothing new to measure\n");
    }
    if !w.measured.is_empty() {
        out.push_str("\nmeasured:\n");
        for p in w.measured {
            let _ = writeln!(
                out,
                "  {:<24} {} {:>15}  {:.4} of the reference  {}",
                p.series,
                short_sha(&p.commit),
                measured::value_text(&p.series, p.tps),
                p.ratio,
                p.subject
            );
        }
    }
    if !w.last_points.is_empty() {
        out.push_str("\nlast points (commit: ratio to the reference):\n");
        let mut series: Vec<&str> = w.last_points.iter().map(|p| p.series.as_str()).collect();
        series.dedup();
        for s in series {
            let line: Vec<String> = w
                .last_points
                .iter()
                .filter(|p| p.series == s)
                .map(|p| format!("{} {:.4}", short_sha(&p.commit), p.ratio))
                .collect();
            let _ = writeln!(out, "  {s:<24} {}", line.join(", "));
        }
    }
    out.push_str(&changes(w));
    out.push_str(&hunts(w));
    if let Some(reason) = w.stopped {
        let _ = writeln!(out, "\nstopped before the night's end: {reason}");
    }
    out
}

fn changes(w: &Start) -> String {
    let mut out = String::new();
    if w.changes.is_empty() {
        out.push_str("\nno new change\n");
        return out;
    }
    out.push_str("\nchanges:\n");
    for c in w.changes {
        let word = match c.status {
            ChangeStatus::Confirmed if c.pct < 0.0 => "CONFIRMED SLOWER",
            ChangeStatus::Confirmed => "confirmed faster",
            ChangeStatus::Dismissed => "dismissed",
            ChangeStatus::Candidate => "not yet confirmed",
            ChangeStatus::Reported => "reported",
        };
        let (what, test) = match c.kind {
            ChangeKind::Step => ("", "change-point"),
            ChangeKind::Drift => ("a drift ", "then against now"),
        };
        let _ = writeln!(
            out,
            "  #{} {}: {what}{}..{} {}: {word} ({test} p = {:.3})",
            c.id,
            c.series,
            short_sha(&c.before),
            short_sha(&c.after),
            measured::size(c).bracketed(),
            c.p_value
        );
    }
    out
}

fn hunts(w: &Start) -> String {
    let mut out = String::new();
    if w.hunts.is_empty() {
        return out;
    }
    out.push_str("\nhunts:\n");
    for h in &w.hunts {
        let c = h.change;
        let state = match (&h.hunt.outcome, &h.hunt.culprit) {
            (None, _) => "goes on at the next start".to_string(),
            (Some(_), Some(culprit)) => format!("culprit {culprit}"),
            (Some(outcome), None) => outcome.clone(),
        };
        let mailed = if h.hunt.mailed.is_some() {
            ", told"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  #{} {}: {}..{}: {state}{mailed}",
            c.id,
            c.series,
            short_sha(&c.before),
            short_sha(&c.after)
        );
        if let Some(report) = &h.report {
            let _ = writeln!(out, "    report: {}", report.display());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change() -> ChangeRow {
        ChangeRow {
            id: 3,
            series: "default/c8".into(),
            before: "b".repeat(40),
            after: "a".repeat(40),
            pct: -10.0,
            low_pct: Some(-12.0),
            high_pct: Some(-8.0),
            status: ChangeStatus::Confirmed,
            first_night: 5,
            p_value: 0.001,
            kind: ChangeKind::Step,
        }
    }

    #[test]
    fn a_night_tells_its_change_and_hunt_with_the_reports_path() {
        let change = change();
        let mut done = ChangeHunt::begun(3, "change-3");
        done.outcome = Some("culprit-found".into());
        done.culprit = Some("c".repeat(40));
        done.mailed = Some(1);
        let going = ChangeHunt::begun(3, "change-3");
        let start = |hunt: &ChangeHunt, report: Option<PathBuf>| {
            text(&Start {
                nights: &[],
                measured: &[],
                last_points: &[],
                changes: std::slice::from_ref(&change),
                hunts: vec![Hunt {
                    change: &change,
                    hunt,
                    report,
                }],
                stopped: Some("the deadline"),
            })
        };
        let told = start(
            &done,
            Some(PathBuf::from("/w/watch-hunts/change-3/report.txt")),
        );
        let expected = format!(
            "nothing new to measure\n\nchanges:\n  #3 default/c8: bbbbbbbb..aaaaaaaa -10.0% \
             [-12.0%, -8.0%]: CONFIRMED SLOWER (change-point p = 0.001)\n\nhunts:\n  \
             #3 default/c8: bbbbbbbb..aaaaaaaa: culprit {}, told\n    report: \
             /w/watch-hunts/change-3/report.txt\n\nstopped before the night's end: the deadline\n",
            "c".repeat(40)
        );
        assert_eq!(told, expected);
        let told = start(&going, None);
        assert!(
            told.contains("aaaaaaaa: goes on at the next start\n\n"),
            "{told}"
        );
        assert!(!told.contains("report:"), "{told}");
    }
}
