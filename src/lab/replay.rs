//! Resuming a hunt from its journal.
//!
//! The hunt's choices depend only on the results it has seen, so feeding it
//! the journaled results in the same order brings it back to where it was
//! stopped, without building or running anything again. [`ReplayLab`] sits
//! in front of the real lab: it answers from the journal while it can and
//! hands over to the real lab for everything new.
//!
//! Over several hosts a round's runs are journaled one by one, so a hunt
//! stopped in the middle of a round has journaled some of its runs: those
//! are replayed, and only the others are made ([`Lab::run_on`]).

use crate::journal::Event;
use crate::lab::{HostRun, Lab, Planned, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::collections::HashMap;

/// A lab that replays journaled results before measuring anew.
pub struct ReplayLab<'a> {
    inner: &'a mut dyn Lab,
    runs: HashMap<u64, (String, RunOutcome, Option<String>)>,
    prepared: HashMap<String, Prepared>,
    /// Commits prepared in the real lab, with the failed outcome their
    /// runs have when they no longer build.
    really_prepared: HashMap<String, Option<RunOutcome>>,
}

impl<'a> ReplayLab<'a> {
    /// Wraps `inner`, answering first from `events`.
    pub fn new(inner: &'a mut dyn Lab, events: &[Event]) -> Self {
        let mut runs = HashMap::new();
        let mut prepared = HashMap::new();
        for event in events {
            match event {
                Event::Run {
                    run,
                    commit,
                    outcome,
                    host,
                    ..
                } => {
                    runs.insert(*run, (commit.clone(), outcome.clone(), host.clone()));
                }
                Event::Prepared {
                    commit,
                    prepared: p,
                } => {
                    prepared.insert(commit.clone(), p.clone());
                }
                _ => {}
            }
        }
        ReplayLab {
            inner,
            runs,
            prepared,
            really_prepared: HashMap::new(),
        }
    }

    /// The journal's run `run`, which must be of `commit`.
    fn journaled(&self, commit: &Commit, run: u64) -> anyhow::Result<Option<HostRun>> {
        let Some((c, outcome, host)) = self.runs.get(&run) else {
            return Ok(None);
        };
        anyhow::ensure!(
            *c == commit.id,
            "the journal's run {run} was of {c}, but the hunt now asks for {}: the journal belongs \
             to another plan; move it away or use another --work-dir",
            commit.id
        );
        Ok(Some(HostRun {
            host: host.clone(),
            outcome: outcome.clone(),
        }))
    }

    /// Prepares `commit` in the real lab once before its first new run;
    /// the failed outcome its runs have when it no longer builds, for
    /// every run of it asked for since.
    fn prepare_really(&mut self, commit: &Commit) -> anyhow::Result<Option<RunOutcome>> {
        if let Some(failed) = self.really_prepared.get(&commit.id) {
            return Ok(failed.clone());
        }
        let p = self.inner.prepare(commit)?;
        Ok(self.note_prepared(commit, &p))
    }

    /// Keeps what the real lab made of `commit`: the failed outcome its
    /// runs have when it does not build.
    fn note_prepared(&mut self, commit: &Commit, prepared: &Prepared) -> Option<RunOutcome> {
        let failed = match prepared {
            Prepared::Unbuildable { reason, .. } => Some(RunOutcome::Failed {
                reason: format!("it no longer builds: {reason}"),
            }),
            Prepared::Ready { .. } => None,
        };
        self.really_prepared
            .insert(commit.id.clone(), failed.clone());
        failed
    }

    /// Runs answered from the journal so far.
    pub fn replayable_runs(&self) -> usize {
        self.runs.len()
    }
}

impl Lab for ReplayLab<'_> {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        if let Some(p) = self.prepared.get(&commit.id) {
            return Ok(p.clone());
        }
        let p = self.inner.prepare(commit)?;
        self.note_prepared(commit, &p);
        Ok(p)
    }

    /// A commit the journal holds is not built ahead: its runs may all
    /// be answered from the journal, without a build.
    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        !self.prepared.contains_key(&commit.id) && self.inner.prepare_ahead(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if let Some(run) = self.journaled(commit, spec.run)? {
            return Ok(run.outcome);
        }
        if let Some(failed) = self.prepare_really(commit)? {
            return Ok(failed);
        }
        self.inner.run(commit, spec)
    }

    fn hosts(&self) -> Vec<String> {
        self.inner.hosts()
    }

    /// The journaled runs of the round, and the others made anew: all of
    /// them when none is journaled, those missing on their hosts when a
    /// stop cut the round short. The runs of a commit that no longer
    /// builds fail with the reason.
    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        let mut round = Vec::with_capacity(runs.len());
        for p in runs {
            round.push(self.journaled(p.commit, p.run)?);
        }
        let mut missing = Vec::new();
        for (i, p) in runs.iter().enumerate() {
            if round[i].is_some() {
                continue;
            }
            match self.prepare_really(p.commit)? {
                Some(failed) => {
                    round[i] = Some(HostRun {
                        host: self.inner.hosts().get(p.host).cloned(),
                        outcome: failed,
                    })
                }
                None => missing.push(i),
            }
        }
        if !missing.is_empty() {
            let asked: Vec<Planned> = missing.iter().map(|&i| runs[i]).collect();
            let made = self.inner.run_on(spec, &asked)?;
            anyhow::ensure!(
                made.len() == asked.len(),
                "the lab made {} runs of the {} asked for",
                made.len(),
                asked.len()
            );
            for (i, run) in missing.into_iter().zip(made) {
                round[i] = Some(run);
            }
        }
        Ok(round.into_iter().flatten().collect())
    }

    /// Never replayed: why-runs are not in the journal.
    fn instrumented_run(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
    ) -> anyhow::Result<crate::core::why::Instrumented> {
        if let Some(RunOutcome::Failed { reason }) = self.prepare_really(commit)? {
            return Ok(crate::core::why::Instrumented::Failed(reason));
        }
        self.inner.instrumented_run(commit, spec)
    }

    /// This process's work only: what earlier processes spent is in the
    /// journal (see [`crate::journal::spent`]).
    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn run_length(&self) -> Option<u32> {
        self.inner.run_length()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lab of three hosts on which no commit builds any more, counting
    /// the runs it is asked to make.
    struct NoLongerBuilds {
        runs: usize,
    }

    impl Lab for NoLongerBuilds {
        fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
            Ok(Prepared::Unbuildable {
                reason: "configure failed".into(),
                log: None,
            })
        }

        fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
            self.runs += 1;
            Ok(RunOutcome::tps_only(1000.0))
        }

        fn hosts(&self) -> Vec<String> {
            ["a", "b", "c"].map(String::from).to_vec()
        }

        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }

        fn describe(&self) -> String {
            "no longer builds".into()
        }
    }

    #[test]
    fn every_run_of_a_commit_that_no_longer_builds_fails_with_the_reason() {
        let commit = Commit::bare("c0ffee");
        let events = [Event::Prepared {
            commit: commit.id.clone(),
            prepared: Prepared::Ready { cached: false },
        }];
        let mut inner = NoLongerBuilds { runs: 0 };
        let mut replay = ReplayLab::new(&mut inner, &events);
        let spec = RunSpec {
            clients: 1,
            run: 1,
            seconds: None,
        };
        for round in [
            replay.run_round(&commit, spec),
            replay.run_round(&commit, spec),
        ] {
            let round = round.unwrap();
            assert_eq!(round.len(), 3);
            for run in &round {
                let RunOutcome::Failed { reason } = &run.outcome else {
                    panic!("{run:?}")
                };
                assert!(
                    reason.contains("it no longer builds: configure failed"),
                    "{reason}"
                );
            }
        }
        assert_eq!(inner.runs, 0, "no run was made of it");
    }
}
