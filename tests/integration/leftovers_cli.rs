//! Hunts that start at the same moment, and processes a hunt's commands
//! leave behind: of several pgbisects started together on one work dir
//! exactly one runs; daemons a benchmark starts with `setsid` are gone
//! after each run; a benchmark left running by `kill -9` is stopped by the
//! resumed hunt and none of its output is recorded.

use crate::common;

use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn of_simultaneous_starts_exactly_one_runs() {
    let (repo, _) = history(&levels_with_drop_at(12, 7), &[]);
    let work = tempfile::tempdir().unwrap();
    let slow = slow_counting_profile(work.path(), &work.path().join("calls"), "0.1");
    let wdir = work.path().join("w");
    let starts: Vec<_> = (0..6)
        .map(|_| {
            bin()
                .arg("--repo")
                .arg(repo.path())
                .arg("--work-dir")
                .arg(&wdir)
                .args(good_to_bad(&slow))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let ended: Vec<_> = starts
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ran = ended.iter().filter(|o| o.status.code() == Some(0)).count();
    let refused = ended
        .iter()
        .filter(|o| {
            o.status.code() == Some(2)
                && String::from_utf8_lossy(&o.stderr).contains("another pgbisect (pid")
        })
        .count();
    assert_eq!((ran, refused), (1, 5), "{ended:?}");
}

#[test]
fn daemons_a_benchmark_starts_are_gone_after_each_run() {
    let (repo, _) = history(&levels_with_drop_at(8, 5), &[]);
    let work = tempfile::tempdir().unwrap();
    let daemons = work.path().join("daemons");
    // One daemon keeps the run's output open, one does not.
    let before = format!(
        "(setsid sleep 300 & echo $! >> {d}; setsid sleep 300 >/dev/null 2>&1 & echo $! >> {d}) && true",
        d = daemons.display()
    );
    let profile = profile_with(work.path(), "daemons.toml", &before);
    let started = Instant::now();
    let out = pgbisect(repo.path(), &work.path().join("w"), &good_to_bad(&profile));
    assert_code(&out, 0);
    assert!(started.elapsed() < Duration::from_secs(120));
    let left: Vec<i32> = pids(&daemons).into_iter().filter(|p| alive(*p)).collect();
    assert!(!pids(&daemons).is_empty(), "no daemon was started");
    assert!(left.is_empty(), "daemons left running: {left:?}");
}

#[test]
fn a_benchmark_left_by_kill_9_is_stopped_and_not_recorded() {
    let (repo, _) = history(&levels_with_drop_at(10, 6), &[]);
    let work = tempfile::tempdir().unwrap();
    let poison = work.path().join("poison");
    let left = work.path().join("left");
    std::fs::write(&poison, "").unwrap();
    // While `poison` exists the benchmark hangs, then prints a tiny tps.
    let before = format!(
        "if [ -e {p} ]; then echo $$ > {l}; sleep 30; echo 'tps = 1.0'; exit 0; fi",
        p = poison.display(),
        l = left.display()
    );
    let profile = profile_with(work.path(), "poison.toml", &before);
    let wdir = work.path().join("w");
    let mut first = bin()
        .arg("--repo")
        .arg(repo.path())
        .arg("--work-dir")
        .arg(&wdir)
        .args(good_to_bad(&profile))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    while pids(&left).is_empty() {
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "no run started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    first.kill().unwrap(); // SIGKILL: the benchmark goes on
    first.wait().unwrap();
    let benchmark = pids(&left)[0];
    assert!(alive(benchmark), "the benchmark ended with pgbisect");
    std::fs::remove_file(&poison).unwrap();

    let out = pgbisect(repo.path(), &wdir, &good_to_bad(&profile));
    assert_code(&out, 0);
    assert!(!alive(benchmark), "the left benchmark still runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("that commands of an earlier pgbisect in"),
        "{stderr}"
    );
    let journal = std::fs::read_to_string(only_hunt_dir(&wdir).join("journal.jsonl")).unwrap();
    assert!(!journal.contains("\"tps\":1.0"), "{journal}");
}
