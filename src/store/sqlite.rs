//! The store in one SQLite file: the embedded default, in the work dir.
//!
//! The schema is versioned: `schema_version` holds the version, and the
//! migrations ([`super::schema`], in SQLite's dialect) are applied in
//! order, in one transaction, so
//! an older file is brought up to date and a newer one (written by a later
//! pgbisect) is refused with a message instead of being misread.

use super::schema::{Dialect, word};
use super::{
    ChangeHunt, ChangeKind, ChangeMark, ChangeRow, ChangeStatus, DigestRow, Mark, NewNight, Night,
    NightCommit, NightStatus, Role, RunRow, Store, StoreError,
};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;

/// The file's name in the work dir.
pub const FILE: &str = "watch.sqlite";

/// The schema version this pgbisect writes.
pub const VERSION: i64 = super::schema::VERSION;

/// The store in one SQLite file.
pub struct SqliteStore {
    conn: Connection,
    path: String,
    /// The watcher's lock on the file, when this store was opened by one:
    /// closed after the connection (fields drop in order).
    _lock: Option<std::fs::File>,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`, once it and its folder
    /// are found safe ([`super::sqlite_file`]), and brings its schema up
    /// to [`VERSION`]; refuses a newer one.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, false)
    }

    /// [`SqliteStore::open`] for the watcher: the store is its alone
    /// until the returned store is dropped; held by another process, it
    /// is [`StoreError::Busy`].
    pub fn open_exclusive(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, exclusive: bool) -> Result<SqliteStore, StoreError> {
        let path = super::sqlite_file::checked(path)?;
        let lock = match exclusive {
            true => Some(super::sqlite_file::lock(&path)?),
            false => None,
        };
        let shown = path.display().to_string();
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&path, flags).map_err(sql(&shown))?;
        let mut store = SqliteStore {
            conn,
            path: shown,
            _lock: lock,
        };
        store.migrate()?;
        Ok(store)
    }

    /// Brings the schema up to date in one immediate transaction: a
    /// second pgbisect opening a new file at the same moment waits, then
    /// finds it migrated, instead of adding the same columns again.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;")
            .map_err(&err)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&err)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);")
            .map_err(&err)?;
        let found: Option<i64> = tx
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .map_err(&err)?;
        let migrations = super::schema::migrations(Dialect::Sqlite);
        let todo = super::schema::pending(found.unwrap_or(0), migrations.len(), &self.path)?;
        if todo.is_empty() {
            return tx.commit().map_err(&err);
        }
        for migration in &migrations[todo] {
            tx.execute_batch(migration).map_err(&err)?;
        }
        tx.execute("DELETE FROM schema_version", []).map_err(&err)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [VERSION],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }

    fn nights_where(&self, filter: &str, args: &[&dyn rusqlite::ToSql]) -> NightsResult {
        let err = sql(&self.path);
        let mut stmt = self
            .conn
            .prepare(&super::schema::commits_query(filter))
            .map_err(&err)?;
        let mut commits = super::schema::by_night(
            stmt.query_map(args, |r| {
                let commit = NightCommit {
                    id: r.get(1)?,
                    subject: r.get(2)?,
                    committed: r.get(3)?,
                };
                Ok((r.get::<_, i64>(0)?, commit))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?,
        );
        let query = format!(
            "SELECT id, clock, branch, tip, status, reason, reference FROM nights
             WHERE {filter} ORDER BY clock, id"
        );
        let mut stmt = self.conn.prepare(&query).map_err(&err)?;
        let rows = stmt
            .query_map(args, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        rows.into_iter()
            .map(|(id, clock, branch, tip, status, reason, reference)| {
                let status = word(&self.path, "status", &status, NightStatus::parse)?;
                Ok(Night {
                    id,
                    clock,
                    branch,
                    tip,
                    status,
                    reason,
                    reference,
                    commits: commits.remove(&id).unwrap_or_default(),
                })
            })
            .collect()
    }
}

type NightsResult = Result<Vec<Night>, StoreError>;

/// Wraps a SQLite error with the file's name.
fn sql(path: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sql {
        path: path.to_string(),
        source,
    }
}

fn run_of(r: &Row) -> rusqlite::Result<(RunRow, String)> {
    let role: String = r.get(6)?;
    Ok((
        RunRow {
            night: r.get(0)?,
            commit: r.get(1)?,
            series: r.get(2)?,
            profile: r.get(3)?,
            clients: r.get(4)?,
            host: r.get(5)?,
            role: Role::Candidate,
            round: r.get(7)?,
            tps: r.get(8)?,
            latency_avg_ms: r.get(9)?,
            latency_p50_ms: r.get(10)?,
            latency_p95_ms: r.get(11)?,
            latency_p99_ms: r.get(12)?,
            failed: r.get(13)?,
            started: r.get(14)?,
            seconds: r.get(15)?,
            placement: r.get(16)?,
            machine: r.get(17)?,
        },
        role,
    ))
}

fn change_of(r: &Row) -> rusqlite::Result<(ChangeRow, String, String)> {
    let status: String = r.get(7)?;
    let kind: String = r.get(10)?;
    Ok((
        ChangeRow {
            id: r.get(0)?,
            series: r.get(1)?,
            before: r.get(2)?,
            after: r.get(3)?,
            pct: r.get(4)?,
            low_pct: r.get(5)?,
            high_pct: r.get(6)?,
            status: ChangeStatus::Candidate,
            first_night: r.get(8)?,
            p_value: r.get(9)?,
            kind: ChangeKind::Step,
        },
        status,
        kind,
    ))
}

impl Store for SqliteStore {
    fn night_at(&mut self, branch: &str, clock: i64) -> Result<Option<Night>, StoreError> {
        let found = self.nights_where("branch = ?1 AND clock = ?2", &[&branch, &clock])?;
        Ok(found.into_iter().next())
    }

    fn nights(&mut self, branch: &str) -> Result<Vec<Night>, StoreError> {
        self.nights_where("branch = ?1", &[&branch])
    }

    fn begin_night(&mut self, night: &NewNight) -> Result<Night, StoreError> {
        let err = sql(&self.path);
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute(
            "INSERT INTO nights (clock, branch, tip, status, reference)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                night.clock,
                night.branch,
                night.tip,
                NightStatus::Running.as_str(),
                night.reference
            ],
        )
        .map_err(&err)?;
        let id = tx.last_insert_rowid();
        for (position, c) in night.commits.iter().enumerate() {
            tx.execute(
                "INSERT INTO night_commits (night, position, commit_id, subject, committed)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, position as i64, c.id, c.subject, c.committed],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(night.begun(id))
    }

    fn finish_night(
        &mut self,
        id: i64,
        status: NightStatus,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE nights SET status = ?1, reason = ?2 WHERE id = ?3",
                params![status.as_str(), reason, id],
            )
            .map_err(sql(&self.path))?;
        Ok(())
    }

    fn add_run(&mut self, run: &RunRow) -> Result<bool, StoreError> {
        let err = sql(&self.path);
        let tx = self.conn.transaction().map_err(&err)?;
        let added = tx
            .execute(
                "INSERT INTO runs (night, commit_id, series, profile, clients, host, role, round,
                     tps, latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_p99_ms, failed,
                     started, seconds, placement, machine)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18)
                 ON CONFLICT DO NOTHING",
                params![
                    run.night,
                    run.commit,
                    run.series,
                    run.profile,
                    run.clients,
                    run.host,
                    run.role.as_str(),
                    run.round,
                    run.tps,
                    run.latency_avg_ms,
                    run.latency_p50_ms,
                    run.latency_p95_ms,
                    run.latency_p99_ms,
                    run.failed,
                    run.started,
                    run.seconds,
                    run.placement,
                    run.machine
                ],
            )
            .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(added == 1)
    }

    fn runs(&mut self, branch: &str) -> Result<Vec<RunRow>, StoreError> {
        let err = sql(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.night, r.commit_id, r.series, r.profile, r.clients, r.host, r.role,
                     r.round, r.tps, r.latency_avg_ms, r.latency_p50_ms, r.latency_p95_ms,
                     r.latency_p99_ms, r.failed, r.started, r.seconds, r.placement, r.machine
                 FROM runs r JOIN nights n ON n.id = r.night
                 WHERE n.branch = ?1 ORDER BY r.id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([branch], run_of)
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        rows.into_iter()
            .map(|(mut run, role)| {
                run.role = word(&self.path, "role", &role, Role::parse)?;
                Ok(run)
            })
            .collect()
    }

    fn changes(&mut self, branch: &str) -> Result<Vec<ChangeRow>, StoreError> {
        let err = sql(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.series, c.before_commit, c.after_commit, c.pct, c.low_pct,
                     c.high_pct, c.status, c.first_night, c.p_value, c.kind
                 FROM changes c JOIN nights n ON n.id = c.first_night
                 WHERE n.branch = ?1 ORDER BY c.id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([branch], change_of)
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        rows.into_iter()
            .map(|(mut change, status, kind)| {
                change.status = word(&self.path, "change status", &status, ChangeStatus::parse)?;
                change.kind = word(&self.path, "change kind", &kind, ChangeKind::parse)?;
                Ok(change)
            })
            .collect()
    }

    fn add_change(&mut self, c: &ChangeRow) -> Result<i64, StoreError> {
        let err = sql(&self.path);
        self.conn
            .execute(
                "INSERT INTO changes (series, before_commit, after_commit, pct, low_pct,
                     high_pct, status, first_night, p_value, kind)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                params![
                    c.series,
                    c.before,
                    c.after,
                    c.pct,
                    c.low_pct,
                    c.high_pct,
                    c.status.as_str(),
                    c.first_night,
                    c.p_value,
                    c.kind.as_str()
                ],
            )
            .map_err(&err)?;
        self.conn
            .query_row(
                "SELECT id FROM changes
                 WHERE series = ?1 AND before_commit = ?2 AND after_commit = ?3",
                params![c.series, c.before, c.after],
                |r| r.get(0),
            )
            .optional()
            .map_err(&err)?
            .ok_or_else(|| StoreError::Unknown {
                path: self.path.clone(),
                what: "change",
                value: c.series.clone(),
            })
    }

    fn update_change(&mut self, c: &ChangeRow) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE changes SET status = ?1, pct = ?2, low_pct = ?3, high_pct = ?4
                 WHERE id = ?5",
                params![c.status.as_str(), c.pct, c.low_pct, c.high_pct, c.id],
            )
            .map_err(sql(&self.path))?;
        Ok(())
    }

    fn hunts(&mut self, branch: &str) -> Result<Vec<ChangeHunt>, StoreError> {
        let err = sql(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.hunt_dir, c.hunt_outcome, c.culprit, c.report, c.mailed,
                     c.message_id
                 FROM changes c JOIN nights n ON n.id = c.first_night
                 WHERE n.branch = ?1 AND c.hunt_dir IS NOT NULL ORDER BY c.id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([branch], |r| {
                Ok(ChangeHunt {
                    change: r.get(0)?,
                    dir: r.get(1)?,
                    outcome: r.get(2)?,
                    culprit: r.get(3)?,
                    report: r.get(4)?,
                    mailed: r.get(5)?,
                    message_id: r.get(6)?,
                })
            })
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    fn save_hunt(&mut self, h: &ChangeHunt) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE changes SET hunt_dir = ?1, hunt_outcome = ?2, culprit = ?3, report = ?4,
                     mailed = ?5, message_id = ?6
                 WHERE id = ?7",
                params![
                    h.dir,
                    h.outcome,
                    h.culprit,
                    h.report,
                    h.mailed,
                    h.message_id,
                    h.change
                ],
            )
            .map_err(sql(&self.path))?;
        Ok(())
    }

    fn digests(&mut self, branch: &str) -> Result<Vec<DigestRow>, StoreError> {
        super::sqlite_digests::digests(&self.conn, branch).map_err(sql(&self.path))
    }

    fn save_digest(&mut self, digest: &DigestRow) -> Result<(), StoreError> {
        super::sqlite_digests::save(&self.conn, digest).map_err(sql(&self.path))
    }

    fn marks(&mut self, branch: &str) -> Result<Vec<ChangeMark>, StoreError> {
        let rows = super::marks::sqlite_marks(&self.conn, branch).map_err(sql(&self.path))?;
        rows.into_iter()
            .map(|(mut m, mark)| {
                m.mark = word(&self.path, "mark", &mark, Mark::parse)?;
                Ok(m)
            })
            .collect()
    }

    fn save_mark(&mut self, mark: &ChangeMark) -> Result<(), StoreError> {
        super::marks::sqlite_save(&self.conn, mark).map_err(sql(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance;
    use super::*;

    /// The store in a fresh file, opened anew at each call.
    fn each_open(dir: &tempfile::TempDir) -> impl FnMut() -> Box<dyn Store> + '_ {
        let path = dir.path().join(FILE);
        move || Box::new(SqliteStore::open(&path).unwrap())
    }

    #[test]
    fn nights_and_runs_come_back_as_stored_and_no_run_twice() {
        let dir = tempfile::tempdir().unwrap();
        conformance::nights_and_runs_come_back_as_stored_and_no_run_twice(&mut each_open(&dir));
    }

    #[test]
    fn a_change_is_kept_once_and_its_status_moves() {
        let dir = tempfile::tempdir().unwrap();
        conformance::a_change_is_kept_once_and_its_status_moves(&mut each_open(&dir));
    }

    #[test]
    fn the_changes_of_a_first_version_file_are_steps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&conformance::written_before(Dialect::Sqlite)[0])
            .unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version (version) VALUES (1);
             INSERT INTO nights (id, clock, branch, tip, status, reference)
                 VALUES (1, 86400, 'master', 'a', 'done', 'ref');
             INSERT INTO changes (series, before_commit, after_commit, pct, status,
                 first_night, p_value)
                 VALUES ('default/c8', 'a', 'b', -6.0, 'confirmed', 1, 0.005);",
        )
        .unwrap();
        drop(conn);
        let mut store = SqliteStore::open(&path).unwrap();
        let changes = store.changes("master").unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kind, ChangeKind::Step);
    }

    /// Each table's definition, as SQLite keeps it.
    fn schema_of(path: &Path) -> Vec<(String, String)> {
        let conn = Connection::open(path).unwrap();
        let mut rows = conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
            .unwrap();
        let tables = rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?)));
        tables.unwrap().map(Result::unwrap).collect()
    }

    /// A file made at any version by the migrations written by hand before
    /// the schema was written once opens, keeps its night and ends with
    /// the tables a new file has.
    #[test]
    fn a_file_made_by_the_old_migrations_opens_and_migrates() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.sqlite");
        drop(SqliteStore::open(&fresh).unwrap());
        let before = conformance::written_before(Dialect::Sqlite);
        for version in 1..=before.len() {
            let path = dir.path().join(format!("v{version}.sqlite"));
            conformance::sqlite_file_at_version(&path, version);
            let mut store = SqliteStore::open(&path).unwrap();
            assert_eq!(store.nights("master").unwrap().len(), 1, "v{version}");
            drop(store);
            assert_eq!(schema_of(&path), schema_of(&fresh), "v{version}");
        }
    }

    #[test]
    fn a_newer_schema_is_refused_and_an_older_one_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, VERSION);
        conn.execute("UPDATE schema_version SET version = ?1", [VERSION + 1])
            .unwrap();
        drop(conn);
        let err = SqliteStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("newer than"), "{err}");
        // A file from before any table (version 0) gets every migration.
        let empty = dir.path().join("empty.sqlite");
        Connection::open(&empty).unwrap();
        let mut store = SqliteStore::open(&empty).unwrap();
        assert_eq!(store.nights("master").unwrap(), vec![]);
    }
}
