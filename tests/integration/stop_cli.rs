//! Stopping a hunt while it builds PostgreSQL: one SIGTERM ends it within
//! seconds, with `make` and what it started gone, the lock released and
//! the journal whole; a second signal while it stops ends it too. And one
//! that must not start: a work dir the server's user cannot reach is
//! refused before `make` ever runs.
//!
//! The repository looks like a PostgreSQL tree to the builder (a
//! `configure` that succeeds, `src/port/Makefile`), and a `make` put first
//! on PATH starts a long `sleep` and waits, as a slow compile would.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A tree the PostgreSQL builder takes on, with `good` and `bad` tags.
fn postgres_like_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::git(root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(root.join("src/port")).unwrap();
    std::fs::write(root.join("src/port/Makefile"), "all:\n").unwrap();
    let configure = root.join("configure");
    std::fs::write(&configure, "#!/bin/sh\necho configured\nexit 0\n").unwrap();
    std::fs::set_permissions(&configure, std::fs::Permissions::from_mode(0o755)).unwrap();
    for i in 0..3 {
        std::fs::write(root.join("n"), format!("{i}\n")).unwrap();
        common::git(root, &["add", "-A"]);
        common::git(root, &["commit", "-q", "-m", &format!("commit {i}")]);
    }
    common::git(root, &["tag", "good", "HEAD~2"]);
    common::git(root, &["tag", "bad", "HEAD"]);
    dir
}

/// A folder holding a `make` that records its pid and the pid of the
/// `sleep` it starts in `pids`, then waits; with `deaf`, it ignores
/// SIGTERM (and so does its `sleep`).
fn slow_make(dir: &Path, pids: &Path, deaf: bool) -> PathBuf {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let trap = if deaf { "trap '' TERM\n" } else { "" };
    let script = format!(
        "#!/bin/sh\n{trap}sleep 300 &\necho \"$$ $!\" > {}.tmp\nmv {}.tmp {}\nwait\n",
        pids.display(),
        pids.display(),
        pids.display()
    );
    let make = bin.join("make");
    std::fs::write(&make, script).unwrap();
    std::fs::set_permissions(&make, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn start(repo: &Path, work: &Path, path_first: &Path) -> Child {
    let path = format!(
        "{}:{}",
        path_first.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    common::bin()
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(["--good", "good", "--bad", "bad"])
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgbisect starts")
}

/// The pids of the fake make and its sleep, once make runs.
fn wait_for_make(pids: &Path, child: &mut Child) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(text) = std::fs::read_to_string(pids) {
            return text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "pgbisect ended ({status}) before make ran:\n{}",
                stderr(child)
            );
        }
        assert!(Instant::now() < deadline, "make never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What an ended child wrote to its (piped) stderr.
fn stderr(child: &mut Child) -> String {
    use std::io::Read;
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_string(&mut err).unwrap();
    }
    err
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits at most `limit` for the child; kills it and fails if it is still there.
fn wait_within(mut child: Child, limit: Duration) -> (std::process::ExitStatus, String, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, stderr(&mut child), started.elapsed());
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("pgbisect did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    let zombie =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
    exists && !zombie
}

fn assert_nothing_left(pids: &[i32], work: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &pid in pids {
        assert!(!alive(pid), "process {pid} was left running");
    }
    assert!(!work.join("lock").exists(), "the lock was left behind");
    let hunt = common::only_hunt_dir(work);
    let journal = std::fs::read_to_string(hunt.join("journal.jsonl")).unwrap();
    assert!(journal.ends_with('\n'), "a torn journal: {journal}");
    for line in journal.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every journal line is whole");
    }
}

/// A hunt of the PostgreSQL-like tree, started and waited for until its
/// (fake) make runs.
struct Building {
    child: Child,
    /// The pids of make and of the sleep it started.
    make: Vec<i32>,
    work: tempfile::TempDir,
    _repo: tempfile::TempDir,
    _tmp: tempfile::TempDir,
}

fn hunt_until_make_runs(deaf: bool) -> Building {
    let repo = postgres_like_repo();
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("make.pids");
    let bin = slow_make(tmp.path(), &pids, deaf);
    let work = common::pg::reachable_temp_dir("/var/tmp", "pgbisect-stop-");
    let mut child = start(repo.path(), work.path(), &bin);
    let make = wait_for_make(&pids, &mut child);
    Building {
        child,
        make,
        work,
        _repo: repo,
        _tmp: tmp,
    }
}

#[test]
fn one_sigterm_during_make_stops_the_hunt_with_its_children() {
    let b = hunt_until_make_runs(false);
    signal(&b.child, "-TERM");
    let (status, err, took) = wait_within(b.child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(err.contains("rerun the same command to resume"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {err}");
    assert_nothing_left(&b.make, b.work.path());
    let log = std::fs::read_dir(b.work.path().join("logs"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("build-"))
        .expect("a build log");
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.contains("$ make -j"), "{text}");
}

#[test]
fn a_second_signal_while_stopping_ends_at_once_and_leaves_nothing() {
    // Deaf to SIGTERM: stopping it would take the whole grace period.
    let b = hunt_until_make_runs(true);
    signal(&b.child, "-TERM");
    std::thread::sleep(Duration::from_millis(500));
    signal(&b.child, "-INT");
    let (status, err, took) = wait_within(b.child, Duration::from_secs(30));
    assert!(matches!(status.code(), Some(4 | 130)), "{status}: {err}");
    assert!(err.contains("stopping at once"), "{err}");
    assert!(took < Duration::from_secs(4), "took {took:?}: {err}");
    assert_nothing_left(&b.make, b.work.path());
}

#[test]
fn a_work_dir_the_server_user_cannot_reach_is_refused_before_any_build() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // only root hands PostgreSQL to another user
    }
    let repo = postgres_like_repo();
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("make.pids");
    let bin = slow_make(tmp.path(), &pids, false);
    // As `mktemp -d` makes it: root's, mode 700.
    let closed = tempfile::Builder::new()
        .prefix("pgbisect-closed-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let work = closed.path().join("w");
    let child = start(repo.path(), &work, &bin);
    let (status, err, _) = wait_within(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("cannot reach the work dir"), "{err}");
    assert!(
        err.contains(&format!("chmod o+x {}", closed.path().display())),
        "{err}"
    );
    assert!(err.contains("--work-dir"), "{err}");
    assert!(!pids.exists(), "make ran");
}
