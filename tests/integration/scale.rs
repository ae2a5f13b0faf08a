//! A hunt at the size of PostgreSQL's history: from 9.5's branch point
//! (2015-06) to master there are about 26,000 first-parent commits. The
//! history is generated with one `git fast-import`, measured through a
//! shell-command profile, and each part (listing the candidates, the hunt,
//! its resume from the journal, the report) is timed and printed; the
//! figures are recorded in BENCHMARKS.md, not asserted here.
//!
//! `cargo test --release --test integration scale:: -- --nocapture` shows them.

use crate::common;

use common::{git, good_to_bad, profile};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// First-parent commits from 9.5's branch point to master in 2026.
const COMMITS: usize = 26_000;
/// The commit whose level drops (0-based; commit 0 is `good`).
const DROP_AT: usize = 17_321;

/// Writes a linear history of `n` commits into a new repository at `dir`:
/// commit i has a file `n` holding i and a file `level` holding 1000, or
/// 800 from `drop_at` on. Tags `good` (the first) and `bad` (the last).
fn generate(dir: &Path, n: usize, drop_at: usize) {
    let status = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stream = std::io::BufWriter::new(child.stdin.take().unwrap());
    for i in 0..n {
        let level = if i >= drop_at { 800 } else { 1000 };
        let message = format!("commit number {i}\n");
        let number = format!("{i}\n");
        let level = format!("{level}\n");
        write!(
            stream,
            "commit refs/heads/main\nmark :{}\ncommitter Test Author <author@example.org> {} +0000\n\
             data {}\n{message}",
            i + 1,
            1_434_000_000 + i * 3600,
            message.len()
        )
        .unwrap();
        if i > 0 {
            writeln!(stream, "from :{i}").unwrap();
        }
        write!(
            stream,
            "M 644 inline n\ndata {}\n{number}M 644 inline level\ndata {}\n{level}\n",
            number.len(),
            level.len()
        )
        .unwrap();
    }
    write!(
        stream,
        "reset refs/tags/good\nfrom :1\n\nreset refs/tags/bad\nfrom :{n}\n\n"
    )
    .unwrap();
    drop(stream);
    assert!(child.wait().unwrap().success());
}

fn pgbisect(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = common::run(args);
    (out, started.elapsed())
}

#[test]
fn a_hunt_over_26000_commits_finds_the_drop() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    let work = root.path().join("work");
    let started = Instant::now();
    generate(&repo, COMMITS, DROP_AT);
    eprintln!(
        "generate {COMMITS} commits (git fast-import): {:.2?}",
        started.elapsed()
    );
    let culprit = git(
        &repo,
        &["rev-parse", &format!("bad~{}", COMMITS - 1 - DROP_AT)],
    );

    let started = Instant::now();
    let listed = pgbisect::repo::Repo::open(&repo).unwrap();
    let good = listed.resolve("good").unwrap();
    let bad = listed.resolve("bad").unwrap();
    let candidates = listed.candidates(&good, &bad).unwrap();
    eprintln!(
        "list {} candidates: {:.2?}",
        candidates.len(),
        started.elapsed()
    );
    assert_eq!(candidates.len(), COMMITS - 1);

    let profile = profile(root.path());
    let repo_arg = repo.to_str().unwrap();
    let work_arg = work.to_str().unwrap();
    let hunt_args = [
        &["--repo", repo_arg, "--work-dir", work_arg][..],
        &good_to_bad(&profile),
        &["--format", "json"],
    ]
    .concat();
    let (out, took) = pgbisect(&hunt_args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<&str> = result["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["commit"].as_str())
        .collect();
    assert_eq!(found, vec![culprit.as_str()], "{result}");
    let lines = common::line_count(&common::only_hunt_dir(&work).join("journal.jsonl"));
    eprintln!("hunt (builds, runs, search, journal of {lines} lines, report): {took:.2?}");

    let (out, took) = pgbisect(&hunt_args);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resuming the hunt"), "{stderr}");
    eprintln!("the same hunt again, all from its journal: {took:.2?}");

    let (out, took) = pgbisect(&["report", "--work-dir", work_arg, "--format", "text"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&culprit[..8]));
    eprintln!("report from result.json: {took:.2?}");
}
