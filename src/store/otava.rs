//! The series as CSV in the layout Apache Otava (formerly Hunter) reads:
//! a time column, the attributes, then one column per metric, a row per
//! measured commit. An Otava test reads it with
//!
//! ```yaml
//! tests:
//!   pgbisect:
//!     type: csv
//!     file: watch.csv
//!     time_column: time
//!     attributes: [commit, branch, night, reference]
//!     metrics: ["select-only/c8.ratio", "select-only/c8.tps"]
//! ```
//!
//! Each series gives three metrics: `<series>.ratio` (over the reference,
//! what the watcher reads), `<series>.tps` and `<series>.reference_tps`;
//! a count series (`<profile>/c<N>/instructions`) gives `<series>.ratio`,
//! `<series>.instructions` and `<series>.reference_instructions`, in
//! instructions a transaction, its ratio theirs (up is a slowdown).
//! The last column, `reference`, is the commit the row's ratios are over:
//! its night's reference, which `pgbisect watch --reference` moves, so
//! that ratios over different references are not read as one level.

use super::Night;
use super::points::Point;
use super::series_measure;
use crate::core::counts::{Measure, transactions_per_billion};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The attributes, after the time column.
pub const ATTRIBUTES: [&str; 3] = ["commit", "branch", "night"];

/// The column after the metrics: the commit a row's ratios are over.
pub const REFERENCE: &str = "reference";

/// The CSV text of `points` (of `nights`, the nights of `branch`). The
/// time is the night's clock, a second apart for each commit of a night so
/// that the rows keep their order, in UTC.
pub fn csv(points: &[Point], nights: &[Night], branch: &str) -> String {
    let series: BTreeSet<&str> = points.iter().map(|p| p.series.as_str()).collect();
    let mut out = String::from("time");
    for a in ATTRIBUTES {
        let _ = write!(out, ",{a}");
    }
    for s in &series {
        let metrics = match series_measure(s) {
            Measure::Tps => ["ratio", "tps", "reference_tps"],
            Measure::Instructions => ["ratio", "instructions", "reference_instructions"],
        };
        for metric in metrics {
            let _ = write!(out, ",{}", quoted(&format!("{s}.{metric}")));
        }
    }
    let _ = writeln!(out, ",{REFERENCE}");
    // One row per night and commit, in the points' order.
    let mut rows: Vec<(i64, &str)> = Vec::new();
    for p in points {
        if !rows.contains(&(p.night, p.commit.as_str())) {
            rows.push((p.night, p.commit.as_str()));
        }
    }
    let mut within = 0;
    for (k, &(night, commit)) in rows.iter().enumerate() {
        within = if k > 0 && rows[k - 1].0 == night {
            within + 1
        } else {
            0
        };
        let clock = points
            .iter()
            .find(|p| p.night == night)
            .map_or(0, |p| p.clock);
        let time = crate::time::rfc3339_from_unix(clock + within);
        let _ = write!(out, "{time},{},{},{night}", quoted(commit), quoted(branch));
        for s in &series {
            match points
                .iter()
                .find(|p| p.night == night && p.commit == commit && p.series == *s)
            {
                Some(p) if series_measure(s) == Measure::Instructions => {
                    let per = transactions_per_billion;
                    let (ratio, own, reference) = (1.0 / p.ratio, per(p.tps), per(p.reference_tps));
                    let _ = write!(out, ",{ratio:.6},{own:.3},{reference:.3}");
                }
                Some(p) => {
                    let _ = write!(out, ",{:.6},{:.3},{:.3}", p.ratio, p.tps, p.reference_tps);
                }
                None => out.push_str(",,,"),
            }
        }
        let reference = nights.iter().find(|n| n.id == night);
        let reference = reference.map_or("", |n| n.reference.as_str());
        let _ = writeln!(out, ",{}", quoted(reference));
    }
    out
}

/// A field as RFC 4180 has it: quoted, its quotes doubled, when it holds
/// a comma, a quote or a line break (a series or branch named `x,y`
/// would shift every column after it).
fn quoted(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(night: i64, commit: &str, series: &str, ratio: f64) -> Point {
        Point {
            night,
            clock: 86_400 * night,
            commit: commit.into(),
            subject: String::new(),
            committed: 0,
            series: series.into(),
            tps: ratio * 100.0,
            reference_tps: 100.0,
            ratio,
            latency_ms: None,
        }
    }

    /// Night `id` of master, its ratios over `reference`.
    fn night(id: i64, reference: &str) -> Night {
        Night {
            id,
            clock: 86_400 * id,
            branch: "master".into(),
            tip: String::new(),
            status: crate::store::NightStatus::Done,
            reason: None,
            reference: reference.into(),
            commits: Vec::new(),
        }
    }

    #[test]
    fn a_row_per_commit_and_three_columns_per_series() {
        let points = [
            point(1, "aaa", "p/c1", 1.0),
            point(1, "aaa", "p/c8", 0.5),
            point(1, "bbb", "p/c1", 0.9),
            point(2, "ccc", "p/c8", 0.25),
        ];
        let text = csv(&points, &[night(1, "r1"), night(2, "r1")], "master");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "time,commit,branch,night,p/c1.ratio,p/c1.tps,p/c1.reference_tps,\
             p/c8.ratio,p/c8.tps,p/c8.reference_tps,reference"
        );
        assert_eq!(
            lines[1],
            "1970-01-02T00:00:00Z,aaa,master,1,1.000000,100.000,100.000,0.500000,50.000,100.000,r1"
        );
        assert_eq!(
            lines[2],
            "1970-01-02T00:00:01Z,bbb,master,1,0.900000,90.000,100.000,,,,r1"
        );
        assert_eq!(
            lines[3],
            "1970-01-03T00:00:00Z,ccc,master,2,,,,0.250000,25.000,100.000,r1"
        );
        assert_eq!(lines.len(), 4);
        assert_eq!(quoted("a,b"), "\"a,b\"");
    }

    #[test]
    fn a_count_series_is_written_in_instructions_a_transaction() {
        // 50,000 instructions a transaction against the reference's 40,000.
        let bought = |n: f64| 1e9 / n;
        let p = Point {
            tps: bought(50_000.0),
            reference_tps: bought(40_000.0),
            ratio: bought(50_000.0) / bought(40_000.0),
            ..point(1, "aaa", "p/c1/instructions", 1.0)
        };
        let text = csv(&[p], &[night(1, "r1")], "master");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "time,commit,branch,night,p/c1/instructions.ratio,p/c1/instructions.instructions,\
             p/c1/instructions.reference_instructions,reference"
        );
        assert!(
            lines[1].ends_with(",1.250000,50000.000,40000.000,r1"),
            "{text}"
        );
    }

    #[test]
    fn names_with_commas_quotes_and_line_breaks_keep_their_columns() {
        let points = [
            point(1, "aaa", "x,y/c8", 1.0),
            point(1, "aaa", "say \"hi\"/c1", 0.5),
            point(2, "bbb", "x,y/c8", 0.25),
        ];
        let text = csv(&points, &[night(1, "r1"), night(2, "r1")], "rel,15\r\n");
        let rows = fields(&text);
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows.iter().all(|r| r.len() == 4 + 6 + 1), "{rows:?}");
        assert_eq!(rows[0][4], "say \"hi\"/c1.ratio");
        assert_eq!(rows[0][7], "x,y/c8.ratio");
        assert_eq!(rows[1][2], "rel,15\r\n");
        assert_eq!(rows[2][7], "0.250000");
    }

    #[test]
    fn each_row_names_the_reference_its_ratios_are_over_after_a_move() {
        // `--reference` moved at night 3: the same commit's ratio is over
        // another commit from then on.
        let points = [
            point(1, "aaa", "p/c8", 1.0),
            point(2, "bbb", "p/c8", 1.0),
            point(3, "ccc", "p/c8", 1.33),
        ];
        let nights = [night(1, "old"), night(2, "old"), night(3, "new")];
        let rows = fields(&csv(&points, &nights, "master"));
        let last: Vec<&str> = rows.iter().map(|r| r[r.len() - 1].as_str()).collect();
        assert_eq!(last, ["reference", "old", "old", "new"]);
        // The columns before it are where they were.
        assert_eq!(
            rows[3][..5],
            ["1970-01-04T00:00:00Z", "ccc", "master", "3", "1.330000"]
        );
    }

    /// The rows of RFC 4180 text, read as a CSV reader does.
    fn fields(text: &str) -> Vec<Vec<String>> {
        let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
        let (mut quoting, mut chars) = (false, text.chars().peekable());
        while let Some(c) = chars.next() {
            match (quoting, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoting = false,
                (true, c) => field.push(c),
                (false, '"') => quoting = true,
                (false, ',') => row.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => field.push(c),
            }
        }
        rows
    }
}
