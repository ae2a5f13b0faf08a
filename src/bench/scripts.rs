//! Weighted pgbench scripts: `-f FILE@WEIGHT`, several in one run.
//!
//! pgbench picks one of the scripts for each transaction, in proportion to
//! their weights (9.6 and later read `@WEIGHT`). A profile writes them as
//! pgbench takes them: `scripts = ["lookup.sql@9", "insert.sql@1"]`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// One script of a mix, and its weight (pgbench's default, 1, when none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WeightedScript {
    pub path: PathBuf,
    pub weight: Option<u32>,
}

/// A script entry that is not `FILE` or `FILE@WEIGHT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    #[error("a script entry is empty: give `FILE` or `FILE@WEIGHT`, e.g. \"lookup.sql@9\"")]
    Empty,
    #[error(
        "the weight of `{entry}` is not a whole number from 1 to 65535: write it `FILE@WEIGHT`, e.g. \"lookup.sql@9\""
    )]
    BadWeight { entry: String },
}

impl WeightedScript {
    /// Reads `FILE` or `FILE@WEIGHT`. A file name with an `@` in it and no
    /// weight cannot be written here (pgbench would misread it too).
    pub fn parse(entry: &str) -> Result<WeightedScript, ScriptError> {
        let (path, weight) = match entry.rsplit_once('@') {
            Some((path, weight)) => {
                let weight = weight
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|w| (1..=65535).contains(w))
                    .ok_or_else(|| ScriptError::BadWeight {
                        entry: entry.to_string(),
                    })?;
                (path, Some(weight))
            }
            None => (entry, None),
        };
        if path.trim().is_empty() {
            return Err(ScriptError::Empty);
        }
        Ok(WeightedScript {
            path: PathBuf::from(path),
            weight,
        })
    }

    /// The argument after `-f`, the path made absolute (pgbench runs in
    /// another working directory).
    pub fn arg(&self) -> String {
        let path = std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone());
        match self.weight {
            Some(w) => format!("{}@{w}", path.display()),
            None => path.display().to_string(),
        }
    }
}

impl fmt::Display for WeightedScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.weight {
            Some(w) => write!(f, "{}@{w}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

impl TryFrom<String> for WeightedScript {
    type Error = ScriptError;
    fn try_from(entry: String) -> Result<Self, Self::Error> {
        WeightedScript::parse(&entry)
    }
}

impl From<WeightedScript> for String {
    fn from(s: WeightedScript) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_pgbench_takes_them() {
        let s = WeightedScript::parse("lookup.sql@9").unwrap();
        assert_eq!(s.path, PathBuf::from("lookup.sql"));
        assert_eq!(s.weight, Some(9));
        assert_eq!(s.to_string(), "lookup.sql@9");
        let plain = WeightedScript::parse("dir/insert.sql").unwrap();
        assert_eq!(plain.weight, None);
        assert_eq!(plain.to_string(), "dir/insert.sql");
    }

    #[test]
    fn bad_entries_say_what_is_wanted() {
        for bad in ["a.sql@", "a.sql@0", "a.sql@x", "a.sql@-2", "a.sql@70000"] {
            let err = WeightedScript::parse(bad).unwrap_err().to_string();
            assert!(err.contains("FILE@WEIGHT"), "{bad}: {err}");
        }
        assert_eq!(WeightedScript::parse("@3"), Err(ScriptError::Empty));
        assert_eq!(WeightedScript::parse(""), Err(ScriptError::Empty));
    }

    #[test]
    fn args_are_absolute_and_keep_the_weight() {
        let s = WeightedScript::parse("w/lookup.sql@9").unwrap();
        let arg = s.arg();
        assert!(arg.starts_with('/'), "{arg}");
        assert!(arg.ends_with("w/lookup.sql@9"), "{arg}");
    }
}
