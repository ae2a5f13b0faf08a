//! The driver against labs with known behaviour.

use super::check::RangeState;
use super::*;
use crate::lab::RunSpec;
use crate::model::{LabTotals, RunOutcome};
use crate::progress::Silent;
use crate::report::findings::RunSample;

/// A fixed pseudo-random number in [-0.5, 0.5) for each `seed`.
pub(super) fn jitter(seed: u64) -> f64 {
    let hash = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (hash % 1000) as f64 / 1000.0 - 0.5
}

/// Every commit runs at 1000 tps with some spread, except
/// the bad endpoint's first `slow_runs` runs, which are 20% slower: a
/// drop that does not reproduce.
struct TransientLab {
    bad: String,
    slow_runs: u32,
    bad_runs: u32,
    totals: LabTotals,
}

impl Lab for TransientLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 1;
        // A fixed pseudo-random spread of about 3%.
        let mut tps = 1000.0 * (1.0 + 0.1 * jitter(spec.run));
        if commit.id == self.bad {
            self.bad_runs += 1;
            if self.bad_runs <= self.slow_runs {
                tps *= 0.8;
            }
        }
        Ok(RunOutcome::tps_only(tps))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        "transient".into()
    }
}

#[test]
fn a_drop_that_vanishes_blames_nobody_and_stays_cheap() {
    let commits: Vec<Commit> = (0..=200)
        .map(|i| Commit::bare(format!("{i:040}")))
        .collect();
    let mut lab = TransientLab {
        bad: commits[200].id.clone(),
        slow_runs: 4,
        bad_runs: 0,
        totals: LabTotals::default(),
    };
    let report = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut Silent)
        .run()
        .unwrap();
    assert!(report.culprits.is_empty(), "{:?}", report.culprits);
    assert_eq!(
        report.outcome,
        HuntOutcome::NoRegression,
        "{:#?}",
        report.notes
    );
    // The bad end's slow first runs read as a machine whose speed changed
    // (to any observer they are one), so reference runs then come every
    // other run and runs are compared pair by pair: 113 runs. Without the
    // check that the range still holds, the run cap of every commit it
    // visits.
    assert!(report.totals.runs < 150, "{} runs", report.totals.runs);
}

/// Every commit from `step` on is 15% slower, with a fixed spread of 2%;
/// with `wave`, the machine's speed swings by that much, slowly (a period
/// of about 60 runs), as on a shared machine.
struct StepLab {
    ids: Vec<String>,
    step: usize,
    wave: f64,
    totals: LabTotals,
}

impl Lab for StepLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        self.totals.builds += 1;
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 1;
        let pos = self.ids.iter().position(|id| *id == commit.id);
        let jitter = jitter(spec.run);
        let level = if pos >= Some(self.step) {
            850.0
        } else {
            1000.0
        };
        let speed = 1.0 + self.wave * (spec.run as f64 / 10.0).sin();
        Ok(RunOutcome::tps_only(level * speed * (1.0 + 0.02 * jitter)))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        "step".into()
    }
}

/// The search left 39 good-like, 40 unsure, 41 bad-like; which pair does
/// narrowing name when the step is at `step`?
fn narrowed(step: usize, unsure: Judgement) -> Option<(usize, usize)> {
    let commits = bare_commits(64);
    let mut lab = step_lab(&commits, step, 0.0);
    let mut silent = Silent;
    let mut hunt = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut silent);
    assert_eq!(hunt.endpoints().unwrap().verdict, Verdict::Regressed);
    hunt.state[39].judgement = Some(Judgement::GoodLike);
    hunt.state[40].judgement = Some(unsure);
    hunt.state[41].judgement = Some(Judgement::BadLike);
    let range = Range { lo: 0, hi: 64 };
    let found = hunt.narrow(39, 41, range).unwrap();
    assert_eq!(hunt.alpha_share, 1.0);
    found.map(|(good, bad, check)| {
        assert_eq!(check.side_by_side.verdict, Verdict::Regressed);
        (good, bad)
    })
}

#[test]
fn an_unsure_commit_is_narrowed_side_by_side() {
    assert_eq!(narrowed(41, Judgement::Unsure), Some((40, 41)));
    assert_eq!(narrowed(40, Judgement::Unsure), Some((39, 40)));
    // An unbuildable commit has no pair to measure: the range stands.
    assert_eq!(narrowed(41, Judgement::Unbuildable), None);
}

fn bare_commits(n: usize) -> Vec<Commit> {
    (0..=n).map(|i| Commit::bare(format!("{i:040}"))).collect()
}

fn step_lab(commits: &[Commit], step: usize, wave: f64) -> StepLab {
    StepLab {
        ids: commits.iter().map(|c| c.id.clone()).collect(),
        step,
        wave,
        totals: LabTotals::default(),
    }
}

#[test]
fn a_drifting_machine_is_noticed_and_blames_no_wrong_commit() {
    for (wave, drifts) in [(0.0, false), (0.15, true)] {
        let commits = bare_commits(64);
        let mut lab = step_lab(&commits, 41, wave);
        let mut silent = Silent;
        let mut hunt = Hunt::new(
            HuntConfig::default(),
            commits.clone(),
            &mut lab,
            &mut silent,
        );
        for _ in 0..16 {
            for pos in [0, 64] {
                hunt.measure(pos).unwrap();
            }
        }
        assert_eq!(hunt.evidence.drifting(), drifts, "wave {wave}");
        assert_eq!(hunt.reference_every(), if drifts { 2 } else { 6 });

        let mut lab = step_lab(&commits, 41, wave);
        let report = Hunt::new(
            HuntConfig::default(),
            commits.clone(),
            &mut lab,
            &mut Silent,
        )
        .run()
        .unwrap();
        let culprits: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
        assert!(
            culprits.iter().all(|c| *c == commits[41].id),
            "wave {wave}: {culprits:?} {:?}",
            report.notes
        );
    }
}

/// Every commit runs at 1000 tps with a wide, fixed pseudo-random spread,
/// the bad endpoint `drop` slower: a machine too noisy for the run cap.
struct SpreadLab {
    bad: String,
    drop: f64,
    spread: f64,
}

impl Lab for SpreadLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let level = if commit.id == self.bad {
            1.0 - self.drop
        } else {
            1.0
        };
        Ok(RunOutcome::tps_only(
            1000.0 * level * (1.0 + self.spread * jitter(spec.run + 7)),
        ))
    }

    fn totals(&self) -> LabTotals {
        LabTotals::default()
    }

    fn describe(&self) -> String {
        "spread".into()
    }
}

fn hunt_at_the_run_cap(drop: f64, spread: f64) -> HuntReport {
    let commits: Vec<Commit> = (0..=20).map(|i| Commit::bare(format!("{i:040}"))).collect();
    let mut lab = SpreadLab {
        bad: commits[20].id.clone(),
        drop,
        spread,
    };
    let mut cfg = HuntConfig::default();
    cfg.decision.max_runs = 6;
    Hunt::new(cfg, commits, &mut lab, &mut Silent)
        .run()
        .unwrap()
}

#[test]
fn a_drop_under_half_the_threshold_at_the_run_cap_is_no_regression() {
    let report = hunt_at_the_run_cap(0.0, 0.8);
    assert_eq!(
        report.endpoints.verdict,
        Verdict::Unclear,
        "{:?}",
        report.endpoints
    );
    assert!(report.endpoints.change.pct > -2.5, "{:?}", report.endpoints);
    assert_eq!(report.outcome, HuntOutcome::NoRegression);
    assert!(report.culprits.is_empty());
    assert!(
        report.notes.iter().any(|n| n.contains("--max-runs")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_large_drop_left_unclear_at_the_run_cap_is_inconclusive() {
    let report = hunt_at_the_run_cap(0.2, 0.5);
    assert_eq!(
        report.endpoints.verdict,
        Verdict::Unclear,
        "{:?}",
        report.endpoints
    );
    assert_eq!(
        report.outcome,
        HuntOutcome::Inconclusive,
        "{:?}",
        report.endpoints
    );
}

/// A hunt on 64 commits of `lab` with its endpoints measured and then
/// eight runs of the bad end at `tps` (and its spread), as a burst of
/// speed on a noisy machine makes them, after `unsure` unsure commits in a
/// row: the range's drop is now in doubt.
fn hunt_in_doubt<'a>(
    lab: &'a mut StepLab,
    silent: &'a mut Silent,
    tps: f64,
    unsure: u32,
) -> Hunt<'a> {
    let mut hunt = Hunt::new(HuntConfig::default(), bare_commits(64), lab, silent);
    hunt.endpoints().unwrap();
    for _ in 0..8 {
        hunt.seq += 1;
        let run = hunt.seq;
        let tps = tps * (1.0 + 0.2 * jitter(run));
        hunt.evidence.record(
            64,
            RunSample {
                run,
                tps,
                host: None,
            },
        );
    }
    let state = hunt.range_holds(Range { lo: 0, hi: 64 }, unsure);
    assert!(matches!(state, RangeState::InDoubt(_)), "{state:?}");
    hunt
}

#[test]
fn a_pair_checked_again_is_judged_on_every_side_by_side_run_it_had() {
    let commits = bare_commits(64);
    let mut lab = step_lab(&commits, 23, 0.0);
    let mut silent = Silent;
    let mut hunt = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut silent);
    hunt.endpoints().unwrap();
    let range = Range { lo: 0, hi: 64 };
    // Both after the step: no drop between them.
    let first = hunt.verify(40, 41, range).unwrap();
    assert_ne!(first.side_by_side.verdict, Verdict::Regressed);
    // A run the search makes in between is not side by side: not counted.
    hunt.measure(40).unwrap();
    let second = hunt.verify(40, 41, range).unwrap();
    let own = hunt.evidence.samples_since(40, second.spans.start()).len();
    assert!(own >= 1);
    assert_eq!(second.side_by_side.n_base, first.side_by_side.n_base + own);
    // Another pair starts afresh.
    let other = hunt.verify(41, 42, range).unwrap();
    let own = hunt.evidence.samples_since(41, other.spans.start()).len();
    assert_eq!(other.side_by_side.n_base, own);
}

#[test]
fn a_drop_in_doubt_that_holds_side_by_side_is_searched_on() {
    let mut lab = step_lab(&bare_commits(64), 23, 0.0);
    let mut silent = Silent;
    let mut hunt = hunt_in_doubt(&mut lab, &mut silent, 970.0, 3);
    assert!(
        hunt.settle_doubt(Range { lo: 0, hi: 64 })
            .unwrap()
            .is_none()
    );
    assert!(
        hunt.notes.iter().any(|n| n.ends_with("searching on")),
        "{:?}",
        hunt.notes
    );
}

#[test]
fn a_drop_in_doubt_that_is_gone_side_by_side_ends_the_range() {
    // No step at all: only the bad end's burst of runs looked like a drop.
    let mut lab = step_lab(&bare_commits(64), 65, 0.0);
    let mut silent = Silent;
    let mut hunt = hunt_in_doubt(&mut lab, &mut silent, 970.0, 3);
    let cmp = hunt.settle_doubt(Range { lo: 0, hi: 64 }).unwrap();
    assert!(
        cmp.is_some_and(|c| c.verdict != Verdict::Regressed),
        "{cmp:?}"
    );
}

#[test]
fn the_drop_a_culprit_leaves_unexplained_is_the_ratio_of_the_two() {
    let mut lab = step_lab(&bare_commits(64), 23, 0.0);
    let mut silent = Silent;
    let mut hunt = Hunt::new(
        HuntConfig::default(),
        bare_commits(64),
        &mut lab,
        &mut silent,
    );
    let whole = hunt.endpoints().unwrap();
    let range = Range { lo: 0, hi: 64 };
    let with_change = |pct: f64| Comparison {
        change: crate::core::decide::Change {
            pct,
            low_pct: pct,
            ..whole.change
        },
        ..whole
    };
    // The whole drop, about -15%, is explained by a culprit of that size.
    assert_eq!(
        hunt.unexplained(range, &with_change(whole.change.pct)),
        None
    );
    // A -5% culprit leaves (1 - 0.15) / (1 - 0.05) - 1, about -10.5%.
    let rest = hunt.unexplained(range, &with_change(-5.0)).unwrap();
    let expected = 100.0 * ((1.0 + whole.change.pct / 100.0) / 0.95 - 1.0);
    assert!((rest - expected).abs() < 1e-9 && rest < -9.0, "{rest}");
    // The same culprit measured on few runs, its interval reaching the
    // whole drop: what is left may be noise in its estimate, not a step.
    let unsure = Comparison {
        change: crate::core::decide::Change {
            pct: -5.0,
            low_pct: whole.change.pct - 1.0,
            ..whole.change
        },
        ..whole
    };
    assert_eq!(hunt.unexplained(range, &unsure), None);
    // Its interval reaching half of it leaves the rest beyond that.
    let halfway = 100.0 * ((1.0 + whole.change.pct / 100.0).sqrt() - 1.0);
    let wide = Comparison {
        change: crate::core::decide::Change {
            pct: -5.0,
            low_pct: halfway,
            ..whole.change
        },
        ..whole
    };
    let rest = hunt.unexplained(range, &wide).unwrap();
    assert!((rest - halfway).abs() < 1e-9, "{rest} {halfway}");
}

/// 1000 tps before `step`, 800 from it on, with a 3% spread; `zero`
/// measures `tps = 0` on every run (nothing completed).
struct ZeroLab {
    step: usize,
    zero: usize,
    totals: LabTotals,
}

impl Lab for ZeroLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 1;
        let pos: usize = commit.id.parse().unwrap();
        let level = if pos >= self.step { 800.0 } else { 1000.0 };
        let tps = if pos == self.zero {
            0.0
        } else {
            level * (1.0 + 0.06 * jitter(spec.run))
        };
        Ok(RunOutcome::tps_only(tps))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        "zero".into()
    }
}

#[test]
fn a_run_of_zero_tps_is_a_failed_run_not_a_level() {
    let commits: Vec<Commit> = (0..=16).map(|i| Commit::bare(format!("{i:040}"))).collect();
    let mut lab = ZeroLab {
        step: 11,
        zero: 8,
        totals: LabTotals::default(),
    };
    let report = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut Silent)
        .run()
        .unwrap();
    let culprits: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
    assert_eq!(culprits, [format!("{:040}", 11)], "{report:#?}");
    let zero = report.tested.iter().find(|t| t.position == 8);
    if let Some(zero) = zero {
        assert!(zero.samples.is_empty(), "{:?}", zero.samples);
        let note = zero.note.as_deref().unwrap_or("");
        assert!(note.contains("it measured 0 tps"), "{note}");
    }
    assert!(
        report
            .tested
            .iter()
            .all(|t| t.samples.iter().all(|s| s.tps > 0.0))
    );
}

thread_local! {
    /// A fake clock: a minute passes every time it is read.
    static TICKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn ticking_clock() -> std::time::SystemTime {
    let t = TICKS.with(|t| {
        t.set(t.get() + 1);
        t.get()
    });
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(60 * t)
}

/// A hunt of 400 commits, one step at `step`, with a deadline `minutes`
/// of the ticking clock away.
fn hunt_with_budget(step: usize, minutes: u64) -> HuntReport {
    hunt_with_budget_told(step, minutes, &mut Silent)
}

/// [`hunt_with_budget`], telling its progress to `progress`.
fn hunt_with_budget_told(step: usize, minutes: u64, progress: &mut dyn Progress) -> HuntReport {
    TICKS.with(|t| t.set(0));
    let commits: Vec<Commit> = (0..=400)
        .map(|i| Commit::bare(format!("{i:040}")))
        .collect();
    let mut lab = ZeroLab {
        step,
        zero: usize::MAX,
        totals: LabTotals::default(),
    };
    let deadline = std::time::UNIX_EPOCH + std::time::Duration::from_secs(60 * minutes);
    let budget = budget::Budget {
        deadline,
        clock: ticking_clock,
    };
    Hunt::new(HuntConfig::default(), commits, &mut lab, progress)
        .with_budget(budget)
        .run()
        .unwrap()
}

#[test]
fn a_hunt_out_of_time_ends_with_the_range_it_had_narrowed_the_drop_to() {
    let report = hunt_with_budget(137, 20);
    assert_eq!(report.outcome, HuntOutcome::Inconclusive, "{report:#?}");
    assert!(report.culprits.is_empty());
    let [range] = &report.unresolved[..] else {
        panic!("{:#?}", report.unresolved)
    };
    assert!(
        range.reason.contains("time budget ran out"),
        "{}",
        range.reason
    );
    let culprit = format!("{:040}", 137);
    assert!(range.suspects.contains(&culprit), "{:?}", range.suspects);
    assert!(
        range.suspects.len() < 400,
        "narrowed: {}",
        range.suspects.len()
    );
    // A narrowed range is the search's proposal, not a checked answer.
    assert!(
        range.reason.contains("unchecked side by side"),
        "{}",
        range.reason
    );
    assert!(
        report.totals.measured_runs < 60,
        "{}",
        report.totals.measured_runs
    );
    // With time enough, the same hunt names the culprit.
    let report = hunt_with_budget(137, 100_000);
    assert_eq!(report.outcome, HuntOutcome::CulpritFound);
    assert_eq!(report.culprits[0].commit, culprit);
}

/// Runs made by a hunt of 400 commits with a deadline 10 minutes of the
/// ticking clock away, after builds of `build_minutes` each were measured
/// elsewhere (0: none).
fn runs_with_known_builds(build_minutes: f64) -> u64 {
    TICKS.with(|t| t.set(0));
    let commits: Vec<Commit> = (0..=400)
        .map(|i| Commit::bare(format!("{i:040}")))
        .collect();
    let mut lab = ZeroLab {
        step: 137,
        zero: usize::MAX,
        totals: LabTotals::default(),
    };
    let known = LabTotals {
        builds: u64::from(build_minutes > 0.0) * 2,
        build_seconds: 2.0 * 60.0 * build_minutes,
        ..LabTotals::default()
    };
    let budget = budget::Budget {
        deadline: std::time::UNIX_EPOCH + std::time::Duration::from_secs(600),
        clock: ticking_clock,
    };
    let report = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut Silent)
        .with_known_builds(&known)
        .with_budget(budget)
        .run()
        .unwrap();
    assert_eq!(report.outcome, HuntOutcome::Inconclusive, "{report:#?}");
    lab.totals.runs
}

#[test]
fn builds_measured_before_the_search_keep_its_first_build_within_the_budget() {
    // Nothing known: the first build is started blind.
    assert!(runs_with_known_builds(0.0) > 0);
    // The release check's builds took 20 minutes each: with 10 left, the
    // search does not start one.
    assert_eq!(runs_with_known_builds(20.0), 0);
}

#[test]
fn a_hunt_out_of_time_before_its_endpoints_settle_blames_nobody() {
    let report = hunt_with_budget(137, 3);
    assert_eq!(report.outcome, HuntOutcome::Inconclusive);
    assert!(report.culprits.is_empty() && report.unresolved.is_empty());
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("time budget ran out")),
        "{:?}",
        report.notes
    );
}

/// Keeps the timing of every search event.
struct SearchTimings(Vec<crate::progress::Timing>);

impl Progress for SearchTimings {
    fn event(&mut self, event: &ProgressEvent) {
        if let ProgressEvent::Search { timing, .. } = event {
            self.0.push(*timing);
        }
    }
}

#[test]
fn the_search_says_its_expected_time_and_counts_down_to_the_deadline() {
    let mut told = SearchTimings(Vec::new());
    hunt_with_budget_told(137, 100_000, &mut told);
    let timings = &told.0;
    assert!(timings.len() > 3, "{timings:?}");
    let deadline: Vec<f64> = timings.iter().filter_map(|t| t.deadline_left).collect();
    assert_eq!(deadline.len(), timings.len(), "{timings:?}");
    assert!(deadline.windows(2).all(|w| w[1] < w[0]), "{deadline:?}");
    let expected: Vec<f64> = timings.iter().filter_map(|t| t.expected).collect();
    assert_eq!(
        expected.len(),
        timings.len(),
        "runs were made before the search"
    );
    assert!(expected.iter().all(|&e| e >= 0.0), "{expected:?}");
    assert!(
        expected.last() < expected.first(),
        "fewer steps left, less time: {expected:?}"
    );
}

/// One 20% step at `step`; a run's noise depends on its length as
/// `sd(seconds)`; the profile's length is 1200 s. Keeps each run's length.
struct LengthLab {
    step: usize,
    sd: fn(u32) -> f64,
    /// Level of runs shorter than the profile's, against its runs.
    short_level: f64,
    lengths: Vec<Option<u32>>,
    totals: LabTotals,
}

impl LengthLab {
    fn new(step: usize, sd: fn(u32) -> f64) -> Self {
        LengthLab {
            step,
            sd,
            short_level: 1.0,
            lengths: Vec::new(),
            totals: LabTotals::default(),
        }
    }
}

impl Lab for LengthLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 1;
        self.lengths.push(spec.seconds);
        let pos: usize = commit.id.parse().unwrap();
        let seconds = spec.seconds.unwrap_or(1200);
        let short = if seconds < 1200 {
            self.short_level
        } else {
            1.0
        };
        let level = if pos >= self.step { 800.0 } else { 1000.0 } * short;
        let sd = (self.sd)(seconds);
        Ok(RunOutcome::tps_only(
            level * (1.0 + sd / 0.289 * jitter(spec.run)),
        ))
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        "length".into()
    }

    fn run_length(&self) -> Option<u32> {
        Some(1200)
    }
}

fn hunt_choosing_length(lab: &mut LengthLab) -> HuntReport {
    let commits: Vec<Commit> = (0..=60).map(|i| Commit::bare(format!("{i:040}"))).collect();
    let cfg = HuntConfig {
        choose_run_length: true,
        ..HuntConfig::default()
    };
    Hunt::new(cfg, commits, lab, &mut Silent).run().unwrap()
}

#[test]
fn noise_no_length_removes_makes_the_hunt_run_shorter_runs() {
    // Noise that does not shrink with the length: a quarter of the
    // length tells as much.
    let mut lab = LengthLab::new(37, |s| if s < 1200 { 0.02 } else { 0.04 });
    let report = hunt_choosing_length(&mut lab);
    assert_eq!(report.culprits[0].commit, format!("{:040}", 37));
    let note = report.notes.iter().find(|n| n.starts_with("run length"));
    let note = note.expect("the choice is said");
    assert!(
        note.contains("300 s instead of the profile's 1200 s"),
        "{note}"
    );
    // Two rounds of four pilot runs, then every run at 300 s.
    let pilot: Vec<_> = lab.lengths[..8].to_vec();
    assert_eq!(pilot.iter().filter(|l| **l == Some(300)).count(), 4);
    assert_eq!(pilot.iter().filter(|l| **l == Some(1200)).count(), 4);
    assert!(
        lab.lengths[8..].iter().all(|l| *l == Some(300)),
        "{:?}",
        lab.lengths
    );
}

#[test]
fn short_runs_at_another_level_keep_the_profiles_run_length() {
    // Runs of 300 s are 12% faster at both ends: another regime.
    let mut lab = LengthLab::new(37, |_| 0.01);
    lab.short_level = 1.12;
    let report = hunt_choosing_length(&mut lab);
    assert_eq!(report.culprits[0].commit, format!("{:040}", 37));
    let note = report.notes.iter().find(|n| n.starts_with("run length"));
    assert!(
        note.is_some_and(|n| n.contains("1200 s, the profile's")),
        "{note:?}"
    );
    assert!(
        lab.lengths[8..].iter().all(Option::is_none),
        "{:?}",
        lab.lengths
    );
    // Without the choice, no pilot: every run at the profile's length.
    let mut lab = LengthLab::new(37, |_| 0.03);
    let commits: Vec<Commit> = (0..=60).map(|i| Commit::bare(format!("{i:040}"))).collect();
    Hunt::new(HuntConfig::default(), commits, &mut lab, &mut Silent)
        .run()
        .unwrap();
    assert!(lab.lengths.iter().all(Option::is_none));
}

/// Sets the interrupt flag while its `stop_at`th run is in flight; that
/// run finishes (it gave a number) or, with `cut_short`, fails as a run
/// stopped halfway would.
struct StoppedLab {
    flag: Arc<AtomicBool>,
    stop_at: u64,
    cut_short: bool,
}

impl Lab for StoppedLab {
    fn prepare(&mut self, _commit: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: false })
    }

    fn run(&mut self, _commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if spec.run == self.stop_at {
            self.flag.store(true, Ordering::SeqCst);
            if self.cut_short {
                return Ok(RunOutcome::Failed {
                    reason: "interrupted while running `pgbench`".into(),
                });
            }
        }
        Ok(RunOutcome::tps_only(1000.0 + spec.run as f64))
    }

    fn totals(&self) -> LabTotals {
        LabTotals::default()
    }

    fn describe(&self) -> String {
        "stopped".into()
    }
}

#[test]
fn a_run_that_finished_while_stopping_is_kept_and_one_cut_short_is_not() {
    for cut_short in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut journal = crate::journal::Journal::open(&path).unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let mut lab = StoppedLab {
            flag: flag.clone(),
            stop_at: 3,
            cut_short,
        };
        let commits: Vec<Commit> = (0..5).map(|i| Commit::bare(format!("{i:040}"))).collect();
        let err = Hunt::new(HuntConfig::default(), commits, &mut lab, &mut Silent)
            .with_journal(&mut journal)
            .with_interrupt(flag)
            .run()
            .unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<HuntError>(),
                Some(HuntError::Interrupted)
            ),
            "{err}"
        );
        let events = crate::journal::Journal::load(&path).unwrap();
        let runs: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Run { run, .. } => Some(*run),
                _ => None,
            })
            .collect();
        let expected: Vec<u64> = if cut_short { vec![1, 2] } else { vec![1, 2, 3] };
        assert_eq!(runs, expected, "cut short: {cut_short}");
    }
}

#[test]
fn both_searches_find_the_step_and_the_posterior_one_spends_fewer_runs() {
    use crate::lab::sim::{History, NoiseModel, SimLab};
    let mut runs = [0u64; 2];
    for (i, search) in [Search::Bisect, Search::Posterior].into_iter().enumerate() {
        for seed in 0..5u64 {
            let step = 77 + 20 * seed as usize;
            let history = History {
                len: 200,
                steps: vec![(step, 0.9)],
                unbuildable: [5, 90].into(),
                base_tps: 1000.0,
            };
            let mut lab = SimLab::new(history.clone(), NoiseModel::Gaussian { cv: 0.02 }, seed);
            let config = HuntConfig {
                search,
                ..HuntConfig::default()
            };
            let report = Hunt::new(config, history.commits(), &mut lab, &mut Silent)
                .run()
                .unwrap();
            assert_eq!(report.outcome, HuntOutcome::CulpritFound, "{search:?}");
            let found: Vec<&str> = report.culprits.iter().map(|c| c.commit.as_str()).collect();
            assert_eq!(found, [history.commits()[step].id.as_str()], "{search:?}");
            runs[i] += report.totals.runs;
        }
    }
    assert!(runs[1] < runs[0], "bisect, posterior: {runs:?}");
}

#[test]
fn the_posterior_search_leaves_a_step_behind_unbuildable_commits_as_a_range() {
    use crate::lab::sim::{History, NoiseModel, SimLab};
    let history = History {
        len: 60,
        steps: vec![(30, 0.85)],
        unbuildable: [28, 29].into(),
        base_tps: 1000.0,
    };
    let mut lab = SimLab::new(history.clone(), NoiseModel::Gaussian { cv: 0.01 }, 7);
    let report = Hunt::new(
        HuntConfig::default(),
        history.commits(),
        &mut lab,
        &mut Silent,
    )
    .run()
    .unwrap();
    assert!(report.culprits.is_empty(), "{:?}", report.culprits);
    let ids = history.commits();
    let range = report.unresolved.first().expect("a range");
    assert_eq!(range.last_good.id, ids[27].id, "{range:?}");
    assert_eq!(range.first_bad.id, ids[30].id, "{range:?}");
}

/// A search given up on a machine whose speed wanders says its stretch
/// may miss the drop; one given up on steady noise does not.
#[test]
fn a_search_given_up_on_a_wandering_machine_says_its_stretch_may_miss() {
    use crate::lab::sim::{History, NoiseModel, SimLab};
    let history = History {
        len: 120,
        steps: vec![(70, 0.9)],
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    let config = HuntConfig {
        decision: DecisionConfig {
            max_runs: 4,
            ..DecisionConfig::default()
        },
        ..HuntConfig::default()
    };
    let noises = [
        (
            NoiseModel::Drift {
                cv: 0.02,
                step: 0.03,
                bound: 0.15,
            },
            true,
        ),
        (NoiseModel::Gaussian { cv: 0.06 }, false),
    ];
    for (noise, wanders) in noises {
        let mut said = Vec::new();
        for seed in 0..24u64 {
            let mut lab = SimLab::new(history.clone(), noise.clone(), seed);
            let report = Hunt::new(config, history.commits(), &mut lab, &mut Silent)
                .run()
                .unwrap();
            said.extend(
                report
                    .unresolved
                    .iter()
                    .filter(|r| r.reason.contains("noise left the drop spread"))
                    .map(|r| r.reason.contains("wandered")),
            );
        }
        assert!(!said.is_empty(), "no search given up under {noise:?}");
        assert!(said.contains(&wanders), "{noise:?}: {said:?}");
        if !wanders {
            assert!(!said.contains(&true), "steady noise said to wander");
        }
    }
}
