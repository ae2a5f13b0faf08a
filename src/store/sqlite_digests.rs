//! The digest periods in the SQLite store (the `digests` table, schema
//! version 4): one row a branch and period start.

use super::DigestRow;
use rusqlite::{Connection, params};

/// The periods of `branch`, oldest start first.
pub(super) fn digests(conn: &Connection, branch: &str) -> rusqlite::Result<Vec<DigestRow>> {
    let mut stmt = conn.prepare(
        "SELECT branch, period_start, period_end, written_at, sent_at, message_id, changes
         FROM digests WHERE branch = ?1 ORDER BY period_start",
    )?;
    let rows = stmt.query_map([branch], |r| {
        let changes: String = r.get(6)?;
        Ok(DigestRow {
            branch: r.get(0)?,
            start: r.get(1)?,
            end: r.get(2)?,
            written: r.get(3)?,
            sent: r.get(4)?,
            message_id: r.get(5)?,
            changes: changes
                .split(',')
                .filter_map(|id| id.trim().parse().ok())
                .collect(),
        })
    })?;
    rows.collect()
}

/// Keeps `d`, replacing the row of its branch and start.
pub(super) fn save(conn: &Connection, d: &DigestRow) -> rusqlite::Result<()> {
    let ids: Vec<String> = d.changes.iter().map(i64::to_string).collect();
    let ids = ids.join(",");
    conn.execute(
        "INSERT INTO digests (branch, period_start, period_end, written_at, sent_at, message_id,
             changes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (branch, period_start) DO UPDATE SET period_end = excluded.period_end,
             written_at = excluded.written_at, sent_at = excluded.sent_at,
             message_id = excluded.message_id, changes = excluded.changes",
        params![
            d.branch,
            d.start,
            d.end,
            d.written,
            d.sent,
            d.message_id,
            ids
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::sqlite::{FILE, SqliteStore, VERSION};
    use super::super::{Store, conformance};
    use super::*;

    #[test]
    fn a_version_3_file_gains_the_digests_and_keeps_its_nights() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        conformance::sqlite_file_at_version(&path, 3);
        let mut store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.nights("master").unwrap().len(), 1);
        drop(store);
        let mut open = || -> Box<dyn Store> { Box::new(SqliteStore::open(&path).unwrap()) };
        conformance::a_digest_period_is_kept_once_and_updated(&mut open);
        let version: i64 = Connection::open(&path)
            .unwrap()
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, VERSION);
    }
}
