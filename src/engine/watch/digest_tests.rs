use super::*;
use crate::store::sqlite::{FILE, SqliteStore};
use crate::store::{NewNight, NightCommit};

const JAN_1_2024: i64 = 1_704_067_200;

fn night(id: i64, day: i64, status: NightStatus, reason: Option<&str>) -> Night {
    let tip = format!("{day}t").repeat(20);
    Night {
        id,
        clock: JAN_1_2024 + day * DAY + DAY - 1,
        branch: "master".into(),
        tip: tip.clone(),
        status,
        reason: reason.map(str::to_string),
        reference: "r".repeat(40),
        commits: vec![NightCommit {
            id: tip,
            subject: format!("commit of day {day}"),
            committed: JAN_1_2024 + day * DAY,
        }],
    }
}

fn change(id: i64, pct: f64, kind: ChangeKind, status: ChangeStatus) -> ChangeRow {
    ChangeRow {
        id,
        series: "select-only/c64".into(),
        before: format!("{id}b").repeat(20),
        after: format!("{id}a").repeat(20),
        pct,
        low_pct: Some(pct - 1.5),
        high_pct: Some(pct + 1.5),
        status,
        first_night: 3,
        p_value: 0.002,
        kind,
    }
}

fn week() -> (i64, i64) {
    (JAN_1_2024, JAN_1_2024 + 7 * DAY)
}

#[test]
fn a_quiet_week_says_that_nothing_moved_and_how_much_was_measured() {
    let nights: Vec<Night> = (0..7)
        .map(|d| night(d + 1, d, NightStatus::Done, None))
        .collect();
    let digest = compose(&Facts {
        branch: "master",
        period: week(),
        nights: &nights,
        runs: 42,
        changes: &[],
        waiting: 0,
        hunts: &[],
        subjects: &[],
    });
    assert_eq!(
        digest.subject,
        "pgbisect watch digest: master 2024-01-01 to 2024-01-07: nothing moved"
    );
    assert_eq!(
        digest.body,
        "The watch of master from 2024-01-01 to 2024-01-07 (UTC): 7 night(s), 7 commit(s) \
         measured, 42 run(s).\n\
         \n\
         Nothing moved: no change was confirmed in any series.\n\
         \n\
         No night failed, no build broke, no night stopped at its deadline.\n"
    );
    assert_eq!(digest.file_name, "2024-01-07.txt");
    assert_eq!(
        digest.message_id_part,
        "watch-digest.master.2024-01-01.2024-01-07"
    );
}

#[test]
fn a_busy_week_lists_every_move_up_and_down_and_every_night_that_went_wrong() {
    let nights = vec![
        night(1, 0, NightStatus::Done, None),
        night(
            2,
            1,
            NightStatus::Done,
            Some("does not build: 1234abcd (configure: error: readline library not found)"),
        ),
        night(
            3,
            2,
            NightStatus::Failed,
            Some(
                "the reference rrrr does not build: build failed (log: /w/build-r.log):\n\
                 ../src/backend/a.c:3:1: error: expected ';'\n(1 more error line)",
            ),
        ),
        night(
            4,
            3,
            NightStatus::Stopped,
            Some("the deadline leaves 10s, a run takes about 60s"),
        ),
    ];
    let changes = vec![
        change(1, -12.3, ChangeKind::Step, ChangeStatus::Confirmed),
        change(2, -6.0, ChangeKind::Step, ChangeStatus::Confirmed),
        change(3, -5.5, ChangeKind::Step, ChangeStatus::Confirmed),
        change(4, 7.1, ChangeKind::Step, ChangeStatus::Confirmed),
        change(5, -4.0, ChangeKind::Drift, ChangeStatus::Confirmed),
        change(6, -5.0, ChangeKind::Step, ChangeStatus::Dismissed),
        change(7, 6.0, ChangeKind::Step, ChangeStatus::Dismissed),
    ];
    let culprit = "c".repeat(40);
    let hunts = vec![
        ChangeHunt {
            outcome: Some("culprit-found".into()),
            culprit: Some(culprit.clone()),
            ..ChangeHunt::begun(1, "/w/watch-hunts/change-1")
        },
        ChangeHunt {
            outcome: Some("inconclusive".into()),
            ..ChangeHunt::begun(2, "/w/watch-hunts/change-2")
        },
    ];
    let subjects = vec![(culprit, "Use a new hash for the buffer mapping".to_string())];
    let digest = compose(&Facts {
        branch: "master",
        period: week(),
        nights: &nights,
        runs: 24,
        changes: &changes,
        waiting: 1,
        hunts: &hunts,
        subjects: &subjects,
    });
    assert_eq!(
        digest.subject,
        "pgbisect watch digest: master 2024-01-01 to 2024-01-07: 3 slower, 1 faster, \
         1 drifted, 1 night failed, 1 night met a broken build"
    );
    let expected = "\
The watch of master from 2024-01-01 to 2024-01-07 (UTC): 4 night(s), 4 commit(s) measured, 24 run(s).

Slower (3):
  select-only/c64 -12.3% (interval -13.8% to -10.8%) between 1b1b1b1b..1a1a1a1a: culprit cccccccccccc Use a new hash for the buffer mapping
  select-only/c64 -6.0% (interval -7.5% to -4.5%) between 2b2b2b2b..2a2a2a2a: hunt inconclusive
  select-only/c64 -5.5% (interval -7.0% to -4.0%) between 3b3b3b3b..3a3a3a3a: not hunted yet
Faster (1):
  select-only/c64 +7.1% (interval +5.6% to +8.6%) between 4b4b4b4b..4a4a4a4a: not hunted (a rise)
Drifts (1):
  select-only/c64 -4.0% (interval -5.5% to -2.5%) between 5b5b5b5b..5a5a5a5a: not hunted (a drift is spread over many commits)
Dismissed: 2 change(s) the series showed did not hold when measured again side by side.
Waiting: 1 change(s) found and not yet measured again; a later night settles them.

Nights that failed (1):
  2024-01-03 (tip 2t2t2t2t): the reference rrrr does not build: build failed (log: /w/build-r.log): ../src/backend/a.c:3:1: error: expected ';'
Builds broken (1):
  2024-01-02 (tip 1t1t1t1t): does not build: 1234abcd (configure: error: readline library not found)
Nights stopped at their deadline (1):
  2024-01-04 (tip 3t3t3t3t): the deadline leaves 10s, a run takes about 60s
";
    assert_eq!(digest.body, expected, "{}", digest.body);
}

/// Records the digests it is given; refuses while `refuse` is set.
#[derive(Default)]
struct Told {
    digests: Vec<Digest>,
    refuse: bool,
}

impl Tell for Told {
    fn digest(&mut self, digest: &Digest) -> anyhow::Result<Option<String>> {
        if self.refuse {
            anyhow::bail!("the relay said no");
        }
        self.digests.push(digest.clone());
        Ok(Some(format!("<pgbisect.{}@x>", digest.message_id_part)))
    }
}

/// A done night of one commit on day `day` of January 2024.
fn stored_night(store: &mut SqliteStore, day: i64) -> i64 {
    let clock = JAN_1_2024 + day * DAY + DAY - 1;
    let n = store
        .begin_night(&NewNight {
            clock,
            branch: "master".into(),
            tip: format!("c{day}"),
            reference: "c0".into(),
            commits: vec![NightCommit {
                id: format!("c{day}"),
                subject: format!("commit {day}"),
                committed: clock - 100,
            }],
        })
        .unwrap();
    store.finish_night(n.id, NightStatus::Done, None).unwrap();
    clock
}

#[test]
fn a_period_is_told_once_at_the_first_night_past_its_end_and_a_refusal_is_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join(FILE)).unwrap();
    let cfg = WatchConfig {
        digest_every: 2,
        ..WatchConfig::new("master")
    };
    let mut told = Told::default();
    let mut notes = Vec::new();
    let mut night_of = |store: &mut SqliteStore, told: &mut Told, day: i64| {
        let clock = stored_night(store, day);
        let mut note = |l: &str| notes.push(l.to_string());
        after_night(store, &[], (&cfg, clock), told, &mut note).unwrap()
    };
    // Days 0 and 1 make the first period; day 2 is past its end.
    assert!(night_of(&mut store, &mut told, 0).is_empty());
    assert!(night_of(&mut store, &mut told, 1).is_empty());
    told.refuse = true;
    assert!(night_of(&mut store, &mut told, 2).is_empty());
    let rows = store.digests("master").unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].start, rows[0].end),
        (JAN_1_2024, JAN_1_2024 + 2 * DAY)
    );
    assert!(rows[0].written.is_some() && rows[0].sent.is_none());
    // The next night tells it, the period still open waits for its end.
    told.refuse = false;
    let again = night_of(&mut store, &mut told, 3);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].file_name, "2024-01-02.txt");
    assert!(
        again[0]
            .body
            .contains("2 night(s), 2 commit(s) measured, 0 run(s)")
    );
    // Day 4 ends the second period (days 2 and 3); nothing is told twice.
    let second = night_of(&mut store, &mut told, 4);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].file_name, "2024-01-04.txt");
    assert_eq!(told.digests.len(), 2);
    let rows = store.digests("master").unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[0].message_id.as_deref(),
        Some("<pgbisect.watch-digest.master.2024-01-01.2024-01-02@x>")
    );
    assert!(rows[2].written.is_none());
}

#[test]
fn no_digest_when_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join(FILE)).unwrap();
    let cfg = WatchConfig {
        digest_every: 0,
        ..WatchConfig::new("master")
    };
    let mut told = Told::default();
    for day in 0..10 {
        let clock = stored_night(&mut store, day);
        after_night(&mut store, &[], (&cfg, clock), &mut told, &mut |_| {}).unwrap();
    }
    assert!(told.digests.is_empty());
    assert_eq!(store.digests("master").unwrap(), vec![]);
}

#[test]
fn the_error_line_of_a_build_is_its_first_error_else_its_first_line() {
    let reason = "build failed (log: /w/logs/b.log):\nconfigure: error: readline library not found";
    assert_eq!(
        error_line(reason),
        "configure: error: readline library not found"
    );
    assert_eq!(
        error_line("\n  simulated build failure\n"),
        "simulated build failure"
    );
    assert_eq!(error_line(""), "");
}
