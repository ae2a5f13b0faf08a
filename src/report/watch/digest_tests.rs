use super::*;
use crate::store::NightCommit;

const JAN_1_2024: i64 = 1_704_067_200;
const DAY: i64 = 86_400;

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
        marks: &[],
        site_url: None,
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
    let facts = Facts {
        branch: "master",
        period: week(),
        nights: &nights,
        runs: 24,
        changes: &changes,
        waiting: 1,
        hunts: &hunts,
        subjects: &subjects,
        marks: &[],
        site_url: None,
    };
    let digest = compose(&facts);
    assert_eq!(
        digest.subject,
        "pgbisect watch digest: master 2024-01-01 to 2024-01-07: 3 slower, 1 faster, \
         1 drifted, 1 night failed, 1 night met a broken build"
    );
    let expected = "\
The watch of master from 2024-01-01 to 2024-01-07 (UTC): 4 night(s), 4 commit(s) measured, 24 run(s).

Slower (3):
  #1 select-only/c64 -12.3% (interval -13.8% to -10.8%) between 1b1b1b1b..1a1a1a1a: culprit cccccccccccc Use a new hash for the buffer mapping
  #2 select-only/c64 -6.0% (interval -7.5% to -4.5%) between 2b2b2b2b..2a2a2a2a: hunt inconclusive
  #3 select-only/c64 -5.5% (interval -7.0% to -4.0%) between 3b3b3b3b..3a3a3a3a: not hunted yet
Faster (1):
  #4 select-only/c64 +7.1% (interval +5.6% to +8.6%) between 4b4b4b4b..4a4a4a4a: not hunted (a rise)
Drifts (1):
  #5 select-only/c64 -4.0% (interval -5.5% to -2.5%) between 5b5b5b5b..5a5a5a5a: not hunted (a drift is spread over many commits)
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
    // With the site's address, each change's page follows its line, and
    // its hunt report's page once the hunt wrote one.
    let mut reported = hunts.clone();
    reported[0].report = Some("change-1/report.txt".into());
    let site =
        crate::report::watch::site::links::SiteUrl::parse("https://perf.example.org/pg").unwrap();
    let linked = compose(&Facts {
        hunts: &reported,
        site_url: Some(&site),
        ..facts
    });
    let lines: Vec<&str> = linked.body.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("between 1b1b1b1b..1a1a1a1a"))
        .unwrap();
    assert_eq!(
        lines[at + 1..at + 4],
        [
            "    its page: https://perf.example.org/pg/change-1.html",
            "    its hunt's report: https://perf.example.org/pg/hunts/change-1.html",
            "  #2 select-only/c64 -6.0% (interval -7.5% to -4.5%) between 2b2b2b2b..2a2a2a2a: hunt inconclusive",
        ],
        "{}",
        linked.body
    );
    assert_eq!(
        lines[at + 4],
        "    its page: https://perf.example.org/pg/change-2.html"
    );
}

#[test]
fn a_marked_change_is_told_apart_with_its_mark_and_not_counted_as_slower() {
    let nights = vec![night(1, 0, NightStatus::Done, None)];
    let changes = vec![
        change(1, -12.3, ChangeKind::Step, ChangeStatus::Confirmed),
        change(2, -6.0, ChangeKind::Step, ChangeStatus::Confirmed),
    ];
    let marks = vec![ChangeMark {
        change: 1,
        mark: crate::store::Mark::Intended,
        why: "the cost of the new WAL format".into(),
        marked: JAN_1_2024 + 3 * DAY,
    }];
    let digest = compose(&Facts {
        branch: "master",
        period: week(),
        nights: &nights,
        runs: 6,
        changes: &changes,
        waiting: 0,
        hunts: &[],
        subjects: &[],
        marks: &marks,
        site_url: None,
    });
    assert_eq!(
        digest.subject,
        "pgbisect watch digest: master 2024-01-01 to 2024-01-07: 1 slower"
    );
    let expected = "\
Slower (1):
  #2 select-only/c64 -6.0% (interval -7.5% to -4.5%) between 2b2b2b2b..2a2a2a2a: not hunted yet
Marked by hand (1), not counted above:
  #1 select-only/c64 -12.3% (interval -13.8% to -10.8%) between 1b1b1b1b..1a1a1a1a: intended: the cost of the new WAL format
";
    assert!(digest.body.contains(expected), "{}", digest.body);
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

#[test]
fn a_digest_is_kept_under_its_subject_with_control_characters_shown() {
    let text = kept(
        "pgbisect watch digest: master\r\nBcc: x@y",
        "Slower (1):\n  \x1b[2Jselect-only/c64 -5.0%\n",
    );
    assert!(
        text.starts_with("Subject: pgbisect watch digest: master"),
        "{text}"
    );
    assert_eq!(text.lines().nth(1), Some(""), "{text}");
    assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
    assert!(text.ends_with("select-only/c64 -5.0%\n"), "{text:?}");
}
