//! The finding a hunted change is mailed as: what moved and by how much,
//! the commit that did it, the series around it as a plain-text chart, and
//! the hunt's report with its why-section. Pure: the text from the facts.

use crate::core::counts::{Measure, transactions_per_billion};
use crate::model::short_sha;
use crate::report::findings::{Culprit, HuntOutcome, HuntReport};
use crate::report::watch::measured;
use crate::store::points::Point;
use crate::store::{ChangeRow, series_measure};
use std::fmt::Write;

/// Points shown on either side of the change in the chart.
pub const AROUND: usize = 10;

/// Widest bar of the chart, in characters.
const BAR: usize = 40;

/// What names the finding's message the same way every time it could be
/// sent (see [`crate::report::email::stable_message_id`]): the series and
/// the two commits, not the database's row, so that a list drops a repeat
/// even from another work dir.
pub fn message_id_part(change: &ChangeRow) -> String {
    format!(
        "watch.{}.{}.{}",
        change.series,
        short_sha(&change.before),
        short_sha(&change.after)
    )
}

/// The subject: the series, the size and the culprit (or the outcome).
pub fn subject(change: &ChangeRow, report: &HuntReport) -> String {
    let what = match report.culprits.first() {
        Some(c) => format!("{} {}", short_sha(&c.commit), c.subject),
        None => format!("no single commit named ({})", outcome_words(report.outcome)),
    };
    format!(
        "pgbisect watch: {} {}: {what}",
        change.series,
        measured::size(change).short()
    )
}

/// The mail's body: the drop with its interval, the culprit and how to
/// measure it again, with the trailer that credits `reporter` (the
/// watcher, `pgbisect watch <its address>`) in the fix, the chart of
/// `points` (the series') around the change, then `report_text` (the
/// hunt's text report, the why-section in it) kept at `report_path`.
pub fn body(
    change: &ChangeRow,
    report: &HuntReport,
    points: &[Point],
    (report_text, report_path): (&str, &str),
    reporter: &str,
) -> String {
    let mut out = String::new();
    let size = measured::size(change);
    let interval = match size.interval {
        Some((lo, hi)) => format!(" (interval {lo:+.1}% to {hi:+.1}%)"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "{}: {}{interval} between {} and {}, nightly points measured again side by side.",
        change.series,
        size.short(),
        short_sha(&change.before),
        short_sha(&change.after)
    );
    out.push('\n');
    if report.culprits.is_empty() {
        let _ = writeln!(
            out,
            "The hunt over the {} commits between them named no single commit ({}); its \
             report below says why.",
            report.candidates,
            outcome_words(report.outcome)
        );
    }
    for c in &report.culprits {
        let _ = writeln!(out, "Culprit: {} {}", c.commit, c.subject);
        let _ = writeln!(
            out,
            "  {}, {} against its parent {}",
            culprit_levels(report.measure, c),
            report.measure.change_text(&c.change),
            short_sha(&c.parent)
        );
    }
    if let Some(c) = report.culprits.first() {
        let _ = writeln!(
            out,
            "\nTo measure it again, in a PostgreSQL checkout:\n\n    {}",
            again(report, c)
        );
        // As the kernel test robot's reports end: the line a fix carries.
        let _ = writeln!(
            out,
            "\nIf you fix it in a commit of its own, kindly add this trailer to its \
             message:\n\nReported-by: {reporter}"
        );
    }
    let _ = writeln!(
        out,
        "\nThe series around the change ({} over the reference's):\n",
        match series_measure(&change.series) {
            Measure::Tps => "throughput",
            Measure::Instructions =>
                "what instructions buy, the inverse of instructions a \
                                      transaction,",
        }
    );
    out.push_str(&chart(points, change, AROUND));
    let _ = write!(out, "\nThe hunt's report ({report_path}):\n\n{report_text}");
    out
}

/// `body` with the change's page on the site (`page`, an address) named
/// below its first line, the one that says what moved.
pub fn with_page(body: &str, page: &str) -> String {
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    format!("{first}\nIts page: {page}\n{rest}")
}

/// The comparison of `culprit` against its parent as the hunt measured
/// it: its profile, client count and measure.
fn again(report: &HuntReport, culprit: &Culprit) -> String {
    let mut words = vec![
        "pgbisect".to_string(),
        "compare".into(),
        short_sha(&culprit.parent).to_string(),
        short_sha(&culprit.commit).to_string(),
    ];
    if !report.profile_name.is_empty() && report.profile_name != "default" {
        words.extend(["--profile".into(), report.profile_name.clone()]);
    }
    words.extend(["--clients".into(), report.clients.to_string()]);
    if !report.measure.is_tps() {
        words.extend(["--measure".into(), report.measure.name().to_string()]);
    }
    crate::report::layout::shell_line(&words)
}

fn outcome_words(outcome: HuntOutcome) -> &'static str {
    match outcome {
        HuntOutcome::CulpritFound => "culprit found",
        HuntOutcome::NoRegression => "the drop did not reproduce between the two commits",
        HuntOutcome::Inconclusive => "inconclusive",
    }
}

/// A culprit's level against its parent's: `1000 -> 900 tps`, or
/// `45000 -> 45540 instructions a transaction`.
fn culprit_levels(measure: Measure, c: &Culprit) -> String {
    let level = |figure: f64| match measure {
        Measure::Tps => format!("{figure:.0}"),
        Measure::Instructions => format!("{:.0}", transactions_per_billion(figure)),
    };
    let unit = match measure {
        Measure::Tps => "tps",
        Measure::Instructions => "instructions a transaction",
    };
    format!("{} -> {} {unit}", level(c.before_tps), level(c.after_tps))
}

/// A line a point of `change`'s series, `around` either side of it: the
/// night's date, the commit, the ratio to the reference and a bar, with
/// the first point after the change marked. Bars start from a little
/// below the lowest point shown, so a 5% step is a visible step.
pub fn chart(points: &[Point], change: &ChangeRow, around: usize) -> String {
    let series: Vec<&Point> = points
        .iter()
        .filter(|p| p.series == change.series)
        .collect();
    let Some(at) = series.iter().position(|p| p.commit == change.after) else {
        return "  (the series' points around the change are no longer stored)\n".into();
    };
    let shown = &series[at.saturating_sub(around)..(at + around + 1).min(series.len())];
    let (lo, hi) = shown.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.ratio), hi.max(p.ratio))
    });
    let floor = lo - (hi - lo) * 0.25;
    let bar = |r: f64| {
        let share = if hi > floor {
            (r - floor) / (hi - floor)
        } else {
            1.0
        };
        "#".repeat(((share * BAR as f64).round() as usize).clamp(1, BAR))
    };
    let mut out = String::new();
    for p in shown {
        let mark = if p.commit == change.after {
            "  <- after the change"
        } else if p.commit == change.before {
            "  <- before it"
        } else {
            ""
        };
        let day = crate::time::rfc3339_from_unix(p.clock);
        let _ = writeln!(
            out,
            "  {} {} {:.4} |{:<BAR$}|{mark}",
            day.get(..10).unwrap_or(&day),
            short_sha(&p.commit),
            p.ratio,
            bar(p.ratio),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ChangeStatus;

    const WATCHER: &str = "pgbisect watch <pgbisect@bench.example.org>";

    fn point(day: i64, commit: &str, ratio: f64) -> Point {
        Point {
            night: day,
            clock: day * 86_400 + 86_399,
            commit: commit.into(),
            subject: format!("commit {commit}"),
            committed: day * 86_400,
            series: "default/c8".into(),
            tps: 1000.0 * ratio,
            reference_tps: 1000.0,
            ratio,
            latency_ms: None,
        }
    }

    fn change() -> ChangeRow {
        ChangeRow {
            id: 3,
            series: "default/c8".into(),
            before: "c4".into(),
            after: "c5".into(),
            pct: -10.0,
            low_pct: Some(-12.0),
            high_pct: Some(-8.0),
            status: ChangeStatus::Confirmed,
            first_night: 5,
            p_value: 0.001,
            kind: crate::store::ChangeKind::Step,
        }
    }

    #[test]
    fn the_chart_shows_a_line_a_night_with_the_step_marked() {
        let points: Vec<Point> = (0..12)
            .map(|d| point(d, &format!("c{d}"), if d < 5 { 1.0 } else { 0.9 }))
            .collect();
        let text = chart(&points, &change(), 3);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert_eq!(
            lines[0],
            format!("  1970-01-03 c2 1.0000 |{}|", "#".repeat(40))
        );
        assert!(lines[2].ends_with("|  <- before it"), "{text}");
        assert!(lines[3].ends_with("|  <- after the change"), "{text}");
        // 0.9 of a scale from 0.875 to 1.0: a fifth of the bar.
        assert_eq!(
            lines[3],
            format!(
                "  1970-01-06 c5 0.9000 |{:<40}|  <- after the change",
                "#".repeat(8)
            )
        );
        // Other series are left out; a change no longer stored is said so.
        let mut gone = change();
        gone.after = "c99".into();
        assert!(chart(&points, &gone, 3).contains("no longer stored"));
    }

    #[test]
    fn the_page_is_named_below_what_moved() {
        let body = "profile/c8: -10.0% between a and b.\n\nCulprit: c\n";
        assert_eq!(
            with_page(body, "https://s.org/change-3.html"),
            "profile/c8: -10.0% between a and b.\nIts page: https://s.org/change-3.html\n\n\
             Culprit: c\n"
        );
    }

    #[test]
    fn the_message_id_names_the_series_and_the_commits() {
        let c = ChangeRow {
            before: "a".repeat(40),
            after: "b".repeat(40),
            ..change()
        };
        assert_eq!(
            message_id_part(&c),
            format!("watch.default/c8.{}.{}", "a".repeat(8), "b".repeat(8))
        );
    }

    /// The hunt of the report fixture.
    fn hunted() -> HuntReport {
        serde_json::from_str(include_str!("../../../tests/fixtures/reports/hunt.json")).unwrap()
    }

    /// The finding's body of `report`, over four flat nights.
    fn body_of(report: &HuntReport) -> String {
        let points: Vec<Point> = (0..4).map(|d| point(d, &format!("c{d}"), 1.0)).collect();
        let report_text = ("the report", "/w/report.txt");
        body(&change(), report, &points, report_text, WATCHER)
    }

    #[test]
    fn the_mail_says_how_to_measure_the_culprit_again() {
        let mut report = hunted();
        report.profile_name = "/etc/pgbisect/nightly profile.toml".into();
        let c = report.culprits[0].clone();
        let body = body_of(&report);
        let line = format!(
            "    pgbisect compare {} {} --profile '/etc/pgbisect/nightly profile.toml' --clients {}",
            short_sha(&c.parent),
            short_sha(&c.commit),
            report.clients
        );
        assert!(body.contains(&line), "{body}");
        report.measure = crate::core::counts::Measure::Instructions;
        report.profile_name = "default".into();
        let body = body_of(&report);
        assert!(
            body.contains(&format!(
                "--clients {} --measure instructions\n",
                report.clients
            )),
            "{body}"
        );
        assert!(!body.contains("--profile"), "{body}");
        report.culprits.clear();
        let body = body_of(&report);
        assert!(!body.contains("To measure it again"), "{body}");
        assert!(!body.contains("Reported-by:"), "{body}");
    }

    #[test]
    fn the_culprit_is_told_how_to_credit_the_report_right_after_the_command() {
        let report = hunted();
        let body = body_of(&report);
        let lines: Vec<&str> = body.lines().collect();
        let command = lines
            .iter()
            .position(|l| l.starts_with("    pgbisect compare "))
            .unwrap();
        assert_eq!(
            lines[command + 1..command + 5],
            [
                "",
                "If you fix it in a commit of its own, kindly add this trailer to its message:",
                "",
                "Reported-by: pgbisect watch <pgbisect@bench.example.org>",
            ],
            "{body}"
        );
        // The culprit's author is not named in the body (only --cc-author
        // writes the address, in the Cc header).
        assert!(!body.contains(&report.culprits[0].author), "{body}");
    }
}
