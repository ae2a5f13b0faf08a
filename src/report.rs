//! Renderers of a hunt's findings. Each returns text; none prints.

use crate::findings::HuntReport;
use anyhow::Context;
use std::fmt::Write;

/// The result as pretty JSON.
pub fn json(report: &HuntReport) -> anyhow::Result<String> {
    serde_json::to_string_pretty(report).context("cannot encode the result as JSON")
}

/// A short plain-text summary.
pub fn text(report: &HuntReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "outcome: {} ({} commits between {} and {}, threshold {:.1}%)",
        report.outcome.as_str(),
        report.candidates,
        report.good.short(),
        report.bad.short(),
        report.threshold * 100.0
    );
    let e = &report.endpoints;
    let _ = writeln!(
        out,
        "endpoints: {:+.1}% [{:+.1}%, {:+.1}%], {} + {} runs",
        e.change.pct, e.change.low_pct, e.change.high_pct, e.n_base, e.n_new
    );
    for c in &report.culprits {
        let _ = writeln!(out, "first bad commit: {} {}", c.commit, c.subject);
        let _ = writeln!(
            out,
            "  {:.1} -> {:.1} tps, {:+.1}% [{:+.1}%, {:+.1}%] at {:.0}% confidence, {} + {} runs",
            c.before_tps,
            c.after_tps,
            c.change.pct,
            c.change.low_pct,
            c.change.high_pct,
            c.change.confidence * 100.0,
            c.runs_before,
            c.runs_after
        );
    }
    for r in &report.unresolved {
        let _ = writeln!(
            out,
            "unresolved: between {} and {} ({} suspects): {}",
            r.last_good.short(),
            r.first_bad.short(),
            r.suspects.len(),
            r.reason
        );
    }
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let t = &report.totals;
    let _ = writeln!(
        out,
        "totals: {} builds ({:.0} s), {} runs ({} measured, {:.0} s), {:.0} s wall, pgbisect's own CPU {:.1} s",
        t.builds,
        t.build_seconds,
        t.runs,
        t.measured_runs,
        t.bench_seconds,
        t.wall_seconds,
        t.cpu_seconds
    );
    out
}
