//! The store in a PostgreSQL database, for a team whose machines keep one
//! history together (`--store postgres://...`).
//!
//! The schema is the SQLite store's, in PostgreSQL's dialect (both are
//! written once, in [`super::schema`]), versioned the same way:
//! `pgbisect_schema` holds the version and the migrations are applied in
//! order, under an advisory lock so that two machines
//! starting at once do not both migrate; a newer version is refused.
//!
//! A work dir's SQLite file is one machine's history. Here several
//! machines write one database, so every night (and every change found
//! in its series) also carries the machine that measured it, and a store
//! reads and writes only its own machine's: a run's key (night, commit,
//! series, round, role) keeps its meaning, and one machine's series never
//! mixes with another's. Every write is one statement or one transaction,
//! and runs and changes are inserted with `ON CONFLICT DO NOTHING`, so two
//! writers of one night store each run once.
//!
//! The connection is encrypted as the connection string's `sslmode` and
//! `sslrootcert` say, with libpq's meanings (see [`super::tls`]).

use super::schema::{Dialect, word};
use super::{
    ChangeHunt, ChangeKind, ChangeMark, ChangeRow, ChangeStatus, DigestRow, Mark, NewNight, Night,
    NightCommit, NightStatus, Role, RunRow, Store, StoreError,
};
use ::postgres::types::ToSql;
use ::postgres::{Client, Config, Row};

/// The schema version this pgbisect writes.
pub const VERSION: i64 = super::schema::VERSION;

/// The advisory lock the migrations are applied under ("pgbisect" in ASCII).
const MIGRATION_LOCK: i64 = 0x7067_6269_7365_6374;

/// What to check when the schema cannot be created or migrated.
const MIGRATE_HINT: &str =
    "cannot bring the schema up to date: may this user create tables in the database?";

/// The store in a PostgreSQL database, one machine's nights of it.
pub struct PostgresStore {
    client: Client,
    /// The server and database, without the password.
    server: String,
    machine: String,
}

impl PostgresStore {
    /// Connects to the database `conninfo` names (a `postgres://` URL or
    /// a libpq `key=value` string) as machine `machine`, and brings its
    /// schema up to [`VERSION`]; refuses a newer one.
    pub fn connect(conninfo: &str, machine: &str) -> Result<PostgresStore, StoreError> {
        let (conninfo, tls) =
            super::tls::split(conninfo).map_err(|what| StoreError::Connection {
                server: "given to --store".into(),
                what: format!("cannot read the connection string: {what}"),
            })?;
        let mut config: Config = conninfo.parse().map_err(|e| StoreError::Postgres {
            server: "given to --store".into(),
            what: "cannot read the connection string".into(),
            source: e,
        })?;
        super::pgpass::fill_in(&mut config);
        let server = describe(&config);
        let client = tls.connect(&config, &server)?;
        let mut store = PostgresStore {
            client,
            server,
            machine: machine.to_string(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Takes the watcher's lock of this machine's nights for as long as
    /// the connection lasts (a session advisory lock: the server lets go
    /// of it when the connection ends, however the watcher ends); held by
    /// another connection, it is [`StoreError::Busy`].
    pub fn lock_machine(&mut self) -> Result<(), StoreError> {
        let key = machine_lock_key(&self.machine);
        let taken: bool = self
            .client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(failed(&self.server, "cannot take the watcher's lock"))?
            .get(0);
        if taken {
            return Ok(());
        }
        Err(StoreError::Busy {
            store: self.server.clone(),
            who: format!("one watching as machine `{}`", self.machine),
            hint: "wait for it to finish; a second work dir, or a second host with the same \
                   name, needs a name of its own: give it --machine NAME"
                .into(),
        })
    }

    /// The server and database, as errors name them.
    pub fn server(&self) -> &str {
        &self.server
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let err = failed(&self.server, MIGRATE_HINT);
        let mut tx = self.client.transaction().map_err(&err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(&err)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS pgbisect_schema (version BIGINT NOT NULL)")
            .map_err(&err)?;
        let found: Option<i64> = tx
            .query_one("SELECT max(version) FROM pgbisect_schema", &[])
            .map_err(&err)?
            .get(0);
        let migrations = super::schema::migrations(Dialect::Postgres);
        let todo = super::schema::pending(found.unwrap_or(0), migrations.len(), &self.server)?;
        for migration in &migrations[todo.clone()] {
            tx.batch_execute(migration).map_err(&err)?;
        }
        if !todo.is_empty() {
            tx.execute("DELETE FROM pgbisect_schema", &[])
                .map_err(&err)?;
            tx.execute(
                "INSERT INTO pgbisect_schema (version) VALUES ($1)",
                &[&VERSION],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    fn query(&mut self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        self.client
            .query(sql, args)
            .map_err(failed(&self.server, "a query failed"))
    }

    fn execute(&mut self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        self.client
            .execute(sql, args)
            .map_err(failed(&self.server, "a write failed"))
    }

    fn nights_where(&mut self, filter: &str, args: &[&(dyn ToSql + Sync)]) -> NightsResult {
        let filter = format!("machine = $1 AND {filter}");
        let query = format!(
            "SELECT id, clock, branch, tip, status, reason, reference FROM nights
             WHERE {filter} ORDER BY clock, id"
        );
        let rows = self.query(&query, args)?;
        let commits = self.query(&super::schema::commits_query(&filter), args)?;
        let mut commits = super::schema::by_night(
            commits
                .iter()
                .map(|r| {
                    let commit = NightCommit {
                        id: get(&self.server, r, 1)?,
                        subject: get(&self.server, r, 2)?,
                        committed: get(&self.server, r, 3)?,
                    };
                    Ok((get(&self.server, r, 0)?, commit))
                })
                .collect::<Result<Vec<_>, StoreError>>()?,
        );
        rows.iter()
            .map(|r| {
                let id: i64 = get(&self.server, r, 0)?;
                let status: String = get(&self.server, r, 4)?;
                Ok(Night {
                    id,
                    clock: get(&self.server, r, 1)?,
                    branch: get(&self.server, r, 2)?,
                    tip: get(&self.server, r, 3)?,
                    status: word(&self.server, "status", &status, NightStatus::parse)?,
                    reason: get(&self.server, r, 5)?,
                    reference: get(&self.server, r, 6)?,
                    commits: commits.remove(&id).unwrap_or_default(),
                })
            })
            .collect()
    }
}

type NightsResult = Result<Vec<Night>, StoreError>;

/// `postgres://user@host:port/dbname` of `config`, never its password.
/// The advisory lock key of the watcher of `machine`: FNV-1a of the
/// name, in a space of its own (the prefix), stable across versions.
fn machine_lock_key(machine: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in b"pgbisect watch\0".iter().chain(machine.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

fn describe(config: &Config) -> String {
    use postgres::config::Host;
    let user = config.get_user().map_or(String::new(), |u| format!("{u}@"));
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .zip(
            config
                .get_ports()
                .iter()
                .map(Some)
                .chain(std::iter::repeat(None)),
        )
        .map(|(h, port)| {
            let host = match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(dir) => dir.display().to_string(),
            };
            port.map_or(host.clone(), |p| format!("{host}:{p}"))
        })
        .collect();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

/// Wraps a PostgreSQL error with the server's name and what failed.
fn failed<'a>(server: &'a str, what: &'a str) -> impl Fn(postgres::Error) -> StoreError + 'a {
    move |source| StoreError::Postgres {
        server: server.to_string(),
        what: what.to_string(),
        source,
    }
}

/// Column `k` of `row`; a column of an unexpected type is an error.
fn get<'a, T: postgres::types::FromSql<'a>>(
    server: &str,
    row: &'a Row,
    k: usize,
) -> Result<T, StoreError> {
    row.try_get(k)
        .map_err(failed(server, "a stored value has an unexpected type"))
}

/// A stored count (clients, a round) back as the `u32` it was.
fn count(server: &str, row: &Row, k: usize) -> Result<u32, StoreError> {
    let n: i64 = get(server, row, k)?;
    u32::try_from(n).map_err(|_| StoreError::Unknown {
        path: server.to_string(),
        what: "count",
        value: n.to_string(),
    })
}

fn run_of(server: &str, r: &Row) -> Result<RunRow, StoreError> {
    let role: String = get(server, r, 6)?;
    Ok(RunRow {
        night: get(server, r, 0)?,
        commit: get(server, r, 1)?,
        series: get(server, r, 2)?,
        profile: get(server, r, 3)?,
        clients: count(server, r, 4)?,
        host: get(server, r, 5)?,
        role: word(server, "role", &role, Role::parse)?,
        round: count(server, r, 7)?,
        tps: get(server, r, 8)?,
        latency_avg_ms: get(server, r, 9)?,
        latency_p50_ms: get(server, r, 10)?,
        latency_p95_ms: get(server, r, 11)?,
        latency_p99_ms: get(server, r, 12)?,
        failed: get(server, r, 13)?,
        started: get(server, r, 14)?,
        seconds: get(server, r, 15)?,
        placement: get(server, r, 16)?,
        machine: get(server, r, 17)?,
    })
}

fn change_of(server: &str, r: &Row) -> Result<ChangeRow, StoreError> {
    let status: String = get(server, r, 7)?;
    let kind: String = get(server, r, 10)?;
    Ok(ChangeRow {
        id: get(server, r, 0)?,
        series: get(server, r, 1)?,
        before: get(server, r, 2)?,
        after: get(server, r, 3)?,
        pct: get(server, r, 4)?,
        low_pct: get(server, r, 5)?,
        high_pct: get(server, r, 6)?,
        status: word(server, "change status", &status, ChangeStatus::parse)?,
        first_night: get(server, r, 8)?,
        p_value: get(server, r, 9)?,
        kind: word(server, "change kind", &kind, ChangeKind::parse)?,
    })
}

fn hunt_of(server: &str, r: &Row) -> Result<ChangeHunt, StoreError> {
    Ok(ChangeHunt {
        change: get(server, r, 0)?,
        dir: get(server, r, 1)?,
        outcome: get(server, r, 2)?,
        culprit: get(server, r, 3)?,
        report: get(server, r, 4)?,
        mailed: get(server, r, 5)?,
        message_id: get(server, r, 6)?,
    })
}

impl Store for PostgresStore {
    fn night_at(&mut self, branch: &str, clock: i64) -> Result<Option<Night>, StoreError> {
        let machine = self.machine.clone();
        let found =
            self.nights_where("branch = $2 AND clock = $3", &[&machine, &branch, &clock])?;
        Ok(found.into_iter().next())
    }

    fn nights(&mut self, branch: &str) -> Result<Vec<Night>, StoreError> {
        let machine = self.machine.clone();
        self.nights_where("branch = $2", &[&machine, &branch])
    }

    fn begin_night(&mut self, night: &NewNight) -> Result<Night, StoreError> {
        let err = failed(&self.server, "cannot record the night");
        let mut tx = self.client.transaction().map_err(&err)?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO nights (machine, clock, branch, tip, status, reference)
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                &[
                    &self.machine,
                    &night.clock,
                    &night.branch,
                    &night.tip,
                    &NightStatus::Running.as_str(),
                    &night.reference,
                ],
            )
            .map_err(&err)?
            .get(0);
        for (position, c) in night.commits.iter().enumerate() {
            tx.execute(
                "INSERT INTO night_commits (night, position, commit_id, subject, committed)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&id, &(position as i64), &c.id, &c.subject, &c.committed],
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
        self.execute(
            "UPDATE nights SET status = $1, reason = $2 WHERE id = $3",
            &[&status.as_str(), &reason, &id],
        )?;
        Ok(())
    }

    fn add_run(&mut self, run: &RunRow) -> Result<bool, StoreError> {
        let added = self.execute(
            "INSERT INTO runs (night, commit_id, series, profile, clients, host, role, round,
                 tps, latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_p99_ms, failed,
                 started, seconds, placement, machine)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                 $17, $18)
             ON CONFLICT DO NOTHING",
            &[
                &run.night,
                &run.commit,
                &run.series,
                &run.profile,
                &i64::from(run.clients),
                &run.host,
                &run.role.as_str(),
                &i64::from(run.round),
                &run.tps,
                &run.latency_avg_ms,
                &run.latency_p50_ms,
                &run.latency_p95_ms,
                &run.latency_p99_ms,
                &run.failed,
                &run.started,
                &run.seconds,
                &run.placement,
                &run.machine,
            ],
        )?;
        Ok(added == 1)
    }

    fn runs(&mut self, branch: &str) -> Result<Vec<RunRow>, StoreError> {
        let machine = self.machine.clone();
        let rows = self.query(
            "SELECT r.night, r.commit_id, r.series, r.profile, r.clients, r.host, r.role,
                 r.round, r.tps, r.latency_avg_ms, r.latency_p50_ms, r.latency_p95_ms,
                 r.latency_p99_ms, r.failed, r.started, r.seconds, r.placement, r.machine
             FROM runs r JOIN nights n ON n.id = r.night
             WHERE n.machine = $1 AND n.branch = $2 ORDER BY r.id",
            &[&machine, &branch],
        )?;
        rows.iter().map(|r| run_of(&self.server, r)).collect()
    }

    fn changes(&mut self, branch: &str) -> Result<Vec<ChangeRow>, StoreError> {
        let machine = self.machine.clone();
        let rows = self.query(
            "SELECT c.id, c.series, c.before_commit, c.after_commit, c.pct, c.low_pct,
                 c.high_pct, c.status, c.first_night, c.p_value, c.kind
             FROM changes c JOIN nights n ON n.id = c.first_night
             WHERE c.machine = $1 AND n.branch = $2 ORDER BY c.id",
            &[&machine, &branch],
        )?;
        rows.iter().map(|r| change_of(&self.server, r)).collect()
    }

    fn add_change(&mut self, c: &ChangeRow) -> Result<i64, StoreError> {
        let machine = self.machine.clone();
        // Inserted unless stored, then read: a change another writer of
        // this machine's nights stored a moment ago is found, not doubled.
        self.execute(
            "INSERT INTO changes (machine, series, before_commit, after_commit, pct, low_pct,
                 high_pct, status, first_night, p_value, kind)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
            &[
                &machine,
                &c.series,
                &c.before,
                &c.after,
                &c.pct,
                &c.low_pct,
                &c.high_pct,
                &c.status.as_str(),
                &c.first_night,
                &c.p_value,
                &c.kind.as_str(),
            ],
        )?;
        let rows = self.query(
            "SELECT id FROM changes
             WHERE machine = $1 AND series = $2 AND before_commit = $3 AND after_commit = $4",
            &[&machine, &c.series, &c.before, &c.after],
        )?;
        match rows.first() {
            Some(r) => get(&self.server, r, 0),
            None => Err(StoreError::Unknown {
                path: self.server.clone(),
                what: "change",
                value: c.series.clone(),
            }),
        }
    }

    fn update_change(&mut self, c: &ChangeRow) -> Result<(), StoreError> {
        self.execute(
            "UPDATE changes SET status = $1, pct = $2, low_pct = $3, high_pct = $4
             WHERE id = $5",
            &[&c.status.as_str(), &c.pct, &c.low_pct, &c.high_pct, &c.id],
        )?;
        Ok(())
    }

    fn hunts(&mut self, branch: &str) -> Result<Vec<ChangeHunt>, StoreError> {
        let machine = self.machine.clone();
        let rows = self.query(
            "SELECT c.id, c.hunt_dir, c.hunt_outcome, c.culprit, c.report, c.mailed,
                 c.message_id
             FROM changes c JOIN nights n ON n.id = c.first_night
             WHERE c.machine = $1 AND n.branch = $2 AND c.hunt_dir IS NOT NULL ORDER BY c.id",
            &[&machine, &branch],
        )?;
        rows.iter().map(|r| hunt_of(&self.server, r)).collect()
    }

    fn digests(&mut self, branch: &str) -> Result<Vec<DigestRow>, StoreError> {
        let machine = self.machine.clone();
        let rows = self.query(
            "SELECT branch, period_start, period_end, written_at, sent_at, message_id, changes
             FROM digests WHERE machine = $1 AND branch = $2 ORDER BY period_start",
            &[&machine, &branch],
        )?;
        rows.iter()
            .map(|r| {
                Ok(DigestRow {
                    branch: get(&self.server, r, 0)?,
                    start: get(&self.server, r, 1)?,
                    end: get(&self.server, r, 2)?,
                    written: get(&self.server, r, 3)?,
                    sent: get(&self.server, r, 4)?,
                    message_id: get(&self.server, r, 5)?,
                    changes: get(&self.server, r, 6)?,
                })
            })
            .collect()
    }

    fn save_digest(&mut self, d: &DigestRow) -> Result<(), StoreError> {
        let machine = self.machine.clone();
        self.execute(
            "INSERT INTO digests (machine, branch, period_start, period_end, written_at, sent_at,
                 message_id, changes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (machine, branch, period_start) DO UPDATE SET
                 period_end = excluded.period_end, written_at = excluded.written_at,
                 sent_at = excluded.sent_at, message_id = excluded.message_id,
                 changes = excluded.changes",
            &[
                &machine,
                &d.branch,
                &d.start,
                &d.end,
                &d.written,
                &d.sent,
                &d.message_id,
                &d.changes,
            ],
        )?;
        Ok(())
    }

    fn save_hunt(&mut self, h: &ChangeHunt) -> Result<(), StoreError> {
        self.execute(
            "UPDATE changes SET hunt_dir = $1, hunt_outcome = $2, culprit = $3, report = $4,
                 mailed = $5, message_id = $6
             WHERE id = $7",
            &[
                &h.dir,
                &h.outcome,
                &h.culprit,
                &h.report,
                &h.mailed,
                &h.message_id,
                &h.change,
            ],
        )?;
        Ok(())
    }

    fn marks(&mut self, branch: &str) -> Result<Vec<ChangeMark>, StoreError> {
        let machine = self.machine.clone();
        let rows = self.query(super::marks::POSTGRES_MARKS, &[&machine, &branch])?;
        let server = &self.server;
        rows.iter()
            .map(|r| {
                let mark: String = get(server, r, 1)?;
                Ok(ChangeMark {
                    change: get(server, r, 0)?,
                    mark: word(server, "mark", &mark, Mark::parse)?,
                    why: get(server, r, 2)?,
                    marked: get(server, r, 3)?,
                })
            })
            .collect()
    }

    fn save_mark(&mut self, m: &ChangeMark) -> Result<(), StoreError> {
        self.execute(
            super::marks::POSTGRES_SAVE,
            &[&m.change, &m.mark.as_str(), &m.why, &m.marked],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_machine_has_its_own_lock_key() {
        let a = machine_lock_key("bench-1");
        assert_eq!(a, machine_lock_key("bench-1"));
        assert_ne!(a, machine_lock_key("bench-2"));
        assert_ne!(a, machine_lock_key(""));
        assert_ne!(a, MIGRATION_LOCK);
    }

    #[test]
    fn the_server_is_named_without_its_password() {
        let url: Config = "postgres://watcher:secret@db.example.org:5433/perf"
            .parse()
            .unwrap();
        assert_eq!(
            describe(&url),
            "postgres://watcher@db.example.org:5433/perf"
        );
        let kv: Config = "host=/run/postgresql port=5432 user=w password=secret dbname=perf"
            .parse()
            .unwrap();
        assert_eq!(describe(&kv), "postgres://w@/run/postgresql:5432/perf");
    }

    #[test]
    fn an_unreachable_server_is_named_with_what_to_check() {
        let err = PostgresStore::connect(
            "host=/nonexistent-pgbisect-socket-dir port=1 user=w password=secret dbname=perf",
            "m",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("postgres://w@/nonexistent-pgbisect-socket-dir:1/perf"),
            "{err}"
        );
        assert!(err.contains("is the server running"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
