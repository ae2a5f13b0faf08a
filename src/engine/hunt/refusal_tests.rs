//! Side-by-side checks that refuse what the search proposed: when a
//! refusal is a failure, and when it is a step of a walk to the drop.

use super::search::Refusals;
use super::tests::jitter;
use super::*;
use crate::lab::RunSpec;
use crate::model::{LabTotals, RunOutcome};
use crate::progress::Silent;

#[test]
fn refusals_that_walk_one_way_are_steps_not_failures() {
    let mut r = Refusals::default();
    assert!(!r.record((8, 9), 3, 10));
    assert!(!r.record((7, 8), 3, 10));
    assert!(!r.record((5, 6), 3, 10));
    assert!(!r.record((4, 5), 3, 10));
    assert_eq!(r.total(), 4);
    // Turning back is a failure, as is a pair that overlaps the last.
    assert!(!r.record((6, 7), 3, 10));
    assert!(r.record((6, 8), 3, 10));
}

#[test]
fn a_walk_is_no_longer_than_its_range() {
    let mut r = Refusals::default();
    let mut enough = false;
    for good in (0..9).rev() {
        enough = r.record((good, good + 1), 3, 3);
    }
    // One failure to start, three steps, then each refusal is a failure.
    assert!(enough);
    assert_eq!(r.total(), 9);
}

/// Every commit from `step` on is 20% slower, with a spread of 2%, but
/// the first `fooled` runs of each of the `misjudged` commits from `step`
/// on run at the good level: single runs read them as good, as a loaded
/// machine can, and only later runs (those of the checks) show them bad.
struct FoolingLab {
    ids: Vec<String>,
    step: usize,
    misjudged: usize,
    fooled: u32,
    seen: Vec<u32>,
    totals: LabTotals,
}

impl Lab for FoolingLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        self.totals.builds += 1;
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 1;
        let pos = self.ids.iter().position(|id| *id == commit.id).unwrap_or(0);
        self.seen[pos] += 1;
        let fooled =
            (self.step..self.step + self.misjudged).contains(&pos) && self.seen[pos] <= self.fooled;
        let level = if pos >= self.step && !fooled {
            800.0
        } else {
            1000.0
        };
        Ok(RunOutcome::tps_only(
            level * (1.0 + 0.02 * jitter(spec.run)),
        ))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        "fooling".into()
    }
}

#[test]
fn a_run_of_commits_misjudged_good_is_walked_down_to_the_culprit() {
    for search in [Search::Bisect, Search::Posterior] {
        let commits: Vec<Commit> = (0..=10)
            .map(|i| Commit::bare(format!("{i:08}{:032}", 0)))
            .collect();
        let step = 3;
        let mut lab = FoolingLab {
            ids: commits.iter().map(|c| c.id.clone()).collect(),
            step,
            misjudged: 4,
            fooled: 2,
            seen: vec![0; commits.len()],
            totals: LabTotals::default(),
        };
        let config = HuntConfig {
            search,
            ..HuntConfig::default()
        };
        let report = Hunt::new(config, commits.clone(), &mut lab, &mut Silent)
            .run()
            .unwrap();
        let found: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
        assert_eq!(
            found,
            [commits[step].id.as_str()],
            "{search:?}: {:?} {:#?} {:#?}",
            report.outcome,
            report.unresolved,
            report.notes
        );
    }
}
