//! Runs made before the search, served as the search's first runs.
//!
//! `--measure auto` measures both endpoints both ways before the hunt
//! (see [`crate::engine::choose_measure`]). The runs of the measure it
//! chose are runs of the endpoints like any other: made again, they would
//! cost the hunt minutes (a counted run takes half a minute) and tell it
//! nothing new. [`Reusing`] sits in front of the lab and answers a run of
//! an endpoint from those runs, in the order they were made, until they
//! are used up; every other run goes to the lab.
//!
//! Served runs are journaled by the hunt as its own, so a resumed hunt
//! replays them from its journal: [`Pool::without_journaled`] leaves out
//! those its journal already holds, so that no run is served twice.

use super::{HostRun, Lab, Planned, RunSpec};
use crate::core::why::Instrumented;
use crate::journal::Event;
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::collections::{HashMap, VecDeque};

/// Runs made before the search, by commit, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pool {
    runs: HashMap<String, VecDeque<RunOutcome>>,
}

impl Pool {
    /// The measured runs of `commits` among `events` (a journal's), in
    /// journal order; failed runs are left out (they tell the hunt
    /// nothing it should take on trust).
    pub fn from_events(events: &[Event], commits: &[&Commit]) -> Pool {
        let mut runs: HashMap<String, VecDeque<RunOutcome>> = HashMap::new();
        for event in events {
            if let Event::Run {
                commit,
                outcome: outcome @ RunOutcome::Measured(_),
                seconds: None,
                host: None,
                ..
            } = event
                && commits.iter().any(|c| c.id == *commit)
            {
                runs.entry(commit.clone())
                    .or_default()
                    .push_back(outcome.clone());
            }
        }
        Pool { runs }
    }

    /// The pool less the runs a hunt already took from it, as its journal
    /// `events` shows them: a hunt takes from the pool first, so its
    /// first runs of each commit (as many as the pool held) were these.
    pub fn without_journaled(mut self, events: &[Event]) -> Pool {
        let journaled = runs_of_each(events);
        for (commit, runs) in &mut self.runs {
            let taken = journaled.get(commit.as_str()).copied().unwrap_or(0);
            runs.drain(..taken.min(runs.len()));
        }
        self
    }

    /// How many of the pool's runs a hunt whose journal holds `events`
    /// took as its own.
    pub fn taken(&self, events: &[Event]) -> usize {
        let journaled = runs_of_each(events);
        self.runs
            .iter()
            .map(|(commit, runs)| {
                let made = journaled.get(commit.as_str()).copied().unwrap_or(0);
                made.min(runs.len())
            })
            .sum()
    }

    /// Runs left in the pool.
    pub fn len(&self) -> usize {
        self.runs.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&mut self, commit: &Commit) -> Option<RunOutcome> {
        self.runs.get_mut(&commit.id)?.pop_front()
    }
}

/// How many runs of each commit `events` hold.
fn runs_of_each(events: &[Event]) -> HashMap<&str, usize> {
    let mut runs: HashMap<&str, usize> = HashMap::new();
    for event in events {
        if let Event::Run { commit, .. } = event {
            *runs.entry(commit.as_str()).or_default() += 1;
        }
    }
    runs
}

/// `inner`, answering a run of the profile's length from `pool` first.
pub struct Reusing<'a> {
    inner: &'a mut dyn Lab,
    pool: Pool,
    served: usize,
}

impl<'a> Reusing<'a> {
    pub fn new(inner: &'a mut dyn Lab, pool: Pool) -> Reusing<'a> {
        Reusing {
            inner,
            pool,
            served: 0,
        }
    }

    /// Runs answered from the pool so far.
    pub fn served(&self) -> usize {
        self.served
    }
}

impl Lab for Reusing<'_> {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.inner.prepare_ahead(commit)
    }

    /// A run of another length than the profile's (one the hunt chose) is
    /// not what the pool holds: made anew.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if spec.seconds.is_none()
            && let Some(outcome) = self.pool.take(commit)
        {
            self.served += 1;
            return Ok(outcome);
        }
        self.inner.run(commit, spec)
    }

    /// The lab's: a lab of hosts is never handed a pool (`--measure
    /// auto` refuses hosts), and its rounds stay its own.
    fn hosts(&self) -> Vec<String> {
        self.inner.hosts()
    }

    /// Each run from the pool or the lab in turn on this machine; a lab
    /// of hosts makes its runs as it makes them.
    fn run_round(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Vec<HostRun>> {
        if !self.inner.hosts().is_empty() {
            return self.inner.run_round(commit, spec);
        }
        let outcome = self.run(commit, spec)?;
        Ok(vec![HostRun {
            host: None,
            outcome,
        }])
    }

    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        if !self.inner.hosts().is_empty() {
            return self.inner.run_on(spec, runs);
        }
        super::each_here(self, spec, runs)
    }

    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.inner.counted_run(commit, spec)
    }

    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        self.inner.instrumented_run(commit, spec)
    }

    /// The lab's work: served runs were counted where they were made.
    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn run_length(&self) -> Option<u32> {
        self.inner.run_length()
    }
}

#[cfg(test)]
mod tests;
