//! The run-to-run noise of a real hunt, read from its journal.
//!
//! The noise models of the standard scenarios are guesses; a hunt that ran
//! on the machine in question knows better. Its journal holds every run of
//! every commit in time order, so each commit's runs are a sample of the
//! machine's noise around that commit's level. [`JournalNoise`] estimates
//! the spread from successive runs (as the hunt itself does, which keeps a
//! slow drift out), says what shape the noise has (wild runs, heavy tails,
//! a wandering machine), and keeps each run's deviation from its commit's
//! mean, so the simulator can draw new runs of that same shape. A hunt on
//! instruction counts gives the noise of its counts.

use crate::core::counts::Measure;
use crate::core::stats::{robust_log_sigma, wanders};
use crate::journal::{Event, Journal};
use crate::model::{Measurement, RunOutcome};
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

/// What a run was decided on ([`Measurement::figure`]): the transactions
/// a billion instructions buy for a counted run (the tps of a server
/// slowed by the counter is not its noise), else its tps; `None` when it
/// gave no usable one.
fn decided_value(m: &Measurement) -> Option<f64> {
    let measure = match m.instructions {
        Some(_) => Measure::Instructions,
        None => Measure::Tps,
    };
    m.figure(measure)
}

/// What a journal says about the noise of its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalNoise {
    /// Measured runs read.
    pub runs: usize,
    /// Commits with at least two measured runs (the ones that count).
    pub commits: usize,
    /// Run-to-run spread of log throughput from successive runs of each
    /// commit, wild differences set aside: about the coefficient of
    /// variation of one run.
    pub cv: f64,
    /// Share of successive differences set aside as wild.
    pub wild_fraction: f64,
    /// Excess kurtosis of the residuals (0 for normal noise; large for
    /// heavy tails and outliers).
    pub excess_kurtosis: f64,
    /// Whether runs of one commit move together in time (a wandering
    /// machine); `None` with too few runs to tell.
    pub wanders: Option<bool>,
    /// Each run's log throughput less its commit's mean, scaled for the
    /// fitted mean (x sqrt(n / (n - 1))).
    pub residuals: Vec<f64>,
}

/// Why a journal cannot give a noise estimate.
#[derive(Debug, Error, PartialEq)]
pub enum JournalNoiseError {
    #[error(
        "the journal holds no commit with two measured runs ({runs} measured runs in all): \
         give the journal.jsonl of a hunt that got past its endpoints \
         (WORK_DIR/hunts/<hunt>/journal.jsonl)"
    )]
    TooFewRuns { runs: usize },
    #[error(
        "the runs in the journal do not vary (every commit measured the same each time), \
         so they say nothing about noise: use --noise instead"
    )]
    NoSpread,
}

impl JournalNoise {
    /// Reads the journal at `path` and estimates its noise.
    pub fn load(path: &Path) -> anyhow::Result<JournalNoise> {
        if !path.is_file() {
            anyhow::bail!(
                "no journal at {}: give the journal.jsonl of a hunt \
                 (WORK_DIR/hunts/<hunt>/journal.jsonl)",
                path.display()
            );
        }
        let events = Journal::load(path)?;
        Ok(JournalNoise::from_events(&events)?)
    }

    /// Estimates the noise from a journal's events: runs are grouped by
    /// commit, client count and host (hosts differ in speed), in the order
    /// they were made.
    pub fn from_events(events: &[Event]) -> Result<JournalNoise, JournalNoiseError> {
        let mut groups: BTreeMap<(&str, u32, Option<&str>), Vec<f64>> = BTreeMap::new();
        let mut runs = 0;
        for event in events {
            if let Event::Run {
                commit,
                clients,
                outcome: RunOutcome::Measured(m),
                host,
                ..
            } = event
                && let Some(value) = decided_value(m)
            {
                let key = (commit.as_str(), *clients, host.as_deref());
                groups.entry(key).or_default().push(value);
                runs += 1;
            }
        }
        let series: Vec<&[f64]> = groups
            .values()
            .filter(|g| g.len() >= 2)
            .map(Vec::as_slice)
            .collect();
        let estimate = robust_log_sigma(&series).ok_or(JournalNoiseError::TooFewRuns { runs })?;
        let residuals = residuals(&series);
        if estimate.sigma <= 0.0 || residuals.iter().all(|r| *r == 0.0) {
            return Err(JournalNoiseError::NoSpread);
        }
        Ok(JournalNoise {
            runs,
            commits: series.len(),
            cv: estimate.sigma,
            wild_fraction: estimate.wild_fraction,
            excess_kurtosis: excess_kurtosis(&residuals),
            wanders: wanders(&series, 3.09),
            residuals,
        })
    }

    /// What was found, in a few lines for the user.
    pub fn describe(&self) -> String {
        let wander = match self.wanders {
            Some(true) => {
                "yes (runs of one commit move together in time; the simulation \
                           draws runs independently, so it does not reproduce that)"
            }
            Some(false) => "no",
            None => "too few runs to tell",
        };
        format!(
            "noise from the journal: {} measured runs of {} commits; \
             run-to-run CV {:.2}% (successive runs); wild differences {:.1}%; \
             excess kurtosis {:.1}; machine wanders: {wander}",
            self.runs,
            self.commits,
            100.0 * self.cv,
            100.0 * self.wild_fraction,
            self.excess_kurtosis
        )
    }
}

/// Log deviations from each series' mean, scaled by sqrt(n / (n - 1)) so
/// that their spread is that of single runs, not of runs about a fitted mean.
fn residuals(series: &[&[f64]]) -> Vec<f64> {
    series
        .iter()
        .flat_map(|s| {
            let logs: Vec<f64> = s.iter().map(|v| v.ln()).collect();
            let n = logs.len() as f64;
            let mean = logs.iter().sum::<f64>() / n;
            let scale = (n / (n - 1.0)).sqrt();
            logs.into_iter().map(move |l| (l - mean) * scale)
        })
        .collect()
}

/// Excess kurtosis of values about their mean (0 for a normal sample).
fn excess_kurtosis(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let m2 = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let m4 = values.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / n;
    if m2 <= 0.0 { 0.0 } else { m4 / (m2 * m2) - 3.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::sim::{History, NoiseModel, SimLab};
    use std::collections::BTreeSet;

    fn run(n: u64, commit: &str, tps: f64) -> Event {
        crate::testing::run_event(n, commit, 128, tps)
    }

    /// A journal of `per_commit` runs each of `commits` commits at levels
    /// 100 apart, the runs drawn from `noise` and interleaved in time.
    fn journal(noise: NoiseModel, commits: usize, per_commit: usize) -> Vec<Event> {
        let history = History {
            len: 1,
            steps: vec![],
            unbuildable: BTreeSet::new(),
            base_tps: 1.0,
        };
        let mut lab = SimLab::new(history, noise, 11);
        let mut events = vec![];
        for i in 0..per_commit * commits {
            let c = i % commits;
            let level = 10_000.0 + 100.0 * c as f64;
            events.push(run(i as u64 + 1, &format!("c{c}"), lab.draw(level)));
        }
        events
    }

    #[test]
    fn a_journal_of_counted_runs_gives_the_noise_of_its_counts_not_of_its_tps() {
        // The counted server's tps moves by a tenth; its counts by 0.2%.
        let tps = journal(NoiseModel::Gaussian { cv: 0.1 }, 4, 50);
        let counts = journal(NoiseModel::Gaussian { cv: 0.002 }, 4, 50);
        let events: Vec<Event> = tps
            .into_iter()
            .zip(&counts)
            .map(|(mut event, counted)| {
                let (
                    Event::Run {
                        outcome: RunOutcome::Measured(m),
                        ..
                    },
                    Event::Run {
                        outcome: RunOutcome::Measured(c),
                        ..
                    },
                ) = (&mut event, counted)
                else {
                    unreachable!("journal() makes measured runs")
                };
                let window = crate::core::counts::Window {
                    transactions: 1000,
                    instructions: 0,
                    processes: 1,
                };
                m.instructions = Some(crate::core::counts::Counted {
                    per_transaction: 1e9 / c.tps,
                    counter: "cachegrind".into(),
                    short: window,
                    long: window,
                    functions: vec![],
                });
                event
            })
            .collect();
        let noise = JournalNoise::from_events(&events).unwrap();
        assert!((noise.cv - 0.002).abs() < 0.0005, "{}", noise.cv);
    }

    #[test]
    fn gaussian_runs_give_their_cv_and_a_normal_shape() {
        let events = journal(NoiseModel::Gaussian { cv: 0.05 }, 5, 200);
        let noise = JournalNoise::from_events(&events).unwrap();
        assert_eq!((noise.runs, noise.commits), (1000, 5));
        assert!((noise.cv - 0.05).abs() < 0.005, "{}", noise.cv);
        assert!(
            noise.excess_kurtosis.abs() < 0.6,
            "{}",
            noise.excess_kurtosis
        );
        assert_eq!(noise.wanders, Some(false));
        let sd = (noise.residuals.iter().map(|r| r * r).sum::<f64>() / 1000.0).sqrt();
        assert!((sd - 0.05).abs() < 0.005, "{sd}");
    }

    #[test]
    fn outliers_show_as_wild_differences_and_heavy_tails() {
        let outliers = NoiseModel::Outliers {
            cv: 0.02,
            p: 0.05,
            low: 0.5,
            high: 0.85,
        };
        let noise = JournalNoise::from_events(&journal(outliers, 5, 200)).unwrap();
        // Successive differences with the wild ones set aside keep the
        // spread of the ordinary runs.
        assert!((noise.cv - 0.02).abs() < 0.005, "{}", noise.cv);
        assert!(noise.wild_fraction > 0.05, "{}", noise.wild_fraction);
        assert!(noise.excess_kurtosis > 3.0, "{}", noise.excess_kurtosis);
    }

    #[test]
    fn a_drifting_machine_is_seen_to_wander() {
        let drift = NoiseModel::Drift {
            cv: 0.01,
            step: 0.01,
            bound: 0.2,
        };
        let noise = JournalNoise::from_events(&journal(drift, 2, 200)).unwrap();
        assert_eq!(noise.wanders, Some(true));
    }

    #[test]
    fn commits_with_one_run_and_failed_runs_do_not_count() {
        let mut events = vec![
            run(1, "a", 100.0),
            run(2, "b", 100.0),
            run(3, "b", 110.0),
            Event::Run {
                run: 4,
                commit: "b".into(),
                clients: 128,
                seconds: None,
                outcome: RunOutcome::Failed {
                    reason: "crash".into(),
                },
                host: None,
            },
        ];
        let noise = JournalNoise::from_events(&events).unwrap();
        assert_eq!((noise.runs, noise.commits), (3, 1));
        assert_eq!(noise.residuals.len(), 2);
        // Two runs: residuals are +-ln(1.1)/2 scaled by sqrt(2).
        let expect = (1.1f64).ln() / 2.0 * 2f64.sqrt();
        assert!((noise.residuals[1] - expect).abs() < 1e-12);
        events.truncate(2);
        assert_eq!(
            JournalNoise::from_events(&events),
            Err(JournalNoiseError::TooFewRuns { runs: 2 })
        );
    }

    #[test]
    fn runs_that_never_vary_are_no_noise_estimate() {
        let events = vec![run(1, "a", 100.0), run(2, "a", 100.0)];
        assert_eq!(
            JournalNoise::from_events(&events),
            Err(JournalNoiseError::NoSpread)
        );
    }

    #[test]
    fn a_missing_or_empty_journal_says_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let missing = JournalNoise::load(&dir.path().join("journal.jsonl")).unwrap_err();
        assert!(missing.to_string().contains("no journal at"), "{missing}");
        let path = dir.path().join("empty.jsonl");
        std::fs::write(&path, "").unwrap();
        let empty = JournalNoise::load(&path).unwrap_err();
        assert!(
            empty.to_string().contains("hunts/<hunt>/journal.jsonl"),
            "{empty}"
        );
    }

    #[test]
    fn a_journal_written_by_a_hunt_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut j = Journal::open(&path).unwrap();
        for e in journal(NoiseModel::Gaussian { cv: 0.03 }, 3, 20) {
            j.append(&e).unwrap();
        }
        let noise = JournalNoise::load(&path).unwrap();
        assert_eq!((noise.runs, noise.commits), (60, 3));
        assert!(noise.cv > 0.015 && noise.cv < 0.05, "{}", noise.cv);
    }
}
