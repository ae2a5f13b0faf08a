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
//!
//! The check is a side question: under a time budget it may spend
//! [`BUDGET_SHARE`] of the time left when it starts, builds included, and
//! stops with what it measured by then, leaving the rest to the search.

use crate::core::decide::{self, Comparison, DecisionConfig, Verdict};
use crate::engine::hunt::HuntError;
use crate::engine::hunt::budget::{Budget, human};
use crate::engine::journaled_run::{self, Made};
use crate::journal::{Event, Journal};
use crate::lab::replay::ReplayLab;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};
use crate::progress::{Progress, ProgressEvent};
use crate::report::findings::{ReleaseCheck, ReleaseFinding};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The share of a hunt's time left that the release check may spend: the
/// search is what was asked for, the check a side question.
pub const BUDGET_SHARE: f64 = 0.25;

/// The share as the plan and the report say it.
pub const BUDGET_SHARE_WORDS: &str = "a quarter";

/// The part of `budget` the check may spend, from now: [`BUDGET_SHARE`]
/// of what is left.
pub fn share_of(budget: Budget) -> Budget {
    let now = budget.now();
    let share = budget.left(now) * BUDGET_SHARE;
    Budget {
        deadline: now + Duration::from_secs_f64(share),
        clock: budget.clock,
    }
}

/// Failed runs of one side before the release counts as unmeasured.
const MAX_RUN_FAILURES: usize = 2;

/// What is measured against what.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The check's share of the hunt's time budget (see [`share_of`]).
    pub budget: Option<Budget>,
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
        budget,
    } = setup;
    let within = budget.map_or_else(String::new, |b| {
        format!(
            ", within {} of the time budget ({BUDGET_SHARE_WORDS} of what is left)",
            human(b.left(b.now()))
        )
    });
    progress.event(&ProgressEvent::Phase(format!(
        "measuring {} against {}, where it left {}, interleaved{within}",
        sides.given,
        sides.merge_base.short(),
        sides.left
    )));
    if let Some(why) = prepare_both(lab, &sides, budget, progress, journal.as_deref_mut())? {
        return Ok(unmeasured(sides, why));
    }
    let commits = [sides.release.clone(), sides.merge_base.clone()];
    let mut tps: [Vec<f64>; 2] = [vec![], vec![]];
    let mut failures = [0usize; 2];
    let mut run = 0;
    let mut clock = RoundClock::default();
    for round in 1..=decision.max_runs {
        if let Some(share) = budget
            && !clock.next_fits(&share)
        {
            return Ok(out_of_share(sides, &tps, &decision));
        }
        let started = budget.map(|b| b.now());
        for (side, commit) in commits.iter().enumerate() {
            if interrupt.as_ref().is_some_and(|f| f.load(Ordering::SeqCst)) {
                return Err(HuntError::Interrupted.into());
            }
            run += 1;
            let stopping = || interrupt.as_ref().is_some_and(|f| f.load(Ordering::SeqCst));
            let spec = RunSpec {
                clients,
                run,
                seconds: None,
            };
            let outcome = journaled_run::make(
                lab,
                (commit, spec, Made::Timed),
                journal.as_deref_mut(),
                &stopping,
            )?;
            let value = match &outcome {
                RunOutcome::Measured(m) if m.tps.is_finite() && m.tps > 0.0 => Some(m.tps),
                _ => None,
            };
            progress.event(&ProgressEvent::Run {
                run,
                commit: commit.short().to_string(),
                tps: value,
                instructions: None,
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
        if let (Some(b), Some(t0)) = (budget, started) {
            clock.count(since(b, t0));
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
            return Ok(settled(sides, finding, cmp));
        }
    }
    Ok(unmeasured(sides, "no runs were made".into()))
}

/// Builds the merge-base (the search's good end, needed whatever comes
/// of the check), then the release, unless building it as long as the
/// merge-base took would end past the check's share of the budget. Says
/// why the check cannot be measured, or `None`.
fn prepare_both(
    lab: &mut dyn Lab,
    sides: &Sides,
    budget: Option<Budget>,
    progress: &mut dyn Progress,
    mut journal: Option<&mut Journal>,
) -> anyhow::Result<Option<String>> {
    let mut base_build = None;
    for commit in [&sides.merge_base, &sides.release] {
        if let (Some(share), Some(took)) = (budget, base_build)
            && !share.fits(share.now(), took)
        {
            let why = if share.left(share.now()) > 0.0 {
                format!(
                    "a build as long as {}'s ({}) would end past",
                    sides.merge_base.short(),
                    human(took)
                )
            } else {
                "the time had run out for".to_string()
            };
            return Ok(Some(format!(
                "{} was not built: {why} its share of the time budget \
                 ({BUDGET_SHARE_WORDS} of what was left); a longer --time-budget, or none, \
                 measures it",
                commit.short(),
            )));
        }
        progress.event(&ProgressEvent::Preparing {
            commit: commit.short().to_string(),
        });
        let started = budget.map(|b| b.now());
        let prepared = lab.prepare(commit)?;
        if let (Some(b), Some(t0)) = (budget, started)
            && !matches!(prepared, Prepared::Ready { cached: true })
        {
            base_build = Some(since(b, t0).as_secs_f64());
        }
        if let Some(j) = journal.as_deref_mut() {
            j.append(&Event::Prepared {
                commit: commit.id.clone(),
                prepared: prepared.clone(),
            })?;
        }
        if let Prepared::Unbuildable { reason, .. } = prepared {
            return Ok(Some(format!(
                "{} cannot be built: {reason}",
                commit.short()
            )));
        }
    }
    Ok(None)
}

/// Time on `budget`'s clock since `start`.
fn since(budget: Budget, start: std::time::SystemTime) -> Duration {
    budget.now().duration_since(start).unwrap_or_default()
}

/// What the rounds so far cost, to tell whether one more fits.
#[derive(Debug, Default)]
struct RoundClock {
    rounds: u32,
    spent: Duration,
}

impl RoundClock {
    fn count(&mut self, took: Duration) {
        self.rounds += 1;
        self.spent += took;
    }

    /// Whether one more round, as long as the ones so far, ends within
    /// `share` (the first needs only some time left).
    fn next_fits(&self, share: &Budget) -> bool {
        let now = share.now();
        match self.rounds {
            0 => share.left(now) > 0.0,
            n => share.fits(now, self.spent.as_secs_f64() / f64::from(n)),
        }
    }
}

/// The check stopped at the end of its share of the time budget: settled
/// as far as its runs allow when each side has enough of them, else
/// unmeasured, saying how many runs were made.
fn out_of_share(sides: Sides, tps: &[Vec<f64>; 2], decision: &DecisionConfig) -> ReleaseCheck {
    let runs = format!("{} + {} runs", tps[0].len(), tps[1].len());
    let why = format!(
        "stopped after {runs} at its share of the time budget ({BUDGET_SHARE_WORDS} of \
         what was left), so that the search keeps the rest; a longer --time-budget, or \
         none, measures it"
    );
    let enough = tps.iter().all(|side| side.len() >= decision.min_runs);
    match settle(&tps[0], &tps[1], decision, true) {
        Some((finding, cmp)) if enough => ReleaseCheck {
            reason: Some(why),
            ..settled(sides, finding, cmp)
        },
        _ => unmeasured(sides, why),
    }
}

fn settled(sides: Sides, finding: ReleaseFinding, cmp: Comparison) -> ReleaseCheck {
    ReleaseCheck {
        finding,
        comparison: Some(cmp),
        reason: None,
        ..unmeasured(sides, String::new())
    }
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
        let result = measure(&mut lab, sides(), setup(None), None).unwrap();
        (result, lab.runs)
    }

    fn sides() -> Sides {
        Sides {
            given: "REL9_5_0".into(),
            release: Commit::bare("rel"),
            merge_base: Commit::bare("base"),
            branch: Some("REL9_5_STABLE".into()),
            left: "master".into(),
        }
    }

    fn setup(budget: Option<Budget>) -> Setup<'static> {
        Setup {
            decision: DecisionConfig::default(),
            clients: 1,
            progress: Box::leak(Box::new(Silent)),
            interrupt: None,
            budget,
        }
    }

    thread_local! {
        /// Seconds on this test thread's fake clock.
        static NOW: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn fake_now() -> std::time::SystemTime {
        std::time::UNIX_EPOCH + Duration::from_secs(NOW.with(|n| n.get()))
    }

    /// A budget of `seconds` on the fake clock, set to `now`.
    fn fake_budget(now: u64, seconds: u64) -> Budget {
        NOW.with(|n| n.set(now));
        Budget {
            deadline: fake_now() + Duration::from_secs(seconds),
            clock: fake_now,
        }
    }

    /// A lab whose builds and runs take this many seconds of the fake
    /// clock.
    struct TimedLab {
        levels: LevelLab,
        build: u64,
        run: u64,
    }

    impl TimedLab {
        fn new(build: u64, run: u64) -> TimedLab {
            TimedLab {
                levels: LevelLab {
                    levels: vec![("rel".into(), 1000.0), ("base".into(), 900.0)],
                    runs: vec![],
                },
                build,
                run,
            }
        }
    }

    impl Lab for TimedLab {
        fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
            NOW.with(|n| n.set(n.get() + self.build));
            self.levels.prepare(commit)
        }

        fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
            NOW.with(|n| n.set(n.get() + self.run));
            self.levels.run(commit, spec)
        }

        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }

        fn describe(&self) -> String {
            "timed levels".into()
        }
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

    #[test]
    fn the_check_keeps_to_its_share_of_the_budget() {
        let budget = fake_budget(1000, 400);
        // A quarter of 400 s: 100 s, one round of two 30 s runs and not
        // a second.
        let share = share_of(budget);
        assert_eq!(share.left(fake_now()), 100.0);
        let mut lab = TimedLab::new(0, 30);
        let result = measure(&mut lab, sides(), setup(Some(share)), None).unwrap();
        assert_eq!(lab.levels.runs, ["rel", "base"]);
        assert_eq!(result.finding, ReleaseFinding::Unmeasured);
        assert!(result.comparison.is_none());
        let reason = result.reason.unwrap();
        assert!(reason.contains("stopped after 1 + 1 runs"), "{reason}");
        assert!(reason.contains("a quarter"), "{reason}");
    }

    /// A release build that would pass the share is not made (the
    /// merge-base's took 200 s of 300), nor one when the share is spent.
    #[test]
    fn nothing_is_started_that_the_share_cannot_hold() {
        let cases = [
            ((9000, 300), TimedLab::new(200, 0), "rel was not built"),
            (
                (5000, 0),
                TimedLab::new(0, 30),
                "the time had run out for its share",
            ),
        ];
        for ((now, seconds), mut lab, said) in cases {
            let share = fake_budget(now, seconds);
            let result = measure(&mut lab, sides(), setup(Some(share)), None).unwrap();
            assert!(lab.levels.runs.is_empty());
            assert_eq!(result.finding, ReleaseFinding::Unmeasured);
            let reason = result.reason.unwrap();
            assert!(reason.contains(said), "{reason}");
        }
    }

    #[test]
    fn rounds_fit_as_long_as_the_ones_before() {
        let share = fake_budget(0, 100);
        let mut clock = RoundClock::default();
        assert!(clock.next_fits(&share));
        clock.count(Duration::from_secs(60));
        assert!(clock.next_fits(&share));
        NOW.with(|n| n.set(60));
        assert!(!clock.next_fits(&share));
    }
}
