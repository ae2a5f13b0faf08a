//! What the stores share: the order their migrations are applied in, the
//! reading of a stored word (a status, a role, a kind) back into its enum,
//! and the commits of many nights read at once. Each store keeps its migrations in its own SQL dialect, one list
//! each, `list[k]` bringing version `k` to `k + 1`: a new version is one
//! more entry at the end of both lists.

use super::{NightCommit, StoreError};
use std::collections::HashMap;
use std::ops::Range;

/// The migrations to apply to a database at version `found` to bring it to
/// `known` (the length of the store's list); a database written by a later
/// pgbisect is refused instead of being misread.
pub fn pending(found: i64, known: usize, at: &str) -> Result<Range<usize>, StoreError> {
    let known_version = known as i64;
    if found > known_version {
        return Err(StoreError::Newer {
            path: at.to_string(),
            found,
            known: known_version,
        });
    }
    Ok(usize::try_from(found).unwrap_or(0)..known)
}

/// `value`, a stored `what`, read back with `parse`; a word this pgbisect
/// does not know is an error naming the database `at`.
pub fn word<T>(
    at: &str,
    what: &'static str,
    value: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, StoreError> {
    parse(value).ok_or_else(|| StoreError::Unknown {
        path: at.to_string(),
        what,
        value: value.to_string(),
    })
}

/// The query that reads the commits of every night a nights query with
/// `filter` reads, in one go (`night_commits` shares no column name with
/// `nights` but `night`, so `filter` reads as it does there); rows are
/// `night, commit_id, subject, committed`, each night's in order.
pub fn commits_query(filter: &str) -> String {
    format!(
        "SELECT c.night, c.commit_id, c.subject, c.committed
         FROM night_commits c JOIN nights ON nights.id = c.night
         WHERE {filter} ORDER BY c.night, c.position"
    )
}

/// Rows of [`commits_query`] by night.
pub fn by_night(
    rows: impl IntoIterator<Item = (i64, NightCommit)>,
) -> HashMap<i64, Vec<NightCommit>> {
    let mut nights: HashMap<i64, Vec<NightCommit>> = HashMap::new();
    for (night, commit) in rows {
        nights.entry(night).or_default().push(commit);
    }
    nights
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Role;

    #[test]
    fn an_older_database_gets_the_rest_of_the_list_and_a_newer_one_is_refused() {
        assert_eq!(pending(0, 3, "db").unwrap(), 0..3);
        assert_eq!(pending(2, 3, "db").unwrap(), 2..3);
        assert_eq!(pending(3, 3, "db").unwrap(), 3..3);
        let err = pending(4, 3, "db").unwrap_err().to_string();
        assert!(err.contains("version 4, newer than the 3"), "{err}");
    }

    #[test]
    fn both_stores_know_the_same_versions() {
        assert_eq!(
            crate::store::sqlite::VERSION,
            crate::store::postgres::VERSION,
            "a migration added to one store needs its twin in the other"
        );
    }

    #[test]
    fn a_stored_word_is_read_back_or_named_unknown() {
        assert_eq!(
            word("db", "role", "reference", Role::parse).unwrap(),
            Role::Reference
        );
        let err = word("db", "role", "judge", Role::parse).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the results database db holds an unknown role `judge`"
        );
    }
}
