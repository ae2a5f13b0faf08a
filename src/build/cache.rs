//! The install cache: one finished install per commit and settings, kept
//! across pgbisect processes, bounded by count, least recently used first
//! out.
//!
//! An install is `<work_dir>/installs/<commit>-<key>/`. Its stamp
//! (`.pgbisect-build.json`) is written last, so a directory without one is
//! an interrupted install and is never trusted; `.pgbisect-last-used` holds
//! the time of the last use and orders eviction.

use super::BuildError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Written last into a finished install.
pub const STAMP_FILE: &str = ".pgbisect-build.json";
/// Rewritten on every use; its content (nanoseconds since the epoch) orders eviction.
pub const LAST_USED_FILE: &str = ".pgbisect-last-used";

/// What the stamp of a finished install records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    pub commit: String,
    /// Fingerprint of the settings and fixups the install was built with.
    pub settings_hash: String,
    /// Wall time of the build (configure, make, install).
    pub seconds: f64,
    /// When it was built, seconds since the Unix epoch.
    pub built_unix: u64,
    /// What `postgres --version` printed.
    pub version: String,
}

/// Finished installs under one directory.
#[derive(Debug)]
pub(crate) struct InstallCache {
    root: PathBuf,
    limit: usize,
    pinned: HashSet<String>,
}

impl InstallCache {
    /// `limit` installs are kept (at least one: the one just made).
    pub(crate) fn open(root: &Path, limit: usize) -> Result<InstallCache, BuildError> {
        crate::folders::create_dir(root).map_err(BuildError::io("create", root))?;
        Ok(InstallCache {
            root: root.to_path_buf(),
            limit: limit.max(1),
            pinned: HashSet::new(),
        })
    }

    /// Where the install of `commit` with settings `key` lives.
    pub(crate) fn dir(&self, commit: &str, key: &str) -> PathBuf {
        self.root.join(format!("{commit}-{key}"))
    }

    /// Installs of `commit` are never evicted by this cache.
    pub(crate) fn pin(&mut self, commit: &str) {
        self.pinned.insert(commit.to_string());
    }

    /// The finished install of `commit` with `key`, marked as just used.
    pub(crate) fn lookup(&self, commit: &str, key: &str) -> Option<PathBuf> {
        let dir = self.dir(commit, key);
        read_stamp(&dir)?;
        if !dir.join("bin/postgres").is_file() {
            return None;
        }
        // A cache that cannot record a use still serves the install.
        let _ = touch(&dir);
        Some(dir)
    }

    /// Moves a staged install into place and returns its directory; the
    /// stamp is written later by [`InstallCache::seal`].
    pub(crate) fn adopt(
        &self,
        staged: &Path,
        commit: &str,
        key: &str,
    ) -> Result<PathBuf, BuildError> {
        let dir = self.dir(commit, key);
        remove_dir_if_present(&dir)?;
        fs::rename(staged, &dir).map_err(BuildError::io("move the staged install to", &dir))?;
        Ok(dir)
    }

    /// Marks `dir` finished (stamp last) and evicts beyond the limit.
    pub(crate) fn seal(&self, dir: &Path, stamp: &Stamp) -> Result<Vec<PathBuf>, BuildError> {
        touch(dir)?;
        let path = dir.join(STAMP_FILE);
        let text = serde_json::to_string_pretty(stamp).map_err(|e| BuildError::Io {
            action: "encode the stamp".into(),
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        crate::files::write(&path, text).map_err(BuildError::io("write", &path))?;
        self.evict(dir)
    }

    /// Removes interrupted installs, then the least recently used finished
    /// ones beyond the limit; `keep` and pinned commits stay. Returns what
    /// was removed.
    pub(crate) fn evict(&self, keep: &Path) -> Result<Vec<PathBuf>, BuildError> {
        let entries = fs::read_dir(&self.root).map_err(BuildError::io("list", &self.root))?;
        let mut removed = Vec::new();
        let mut finished: Vec<(u128, PathBuf)> = Vec::new();
        for entry in entries {
            let path = entry.map_err(BuildError::io("list", &self.root))?.path();
            if !path.is_dir() || path == keep {
                continue;
            }
            match read_stamp(&path) {
                None => {
                    remove_dir_if_present(&path)?;
                    removed.push(path);
                }
                Some(stamp) if self.pinned.contains(&stamp.commit) => {}
                Some(_) => finished.push((last_used(&path), path)),
            }
        }
        // Newest first; `keep` already takes one place.
        finished.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        for (_, path) in finished.into_iter().skip(self.limit - 1) {
            remove_dir_if_present(&path)?;
            removed.push(path);
        }
        Ok(removed)
    }
}

/// The stamp of a finished install, `None` when missing or unreadable.
pub fn read_stamp(dir: &Path) -> Option<Stamp> {
    let text = fs::read_to_string(dir.join(STAMP_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn touch(dir: &Path) -> Result<(), BuildError> {
    let path = dir.join(LAST_USED_FILE);
    // Never go back in time, even when two uses fall in one clock tick.
    let stamp = now_nanos().max(last_used(dir) + 1);
    crate::files::write(&path, stamp.to_string()).map_err(BuildError::io("write", &path))
}

/// When an install was last used: the last-used file, else its stamp's age.
fn last_used(dir: &Path) -> u128 {
    let recorded = fs::read_to_string(dir.join(LAST_USED_FILE))
        .ok()
        .and_then(|t| t.trim().parse::<u128>().ok());
    recorded.unwrap_or_else(|| {
        fs::metadata(dir.join(STAMP_FILE))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos())
    })
}

pub(crate) fn remove_dir_if_present(dir: &Path) -> Result<(), BuildError> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BuildError::io("remove", dir)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_install(cache: &InstallCache, commit: &str) -> PathBuf {
        let staged = cache.root.join(format!("stage-{commit}"));
        fs::create_dir_all(staged.join("bin")).unwrap();
        fs::write(staged.join("bin/postgres"), "").unwrap();
        let dir = cache.adopt(&staged, commit, "k").unwrap();
        let stamp = Stamp {
            commit: commit.into(),
            settings_hash: "k".into(),
            seconds: 1.0,
            built_unix: 0,
            version: "postgres (PostgreSQL) 15".into(),
        };
        cache.seal(&dir, &stamp).unwrap();
        dir
    }

    #[test]
    fn lookup_needs_a_stamp() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = InstallCache::open(tmp.path(), 5).unwrap();
        let dir = cache.dir("abc", "k");
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::write(dir.join("bin/postgres"), "").unwrap();
        assert_eq!(cache.lookup("abc", "k"), None, "no stamp: incomplete");
        let made = fake_install(&cache, "abc");
        assert_eq!(cache.lookup("abc", "k"), Some(made));
        assert_eq!(cache.lookup("abc", "other"), None);
    }

    #[test]
    fn limit_one_keeps_only_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = InstallCache::open(tmp.path(), 1).unwrap();
        let a = fake_install(&cache, "aaa");
        let b = fake_install(&cache, "bbb");
        assert!(!a.exists(), "the older install is evicted");
        assert!(b.exists());
        assert_eq!(cache.lookup("aaa", "k"), None);
    }

    #[test]
    fn least_recently_used_goes_first() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = InstallCache::open(tmp.path(), 2).unwrap();
        let a = fake_install(&cache, "aaa");
        let b = fake_install(&cache, "bbb");
        // Using `aaa` again makes `bbb` the least recently used.
        assert!(cache.lookup("aaa", "k").is_some());
        let c = fake_install(&cache, "ccc");
        assert!(a.exists() && c.exists());
        assert!(!b.exists());
    }

    #[test]
    fn pinned_commits_and_interrupted_installs() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cache = InstallCache::open(tmp.path(), 1).unwrap();
        cache.pin("aaa");
        let a = fake_install(&cache, "aaa");
        let half = cache.dir("zzz", "k");
        fs::create_dir_all(&half).unwrap();
        let b = fake_install(&cache, "bbb");
        assert!(a.exists(), "pinned");
        assert!(b.exists());
        assert!(!half.exists(), "an install without a stamp is removed");
    }
}
