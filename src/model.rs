//! What every floor speaks of: commits, what building one gave, what one
//! run measured, and what the work cost.
//!
//! These types sit below the measuring seam ([`crate::lab`]), so the git
//! layer, the journal and the reports can name a commit or a run without
//! depending on how runs are made.

use crate::core::counts::Measure;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A commit the hunt may measure, with what a report needs to name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Full 40-hex SHA.
    pub id: String,
    /// First line of the message.
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
    /// Author date, RFC 3339.
    pub date: String,
}

impl Commit {
    /// A commit known only by its SHA (simulations, tests).
    pub fn bare(id: impl Into<String>) -> Self {
        Commit {
            id: id.into(),
            subject: String::new(),
            author: String::new(),
            date: String::new(),
        }
    }

    /// The abbreviated SHA used in tables and subjects.
    pub fn short(&self) -> &str {
        short_sha(&self.id)
    }
}

/// A SHA cut to the 8 characters used in tables and subjects.
pub fn short_sha(sha: &str) -> &str {
    sha_prefix(sha, 8)
}

/// Characters of a SHA in a command that names a commit again (`--good`
/// of a hunt to run again) or in a digest's culprit: more than
/// [`short_sha`]'s, so that it stays one commit in a repository for years.
pub const NAMED_SHA: usize = 12;

/// The first `chars` characters of `sha`, the whole of a shorter one.
/// Cut at a character, never inside one: an id read from a results
/// database another user can write to need not be hex.
pub fn sha_prefix(sha: &str, chars: usize) -> &str {
    let end = sha
        .char_indices()
        .nth(chars)
        .map_or(sha.len(), |(at, _)| at);
    &sha[..end]
}

/// What preparing (building) a commit gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Prepared {
    /// Ready to run; `cached` is true when nothing had to be built.
    Ready { cached: bool },
    /// The commit cannot be measured (like `git bisect skip`).
    Unbuildable {
        reason: String,
        log: Option<PathBuf>,
    },
}

/// The most transactions a second a run is taken to make: a thousand times
/// what the largest machines reach with pgbench, and far enough below
/// `f64::MAX` that sums and squares of a hunt's runs stay finite.
pub const MAX_TPS: f64 = 1e12;

/// One benchmark result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Transactions per second: the metric every decision is made on.
    pub tps: f64,
    /// Average latency in milliseconds, when the benchmark printed it.
    pub latency_ms: Option<f64>,
    /// Failed transactions (pgbench 15+), when printed.
    pub failed_transactions: Option<u64>,
    /// Latency percentiles of the transactions pgbench logged, when the
    /// run logged a sample of them (`watch --percentiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<crate::core::why::Percentiles>,
    /// The instructions a transaction cost, when the run counted them
    /// (`--measure instructions`): its `tps` is then that of a server
    /// slowed by the counter, never a level to report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<crate::core::counts::Counted>,
    /// Where the full benchmark output was kept.
    pub output: Option<PathBuf>,
}

impl Measurement {
    /// Whether the throughput can be decided on: finite and above zero
    /// (`tps = 0` is a run in which nothing completed, not a level).
    pub fn is_usable(&self) -> bool {
        self.tps.is_finite() && self.tps > 0.0
    }

    /// The figure a decision is made on, higher being better, by
    /// `measure`: the tps, or the transactions a billion instructions buy
    /// ([`crate::core::counts::transactions_per_billion`]); `None` when
    /// the run gave no usable one (nothing completed, or no count).
    pub fn figure(&self, measure: Measure) -> Option<f64> {
        match measure {
            Measure::Tps => self.is_usable().then_some(self.tps),
            Measure::Instructions => self
                .instructions
                .as_ref()
                .map(|c| c.per_transaction)
                .filter(|n| n.is_finite() && *n > 0.0)
                .map(crate::core::counts::transactions_per_billion),
        }
    }

    /// Checks a measurement read back (from a journal): a throughput above
    /// zero and at most [`MAX_TPS`], latencies finite and not negative.
    pub fn check(&self) -> Result<(), String> {
        if !(self.tps > 0.0 && self.tps <= MAX_TPS) {
            let tps = self.tps;
            let shown = if tps.abs() >= 1e9 {
                format!("{tps:e}")
            } else {
                format!("{tps}")
            };
            return Err(format!(
                "tps {shown} is not a throughput a run gives (above 0, at most {MAX_TPS:e})"
            ));
        }
        let latencies = self.latency_ms.into_iter().chain(
            self.percentiles
                .iter()
                .flat_map(|p| [p.p50_ms, p.p95_ms, p.p99_ms]),
        );
        for ms in latencies {
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(format!(
                    "a latency of {ms} ms is not one a run gives (finite, not negative)"
                ));
            }
        }
        Ok(())
    }
}

impl RunOutcome {
    /// A run that gave only its throughput.
    pub fn tps_only(tps: f64) -> Self {
        RunOutcome::Measured(Measurement {
            instructions: None,
            tps,
            latency_ms: None,
            failed_transactions: None,
            percentiles: None,
            output: None,
        })
    }
}

/// What one benchmark run gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunOutcome {
    Measured(Measurement),
    /// The run produced no metric (crash, no `tps =` line); `reason` carries
    /// the tail of the output.
    Failed {
        reason: String,
    },
}

/// Work the lab has really done, for the report's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LabTotals {
    /// Builds really made (cache hits not counted).
    pub builds: u64,
    pub build_seconds: f64,
    /// Benchmark runs really made, warm-ups included.
    pub runs: u64,
    /// Of `runs`, how many were warm-ups whose result was discarded.
    pub warmup_runs: u64,
    pub bench_seconds: f64,
    /// Templates and set-ups (the PostgreSQL lab's).
    #[serde(flatten)]
    pub setup: SetupTotals,
}

/// What preparing the data for runs cost: data templates made (`initdb`
/// and `pgbench -i`), and set-ups before runs (a fresh copy of a template
/// when the workload writes, a server start). Results from before these
/// were counted have none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupTotals {
    #[serde(default)]
    pub templates: u64,
    #[serde(default)]
    pub template_seconds: f64,
    #[serde(default)]
    pub setups: u64,
    #[serde(default)]
    pub setup_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::{Counted, Window};
    use proptest::prelude::*;

    #[test]
    fn the_figure_decided_on_is_the_measure_s_own() {
        let RunOutcome::Measured(mut m) = RunOutcome::tps_only(30.0) else {
            unreachable!("tps_only measures")
        };
        assert_eq!(m.figure(Measure::Tps), Some(30.0));
        // A timed run has no count to decide on.
        assert_eq!(m.figure(Measure::Instructions), None);
        let window = |transactions, instructions| Window {
            transactions,
            instructions,
            processes: 1,
        };
        m.instructions = Some(Counted {
            per_transaction: 40_000_000.0,
            counter: "cachegrind (valgrind-3.19.0)".into(),
            short: window(10, 400_000_000),
            long: window(60, 2_400_000_000),
            functions: vec![],
        });
        assert_eq!(m.figure(Measure::Instructions), Some(25.0));
        m.tps = 0.0;
        assert_eq!(m.figure(Measure::Tps), None);
        assert_eq!(m.figure(Measure::Instructions), Some(25.0));
        if let Some(c) = m.instructions.as_mut() {
            c.per_transaction = f64::NAN;
        }
        assert_eq!(m.figure(Measure::Instructions), None);
    }

    #[test]
    fn a_sha_is_cut_to_its_first_characters() {
        let sha = "ac1d7945f2b0c3e4d5a6b7c8d9e0f1a2b3c4d5e6";
        assert_eq!(short_sha(sha), "ac1d7945");
        assert_eq!(sha_prefix(sha, NAMED_SHA), "ac1d7945f2b0");
        assert_eq!(short_sha("c5"), "c5");
        // A planted id is cut between characters, not inside one.
        assert_eq!(short_sha("ééééééééé"), "éééééééé");
    }

    proptest! {
        #[test]
        fn a_prefix_is_a_prefix_of_at_most_that_many_characters(
            sha in "\\PC{0,20}",
            chars in 0usize..24,
        ) {
            let cut = sha_prefix(&sha, chars);
            prop_assert!(sha.starts_with(cut));
            prop_assert_eq!(cut.chars().count(), chars.min(sha.chars().count()));
        }
    }
}
