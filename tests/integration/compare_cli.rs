//! `pgbisect compare` end to end: two commits, or one commit with a patch,
//! measured across client counts through the test profile.

use crate::common;

use common::*;
use std::path::Path;
use std::process::Output;

#[test]
fn compare_prints_a_row_per_client_count_and_writes_json_and_chart() {
    let (repo, _) = history(&[1000, 1000, 800], &[]);
    let work = tempfile::tempdir().unwrap();
    let (out_json, chart) = (work.path().join("c.json"), work.path().join("c.svg"));
    let profile = profile(work.path());
    let out = compare_good_bad(
        repo.path(),
        &work.path().join("w"),
        &["--clients", "1,4", "--runs", "5"],
        &profile,
        &[
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

/// `--measure auto` on real PostgreSQL builds (the slow commit spins in
/// every statement): the timed and the counted runs of both sides, and
/// the measure that decides, in the table and in `--json`.
#[test]
fn compare_auto_measures_both_ways_and_says_which_decides() {
    let tmp = common::pg::reachable_temp_dir("/var/tmp", "pgbisect-compare-");
    let (repo, work) = (tmp.path().join("repo"), tmp.path().join("w"));
    let Some(history) = common::pg_history::built_history() else {
        return;
    };
    history.seed(&repo, &work);
    let profile = common::pg_history::short_smoke_profile(tmp.path(), "");
    let out_json = tmp.path().join("c.json");
    let flags = ["--measure", "auto", "--json", out_json.to_str().unwrap()];
    let out = compare_good_bad(
        &repo,
        &work,
        &["--clients", "1", "--runs", "3"],
        &profile,
        &flags,
    );
    assert_code(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for said in [
        "A tps",
        "A instr/tx",
        "deciding measure",
        "      1 clients: ",
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    let v = json(&out_json);
    assert_eq!(v["rows"][0]["a_tps"].as_array().unwrap().len(), 3, "{v:#}");
    let counted = &v["both_ways"]["counted"][0];
    assert_eq!(
        counted["b_instructions"].as_array().unwrap().len(),
        3,
        "{v:#}"
    );
    let counts = counted["comparison"]["change"]["pct"].as_f64().unwrap();
    assert!(counts < -10.0, "the spin costs instructions: {v:#}");
    let deciding = &v["both_ways"]["deciding"][0];
    assert!(deciding["measure"].is_string(), "{v:#}");
}

/// `compare good bad` on `repo` with `counts` (clients, runs), the
/// `profile` and `extra` flags.
fn compare_good_bad(
    repo: &Path,
    work: &Path,
    counts: &[&str],
    profile: &Path,
    extra: &[&str],
) -> Output {
    let mut args = vec!["good", "bad"];
    args.extend_from_slice(counts);
    args.extend(["--profile", profile.to_str().unwrap()]);
    args.extend_from_slice(extra);
    pgbisect_sub("compare", repo, work, &args)
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
fn compare_without_any_result_on_a_side_exits_4() {
    let (repo, _) = history(&[1000, 1000], &[]);
    let work = tempfile::tempdir().unwrap();
    let failing = profile_with(work.path(), "failing.toml", "false");
    let out = compare_good_bad(
        repo.path(),
        &work.path().join("w"),
        &["--clients", "1", "--runs", "2"],
        &failing,
        &[],
    );
    assert_code(&out, 4);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("no data"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no run gave a result for A at 1 clients, B at 1 clients"),
        "{stderr}"
    );
}

/// A profile's `clients` and `threshold` are what `compare` measures and
/// decides with when the flags do not say otherwise; the flags override
/// them (docs/src/profiles.md).
#[test]
fn compare_takes_the_profiles_clients_and_threshold_unless_flags_override() {
    let (repo, _) = history(&[1000, 1000, 800], &[]);
    let work = tempfile::tempdir().unwrap();
    let listing = work.path().join("listing.toml");
    let text = format!("{PROFILE}clients = [2, 3]\n[hunt]\nthreshold = 40\n");
    std::fs::write(&listing, text).unwrap();
    let rows = |extra: &[&str]| {
        let out_json = work.path().join("c.json");
        let mut flags = vec!["--runs", "5", "--json", out_json.to_str().unwrap()];
        flags.extend_from_slice(extra);
        let out = compare_good_bad(repo.path(), &work.path().join("w"), &[], &listing, &flags);
        assert_code(&out, 0);
        let v = json(&out_json);
        let rows = v["rows"].as_array().unwrap().clone();
        rows.iter()
            .map(|r| {
                (
                    r["clients"].as_u64().unwrap(),
                    r["comparison"]["verdict"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    let from_profile = rows(&[]);
    let clients: Vec<u64> = from_profile.iter().map(|(c, _)| *c).collect();
    assert_eq!(clients, [2, 3], "the profile's clients");
    for (_, verdict) in &from_profile {
        assert_ne!(verdict, "regressed", "a 20% drop under the profile's 40%");
    }
    let given = rows(&["--clients", "5", "--threshold", "5"]);
    assert_eq!(given.len(), 1);
    assert_eq!(given[0].0, 5, "--clients overrides the profile");
    assert_eq!(given[0].1, "regressed", "--threshold overrides the profile");
}
