//! Processes a command left behind, found and stopped.
//!
//! Stopping a command's process group is not enough: a benchmark may start
//! a daemon with `setsid`, which leaves the group and would outlive the
//! run (and load the machine during the next one); and a hunt killed with
//! `kill -9` leaves running whatever it had started, which a resumed hunt
//! must not measure beside. So every command a lab runs gets
//! `PGBISECT_RUN_TOKEN=<work dir>-<attempt>` in its environment, which all
//! it starts inherits however it detaches; after the command ends, every
//! process still carrying its token is killed before its result is kept,
//! and a hunt starting in a work dir kills what carries that work dir's
//! mark (it holds the work dir's lock, so no live pgbisect runs there).
//! The token is proof enough that a process is ours: nothing else sets
//! it. A process that clears its environment (`env -i`) escapes this.
//!
//! PostgreSQL's programs are started far from the lab that decides a run
//! (initdb, `pg_ctl`, which starts the postmaster, psql, pgbench), so the
//! lab names the run's token once with [`scope`], and every PostgreSQL
//! program started while the scope lasts carries it ([`current`]): the
//! postmaster and its backends too, which `pg_ctl` detaches.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The environment variable marking a command's processes.
pub const VAR: &str = "PGBISECT_RUN_TOKEN";

/// How many times the processes found are killed and looked for again
/// (a process may start others while it is being killed).
const ROUNDS: usize = 100;

/// The marks of the commands run in one work dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    work: String,
}

impl Marks {
    /// The marks for the work dir `root`.
    pub fn for_work_dir(root: &Path) -> Marks {
        let path = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let work = crate::core::fingerprint::fingerprint(&path.to_string_lossy());
        Marks {
            work: work.chars().take(16).collect(),
        }
    }

    /// A token no earlier command in the work dir had.
    pub fn token(&self) -> String {
        format!("{}-{:016x}", self.work, rand::random::<u64>())
    }

    /// Kills what commands of earlier pgbisects in this work dir left
    /// running; how many processes that was.
    pub fn stop_earlier(&self) -> usize {
        stop_marked(&format!("{}-", self.work))
    }
}

/// The token PostgreSQL's programs started now carry, if a run is under way.
static CURRENT: Mutex<Option<String>> = Mutex::new(None);

/// While the returned guard lives, [`current`] is `token`.
pub fn scope(token: &str) -> Scope {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let previous = current.replace(token.to_string());
    Scope { previous }
}

/// The token of the run under way (see [`scope`]).
pub fn current() -> Option<String> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A run's token in force; the one before it is back when dropped.
#[must_use = "the token is in force only while the scope lives"]
pub struct Scope {
    previous: Option<String>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = self.previous.take();
    }
}

/// Runs `work` with `token` in force ([`scope`]), then kills whatever
/// still carries it, before the result is handed back.
pub fn run_marked<T>(token: &str, work: impl FnOnce() -> T) -> T {
    let result = {
        let _scope = scope(token);
        work()
    };
    stop_marked(token);
    result
}

/// Kills every process (but this one) whose environment holds a token
/// starting with `prefix`, until none is left; how many were killed.
pub fn stop_marked(prefix: &str) -> usize {
    let needle = format!("{VAR}={prefix}");
    let me = std::process::id();
    let mut killed = 0;
    for _ in 0..ROUNDS {
        let found: Vec<u32> = marked(needle.as_bytes())
            .into_iter()
            .filter(|p| *p != me)
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in &found {
            if let Ok(pid) = libc::pid_t::try_from(*pid) {
                // SAFETY: kill only sends a signal, to a process that
                // carries our token.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killed
}

/// The processes whose environment holds an entry starting with `needle`
/// (a killed process that is not yet reaped has none).
fn marked(needle: &[u8]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v.starts_with(needle)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    }

    #[test]
    fn a_scope_names_the_token_until_it_ends() {
        let marks = Marks::for_work_dir(Path::new("/nonexistent/w"));
        let token = marks.token();
        let seen = run_marked(&token, || {
            let inner = scope("inner");
            assert_eq!(current().as_deref(), Some("inner"));
            drop(inner);
            current()
        });
        assert_eq!(seen.as_deref(), Some(token.as_str()));
        assert_ne!(current().as_deref(), Some(token.as_str()));
    }

    #[test]
    fn a_detached_daemon_is_found_by_its_token_and_stopped() {
        let tmp = tempfile::tempdir().unwrap();
        let marks = Marks::for_work_dir(tmp.path());
        let token = marks.token();
        assert_ne!(token, marks.token());
        let pid_file = tmp.path().join("daemon");
        let script = format!("setsid sleep 600 & echo $! > {}", pid_file.display());
        let status = std::process::Command::new("sh")
            .args(["-c", &script])
            .env(VAR, &token)
            .status()
            .unwrap();
        assert!(status.success());
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(pid));
        // Another work dir's marks leave it alone.
        assert_eq!(Marks::for_work_dir(&tmp.path().join("x")).stop_earlier(), 0);
        assert!(alive(pid));
        assert_eq!(stop_marked(&token), 1);
        let waited = std::time::Instant::now();
        while alive(pid) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid), "the daemon survived");
    }
}
