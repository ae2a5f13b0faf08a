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
    /// `prepare N` and `ahead N`, in the order asked.
    asked: Vec<String>,
}

impl CountLab {
    fn new(step: usize) -> CountLab {
        CountLab {
            step,
            counted: Vec::new(),
            asked: Vec::new(),
        }
    }
}

impl Lab for CountLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.asked.push(format!("prepare {}", commit.id));
        Ok(Prepared::Ready { cached: false })
    }
    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.asked.push(format!("ahead {}", commit.id));
        true
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
    let mut lab = CountLab::new(15);
    let report = hunt(&mut lab, Measure::Instructions);
    let culprits: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
    assert_eq!(culprits, ["15"], "{:#?}", report.notes);
    let culprit = &report.culprits[0];
    assert_eq!((culprit.runs_before, culprit.runs_after), (2, 2));
    // The check measured each of the pair once more: with the run the
    // search made of it, two a side, as many as counts this steady need.
    let of = |pos: usize| lab.counted.iter().filter(|&&p| p == pos).count();
    assert_eq!((of(14), of(15)), (2, 2), "{:?}", lab.counted);
    // The ends twice each, five steps, the check's two runs.
    assert_eq!(lab.counted.len(), 4 + 5 + 2, "{:?}", lab.counted);
}

fn hunt(lab: &mut CountLab, measure: Measure) -> HuntReport {
    let commits: Vec<Commit> = (0..=31).map(|i| Commit::bare(format!("{i:02}"))).collect();
    let cfg = HuntConfig {
        measure,
        decision: DecisionConfig {
            threshold: 0.01,
            ..DecisionConfig::default()
        },
        ..HuntConfig::default()
    };
    Hunt::new(cfg, commits, lab, &mut Silent).run().unwrap()
}

#[test]
fn on_counts_the_next_commit_is_built_while_this_one_is_counted() {
    let mut lab = CountLab::new(15);
    hunt(&mut lab, Measure::Instructions);
    // The bad end once the good one is built; the search's first commit
    // once the bad end is, and it is the commit the search measures first.
    assert_eq!(
        lab.asked[..5],
        [
            "prepare 00",
            "ahead 31",
            "prepare 31",
            "ahead 16",
            "prepare 16"
        ],
        "{:?}",
        lab.asked
    );
    assert_eq!(lab.counted[4], 16, "{:?}", lab.counted);
    let ahead = lab.asked.iter().filter(|a| a.starts_with("ahead")).count();
    assert_eq!(ahead, 2, "{:?}", lab.asked);
}

#[test]
fn a_hunt_on_tps_builds_nothing_beside_its_runs() {
    let mut lab = CountLab::new(15);
    hunt(&mut lab, Measure::Tps);
    assert!(
        lab.asked.iter().all(|a| a.starts_with("prepare")),
        "{:?}",
        lab.asked
    );
}
