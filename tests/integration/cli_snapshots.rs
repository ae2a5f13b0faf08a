//! The help of every command and the usage errors a user meets first,
//! compared with reviewed snapshots (`tests/integration/snapshots/integration__cli_snapshots__*`):
//! each snapshot is the command line, its exit code and both outputs, so a
//! changed flag, wording or exit code shows up as a diff.

use crate::common;

use std::path::Path;

/// The subcommands; `pgbisect SUB --help` is snapshotted for each.
const SUBCOMMANDS: [&str; 9] = [
    "run",
    "simulate",
    "profiles",
    "report",
    "resume",
    "completions",
    "compare",
    "judge",
    "watch",
];

/// Runs `pgbisect ARGS` in `cwd` with a fixed environment (no terminal
/// width, colour or cache of the machine) and renders what a user sees:
/// the command, the exit code, standard output and standard error. Paths
/// under `cwd` read `[TMP]`, the crate's version `[VERSION]`.
fn transcript(cwd: &Path, args: &[&str]) -> String {
    let out = common::bin()
        .args(args)
        .current_dir(cwd)
        .env("COLUMNS", "100")
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env("HOME", cwd)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .output()
        .expect("pgbisect runs");
    let text = format!(
        "$ pgbisect {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status
            .code()
            .map_or("killed by a signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    redact(&text, cwd)
}

/// `text` with the temp dir `cwd` (also as its canonical path) and the
/// crate's version replaced by placeholders.
fn redact(text: &str, cwd: &Path) -> String {
    let mut text = text.to_string();
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    for dir in [canonical.as_path(), cwd] {
        text = text.replace(dir.to_str().expect("a UTF-8 temp dir"), "[TMP]");
    }
    text.replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
}

/// The transcript of `pgbisect ARGS` run in a fresh empty directory.
fn in_empty_dir(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    transcript(dir.path(), args)
}

#[test]
fn top_level_help() {
    insta::assert_snapshot!("help", in_empty_dir(&["--help"]));
}

#[test]
fn help_of_every_subcommand() {
    for sub in SUBCOMMANDS {
        insta::assert_snapshot!(format!("help_{sub}"), in_empty_dir(&[sub, "--help"]));
    }
}

/// The watcher's triage of a change by its number.
#[test]
fn help_of_watch_mark_and_watch_hunt() {
    for action in ["mark", "hunt"] {
        insta::assert_snapshot!(
            format!("help_watch_{action}"),
            in_empty_dir(&["watch", action, "--help"])
        );
    }
}

#[test]
fn hunt_without_endpoints() {
    insta::assert_snapshot!("error_missing_good_bad", in_empty_dir(&["--work-dir", "w"]));
}

#[test]
fn hunt_with_a_list_of_clients() {
    insta::assert_snapshot!(
        "error_clients_list",
        in_empty_dir(&["--good", "A", "--bad", "B", "--clients", "1,8"])
    );
}

#[test]
fn unknown_flag_of_a_subcommand() {
    insta::assert_snapshot!(
        "error_unknown_flag",
        in_empty_dir(&["compare", "A", "B", "--no-such-flag"])
    );
}

#[test]
fn compare_without_b_or_a_patch() {
    insta::assert_snapshot!("error_compare_one_side", in_empty_dir(&["compare", "A"]));
}

#[test]
fn judge_with_a_bad_flag_stops_git_bisect() {
    let text = in_empty_dir(&["judge", "HEAD", "--no-such-flag"]);
    assert!(text.contains("\nexit: 128\n"), "{text}");
    insta::assert_snapshot!("error_judge_bad_flag", text);
}

#[test]
fn email_report_without_sender_and_recipient() {
    let dir = tempfile::tempdir().unwrap();
    let hunt = dir.path().join("w").join("hunts").join("x");
    std::fs::create_dir_all(&hunt).unwrap();
    let fixture = include_str!("../fixtures/reports/hunt.json");
    std::fs::write(hunt.join("result.json"), fixture).unwrap();
    let args = ["report", "--work-dir", "w", "--format", "email"];
    insta::assert_snapshot!(
        "error_email_without_addresses",
        transcript(dir.path(), &args)
    );
}

#[test]
fn watch_with_a_commit_url_that_is_not_a_web_page() {
    insta::assert_snapshot!(
        "error_watch_commit_url",
        in_empty_dir(&[
            "watch",
            "--html",
            "site",
            "--commit-url",
            "javascript:alert(1)//{sha}"
        ])
    );
}
