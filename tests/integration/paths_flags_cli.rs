//! Output paths and flag values refused before anything runs: a folder
//! link planted on the way to any output a command writes, `--html`
//! naming a file, and watch flag values no night can use. Each refusal
//! exits 2, says what to give, and leaves nothing built, measured or
//! written.

use crate::common;

use common::*;
use std::path::Path;

/// The stderr of `out`, which must have exited 2 (a usage error).
fn usage_error(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

#[test]
fn watch_flag_values_that_make_no_sense_are_refused_before_the_night() {
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let site = tmp.path().join("site");
    let site = site.to_str().unwrap();
    let cases: [(&[&str], &str); 13] = [
        (
            &["--html", site, "--commit-url", "javascript:alert(1)//{sha}"],
            "is not an http:// or https:// URL",
        ),
        (
            &["--html", site, "--commit-url", "https://example.org/c"],
            "has no {sha} in it",
        ),
        (&["--replay", "2024-02-30..2024-03-01"], "give two dates"),
        (
            &["--replay", "2024-03-01..2024-02-01"],
            "UNTIL comes before SINCE",
        ),
        (
            &["--replay", "2024-01-01..2024-02-01", "--every", "0"],
            "at least 1",
        ),
        (&["--max-rounds", "0"], "at least 1"),
        (&["--threshold", "0"], "is not a percentage"),
        (&["--count-threshold", "-1"], "a positive percentage"),
        (&["--rounds", "0"], "at least 1"),
        (&["--per-night", "0"], "at least 1"),
        (&["--clients", "1,0"], "at least 1"),
        (&["--deadline", "25:00"], "25:00"),
        (&["--branch", "main\u{1b}[2J"], "control character"),
    ];
    for (flags, said) in cases {
        let out = pgbisect_sub("watch", repo.path(), &work, flags);
        let err = usage_error(&out);
        assert!(err.contains(said), "{flags:?}: {err}");
        assert!(!work.exists(), "{flags:?}: the work dir was made");
    }
}

#[test]
fn html_naming_a_file_is_refused_before_anything_is_measured() {
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let file = tmp.path().join("site.html");
    std::fs::write(&file, "mine").unwrap();
    let profile = profile(tmp.path());
    let out = pgbisect_sub(
        "watch",
        repo.path(),
        &work,
        &[
            "--branch",
            "main",
            "--profile",
            profile.to_str().unwrap(),
            "--html",
            file.to_str().unwrap(),
        ],
    );
    let err = usage_error(&out);
    assert!(err.contains("is a file, not a folder"), "{err}");
    assert!(err.contains("give --html another path"), "{err}");
    assert!(err.contains("hint: give --html a folder"), "{err}");
    assert!(!err.contains("--work-dir"), "{err}");
    assert!(!work.exists(), "nothing measured");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

/// `dir/out`, a link to the empty folder `dir/elsewhere`.
fn planted_link(dir: &Path) -> std::path::PathBuf {
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let link = dir.join("out");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    link
}

#[test]
fn every_output_through_a_planted_folder_link_is_refused_with_nothing_written() {
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let link = planted_link(tmp.path());
    let work = tmp.path().join("w");
    let profile = profile(tmp.path());
    let profile = profile.to_str().unwrap();
    let file = |name: &str| link.join(name).to_str().unwrap().to_string();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let at = [("--repo", repo.path()), ("--work-dir", work.as_path())];
    let at: Vec<String> = at
        .iter()
        .flat_map(|(f, p)| [f.to_string(), p.to_str().unwrap().to_string()])
        .collect();
    let work_only = s(&["--work-dir", work.to_str().unwrap()]);
    // judge exits 128 on any error, which stops `git bisect run`.
    let runs: Vec<(Vec<String>, Vec<String>, i32)> = vec![
        (
            s(&[
                "compare",
                "good",
                "bad",
                "--profile",
                profile,
                "--json",
                &file("c.json"),
            ]),
            at.clone(),
            2,
        ),
        (
            s(&[
                "compare",
                "good",
                "bad",
                "--profile",
                profile,
                "--chart",
                &file("c.svg"),
            ]),
            at.clone(),
            2,
        ),
        (
            s(&[
                "judge",
                "bad",
                "--profile",
                profile,
                "--json",
                &file("j.json"),
            ]),
            at.clone(),
            128,
        ),
        (
            s(&["report", "--output", &file("r.txt")]),
            work_only.clone(),
            2,
        ),
        (
            s(&["report", "--chart", &file("r.svg")]),
            work_only.clone(),
            2,
        ),
        (
            s(&[
                "watch",
                "--branch",
                "main",
                "--profile",
                profile,
                "--html",
                &file("site"),
            ]),
            at.clone(),
            2,
        ),
        (
            s(&["watch", "publish", "--html", &file("site")]),
            at.clone(),
            2,
        ),
        (
            s(&["watch", "export", "--csv", &file("w.csv")]),
            at.clone(),
            2,
        ),
        (
            s(&[
                "watch",
                "--store",
                &format!("sqlite:{}", file("s.db")),
                "--profile",
                profile,
            ]),
            at.clone(),
            2,
        ),
        (
            s(&["simulate", "--trials", "1", "--json", &file("s.json")]),
            vec![],
            2,
        ),
        (
            s(&[
                "--good",
                "good",
                "--bad",
                "bad",
                "--profile",
                profile,
                "--json",
                &file("h.json"),
            ]),
            at.clone(),
            2,
        ),
    ];
    for (args, place, code) in runs {
        let out = bin().args(&args).args(&place).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains("is a symbolic link"), "{args:?}: {err}");
        let written: Vec<_> = std::fs::read_dir(tmp.path().join("elsewhere"))
            .unwrap()
            .collect();
        assert!(written.is_empty(), "{args:?}: {written:?}");
        assert!(!work.join("hunts").exists(), "{args:?}: nothing built");
        assert!(!work.join("compare").exists(), "{args:?}: nothing run");
    }
}

#[test]
fn simulate_values_that_would_hang_or_panic_are_refused() {
    let cases: [(&[&str], &str); 6] = [
        (&["--commits", "0"], "at least 1"),
        (&["--commits", "2", "--steps", "-10,-20"], "give at least 3"),
        (&["--unbuildable", "150"], "from 0 to below 100"),
        (&["--threshold", "0"], "between 0 and 100"),
        (&["--run-length", "0s"], "above zero"),
        (&["--trials", "0"], "at least 1"),
    ];
    for (flags, said) in cases {
        let out = bin().arg("simulate").args(flags).output().unwrap();
        let err = usage_error(&out);
        assert!(err.contains(said), "{flags:?}: {err}");
        assert!(out.stdout.is_empty(), "{flags:?}: nothing simulated");
    }
}
