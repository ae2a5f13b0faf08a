//! One run made before the search and journaled, as the release check and
//! the choice of measure make theirs: a run the stop cut short is not the
//! commit's failure, so it is neither journaled nor counted against it.

use crate::engine::hunt::HuntError;
use crate::journal::{Event, Journal};
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, RunOutcome};

/// The way a run is made: timed, or counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    Timed,
    Counted,
}

/// Makes `spec`'s run of `commit` in `lab` the way `made` says and appends
/// it to `journal` when there is one; an interruption when `stopping`
/// says the stop came while it ran and it did not measure.
pub fn make(
    lab: &mut dyn Lab,
    (commit, spec, made): (&Commit, RunSpec, Made),
    journal: Option<&mut Journal>,
    stopping: &dyn Fn() -> bool,
) -> anyhow::Result<RunOutcome> {
    let result = match made {
        Made::Timed => lab.run(commit, spec),
        Made::Counted => lab.counted_run(commit, spec),
    };
    let outcome = match result {
        Err(_) if stopping() => return Err(HuntError::Interrupted.into()),
        other => other?,
    };
    if stopping() && !matches!(outcome, RunOutcome::Measured(_)) {
        return Err(HuntError::Interrupted.into());
    }
    if let Some(journal) = journal {
        journal.append(&Event::run_here(spec.run, commit, spec.clients, &outcome))?;
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LabTotals, Prepared};

    /// Fails every run, as a server killed by the stop would.
    struct Dying;

    impl Lab for Dying {
        fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
            Ok(Prepared::Ready { cached: true })
        }
        fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
            Ok(RunOutcome::Failed {
                reason: "the server was killed".into(),
            })
        }
        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }
        fn describe(&self) -> String {
            "dying".into()
        }
    }

    fn spec() -> RunSpec {
        RunSpec {
            clients: 1,
            run: 1,
            seconds: None,
        }
    }

    #[test]
    fn a_failed_run_is_journaled_unless_the_stop_cut_it_short() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("j.jsonl");
        let commit = Commit::bare("a");
        let mut journal = Journal::open(&path).unwrap();
        let stopped = make(
            &mut Dying,
            (&commit, spec(), Made::Timed),
            Some(&mut journal),
            &|| true,
        );
        let err = stopped.unwrap_err();
        assert!(
            matches!(err.downcast_ref(), Some(HuntError::Interrupted)),
            "{err:#}"
        );
        assert!(Journal::load(&path).unwrap().is_empty());
        let failed = make(
            &mut Dying,
            (&commit, spec(), Made::Timed),
            Some(&mut journal),
            &|| false,
        )
        .unwrap();
        assert!(matches!(failed, RunOutcome::Failed { .. }));
        assert_eq!(Journal::load(&path).unwrap().len(), 1);
    }

    #[test]
    fn a_lab_that_cannot_count_says_so() {
        let err = make(
            &mut Dying,
            (&Commit::bare("a"), spec(), Made::Counted),
            None,
            &|| false,
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("count"), "{err:#}");
    }
}
