//! The watcher's results in a real PostgreSQL 15 database
//! (`PGBISECT_TEST_PG_BIN`, default Debian's binaries): the behaviour the
//! SQLite store has, run by the same checks; a newer schema refused; two
//! writers of one database storing each run once; one watcher per machine
//! at a time; and a `pgbisect watch` replay kept in the database and
//! exported as the SQLite one is, whose hunts write where the work dir
//! says, whatever the database says.

use crate::common;

use common::pg::server_work_dir;
use common::watch::{dated_history, replay};
use common::*;
use pgbisect::server::{RunAs, RunningServer, SocketDir};
use pgbisect::store::conformance::{self, night, run};
use pgbisect::store::place::StoreAt;
use pgbisect::store::postgres::{PostgresStore, VERSION};
use pgbisect::store::{Role, Store, StoreError};
use std::path::Path;

/// A private server, its socket dir and work dir kept with it.
struct Db {
    server: RunningServer,
    _sockets: SocketDir,
    _work: tempfile::TempDir,
}

impl Db {
    /// A server on a fresh copy of a new template, or `None` when the
    /// test is skipped.
    fn start() -> Option<Db> {
        let bin = pg_bin()?;
        let work = server_work_dir();
        let run_as = RunAs::resolve(None).unwrap();
        let sockets = SocketDir::create(&run_as).unwrap();
        let server = common::pg::started_s1(&bin, work.path(), "s1", &sockets, &run_as);
        Some(Db {
            server,
            _sockets: sockets,
            _work: work,
        })
    }

    /// A new database `name`, and its libpq connection string.
    fn create(&self, name: &str) -> String {
        self.server
            .psql(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let conn = self.server.conn(name);
        format!(
            "host={} port={} user=postgres dbname={name}",
            conn.socket_dir.display(),
            conn.port
        )
    }
}

fn client(conninfo: &str) -> postgres::Client {
    postgres::Client::connect(conninfo, postgres::NoTls).unwrap()
}

#[test]
fn the_postgres_store_behaves_as_the_sqlite_one_and_refuses_a_newer_schema() {
    let Some(db) = Db::start() else { return };
    let at = db.create("behaviour");
    let mut open = || -> Box<dyn Store> { Box::new(PostgresStore::connect(&at, "m1").unwrap()) };
    conformance::nights_and_runs_come_back_as_stored_and_no_run_twice(&mut open);
    let at = db.create("changes");
    let mut open = || -> Box<dyn Store> { Box::new(PostgresStore::connect(&at, "m1").unwrap()) };
    conformance::a_change_is_kept_once_and_its_status_moves(&mut open);
    let at = db.create("digests");
    let mut open = || -> Box<dyn Store> { Box::new(PostgresStore::connect(&at, "m1").unwrap()) };
    conformance::a_digest_period_is_kept_once_and_updated(&mut open);
    let marks = db.create("marks");
    let mut open_marks =
        || -> Box<dyn Store> { Box::new(PostgresStore::connect(&marks, "m1").unwrap()) };
    conformance::a_mark_is_kept_and_replaced(&mut open_marks);
    let version: i64 = client(&at)
        .query_one("SELECT version FROM pgbisect_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, VERSION);
    client(&at)
        .execute("UPDATE pgbisect_schema SET version = $1", &[&(VERSION + 1)])
        .unwrap();
    let err = PostgresStore::connect(&at, "m1").err().unwrap().to_string();
    assert!(err.contains("newer than"), "{err}");
    assert!(
        err.contains("postgres://postgres@") && err.contains("/digests"),
        "{err}"
    );
}

#[test]
fn two_writers_store_each_run_once_and_two_machines_keep_their_own_nights() {
    let Some(db) = Db::start() else { return };
    let at = db.create("shared");
    let mut first = PostgresStore::connect(&at, "m1").unwrap();
    let night_id = first.begin_night(&night(86_400, &["a"])).unwrap().id;
    // Two writers of one machine's night (a night started again while the
    // first start still runs): every run is stored once.
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let at = at.clone();
            std::thread::spawn(move || {
                let mut store = PostgresStore::connect(&at, "m1").unwrap();
                (0..40)
                    .filter(|&round| {
                        let r = run(night_id, "a", round, Role::Candidate, 100.0);
                        store.add_run(&r).unwrap()
                    })
                    .count()
            })
        })
        .collect();
    let added: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(added, 40);
    assert_eq!(first.runs("master").unwrap().len(), 40);
    // Another machine's night at the same clock is its own, and so are
    // its series: neither sees the other's.
    let mut second = PostgresStore::connect(&at, "m2").unwrap();
    let other = second.begin_night(&night(86_400, &["a"])).unwrap();
    assert_ne!(other.id, night_id);
    assert!(
        second
            .add_run(&run(other.id, "a", 0, Role::Candidate, 50.0))
            .unwrap()
    );
    assert_eq!(second.nights("master").unwrap(), vec![other]);
    assert_eq!(second.runs("master").unwrap().len(), 1);
    assert_eq!(first.nights("master").unwrap().len(), 1);
    assert_eq!(first.runs("master").unwrap().len(), 40);
}

#[test]
fn one_watcher_per_machine_holds_the_database_until_its_connection_ends() {
    let Some(db) = Db::start() else { return };
    let conninfo = db.create("locks");
    let at = |machine: &str| StoreAt::Postgres {
        conninfo: conninfo.clone(),
        machine: Some(machine.into()),
    };
    let first = at("m1").open_watcher("this-host").unwrap();
    let err = at("m1").open_watcher("this-host").err().unwrap();
    let said = err.to_string();
    assert!(matches!(err, StoreError::Busy { .. }), "{said}");
    assert!(
        said.contains("`m1`") && said.contains("--machine"),
        "{said}"
    );
    // Another machine's watcher, and readers, are not held back.
    let other = at("m2").open_watcher("this-host").unwrap();
    at("m1").open("this-host").unwrap();
    drop(first);
    at("m1").open_watcher("this-host").unwrap();
    drop(other);
}

fn watch_with(repo: &Path, work: &Path, args: &[&str]) -> std::process::Output {
    pgbisect_sub("watch", repo, work, args)
}

fn export(work: &Path, store: &[&str], csv: &Path) -> String {
    let mut cmd = bin();
    cmd.args(["watch", "export", "--csv"])
        .arg(csv)
        .arg("--work-dir")
        .arg(work)
        .args(store);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    std::fs::read_to_string(csv).unwrap()
}

#[test]
fn a_watch_replay_keeps_its_runs_in_the_database_and_exports_them_as_sqlite_does() {
    let Some(db) = Db::start() else { return };
    let at = db.create("watch");
    let (repo, shas) = dated_history(&levels_with_drop_at(12, 8));
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let mut args = replay(&profile, "2024-01-01..2024-01-12");
    args.extend(["--per-night", "1"]);
    let (in_pg, in_file) = (tmp.path().join("pg"), tmp.path().join("file"));
    let mut with_store = args.clone();
    with_store.extend(["--store", &at]);
    let out = watch_with(repo.path(), &in_pg, &with_store);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let range = format!("{}..{}", &shas[7][..8], &shas[8][..8]);
    assert!(stdout.contains(&range), "{stdout}");
    assert!(
        !in_pg.join("watch.sqlite").exists(),
        "the results went to the database, not the work dir"
    );
    // The rows are in the database: 12 nights of one commit, 3 pairs each.
    let mut c = client(&at);
    let count = |c: &mut postgres::Client, table: &str| -> i64 {
        c.query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count(&mut c, "nights"), 12);
    assert_eq!(count(&mut c, "runs"), 72);
    let hunted: i64 = c
        .query_one(
            "SELECT count(*) FROM changes WHERE hunt_dir IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(hunted, 1);
    // The database keeps the hunt's folder by name, not by path.
    let (id, dir): (i64, String) = {
        let row = c
            .query_one(
                "SELECT id, hunt_dir FROM changes WHERE hunt_dir IS NOT NULL",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(dir, format!("change-{id}"));
    // Whoever can write the database names another folder for the hunt,
    // to be hunted again: the watcher still writes in its work dir.
    let planted = tmp.path().join("planted");
    c.execute(
        "UPDATE changes SET hunt_dir = $1, hunt_outcome = NULL, report = NULL, mailed = NULL",
        &[&planted.to_string_lossy().as_ref()],
    )
    .unwrap();
    let folder = in_pg.join("watch-hunts").join(format!("change-{id}"));
    std::fs::remove_dir_all(&folder).unwrap();
    // Run again: nothing new is measured or stored.
    let again = watch_with(repo.path(), &in_pg, &with_store);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert_eq!(count(&mut c, "runs"), 72);
    assert!(!planted.exists(), "the hunt wrote where the database said");
    assert!(folder.join("report.txt").is_file(), "{stderr}");
    // The same replay into the work dir's SQLite file exports the same
    // layout: the same columns, rows, times and commits.
    let out = watch_with(repo.path(), &in_file, &args);
    assert_eq!(out.status.code(), Some(0));
    let from_pg = export(&in_pg, &["--store", &at], &tmp.path().join("pg.csv"));
    let from_file = export(&in_file, &[], &tmp.path().join("file.csv"));
    let key = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(key(&from_pg), key(&from_file));
    assert_eq!(from_pg.lines().count(), 13, "{from_pg}");
    assert_eq!(
        from_pg.lines().next(),
        Some(
            "time,commit,branch,night,profile/c8.ratio,profile/c8.tps,profile/c8.reference_tps,\
             reference"
        )
    );
    // Another machine of the database has measured nothing.
    let other = ["--store", &at, "--machine", "another-machine"];
    let none = export(&in_pg, &other, &tmp.path().join("other.csv"));
    assert_eq!(none.lines().count(), 1, "{none}");
}

/// The tables of the database at `at`: each column with its type, whether
/// it may be null and its default, and each constraint.
fn schema_of(at: &str) -> Vec<String> {
    let mut client = client(at);
    let columns = client
        .query(
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' '
                    || is_nullable || ' ' || coalesce(column_default, '')
             FROM information_schema.columns WHERE table_schema = 'public'
             ORDER BY table_name, ordinal_position",
            &[],
        )
        .unwrap();
    let constraints = client
        .query(
            "SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
             WHERE connamespace = 'public'::regnamespace ORDER BY conname",
            &[],
        )
        .unwrap();
    columns
        .iter()
        .chain(&constraints)
        .map(|r| r.get(0))
        .collect()
}

/// A database made at any version by the migrations written by hand
/// before the schema was written once for both stores opens, keeps its
/// night and ends with the tables a new database gets.
#[test]
fn a_database_made_by_the_old_migrations_opens_and_migrates() {
    let Some(db) = Db::start() else { return };
    let fresh = db.create("fresh");
    drop(PostgresStore::connect(&fresh, "m1").unwrap());
    let before = conformance::written_before(pgbisect::store::schema::Dialect::Postgres);
    assert_eq!(before.len(), 4);
    for version in 1..=before.len() {
        let at = db.create(&format!("v{version}"));
        let mut old = client(&at);
        for migration in &before[..version] {
            old.batch_execute(migration).unwrap();
        }
        old.batch_execute(&format!(
            "CREATE TABLE pgbisect_schema (version BIGINT NOT NULL);
             INSERT INTO pgbisect_schema (version) VALUES ({version});
             INSERT INTO nights (machine, clock, branch, tip, status, reference)
                 VALUES ('m1', 86400, 'master', 'a', 'done', 'ref');"
        ))
        .unwrap();
        drop(old);
        let mut store = PostgresStore::connect(&at, "m1").unwrap();
        assert_eq!(store.nights("master").unwrap().len(), 1, "v{version}");
        drop(store);
        assert_eq!(schema_of(&at), schema_of(&fresh), "v{version}");
    }
}
