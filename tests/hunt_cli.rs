//! The `pgbisect` binary end to end on real git repositories made in temp
//! dirs, measured through shell-command profiles.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.org")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.org")
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
/// build command fail. Returns the repo dir and the SHAs.
fn history(levels: &[u32], broken: &[usize]) -> (tempfile::TempDir, Vec<String>) {
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

/// A profile whose benchmark prints pgbench-style output with 2% noise
/// around the checkout's level.
fn profile(dir: &Path) -> PathBuf {
    let path = dir.join("profile.toml");
    std::fs::write(
        &path,
        r#"description = "test profile"
[build]
command = "test ! -e broken && mkdir -p \"$PGBISECT_PREFIX\" && cp level \"$PGBISECT_PREFIX/level\""
[benchmark]
command = "awk -v seed=\"$PGBISECT_RUN\" -v level=\"$(cat \"$PGBISECT_PREFIX/level\")\" 'BEGIN { srand(seed); printf \"number of clients: %s\\ntps = %.3f (without initial connection time)\\n\", ENVIRON[\"PGBISECT_CLIENTS\"], level * (1 + 0.04 * (rand() - 0.5)) }'"
"#,
    )
    .unwrap();
    path
}

/// `--good good --bad bad --profile PROFILE`.
fn good_to_bad(profile: &Path) -> [&str; 6] {
    let profile = profile.to_str().unwrap();
    ["--good", "good", "--bad", "bad", "--profile", profile]
}

fn pgbisect(repo: &Path, work: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(extra)
        .output()
        .expect("pgbisect runs")
}

/// The folder of the only hunt under `work`.
fn only_hunt_dir(work: &Path) -> PathBuf {
    std::fs::read_dir(work.join("hunts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn levels_with_drop_at(n: usize, at: usize) -> Vec<u32> {
    (0..n).map(|i| if i >= at { 800 } else { 1000 }).collect()
}

/// Hunts good..bad of `repo` with the test profile; returns the process
/// output and the JSON result.
fn hunt_json(repo: &Path, work: &Path) -> (Output, serde_json::Value) {
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

#[test]
fn finds_the_culprit_and_writes_json() {
    let (repo, shas) = history(&levels_with_drop_at(30, 17), &[]);
    let work = tempfile::tempdir().unwrap();
    let before_head = git(repo.path(), &["rev-parse", "HEAD"]);
    let (out, v) = hunt_json(repo.path(), work.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(v["outcome"], "culprit-found");
    let culprits = v["culprits"].as_array().unwrap();
    assert_eq!(culprits.len(), 1, "{v:#}");
    assert_eq!(culprits[0]["commit"], shas[17].as_str());
    assert_eq!(culprits[0]["subject"], "commit number 17");
    assert!(
        culprits[0]["author"]
            .as_str()
            .unwrap()
            .contains("Test Author")
    );
    let change = culprits[0]["change"]["pct"].as_f64().unwrap();
    assert!((change + 20.0).abs() < 3.0, "change {change}");
    assert!(v["totals"]["runs"].as_u64().unwrap() > 0);
    assert!(v["totals"]["builds"].as_u64().unwrap() > 0);
    assert!(!v["tested"].as_array().unwrap().is_empty());
    // The user's checkout is untouched.
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), before_head);
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    // Every run is journaled.
    let journal = std::fs::read_to_string(
        std::fs::read_dir(work.path().join("w/hunts"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("journal.jsonl"),
    )
    .unwrap();
    let runs = journal
        .lines()
        .filter(|l| l.contains("\"event\":\"run\""))
        .count() as u64;
    assert_eq!(runs, v["totals"]["runs"].as_u64().unwrap());
}

#[test]
fn no_regression_blames_nobody() {
    let (repo, _) = history(&[1000; 12], &[]);
    let work = tempfile::tempdir().unwrap();
    let (out, v) = hunt_json(repo.path(), work.path());
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["outcome"], "no-regression");
    assert!(v["culprits"].as_array().unwrap().is_empty());
}

#[test]
fn unbuildable_commits_are_skipped() {
    let (repo, shas) = history(&levels_with_drop_at(20, 9), &[5, 10, 11, 14]);
    let work = tempfile::tempdir().unwrap();
    let (out, v) = hunt_json(repo.path(), work.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["culprits"][0]["commit"], shas[9].as_str(), "{v:#}");
}

#[test]
fn unbuildable_parent_leaves_a_range_not_a_guess() {
    let (repo, shas) = history(&levels_with_drop_at(20, 9), &[8]);
    let work = tempfile::tempdir().unwrap();
    let (out, v) = hunt_json(repo.path(), work.path());
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["outcome"], "inconclusive");
    assert!(v["culprits"].as_array().unwrap().is_empty());
    let suspects = v["unresolved"][0]["suspects"].as_array().unwrap();
    assert_eq!(
        suspects,
        &vec![serde_json::json!(shas[8]), serde_json::json!(shas[9])]
    );
    let reason = v["unresolved"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("{} does not build", &shas[8][..8])),
        "{reason}"
    );
}

/// Hunts `good`..`bad` of a fresh history with the test profile, expects a
/// usage error (exit 2) and returns its standard error.
fn usage_error(levels: &[u32], good: &str, bad: &str) -> String {
    let (repo, _) = history(levels, &[]);
    let work = tempfile::tempdir().unwrap();
    let profile = profile(work.path());
    let args = [
        "--good",
        good,
        "--bad",
        bad,
        "--profile",
        profile.to_str().unwrap(),
    ];
    let out = pgbisect(repo.path(), &work.path().join("w"), &args);
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_revision_is_a_usage_error() {
    let stderr = usage_error(&[1000, 900], "no-such-tag", "bad");
    assert!(stderr.contains("no-such-tag"), "{stderr}");
}

#[test]
fn good_must_be_an_ancestor_of_bad() {
    let stderr = usage_error(&[1000, 900, 800], "bad", "good");
    assert!(stderr.contains("ancestor"), "{stderr}");
}

#[test]
fn profile_with_unknown_key_names_it() {
    let (repo, _) = history(&[1000, 900], &[]);
    let work = tempfile::tempdir().unwrap();
    let bad_profile = work.path().join("typo.toml");
    std::fs::write(
        &bad_profile,
        "[benchmark]\ncommand = \"true\"\nduratoin = 5\n",
    )
    .unwrap();
    let out = pgbisect(
        repo.path(),
        &work.path().join("w"),
        &[
            "--good",
            "good",
            "--bad",
            "bad",
            "--profile",
            bad_profile.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("duratoin") && stderr.contains("typo.toml"),
        "{stderr}"
    );
}

#[test]
fn rerun_resumes_from_the_journal_without_measuring_twice() {
    let (repo, shas) = history(&levels_with_drop_at(30, 11), &[]);
    let work = tempfile::tempdir().unwrap();
    let calls = work.path().join("calls");
    let profile_path = work.path().join("counting.toml");
    let base = std::fs::read_to_string(profile(work.path())).unwrap();
    let counting = base.replace(
        "command = \"awk",
        &format!("command = \"echo run >> {} && awk", calls.display()),
    );
    std::fs::write(&profile_path, counting).unwrap();
    let args = good_to_bad(&profile_path);
    let wdir = work.path().join("w");
    let first = pgbisect(repo.path(), &wdir, &args);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let runs_first = std::fs::read_to_string(&calls).unwrap().lines().count();
    let hunt_dir = only_hunt_dir(&wdir);
    let journal = hunt_dir.join("journal.jsonl");
    // Cut the journal as a crash would, half way through the runs.
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let run_lines: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i].contains("\"event\":\"run\""))
        .collect();
    let cut = run_lines[run_lines.len() / 2];
    std::fs::write(&journal, lines[..cut].join("\n") + "\n").unwrap();
    let second = pgbisect(repo.path(), &wdir, &args);
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let runs_total = std::fs::read_to_string(&calls).unwrap().lines().count();
    let kept = run_lines.len() / 2;
    assert_eq!(
        runs_total - runs_first,
        runs_first - kept,
        "only the lost runs are made again"
    );
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["culprits"][0]["commit"], shas[11].as_str());
    // The totals add up both starts: the runs the journal kept and those
    // made again (the ones the crash took are not in the journal).
    assert_eq!(v["totals"]["runs"], runs_first as u64);
    assert_eq!(v["totals"]["processes"], 2);
    // A complete journal replays everything: no run at all.
    let third = pgbisect(repo.path(), &wdir, &args);
    assert_eq!(third.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap().lines().count(),
        runs_total
    );
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["totals"]["runs"], runs_first as u64);
    assert_eq!(v["totals"]["processes"], 3);
}

#[test]
fn profiles_are_listed_with_descriptions() {
    let out = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg("profiles")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "smoke",
        "rw-exceeds-buffers",
        "select-only",
        "checkpoint-stress",
    ] {
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn missing_endpoints_are_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg("--work-dir")
        .arg(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--good"));
}

#[test]
fn hunt_writes_reports_and_report_renders_them_again() {
    let (repo, shas) = history(&levels_with_drop_at(12, 7), &[]);
    let work = tempfile::tempdir().unwrap();
    let profile_path = profile(work.path());
    let work_dir = work.path().join("w");
    let out = pgbisect(
        repo.path(),
        &work_dir,
        &[
            "--good=good",
            "--bad=bad",
            "--format=markdown",
            "--profile",
            profile_path.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.starts_with("# pgbisect: "), "{printed}");
    let hunt_dir = only_hunt_dir(&work_dir);
    let result = json(&hunt_dir.join("result.json"));
    assert!(
        result["machine"]["cpus"].as_u64().unwrap() >= 1,
        "{result:#}"
    );
    assert_eq!(
        result["profile_toml"].as_str().unwrap(),
        std::fs::read_to_string(&profile_path).unwrap()
    );
    let md = std::fs::read_to_string(hunt_dir.join("report.md")).unwrap();
    assert_eq!(md, printed);
    let text = std::fs::read_to_string(hunt_dir.join("report.txt")).unwrap();
    assert!(
        text.contains(&format!("first bad commit: {}", shas[7])),
        "{text}"
    );
    let again = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .args(["report", "--work-dir"])
        .arg(&work_dir)
        .output()
        .expect("pgbisect runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
}

#[test]
fn hunt_cannot_print_an_email() {
    let (repo, _) = history(&[1000; 3], &[]);
    let work = tempfile::tempdir().unwrap();
    let out = pgbisect(
        repo.path(),
        work.path(),
        &["--good", "good", "--bad", "bad", "--format", "email"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pgbisect report --format email"));
}

/// A profile like [`profile`] whose benchmark takes a while and counts its
/// calls in `calls`.
fn slow_counting_profile(dir: &Path, calls: &Path, seconds: &str) -> PathBuf {
    let path = dir.join("slow.toml");
    let base = std::fs::read_to_string(profile(dir)).unwrap();
    let slow = base.replace(
        "command = \"awk",
        &format!(
            "command = \"sleep {seconds} && echo run >> {} && awk",
            calls.display()
        ),
    );
    std::fs::write(&path, slow).unwrap();
    path
}

/// Run numbers in the journal of the only hunt under `work`.
fn journaled_runs(work: &Path) -> std::collections::BTreeSet<u64> {
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

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Starts a hunt in the background and waits until it has journaled
/// `runs` runs.
fn start_hunt(repo: &Path, work: &Path, profile: &Path, runs: usize) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(["--good", "good", "--bad", "bad", "--profile"])
        .arg(profile)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while journaled_runs(work).len() < runs {
        assert!(
            std::time::Instant::now() < deadline,
            "the hunt made no runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child
}

#[test]
fn killed_hunt_resumes_without_measuring_twice() {
    let (repo, shas) = history(&levels_with_drop_at(40, 23), &[]);
    let work = tempfile::tempdir().unwrap();
    let calls = work.path().join("calls");
    let slow = slow_counting_profile(work.path(), &calls, "0.05");
    let wdir = work.path().join("w");
    let mut child = start_hunt(repo.path(), &wdir, &slow, 12);
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let before = journaled_runs(&wdir).len();
    assert!(
        line_count(&calls) <= before + 1,
        "at most the run in flight is lost"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .args(["resume", "--work-dir"])
        .arg(&wdir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resuming"), "{stderr}");
    let hunt_dir = only_hunt_dir(&wdir);
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["culprits"][0]["commit"], shas[23].as_str());
    let all = journaled_runs(&wdir).len();
    assert!(all > before, "the resumed hunt went on");
    // The totals count both starts; at most the run whose cost was not yet
    // journaled when the first was killed is missing.
    let runs = v["totals"]["runs"].as_u64().unwrap() as usize;
    assert!(
        runs + 1 >= all && runs <= all,
        "{runs} runs counted, {all} journaled"
    );
    assert_eq!(v["totals"]["processes"], 2);
    assert!(
        line_count(&calls) <= all + 1,
        "{} benchmark calls for {all} runs: something was measured twice",
        line_count(&calls)
    );
}

#[test]
fn second_hunt_in_the_same_work_dir_is_refused() {
    let (repo, _) = history(&levels_with_drop_at(20, 7), &[]);
    let work = tempfile::tempdir().unwrap();
    let slow = slow_counting_profile(work.path(), &work.path().join("calls"), "0.2");
    let wdir = work.path().join("w");
    let mut first = start_hunt(repo.path(), &wdir, &slow, 1);
    let second = pgbisect(
        repo.path(),
        &wdir,
        &[
            "--good",
            "good",
            "--bad",
            "bad",
            "--profile",
            slow.to_str().unwrap(),
        ],
    );
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("pid {}", first.id())) && stderr.contains("--work-dir"),
        "{stderr}"
    );
}

#[test]
fn resume_without_a_hunt_says_where_it_looked() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .args(["resume", "--work-dir"])
        .arg(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("command.json"), "{stderr}");
}

#[test]
fn completions_are_scripts_the_shells_accept() {
    let out = Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("resume") && script.contains("--good"),
        "{script}"
    );
    let check = Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// Runs a subcommand (`compare`, `judge`) on `repo` with the work dir `work`.
fn pgbisect_sub(sub: &str, repo: &Path, work: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg(sub)
        .args(extra)
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .output()
        .expect("pgbisect runs")
}

fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn compare_prints_a_row_per_client_count_and_writes_json_and_chart() {
    let (repo, _) = history(&[1000, 1000, 800], &[]);
    let work = tempfile::tempdir().unwrap();
    let (out_json, chart) = (work.path().join("c.json"), work.path().join("c.svg"));
    let out = pgbisect_sub(
        "compare",
        repo.path(),
        &work.path().join("w"),
        &[
            "good",
            "bad",
            "--clients",
            "1,4",
            "--runs",
            "5",
            "--profile",
            profile(work.path()).to_str().unwrap(),
            "--json",
            out_json.to_str().unwrap(),
            "--chart",
            chart.to_str().unwrap(),
        ],
    );
    assert_code(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("SLOWER").count(), 3, "{stdout}");
    let v = json(&out_json);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["comparison"]["verdict"], "regressed", "{row:#}");
        let pct = row["comparison"]["change"]["pct"].as_f64().unwrap();
        assert!((pct + 20.0).abs() < 3.0, "{pct}");
        assert_eq!(row["a_tps"].as_array().unwrap().len(), 5);
    }
    let svg = std::fs::read_to_string(&chart).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("valid SVG");
    let legends = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend"))
        .count();
    assert_eq!(legends, 2);
}

/// `compare bad --patch PATCH` on `repo` with the test profile.
fn compare_patch(repo: &Path, work: &Path, patch: &Path, extra: &[&str]) -> Output {
    let profile = profile(work);
    let mut args = vec![
        "bad",
        "--patch",
        patch.to_str().unwrap(),
        "--profile",
        profile.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    pgbisect_sub("compare", repo, &work.join("w"), &args)
}

#[test]
fn compare_with_a_patch_measures_a_new_commit_and_leaves_the_repo_alone() {
    let (repo, _) = history(&[1000, 1000], &[]);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("level"), "700\n").unwrap();
    let patch = work.path().join("slower.patch");
    std::fs::write(&patch, git(repo.path(), &["diff"]) + "\n").unwrap();
    git(repo.path(), &["checkout", "--", "level"]);
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let out_json = work.path().join("c.json");
    let extra = [
        "--clients",
        "8",
        "--runs",
        "4",
        "--json",
        out_json.to_str().unwrap(),
    ];
    assert_code(&compare_patch(repo.path(), work.path(), &patch, &extra), 0);
    let v = json(&out_json);
    assert!(v["b_label"].as_str().unwrap().ends_with("+slower.patch"));
    assert_ne!(v["a"]["id"], v["b"]["id"]);
    let pct = v["rows"][0]["comparison"]["change"]["pct"]
        .as_f64()
        .unwrap();
    assert!((pct + 30.0).abs() < 3.0, "{pct}");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), head);
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
}

#[test]
fn compare_with_a_patch_that_does_not_apply_names_it() {
    let (repo, _) = history(&[1000, 1000], &[]);
    let work = tempfile::tempdir().unwrap();
    let patch = work.path().join("stale.patch");
    let stale = "diff --git a/level b/level\n--- a/level\n+++ b/level\n@@ -1 +1 @@\n-555\n+700\n";
    std::fs::write(&patch, stale).unwrap();
    let out = compare_patch(repo.path(), work.path(), &patch, &[]);
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stale.patch"));
}

#[test]
fn judge_answers_like_git_bisect_run_after_a_hunt() {
    let (repo, shas) = history(&levels_with_drop_at(16, 9), &[4]);
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let none = pgbisect_sub("judge", repo.path(), &w, &[&shas[3]]);
    assert_code(&none, 128);
    let typo = pgbisect_sub("judge", repo.path(), &w, &[&shas[3], "--no-such-flag"]);
    assert_code(&typo, 128);
    assert!(String::from_utf8_lossy(&none.stderr).contains("no hunt"));
    let (hunt, v) = hunt_json(repo.path(), work.path());
    assert_code(&hunt, 0);
    assert_eq!(v["culprits"][0]["commit"], shas[9].as_str());
    let hunt_dir = std::fs::read_dir(w.join("hunts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let svg = std::fs::read_to_string(hunt_dir.join("chart.svg")).unwrap();
    assert!(svg.contains("class=\"culprit\""), "{svg}");
    let judge = |sha: &str| {
        pgbisect_sub(
            "judge",
            repo.path(),
            &w,
            &[sha, "--profile", profile(work.path()).to_str().unwrap()],
        )
    };
    assert_code(&judge(&shas[2]), 0);
    assert_code(&judge(&shas[12]), 1);
    let verdict = work.path().join("judge.json");
    let with_json = pgbisect_sub(
        "judge",
        repo.path(),
        &w,
        &[&shas[13], "--json", verdict.to_str().unwrap()],
    );
    assert_code(&with_json, 1);
    assert_eq!(json(&verdict)["verdict"], "bad-like");
    let other_clients = pgbisect_sub("judge", repo.path(), &w, &[&shas[2], "--clients", "99"]);
    assert_code(&other_clients, 128);
    assert_code(&judge(&shas[4]), 125);
}

/// A two-commit history whose configure.ac says `versions[i]`; the first
/// is tagged `good`, the second `bad`.
fn versioned_history(versions: [&str; 2]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for (i, version) in versions.iter().enumerate() {
        let configure =
            format!("AC_INIT([PostgreSQL], [{version}], [pgsql-bugs@lists.postgresql.org])\n");
        std::fs::write(root.join("configure.ac"), configure).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", &format!("version {version}")]);
        git(root, &["tag", ["good", "bad"][i]]);
    }
    dir
}

/// A PostgreSQL profile with `settings` is refused before anything is
/// built; returns stderr.
fn refused_settings(versions: [&str; 2], settings: &str) -> String {
    let repo = versioned_history(versions);
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("settings.toml");
    std::fs::write(&profile, format!("[server.settings]\n{settings}\n")).unwrap();
    let out = pgbisect(repo.path(), &work.path().join("w"), &good_to_bad(&profile));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        !work.path().join("w/checkout").exists(),
        "nothing is checked out or built"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_mistyped_setting_is_refused_before_building() {
    let stderr = refused_settings(["12devel", "16devel"], "shared_bufers = \"1GB\"");
    assert!(stderr.contains("did you mean shared_buffers"), "{stderr}");
}

#[test]
fn a_setting_none_of_the_versions_has_is_refused_before_building() {
    let stderr = refused_settings(["12devel", "16devel"], "sql_inheritance = \"off\"");
    assert!(
        stderr.contains("PostgreSQL 9.4 to 10") && stderr.contains("12 to 16"),
        "{stderr}"
    );
}
