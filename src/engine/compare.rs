//! Two builds side by side across client counts.
//!
//! The most common benchmark posted to the list is a table of clients
//! against the TPS of master and of master with a patch, with the
//! difference in percent. Run-to-run noise easily reaches a few percent, so
//! each row here also gives the spread of each side and a confidence
//! interval with a verdict, and the runs of the two sides alternate
//! (A, B, A, B, ...) so that drift of the machine hits both alike.
//!
//! A lab of several hosts makes each run on every host at once (a round),
//! so a side's runs come N times faster and each host measures A and B
//! in turn; the comparison then sets each host's runs against that
//! host's only ([`decide::compare_blocked`]).

use crate::core::counts::{
    FunctionChange, FunctionCount, Measure, function_changes, instructions_change_pct,
    transactions_per_billion,
};
use crate::core::decide::{self, Comparison, DecisionConfig, Verdict};
use crate::core::stats::Sample;
use crate::lab::{HostRun, Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};
use crate::report::document::confidence_pct;
use crate::report::findings::{HostFigures, RunSample};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

mod both_ways;
pub use both_ways::{BothWays, Deciding};

/// Which of the two builds a run is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SideId {
    A,
    B,
}

/// One run of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub clients: u32,
    pub side: SideId,
}

/// The runs in the order they are made: per client count, `runs` rounds
/// of A then B.
pub fn schedule(clients: &[u32], runs: usize) -> Vec<Slot> {
    clients
        .iter()
        .flat_map(|&c| {
            (0..runs)
                .flat_map(move |_| [SideId::A, SideId::B].map(|side| Slot { clients: c, side }))
        })
        .collect()
}

/// The spread of one side's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    /// (max - min) / max.
    pub range_ratio: f64,
    /// Standard deviation over the mean.
    pub cv: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        let sample = Sample::new(values.to_vec()).ok()?;
        Some(Spread {
            median: sample.median(),
            range_ratio: sample.range_ratio(),
            cv: sample.cv(),
        })
    }
}

/// One client count: both sides' runs and what they say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub clients: u32,
    pub a_tps: Vec<f64>,
    pub b_tps: Vec<f64>,
    /// Runs that gave no result, per side.
    pub a_failed: usize,
    pub b_failed: usize,
    /// Instructions a transaction, per counted run (`--measure
    /// instructions`); the runs' tps are then not kept: a counted server
    /// runs tens of times slower than its own speed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub a_instructions: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b_instructions: Vec<f64>,
    /// The functions each counted run of a side spent most in.
    #[serde(skip)]
    pub a_functions: Vec<Vec<FunctionCount>>,
    #[serde(skip)]
    pub b_functions: Vec<Vec<FunctionCount>>,
    /// The functions whose instructions a transaction moved most from A
    /// to B, when the runs were counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionChange>,
    /// The host of each of `a_tps` and `b_tps`, when the lab measures on
    /// several; empty for this machine alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub a_hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b_hosts: Vec<String>,
    pub a: Option<Spread>,
    pub b: Option<Spread>,
    /// B against A; `None` when a side has fewer than two results.
    pub comparison: Option<Comparison>,
    /// Each host's medians of A and B, when the runs were made on several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_host: Vec<HostFigures>,
}

impl Row {
    /// The row of `clients` before any run.
    pub fn new(clients: u32) -> Row {
        Row {
            clients,
            a_tps: vec![],
            b_tps: vec![],
            a_instructions: vec![],
            b_instructions: vec![],
            a_functions: vec![],
            b_functions: vec![],
            functions: vec![],
            a_failed: 0,
            b_failed: 0,
            a_hosts: vec![],
            b_hosts: vec![],
            a: None,
            b: None,
            comparison: None,
            per_host: vec![],
        }
    }

    /// Fills in the statistics from the runs: of their counts when they
    /// were counted, of their tps otherwise.
    pub fn analyse(&mut self, cfg: &DecisionConfig) {
        let (a, b) = self.shown();
        let (spread_a, spread_b) = (Spread::of(a), Spread::of(b));
        let enough = a.len() >= 2 && b.len() >= 2;
        (self.a, self.b) = (spread_a, spread_b);
        let (a, b) = self.samples();
        self.per_host = HostFigures::of(&a, &b);
        self.comparison =
            (self.a.is_some() && self.b.is_some() && enough).then(|| self.compare(cfg));
        self.functions = function_changes(
            &self.a_functions,
            &self.b_functions,
            crate::core::counts::SHOWN_FUNCTIONS,
        );
    }

    /// Whether the runs were counted.
    pub fn counted(&self) -> bool {
        !self.a_instructions.is_empty() || !self.b_instructions.is_empty()
    }

    /// Both sides' figures as the table shows them: instructions a
    /// transaction when counted, tps otherwise.
    fn shown(&self) -> (&[f64], &[f64]) {
        if self.counted() {
            (&self.a_instructions, &self.b_instructions)
        } else {
            (&self.a_tps, &self.b_tps)
        }
    }

    /// B against A, host by host when the runs were made on several.
    fn compare(&self, cfg: &DecisionConfig) -> Comparison {
        let (a, b) = self.samples();
        decide::compare_blocked(&RunSample::blocks(&a, &b), cfg, cfg.threshold)
    }

    /// Both sides' runs with their hosts (none on this machine alone), as
    /// decided on: higher is better, so counts as the transactions a
    /// billion instructions buy.
    fn samples(&self) -> (Vec<RunSample>, Vec<RunSample>) {
        let counted = self.counted();
        let side = |values: &[f64], hosts: &[String]| -> Vec<RunSample> {
            let named = hosts.len() == values.len();
            values
                .iter()
                .enumerate()
                .map(|(i, &v)| RunSample {
                    run: i as u64 + 1,
                    tps: if counted {
                        transactions_per_billion(v)
                    } else {
                        v
                    },
                    host: hosts.get(i).filter(|_| named).cloned(),
                })
                .collect()
        };
        let (a, b) = self.shown();
        (side(a, &self.a_hosts), side(b, &self.b_hosts))
    }
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    pub a: Commit,
    pub b: Commit,
    /// How B is named in tables: a SHA, or `A+patch.diff`.
    pub a_label: String,
    pub b_label: String,
    /// Smallest change called a regression, as a fraction.
    pub threshold: f64,
    pub measurement: String,
    /// What decided: tps, or instructions a transaction.
    #[serde(default, skip_serializing_if = "Measure::is_tps")]
    pub measure: Measure,
    /// The hosts that measured, their back end and facts, when not this
    /// machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_on: Option<String>,
    pub rows: Vec<Row>,
    /// B against A again with instruments (`compare --why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<crate::core::why::Why>,
    /// `--measure auto`: the counted runs beside the timed ones (`rows`),
    /// and the measure that decides at each client count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub both_ways: Option<BothWays>,
}

impl CompareReport {
    /// The client counts at which a side has no result at all (every run
    /// failed), with that side's name: such a table compares nothing there.
    pub fn sides_without_results(&self) -> Vec<(u32, &'static str)> {
        let mut missing = Vec::new();
        for row in &self.rows {
            let (a, b) = row.shown();
            for (values, side) in [(a, "A"), (b, "B")] {
                if values.is_empty() {
                    missing.push((row.clients, side));
                }
            }
        }
        missing
    }
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{label} ({commit}) cannot be measured: {reason}")]
    Unbuildable {
        label: String,
        commit: String,
        reason: String,
    },
}

/// Prepares one side, refusing it when it does not build.
fn prepared(lab: &mut dyn Lab, (commit, label): (&Commit, &str)) -> anyhow::Result<()> {
    match lab.prepare(commit)? {
        Prepared::Unbuildable { reason, .. } => Err(CompareError::Unbuildable {
            label: label.to_string(),
            commit: commit.id.clone(),
            reason,
        }
        .into()),
        Prepared::Ready { .. } => Ok(()),
    }
}

/// Measures A and B through `lab`, interleaved, `runs` times each per
/// client count. `note` hears one line per run.
pub fn measure(
    lab: &mut dyn Lab,
    sides: [(&Commit, &str); 2],
    (clients, runs, measure): (&[u32], usize, Measure),
    cfg: &DecisionConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<Row>> {
    // A is built first; on counts, which do not move with a busy CPU, B
    // builds beside A's first counted runs and is refused, if it does not
    // build, when its first run is due; on tps both are built first.
    prepared(lab, sides[0])?;
    let b_ahead = measure == Measure::Instructions && lab.prepare_ahead(sides[1].0);
    if b_ahead {
        note(&crate::lab::preparing_ahead(sides[1].0));
    } else {
        prepared(lab, sides[1])?;
    }
    let mut rows: Vec<Row> = clients.iter().map(|&c| Row::new(c)).collect();
    // A round makes a run on every host: as many rounds as give each side
    // `runs` runs.
    let width = lab.hosts().len().max(1);
    for (i, slot) in schedule(clients, runs.div_ceil(width))
        .into_iter()
        .enumerate()
    {
        let (commit, label) = match slot.side {
            SideId::A => sides[0],
            SideId::B => sides[1],
        };
        let Some(row) = rows.iter_mut().find(|r| r.clients == slot.clients) else {
            continue;
        };
        crate::proc::check_interrupt()?;
        prepared(lab, (commit, label))?;
        let spec = RunSpec {
            clients: slot.clients,
            run: (i * width) as u64 + 1,
            seconds: None,
        };
        let round = match measure {
            Measure::Tps => lab.run_round(commit, spec)?,
            Measure::Instructions => vec![HostRun {
                host: None,
                outcome: lab.counted_run(commit, spec)?,
            }],
        };
        // A run that failed because it was stopped is not a failure of the commit.
        crate::proc::check_interrupt()?;
        for HostRun { host, outcome } in round {
            if let RunOutcome::Measured(m) = &outcome
                && let Some(c) = &m.instructions
                && !c.functions.is_empty()
            {
                match slot.side {
                    SideId::A => row.a_functions.push(c.functions.clone()),
                    SideId::B => row.b_functions.push(c.functions.clone()),
                }
            }
            let (tps, counts, hosts, failed) = match slot.side {
                SideId::A => (
                    &mut row.a_tps,
                    &mut row.a_instructions,
                    &mut row.a_hosts,
                    &mut row.a_failed,
                ),
                SideId::B => (
                    &mut row.b_tps,
                    &mut row.b_instructions,
                    &mut row.b_hosts,
                    &mut row.b_failed,
                ),
            };
            let values = if measure.is_tps() { tps } else { counts };
            let label = match &host {
                Some(h) => format!("{label} on {h}"),
                None => label.to_string(),
            };
            if take_run(outcome, (slot.clients, measure), &label, values, note) {
                hosts.extend(host);
            } else {
                *failed += 1;
            }
        }
    }
    let cfg = measure.decision(*cfg);
    for row in &mut rows {
        row.analyse(&cfg);
    }
    Ok(rows)
}

/// Adds a run's result to `values`, telling `note`; false when it gave
/// none.
fn take_run(
    outcome: RunOutcome,
    (clients, measure): (u32, Measure),
    label: &str,
    values: &mut Vec<f64>,
    note: &mut dyn FnMut(&str),
) -> bool {
    match outcome {
        RunOutcome::Measured(m) if !measure.is_tps() => match m.instructions {
            Some(c) if c.per_transaction.is_finite() && c.per_transaction > 0.0 => {
                note(&format!(
                    "{label} c={clients}: {:.0} instructions a transaction",
                    c.per_transaction
                ));
                values.push(c.per_transaction);
                true
            }
            _ => {
                note(&format!("{label} c={clients}: the run gave no count"));
                false
            }
        },
        RunOutcome::Measured(m) if m.is_usable() => {
            note(&format!("{label} c={clients}: {:.1} tps", m.tps));
            values.push(m.tps);
            true
        }
        RunOutcome::Measured(m) => {
            note(&format!("{label} c={clients}: unusable tps {}", m.tps));
            false
        }
        RunOutcome::Failed { reason } => {
            note(&format!("{label} c={clients}: run failed: {reason}"));
            false
        }
    }
}

fn verdict_word(c: &Comparison) -> &'static str {
    if c.change.low_pct > 0.0 {
        "faster"
    } else {
        match c.verdict {
            Verdict::Regressed => "SLOWER",
            Verdict::Unchanged => "same",
            Verdict::Unclear => "unclear",
        }
    }
}

/// The table as posted to the list: medians, spreads, the difference with
/// its interval, and a verdict per row.
pub fn table(report: &CompareReport) -> String {
    let mut out = one_table(report);
    if let Some(both) = &report.both_ways {
        let counted = one_table(&both.counted_report(report));
        // The header (A, B, what measured) is said once.
        let body = counted
            .split_once("\n\n")
            .map_or(counted.as_str(), |(_, b)| b);
        out.push('\n');
        out.push_str(body);
        out.push_str(&both.deciding_text());
    }
    out
}

/// [`table`] of one measure's rows.
fn one_table(report: &CompareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {} {}", report.a.short(), report.a_label);
    let _ = writeln!(out, "B: {} {}", report.b.short(), report.b_label);
    let _ = writeln!(out, "measured with: {}", report.measurement);
    if let Some(hosts) = &report.measured_on {
        let _ = writeln!(out, "measured on: {hosts}");
    }
    let counted = !report.measure.is_tps();
    let (a_head, b_head) = if counted {
        ("A instr/tx", "B instr/tx")
    } else {
        ("A tps", "B tps")
    };
    let _ = writeln!(
        out,
        "\n{:>7} | {:>11} {:>7} | {:>11} {:>7} | {:>7} | {:>19} | {:>4} | verdict",
        "clients", a_head, "spread", b_head, "spread", "diff", "interval", "runs"
    );
    let _ = writeln!(out, "{}", "-".repeat(96));
    for row in &report.rows {
        let side = |s: &Option<Spread>| match s {
            Some(s) if counted => format!("{:>11.0} {:>6.2}%", s.median, s.range_ratio * 100.0),
            Some(s) => format!("{:>11.1} {:>6.1}%", s.median, s.range_ratio * 100.0),
            None => format!("{:>11} {:>7}", "-", "-"),
        };
        let (diff, interval, verdict) = match &row.comparison {
            Some(c) => (
                diff_text(c, counted),
                interval_text(c, counted),
                format!(
                    "{} ({}%)",
                    verdict_word(c),
                    confidence_pct(c.change.confidence)
                ),
            ),
            None => ("-".into(), "-".into(), "no data".into()),
        };
        let _ = writeln!(
            out,
            "{:>7} | {} | {} | {:>7} | {:>19} | {:>4} | {}",
            row.clients,
            side(&row.a),
            side(&row.b),
            diff,
            interval,
            format!("{}/{}", row.shown().0.len(), row.shown().1.len()),
            verdict
        );
    }
    out.push_str(&per_host_table(report));
    let estimate = if report.rows.iter().any(|r| !r.per_host.is_empty()) {
        "each host's runs set against its own, the hosts combined: stratified t or \
         Van Elteren estimate"
    } else {
        "Welch or Hodges-Lehmann estimate"
    };
    if counted {
        out.push_str(&functions_table(report));
        let _ = writeln!(
            out,
            "\ninstr/tx = instructions the server's backends executed a transaction (median of \
             the counted runs); spread = (max-min)/max; diff = B's instructions against A's \
             ({estimate} on the transactions a billion instructions buy); SLOWER = B costs at \
             least {:.1}% more with confidence",
            threshold_as_instructions(report.threshold)
        );
        return out;
    }
    let _ = writeln!(
        out,
        "\nspread = (max-min)/max of a side's runs; diff = B against A ({estimate}); \
         SLOWER = B dropped by at least {:.1}% with confidence",
        report.threshold * 100.0
    );
    out
}

/// Where the instructions went: per client count, the functions whose
/// instructions a transaction moved most from A to B.
fn functions_table(report: &CompareReport) -> String {
    let mut out = String::new();
    for row in report.rows.iter().filter(|r| !r.functions.is_empty()) {
        let _ = writeln!(
            out,
            "\nwhere the instructions went, {} client(s): a transaction's instructions in each \
             function (medians of the counted runs)",
            row.clients
        );
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>8}  function",
            "A", "B", "B-A", "B/A"
        );
        for f in &row.functions {
            let ratio = f.ratio_text();
            let _ = writeln!(
                out,
                "{:>12.0} {:>12.0} {:>+12.0} {:>8}  {}",
                f.a,
                f.b,
                f.b - f.a,
                ratio,
                crate::shown::visible_line(&f.name)
            );
        }
    }
    out
}

/// B's change against A: of tps, or of instructions a transaction (a
/// drop of what a billion instructions buy is a rise of instructions).
fn diff_text(c: &Comparison, counted: bool) -> String {
    if counted {
        format!("{:+.2}%", instructions_change_pct(c.change.pct))
    } else {
        format!("{:+.1}%", c.change.pct)
    }
}

/// The interval of [`diff_text`]'s change.
fn interval_text(c: &Comparison, counted: bool) -> String {
    let (low, high) = (c.change.low_pct.max(-100.0), c.change.high_pct.min(1000.0));
    if counted {
        // The higher end of what instructions buy is the lower end of
        // the instructions.
        let (low, high) = (instructions_change_pct(high), instructions_change_pct(low));
        format!("{low:+.2}% .. {high:+.2}%")
    } else {
        format!("{low:+.1}% .. {high:+.1}%")
    }
}

/// The threshold (a fraction of what instructions buy) as the rise of
/// instructions it is, in percent.
fn threshold_as_instructions(threshold: f64) -> f64 {
    instructions_change_pct(-threshold * 100.0)
}

/// Each host's medians per client count, when the runs were made on
/// several hosts; nothing otherwise.
fn per_host_table(report: &CompareReport) -> String {
    let mut out = String::new();
    if report.rows.iter().all(|r| r.per_host.is_empty()) {
        return out;
    }
    let width = report
        .rows
        .iter()
        .flat_map(|r| &r.per_host)
        .map(|h| h.host.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let _ = writeln!(
        out,
        "\nper host:\n{:>7} | {:<width$} | {:>11} | {:>11} | {:>7} | {:>5}",
        "clients", "host", "A tps", "B tps", "diff", "runs"
    );
    let _ = writeln!(out, "{}", "-".repeat(width + 56));
    let tps = |m: Option<f64>| m.map_or_else(|| "-".to_string(), |m| format!("{m:.1}"));
    for row in &report.rows {
        for h in &row.per_host {
            let diff = h
                .change_pct()
                .map_or_else(|| "-".to_string(), |pct| format!("{pct:+.1}%"));
            let _ = writeln!(
                out,
                "{:>7} | {:<width$} | {:>11} | {:>11} | {:>7} | {:>5}",
                row.clients,
                h.host,
                tps(h.before_tps),
                tps(h.after_tps),
                diff,
                format!("{}/{}", h.runs_before, h.runs_after)
            );
        }
    }
    out
}

/// The chart's series: A and B per client count.
pub fn chart_series(report: &CompareReport) -> Vec<crate::report::chart::Series> {
    let series = |label: &str, pick: fn(&Row) -> &Vec<f64>| crate::report::chart::Series {
        label: label.to_string(),
        points: report
            .rows
            .iter()
            .map(|r| (r.clients, pick(r).clone()))
            .collect(),
    };
    vec![
        series(&format!("A {}", report.a_label), |r| &r.a_tps),
        series(&format!("B {}", report.b_label), |r| &r.b_tps),
    ]
}

#[cfg(test)]
mod tests;
