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
    Postgres {
        /// The connection string, as given.
        conninfo: String,
        /// The machine whose nights are read and written; `None`: the
        /// one `open` is given (this machine's).
        machine: Option<String>,
    },
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
        (url || key_value).then(|| StoreAt::Postgres {
            conninfo: text.to_string(),
            machine: None,
        })
    }

    /// The same store, read and written as machine `name` when it is a
    /// database shared by several (a SQLite file is one machine's).
    pub fn as_machine(self, name: Option<String>) -> StoreAt {
        match self {
            StoreAt::Postgres { conninfo, machine } => StoreAt::Postgres {
                conninfo,
                machine: name.or(machine),
            },
            sqlite => sqlite,
        }
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
            StoreAt::Postgres { .. } => true,
        }
    }

    /// Opens the store, its schema brought up to date; in a database,
    /// the nights of the machine named, else of `this_machine`.
    pub fn open(&self, this_machine: &str) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            StoreAt::Sqlite(path) => Box::new(SqliteStore::open(path)?),
            StoreAt::Postgres { .. } => Box::new(self.connect(this_machine)?),
        })
    }

    /// [`StoreAt::open`] for the watcher: one watcher per store (per
    /// machine, in a database) at a time, until the store is dropped;
    /// another one holding it is [`StoreError::Busy`].
    pub fn open_watcher(&self, this_machine: &str) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            StoreAt::Sqlite(path) => Box::new(SqliteStore::open_exclusive(path)?),
            StoreAt::Postgres { .. } => {
                let mut store = self.connect(this_machine)?;
                store.lock_machine()?;
                Box::new(store)
            }
        })
    }

    fn connect(&self, this_machine: &str) -> Result<PostgresStore, StoreError> {
        let (conninfo, machine) = match self {
            StoreAt::Postgres { conninfo, machine } => (conninfo, machine.as_deref()),
            StoreAt::Sqlite(path) => {
                return Err(StoreError::Connection {
                    server: path.display().to_string(),
                    what: "a SQLite file is not a PostgreSQL database".into(),
                });
            }
        };
        PostgresStore::connect(conninfo, machine.unwrap_or(this_machine))
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
            let at = StoreAt::Postgres {
                conninfo: pg.into(),
                machine: None,
            };
            assert_eq!(StoreAt::parse(pg), Some(at.clone()));
            let named = at.as_machine(Some("bench-2".into()));
            assert!(matches!(named, StoreAt::Postgres { machine: Some(m), .. } if m == "bench-2"));
        }
        for neither in ["", "sqlite:", "mysql://db/perf", "watch.sqlite"] {
            assert_eq!(StoreAt::parse(neither), None, "{neither}");
        }
    }
}
