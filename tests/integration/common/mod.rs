//! What the integration tests share: git with a fixed identity and date,
//! histories whose commits carry a throughput level, the shell-command
//! profile that measures them, and running the `pgbisect` binary.
//!
//! Each test file that needs it says `mod common;`; a test binary uses only
//! part of it, hence `dead_code` is allowed here.
#![allow(dead_code)]

pub mod mail;
pub mod pg;
pub mod pg_history;
pub mod watch;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The author and committer of every commit made by [`git`].
pub const AUTHOR: (&str, &str) = ("Test Author", "author@example.org");

/// The date of every commit made by these helpers: histories are the same
/// on every run.
pub const DATE: &str = "2016-03-01T17:24:05-05:00";

/// Runs git in `dir` as [`AUTHOR`]; see [`git_as`].
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_as(AUTHOR, dir, args)
}

/// Runs git in `dir` with author and committer `(name, email)`, the fixed
/// [`DATE`] and no user or system configuration; fails the test unless git
/// succeeds, and returns its trimmed standard output.
pub fn git_as((name, email): (&str, &str), dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", name)
        .env("GIT_AUTHOR_EMAIL", email)
        .env("GIT_COMMITTER_NAME", name)
        .env("GIT_COMMITTER_EMAIL", email)
        .env("GIT_AUTHOR_DATE", DATE)
        .env("GIT_COMMITTER_DATE", DATE)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository whose file `level` holds the throughput of each commit:
/// `levels[i]` is commit i's level (commit 0 is tagged `good`, the last
/// `bad`). A commit listed in `broken` has a `broken` file that makes the
/// build command of [`profile`] fail. Returns the repo dir and the SHAs.
pub fn history(levels: &[u32], broken: &[usize]) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    let mut shas = Vec::new();
    for (i, level) in levels.iter().enumerate() {
        std::fs::write(root.join("level"), format!("{level}\n")).unwrap();
        std::fs::write(root.join("source.c"), format!("/* change {i} */\n")).unwrap();
        if broken.contains(&i) {
            std::fs::write(root.join("broken"), "x").unwrap();
        } else {
            let _ = std::fs::remove_file(root.join("broken"));
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", &format!("commit number {i}")]);
        shas.push(git(root, &["rev-parse", "HEAD"]));
    }
    git(root, &["tag", "good", &shas[0]]);
    git(root, &["tag", "bad", &shas[shas.len() - 1]]);
    (dir, shas)
}

/// `n` levels of 1000 that drop to 800 from commit `at` on.
pub fn levels_with_drop_at(n: usize, at: usize) -> Vec<u32> {
    (0..n).map(|i| if i >= at { 800 } else { 1000 }).collect()
}

/// The test profile: the build copies the checkout's `level` (and fails on
/// a `broken` file), the benchmark prints pgbench-style output with 2%
/// noise around the level, seeded by the run number.
pub const PROFILE: &str = r#"description = "test profile"
[build]
command = "test ! -e broken && mkdir -p \"$PGBISECT_PREFIX\" && cp level \"$PGBISECT_PREFIX/level\""
[benchmark]
command = "awk -v seed=\"$PGBISECT_RUN\" -v level=\"$(cat \"$PGBISECT_PREFIX/level\")\" 'BEGIN { srand(seed); printf \"number of clients: %s\\ntps = %.3f (without initial connection time)\\n\", ENVIRON[\"PGBISECT_CLIENTS\"], level * (1 + 0.04 * (rand() - 0.5)) }'"
"#;

/// Writes [`PROFILE`] to `dir/profile.toml` and returns its path.
pub fn profile(dir: &Path) -> PathBuf {
    let path = dir.join("profile.toml");
    std::fs::write(&path, PROFILE).unwrap();
    path
}

/// Writes [`PROFILE`] to `dir/name` with the shell command `before` run
/// ahead of each benchmark (a delay, a call counter); returns its path.
pub fn profile_with(dir: &Path, name: &str, before: &str) -> PathBuf {
    let path = dir.join(name);
    let text = PROFILE.replace("command = \"awk", &format!("command = \"{before} && awk"));
    assert_ne!(text, PROFILE, "the benchmark command starts with awk");
    std::fs::write(&path, text).unwrap();
    path
}

/// A profile like [`profile`] whose benchmark takes `seconds` and counts
/// its calls in `calls`.
pub fn slow_counting_profile(dir: &Path, calls: &Path, seconds: &str) -> PathBuf {
    let before = format!("sleep {seconds} && echo run >> {}", calls.display());
    profile_with(dir, "slow.toml", &before)
}

/// The `pgbisect` binary, not yet started.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgbisect"))
}

/// Runs `pgbisect` with `args` and nothing else.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("pgbisect runs")
}

/// Runs `pgbisect --repo REPO --work-dir WORK` with `extra` (a hunt).
pub fn pgbisect(repo: &Path, work: &Path, extra: &[&str]) -> Output {
    bin()
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(extra)
        .output()
        .expect("pgbisect runs")
}

/// Runs a subcommand (`compare`, `judge`) on `repo` with the work dir `work`.
pub fn pgbisect_sub(sub: &str, repo: &Path, work: &Path, extra: &[&str]) -> Output {
    bin()
        .arg(sub)
        .args(extra)
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .output()
        .expect("pgbisect runs")
}

/// Runs `pgbisect resume --work-dir WORK`.
pub fn resume(work: &Path) -> Output {
    bin()
        .args(["resume", "--work-dir"])
        .arg(work)
        .output()
        .expect("pgbisect runs")
}

/// `--good good --bad bad --profile PROFILE`: a hunt's arguments.
pub fn good_to_bad(profile: &Path) -> [&str; 6] {
    let profile = profile.to_str().unwrap();
    ["--good", "good", "--bad", "bad", "--profile", profile]
}

/// Hunts good..bad of `repo` with the test profile, the work dir `work/w`;
/// returns the process output and the JSON result (null if none).
pub fn hunt_json(repo: &Path, work: &Path) -> (Output, serde_json::Value) {
    let out_json = work.join("out.json");
    let out = pgbisect(
        repo,
        &work.join("w"),
        &[
            "--good",
            "good",
            "--bad",
            "bad",
            "--profile",
            profile(work).to_str().unwrap(),
            "--json",
            out_json.to_str().unwrap(),
        ],
    );
    let v = if out_json.exists() {
        json(&out_json)
    } else {
        serde_json::Value::Null
    };
    (out, v)
}

/// Starts a hunt of good..bad of `repo` with `profile` in the background
/// and waits until it has journaled `runs` runs.
pub fn start_hunt(repo: &Path, work: &Path, profile: &Path, runs: usize) -> Child {
    let child = bin()
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(["--good", "good", "--bad", "bad", "--profile"])
        .arg(profile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_runs(work, runs);
    child
}

/// Waits (at most two minutes) until the only hunt under `work` has
/// journaled `runs` runs.
pub fn wait_for_runs(work: &Path, runs: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while journaled_runs(work).len() < runs {
        assert!(Instant::now() < deadline, "the hunt made no runs");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run numbers in the journal of the only hunt under `work`.
pub fn journaled_runs(work: &Path) -> BTreeSet<u64> {
    let Ok(mut hunts) = std::fs::read_dir(work.join("hunts")) else {
        return Default::default();
    };
    let Some(Ok(hunt)) = hunts.next() else {
        return Default::default();
    };
    let text = std::fs::read_to_string(hunt.path().join("journal.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "run")
        .filter_map(|v| v["run"].as_u64())
        .collect()
}

/// The folder of the only hunt under `work`.
pub fn only_hunt_dir(work: &Path) -> PathBuf {
    std::fs::read_dir(work.join("hunts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// The JSON document in the file `path`.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// When `path` was last modified; fails the test, naming it, if it is gone.
pub fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .modified()
        .unwrap()
}

/// The number of lines of `path` (0 if it does not exist).
pub fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Fails, showing both outputs, unless `out` exited with `code`.
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether the tests run under CI (`CI` set, and not `false` or `0`):
/// there a missing prerequisite fails the test instead of skipping it.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "false" | "0"))
}

/// What a test needs from the machine: `found` when it is there. When it
/// is missing, under CI ([`under_ci`]) the test fails naming `what` is
/// missing and `how` to get it; elsewhere it prints
/// `skipped: <test>: needs <what> (<how>)` to stderr and the caller
/// returns, so a missing prerequisite never passes unseen.
#[track_caller]
pub fn require<T>(found: Option<T>, what: &str, how: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("test");
    if under_ci() {
        panic!("{test}: needs {what}, which is missing here ({how}); CI runs every test");
    }
    // Straight to stderr (the test harness keeps what `eprintln!` says of
    // a test that passes), and to `$PGBISECT_TEST_SKIPS`, where
    // `scripts/test.sh` counts the skips (the runner keeps stderr too).
    let line = format!("skipped: {test}: needs {what} ({how})\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    if let Some(path) = std::env::var_os("PGBISECT_TEST_SKIPS") {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path);
        if let Ok(mut file) = file {
            let _ = std::io::Write::write_all(&mut file, line.as_bytes());
        }
    }
    None
}

/// The value of the environment variable `name`, or (see [`require`]) a
/// failure under CI and a skip elsewhere, saying `how` to get it.
#[track_caller]
pub fn require_env(name: &str, how: &str) -> Option<String> {
    require(std::env::var(name).ok(), &format!("${name}"), how)
}

/// The PostgreSQL binaries the server tests run (`PGBISECT_TEST_PG_BIN`,
/// default Debian's PostgreSQL 15), or `None` when the test is skipped
/// (see [`require`]).
#[track_caller]
pub fn pg_bin() -> Option<PathBuf> {
    let bin = PathBuf::from(
        std::env::var("PGBISECT_TEST_PG_BIN")
            .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".to_string()),
    );
    let what = format!("PostgreSQL binaries in {}", bin.display());
    require(
        bin.join("postgres").is_file().then_some(bin),
        &what,
        "scripts/setup.sh installs postgresql-15; or set PGBISECT_TEST_PG_BIN to a bin folder",
    )
}

/// Debian's PostgreSQL 15 source tree (`PGBISECT_TEST_PG_SOURCE`), or
/// `None` when the test is skipped (see [`require`]).
#[track_caller]
pub fn pg_source() -> Option<PathBuf> {
    require_env(
        "PGBISECT_TEST_PG_SOURCE",
        "scripts/setup.sh unpacks it into .pgbisect-test-cache/postgresql-15 and \
         scripts/test.sh sets it",
    )
    .map(PathBuf::from)
}
