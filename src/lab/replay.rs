//! Resuming a hunt from its journal.
//!
//! The hunt's choices depend only on the results it has seen, so feeding it
//! the journaled results in the same order brings it back to where it was
//! stopped, without building or running anything again. [`ReplayLab`] sits
//! in front of the real lab: it answers from the journal while it can and
//! hands over to the real lab for everything new.

use crate::journal::Event;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::collections::{HashMap, HashSet};

/// A lab that replays journaled results before measuring anew.
pub struct ReplayLab<'a> {
    inner: &'a mut dyn Lab,
    runs: HashMap<u64, (String, RunOutcome)>,
    prepared: HashMap<String, Prepared>,
    really_prepared: HashSet<String>,
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
                    ..
                } => {
                    runs.insert(*run, (commit.clone(), outcome.clone()));
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
            really_prepared: HashSet::new(),
        }
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
        self.really_prepared.insert(commit.id.clone());
        Ok(p)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if let Some((c, outcome)) = self.runs.get(&spec.run) {
            anyhow::ensure!(
                *c == commit.id,
                "the journal's run {} was of {}, but the hunt now asks for {}: the journal belongs \
                 to another plan; move it away or use another --work-dir",
                spec.run,
                c,
                commit.id
            );
            return Ok(outcome.clone());
        }
        if !self.really_prepared.contains(&commit.id) {
            let p = self.inner.prepare(commit)?;
            self.really_prepared.insert(commit.id.clone());
            if let Prepared::Unbuildable { reason, .. } = p {
                return Ok(RunOutcome::Failed {
                    reason: format!("it no longer builds: {reason}"),
                });
            }
        }
        self.inner.run(commit, spec)
    }

    /// Never replayed: why-runs are not in the journal.
    fn instrumented_run(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
    ) -> anyhow::Result<crate::core::why::Instrumented> {
        if !self.really_prepared.contains(&commit.id) {
            let p = self.inner.prepare(commit)?;
            self.really_prepared.insert(commit.id.clone());
            if let Prepared::Unbuildable { reason, .. } = p {
                return Ok(crate::core::why::Instrumented::Failed(format!(
                    "it no longer builds: {reason}"
                )));
            }
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
