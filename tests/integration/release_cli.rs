//! Release names as endpoints, end to end: a hunt from a release tag on its
//! stable branch to master, in a git repository made in a temp dir, measured
//! through a shell-command profile.

use crate::common;

use common::*;
use std::path::Path;
use std::process::Output;

/// master's line of `levels.len()` commits, and `REL9_5_STABLE` branched
/// off commit `branch_at` with a `Stamp 9.5.0.` commit at `release_level`,
/// tagged `REL9_5_0` as PostgreSQL tags releases. Returns the master SHAs
/// and the tag's commit.
fn release_history(
    levels: &[u32],
    branch_at: usize,
    release_level: u32,
) -> (tempfile::TempDir, Vec<String>, String) {
    let (dir, master) = history(levels, &[]);
    let root = dir.path();
    git(root, &["branch", "-m", "main", "master"]);
    git(
        root,
        &["checkout", "-q", "-b", "REL9_5_STABLE", &master[branch_at]],
    );
    std::fs::write(root.join("level"), format!("{release_level}\n")).unwrap();
    std::fs::write(root.join("version"), "9.5.0\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "Stamp 9.5.0."]);
    git(root, &["tag", "-a", "-m", "9.5.0", "REL9_5_0"]);
    let release = git(root, &["rev-parse", "HEAD"]);
    git(root, &["checkout", "-q", "master"]);
    (dir, master, release)
}

/// `pgbisect --good REL9_5_0 --bad master` with the test profile.
fn hunt_from_rel9_5_0(repo: &Path, work: &Path, profile: &Path) -> Output {
    let profile = profile.to_str().unwrap();
    let args = [
        "--good",
        "REL9_5_0",
        "--bad",
        "master",
        "--profile",
        profile,
    ];
    pgbisect(repo, work, &args)
}

fn short(sha: &str) -> &str {
    &sha[..8]
}

#[test]
fn a_hunt_from_a_release_tag_to_master_runs_from_where_the_release_left() {
    let (repo, master, release) = release_history(&levels_with_drop_at(14, 9), 3, 1000);
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile(work.path());
    let out = hunt_from_rel9_5_0(repo.path(), &w, &profile);
    assert_code(&out, 0);
    let v = json(&only_hunt_dir(&w).join("result.json"));
    assert_eq!(v["culprits"][0]["commit"], master[9].as_str(), "{v:#}");
    assert_eq!(v["good"]["id"], master[3].as_str());
    assert_eq!(v["bad"]["id"], master[13].as_str());
    let moved = format!(
        "REL9_5_0 is on REL9_5_STABLE, off master's line: hunting from {}, where it left master",
        short(&master[3])
    );
    let good = &v["resolution"][0];
    assert_eq!(good["given"], "REL9_5_0");
    assert_eq!(good["resolved"], release.as_str());
    assert_eq!(good["measured"], master[3].as_str());
    assert_eq!(good["reasons"], serde_json::json!([moved]));
    let bad = &v["resolution"][1];
    assert_eq!(bad["given"], "master");
    assert_eq!(bad["measured"], master[13].as_str());
    assert_eq!(bad["reasons"], serde_json::json!([]));
    // The totals count the release check's runs with the hunt's.
    let runs_in = |file: &str| {
        let text = std::fs::read_to_string(only_hunt_dir(&w).join(file)).unwrap();
        text.lines()
            .filter(|l| l.contains("\"event\":\"run\""))
            .count() as u64
    };
    let (checked, hunted) = (runs_in("release-check.jsonl"), runs_in("journal.jsonl"));
    assert!(checked >= 8, "{checked}");
    assert_eq!(
        v["totals"]["measured_runs"],
        checked + hunted,
        "{:#}",
        v["totals"]
    );

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--good REL9_5_0: {} ({moved})", short(&master[3]))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("--bad master: {}\n", short(&master[13]))),
        "{stderr}"
    );
    let report = std::fs::read_to_string(only_hunt_dir(&w).join("report.txt")).unwrap();
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&format!("- --good: {moved}")), "{report}");

    // judge and compare read the same names the same way.
    let judge = pgbisect_sub(
        "judge",
        repo.path(),
        &w,
        &[&master[11], "--good", "9.5", "--bad", "master"],
    );
    assert_code(&judge, 1);
    let compare = pgbisect_sub(
        "compare",
        repo.path(),
        &w,
        &[
            "9.5",
            "master",
            "--clients",
            "1",
            "--runs",
            "2",
            "--profile",
            profile.to_str().unwrap(),
        ],
    );
    assert_code(&compare, 0);
    let table = String::from_utf8_lossy(&compare.stdout);
    assert!(
        table.contains(&format!("A: {} 9.5 (tag REL9_5_0)", short(&release))),
        "{table}"
    );
}

#[test]
fn a_short_release_name_is_said_in_the_report_and_a_later_good_is_refused() {
    let (repo, master, release) = release_history(&[1000; 6], 2, 1000);
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile(work.path());
    let profile = profile.to_str().unwrap();
    let out = pgbisect(
        repo.path(),
        &w,
        &["--good", "REL9_5", "--bad", "master", "--profile", profile],
    );
    assert_code(&out, 1);
    let report = std::fs::read_to_string(only_hunt_dir(&w).join("report.txt")).unwrap();
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "- --good: REL9_5 -> tag REL9_5_0 ({})",
            short(&release)
        )),
        "{report}"
    );
    assert!(
        flat.contains("- --good: REL9_5_0 is on REL9_5_STABLE"),
        "{report}"
    );

    let later = pgbisect(
        repo.path(),
        &work.path().join("w2"),
        &[
            "--good",
            "master",
            "--bad",
            &master[1],
            "--profile",
            profile,
        ],
    );
    assert_code(&later, 2);
    let stderr = String::from_utf8_lossy(&later.stderr);
    assert!(stderr.contains("swap --good and --bad"), "{stderr}");
    let unknown = pgbisect(
        repo.path(),
        &work.path().join("w3"),
        &["--good", "9.6", "--bad", "master", "--profile", profile],
    );
    assert_code(&unknown, 2);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("tag REL9_6_0 or branch REL9_6_STABLE"),
        "{stderr}"
    );
}

#[test]
fn a_release_faster_than_where_it_left_master_is_measured_and_said() {
    // The stable branch made 9.5.0 25% faster than its branch point; master
    // then lost 20% at commit 9.
    let (repo, master, _) = release_history(&levels_with_drop_at(14, 9), 3, 1250);
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile(work.path());
    let out = hunt_from_rel9_5_0(repo.path(), &w, &profile);
    assert_code(&out, 0);
    let hunt_dir = only_hunt_dir(&w);
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["culprits"][0]["commit"], master[9].as_str(), "{v:#}");
    let check = &v["release_check"];
    assert_eq!(check["finding"], "release-faster", "{check:#}");
    let change = check["comparison"]["change"]["pct"].as_f64().unwrap();
    assert!((change + 20.0).abs() < 3.0, "{change}");
    let report = std::fs::read_to_string(hunt_dir.join("report.txt")).unwrap();
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("or part of it, came from commits on REL9_5_STABLE, not from master"),
        "{report}"
    );
    // The check's runs are journaled apart; a rerun makes none again.
    let journal = hunt_dir.join("release-check.jsonl");
    let runs = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"event\":\"run\""))
            .count()
    };
    let first = runs(&journal);
    assert!(first >= 8, "{first} runs");
    let again = hunt_from_rel9_5_0(repo.path(), &w, &profile);
    assert_code(&again, 0);
    assert_eq!(runs(&journal), first);
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["release_check"]["finding"], "release-faster");
}

#[test]
fn a_budgeted_hunt_from_a_release_says_its_plan_and_keeps_to_the_budget() {
    // Each run takes a second: the release check's quarter of a 30 s
    // budget holds about three rounds, too few to settle it.
    let (repo, _, _) = release_history(&levels_with_drop_at(40, 29), 3, 1000);
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile_with(work.path(), "slow.toml", "sleep 1");
    let started = std::time::Instant::now();
    let out = pgbisect(
        repo.path(),
        &w,
        &[
            "--good",
            "REL9_5_0",
            "--bad",
            "master",
            "--profile",
            profile.to_str().unwrap(),
            "--time-budget",
            "30s",
        ],
    );
    let took = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(took < 45.0, "a 30 s budget took {took:.0} s: {stderr}");
    assert!(stderr.contains("plan: 1. REL9_5_0 against"), "{stderr}");
    assert!(stderr.contains("plan: 2. the endpoints"), "{stderr}");
    assert!(stderr.contains("plan: about 9 builds"), "{stderr}");
    assert!(stderr.contains("s of the time budget"), "{stderr}");
    let hunt_dir = only_hunt_dir(&w);
    let v = json(&hunt_dir.join("result.json"));
    let check = &v["release_check"];
    assert!(
        check["reason"]
            .as_str()
            .is_some_and(|r| r.contains("share of the time budget")),
        "{check:#}"
    );
    // The search got the rest: master was built and measured.
    assert!(v["endpoints"]["n_new"].as_u64().unwrap() >= 2, "{v:#}");
    let report = std::fs::read_to_string(hunt_dir.join("report.txt")).unwrap();
    for text in [&report, &stdout.to_string(), &stderr.to_string()] {
        assert!(!text.contains("inf%"), "{text}");
    }
}
