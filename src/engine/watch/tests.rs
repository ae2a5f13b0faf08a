//! The night loop over the simulated lab: a step injected is found,
//! confirmed and not raised again; a night killed half way and run again
//! stores no run twice.

use super::*;
use crate::lab::sim::{History, NoiseModel, SimLab, sim_id};
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use crate::store::sqlite::SqliteStore;
use crate::store::{ChangeStatus, Role};

/// Three commits a day, position `p` landing at `p * 8` hours.
fn line(len: usize) -> Vec<Landed> {
    (0..=len)
        .map(|p| Landed {
            commit: Commit::bare(sim_id(p)),
            committed: p as i64 * DAY / 3,
        })
        .collect()
}

fn history(step: Option<(usize, f64)>) -> History {
    History {
        len: 150,
        steps: step.into_iter().collect(),
        unbuildable: Default::default(),
        base_tps: 1000.0,
    }
}

fn labs(history: History, seed: u64) -> Vec<ProfileLab> {
    vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8],
        lab: Box::new(SimLab::new(
            history,
            NoiseModel::Gaussian { cv: 0.01 },
            seed,
        )),
        placements: vec![(8, "server on CPUs 0-1".into())],
        measures: vec![crate::core::counts::Measure::Tps],
    }]
}

fn config() -> WatchConfig {
    WatchConfig {
        backfill: 10,
        ..WatchConfig::new("master")
    }
}

fn end_of_day(day: i64) -> i64 {
    (day + 1) * DAY - 1
}

/// An empty store in a temp dir (kept while the dir lives).
fn fresh_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    (dir, store)
}

/// The night at the end of `day` over the test line, quietly.
fn night_of(
    store: &mut SqliteStore,
    labs: &mut [ProfileLab],
    day: i64,
    cfg: &WatchConfig,
) -> anyhow::Result<Watched> {
    watch_night(store, labs, &line(150), end_of_day(day), cfg, &mut |_| {})
}

/// A budget whose deadline has passed.
fn past() -> Option<crate::engine::hunt::budget::Budget> {
    Some(crate::engine::hunt::budget::Budget {
        deadline: std::time::UNIX_EPOCH,
        clock: std::time::SystemTime::now,
    })
}

#[test]
fn a_step_is_found_confirmed_and_not_raised_again() {
    let (_dir, mut store) = fresh_store();
    let mut labs = labs(history(Some((60, 0.9))), 7);
    let cfg = config();
    let mut confirmed_on = None;
    for day in 14..=40 {
        let w = night_of(&mut store, &mut labs, day, &cfg).unwrap();
        if w.changes
            .iter()
            .any(|c| c.status == ChangeStatus::Confirmed)
        {
            assert!(
                confirmed_on.is_none(),
                "raised twice: day {day}: {:?}",
                w.changes
            );
            confirmed_on = Some(day);
        }
    }
    let changes = store.changes("master").unwrap();
    let confirmed: Vec<&ChangeRow> = changes
        .iter()
        .filter(|c| c.status == ChangeStatus::Confirmed)
        .collect();
    assert_eq!(confirmed.len(), 1, "{changes:?}");
    let pos = |id: &str| crate::lab::sim::sim_pos(id).unwrap();
    assert!(
        pos(&confirmed[0].before) < 60 && pos(&confirmed[0].after) >= 60,
        "{confirmed:?}"
    );
    assert!(confirmed[0].pct < -5.0, "{confirmed:?}");
    // Position 60 lands on day 20: found within two nights.
    let day = confirmed_on.unwrap();
    assert!((20..=22).contains(&day), "confirmed on day {day}");
    // Backfill: one night a day before the first, then a night a day.
    let nights = store.nights("master").unwrap();
    assert_eq!(nights.len(), 10 + 27);
    assert!(nights.iter().all(|n| n.status == NightStatus::Done));
    assert!(
        nights.iter().all(|n| n.reference == sim_id(14)),
        "{:?}",
        nights[0]
    );
    // A night at a clock already run is not run again.
    let again = night_of(&mut store, &mut labs, 40, &cfg).unwrap();
    assert_eq!(again.runs, 0);
    assert!(again.changes.is_empty());
}

#[test]
fn a_flat_history_confirms_nothing() {
    let (_dir, mut store) = fresh_store();
    let mut labs = labs(history(None), 11);
    let cfg = config();
    for day in 14..=40 {
        night_of(&mut store, &mut labs, day, &cfg).unwrap();
    }
    let changes = store.changes("master").unwrap();
    assert!(
        changes.iter().all(|c| c.status != ChangeStatus::Confirmed),
        "{changes:?}"
    );
}

/// A lab that is killed (fails) after `left` runs.
struct Killed {
    inner: SimLab,
    left: usize,
}

impl Lab for Killed {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if self.left == 0 {
            anyhow::bail!("killed");
        }
        self.left -= 1;
        self.inner.run(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn describe(&self) -> String {
        "killed".into()
    }
}

#[test]
fn a_night_killed_half_way_goes_on_and_stores_no_run_twice() {
    let (_dir, mut store) = fresh_store();
    let cfg = WatchConfig {
        backfill: 0,
        ..config()
    };
    let noise = NoiseModel::Gaussian { cv: 0.01 };
    let mut killed = vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8, 16],
        lab: Box::new(Killed {
            inner: SimLab::new(history(None), noise.clone(), 1),
            left: 5,
        }),
        placements: vec![],
        measures: vec![crate::core::counts::Measure::Tps],
    }];
    let err = night_of(&mut store, &mut killed, 20, &cfg);
    assert!(err.is_err());
    assert_eq!(store.runs("master").unwrap().len(), 5);
    assert_eq!(
        store.nights("master").unwrap()[0].status,
        NightStatus::Running
    );
    // Started again, later: the open night first, nothing run twice.
    let mut labs = vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8, 16],
        lab: Box::new(SimLab::new(history(None), noise, 2)),
        placements: vec![],
        measures: vec![crate::core::counts::Measure::Tps],
    }];
    let w = night_of(&mut store, &mut labs, 20, &cfg).unwrap();
    // One commit (the tip), two series, three rounds of two runs.
    assert_eq!(w.runs, 12 - 5);
    assert_eq!(labs[0].lab.totals().runs, 7);
    assert_eq!(store.runs("master").unwrap().len(), 12);
    assert_eq!(store.nights("master").unwrap()[0].status, NightStatus::Done);
}

#[test]
fn a_deadline_stops_the_night_and_the_next_start_goes_on() {
    let (_dir, mut store) = fresh_store();
    let cfg = WatchConfig {
        backfill: 0,
        budget: past(),
        ..config()
    };
    let mut labs = labs(history(None), 3);
    let w = night_of(&mut store, &mut labs, 20, &cfg).unwrap();
    assert!(w.stopped.is_some());
    assert_eq!(w.runs, 0);
    assert_eq!(
        store.nights("master").unwrap()[0].status,
        NightStatus::Stopped
    );
    let w = night_of(&mut store, &mut labs, 20, &config()).unwrap();
    assert_eq!(w.runs, 6);
    let text = crate::report::watch::night::text(&w.shown());
    assert!(text.contains("measured:"), "{text}");
}

#[test]
fn a_commit_that_does_not_build_is_kept_as_the_nights_news() {
    let (_dir, mut store) = fresh_store();
    let mut broken = history(None);
    // The night of day 20 measures positions 60 to 62, landed since day 19.
    broken.unbuildable.insert(61);
    let mut labs = labs(broken, 5);
    let cfg = WatchConfig {
        backfill: 1,
        ..config()
    };
    night_of(&mut store, &mut labs, 20, &cfg).unwrap();
    let nights = store.nights("master").unwrap();
    let tonight = nights.last().unwrap();
    assert_eq!(tonight.status, NightStatus::Done);
    assert_eq!(
        tonight.reason.as_deref(),
        Some("does not build: 0000003d (simulated build failure)")
    );
    let runs = store.runs("master").unwrap();
    assert!(runs.iter().all(|r| r.commit != sim_id(61)));
    assert!(
        runs.iter()
            .all(|r| r.placement.as_deref() == Some("server on CPUs 0-1"))
    );
}

#[test]
fn a_candidate_whose_runs_do_not_fit_before_the_deadline_waits_for_the_next_start() {
    let (_dir, mut store) = fresh_store();
    let mut labs = labs(history(None), 9);
    let cfg = WatchConfig {
        backfill: 0,
        ..config()
    };
    night_of(&mut store, &mut labs, 20, &cfg).unwrap();
    let night = store.nights("master").unwrap()[0].id;
    let change = ChangeRow {
        id: 0,
        series: "sim/c8".into(),
        before: sim_id(10),
        after: sim_id(11),
        pct: -6.0,
        low_pct: None,
        high_pct: None,
        status: ChangeStatus::Candidate,
        first_night: night,
        p_value: 0.01,
        kind: crate::store::ChangeKind::Step,
    };
    store.add_change(&change).unwrap();
    let past = WatchConfig {
        budget: past(),
        ..cfg.clone()
    };
    let runs = labs[0].lab.totals().runs;
    let found = detect::changes(&mut store, &mut labs, &past, &mut |_| {}).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(labs[0].lab.totals().runs, runs);
    assert_eq!(
        store.changes("master").unwrap()[0].status,
        ChangeStatus::Candidate
    );
    // With time, the next start measures it: 10 and 11 are alike, dismissed.
    let found = detect::changes(&mut store, &mut labs, &cfg, &mut |_| {}).unwrap();
    assert_eq!(found[0].status, ChangeStatus::Dismissed);
    // 5 runs a side, and 5 more at a time while the reading is unclear.
    let made = labs[0].lab.totals().runs - runs;
    assert!(
        made >= 10 && made.is_multiple_of(10) && made <= 40,
        "{made} runs"
    );
}

#[test]
fn replay_clocks_are_the_ends_of_every_nth_day() {
    let clocks = replay_clocks(10 * DAY + 5, 20 * DAY, 3);
    assert_eq!(
        clocks,
        [11 * DAY - 1, 14 * DAY - 1, 17 * DAY - 1, 20 * DAY - 1]
    );
    assert_eq!(replay_clocks(10 * DAY, 10 * DAY, 1), [11 * DAY - 1]);
}

#[test]
fn a_series_whose_pairs_scatter_gets_more_pairs_the_next_night_and_a_quiet_one_does_not() {
    // The pairs each commit of the second night got, and the notes.
    let pairs_of_second_night = |cv: f64| {
        let (_dir, mut store) = fresh_store();
        let cfg = WatchConfig {
            backfill: 5,
            max_rounds: 20,
            ..config()
        };
        let mut labs = vec![ProfileLab {
            name: "sim".into(),
            clients: vec![8],
            lab: Box::new(SimLab::new(history(None), NoiseModel::Gaussian { cv }, 7)),
            placements: vec![],
            measures: vec![crate::core::counts::Measure::Tps],
        }];
        // The first night backfills at 3 pairs a commit: the spread's
        // first reading.
        night_of(&mut store, &mut labs, 20, &cfg).unwrap();
        let mut notes = Vec::new();
        watch_night(
            &mut store,
            &mut labs,
            &line(150),
            end_of_day(21),
            &cfg,
            &mut |n| notes.push(n.to_string()),
        )
        .unwrap();
        let last = store.nights("master").unwrap().last().unwrap().id;
        let runs: Vec<_> = store
            .runs("master")
            .unwrap()
            .into_iter()
            .filter(|r| r.night == last && r.role == Role::Candidate)
            .collect();
        let commits: std::collections::BTreeSet<_> =
            runs.iter().map(|r| r.commit.clone()).collect();
        (runs.len() / commits.len(), notes)
    };
    let (quiet, _) = pairs_of_second_night(0.005);
    assert_eq!(quiet, 3, "a quiet series keeps --rounds");
    let (busy, notes) = pairs_of_second_night(0.08);
    assert!(busy > 3, "{busy} pairs");
    assert!(
        notes.iter().any(|n| n.contains("pairs a commit tonight")),
        "{notes:?}"
    );
}

#[test]
fn a_first_night_is_labelled_by_its_day_and_each_backfilled_night_by_its_commits_date() {
    // Nothing has landed for weeks: the first night measures the tip
    // tonight, not 30 days back.
    let (_dir, mut store) = fresh_store();
    let mut labs = labs(history(None), 4);
    let quiet = WatchConfig {
        backfill: 30,
        ..config()
    };
    let w = night_of(&mut store, &mut labs, 90, &quiet).unwrap();
    let nights = store.nights("master").unwrap();
    assert_eq!(nights.len(), 1, "{nights:?}");
    assert_eq!(nights[0].clock, end_of_day(90));
    assert_eq!(nights[0].tip, sim_id(150));
    let text = crate::report::watch::night::text(&w.shown());
    let today = crate::time::rfc3339_from_unix(end_of_day(90));
    assert!(text.starts_with(&format!("night of {today}")), "{text}");
    // Commits landing every 8 hours: each backfilled night carries the
    // time its commit landed; tonight's is tonight.
    let (_dir, mut store) = fresh_store();
    let cfg = WatchConfig {
        backfill: 3,
        ..config()
    };
    night_of(&mut store, &mut labs, 20, &cfg).unwrap();
    let nights = store.nights("master").unwrap();
    let line = line(150);
    let landed = |id: &str| line.iter().find(|l| l.commit.id == id).unwrap().committed;
    let (tonight, backfilled) = nights.split_last().unwrap();
    assert_eq!(backfilled.len(), 3);
    for n in backfilled {
        assert_eq!(n.clock, landed(&n.tip), "{n:?}");
    }
    assert_eq!(tonight.clock, end_of_day(20));
}
