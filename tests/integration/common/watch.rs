//! The watcher's test histories: commits landed a day apart, each with
//! its throughput level, and the flags of a replay over them.

use super::{AUTHOR, DATE};
use std::path::Path;
use std::process::Command;

/// A repository on `main` whose commit `i` landed on day `i` of January
/// 2024 at noon UTC with the throughput level `levels[i]`.
pub fn dated_history(levels: &[u32]) -> (tempfile::TempDir, Vec<String>) {
    dated_history_with(levels, |i| format!("commit number {i}"))
}

/// [`dated_history`], commit `i` with the message `message(i)`.
pub fn dated_history_with(
    levels: &[u32],
    message: impl Fn(usize) -> String,
) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let git = |args: &[&str], date: &str| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", AUTHOR.0)
            .env("GIT_AUTHOR_EMAIL", AUTHOR.1)
            .env("GIT_COMMITTER_NAME", AUTHOR.0)
            .env("GIT_COMMITTER_EMAIL", AUTHOR.1)
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "-q", "-b", "main"], DATE);
    let mut shas = Vec::new();
    for (i, level) in levels.iter().enumerate() {
        let date = format!("2024-01-{:02}T12:00:00Z", i + 1);
        std::fs::write(root.join("level"), format!("{level}\n")).unwrap();
        std::fs::write(root.join("source.c"), format!("/* change {i} */\n")).unwrap();
        git(&["add", "-A"], &date);
        git(
            &["commit", "-q", "--cleanup=verbatim", "-m", &message(i)],
            &date,
        );
        shas.push(git(&["rev-parse", "HEAD"], &date));
    }
    (dir, shas)
}

/// A replay of `range` with `profile` at 8 clients, without backfill.
pub fn replay<'a>(profile: &'a Path, range: &'a str) -> Vec<&'a str> {
    let profile = profile.to_str().unwrap();
    vec![
        "--profile",
        profile,
        "--clients",
        "8",
        "--replay",
        range,
        "--backfill",
        "0",
    ]
}
