//! One hunt at a time per work dir.
//!
//! The private checkout and the build tree in a work dir serve one hunt at
//! a time, so a second pgbisect on the same work dir is refused with the
//! holder's pid; a lock left by a process that no longer exists (a crash,
//! `kill -9`, a reboot) is taken over.

use crate::server::process_start_time;
use anyhow::Context;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Another live pgbisect holds the work dir.
#[derive(Debug, thiserror::Error)]
#[error(
    "another pgbisect (pid {pid}) is using the work dir {dir}\n\
     hint: wait for it to finish, or pass another --work-dir"
)]
pub struct Busy {
    pub pid: u32,
    pub dir: PathBuf,
}

/// Held while a command works in a work dir; released on drop.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Takes the lock of `dir`, taking over a stale one.
    pub fn acquire(dir: &Path) -> anyhow::Result<Lock> {
        let path = dir.join("lock");
        for _ in 0..3 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    let me = std::process::id();
                    let started = process_start_time(me).unwrap_or_default();
                    write!(f, "{me} {started}")
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    crate::proc::remove_at_forced_exit(path.clone());
                    return Ok(Lock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path).unwrap_or_default();
                    match live_holder(&holder) {
                        Some(pid) if pid != std::process::id() => {
                            return Err(Busy {
                                pid,
                                dir: dir.to_path_buf(),
                            }
                            .into());
                        }
                        _ => {
                            // Stale (a dead holder, or its pid now another
                            // process's) or half-written: take it over.
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("cannot create the lock {}", path.display()));
                }
            }
        }
        anyhow::bail!(
            "cannot take the lock {}: it keeps reappearing",
            path.display()
        )
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        crate::proc::keep_at_forced_exit(&self.path);
    }
}

/// The pid of the lock's holder if that process still runs: `PID START`
/// (start time, see [`process_start_time`]) names one process; a bare
/// `PID` (locks of earlier releases) any process with that pid.
fn live_holder(text: &str) -> Option<u32> {
    let mut words = text.split_whitespace();
    let pid: u32 = words.next()?.parse().ok()?;
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return None;
    }
    match words.next().and_then(|w| w.parse::<u64>().ok()) {
        Some(started) if started != 0 => (process_start_time(pid) == Some(started)).then_some(pid),
        _ => Some(pid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_and_stale_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        // Our own pid counts as a re-entry, so fake a live holder: pid 1.
        std::fs::write(dir.path().join("lock"), "1").unwrap();
        let err = Lock::acquire(dir.path()).unwrap_err();
        assert!(err.to_string().contains("pid 1"), "{err}");
        std::fs::write(dir.path().join("lock"), "999999999").unwrap();
        let again = Lock::acquire(dir.path()).unwrap();
        drop(again);
        assert!(!dir.path().join("lock").exists());
        drop(lock);
    }

    #[test]
    fn a_lock_whose_pid_now_belongs_to_another_process_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let init_started = process_start_time(1).unwrap_or(1);
        // pid 1 as it really started: held.
        std::fs::write(dir.path().join("lock"), format!("1 {init_started}")).unwrap();
        assert!(Lock::acquire(dir.path()).is_err());
        // pid 1, but a process that started at another time: stale.
        std::fs::write(dir.path().join("lock"), format!("1 {}", init_started + 1)).unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("lock")).unwrap();
        assert!(
            text.starts_with(&format!("{} ", std::process::id())),
            "{text}"
        );
        drop(lock);
    }
}
