//! One hunt at a time per work dir.
//!
//! The private checkout and the build tree in a work dir serve one hunt at
//! a time, so a second pgbisect on the same work dir is refused, naming
//! what holds it. The lock is an `flock(2)` on the work dir's `lock` file,
//! held for the command's life: taking it is one atomic step (two
//! pgbisects started at the same moment cannot both get it), and the
//! kernel lets go of it when its holder ends however it ends (a crash,
//! `kill -9`, a reboot), so there is no stale lock to take over. The
//! file's text (`PID START`) only tells who holds it.

use crate::server::process_start_time;
use anyhow::Context;
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Another live process holds the work dir.
#[derive(Debug, thiserror::Error)]
#[error("{}\nhint: wait for it to finish, or pass another --work-dir", self.holder.said(&self.dir))]
pub struct Busy {
    pub holder: Holder,
    pub dir: PathBuf,
}

/// What holds a work dir's lock, as far as it can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A pgbisect: the lock's text names the process holding it.
    Pgbisect { pid: u32 },
    /// A process that is not pgbisect (`flock lock sleep 60`), by its name.
    Other { pid: u32, name: String },
    /// A process the kernel does not name (another mount namespace).
    Unknown,
}

impl Holder {
    fn said(&self, dir: &Path) -> String {
        let dir = dir.display();
        match self {
            Holder::Pgbisect { pid } => {
                format!("another pgbisect (pid {pid}) is using the work dir {dir}")
            }
            Holder::Other { pid, name } => format!(
                "the work dir {dir} is locked by process {pid} (`{name}`), which is not a \
                 pgbisect: it holds {dir}/lock with flock(2)"
            ),
            Holder::Unknown => format!(
                "the work dir {dir} is locked by another process: it holds {dir}/lock with \
                 flock(2)"
            ),
        }
    }
}

impl Holder {
    /// `pgbisect, pid 1234`: who it is, for a line about what it holds.
    pub fn who(&self) -> String {
        match self {
            Holder::Pgbisect { pid } => format!("pgbisect, pid {pid}"),
            Holder::Other { pid, name } => format!("process {pid}, `{name}`"),
            Holder::Unknown => "another process".into(),
        }
    }
}

/// What holds the lock of the work dir `dir` now, if anything: read from
/// `/proc/locks` without taking the lock (so a hunt starting at the same
/// moment is never turned away) and without making the lock file.
pub fn holder_of(dir: &Path) -> Option<Holder> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join("lock"))
        .ok()?;
    holder(&file)
}

/// Held while a command works in a work dir; released on drop.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    /// Holds the flock; closed after the file is removed.
    _file: File,
}

impl Lock {
    /// Takes the lock of `dir`, or says what holds it.
    pub fn acquire(dir: &Path) -> anyhow::Result<Lock> {
        let path = dir.join("lock");
        for _ in 0..10 {
            let mut file = open(&path)?;
            // SAFETY: flock only acts on the descriptor, which `file` owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(err).with_context(|| format!("cannot lock {}", path.display()));
                }
                let holder = holder(&file).unwrap_or(Holder::Unknown);
                return Err(Busy {
                    holder,
                    dir: dir.to_path_buf(),
                }
                .into());
            }
            // The holder that let go just now removed the file first: the
            // lock taken is on a file no longer in the work dir.
            if !same_file(&file, &path) {
                continue;
            }
            let me = std::process::id();
            let started = process_start_time(me).unwrap_or_default();
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| write!(file, "{me} {started}"))
                .with_context(|| format!("cannot write {}", path.display()))?;
            crate::proc::remove_at_forced_exit(path.clone());
            return Ok(Lock { path, _file: file });
        }
        anyhow::bail!(
            "cannot take the lock {}: it keeps being removed",
            path.display()
        )
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while still held, so that no one locks the removed file
        // unawares (see `same_file`).
        let _ = std::fs::remove_file(&self.path);
        crate::proc::keep_at_forced_exit(&self.path);
    }
}

/// Opens the lock file, making it if needed; a link or a file of another
/// user planted there is refused.
fn open(path: &Path) -> anyhow::Result<File> {
    let file = crate::files::open_own(path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
    Ok(file)
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Who holds the flock on `file`, from `/proc/locks`.
fn holder(file: &File) -> Option<Holder> {
    let pid = crate::proc::flock_pid(file)?;
    // A pgbisect writes its text just after it took the lock: give it a
    // moment.
    for _ in 0..25 {
        let text = std::fs::read_to_string(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if text.is_ok_and(|t| names(&t, pid)) {
            return Some(Holder::Pgbisect { pid });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    Some(Holder::Other { pid, name })
}

/// Whether the lock's text `PID START` names the live process `pid` (the
/// start time, see [`process_start_time`], tells it from a process that
/// got the same pid later).
fn names(text: &str, pid: u32) -> bool {
    let mut words = text.split_whitespace();
    let named = words.next().and_then(|w| w.parse::<u32>().ok());
    let started = words.next().and_then(|w| w.parse::<u64>().ok());
    named == Some(pid) && started.is_some_and(|s| process_start_time(pid) == Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_without_taking_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            holder_of(dir.path()),
            None,
            "no lock file: nothing holds it"
        );
        let lock = Lock::acquire(dir.path()).unwrap();
        let me = std::process::id();
        // This process holds it; /proc/locks names it.
        assert_eq!(holder_of(dir.path()), Some(Holder::Pgbisect { pid: me }));
        assert_eq!(
            Holder::Pgbisect { pid: me }.who(),
            format!("pgbisect, pid {me}")
        );
        drop(lock);
        assert_eq!(holder_of(dir.path()), None);
    }

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("lock")).unwrap();
        assert!(text.starts_with(&format!("{} ", std::process::id())));
        // flock(2) locks of two opens conflict within one process too.
        let err = Lock::acquire(dir.path()).unwrap_err();
        let busy = err.downcast_ref::<Busy>().expect("busy");
        let me = std::process::id();
        assert_eq!(busy.holder, Holder::Pgbisect { pid: me });
        assert!(
            err.to_string()
                .contains(&format!("another pgbisect (pid {me})")),
            "{err}"
        );
        drop(lock);
        assert!(!dir.path().join("lock").exists());
        let again = Lock::acquire(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_left_behind_is_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        // A crashed holder's text, even naming a live process: no flock.
        std::fs::write(dir.path().join("lock"), "1").unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        drop(lock);
        std::fs::write(dir.path().join("lock"), "").unwrap();
        Lock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn simultaneous_takers_get_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let taken: Vec<bool> = std::thread::scope(|s| {
            let takers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Lock::acquire(dir.path()).ok()))
                .collect();
            let locks: Vec<_> = takers.into_iter().map(|t| t.join().unwrap()).collect();
            locks.iter().map(Option::is_some).collect()
        });
        assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
    }

    #[test]
    fn a_process_that_is_not_pgbisect_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        std::fs::write(&path, "1 1").unwrap();
        let Ok(mut child) = std::process::Command::new("flock")
            .arg(&path)
            .args(["sleep", "30"])
            .spawn()
        else {
            return; // no flock(1) here
        };
        // Wait for flock(1) to hold the file, trying it without taking it
        // away: a `Lock` would remove the file when dropped, and flock(1),
        // started late on a busy machine, would then hold a removed file.
        let file = std::fs::File::open(&path).unwrap();
        let waited = std::time::Instant::now();
        // SAFETY: flock only acts on the descriptor, which `file` owns.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            // SAFETY: as above.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
            if waited.elapsed().as_secs() >= 60 {
                child.kill().ok();
                panic!("flock(1) took no lock in 60 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let err = Lock::acquire(dir.path()).expect_err("the lock flock(1) holds");
        child.kill().ok();
        child.wait().ok();
        let said = err.to_string();
        assert!(
            said.contains(&format!("locked by process {} (`flock`)", child.id())),
            "{said}"
        );
        assert!(!said.contains("another pgbisect"), "{said}");
    }

    #[test]
    fn a_link_planted_as_the_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("lock")).unwrap();
        assert!(Lock::acquire(dir.path()).is_err());
        std::fs::remove_file(dir.path().join("lock")).unwrap();
        std::fs::hard_link(&target, dir.path().join("lock")).unwrap();
        let err = format!("{:#}", Lock::acquire(dir.path()).unwrap_err());
        assert!(err.contains("2 names"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        let locks = "1: POSIX  ADVISORY  WRITE 10 fe:00:77 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n";
        assert_eq!(crate::proc::flock_holder(locks, 77), Some(4242));
        assert_eq!(crate::proc::flock_holder(locks, 78), None);
    }
}
