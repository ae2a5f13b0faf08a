//! `pgbisect judge` end to end: the exit codes `git bisect run` reads, before
//! and after a hunt.

use crate::common;

use common::*;

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
    let hunt_dir = only_hunt_dir(&w);
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
