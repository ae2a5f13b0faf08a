//! The run lengths counted runs were fitted to, kept in the work dir.
//!
//! A counted run's short and long pgbench runs are fitted to how long a
//! transaction takes under the counter ([`Lengths::fitted`]), and a timing
//! is never the same twice. Two counted runs of one workload compare only
//! when the transactions between their short and long runs are the same
//! ones (drawn from the same seed): a weighted mix of a cheap script and a
//! dear one counts tens of percent apart otherwise. So the first fit of a
//! workload is written to `counted-lengths.json` in the work dir, and
//! every later lab there takes it: the hunt that follows `--measure
//! auto`'s choice, a hunt resumed after Ctrl-C, the watcher's next night.

use crate::bench::PgbenchOptions;
use crate::core::counts::{FIT_RULE, Lengths};
use crate::core::fingerprint::{digest, fingerprint};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The name of the file in the work dir.
pub const FILE: &str = "counted-lengths.json";

/// The fits of one work dir, read from its file the first time one is
/// asked for; without a file (a lab of tests), kept in memory only.
#[derive(Debug, Default)]
pub struct Fits {
    file: Option<PathBuf>,
    known: Option<BTreeMap<String, Lengths>>,
}

impl Fits {
    /// Fits kept in `file`.
    pub fn kept_in(file: PathBuf) -> Fits {
        Fits {
            file: Some(file),
            known: None,
        }
    }

    /// The lengths `key`'s workload was fitted to, if it was.
    pub fn get(&mut self, key: &str) -> anyhow::Result<Option<Lengths>> {
        Ok(self.known()?.get(key).copied())
    }

    /// Keeps `fitted` as `key`'s lengths, written to the file at once.
    pub fn keep(&mut self, key: String, fitted: Lengths) -> anyhow::Result<()> {
        let known = self.known()?;
        known.insert(key, fitted);
        let body = serde_json::to_string_pretty(known).context("cannot encode run lengths")?;
        match &self.file {
            Some(file) => crate::files::write_file(file, &body),
            None => Ok(()),
        }
    }

    fn known(&mut self) -> anyhow::Result<&mut BTreeMap<String, Lengths>> {
        let known = match (self.known.take(), &self.file) {
            (Some(known), _) => known,
            (None, Some(file)) => read(file)?,
            (None, None) => BTreeMap::new(),
        };
        Ok(self.known.insert(known))
    }
}

fn read(file: &std::path::Path) -> anyhow::Result<BTreeMap<String, Lengths>> {
    let Some(body) =
        crate::files::read_own(file).with_context(|| format!("cannot read {}", file.display()))?
    else {
        return Ok(BTreeMap::new());
    };
    serde_json::from_slice(&body).with_context(|| {
        format!(
            "{} is not the run lengths pgbisect wrote: remove it, and the next counted run \
             fits them again (counts made before then may not compare with later ones)",
            file.display()
        )
    })
}

/// What names a workload's fit: its pgbench options (scripts, weights,
/// mode, the set-up SQL's text), the client count, the lengths given and
/// the rule that fits them ([`FIT_RULE`]).
pub fn key(options: &PgbenchOptions, clients: u32, given: Lengths) -> String {
    let setup = options.setup_sql.as_deref().map(digest).unwrap_or_default();
    let text = serde_json::json!({
        "options": options,
        "setup": setup,
        "clients": clients,
        "given": given,
        "rule": FIT_RULE,
    });
    format!("c{clients}-{}", fingerprint(&text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIVEN: Lengths = Lengths {
        warmup: 200,
        short: 200,
        long: 1200,
    };
    const FITTED: Lengths = Lengths {
        warmup: 200,
        short: 10,
        long: 60,
    };

    #[test]
    fn a_fit_kept_is_read_back_by_the_next_lab_of_the_work_dir() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        let options = PgbenchOptions::default();
        let mut first = Fits::kept_in(file.clone());
        assert_eq!(first.get(&key(&options, 1, GIVEN)).unwrap(), None);
        first.keep(key(&options, 1, GIVEN), FITTED).unwrap();
        let mut next = Fits::kept_in(file);
        assert_eq!(next.get(&key(&options, 1, GIVEN)).unwrap(), Some(FITTED));
        assert_eq!(next.get(&key(&options, 8, GIVEN)).unwrap(), None);
    }

    #[test]
    fn another_workload_or_set_up_is_fitted_on_its_own() {
        let options = PgbenchOptions::default();
        let other_sql = PgbenchOptions {
            setup_sql: Some(b"CREATE TABLE t (i int);".to_vec()),
            ..PgbenchOptions::default()
        };
        let longer = Lengths {
            long: 2400,
            ..GIVEN
        };
        let base = key(&options, 1, GIVEN);
        assert_eq!(base, key(&options, 1, GIVEN));
        assert_ne!(base, key(&other_sql, 1, GIVEN));
        assert_ne!(base, key(&options, 1, longer));
        assert_ne!(base, key(&options, 2, GIVEN));
    }

    #[test]
    fn a_file_that_is_not_lengths_is_an_error_saying_to_remove_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        std::fs::write(&file, "not json").unwrap();
        let err = Fits::kept_in(file).get("c1-x").unwrap_err();
        assert!(format!("{err:#}").contains("remove it"), "{err:#}");
    }

    #[test]
    fn a_link_planted_in_its_place_is_not_read_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, "{}").unwrap();
        let file = dir.path().join(FILE);
        std::os::unix::fs::symlink(&target, &file).unwrap();
        assert!(Fits::kept_in(file.clone()).get("c1-x").is_err());
        assert!(Fits::kept_in(file).keep("c1-x".into(), FITTED).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
    }
}
