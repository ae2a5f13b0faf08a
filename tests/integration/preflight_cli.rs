//! The checks a hunt makes before its first build, end to end: each
//! mistake is a usage error (exit 2) that says what to change, and nothing
//! is built or measured first (the work dir is not even made).

use crate::common;

use common::*;
use std::path::Path;
use std::process::Output;

/// A hunt with `extra` flags on a two-commit history, with the work dir
/// `work/w`; `custom` measures with the shell-command test profile, else
/// with the default PostgreSQL profile.
fn hunt(work: &Path, custom: bool, extra: &[&str]) -> Output {
    let (repo, _) = history(&[1000, 800], &[]);
    let profile = profile(work);
    let mut args = vec!["--good", "good", "--bad", "bad"];
    if custom {
        args.extend(["--profile", profile.to_str().unwrap()]);
    }
    args.extend(extra);
    pgbisect(repo.path(), &work.join("w"), &args)
}

/// Fails unless the hunt with `extra` is a usage error saying each of
/// `words`, made before its work dir was created.
fn refused_up_front(custom: bool, extra: &[&str], words: &[&str]) {
    let work = tempfile::tempdir().unwrap();
    let out = hunt(work.path(), custom, extra);
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for word in words {
        assert!(stderr.contains(word), "{word:?} not in: {stderr}");
    }
    assert!(
        !work.path().join("w").exists(),
        "the work dir was made: {stderr}"
    );
}

#[test]
fn a_json_path_nothing_can_be_created_at_is_refused() {
    let words = ["--json /proc/x.json", "cannot create a file"];
    refused_up_front(true, &["--json", "/proc/x.json"], &words);
}

#[test]
fn an_smtp_relay_that_does_not_answer_is_found_before_the_hunt() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let relay = format!("127.0.0.1:{port}");
    let args = ["--mail-to", "perf@example.org", "--smtp", &relay];
    let words = [format!("--smtp {relay}"), "no SMTP relay answers".into()];
    refused_up_front(true, &args, &words.each_ref().map(String::as_str));
}

#[test]
fn a_missing_sendmail_is_found_before_the_hunt() {
    let args = ["--mail-to", "perf@example.org"];
    if Path::new("/usr/sbin/sendmail").exists() {
        // This machine has one: the hunt goes on and mails its result.
        let work = tempfile::tempdir().unwrap();
        let out = hunt(work.path(), true, &args);
        assert_ne!(out.status.code(), Some(2), "{out:?}");
        return;
    }
    let words = [
        "/usr/sbin/sendmail, which does not exist",
        "--smtp HOST:PORT",
    ];
    refused_up_front(true, &args, &words);
}

#[test]
fn a_notify_command_that_is_not_there_is_found_before_the_hunt() {
    let args = ["--notify-cmd", "no-such-notifier --all"];
    refused_up_front(true, &args, &["--notify-cmd", "not found in PATH"]);
}

#[test]
fn a_run_as_user_that_does_not_exist_is_a_usage_error() {
    refused_up_front(false, &["--run-as", "nosuchuser"], &["nosuchuser"]);
}

#[test]
fn run_as_with_a_custom_command_profile_is_a_usage_error() {
    let words = [
        "--run-as postgres",
        "its own [benchmark] command",
        "leave it out",
    ];
    refused_up_front(true, &["--run-as", "postgres"], &words);
}

#[test]
fn more_clients_than_server_and_machine_allow_are_a_usage_error() {
    // 100000 server processes: more memory than a machine under 195 GiB
    // has, and more processes than most kernels' pid_max.
    refused_up_front(
        false,
        &["--clients", "100000"],
        &["--clients 100000", "at most"],
    );
    // Beyond what any PostgreSQL server takes, whatever the machine.
    refused_up_front(false, &["--clients", "300000"], &["at most 262111 clients"]);
    // A custom command's clients are its own business.
    let work = tempfile::tempdir().unwrap();
    let out = hunt(work.path(), true, &["--clients", "300000"]);
    assert_ne!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_refusal_before_the_hunt_is_written_where_json_asks() {
    let work = tempfile::tempdir().unwrap();
    let json = work.path().join("result.json");
    let json_arg = json.to_str().unwrap();
    let out = hunt(
        work.path(),
        false,
        &["--run-as", "nosuchuser", "--json", json_arg],
    );
    assert_code(&out, 2);
    let text = std::fs::read_to_string(&json).expect("the refusal's --json");
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["outcome"], "failed", "{text}");
    assert_eq!(body["exit_code"], 2, "{text}");
    assert!(
        body["reason"].as_str().unwrap().contains("nosuchuser"),
        "{text}"
    );
}
