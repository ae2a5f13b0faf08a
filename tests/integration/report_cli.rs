//! `pgbisect report` end to end: the binary renders a hunt result found in
//! a work dir, and says clearly when there is none; a hunt writes the
//! reports that `report` renders again.

use crate::common;

use common::{assert_code, bin, history, json, levels_with_drop_at, only_hunt_dir, profile};
use std::path::Path;
use std::process::Output;

const FIXTURE: &str = include_str!("../fixtures/reports/hunt.json");

/// Runs `pgbisect` with `args` in `cwd`, with the cache (the default work
/// dirs) under `cwd/cache`.
fn pgbisect(args: &[&str], cwd: &Path) -> Output {
    bin()
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .output()
        .expect("pgbisect runs")
}

fn work_dir_with_fixture() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    let hunt = work.path().join("hunts").join("x");
    std::fs::create_dir_all(&hunt).unwrap();
    std::fs::write(hunt.join("result.json"), FIXTURE).unwrap();
    work
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn renders_the_newest_hunt_as_text() {
    let work = work_dir_with_fixture();
    let dir = work.path().to_str().unwrap();
    let text = stdout(&pgbisect(&["report", "--work-dir", dir], work.path()));
    let expected = pgbisect::report::text(&serde_json::from_str(FIXTURE).unwrap());
    assert_eq!(text, expected);
    assert!(text.contains("first bad commit: "), "{text}");
    // The why-runs kept in result.json are rendered again.
    assert!(
        text.contains("why 009ee824 is slower than 1fa540e4"),
        "{text}"
    );
    assert!(text.contains("LWLock:BufferMapping"), "{text}");
    // Within 72 columns, but for a path that cannot be cut.
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= 72 || l.contains("/profile-diff.svg")),
        "{text}"
    );
}

#[test]
fn a_hunt_still_running_shows_its_progress_from_the_journal() {
    use pgbisect::journal::Event;
    use pgbisect::model::{Prepared, RunOutcome};
    let work = tempfile::tempdir().unwrap();
    let hunt = work.path().join("hunts").join("h");
    std::fs::create_dir_all(&hunt).unwrap();
    let (good, bad) = ("a".repeat(40), "b".repeat(40));
    let run = |n: u64, commit: &str, tps: f64| Event::Run {
        run: n,
        commit: commit.into(),
        clients: 1,
        seconds: None,
        outcome: RunOutcome::tps_only(tps),
        host: None,
    };
    let events = [
        Event::Start {
            good: good.clone(),
            bad: bad.clone(),
            plan: "p".into(),
            at: "2026-12-05T16:00:00Z".into(),
        },
        Event::Prepared {
            commit: good.clone(),
            prepared: Prepared::Ready { cached: false },
        },
        run(1, &good, 1000.0),
        run(2, &bad, 800.0),
    ];
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    std::fs::write(hunt.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    let dir = work.path().to_str().unwrap();
    // Nothing holds the work dir: a hunt without a result is no report.
    assert_code(&pgbisect(&["report", "--work-dir", dir], work.path()), 2);
    let held = pgbisect::workspace::Lock::acquire(work.path()).unwrap();
    let text = stdout(&pgbisect(&["report", "--work-dir", dir], work.path()));
    let me = std::process::id();
    assert!(
        text.starts_with(&format!(
            "pgbisect: hunt aaaaaaaa..bbbbbbbb still running (pgbisect, pid {me})\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("runs:    2 measured, 0 failed, of 2 commits"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{dir}/hunts/h/journal.jsonl")),
        "{text}"
    );
    // Once it has written its result, the result is the report.
    std::fs::write(hunt.join("result.json"), FIXTURE).unwrap();
    let text = stdout(&pgbisect(&["report", "--work-dir", dir], work.path()));
    assert!(text.contains("Finding\n-------\n"), "{text}");
    drop(held);
}

#[test]
fn renders_markdown_json_and_email_into_a_file() {
    let work = work_dir_with_fixture();
    let dir = work.path().to_str().unwrap();
    let md = stdout(&pgbisect(
        &[
            "report",
            "--work-dir",
            dir,
            "--hunt",
            "x",
            "--format",
            "markdown",
        ],
        work.path(),
    ));
    assert!(md.contains("| commit | judgement |"), "{md}");
    let json = stdout(&pgbisect(
        &["report", "--work-dir", dir, "--format", "json"],
        work.path(),
    ));
    let back: pgbisect::report::findings::HuntReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, serde_json::from_str(FIXTURE).unwrap());
    let out_file = work.path().join("mail.eml");
    let args = [
        "report",
        "--work-dir",
        dir,
        "--format",
        "email",
        "--from",
        "Jane <jane@example.org>",
        "--to",
        "pgsql-hackers@lists.postgresql.org",
        "--output",
        out_file.to_str().unwrap(),
    ];
    assert_eq!(stdout(&pgbisect(&args, work.path())), "");
    let mail = std::fs::read_to_string(&out_file).unwrap();
    assert!(
        mail.starts_with("From: Jane <jane@example.org>\r\n"),
        "{mail}"
    );
    assert!(mail.contains("\r\nSubject: pgbisect: "), "{mail}");
}

#[test]
fn report_writes_the_chart_on_demand() {
    let work = work_dir_with_fixture();
    let chart = work.path().join("hunt.svg");
    let args = [
        "report",
        "--work-dir",
        work.path().to_str().unwrap(),
        "--chart",
        chart.to_str().unwrap(),
    ];
    assert!(stdout(&pgbisect(&args, work.path())).contains("first bad commit"));
    let svg = std::fs::read_to_string(&chart).unwrap();
    let fixture: pgbisect::report::findings::HuntReport = serde_json::from_str(FIXTURE).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    for culprit in &fixture.culprits {
        assert!(
            svg.contains(&culprit.commit[..8]),
            "no mark for {}",
            culprit.commit
        );
    }
}

#[test]
fn report_outputs_that_are_links_are_refused_and_their_targets_untouched() {
    let work = work_dir_with_fixture();
    let target = work.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let link = work.path().join("report.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for flag in ["--output", "--chart"] {
        let args = [
            "report",
            "--work-dir",
            work.path().to_str().unwrap(),
            flag,
            link.to_str().unwrap(),
        ];
        let out = pgbisect(&args, work.path());
        assert!(!out.status.success(), "{flag}: {out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("is a symbolic link"), "{flag}: {said}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }
    // A hard link is a plain file: it is replaced, its other name kept.
    std::fs::remove_file(&link).unwrap();
    std::fs::hard_link(&target, &link).unwrap();
    let args = [
        "report",
        "--work-dir",
        work.path().to_str().unwrap(),
        "--output",
        link.to_str().unwrap(),
    ];
    assert_code(&pgbisect(&args, work.path()), 0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(
        std::fs::read_to_string(&link)
            .unwrap()
            .contains("first bad commit")
    );
}

#[test]
fn empty_work_dir_says_where_it_looked_and_what_to_run() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_str().unwrap();
    let out = pgbisect(&["report", "--work-dir", dir], work.path());
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{dir}/hunts/*/result.json")),
        "{stderr}"
    );
    assert!(stderr.contains("pgbisect --good REV --bad REV"), "{stderr}");
}

#[test]
fn unreadable_result_names_the_file() {
    let work = tempfile::tempdir().unwrap();
    let hunt = work.path().join("hunts").join("broken");
    std::fs::create_dir_all(&hunt).unwrap();
    std::fs::write(hunt.join("result.json"), "{\"outcome\": ").unwrap();
    let out = pgbisect(
        &["report", "--work-dir", work.path().to_str().unwrap()],
        work.path(),
    );
    assert_code(&out, 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken/result.json"), "{stderr}");
}

#[test]
fn email_without_any_sender_says_how_to_give_one() {
    // HOME in the temp dir: no global git identity to fall back on.
    let work = work_dir_with_fixture();
    let dir = work.path().to_str().unwrap();
    let out = bin()
        .args(["report", "--work-dir", dir, "--format", "email"])
        .current_dir(work.path())
        .env("HOME", work.path())
        .env("XDG_CONFIG_HOME", work.path().join("config"))
        .output()
        .expect("pgbisect runs");
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--from"), "{stderr}");
    assert!(
        stderr.contains("git config --global user.email"),
        "{stderr}"
    );
}

#[test]
fn email_is_from_the_repository_s_git_identity_to_hackers() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("proj");
    std::fs::create_dir_all(&repo).unwrap();
    common::git(&repo, &["init", "-q"]);
    common::git(&repo, &["config", "user.name", "Jane Doe"]);
    common::git(&repo, &["config", "user.email", "jane@example.org"]);
    let hunt = root.path().join("cache/pgbisect/proj/hunts/x");
    std::fs::create_dir_all(&hunt).unwrap();
    std::fs::write(hunt.join("result.json"), FIXTURE).unwrap();
    let out = bin()
        .args(["report", "--repo", "proj", "--format", "email"])
        .current_dir(root.path())
        .env("XDG_CACHE_HOME", root.path().join("cache"))
        .env("HOME", root.path())
        .output()
        .expect("pgbisect runs");
    let mail = stdout(&out);
    assert!(
        mail.starts_with("From: Jane Doe <jane@example.org>\r\n"),
        "{mail}"
    );
    assert!(
        mail.contains("\r\nTo: pgsql-hackers@lists.postgresql.org\r\n"),
        "{mail}"
    );
}

#[test]
fn default_work_dir_is_the_hunts() {
    // A hunt in repository `proj` keeps its results in
    // $XDG_CACHE_HOME/pgbisect/proj; `report --repo proj` must look there.
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("proj");
    std::fs::create_dir_all(&repo).unwrap();
    let hunt = root.path().join("cache/pgbisect/proj/hunts/x");
    std::fs::create_dir_all(&hunt).unwrap();
    std::fs::write(hunt.join("result.json"), FIXTURE).unwrap();
    let text = stdout(&pgbisect(
        &["report", "--repo", repo.to_str().unwrap()],
        root.path(),
    ));
    assert!(text.contains("first bad commit: "), "{text}");
}

#[test]
fn hunt_writes_reports_and_report_renders_them_again() {
    let (repo, shas) = history(&levels_with_drop_at(12, 7), &[]);
    let work = tempfile::tempdir().unwrap();
    let profile_path = profile(work.path());
    let work_dir = work.path().join("w");
    let out = common::pgbisect(
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
    assert_code(&out, 0);
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
    let again = bin()
        .args(["report", "--work-dir"])
        .arg(&work_dir)
        .output()
        .expect("pgbisect runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
}
