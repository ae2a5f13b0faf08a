//! One commit judged against a hunt's endpoints.
//!
//! `git bisect run` wants a program that says good, bad or skip for the
//! checked-out commit. A hunt's journal already holds many runs of the good
//! and the bad endpoint; a commit is measured until the same sequential test
//! the hunt uses puts it near one of those levels.

use crate::core::decide::{Class, DecisionConfig, Reference, classify};
use crate::core::stats;
use crate::journal::Event;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};

/// A hunt's endpoints and their runs, read from its journal.
#[derive(Debug, Clone, PartialEq)]
pub struct HuntRuns {
    pub good: String,
    pub bad: String,
    pub clients: Option<u32>,
    pub good_tps: Vec<f64>,
    pub bad_tps: Vec<f64>,
    /// Highest run number in the journal.
    pub last_run: u64,
    /// The length of the hunt's runs when it chose one (the length of its
    /// last run); only endpoint runs of that length are counted.
    pub seconds: Option<u32>,
}

impl HuntRuns {
    /// The endpoints of the journal's last start, with their measured runs.
    /// `None` without a start event.
    pub fn from_events(events: &[Event]) -> Option<HuntRuns> {
        let (good, bad) = events.iter().rev().find_map(|e| match e {
            Event::Start { good, bad, .. } => Some((good.clone(), bad.clone())),
            _ => None,
        })?;
        let mut runs = HuntRuns {
            good,
            bad,
            clients: None,
            good_tps: vec![],
            bad_tps: vec![],
            last_run: 0,
            seconds: None,
        };
        let last = events
            .iter()
            .filter_map(|e| match e {
                Event::Run { run, seconds, .. } => Some((*run, *seconds)),
                _ => None,
            })
            .max_by_key(|(run, _)| *run);
        runs.seconds = last.and_then(|(_, seconds)| seconds);
        for event in events {
            let Event::Run {
                run,
                commit,
                clients,
                seconds,
                outcome,
                ..
            } = event
            else {
                continue;
            };
            runs.last_run = runs.last_run.max(*run);
            if *seconds != runs.seconds {
                continue;
            }
            let RunOutcome::Measured(m) = outcome else {
                continue;
            };
            if !m.is_usable() {
                continue;
            }
            if *commit == runs.good {
                runs.good_tps.push(m.tps);
                runs.clients.get_or_insert(*clients);
            } else if *commit == runs.bad {
                runs.bad_tps.push(m.tps);
            }
        }
        Some(runs)
    }

    /// The two levels to judge between (trimmed mean of log TPS each) and
    /// the pooled noise; `None` with fewer than two runs of an endpoint.
    pub fn reference(&self) -> Option<Reference> {
        if self.good_tps.len() < 2 || self.bad_tps.len() < 2 {
            return None;
        }
        let sigma =
            stats::decision_sigma(stats::robust_log_sigma(&[&self.good_tps, &self.bad_tps]));
        Some(Reference {
            good_log_level: stats::trimmed_log_mean(&self.good_tps),
            good_runs: self.good_tps.len(),
            bad_log_level: stats::trimmed_log_mean(&self.bad_tps),
            bad_runs: self.bad_tps.len(),
            log_sigma: sigma,
        })
    }
}

/// How a commit compares with a hunt's endpoints.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// At the good endpoint's level.
    GoodLike,
    /// At the bad endpoint's level.
    BadLike,
    /// Still between the two at the run cap.
    Unsure,
    /// The commit could not be built.
    Unbuildable(String),
    /// A run gave no result.
    RunFailed(String),
}

/// A verdict and the throughput of the runs it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub tps: Vec<f64>,
}

/// Measures `commit` in `lab`, numbering its runs after `last_run`, until
/// it is clearly near one of `reference`'s levels or `cfg.max_runs` runs.
pub fn judge(
    lab: &mut dyn Lab,
    commit: &Commit,
    reference: &Reference,
    cfg: &DecisionConfig,
    (clients, last_run, seconds): (u32, u64, Option<u32>),
) -> anyhow::Result<Judgement> {
    let mut tps = Vec::new();
    let done = |verdict, tps| Ok(Judgement { verdict, tps });
    if let Prepared::Unbuildable { reason, .. } = lab.prepare(commit)? {
        return done(Verdict::Unbuildable(reason), tps);
    }
    for run in (last_run + 1..).take(cfg.max_runs) {
        lab.prepare(commit)?;
        let outcome = lab.run(
            commit,
            RunSpec {
                clients,
                run,
                seconds,
            },
        )?;
        // A run that failed because it was stopped says nothing of the commit.
        crate::proc::check_interrupt()?;
        match outcome {
            RunOutcome::Measured(m) if m.is_usable() => tps.push(m.tps),
            RunOutcome::Measured(_) => {}
            RunOutcome::Failed { reason } => return done(Verdict::RunFailed(reason), tps),
        }
        match classify(&tps, reference, cfg).class {
            Class::GoodLike => return done(Verdict::GoodLike, tps),
            Class::BadLike => return done(Verdict::BadLike, tps),
            Class::Unclear => {}
        }
    }
    done(Verdict::Unsure, tps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Commit;
    use crate::model::Measurement;

    fn run(n: u64, commit: &str, tps: f64) -> Event {
        Event::Run {
            run: n,
            commit: commit.into(),
            clients: 8,
            seconds: None,
            outcome: RunOutcome::Measured(Measurement {
                tps,
                latency_ms: None,
                failed_transactions: None,
                output: None,
            }),
            host: None,
        }
    }

    fn events() -> Vec<Event> {
        let mut e = vec![Event::Start {
            good: "g".into(),
            bad: "b".into(),
            plan: String::new(),
            at: String::new(),
        }];
        for i in 0..4 {
            e.push(run(2 * i + 1, "g", 1000.0 + i as f64 * 5.0));
            e.push(run(2 * i + 2, "b", 800.0 + i as f64 * 4.0));
        }
        e.push(run(9, "x", 950.0));
        e
    }

    #[test]
    fn reads_the_endpoints_runs() {
        let hunt = HuntRuns::from_events(&events()).unwrap();
        assert_eq!(hunt.good_tps.len(), 4);
        assert_eq!(hunt.bad_tps.len(), 4);
        assert_eq!(hunt.clients, Some(8));
        assert_eq!(hunt.last_run, 9);
        assert!(HuntRuns::from_events(&events()[1..]).is_none());
    }

    #[test]
    fn classifies_against_the_hunts_levels() {
        let reference = HuntRuns::from_events(&events())
            .unwrap()
            .reference()
            .unwrap();
        let cfg = DecisionConfig::default();
        assert_eq!(
            classify(&[1001.0, 1004.0, 998.0], &reference, &cfg).class,
            Class::GoodLike
        );
        assert_eq!(
            classify(&[801.0, 805.0, 799.0], &reference, &cfg).class,
            Class::BadLike
        );
    }

    #[test]
    fn too_few_endpoint_runs_give_no_reference() {
        let hunt = HuntRuns::from_events(&events()[..3]).unwrap();
        assert!(hunt.reference().is_none());
    }

    /// Every run of the commit measures about `tps` (fails below zero).
    struct OneLevel {
        tps: f64,
        buildable: bool,
        runs: Vec<u64>,
    }

    impl Lab for OneLevel {
        fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
            Ok(if self.buildable {
                Prepared::Ready { cached: true }
            } else {
                Prepared::Unbuildable {
                    reason: "no".into(),
                    log: None,
                }
            })
        }

        fn run(&mut self, _: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
            self.runs.push(spec.run);
            let wobble = [1.0, 1.003, 1.0 / 1.003][self.runs.len() % 3];
            if self.tps < 0.0 {
                return Ok(RunOutcome::Failed {
                    reason: "crashed".into(),
                });
            }
            Ok(RunOutcome::tps_only(self.tps * wobble))
        }

        fn totals(&self) -> crate::model::LabTotals {
            Default::default()
        }

        fn describe(&self) -> String {
            String::new()
        }
    }

    fn judged(tps: f64, buildable: bool) -> (Judgement, Vec<u64>) {
        let reference = HuntRuns::from_events(&events())
            .unwrap()
            .reference()
            .unwrap();
        let mut lab = OneLevel {
            tps,
            buildable,
            runs: vec![],
        };
        let cfg = DecisionConfig::default();
        let j = judge(&mut lab, &Commit::bare("c"), &reference, &cfg, (8, 9, None)).unwrap();
        (j, lab.runs)
    }

    #[test]
    fn a_commit_is_measured_until_it_is_near_one_level() {
        let (good, runs) = judged(1005.0, true);
        assert_eq!(good.verdict, Verdict::GoodLike);
        assert_eq!(runs.first(), Some(&10), "numbered after the hunt's runs");
        assert_eq!(good.tps.len(), runs.len());
        assert_eq!(judged(805.0, true).0.verdict, Verdict::BadLike);
        let (failed, runs) = judged(-1.0, true);
        assert!(
            matches!(failed.verdict, Verdict::RunFailed(_)),
            "{failed:?}"
        );
        assert_eq!(runs.len(), 1);
        let (unbuilt, runs) = judged(1000.0, false);
        assert_eq!(unbuilt.verdict, Verdict::Unbuildable("no".into()));
        assert!(runs.is_empty());
    }
}
