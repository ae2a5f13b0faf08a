//! A record of running servers on disk, and the process signals around it.
//!
//! A run killed with SIGKILL (or a machine out of memory) cannot stop its
//! servers; they would hold shared memory and CPU and spoil every later
//! measurement. Each started server is therefore written to
//! `<work>/servers/<port>-<pid>.json`, removed when it stops, and the next
//! run stops whatever a dead run left there.

use super::{Server, ServerError, wait_until};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One registry entry.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    postmaster_pid: u32,
    data_dir: PathBuf,
    /// The process that started the server, and its start time (so that a
    /// reused pid is not taken for it).
    owner_pid: u32,
    owner_start: Option<u64>,
}

/// Records a started server; returns the entry's path.
pub(super) fn register(dir: &Path, server: &Server, pid: u32) -> Result<PathBuf, ServerError> {
    crate::folders::create_dir(dir)
        .map_err(|e| ServerError::io(format!("cannot create {}", dir.display()), e))?;
    let owner_pid = std::process::id();
    let entry = Entry {
        postmaster_pid: pid,
        data_dir: server.data_dir.clone(),
        owner_pid,
        owner_start: process_start_time(owner_pid),
    };
    let path = dir.join(format!("{}-{pid}.json", server.port));
    let text = serde_json::to_string_pretty(&entry).unwrap_or_default();
    crate::files::write(&path, text)
        .map_err(|e| ServerError::io(format!("cannot write {}", path.display()), e))?;
    Ok(path)
}

/// Stops the servers that runs no longer alive left registered in `dir`
/// and forgets them; returns how many were still running. Entries of other
/// live processes are left alone; entries of this process count as left
/// behind (call this before starting servers).
pub fn reap_leftovers(dir: &Path) -> Result<usize, ServerError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(ServerError::io(format!("cannot read {}", dir.display()), e)),
    };
    let mut stopped = 0;
    for file in entries.flatten().map(|e| e.path()) {
        if file.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let Some(entry) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Entry>(&t).ok())
        else {
            let _ = std::fs::remove_file(&file);
            continue;
        };
        let own = entry.owner_pid == std::process::id();
        if !own && owner_alive(&entry) {
            continue;
        }
        if server_still_there(&entry) {
            if !stop_by_signal(entry.postmaster_pid) {
                return Err(ServerError::StopFailed {
                    data_dir: entry.data_dir,
                    pid: entry.postmaster_pid,
                });
            }
            remove_orphaned_shmem(&entry.data_dir);
            stopped += 1;
        }
        let _ = std::fs::remove_file(&file);
    }
    Ok(stopped)
}

/// Stops the server running in `data_dir`, if one does (the postmaster
/// `postmaster.pid` names, alive and working in that folder), and says
/// whether one was stopped. For a folder only one run uses at a time: a
/// run killed while `pg_ctl start` waited left a server it never recorded.
pub fn stop_server_in(data_dir: &Path) -> Result<bool, ServerError> {
    let Some(pid) = postmaster_pid(data_dir).filter(|pid| is_alive(*pid)) else {
        return Ok(false);
    };
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    if cwd.is_none() || cwd != std::fs::canonicalize(data_dir).ok() {
        return Ok(false);
    }
    if !stop_by_signal(pid) {
        return Err(ServerError::StopFailed {
            data_dir: data_dir.to_path_buf(),
            pid,
        });
    }
    remove_orphaned_shmem(data_dir);
    Ok(true)
}

fn owner_alive(entry: &Entry) -> bool {
    is_alive(entry.owner_pid) && process_start_time(entry.owner_pid) == entry.owner_start
}

/// The recorded postmaster still runs on the recorded data directory.
fn server_still_there(entry: &Entry) -> bool {
    is_alive(entry.postmaster_pid) && postmaster_pid(&entry.data_dir) == Some(entry.postmaster_pid)
}

/// Immediate shutdown (SIGQUIT), then SIGKILL; true when the process is gone.
fn stop_by_signal(pid: u32) -> bool {
    send(pid, libc::SIGQUIT);
    wait_until(Duration::from_secs(10), || !is_alive(pid)) || kill_hard(pid)
}

/// SIGKILL and wait; true when the process is gone.
pub(super) fn kill_hard(pid: u32) -> bool {
    send(pid, libc::SIGKILL);
    wait_until(Duration::from_secs(10), || !is_alive(pid))
}

pub(super) fn send(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid > 0 {
        // SAFETY: kill has no memory preconditions; pid is a single process.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// Removes the System V shared memory segment a dead postmaster of
/// `data_dir` left (named on line 7 of `postmaster.pid`), if nothing is
/// attached to it any more. A postmaster killed with SIGKILL cannot remove
/// it, and such segments would pile up run after run.
pub(super) fn remove_orphaned_shmem(data_dir: &Path) {
    let Ok(text) = std::fs::read_to_string(data_dir.join("postmaster.pid")) else {
        return;
    };
    let Some(shmid) = text
        .lines()
        .nth(6)
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|id| id.parse::<libc::c_int>().ok())
    else {
        return;
    };
    // SAFETY: shmid_ds is plain data; IPC_STAT fills it, IPC_RMID ignores it.
    unsafe {
        let mut status: libc::shmid_ds = std::mem::zeroed();
        if libc::shmctl(shmid, libc::IPC_STAT, &mut status) == 0 && status.shm_nattch == 0 {
            libc::shmctl(shmid, libc::IPC_RMID, std::ptr::null_mut());
        }
    }
}

/// The postmaster pid from `DATA/postmaster.pid`, if the file is there.
pub(super) fn postmaster_pid(data_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// True when `pid` is a live process (a zombie is not).
pub(super) fn is_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(raw, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && proc_stat(pid).is_none_or(|stat| stat.state != 'Z')
}

struct ProcStat {
    state: char,
    start_time: Option<u64>,
}

/// State and start time from `/proc/PID/stat` (Linux), when readable.
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = crate::machine::steady::stat_fields(&text)?;
    let state = fields.first()?.chars().next()?;
    // Field 22 of the whole line; field 3 (state) is the first here.
    let start_time = fields.get(19).and_then(|f| f.parse().ok());
    Some(ProcStat { state, start_time })
}

/// When process `pid` started (clock ticks after boot, from
/// `/proc/PID/stat`): with the pid, it tells a process from a later one
/// that was given the same pid.
pub fn process_start_time(pid: u32) -> Option<u64> {
    proc_stat(pid).and_then(|stat| stat.start_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_postmaster_working_in_the_folder_is_stopped_there() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!stop_server_in(dir.path()).unwrap(), "no postmaster.pid");
        // A live process named in the pid file, working elsewhere (this
        // test): not the folder's server, left alone.
        let pidfile = dir.path().join("postmaster.pid");
        std::fs::write(
            &pidfile,
            format!("{}\n{}\n", std::process::id(), dir.path().display()),
        )
        .unwrap();
        assert!(!stop_server_in(dir.path()).unwrap());
        assert!(is_alive(std::process::id()));
    }

    #[test]
    fn this_process_is_alive_with_a_start_time() {
        assert!(is_alive(std::process::id()));
        assert!(!is_alive(0));
        assert!(!is_alive(u32::MAX));
        if Path::new("/proc/self/stat").exists() {
            assert!(process_start_time(std::process::id()).is_some());
        }
    }

    #[test]
    fn reaping_an_empty_or_missing_registry_stops_nothing() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("servers");
        assert_eq!(reap_leftovers(&dir).unwrap(), 0);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("junk.json"), "not json").unwrap();
        assert_eq!(reap_leftovers(&dir).unwrap(), 0);
        assert!(!dir.join("junk.json").exists());
    }

    #[test]
    fn entries_of_dead_owners_with_dead_servers_are_dropped() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("servers");
        std::fs::create_dir_all(&dir).unwrap();
        let entry = Entry {
            postmaster_pid: u32::MAX - 1,
            data_dir: work.path().join("data"),
            owner_pid: u32::MAX - 2,
            owner_start: None,
        };
        let file = dir.join("5432-1.json");
        std::fs::write(&file, serde_json::to_string(&entry).unwrap()).unwrap();
        assert_eq!(reap_leftovers(&dir).unwrap(), 0);
        assert!(!file.exists());
    }
}
