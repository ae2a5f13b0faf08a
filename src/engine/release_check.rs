//! A release measured against the point where it left master.
//!
//! A hunt from a release tag to master searches master's line from the
//! commit where the release's stable branch left it (see
//! [`crate::repo::Endpoints`]). The release itself is not that commit:
//! fixes back-patched onto the stable branch, and the stamp commits, lie
//! between them. When the release is faster than that point, the drop the
//! user sees from the release to master came, at least in part, from the
//! stable branch, and no commit of master's line is to blame for that part.
//! So before the search the release and the merge-base are measured
//! interleaved (release, base, release, base...), with the same two-sided
//! use of [`decide::compare`] a hunt makes of its endpoints, until their
//! difference is either at least the threshold or surely smaller; the
//! report says which. The runs are journaled in a file of their own, so a
//! resumed hunt does not make them again.

use crate::core::decide::{self, Comparison, DecisionConfig, Verdict};
use crate::engine::hunt::HuntError;
use crate::journal::{Event, Journal};
use crate::lab::replay::ReplayLab;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};
use crate::progress::{Progress, ProgressEvent};
use crate::report::findings::{ReleaseCheck, ReleaseFinding};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Failed runs of one side before the release counts as unmeasured.
const MAX_RUN_FAILURES: usize = 2;

/// What is measured against what.
#[derive(Debug, Clone)]
pub struct Sides {
    /// The name given for `--good`.
    pub given: String,
    pub release: Commit,
    /// Where the release's line left master's: the hunt's good end.
    pub merge_base: Commit,
    pub branch: Option<String>,
    /// What it left: `master`, or `that line`.
    pub left: String,
}

/// How the check is run.
pub struct Setup<'a> {
    pub decision: DecisionConfig,
    pub clients: u32,
    pub progress: &'a mut dyn Progress,
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// What the runs so far say, or `None` while more runs may settle it:
/// the merge-base set against the release, in both directions.
pub fn settle(
    release: &[f64],
    merge_base: &[f64],
    cfg: &DecisionConfig,
    at_cap: bool,
) -> Option<(ReleaseFinding, Comparison)> {
    let lower = decide::compare(release, merge_base, cfg, cfg.threshold);
    let higher = decide::compare(merge_base, release, cfg, cfg.threshold);
    let finding = match (lower.verdict, higher.verdict) {
        (Verdict::Regressed, _) => ReleaseFinding::ReleaseFaster,
        (_, Verdict::Regressed) => ReleaseFinding::ReleaseSlower,
        (Verdict::Unchanged, Verdict::Unchanged) => ReleaseFinding::Same,
        _ if at_cap => ReleaseFinding::Unclear,
        _ => return None,
    };
    Some((finding, lower))
}

/// Measures the release against the merge-base with the journal at
/// `journal_path` (in the hunt's folder), replaying the runs it already
/// holds.
pub fn run_journaled(
    lab: &mut dyn Lab,
    journal_path: &Path,
    sides: Sides,
    setup: Setup<'_>,
) -> anyhow::Result<ReleaseCheck> {
    let past = Journal::load(journal_path)?;
    let mut replay = ReplayLab::new(lab, &past);
    let mut journal = Journal::open(journal_path)?;
    measure(&mut replay, sides, setup, Some(&mut journal))
}

/// Measures the release against the merge-base, interleaved, until
/// [`settle`] has an answer or both have `max_runs` runs.
pub fn measure(
    lab: &mut dyn Lab,
    sides: Sides,
    setup: Setup<'_>,
    mut journal: Option<&mut Journal>,
) -> anyhow::Result<ReleaseCheck> {
    let Setup {
        decision,
        clients,
        progress,
        interrupt,
    } = setup;
    progress.event(&ProgressEvent::Phase(format!(
        "measuring {} against {}, where it left {}, interleaved",
        sides.given,
        sides.merge_base.short(),
        sides.left
    )));
    let commits = [sides.release.clone(), sides.merge_base.clone()];
    for commit in &commits {
        progress.event(&ProgressEvent::Preparing {
            commit: commit.short().to_string(),
        });
        let prepared = lab.prepare(commit)?;
        if let Some(j) = journal.as_deref_mut() {
            j.append(&Event::Prepared {
                commit: commit.id.clone(),
                prepared: prepared.clone(),
            })?;
        }
        if let Prepared::Unbuildable { reason, .. } = prepared {
            let why = format!("{} cannot be built: {reason}", commit.short());
            return Ok(unmeasured(sides, why));
        }
    }
    let mut tps: [Vec<f64>; 2] = [vec![], vec![]];
    let mut failures = [0usize; 2];
    let mut run = 0;
    for round in 1..=decision.max_runs {
        for (side, commit) in commits.iter().enumerate() {
            if interrupt.as_ref().is_some_and(|f| f.load(Ordering::SeqCst)) {
                return Err(HuntError::Interrupted.into());
            }
            run += 1;
            let stopping = || interrupt.as_ref().is_some_and(|f| f.load(Ordering::SeqCst));
            let outcome = match lab.run(
                commit,
                RunSpec {
                    clients,
                    run,
                    seconds: None,
                },
            ) {
                Err(_) if stopping() => return Err(HuntError::Interrupted.into()),
                other => other?,
            };
            if stopping() && !matches!(outcome, RunOutcome::Measured(_)) {
                // Cut short by the stop, not a failure of the commit: not journaled.
                return Err(HuntError::Interrupted.into());
            }
            if let Some(j) = journal.as_deref_mut() {
                j.append(&Event::Run {
                    run,
                    commit: commit.id.clone(),
                    clients,
                    seconds: None,
                    outcome: outcome.clone(),
                    host: None,
                })?;
            }
            let value = match &outcome {
                RunOutcome::Measured(m) if m.tps.is_finite() && m.tps > 0.0 => Some(m.tps),
                _ => None,
            };
            progress.event(&ProgressEvent::Run {
                run,
                commit: commit.short().to_string(),
                tps: value,
            });
            match (value, outcome) {
                (Some(v), _) => tps[side].push(v),
                (None, outcome) => {
                    failures[side] += 1;
                    if failures[side] >= MAX_RUN_FAILURES {
                        let reason = match outcome {
                            RunOutcome::Failed { reason } => reason,
                            RunOutcome::Measured(m) => format!("unusable tps {}", m.tps),
                        };
                        let why = format!("runs of {} failed: {reason}", commit.short());
                        return Ok(unmeasured(sides, why));
                    }
                }
            }
        }
        let at_cap = round == decision.max_runs;
        if let Some((finding, cmp)) = settle(&tps[0], &tps[1], &decision, at_cap) {
            progress.event(&ProgressEvent::Note(format!(
                "{} -> {}: {} in {} + {} runs",
                sides.given,
                sides.merge_base.short(),
                cmp.change,
                cmp.n_base,
                cmp.n_new
            )));
            return Ok(ReleaseCheck {
                given: sides.given,
                release: sides.release,
                merge_base: sides.merge_base,
                branch: sides.branch,
                left: sides.left,
                finding,
                comparison: Some(cmp),
                reason: None,
            });
        }
    }
    Ok(unmeasured(sides, "no runs were made".into()))
}

fn unmeasured(sides: Sides, reason: String) -> ReleaseCheck {
    ReleaseCheck {
        given: sides.given,
        release: sides.release,
        merge_base: sides.merge_base,
        branch: sides.branch,
        left: sides.left,
        finding: ReleaseFinding::Unmeasured,
        comparison: None,
        reason: Some(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LabTotals;
    use crate::progress::Silent;

    /// Each commit runs at its level with a small spread; an unknown
    /// commit cannot be built.
    struct LevelLab {
        levels: Vec<(String, f64)>,
        runs: Vec<String>,
    }

    impl Lab for LevelLab {
        fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
            Ok(if self.levels.iter().any(|(id, _)| *id == commit.id) {
                Prepared::Ready { cached: false }
            } else {
                Prepared::Unbuildable {
                    reason: "no such level".into(),
                    log: None,
                }
            })
        }

        fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
            self.runs.push(commit.id.clone());
            let level = self
                .levels
                .iter()
                .find(|(id, _)| *id == commit.id)
                .map_or(0.0, |(_, l)| *l);
            let wiggle = [0.0, 0.006, -0.004, 0.003, -0.006, 0.002][spec.run as usize % 6];
            Ok(RunOutcome::tps_only(level * (1.0 + wiggle)))
        }

        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }

        fn describe(&self) -> String {
            "levels".into()
        }
    }

    /// Checks `rel` against `base` in a lab that has these levels.
    fn check_in(levels: &[(&str, f64)]) -> (ReleaseCheck, Vec<String>) {
        let mut lab = LevelLab {
            levels: levels.iter().map(|(id, l)| (id.to_string(), *l)).collect(),
            runs: vec![],
        };
        let sides = Sides {
            given: "REL9_5_0".into(),
            release: Commit::bare("rel"),
            merge_base: Commit::bare("base"),
            branch: Some("REL9_5_STABLE".into()),
            left: "master".into(),
        };
        let setup = Setup {
            decision: DecisionConfig::default(),
            clients: 1,
            progress: &mut Silent,
            interrupt: None,
        };
        let result = measure(&mut lab, sides, setup, None).unwrap();
        (result, lab.runs)
    }

    fn check(release_level: f64, base_level: f64) -> (ReleaseCheck, Vec<String>) {
        check_in(&[("rel", release_level), ("base", base_level)])
    }

    #[test]
    fn a_release_faster_than_where_it_left_master_is_told() {
        let (result, runs) = check(1000.0, 900.0);
        assert_eq!(result.finding, ReleaseFinding::ReleaseFaster);
        let change = result.comparison.unwrap().change;
        assert!((change.pct + 10.0).abs() < 1.0, "{change}");
        // Interleaved: release, base, release, base...
        assert_eq!(&runs[..4], ["rel", "base", "rel", "base"]);
        assert!(runs.len() < 2 * DecisionConfig::default().max_runs);
    }

    #[test]
    fn a_slower_release_and_an_equal_one_are_told_apart() {
        assert_eq!(
            check(900.0, 1000.0).0.finding,
            ReleaseFinding::ReleaseSlower
        );
        let (same, runs) = check(1000.0, 1002.0);
        assert_eq!(same.finding, ReleaseFinding::Same);
        assert!(runs.len() < 2 * DecisionConfig::default().max_runs);
    }

    #[test]
    fn a_release_that_cannot_be_built_is_unmeasured_not_an_error() {
        let (result, runs) = check_in(&[("base", 1000.0)]);
        assert_eq!(result.finding, ReleaseFinding::Unmeasured);
        assert!(result.reason.unwrap().contains("cannot be built"));
        assert!(result.comparison.is_none());
        assert!(runs.is_empty());
    }

    #[test]
    fn noise_wider_than_the_threshold_is_unclear_only_at_the_cap() {
        let cfg = DecisionConfig::default();
        let release = [1000.0, 800.0, 1100.0, 900.0];
        let base = [950.0, 1050.0, 820.0, 990.0];
        assert_eq!(settle(&release, &base, &cfg, false), None);
        let (finding, _) = settle(&release, &base, &cfg, true).unwrap();
        assert_eq!(finding, ReleaseFinding::Unclear);
        assert_eq!(settle(&release[..2], &base[..2], &cfg, false), None);
    }
}
