//! The watcher's lab as a hunt sees it: everything passed through, but its
//! totals counted from the hunt's start, so that the hunt's report counts
//! its own builds and runs and not the nights' made before it in the same
//! lab.

use crate::core::why::Instrumented;
use crate::lab::{HostRun, Lab, Planned, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome, SetupTotals};

/// `inner`, its totals less those it had when wrapped.
pub struct Since<'a> {
    inner: &'a mut dyn Lab,
    start: LabTotals,
}

impl<'a> Since<'a> {
    pub fn new(inner: &'a mut dyn Lab) -> Self {
        let start = inner.totals();
        Since { inner, start }
    }
}

/// `now` less `start`, item by item.
pub fn less(now: LabTotals, start: LabTotals) -> LabTotals {
    let (n, s) = (now.setup, start.setup);
    LabTotals {
        builds: now.builds.saturating_sub(start.builds),
        build_seconds: now.build_seconds - start.build_seconds,
        runs: now.runs.saturating_sub(start.runs),
        warmup_runs: now.warmup_runs.saturating_sub(start.warmup_runs),
        bench_seconds: now.bench_seconds - start.bench_seconds,
        setup: SetupTotals {
            templates: n.templates.saturating_sub(s.templates),
            template_seconds: n.template_seconds - s.template_seconds,
            setups: n.setups.saturating_sub(s.setups),
            setup_seconds: n.setup_seconds - s.setup_seconds,
        },
    }
}

impl Lab for Since<'_> {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.inner.run(commit, spec)
    }

    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.inner.prepare_ahead(commit)
    }

    fn hosts(&self) -> Vec<String> {
        self.inner.hosts()
    }

    fn run_round(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Vec<HostRun>> {
        self.inner.run_round(commit, spec)
    }

    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        self.inner.run_on(spec, runs)
    }

    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        self.inner.instrumented_run(commit, spec)
    }

    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.inner.counted_run(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        less(self.inner.totals(), self.start)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn run_length(&self) -> Option<u32> {
        self.inner.run_length()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_from_the_start() {
        let start = LabTotals {
            builds: 3,
            runs: 10,
            bench_seconds: 5.0,
            ..LabTotals::default()
        };
        let now = LabTotals {
            builds: 4,
            runs: 16,
            bench_seconds: 8.0,
            ..LabTotals::default()
        };
        let got = less(now, start);
        assert_eq!((got.builds, got.runs, got.bench_seconds), (1, 6, 3.0));
    }
}
