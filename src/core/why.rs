//! Why a culprit is slower: what its instrumented runs and its parent's
//! say, beyond the verdict.
//!
//! A post naming a commit gets the next question at once: where does it
//! hurt? After a culprit is confirmed (and in `compare --why`) the culprit
//! and its parent are measured side by side once more, with instruments:
//! at a sweep of client counts, with pgbench's per-statement latencies
//! (`-r`) and its per-transaction log (`--log`, for latency percentiles),
//! while the server's wait events are sampled from `pg_stat_activity`.
//! Those runs are kept apart from the verdict's (their own file, never
//! evidence). This module holds what such a run gives and the pure
//! summaries the reports show: the change of throughput and tail latency
//! per client count, the statements that slowed most, the wait-event
//! shares that moved, and a flag when the spread of the runs changed more
//! than their mean (seed 004's question: "did it merely get noisier?").

use crate::core::stats::{self, Sample};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One statement of the script and its average latency, from `pgbench -r`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementLatency {
    pub statement: String,
    pub ms: f64,
}

/// Latency percentiles of one run, from pgbench's per-transaction log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// Transactions in the log.
    pub transactions: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles of latencies in microseconds; None when
    /// there are none.
    pub fn of_micros(mut micros: Vec<u64>) -> Option<Percentiles> {
        if micros.is_empty() {
            return None;
        }
        micros.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * micros.len() as f64).ceil() as usize).clamp(1, micros.len());
            micros[rank - 1] as f64 / 1000.0
        };
        Some(Percentiles {
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            transactions: micros.len() as u64,
        })
    }
}

/// Wait events seen while a run went on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitEvents {
    /// Samples of the client backends, counted by `Type:Event`; a backend
    /// at work without a wait event counts as `CPU`.
    Sampled(BTreeMap<String, u64>),
    /// Why none were sampled (a server before 9.6, a lab without a
    /// server, a sampler that failed).
    Unavailable(String),
}

/// One instrumented run of one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstrumentedRun {
    pub clients: u32,
    pub tps: f64,
    /// In script order; empty when pgbench printed none.
    pub statements: Vec<StatementLatency>,
    pub latency: Option<Percentiles>,
    pub waits: WaitEvents,
    /// Where the run's output was kept.
    #[serde(default)]
    pub output: Option<std::path::PathBuf>,
    /// What a CPU profiler recorded of the server during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<serde_json::Value>,
}

/// What a lab made of an instrumented run.
#[derive(Debug, Clone, PartialEq)]
pub enum Instrumented {
    Measured(InstrumentedRun),
    /// The run gave no result; why.
    Failed(String),
    /// This lab has no instruments (custom benchmark commands).
    Unsupported(String),
}

/// One side of a client count: the parent's runs or the culprit's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SideStats {
    pub runs: usize,
    pub median_tps: f64,
    /// stddev/average of the runs' TPS, in percent.
    pub cv_pct: f64,
    /// (max-min)/max of the runs' TPS, in percent.
    pub range_pct: f64,
    /// Medians over the runs of each run's percentiles.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl SideStats {
    fn of(runs: &[&InstrumentedRun]) -> Option<SideStats> {
        let sample = Sample::new(runs.iter().map(|r| r.tps).collect()).ok()?;
        let median_of = |f: fn(&Percentiles) -> f64| {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.latency.as_ref().map(f))
                .collect();
            (!v.is_empty()).then(|| stats::median(&v))
        };
        Some(SideStats {
            runs: runs.len(),
            median_tps: sample.median(),
            cv_pct: sample.cv() * 100.0,
            range_pct: sample.range_ratio() * 100.0,
            p50_ms: median_of(|p| p.p50_ms),
            p99_ms: median_of(|p| p.p99_ms),
        })
    }
}

/// The parent against the culprit at one client count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClientPoint {
    pub clients: u32,
    pub before: SideStats,
    pub after: SideStats,
    /// Median TPS change, in percent of the parent's.
    pub tps_change_pct: f64,
    /// Change of the median (50th percentile) latency, in percent.
    #[serde(default)]
    pub p50_change_pct: Option<f64>,
    /// Change of the 99th percentile latency, in percent.
    pub p99_change_pct: Option<f64>,
    /// The spread (stddev/average or (max-min)/max) moved by more
    /// percentage points than the median moved percent.
    pub spread_changed_more: bool,
}

/// One statement, parent against culprit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementChange {
    pub statement: String,
    pub before_ms: f64,
    pub after_ms: f64,
    pub change_pct: f64,
}

/// One wait event's share of the samples on each side, in percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitShare {
    pub event: String,
    pub before_pct: f64,
    pub after_pct: f64,
}

/// What the wait events say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFinding {
    /// Shares of each side's samples, those that moved most first.
    Sampled {
        samples_before: u64,
        samples_after: u64,
        shares: Vec<WaitShare>,
    },
    Unavailable(String),
}

/// A share of samples that moved by less than this many percentage points
/// is left out of the report.
pub const WAIT_SHARE_MOVED: f64 = 2.0;

/// What the CPU profiles of the parent's and the culprit's servers say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuFinding {
    /// The functions whose share of the samples rose and fell most.
    Compared {
        /// The client count whose runs were profiled.
        clients: u32,
        samples_before: u64,
        samples_after: u64,
        /// Largest rise of the self share first.
        risers: Vec<FunctionChange>,
        /// Largest fall first.
        fallers: Vec<FunctionChange>,
        /// Largest rise of the total share (the function with its
        /// callees) first: where new work is spread over callees that
        /// other paths share (a buffer lookup, a hash), the function that
        /// makes the new calls leads here, not among the risers.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        grown: Vec<FunctionChange>,
        /// The functions the culprit's diff changed, as the profile saw
        /// them; `None` where the diff could not be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changed: Option<ChangedFunctions>,
        /// Functions of either list whose change is within two standard
        /// errors of sampling.
        may_be_chance: Vec<String>,
        /// The differential flame graph, in the hunt's folder.
        flame_graph: Option<std::path::PathBuf>,
    },
    /// Why there is no comparison (no `perf`, a kernel that refuses it,
    /// a side with no profile).
    Unavailable(String),
}

/// Where the culprit's diff and its CPU profile meet: of the functions
/// the commit changed, how the share of each that was sampled moved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangedFunctions {
    /// Changed functions found in either side's profile, the largest rise
    /// of the total share (with callees) first.
    pub sampled: Vec<FunctionChange>,
    /// How many changed functions neither profile sampled.
    pub unsampled: usize,
    /// Changed source files outside any function (SQL, macros, data).
    pub other_files: Vec<String>,
}

/// One function's share of a side's CPU samples, from 0 to 1: in the
/// function itself (self) and with it anywhere on the stack (total).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    pub name: String,
    pub self_before: f64,
    pub self_after: f64,
    pub total_before: f64,
    pub total_after: f64,
}

impl FunctionChange {
    /// The change of the self share, in percentage points.
    pub fn self_change(&self) -> f64 {
        100.0 * (self.self_after - self.self_before)
    }

    /// The change of the total share, in percentage points.
    pub fn total_change(&self) -> f64 {
        100.0 * (self.total_after - self.total_before)
    }
}

/// Everything the instrumented runs of a culprit and its parent say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Why {
    /// Full SHAs.
    pub commit: String,
    pub parent: String,
    /// One row per client count, fewest clients first.
    pub points: Vec<ClientPoint>,
    /// Per-statement latencies at `statements_clients`.
    pub statements: Vec<StatementChange>,
    pub statements_clients: u32,
    pub waits: WaitFinding,
    /// Why a part is missing, runs that failed.
    pub notes: Vec<String>,
    /// What a profiler recorded of the parent's and of the culprit's
    /// servers in each run at `statements_clients` (see the hook in the
    /// pg lab), in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles_before: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles_after: Vec<serde_json::Value>,
    /// The two sides' CPU profiles compared, once they are added up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuFinding>,
    /// Runs made for this, both sides, and the seconds they took.
    pub runs: usize,
    pub seconds: f64,
}

/// The runs of both sides, as measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WhyRuns {
    pub before: Vec<InstrumentedRun>,
    pub after: Vec<InstrumentedRun>,
    pub failures: Vec<String>,
}

impl WhyRuns {
    /// The summaries of these runs; `main_clients` picks the client
    /// count whose statements are compared (the hunt's, else the first).
    pub fn summarize(&self, commit: &str, parent: &str, main_clients: u32, seconds: f64) -> Why {
        let mut counts: Vec<u32> = self.before.iter().map(|r| r.clients).collect();
        counts.sort_unstable();
        counts.dedup();
        let points: Vec<ClientPoint> = counts
            .iter()
            .filter_map(|&c| point(c, &at(&self.before, c), &at(&self.after, c)))
            .collect();
        let statements_clients = if counts.contains(&main_clients) {
            main_clients
        } else {
            counts.first().copied().unwrap_or(main_clients)
        };
        let mut notes = self.failures.clone();
        if points.iter().any(|p| p.spread_changed_more) {
            notes.push(
                "! marks a client count where the spread of the runs (stddev/avg or \
                 (max-min)/max) moved more than their median: the commit may make \
                 results less steady rather than (only) slower; more runs would tell"
                    .into(),
            );
        }
        Why {
            commit: commit.to_string(),
            parent: parent.to_string(),
            statements: statements(
                &at(&self.before, statements_clients),
                &at(&self.after, statements_clients),
            ),
            statements_clients,
            waits: waits(&self.before, &self.after),
            points,
            notes,
            profiles_before: profiles(&self.before, statements_clients),
            profiles_after: profiles(&self.after, statements_clients),
            cpu: None,
            runs: self.before.len() + self.after.len(),
            seconds,
        }
    }
}

/// The profiles of a side's runs at `clients`.
fn profiles(side: &[InstrumentedRun], clients: u32) -> Vec<serde_json::Value> {
    at(side, clients)
        .into_iter()
        .filter_map(|r| r.profile.clone())
        .collect()
}

fn at(side: &[InstrumentedRun], clients: u32) -> Vec<&InstrumentedRun> {
    side.iter().filter(|r| r.clients == clients).collect()
}

fn point(
    clients: u32,
    before: &[&InstrumentedRun],
    after: &[&InstrumentedRun],
) -> Option<ClientPoint> {
    let (b, a) = (SideStats::of(before)?, SideStats::of(after)?);
    let tps_change_pct = (a.median_tps / b.median_tps - 1.0) * 100.0;
    let change = |b: Option<f64>, a: Option<f64>| match (b, a) {
        (Some(b), Some(a)) if b > 0.0 => Some((a / b - 1.0) * 100.0),
        _ => None,
    };
    let p99_change_pct = change(b.p99_ms, a.p99_ms);
    let p50_change_pct = change(b.p50_ms, a.p50_ms);
    Some(ClientPoint {
        clients,
        before: b,
        after: a,
        tps_change_pct,
        p50_change_pct,
        p99_change_pct,
        spread_changed_more: spread_changed_more(&b, &a, tps_change_pct),
    })
}

/// Seed 004's question: did the commit make the runs noisier rather than
/// slower? True when stddev/average or (max-min)/max moved by more
/// percentage points than the median moved percent.
pub fn spread_changed_more(before: &SideStats, after: &SideStats, tps_change_pct: f64) -> bool {
    let moved = tps_change_pct.abs();
    (after.cv_pct - before.cv_pct).abs() > moved
        || (after.range_pct - before.range_pct).abs() > moved
}

/// Statements matched by position and text, median latency per side.
fn statements(before: &[&InstrumentedRun], after: &[&InstrumentedRun]) -> Vec<StatementChange> {
    let medians = |runs: &[&InstrumentedRun]| -> Vec<(String, f64)> {
        let Some(first) = runs.first() else {
            return Vec::new();
        };
        first
            .statements
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let ms: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| r.statements.get(i))
                    .filter(|x| x.statement == s.statement)
                    .map(|x| x.ms)
                    .collect();
                (s.statement.clone(), stats::median(&ms))
            })
            .collect()
    };
    let (b, a) = (medians(before), medians(after));
    b.into_iter()
        .zip(a)
        .filter(|((bs, _), (as_, _))| bs == as_)
        .map(|((statement, before_ms), (_, after_ms))| StatementChange {
            statement,
            before_ms,
            after_ms,
            change_pct: if before_ms > 0.0 {
                (after_ms / before_ms - 1.0) * 100.0
            } else {
                0.0
            },
        })
        .collect()
}

/// Wait-event shares of all samples of each side, those that moved by
/// at least [`WAIT_SHARE_MOVED`] points, the largest move first.
fn waits(before: &[InstrumentedRun], after: &[InstrumentedRun]) -> WaitFinding {
    let total = |runs: &[InstrumentedRun]| -> Result<BTreeMap<String, u64>, String> {
        let mut sum = BTreeMap::new();
        for r in runs {
            match &r.waits {
                WaitEvents::Sampled(counts) => {
                    for (k, v) in counts {
                        *sum.entry(k.clone()).or_insert(0) += v;
                    }
                }
                WaitEvents::Unavailable(why) => return Err(why.clone()),
            }
        }
        Ok(sum)
    };
    let (b, a) = match (total(before), total(after)) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(why), _) | (_, Err(why)) => return WaitFinding::Unavailable(why),
    };
    let (nb, na) = (b.values().sum::<u64>(), a.values().sum::<u64>());
    if nb == 0 || na == 0 {
        return WaitFinding::Unavailable("no client backend was seen in the samples".into());
    }
    let share = |m: &BTreeMap<String, u64>, k: &str, n: u64| {
        m.get(k).copied().unwrap_or(0) as f64 * 100.0 / n as f64
    };
    let mut shares: Vec<WaitShare> = b
        .keys()
        .chain(a.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|k| WaitShare {
            event: k.clone(),
            before_pct: share(&b, k, nb),
            after_pct: share(&a, k, na),
        })
        .filter(|s| (s.after_pct - s.before_pct).abs() >= WAIT_SHARE_MOVED)
        .collect();
    shares.sort_by(|x, y| {
        let moved = |s: &WaitShare| (s.after_pct - s.before_pct).abs();
        moved(y).total_cmp(&moved(x))
    });
    WaitFinding::Sampled {
        samples_before: nb,
        samples_after: na,
        shares,
    }
}

#[cfg(test)]
mod tests;
