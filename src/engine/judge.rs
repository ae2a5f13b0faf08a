//! One commit judged against a hunt's endpoints.
//!
//! `git bisect run` wants a program that says good, bad or skip for the
//! checked-out commit. A hunt's journal already holds many runs of the good
//! and the bad endpoint; a commit is measured until the same sequential test
//! the hunt uses puts it near one of those levels.
//!
//! A hunt over several hosts journaled each run with its host: each host's
//! endpoint runs give that host's levels, the commit is measured in rounds
//! (a run on every host at once), and each of its runs is judged against
//! its own host's levels ([`classify_hosts`]). A host whose run fails
//! leaves the round to the others: only a round in which no host measured
//! the commit makes it a failed run.

use crate::core::counts::Measure;
use crate::core::decide::{Class, DecisionConfig, Reference, classify_hosts};
use crate::core::stats;
use crate::journal::Event;
use crate::lab::{HostRun, Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};

/// A hunt's endpoints and their runs, read from its journal.
#[derive(Debug, Clone, PartialEq)]
pub struct HuntRuns {
    pub good: String,
    pub bad: String,
    pub clients: Option<u32>,
    pub good_tps: Vec<f64>,
    pub bad_tps: Vec<f64>,
    /// The host of each of `good_tps` and `bad_tps` (`None`: this machine).
    pub good_hosts: Vec<Option<String>>,
    pub bad_hosts: Vec<Option<String>>,
    /// Highest run number in the journal.
    pub last_run: u64,
    /// What the hunt decided on: its runs were counted when the
    /// endpoints' were. `good_tps` and `bad_tps` are then the figures
    /// decided on ([`crate::model::Measurement::figure`]), not tps.
    pub measure: Measure,
    /// The counter of the hunt's counted runs.
    pub counter: Option<String>,
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
            good_hosts: vec![],
            bad_hosts: vec![],
            last_run: 0,
            seconds: None,
            measure: Measure::Tps,
            counter: None,
        };
        let last = events
            .iter()
            .filter_map(|e| match e {
                Event::Run { run, seconds, .. } => Some((*run, *seconds)),
                _ => None,
            })
            .max_by_key(|(run, _)| *run);
        runs.seconds = last.and_then(|(_, seconds)| seconds);
        runs.counter = counter_of(events, &runs.good);
        if runs.counter.is_some() {
            runs.measure = Measure::Instructions;
        }
        for event in events {
            let Event::Run {
                run,
                commit,
                clients,
                seconds,
                outcome,
                host,
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
            let counter = m.instructions.as_ref().map(|c| &c.counter);
            let Some(figure) = m.figure(runs.measure) else {
                continue;
            };
            if counter != runs.counter.as_ref() && !runs.measure.is_tps() {
                continue;
            }
            if *commit == runs.good {
                runs.good_tps.push(figure);
                runs.good_hosts.push(host.clone());
                runs.clients.get_or_insert(*clients);
            } else if *commit == runs.bad {
                runs.bad_tps.push(figure);
                runs.bad_hosts.push(host.clone());
            }
        }
        Some(runs)
    }

    /// The two levels to judge between (trimmed mean of log TPS each) and
    /// the pooled noise; `None` with fewer than two runs of an endpoint.
    pub fn reference(&self) -> Option<Reference> {
        reference_of(&self.good_tps, &self.bad_tps)
    }

    /// Each host's levels, in the order of the hosts' first runs; hosts
    /// with fewer than two runs of an endpoint are left out. A hunt on
    /// one machine has one, [`HuntRuns::reference`].
    pub fn references(&self) -> Vec<(Option<String>, Reference)> {
        let mut hosts: Vec<&Option<String>> = Vec::new();
        for h in self.good_hosts.iter().chain(&self.bad_hosts) {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
        hosts
            .into_iter()
            .filter_map(|h| {
                let (good, bad) = self.on_host(h);
                reference_of(&good, &bad).map(|r| (h.clone(), r))
            })
            .collect()
    }

    /// The good and the bad endpoint's runs on `host`.
    pub fn on_host(&self, host: &Option<String>) -> (Vec<f64>, Vec<f64>) {
        (
            on_host(&self.good_tps, &self.good_hosts, host),
            on_host(&self.bad_tps, &self.bad_hosts, host),
        )
    }
}

/// The counter of the first counted run of the good endpoint `good` in
/// `events`: a hunt on counts counted every run, a hunt on tps none.
fn counter_of(events: &[Event], good: &str) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::Run {
            commit,
            outcome: RunOutcome::Measured(m),
            ..
        } if commit == good => m.instructions.as_ref().map(|c| c.counter.clone()),
        _ => None,
    })
}

/// The values of `tps` made on `host`, `of` naming each one's host.
pub fn on_host(tps: &[f64], of: &[Option<String>], host: &Option<String>) -> Vec<f64> {
    tps.iter()
        .zip(of)
        .filter(|(_, h)| *h == host)
        .map(|(t, _)| *t)
        .collect()
}

/// The two levels (trimmed mean of log TPS each) and the pooled noise of
/// one machine's endpoint runs; `None` with fewer than two of either.
fn reference_of(good: &[f64], bad: &[f64]) -> Option<Reference> {
    if good.len() < 2 || bad.len() < 2 {
        return None;
    }
    let sigma = stats::decision_sigma(stats::robust_log_sigma(&[good, bad]));
    Some(Reference {
        good_log_level: stats::trimmed_log_mean(good),
        good_runs: good.len(),
        bad_log_level: stats::trimmed_log_mean(bad),
        bad_runs: bad.len(),
        log_sigma: sigma,
    })
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
    /// The host of each of `tps` (`None`: this machine).
    pub hosts: Vec<Option<String>>,
}

/// Measures `commit` in `lab`, numbering its runs after `last_run`, until
/// it is clearly near one of the levels or `cfg.max_runs` runs. Each
/// run is judged against the levels of its host in `references` (see
/// [`HuntRuns::references`]); runs of a host without levels are not
/// judged.
pub fn judge(
    lab: &mut dyn Lab,
    commit: &Commit,
    references: &[(Option<String>, Reference)],
    (cfg, measure): (&DecisionConfig, Measure),
    (clients, last_run, seconds): (u32, u64, Option<u32>),
) -> anyhow::Result<Judgement> {
    let cfg = &measure.decision(*cfg);
    let mut tps = Vec::new();
    let mut hosts: Vec<Option<String>> = Vec::new();
    let done = |verdict, tps, hosts| {
        Ok(Judgement {
            verdict,
            tps,
            hosts,
        })
    };
    if let Prepared::Unbuildable { reason, .. } = lab.prepare(commit)? {
        return done(Verdict::Unbuildable(reason), tps, hosts);
    }
    let width = lab.hosts().len().max(1);
    for round in 0..cfg.max_runs.div_ceil(width) {
        lab.prepare(commit)?;
        let spec = RunSpec {
            clients,
            run: last_run + 1 + (round * width) as u64,
            seconds,
        };
        let runs = lab.run_round(commit, spec)?;
        // A run that failed because it was stopped says nothing of the commit.
        crate::proc::check_interrupt()?;
        let (mut measured, mut failed) = (false, None);
        for HostRun { host, outcome } in runs {
            match outcome {
                RunOutcome::Measured(m) => {
                    if let Some(figure) = m.figure(measure) {
                        tps.push(figure);
                        hosts.push(host);
                        measured = true;
                    }
                }
                RunOutcome::Failed { reason } => failed = failed.or(Some(reason)),
            }
        }
        // A failed run counts against the commit only when no host of the
        // round measured it (a host that went away is the host's fault).
        if let (false, Some(reason)) = (measured, failed) {
            return done(Verdict::RunFailed(reason), tps, hosts);
        }
        let groups: Vec<(Vec<f64>, Reference)> = references
            .iter()
            .map(|(host, r)| (on_host(&tps, &hosts, host), *r))
            .collect();
        match classify_hosts(&groups, cfg).class {
            Class::GoodLike => return done(Verdict::GoodLike, tps, hosts),
            Class::BadLike => return done(Verdict::BadLike, tps, hosts),
            Class::Unclear => {}
        }
    }
    done(Verdict::Unsure, tps, hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::classify;
    use crate::model::Commit;
    use crate::model::Measurement;

    fn run(n: u64, commit: &str, tps: f64) -> Event {
        Event::Run {
            run: n,
            commit: commit.into(),
            clients: 8,
            seconds: None,
            outcome: RunOutcome::Measured(Measurement {
                instructions: None,
                tps,
                latency_ms: None,
                failed_transactions: None,
                percentiles: None,
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

    /// Endpoint runs of two hosts, the second 25% slower.
    fn two_host_events() -> Vec<Event> {
        let mut e = events()[..1].to_vec();
        for i in 0..8u64 {
            let (host, speed) = [("host-1", 1.0), ("host-2", 0.75)][i as usize % 2];
            let wobble = 1.0 + 0.002 * (i % 3) as f64;
            for (n, commit, level) in [(2 * i + 1, "g", 1000.0), (2 * i + 2, "b", 880.0)] {
                let mut ev = run(n, commit, level * speed * wobble);
                if let Event::Run { host: h, .. } = &mut ev {
                    *h = Some(host.into());
                }
                e.push(ev);
            }
        }
        e
    }

    /// One commit after the good end, 12% slower, on two hosts, the
    /// second 25% slower than the first (as [`two_host_events`]).
    fn two_hosts_history() -> (
        crate::lab::sim::History,
        [crate::lab::sim::hosts::HostModel; 2],
    ) {
        let history = crate::lab::sim::History {
            len: 1,
            steps: vec![(1, 0.88)],
            unbuildable: Default::default(),
            base_tps: 1000.0,
        };
        let hosts = [1.0, 0.75].map(|speed| crate::lab::sim::hosts::HostModel {
            speed,
            noise_scale: 1.0,
        });
        (history, hosts)
    }

    /// A run counted by `counter` at `instructions` a transaction (its
    /// tps that of a server slowed by the counter).
    fn counted(n: u64, commit: &str, instructions: f64, counter: &str) -> Event {
        let mut e = run(n, commit, 27.0);
        if let Event::Run {
            outcome: RunOutcome::Measured(m),
            ..
        } = &mut e
        {
            let window = |transactions| crate::core::counts::Window {
                transactions,
                instructions: 0,
                processes: 1,
            };
            m.instructions = Some(crate::core::counts::Counted {
                per_transaction: instructions,
                counter: counter.into(),
                short: window(10),
                long: window(60),
                functions: vec![],
            });
        }
        e
    }

    #[test]
    fn a_hunt_on_counts_is_judged_by_its_counts_and_its_counter_only() {
        let v19 = "cachegrind (valgrind-3.19.0)";
        let mut e = events()[..1].to_vec();
        for i in 0..4u64 {
            e.push(counted(2 * i + 1, "g", 36_137_000.0 + i as f64, v19));
            e.push(counted(2 * i + 2, "b", 38_317_000.0 + i as f64, v19));
        }
        // A count by another valgrind is not the hunt's.
        e.push(counted(
            9,
            "g",
            30_000_000.0,
            "cachegrind (valgrind-3.22.0)",
        ));
        let runs = HuntRuns::from_events(&e).unwrap();
        assert_eq!(runs.measure, Measure::Instructions);
        assert_eq!(runs.counter.as_deref(), Some(v19));
        assert_eq!((runs.good_tps.len(), runs.bad_tps.len()), (4, 4));
        // The figures decided on: transactions a billion instructions buy.
        assert!((runs.good_tps[0] - 1e9 / 36_137_000.0).abs() < 1e-9);
        let r = runs.reference().unwrap();
        assert!(r.good_log_level > r.bad_log_level);
        // A hunt on tps stays one: its runs carry no counts.
        let plain = HuntRuns::from_events(&events()).unwrap();
        assert_eq!((plain.measure, plain.counter), (Measure::Tps, None));
    }

    #[test]
    fn runs_of_several_hosts_are_judged_against_their_own_hosts_levels() {
        use crate::lab::sim::NoiseModel;
        use crate::lab::sim::hosts::HostsLab;
        let hunt = HuntRuns::from_events(&two_host_events()).unwrap();
        let references = hunt.references();
        let names: Vec<Option<&str>> = references.iter().map(|(h, _)| h.as_deref()).collect();
        assert_eq!(names, [Some("host-1"), Some("host-2")]);
        let (history, hosts) = two_hosts_history();
        let cfg = DecisionConfig::default();
        for (pos, expected) in [(0, Verdict::GoodLike), (1, Verdict::BadLike)] {
            let noise = NoiseModel::Gaussian { cv: 0.003 };
            let mut lab = HostsLab::new(&history, &noise, &hosts, 5);
            let commit = &history.commits()[pos];
            let j = judge(
                &mut lab,
                commit,
                &references,
                (&cfg, Measure::Tps),
                (8, 16, None),
            )
            .unwrap();
            assert_eq!(j.verdict, expected, "{j:?}");
            assert_eq!(j.tps.len() as u64, 2 * lab.rounds);
        }
    }

    #[test]
    fn a_host_whose_runs_fail_does_not_sink_the_verdict() {
        use crate::lab::sim::NoiseModel;
        use crate::lab::sim::hosts::HostsLab;
        let references = HuntRuns::from_events(&two_host_events())
            .unwrap()
            .references();
        let (history, hosts) = two_hosts_history();
        let noise = NoiseModel::Gaussian { cv: 0.003 };
        let mut lab = HostsLab::new(&history, &noise, &hosts, 5);
        // Every run of the second host fails.
        lab.failing = Some((1, 1));
        let bad = &history.commits()[1];
        let cfg = DecisionConfig::default();
        let j = judge(
            &mut lab,
            bad,
            &references,
            (&cfg, Measure::Tps),
            (8, 16, None),
        )
        .unwrap();
        assert_eq!(j.verdict, Verdict::BadLike, "{j:?}");
        assert!(j.hosts.iter().all(|h| h.as_deref() == Some("host-1")));
        // With every host failing, the run failed.
        let mut gone = HostsLab::new(&history, &noise, &hosts[..1], 5);
        gone.failing = Some((0, 1));
        let j = judge(
            &mut gone,
            bad,
            &references,
            (&cfg, Measure::Tps),
            (8, 16, None),
        )
        .unwrap();
        assert!(matches!(j.verdict, Verdict::RunFailed(_)), "{j:?}");
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
        let references = HuntRuns::from_events(&events()).unwrap().references();
        assert_eq!(references.len(), 1);
        let mut lab = OneLevel {
            tps,
            buildable,
            runs: vec![],
        };
        let cfg = DecisionConfig::default();
        let j = judge(
            &mut lab,
            &Commit::bare("c"),
            &references,
            (&cfg, Measure::Tps),
            (8, 9, None),
        )
        .unwrap();
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
