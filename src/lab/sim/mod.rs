//! Fake labs for the simulator and the tests: [`SimLab`] is a [`Lab`]
//! whose commits follow a [`History`] of known throughput levels (one or
//! more steps down at known positions) and whose runs carry noise drawn
//! from a [`NoiseModel`]: normal, with outliers, bimodal, heavy-tailed,
//! drifting with time. [`hosts::HostsLab`] is several of them measuring
//! one history at once, as hosts do. `pgbisect simulate` runs the real
//! hunt on them (`engine::simulate`); the engines' tests do too.

pub mod hosts;
pub mod spells;

use crate::core::stats::percentile;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use rand::distr::Distribution;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use statrs::distribution::{Normal, StudentsT};
use std::collections::{BTreeSet, HashMap};

/// How run-to-run noise behaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum NoiseModel {
    /// Normal noise with this coefficient of variation.
    Gaussian { cv: f64 },
    /// Normal noise, and with probability `p` a run slowed to between
    /// `low` and `high` times its level (a busy neighbour).
    Outliers {
        cv: f64,
        p: f64,
        low: f64,
        high: f64,
    },
    /// Two modes: with probability `p` a run lands at `factor` times the
    /// level (seen at high client counts).
    Bimodal { cv: f64, p: f64, factor: f64 },
    /// Student's t noise with `df` degrees of freedom, scaled to `cv`.
    HeavyTail { cv: f64, df: f64 },
    /// Normal noise on a machine whose speed wanders slowly: a random walk
    /// of `step` per run, kept within `bound` of the start.
    Drift { cv: f64, step: f64, bound: f64 },
    /// Runs of a real machine: log deviations from a commit's mean, as
    /// read from a hunt's journal, drawn at random with a little smoothing
    /// (normal, of `bandwidth`) so that no two runs tie exactly; `shrink`
    /// takes the smoothing's variance back out. Build it with
    /// [`NoiseModel::empirical`].
    Empirical {
        residuals: Vec<f64>,
        bandwidth: f64,
        shrink: f64,
    },
}

impl NoiseModel {
    /// Noise drawn from measured log residuals (smoothed bootstrap, with
    /// Silverman's bandwidth and the variance kept); `None` for fewer than
    /// two residuals.
    pub fn empirical(residuals: Vec<f64>) -> Option<NoiseModel> {
        if residuals.len() < 2 {
            return None;
        }
        let n = residuals.len() as f64;
        let mean = residuals.iter().sum::<f64>() / n;
        let sd = (residuals.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let iqr = {
            let q = |p| percentile(&residuals, p);
            q(0.75) - q(0.25)
        };
        let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
        let bandwidth = 0.9 * spread * n.powf(-0.2);
        let shrink = if sd > 0.0 {
            1.0 / (1.0 + (bandwidth / sd).powi(2)).sqrt()
        } else {
            1.0
        };
        Some(NoiseModel::Empirical {
            residuals,
            bandwidth,
            shrink,
        })
    }
}

/// A history with known truth.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// Candidates after the good endpoint (bad is position `len`).
    pub len: usize,
    /// (position, factor): from this position on, throughput is multiplied
    /// by `factor` (0.9 = a 10% drop).
    pub steps: Vec<(usize, f64)>,
    /// Positions that do not build.
    pub unbuildable: BTreeSet<usize>,
    /// Throughput of the good endpoint.
    pub base_tps: f64,
}

impl History {
    /// Throughput level of a position.
    pub fn level(&self, pos: usize) -> f64 {
        self.steps
            .iter()
            .filter(|(p, _)| *p <= pos)
            .fold(self.base_tps, |acc, (_, f)| acc * f)
    }

    /// The commits of this history, good endpoint first.
    pub fn commits(&self) -> Vec<Commit> {
        (0..=self.len).map(|p| Commit::bare(sim_id(p))).collect()
    }

    /// The commits as a branch's line, one landing every `seconds` from
    /// the epoch on: the nights a watcher over this history sees.
    pub fn landing_every(&self, seconds: i64) -> Vec<crate::repo::Landed> {
        self.commits()
            .into_iter()
            .enumerate()
            .map(|(p, commit)| crate::repo::Landed {
                commit,
                committed: p as i64 * seconds,
            })
            .collect()
    }
}

/// A fake SHA whose abbreviation shows the position.
pub(crate) fn sim_id(pos: usize) -> String {
    format!("{pos:08x}{}", "0".repeat(32))
}

/// The position back from a fake SHA.
pub(crate) fn sim_pos(id: &str) -> Option<usize> {
    usize::from_str_radix(id.get(..8)?, 16).ok()
}

/// A lab whose commits follow a [`History`] and whose runs carry noise.
pub struct SimLab {
    history: History,
    noise: NoiseModel,
    /// The noise of counted runs, when the lab counts ([`SimLab::counting`]).
    counts: Option<NoiseModel>,
    rng: StdRng,
    positions: HashMap<String, usize>,
    drift: f64,
    totals: LabTotals,
}

impl SimLab {
    pub fn new(history: History, noise: NoiseModel, seed: u64) -> Self {
        let positions = (0..=history.len).map(|p| (sim_id(p), p)).collect();
        SimLab {
            history,
            noise,
            counts: None,
            rng: StdRng::seed_from_u64(seed),
            positions,
            drift: 0.0,
            totals: LabTotals::default(),
        }
    }

    /// This lab, counting too: a counted run of a commit costs
    /// [`SIM_INSTRUCTIONS`] a transaction at the history's base level,
    /// more as its level falls (a 1% lower level is 1/0.99 as many
    /// instructions), with `noise` on what they buy.
    pub fn counting(mut self, noise: NoiseModel) -> Self {
        self.counts = Some(noise);
        self
    }

    fn position(&self, commit: &Commit) -> anyhow::Result<usize> {
        self.positions
            .get(&commit.id)
            .copied()
            .ok_or_else(|| anyhow::anyhow!("commit {} is not in the simulated history", commit.id))
    }

    /// One noisy observation of `level`.
    pub fn draw(&mut self, level: f64) -> f64 {
        let normal =
            |rng: &mut StdRng, cv: f64| Normal::new(0.0, cv).map_or(0.0, |n| n.sample(rng));
        let factor = match self.noise {
            NoiseModel::Gaussian { cv } => 1.0 + normal(&mut self.rng, cv),
            NoiseModel::Empirical {
                ref residuals,
                bandwidth,
                shrink,
            } => {
                if residuals.is_empty() {
                    1.0
                } else {
                    let r = residuals[self.rng.random_range(0..residuals.len())];
                    ((r + normal(&mut self.rng, bandwidth)) * shrink).exp()
                }
            }
            NoiseModel::Outliers { cv, p, low, high } => {
                let base = 1.0 + normal(&mut self.rng, cv);
                if self.rng.random_bool(p) {
                    base * self.rng.random_range(low..high)
                } else {
                    base
                }
            }
            NoiseModel::Bimodal { cv, p, factor } => {
                let base = 1.0 + normal(&mut self.rng, cv);
                if self.rng.random_bool(p) {
                    base * factor
                } else {
                    base
                }
            }
            NoiseModel::HeavyTail { cv, df } => {
                let t = StudentsT::new(0.0, 1.0, df).map_or(0.0, |d| d.sample(&mut self.rng));
                let scale = cv / (df / (df - 2.0)).sqrt();
                1.0 + scale * t
            }
            NoiseModel::Drift { cv, step, bound } => {
                self.drift = (self.drift + normal(&mut self.rng, step)).clamp(-bound, bound);
                (1.0 + self.drift) * (1.0 + normal(&mut self.rng, cv))
            }
        };
        (level * factor).max(level * 0.01)
    }
}

impl Lab for SimLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let pos = self.position(commit)?;
        if self.history.unbuildable.contains(&pos) {
            return Ok(Prepared::Unbuildable {
                reason: "simulated build failure".into(),
                log: None,
            });
        }
        self.totals.builds += 1;
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, _spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let pos = self.position(commit)?;
        let level = self.history.level(pos);
        let tps = self.draw(level);
        self.totals.runs += 1;
        Ok(RunOutcome::tps_only(tps))
    }

    fn counted_run(&mut self, commit: &Commit, _spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let Some(noise) = self.counts.clone() else {
            return Err(crate::lab::cannot_count());
        };
        let pos = self.position(commit)?;
        let level = self.history.level(pos) / self.history.base_tps;
        let timed = std::mem::replace(&mut self.noise, noise);
        let bought = self.draw(level);
        self.noise = timed;
        self.totals.runs += 1;
        let per_transaction = SIM_INSTRUCTIONS / bought;
        let window = |transactions: u64| crate::core::counts::Window {
            transactions,
            instructions: (per_transaction * transactions as f64) as u64,
            processes: 1,
        };
        Ok(RunOutcome::Measured(crate::model::Measurement {
            instructions: Some(crate::core::counts::Counted {
                per_transaction,
                counter: "simulated counter".into(),
                short: window(1_000),
                long: window(6_000),
                functions: vec![],
            }),
            tps: self.history.level(pos),
            latency_ms: None,
            failed_transactions: None,
            percentiles: None,
            output: None,
        }))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        format!("simulated history of {} commits", self.history.len)
    }
}

/// Instructions a transaction of a counting [`SimLab`] at its history's
/// base level (a select-only transaction of PostgreSQL 15 costs about
/// this many in its backend).
pub const SIM_INSTRUCTIONS: f64 = 44_000.0;
