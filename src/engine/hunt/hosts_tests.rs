//! The driver against several hosts of different speeds and noise.

use super::*;
use crate::lab::replay::ReplayLab;
use crate::lab::sim::hosts::{HostModel, HostsLab};
use crate::lab::sim::{History, NoiseModel};
use crate::lab::{HostRun, Planned, RunSpec};
use crate::model::{LabTotals, RunOutcome};
use crate::progress::Silent;
use crate::report::findings::RunSample;
use std::collections::BTreeSet;

/// Three hosts 22% slower and 27% faster than the first, with half as
/// much noise again and a third less.
fn three_hosts() -> Vec<HostModel> {
    [(1.0, 1.0), (0.78, 1.5), (1.27, 0.7)]
        .map(|(speed, noise_scale)| HostModel { speed, noise_scale })
        .to_vec()
}

fn history(len: usize, steps: Vec<(usize, f64)>) -> History {
    History {
        len,
        steps,
        unbuildable: [5].into(),
        base_tps: 1000.0,
    }
}

fn hunt(history: &History, lab: &mut dyn Lab) -> HuntReport {
    Hunt::new(HuntConfig::default(), history.commits(), lab, &mut Silent)
        .run()
        .unwrap()
}

fn found(report: &HuntReport, history: &History) -> Vec<String> {
    let ids = history.commits();
    report
        .culprits
        .iter()
        .map(|c| {
            let pos = ids.iter().position(|x| x.id == c.commit);
            pos.map_or(c.commit.clone(), |p| p.to_string())
        })
        .collect()
}

#[test]
fn hosts_of_different_speeds_find_the_right_culprits_and_no_wrong_ones() {
    for search in [Search::Bisect, Search::Posterior] {
        for seed in 0..4u64 {
            let (a, b) = (40 + 13 * seed as usize, 120 + 7 * seed as usize);
            let history = history(160, vec![(a, 0.88), (b, 0.9)]);
            let noise = NoiseModel::Gaussian { cv: 0.02 };
            let mut lab = HostsLab::new(&history, &noise, &three_hosts(), seed);
            let config = HuntConfig {
                search,
                ..HuntConfig::default()
            };
            let report = Hunt::new(config, history.commits(), &mut lab, &mut Silent)
                .run()
                .unwrap();
            let expected = [a.to_string(), b.to_string()];
            assert_eq!(found(&report, &history), expected, "{search:?} seed {seed}");
            // Every run is its own, on its host, in rounds of three.
            let samples: Vec<&RunSample> = report.tested.iter().flat_map(|t| &t.samples).collect();
            let hosts: BTreeSet<&str> = samples.iter().filter_map(|s| s.host.as_deref()).collect();
            assert_eq!(hosts.len(), 3);
            assert!(samples.iter().all(|s| s.host.is_some()));
            let numbers: BTreeSet<u64> = samples.iter().map(|s| s.run).collect();
            assert_eq!(numbers.len(), samples.len());
            assert_eq!(lab.totals().runs, 3 * lab.rounds);
            culprits_show_each_hosts_numbers(&report);
        }
    }
}

/// Each culprit's side-by-side runs, host by host: every host measured
/// both sides at its own speed, and saw the drop.
fn culprits_show_each_hosts_numbers(report: &HuntReport) {
    for c in &report.culprits {
        let hosts: Vec<&str> = c.per_host.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts.len(), 3, "{c:?}");
        let runs: usize = c.per_host.iter().map(|h| h.runs_before).sum();
        assert_eq!(runs, c.runs_before);
        for h in &c.per_host {
            let (Some(before), Some(after)) = (h.before_tps, h.after_tps) else {
                panic!("{h:?}")
            };
            assert!(after < before, "{h:?}");
        }
        let speed = |name: &str| {
            let h = c.per_host.iter().find(|h| h.host == name).unwrap();
            h.before_tps.unwrap()
        };
        assert!(speed("host-2") < speed("host-1") && speed("host-1") < speed("host-3"));
    }
    let text = crate::report::render(report, crate::report::Format::Text, None).unwrap();
    assert!(text.contains("tps on host-2:"), "{text}");
}

#[test]
fn hosts_of_different_speeds_blame_nobody_without_a_drop() {
    for seed in 0..3u64 {
        // The bad end is as fast as the good one on every host.
        let history = history(120, vec![(60, 0.99)]);
        let noise = NoiseModel::Gaussian { cv: 0.02 };
        let mut lab = HostsLab::new(&history, &noise, &three_hosts(), seed);
        let report = hunt(&history, &mut lab);
        assert!(
            report.culprits.is_empty(),
            "seed {seed}: {:?}",
            report.culprits
        );
        assert_eq!(report.outcome, HuntOutcome::NoRegression, "seed {seed}");
    }
}

#[test]
fn a_host_whose_runs_fail_makes_failed_runs_and_the_hunt_goes_on() {
    let history = history(100, vec![(70, 0.88)]);
    let noise = NoiseModel::Gaussian { cv: 0.02 };
    let mut lab = HostsLab::new(&history, &noise, &three_hosts()[..2], 3);
    lab.failing = Some((1, 7));
    let report = hunt(&history, &mut lab);
    assert_eq!(found(&report, &history), ["70"]);
    assert!(report.notes.iter().any(|n| n.contains("on host-2 failed")));
}

#[test]
fn a_host_gone_for_good_leaves_the_hunt_to_the_others_and_skips_no_commit() {
    let history = history(100, vec![(70, 0.88)]);
    let noise = NoiseModel::Gaussian { cv: 0.02 };
    let mut lab = HostsLab::new(&history, &noise, &three_hosts()[..2], 5);
    // Every run of the second host fails, from the first.
    lab.failing = Some((1, 1));
    let report = hunt(&history, &mut lab);
    assert_eq!(found(&report, &history), ["70"], "{report:#?}");
    assert!(
        report
            .tested
            .iter()
            .all(|t| t.judgement != Judgement::RunsFailed),
        "a commit skipped for another host's failures"
    );
}

/// Hosts of a lab that stops the hunt in the middle of round `stop_at`:
/// the second host's run is cut short, the others finish.
struct StoppingLab {
    inner: HostsLab,
    flag: Arc<AtomicBool>,
    stop_at: u64,
}

impl Lab for StoppingLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.inner.run(commit, spec)
    }

    fn hosts(&self) -> Vec<String> {
        self.inner.hosts()
    }

    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        let mut round = self.inner.run_on(spec, runs)?;
        if self.inner.rounds == self.stop_at {
            self.flag.store(true, Ordering::SeqCst);
            round[1].outcome = RunOutcome::Failed {
                reason: "interrupted while running the benchmark".into(),
            };
        }
        Ok(round)
    }

    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn journaled_runs(path: &std::path::Path) -> Vec<(u64, Option<String>)> {
    crate::journal::Journal::load(path)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::Run { run, host, .. } => Some((run, host)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hunt_stopped_in_the_middle_of_a_round_resumes_with_each_run_made_once() {
    let history = history(80, vec![(33, 0.88)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    assert!(stopped_hunt(&history, &path, 11).is_none());
    let before = journaled_runs(&path);
    // Round 11 is runs 31-33: the second host's run 32 was cut short.
    assert_eq!(before.len(), 32, "{before:?}");
    assert!(!before.iter().any(|(run, _)| *run == 32));
    assert_eq!(before.last(), Some(&(33, Some("host-3".to_string()))));

    let (report, made) = resumed_hunt(&history, &path);
    assert_eq!(found(&report, &history), ["33"]);
    let after = journaled_runs(&path);
    let numbers: Vec<u64> = after.iter().map(|(run, _)| *run).collect();
    let expected: Vec<u64> = (1..=after.len() as u64).collect();
    assert_eq!(
        numbers.iter().copied().collect::<BTreeSet<_>>().len(),
        after.len()
    );
    let mut sorted = numbers.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected, "each run once, none missing");
    // Only what the journal lacked was made again: run 32 on host-2 first.
    assert_eq!(after[32], (32, Some("host-2".to_string())));
    assert_eq!(made as usize, after.len() - before.len());
    // Hosts come in their order in every round.
    for (run, host) in &after {
        let place = (run - 1) % 3 + 1;
        assert_eq!(host.as_deref(), Some(format!("host-{place}").as_str()));
    }
}

fn journaled_commits(path: &std::path::Path) -> Vec<(u64, String)> {
    crate::journal::Journal::load(path)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::Run { run, commit, .. } => Some((run, commit)),
            _ => None,
        })
        .collect()
}

/// Runs a hunt over three hosts with a journal at `path`, stopped in the
/// middle of round `stop_at` (never, when it is past the end).
fn stopped_hunt(history: &History, path: &std::path::Path, stop_at: u64) -> Option<HuntReport> {
    let noise = NoiseModel::Gaussian { cv: 0.02 };
    let flag = Arc::new(AtomicBool::new(false));
    let mut stopping = StoppingLab {
        inner: HostsLab::new(history, &noise, &three_hosts(), 9),
        flag: flag.clone(),
        stop_at,
    };
    let mut journal = crate::journal::Journal::open(path).unwrap();
    let report = Hunt::new(
        HuntConfig::default(),
        history.commits(),
        &mut stopping,
        &mut Silent,
    )
    .with_journal(&mut journal)
    .with_interrupt(flag)
    .run();
    match report {
        Ok(report) => Some(report),
        Err(err) => {
            let stopped = err.downcast_ref::<HuntError>();
            assert!(matches!(stopped, Some(HuntError::Interrupted)), "{err}");
            None
        }
    }
}

/// Resumes the hunt journaled at `path` on fresh hosts; its report and the
/// runs it made anew.
fn resumed_hunt(history: &History, path: &std::path::Path) -> (HuntReport, u64) {
    let events = crate::journal::Journal::load(path).unwrap();
    let mut journal = crate::journal::Journal::open(path).unwrap();
    let noise = NoiseModel::Gaussian { cv: 0.02 };
    let mut fresh = HostsLab::new(history, &noise, &three_hosts(), 10);
    let mut replay = ReplayLab::new(&mut fresh, &events);
    let report = Hunt::new(
        HuntConfig::default(),
        history.commits(),
        &mut replay,
        &mut Silent,
    )
    .with_journal(&mut journal)
    .run()
    .unwrap();
    (report, fresh.totals().runs)
}

#[test]
fn a_hunt_stopped_in_a_round_shared_among_commits_makes_the_missing_run_of_its_commit() {
    let history = history(200, vec![(121, 0.88)]);
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.jsonl");
    let report = stopped_hunt(&history, &whole, u64::MAX).unwrap();
    assert_eq!(found(&report, &history), ["121"]);
    // The first round whose three runs are of more than one commit.
    let runs = journaled_commits(&whole);
    let shared = runs
        .chunks(3)
        .position(|r| r.iter().any(|(_, c)| *c != r[0].1))
        .expect("a round shared among commits") as u64
        + 1;
    let path = dir.path().join("journal.jsonl");
    assert!(stopped_hunt(&history, &path, shared).is_none());
    let before = journaled_commits(&path);
    let cut = 3 * shared - 1;
    assert!(!before.iter().any(|(run, _)| *run == cut));
    let planned = &runs[cut as usize - 1].1;
    let (report, _) = resumed_hunt(&history, &path);
    assert_eq!(found(&report, &history), ["121"]);
    let after = journaled_commits(&path);
    assert_eq!(after[before.len()], (cut, planned.clone()));
    let mut numbers: Vec<u64> = after.iter().map(|(run, _)| *run).collect();
    numbers.sort_unstable();
    let expected: Vec<u64> = (1..=after.len() as u64).collect();
    assert_eq!(numbers, expected, "each run once, none missing");
}

#[test]
fn rounds_shared_among_candidates_find_the_culprits_in_fewer_rounds() {
    let hosts = [(1.0, 1.0), (0.97, 1.2), (1.03, 0.8), (1.01, 1.0)]
        .map(|(speed, noise_scale)| HostModel { speed, noise_scale });
    let (mut shared, mut alike) = (0, 0);
    for seed in 0..4u64 {
        let (a, b) = (90 + 37 * seed as usize, 260 + 11 * seed as usize);
        let history = history(400, vec![(a, 0.86), (b, 0.85)]);
        let noise = NoiseModel::Gaussian { cv: 0.02 };
        for (candidates, rounds) in [(None, &mut shared), (Some(1), &mut alike)] {
            let mut lab = HostsLab::new(&history, &noise, &hosts, seed);
            let config = HuntConfig {
                candidates,
                ..HuntConfig::default()
            };
            let report = Hunt::new(config, history.commits(), &mut lab, &mut Silent)
                .run()
                .unwrap();
            let expected = [a.to_string(), b.to_string()];
            assert_eq!(found(&report, &history), expected, "seed {seed}");
            culprits_checked_on_every_host(&report, 4);
            *rounds += lab.rounds;
        }
    }
    assert!(
        shared * 4 < alike * 3,
        "{shared} rounds shared, {alike} alike"
    );
}

/// Each culprit was checked side by side on every host.
fn culprits_checked_on_every_host(report: &HuntReport, hosts: usize) {
    for c in &report.culprits {
        assert_eq!(c.per_host.len(), hosts, "{c:?}");
    }
}
