//! A lab whose every run is counted (`--measure instructions`).
//!
//! The hunt, `judge` and the release check ask a lab for runs and
//! rounds; they never ask for a counted run by name. Wrapped in
//! [`Counting`], the real PostgreSQL lab answers each of those with
//! [`Lab::counted_run`], so the searches, the checks and the replay of a
//! journal stay what they are for tps, and only the figure they decide on
//! ([`crate::model::Measurement::figure`]) changes.

use super::{Lab, RunSpec};
use crate::core::why::Instrumented;
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};

/// `inner`, its runs counted.
pub struct Counting<L>(pub L);

impl<L: Lab> Lab for Counting<L> {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.0.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.0.counted_run(commit, spec)
    }

    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.0.prepare_ahead(commit)
    }

    /// Counting is on this machine alone (see [`crate::lab::cannot_count`]).
    fn hosts(&self) -> Vec<String> {
        Vec::new()
    }

    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.0.counted_run(commit, spec)
    }

    /// Why-runs are timed: they measure what the counts cannot see.
    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        self.0.instrumented_run(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        self.0.totals()
    }

    /// The inner lab's, which names its counter.
    fn describe(&self) -> String {
        self.0.describe()
    }

    /// A counted run makes fixed numbers of transactions, not a run of a
    /// length: the hunt has no length to choose.
    fn run_length(&self) -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::{Counted, Window};
    use crate::model::Measurement;

    /// Answers a timed run with 100 tps and a counted one with a count.
    struct Both;

    impl Lab for Both {
        fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
            Ok(Prepared::Ready { cached: true })
        }
        fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
            Ok(RunOutcome::tps_only(100.0))
        }
        fn counted_run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
            let window = |transactions, instructions| Window {
                transactions,
                instructions,
                processes: 1,
            };
            Ok(RunOutcome::Measured(Measurement {
                instructions: Some(Counted {
                    per_transaction: 40_000.0,
                    counter: "cachegrind (valgrind-3.19.0)".into(),
                    short: window(200, 8_000_000),
                    long: window(1200, 48_000_000),
                    functions: vec![],
                }),
                ..match RunOutcome::tps_only(3.0) {
                    RunOutcome::Measured(m) => m,
                    RunOutcome::Failed { .. } => unreachable!("tps_only measures"),
                }
            }))
        }
        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }
        fn describe(&self) -> String {
            "pgbench -S".into()
        }
        fn run_length(&self) -> Option<u32> {
            Some(10)
        }
    }

    #[test]
    fn every_run_and_round_is_counted() {
        let mut lab = Counting(Both);
        let commit = Commit::bare("a");
        let spec = RunSpec {
            clients: 1,
            run: 1,
            seconds: None,
        };
        let counted = |outcome: &RunOutcome| match outcome {
            RunOutcome::Measured(m) => m.instructions.as_ref().map(|c| c.per_transaction),
            RunOutcome::Failed { .. } => None,
        };
        assert_eq!(counted(&lab.run(&commit, spec).unwrap()), Some(40_000.0));
        let round = lab.run_round(&commit, spec).unwrap();
        assert_eq!(round.len(), 1);
        assert_eq!(counted(&round[0].outcome), Some(40_000.0));
        assert_eq!(lab.run_length(), None);
        assert_eq!(lab.describe(), "pgbench -S");
    }
}
