//! The watcher's mistakes refused before it measures, end to end: each is
//! a usage error (exit 2) that says what to do, and nothing is built or
//! run first (the work dir is not even made). And a replay asked to start
//! before the branch's first commit starts there instead.

use crate::common;

use common::watch::{dated_history, replay};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository of three nights on `main` and the counting test profile;
/// the benchmark notes each run in `calls`.
struct Setup {
    repo: tempfile::TempDir,
    tmp: tempfile::TempDir,
    profile: PathBuf,
    calls: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let (repo, _) = dated_history(&[1000; 3]);
        let tmp = tempfile::tempdir().unwrap();
        let calls = tmp.path().join("calls");
        let before = format!("echo run >> {}", calls.display());
        let profile = profile_with(tmp.path(), "counting.toml", &before);
        Setup {
            repo,
            tmp,
            profile,
            calls,
        }
    }

    fn work(&self) -> PathBuf {
        self.tmp.path().join("w")
    }

    /// A replay of January 1 to 3 with `extra` flags.
    fn watch(&self, range: &str, extra: &[&str]) -> std::process::Output {
        let mut args = replay(&self.profile, range);
        args.extend(extra);
        pgbisect_sub("watch", self.repo.path(), &self.work(), &args)
    }

    /// Fails unless the replay with `extra` is a usage error saying each of
    /// `words`, made before the work dir was created or a run made; the
    /// error.
    fn refused(&self, extra: &[&str], words: &[&str]) -> String {
        let out = self.watch("2024-01-01..2024-01-03", extra);
        assert_code(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for word in words {
            assert!(stderr.contains(word), "{word:?} not in: {stderr}");
        }
        assert!(!self.work().exists(), "the work dir was made: {stderr}");
        assert!(!self.calls.exists(), "a run was made: {stderr}");
        stderr
    }

    fn branch(&self, name: &str) {
        let out = Command::new("git")
            .args(["branch", name])
            .current_dir(self.repo.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git branch {name}: {out:?}");
    }
}

#[test]
fn every_0_says_what_every_means() {
    let setup = Setup::new();
    setup.refused(
        &["--every", "0"],
        &["--every N replays a night every N days", "e.g. --every 7"],
    );
}

#[test]
fn an_unknown_branch_lists_the_branches_there_are_and_the_closest() {
    let setup = Setup::new();
    for name in ["feature", "REL_16_STABLE"] {
        setup.branch(name);
    }
    let err = setup.refused(
        &["--branch", "mian"],
        &[
            "--branch mian:",
            "has no branch of that name",
            "its branches: REL_16_STABLE, feature, main\n",
            "did you mean `--branch main`?",
        ],
    );
    assert!(!err.contains("more"), "{err}");
    // Many branches: a handful listed, the rest counted; nothing close.
    for k in 0..10 {
        setup.branch(&format!("topic-{k:02}"));
    }
    let err = setup.refused(
        &["--branch", "zzz"],
        &["and 5 more", "give --branch one of them"],
    );
    assert!(
        err.contains("its branches: REL_16_STABLE, feature, main, topic-00"),
        "{err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn a_store_in_a_missing_folder_names_the_folder_once() {
    let setup = Setup::new();
    let store = setup.tmp.path().join("no/such/dir/x");
    let flag = format!("sqlite:{}", store.display());
    let folder = format!(
        "the folder {} does not exist",
        store.parent().unwrap().display()
    );
    let err = setup.refused(&["--store", &flag], &[&folder, "mkdir -p"]);
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
    assert!(!err.contains("unable to open database file"), "{err}");
}

#[test]
fn html_naming_a_file_is_refused_naming_html_and_a_new_folder_is_taken() {
    let setup = Setup::new();
    let file = setup.tmp.path().join("site.html");
    std::fs::write(&file, "mine").unwrap();
    let err = setup.refused(
        &["--html", file.to_str().unwrap()],
        &["is a file, not a folder", "give --html another path"],
    );
    assert!(!err.contains("--work-dir"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let missing = setup.tmp.path().join("no/site");
    setup.refused(
        &["--html", missing.to_str().unwrap()],
        &["the folder", "does not exist", "hint: give --html a folder"],
    );
    // A folder not yet made in one that is: the night runs, the site is
    // written.
    let site = setup.tmp.path().join("site");
    let out = setup.watch(
        "2024-01-01..2024-01-01",
        &["--html", site.to_str().unwrap()],
    );
    assert_code(&out, 1);
    assert!(site.join("index.html").is_file());
}

#[test]
fn a_site_url_that_is_not_a_web_address_says_what_to_give() {
    let setup = Setup::new();
    for (given, why) in [
        (
            "perf.example.org/pgbisect",
            "is not an http:// or https:// URL",
        ),
        ("javascript:alert(1)", "is not an http:// or https:// URL"),
        ("https://perf.example.org/?page=1", "a query (?)"),
    ] {
        setup.refused(
            &["--site-url", given],
            &[
                "--site-url",
                given,
                why,
                "give the address the --html folder is served at",
                "e.g. https://perf.example.org/pgbisect/",
            ],
        );
    }
}

/// A port on this machine nothing listens at.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

#[test]
fn mail_with_no_way_out_is_refused_as_a_hunt_refuses_it() {
    let setup = Setup::new();
    let relay = format!("127.0.0.1:{}", closed_port());
    let to = ["--mail-to", "perf@example.org"];
    setup.refused(
        &[to[0], to[1], "--smtp", &relay],
        &[
            &format!("--smtp {relay}"),
            "no SMTP relay answers",
            "start the relay",
        ],
    );
    setup.refused(
        &["--notify-cmd", "no-such-notifier --all"],
        &["--notify-cmd", "not found in PATH"],
    );
    // A culprit's author is only mailed beside somebody mailed anyway.
    setup.refused(&["--cc-author"], &["--cc-author", "--mail-to <ADDR>"]);
    if Path::new("/usr/sbin/sendmail").exists() {
        return; // This machine has one: the watcher mails through it.
    }
    setup.refused(
        &to,
        &[
            "/usr/sbin/sendmail, which does not exist",
            "--smtp HOST:PORT",
        ],
    );
}

#[test]
fn a_replay_from_before_the_first_commit_starts_on_its_day() {
    let setup = Setup::new();
    let out = setup.watch("2023-12-20..2024-01-03", &["--per-night", "1"]);
    assert_code(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let note = "--replay: nothing had landed on main by 2023-12-20; the replay starts on \
                2024-01-01, the day its first commit landed";
    assert_eq!(stderr.matches(note).count(), 1, "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(stderr.contains("night of 2024-01-01"), "{stderr}");
    assert!(stderr.contains("night of 2024-01-03"), "{stderr}");
    assert!(!stderr.contains("night of 2023-"), "{stderr}");
    assert!(setup.calls.exists(), "nothing was measured: {stderr}");
    // A range that ends before it: nothing to replay, said so.
    std::fs::remove_dir_all(setup.work()).unwrap();
    std::fs::remove_file(&setup.calls).unwrap();
    let out = setup.watch("2023-12-01..2023-12-31", &[]);
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("give a range that ends on 2024-01-01 or later"),
        "{stderr}"
    );
    assert!(!setup.work().exists() && !setup.calls.exists(), "{stderr}");
}
