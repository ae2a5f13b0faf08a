//! The behaviour every [`Store`] owes the watcher, as checks that run
//! against any of them: the SQLite store's unit tests and the PostgreSQL
//! store's tests (on a real server) call the same ones. A check panics
//! with what differed, as a test does.

use super::schema::Dialect;
use super::{
    ChangeHunt, ChangeKind, ChangeMark, ChangeRow, ChangeStatus, DigestRow, Mark, NewNight,
    NightCommit, NightStatus, Role, RunRow, Store, series_key,
};

/// The migrations a store in `dialect` was written with by hand, up to
/// schema version 4 (tests/fixtures/store/), `list[k]` bringing version
/// `k` to `k + 1`: a store made by them must open and migrate.
pub fn written_before(dialect: Dialect) -> Vec<String> {
    let fixture = match dialect {
        Dialect::Sqlite => include_str!("../../tests/fixtures/store/sqlite-v4.sql"),
        Dialect::Postgres => include_str!("../../tests/fixtures/store/postgres-v4.sql"),
    };
    let versions = fixture.split_once("-- version 1").map_or("", |(_, v)| v);
    versions
        .split("-- version ")
        .enumerate()
        .map(|(k, text)| match (k, text.find('\n')) {
            (0, _) | (_, None) => text.to_string(),
            (_, Some(eol)) => text[eol..].to_string(),
        })
        .collect()
}

/// A SQLite file at `path` made by the migrations written before, up to
/// `version`, holding one night of master (id 1): an older store to open.
pub fn sqlite_file_at_version(path: &std::path::Path, version: usize) {
    let conn = rusqlite::Connection::open(path).unwrap();
    for m in &written_before(Dialect::Sqlite)[..version] {
        conn.execute_batch(m).unwrap();
    }
    conn.execute_batch(&format!(
        "CREATE TABLE schema_version (version INTEGER NOT NULL);
         INSERT INTO schema_version (version) VALUES ({version});
         INSERT INTO nights (id, clock, branch, tip, status, reference)
             VALUES (1, 86400, 'master', 'a', 'done', 'ref');"
    ))
    .unwrap();
}

/// Opens the store under test anew, on the same database each time.
pub type Open<'a> = &'a mut dyn FnMut() -> Box<dyn Store>;

/// A night of `master` at `clock` measuring `commits`, the last its tip.
pub fn night(clock: i64, commits: &[&str]) -> NewNight {
    NewNight {
        clock,
        branch: "master".into(),
        tip: commits.last().map_or_else(String::new, |c| c.to_string()),
        reference: "ref".into(),
        commits: commits
            .iter()
            .enumerate()
            .map(|(k, c)| NightCommit {
                id: c.to_string(),
                subject: format!("commit {c}"),
                committed: clock - 100 + k as i64,
            })
            .collect(),
    }
}

/// A run of `commit` on `night` at 8 clients of the default profile.
pub fn run(night: i64, commit: &str, round: u32, role: Role, tps: f64) -> RunRow {
    RunRow {
        night,
        commit: commit.into(),
        series: series_key("default", 8),
        profile: "default".into(),
        clients: 8,
        host: None,
        role,
        round,
        tps: Some(tps),
        latency_avg_ms: Some(1.5),
        latency_p50_ms: None,
        latency_p95_ms: None,
        latency_p99_ms: None,
        failed: None,
        started: 1_000,
        seconds: 10.0,
        placement: None,
        machine: Some("{\"cpus\":2}".into()),
    }
}

/// Nights and runs come back as stored, after the store is opened
/// again, and a run with a stored key is not added twice.
pub fn nights_and_runs_come_back_as_stored_and_no_run_twice(open: Open) {
    let mut store = open();
    let first = store.begin_night(&night(86_400, &["a", "b"])).unwrap();
    assert!(
        store
            .add_run(&run(first.id, "b", 0, Role::Candidate, 100.0))
            .unwrap()
    );
    assert!(
        store
            .add_run(&run(first.id, "ref", 0, Role::Reference, 99.0))
            .unwrap()
    );
    // The same key again, as a night run again after a kill makes it.
    assert!(
        !store
            .add_run(&run(first.id, "b", 0, Role::Candidate, 7.0))
            .unwrap()
    );
    store
        .finish_night(first.id, NightStatus::Done, None)
        .unwrap();
    drop(store);
    let mut store = open();
    let nights = store.nights("master").unwrap();
    assert_eq!(nights.len(), 1);
    assert_eq!(nights[0].status, NightStatus::Done);
    assert_eq!(nights[0].commits.len(), 2);
    assert_eq!(
        store.night_at("master", 86_400).unwrap(),
        Some(nights[0].clone())
    );
    assert_eq!(store.night_at("main", 86_400).unwrap(), None);
    let runs = store.runs("master").unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0], run(first.id, "b", 0, Role::Candidate, 100.0));
    assert_eq!(runs[1].role, Role::Reference);
    // Each night's commits come back its own, in their order, however
    // many nights one read returns.
    let second = night(2 * 86_400, &["e", "c", "d"]);
    store.begin_night(&second).unwrap();
    let mut other = night(2 * 86_400, &["x"]);
    other.branch = "main".into();
    store.begin_night(&other).unwrap();
    let nights = store.nights("master").unwrap();
    assert_eq!(nights.len(), 2);
    assert_eq!(nights[0].commits, night(86_400, &["a", "b"]).commits);
    assert_eq!(nights[1].commits, second.commits);
    let at = store.night_at("master", 2 * 86_400).unwrap().unwrap();
    assert_eq!(at.commits, second.commits);
    let main = store.nights("main").unwrap();
    assert_eq!(main.len(), 1);
    assert_eq!(main[0].commits, other.commits);
}

/// A change is kept once, its status and size move, a drift is kept as
/// a drift, and its hunt is kept step by step.
pub fn a_change_is_kept_once_and_its_status_moves(open: Open) {
    let mut store = open();
    let n = store.begin_night(&night(86_400, &["a"])).unwrap();
    let mut change = ChangeRow {
        id: 0,
        series: "default/c8".into(),
        before: "a".into(),
        after: "b".into(),
        pct: -6.0,
        low_pct: None,
        high_pct: None,
        status: ChangeStatus::Candidate,
        first_night: n.id,
        p_value: 0.005,
        kind: ChangeKind::Step,
    };
    let id = store.add_change(&change).unwrap();
    assert_eq!(store.add_change(&change).unwrap(), id);
    change.id = id;
    change.status = ChangeStatus::Confirmed;
    change.low_pct = Some(-7.0);
    store.update_change(&change).unwrap();
    assert_eq!(store.changes("master").unwrap(), vec![change.clone()]);
    let drift = ChangeRow {
        before: "a".into(),
        after: "z".into(),
        kind: ChangeKind::Drift,
        ..change.clone()
    };
    let drift_id = store.add_change(&drift).unwrap();
    let kept = store.changes("master").unwrap();
    assert_eq!(
        kept,
        vec![
            change.clone(),
            ChangeRow {
                id: drift_id,
                ..drift
            }
        ]
    );
    assert_eq!(store.hunts("master").unwrap(), vec![]);
    let mut hunt = ChangeHunt::begun(id, "/w/watch-hunts/change-1");
    store.save_hunt(&hunt).unwrap();
    assert_eq!(store.hunts("master").unwrap(), vec![hunt.clone()]);
    hunt.outcome = Some("culprit-found".into());
    hunt.culprit = Some("b".into());
    hunt.mailed = Some(86_400);
    store.save_hunt(&hunt).unwrap();
    drop(store);
    assert_eq!(open().hunts("master").unwrap(), vec![hunt]);
}

/// A digest period is kept once per branch and start: saving it again
/// (written, then mailed) updates the same row, and another branch sees
/// none of it.
pub fn a_digest_period_is_kept_once_and_updated(open: Open) {
    let mut store = open();
    assert_eq!(store.digests("master").unwrap(), vec![]);
    let mut first = DigestRow {
        branch: "master".into(),
        start: 0,
        end: 7 * 86_400,
        written: None,
        sent: None,
        message_id: None,
        changes: vec![],
    };
    store.save_digest(&first).unwrap();
    first.written = Some(8 * 86_400);
    first.sent = Some(8 * 86_400);
    first.message_id = Some("<pgbisect.x@example.org>".into());
    first.changes = vec![3, 5];
    store.save_digest(&first).unwrap();
    let next = DigestRow {
        start: 8 * 86_400,
        end: 15 * 86_400,
        written: None,
        sent: None,
        message_id: None,
        changes: vec![],
        ..first.clone()
    };
    store.save_digest(&next).unwrap();
    drop(store);
    let mut store = open();
    assert_eq!(store.digests("master").unwrap(), vec![first, next]);
    assert_eq!(store.digests("main").unwrap(), vec![]);
}

/// A change's mark is kept with its why and when, marking it again
/// replaces it, and another branch sees none of it.
pub fn a_mark_is_kept_and_replaced(open: Open) {
    let mut store = open();
    // Not on the first day: a file of an older version holds that night.
    let n = store.begin_night(&night(3 * 86_400, &["a", "b"])).unwrap();
    let change = ChangeRow {
        id: 0,
        series: "default/c8".into(),
        before: "a".into(),
        after: "b".into(),
        pct: -6.0,
        low_pct: Some(-7.0),
        high_pct: Some(-5.0),
        status: ChangeStatus::Confirmed,
        first_night: n.id,
        p_value: 0.005,
        kind: ChangeKind::Step,
    };
    let id = store.add_change(&change).unwrap();
    let other = store
        .add_change(&ChangeRow {
            after: "c".into(),
            ..change.clone()
        })
        .unwrap();
    assert_eq!(store.marks("master").unwrap(), vec![]);
    let first = ChangeMark {
        change: id,
        mark: Mark::Wrong,
        why: "the machine's disk was full".into(),
        marked: 90_000,
    };
    store.save_mark(&first).unwrap();
    let again = ChangeMark {
        mark: Mark::Intended,
        why: "the new WAL format's cost, accepted in review".into(),
        marked: 95_000,
        ..first.clone()
    };
    store.save_mark(&again).unwrap();
    drop(store);
    let mut store = open();
    assert_eq!(store.marks("master").unwrap(), vec![again.clone()]);
    assert_eq!(store.marks("main").unwrap(), vec![]);
    let second = ChangeMark {
        change: other,
        ..again.clone()
    };
    store.save_mark(&second).unwrap();
    assert_eq!(store.marks("master").unwrap(), vec![again, second]);
    // The change itself is as it was.
    assert_eq!(
        store.changes("master").unwrap()[0],
        ChangeRow { id, ..change }
    );
}
