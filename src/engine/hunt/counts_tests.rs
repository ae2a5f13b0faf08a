//! A hunt on instruction counts against a lab whose counts repeat to a
//! few hundredths of a percent, as cachegrind's do.

use super::*;
use crate::core::counts::Measure;
use crate::lab::RunSpec;
use crate::model::{LabTotals, RunOutcome};
use crate::progress::Silent;

/// Commits from `step` on cost 2% more instructions a transaction; every
/// count wobbles by up to 0.04%.
struct CountLab {
    step: usize,
    counted: Vec<usize>,
}

impl Lab for CountLab {
    fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }
    /// The hunt's lab measures by its measure: here every run is counted.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let pos: usize = commit.id.parse()?;
        self.counted.push(pos);
        let level = if pos >= self.step { 42_400.0 } else { 41_570.0 };
        let wobble = 1.0 + 0.0008 * tests::jitter(spec.run);
        Ok(crate::testing::counted_outcome(level * wobble, vec![]))
    }
    fn totals(&self) -> LabTotals {
        LabTotals::default()
    }
    fn describe(&self) -> String {
        "counted".into()
    }
}

#[test]
fn a_culprits_check_on_counts_counts_the_runs_the_search_made_of_it() {
    let commits: Vec<Commit> = (0..=31).map(|i| Commit::bare(format!("{i:02}"))).collect();
    let mut lab = CountLab {
        step: 15,
        counted: Vec::new(),
    };
    let cfg = HuntConfig {
        measure: Measure::Instructions,
        decision: DecisionConfig {
            threshold: 0.01,
            ..DecisionConfig::default()
        },
        ..HuntConfig::default()
    };
    let report = Hunt::new(cfg, commits, &mut lab, &mut Silent)
        .run()
        .unwrap();
    let culprits: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
    assert_eq!(culprits, ["15"], "{:#?}", report.notes);
    let culprit = &report.culprits[0];
    assert_eq!((culprit.runs_before, culprit.runs_after), (3, 3));
    // The check measured each of the pair twice more: with the run the
    // search made of it, three a side.
    let of = |pos: usize| lab.counted.iter().filter(|&&p| p == pos).count();
    assert_eq!((of(14), of(15)), (3, 3), "{:?}", lab.counted);
    // The ends three times each, five steps, the check's four runs.
    assert_eq!(lab.counted.len(), 6 + 5 + 4, "{:?}", lab.counted);
}
