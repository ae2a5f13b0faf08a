//! A person's word on a change (`pgbisect watch mark`): the change was
//! meant (a feature's cost, say), or is not a real change at all.
//!
//! The watcher cannot tell a drop somebody paid for on purpose from one
//! nobody wanted: both are confirmed side by side, and both would stay
//! red on the site and in every digest for ever. A mark is kept beside
//! the change (the `change_marks` table, schema version 5), one per
//! change, with why and when; marking again replaces it. The site shows
//! the mark and the why, and the digest leaves a marked change out of
//! its slower list.
//!
//! This module holds the mark and its SQL in both dialects; the stores
//! run the statements (SQLite here, PostgreSQL in [`super::postgres`]).

use serde::{Deserialize, Serialize};

/// What a person said of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// A real change that was meant: a feature's cost, a trade-off.
    Intended,
    /// Not a real change: the machine, the benchmark, a fluke.
    Wrong,
}

impl Mark {
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::Intended => "intended",
            Mark::Wrong => "wrong",
        }
    }

    pub fn parse(text: &str) -> Option<Mark> {
        [Mark::Intended, Mark::Wrong]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// The mark of one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeMark {
    /// The change's id (its number on the site and in the digest).
    pub change: i64,
    pub mark: Mark,
    /// Why, in the marker's words.
    pub why: String,
    /// When it was marked (seconds since the epoch).
    pub marked: i64,
}

/// The marks of `branch`'s changes in the SQLite store, by change id.
pub(super) fn sqlite_marks(
    conn: &rusqlite::Connection,
    branch: &str,
) -> rusqlite::Result<Vec<(ChangeMark, String)>> {
    let mut stmt = conn.prepare(
        "SELECT m.change_id, m.mark, m.why, m.marked_at
         FROM change_marks m JOIN changes c ON c.id = m.change_id
             JOIN nights n ON n.id = c.first_night
         WHERE n.branch = ?1 ORDER BY m.change_id",
    )?;
    let rows = stmt.query_map([branch], |r| {
        let mark = ChangeMark {
            change: r.get(0)?,
            mark: Mark::Intended,
            why: r.get(2)?,
            marked: r.get(3)?,
        };
        Ok((mark, r.get::<_, String>(1)?))
    })?;
    rows.collect()
}

/// Keeps `m` in the SQLite store, replacing its change's mark.
pub(super) fn sqlite_save(conn: &rusqlite::Connection, m: &ChangeMark) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO change_marks (change_id, mark, why, marked_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (change_id) DO UPDATE SET mark = excluded.mark, why = excluded.why,
             marked_at = excluded.marked_at",
        rusqlite::params![m.change, m.mark.as_str(), m.why, m.marked],
    )?;
    Ok(())
}

/// The marks of one machine's (`$1`) changes of a branch (`$2`) in the
/// PostgreSQL store: change id, mark, why, when.
pub(super) const POSTGRES_MARKS: &str = "SELECT m.change_id, m.mark, m.why, m.marked_at
     FROM change_marks m JOIN changes c ON c.id = m.change_id
         JOIN nights n ON n.id = c.first_night
     WHERE c.machine = $1 AND n.branch = $2 ORDER BY m.change_id";

/// Keeps a mark (change id, mark, why, when) in the PostgreSQL store,
/// replacing its change's.
pub(super) const POSTGRES_SAVE: &str =
    "INSERT INTO change_marks (change_id, mark, why, marked_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (change_id) DO UPDATE SET mark = excluded.mark, why = excluded.why,
         marked_at = excluded.marked_at";

#[cfg(test)]
mod tests {
    use super::super::sqlite::{FILE, SqliteStore};
    use super::super::{Store, conformance};
    use super::*;

    #[test]
    fn a_mark_is_read_back_by_its_word() {
        for m in [Mark::Intended, Mark::Wrong] {
            assert_eq!(Mark::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mark::parse("meant"), None);
    }

    #[test]
    fn a_mark_is_kept_replaced_and_seen_by_its_branch_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut open = || -> Box<dyn Store> { Box::new(SqliteStore::open(&path).unwrap()) };
        conformance::a_mark_is_kept_and_replaced(&mut open);
    }

    /// A file of the version before the marks keeps them once opened
    /// (its tables are then a new file's: see the SQLite store's tests).
    #[test]
    fn a_version_4_file_keeps_marks_once_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        conformance::sqlite_file_at_version(&path, 4);
        let mut open = || -> Box<dyn Store> { Box::new(SqliteStore::open(&path).unwrap()) };
        conformance::a_mark_is_kept_and_replaced(&mut open);
    }
}
