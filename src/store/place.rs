//! Where the results are kept, as `--store` names it: a SQLite file
//! (`sqlite:PATH`, the default being `watch.sqlite` in the work dir) or a
//! PostgreSQL database (`postgres://user@host:port/db`, or a libpq
//! `key=value` string).

use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use super::{Store, StoreError};
use std::path::{Path, PathBuf};

/// A store named by `--store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreAt {
    Sqlite(PathBuf),
    /// The connection string, as given.
    Postgres(String),
}

impl StoreAt {
    /// Reads `--store`; `None` when it names neither kind.
    pub fn parse(text: &str) -> Option<StoreAt> {
        let text = text.trim();
        if let Some(path) = text.strip_prefix("sqlite:") {
            return (!path.is_empty()).then(|| StoreAt::Sqlite(PathBuf::from(path)));
        }
        let url = ["postgres://", "postgresql://"]
            .iter()
            .any(|p| text.starts_with(p));
        let key_value = !text.contains("://") && text.contains('=');
        (url || key_value).then(|| StoreAt::Postgres(text.to_string()))
    }

    /// The default: `watch.sqlite` in the work dir `root`.
    pub fn in_work_dir(root: &Path) -> StoreAt {
        StoreAt::Sqlite(root.join(super::sqlite::FILE))
    }

    /// Whether there may be results to read: a SQLite file that is not
    /// there holds none; a database is asked.
    pub fn may_hold_results(&self) -> bool {
        match self {
            StoreAt::Sqlite(path) => path.exists(),
            StoreAt::Postgres(_) => true,
        }
    }

    /// Opens the store, its schema brought up to date; in a database,
    /// the nights of `machine`.
    pub fn open(&self, machine: &str) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            StoreAt::Sqlite(path) => Box::new(SqliteStore::open(path)?),
            StoreAt::Postgres(conninfo) => Box::new(PostgresStore::connect(conninfo, machine)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_named_by_its_kind() {
        assert_eq!(
            StoreAt::parse("sqlite:/srv/w/watch.sqlite"),
            Some(StoreAt::Sqlite("/srv/w/watch.sqlite".into()))
        );
        for pg in [
            "postgres://watcher@db:5432/perf",
            "postgresql://db/perf",
            "host=db user=watcher dbname=perf",
        ] {
            assert_eq!(StoreAt::parse(pg), Some(StoreAt::Postgres(pg.into())));
        }
        for neither in ["", "sqlite:", "mysql://db/perf", "watch.sqlite"] {
            assert_eq!(StoreAt::parse(neither), None, "{neither}");
        }
    }
}
