//! Hunts with the `pgbisect` binary end to end, on real git repositories
//! made in temp dirs and measured through shell-command profiles: verdicts,
//! usage errors, resuming from the journal, interrupted and concurrent
//! hunts, and the small listing commands.

use crate::common;

use common::*;

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
    let journal =
        std::fs::read_to_string(only_hunt_dir(&work.path().join("w")).join("journal.jsonl"))
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
    assert_code(&out, 1);
    assert_eq!(v["outcome"], "no-regression");
    assert!(v["culprits"].as_array().unwrap().is_empty());
}

#[test]
fn unbuildable_commits_are_skipped() {
    let (repo, shas) = history(&levels_with_drop_at(20, 9), &[5, 10, 11, 14]);
    let work = tempfile::tempdir().unwrap();
    let (out, v) = hunt_json(repo.path(), work.path());
    assert_code(&out, 0);
    assert_eq!(v["culprits"][0]["commit"], shas[9].as_str(), "{v:#}");
}

#[test]
fn unbuildable_parent_leaves_a_range_not_a_guess() {
    let (repo, shas) = history(&levels_with_drop_at(20, 9), &[8]);
    let work = tempfile::tempdir().unwrap();
    let (out, v) = hunt_json(repo.path(), work.path());
    assert_code(&out, 3);
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
    assert_code(&out, 2);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_revision_is_a_usage_error() {
    let stderr = usage_error(&[1000, 900], "no-such-tag", "bad");
    assert!(stderr.contains("no-such-tag"), "{stderr}");
}

#[test]
fn a_failed_hunt_still_writes_its_json() {
    let (repo, _) = history(&[1000, 900], &[]);
    let work = tempfile::tempdir().unwrap();
    let profile = profile(work.path());
    let json = work.path().join("result.json");
    let args = [
        "--good",
        "no-such-tag",
        "--bad",
        "bad",
        "--profile",
        profile.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let out = pgbisect(repo.path(), &work.path().join("w"), &args);
    assert_code(&out, 2);
    let body: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(body["outcome"], "failed");
    assert_eq!(body["exit_code"], 2);
    assert!(
        body["reason"].as_str().unwrap().contains("no-such-tag"),
        "{body}"
    );
}

#[test]
fn good_must_be_an_ancestor_of_bad() {
    let stderr = usage_error(&[1000, 900, 800], "bad", "good");
    assert!(stderr.contains("ancestor"), "{stderr}");
}

#[test]
fn a_placement_the_machine_cannot_give_is_a_usage_error() {
    let (repo, _) = history(&[1000, 900], &[]);
    let work = tempfile::tempdir().unwrap();
    let far = work.path().join("far.toml");
    std::fs::write(&far, "[placement]\nserver-cpus = \"1000\"\n").unwrap();
    let args = ["--good", "good", "--bad", "bad", "--profile"];
    let mut args: Vec<&str> = args.to_vec();
    args.push(far.to_str().unwrap());
    let out = pgbisect(repo.path(), &work.path().join("w"), &args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("server-cpus") && stderr.contains("may use"),
        "{stderr}"
    );
    // Nothing was built before the placement was checked.
    assert!(!work.path().join("w/installs").exists());
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
        &good_to_bad(&bad_profile),
    );
    assert_code(&out, 2);
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
    let before = format!("echo run >> {}", calls.display());
    let profile_path = profile_with(work.path(), "counting.toml", &before);
    let args = good_to_bad(&profile_path);
    let wdir = work.path().join("w");
    let first = pgbisect(repo.path(), &wdir, &args);
    assert_code(&first, 0);
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
    assert_code(&second, 0);
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
    assert_code(&third, 0);
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
    let out = run(&["profiles"]);
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
    let out = run(&["--work-dir", work.path().to_str().unwrap()]);
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--good"));
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
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("pgbisect report --format email"));
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

    let out = resume(&wdir);
    assert_code(&out, 0);
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
    let second = pgbisect(repo.path(), &wdir, &good_to_bad(&slow));
    first.kill().unwrap();
    first.wait().unwrap();
    assert_code(&second, 2);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("pid {}", first.id())) && stderr.contains("--work-dir"),
        "{stderr}"
    );
}

#[test]
fn resume_without_a_hunt_says_where_it_looked() {
    let work = tempfile::tempdir().unwrap();
    let out = resume(work.path());
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("command.json"), "{stderr}");
}

#[test]
fn resume_takes_a_new_time_budget() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile(work.path());
    let args = ["--good", "good", "--bad", "bad", "--profile"];
    let (repo, _) = history(&[1000, 800], &[]);
    let first = pgbisect(
        repo.path(),
        &w,
        &[&args[..], &[profile.to_str().unwrap()]].concat(),
    );
    assert_code(&first, 0);
    let again = |budget: &[&str]| {
        bin()
            .args(["resume", "--work-dir"])
            .arg(&w)
            .args(budget)
            .output()
            .expect("pgbisect runs")
    };
    // Read, and checked as a hunt's own budget is.
    let bare = again(&["--time-budget", "8"]);
    assert_code(&bare, 2);
    let stderr = String::from_utf8_lossy(&bare.stderr);
    assert!(
        stderr.contains("--time-budget: `8` has no unit"),
        "{stderr}"
    );
    assert_code(&again(&["--time-budget", "2h"]), 0);
    let saved = json(&only_hunt_dir(&w).join("command.json"));
    assert_eq!(saved["time"]["budget"], "2h", "{saved:#}");
}

/// A hunt begun by the release that saved its flags as `command.json`
/// (tests/fixtures/command-0.2.json, made by that release from the flags
/// below) resumes in its own folder, replaying its journal, and is saved
/// as a plan from then on.
#[test]
fn a_hunt_saved_by_the_release_before_the_plan_resumes_in_its_folder() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let profile = profile(work.path());
    let out = work.path().join("out.json");
    let (repo, _) = history(&[1000, 800], &[]);
    let flags = [
        "--clients",
        "4",
        "--threshold",
        "7",
        "--max-runs",
        "12",
        "--time-budget",
        "2h",
        "--format",
        "markdown",
        "--json",
    ];
    let first = pgbisect(
        repo.path(),
        &w,
        &[&good_to_bad(&profile)[..], &flags, &[out.to_str().unwrap()]].concat(),
    );
    assert_code(&first, 0);
    let hunt = only_hunt_dir(&w);
    // The folder the previous release gave these flags and this profile.
    let name = hunt.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with("-c4-d112d0d2"), "{name}");
    let earlier = include_str!("../fixtures/command-0.2.json")
        .replace("/tmp/fx/r", repo.path().to_str().unwrap())
        .replace("/tmp/fx/w", w.to_str().unwrap())
        .replace("/tmp/fx/profile.toml", profile.to_str().unwrap())
        .replace("\"out.json\"", &format!("{:?}", out.to_str().unwrap()));
    std::fs::write(hunt.join("command.json"), earlier).unwrap();
    std::fs::remove_file(&out).unwrap();
    let again = resume(&w);
    assert_code(&again, 0);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("runs from its journal are reused"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(w.join("hunts")).unwrap().count(), 1);
    assert!(out.exists(), "--json was not written again: {stderr}");
    let saved = json(&hunt.join("command.json"));
    assert_eq!(saved["layout"], 2, "{saved:#}");
    assert_eq!(saved["plan"]["config"]["clients"], 4, "{saved:#}");
    assert_eq!(saved["time"]["budget"], "2h", "{saved:#}");
}

#[test]
fn completions_are_scripts_the_shells_accept() {
    let out = run(&["completions", "bash"]);
    assert_code(&out, 0);
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("resume") && script.contains("--good"),
        "{script}"
    );
    let check = std::process::Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
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
    assert_code(&out, 2);
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

/// A build that fails for lack of space stops the hunt without taking
/// the commit for one that does not build; with space again, the rerun
/// builds it and names it.
#[test]
fn a_full_disk_during_a_build_stops_the_hunt_and_the_rerun_builds_again() {
    let (repo, shas) = history(&levels_with_drop_at(16, 9), &[]);
    let work = tempfile::tempdir().unwrap();
    let flag = work.path().join("disk-full");
    std::fs::write(&flag, "").unwrap();
    let full = format!(
        "if [ -e {} ] && [ $PGBISECT_COMMIT = {} ]; then echo 'cp: error writing level: No space \
         left on device'; exit 1; fi; test ! -e broken",
        flag.display(),
        shas[9]
    );
    let text = PROFILE.replace(
        "command = \"test ! -e broken",
        &format!("command = \"{full}"),
    );
    assert_ne!(text, PROFILE);
    let profile = work.path().join("full.toml");
    std::fs::write(&profile, text).unwrap();
    let w = work.path().join("w");
    let json = work.path().join("out.json");
    let args = [
        "--good",
        "good",
        "--bad",
        "bad",
        "--profile",
        profile.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let out = pgbisect(repo.path(), &w, &args);
    assert_code(&out, 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no space left on device"), "{stderr}");
    assert!(stderr.contains("rerun the same command"), "{stderr}");
    let journal = std::fs::read_to_string(only_hunt_dir(&w).join("journal.jsonl")).unwrap();
    assert!(!journal.contains("unbuildable"), "{journal}");
    std::fs::remove_file(&flag).unwrap();
    let out = pgbisect(repo.path(), &w, &args);
    assert_code(&out, 0);
    assert_eq!(
        common::json(&json)["culprits"][0]["commit"],
        shas[9].as_str()
    );
}

/// `--measure auto` measures the endpoints counted, here: with a custom
/// benchmark command, or with hosts, it is refused before anything is
/// built, saying what to give instead; `compare` too, when its profile
/// asks for `auto`.
#[test]
fn measure_auto_is_refused_where_nothing_can_count() {
    let (repo, _) = history(&[1000, 1000, 800], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let run = |profile: &std::path::Path, extra: &[&str]| {
        bin()
            .args([
                "--good",
                "good",
                "--bad",
                "bad",
                "--measure",
                "auto",
                "--profile",
            ])
            .arg(profile)
            .args(extra)
            .arg("--repo")
            .arg(repo.path())
            .arg("--work-dir")
            .arg(&work)
            .output()
            .unwrap()
    };
    let out = run(&profile(tmp.path()), &[]);
    assert_code(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot count instructions"), "{said}");
    assert!(said.contains("--measure tps"), "{said}");
    assert!(!work.join("installs").exists(), "nothing built");

    // A PostgreSQL profile on hosts: counted runs are made here only.
    let smoke = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bisect-profiles/smoke.toml");
    let out = run(&smoke, &["--hosts", "pgbisect-a"]);
    assert_code(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    let valgrind = std::process::Command::new("valgrind")
        .arg("--version")
        .output();
    if valgrind.is_ok_and(|o| o.status.success()) {
        assert!(
            said.contains("--measure auto counts instructions on this machine"),
            "{said}"
        );
    } else {
        assert!(said.contains("install it"), "{said}");
    }
    assert!(!work.join("installs").exists(), "nothing built");

    let asks_auto = tmp.path().join("auto.toml");
    std::fs::write(&asks_auto, format!("{PROFILE}[hunt]\nmeasure = \"auto\"\n")).unwrap();
    let out = bin()
        .args(["compare", "good", "bad", "--profile"])
        .arg(&asks_auto)
        .arg("--repo")
        .arg(repo.path())
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert_code(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot count instructions"), "{said}");
    assert!(said.contains("--measure tps"), "{said}");
    assert!(!work.join("compare").exists(), "nothing measured");
}
