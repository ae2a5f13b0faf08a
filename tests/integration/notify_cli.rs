//! Notifications end to end: mail through a real SMTP server (Python's
//! aiosmtpd, installed by scripts/setup.sh) and `--notify-cmd` through the
//! binary, on git repositories made in temp dirs.

use crate::common;

use common::mail::{MailServer, require};
use pgbisect::notify::mail::{Envelope5322, MailTransport, Sendmail, Smtp, plain_message};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The value of header `name` in `message` (first occurrence).
fn header<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    let head = message.split("\n\n").next()?;
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .map(str::trim)
}

fn body(message: &str) -> &str {
    message.split_once("\n\n").map_or("", |(_, b)| b)
}

/// Sends one plain message (`(from, to)`, `(subject, body)`) through
/// `transport` and returns it as `server` received it.
fn send_one(
    server: &MailServer,
    transport: &dyn MailTransport,
    (from, to): (&str, &[&str]),
    (subject, text): (&str, &str),
) -> String {
    let to: Vec<String> = to.iter().map(|a| a.to_string()).collect();
    let message = plain_message(&Envelope5322::now(from, &to), subject, text);
    transport.send(from, &to, &message).unwrap();
    let mut got = server.messages();
    assert_eq!(got.len(), 1, "{got:?}");
    got.remove(0)
}

#[test]
fn smtp_transport_delivers_to_a_real_server() {
    let server = MailServer::start();
    let text = "Line one.\n.a line starting with a dot\n\nLast line, ünïcode.\n";
    let m = &send_one(
        &server,
        &Smtp::parse(&server.addr()).unwrap(),
        (
            "pgbisect@bench.example.org",
            &["one@example.org", "two@example.org"],
        ),
        ("pgbisect: test message «ok»", text),
    );
    assert_eq!(header(m, "From"), Some("pgbisect@bench.example.org"));
    assert_eq!(header(m, "To"), Some("one@example.org, two@example.org"));
    assert_eq!(header(m, "X-MailFrom"), Some("pgbisect@bench.example.org"));
    assert_eq!(
        header(m, "X-RcptTo"),
        Some("one@example.org, two@example.org")
    );
    assert!(
        header(m, "Subject").is_some_and(|s| s.to_ascii_uppercase().starts_with("=?UTF-8?B?")),
        "{m}"
    );
    assert_eq!(body(m), text);
}

#[test]
fn sendmail_transport_delivers_through_a_real_mta() {
    require("command -v msmtp", "msmtp (a sendmail-compatible client)");
    let server = MailServer::start();
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("sendmail");
    let staged = dir.path().join("sendmail.staged");
    std::fs::write(
        &staged,
        format!(
            "#!/bin/sh\nexec msmtp --host=127.0.0.1 --port={} \"$@\"\n",
            server.port
        ),
    )
    .unwrap();
    // Installed by a child process, so that no thread of this one forks
    // while holding the script open for writing ("Text file busy").
    let installed = Command::new("install")
        .args(["-m", "755"])
        .arg(&staged)
        .arg(&wrapper)
        .status()
        .unwrap();
    assert!(installed.success());
    let text = "The hunt stopped.\n.\nA line with only a dot is kept.\n";
    let m = &send_one(
        &server,
        &Sendmail { path: wrapper },
        ("bench@example.org", &["perf@example.org"]),
        ("pgbisect: hunt failed: test", text),
    );
    assert_eq!(header(m, "X-MailFrom"), Some("bench@example.org"));
    assert_eq!(header(m, "X-RcptTo"), Some("perf@example.org"));
    assert_eq!(header(m, "Subject"), Some("pgbisect: hunt failed: test"));
    assert_eq!(body(m), text);
}

#[test]
fn smtp_refusal_names_the_server_and_its_answer() {
    let server = MailServer::start_with(&["-s", "200"]);
    let smtp = Smtp::parse(&server.addr()).unwrap();
    let message = format!("Subject: big\n\n{}", "a line of text\n".repeat(100));
    let err = smtp
        .send("pgbisect@bench", &["a@example.org".into()], &message)
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains(&server.addr()), "{text}");
    assert!(text.contains("552"), "{text}");
    assert!(server.messages().is_empty());
}

/// `n` commits whose `level` drops from 1000 to 800 at commit `at` (tags
/// `good` and `bad` on the ends); with `bad_broken` the last commit does
/// not build. Returns the repo and the SHA of commit `at`.
fn make_repo(n: usize, at: usize, bad_broken: bool) -> (tempfile::TempDir, String) {
    let broken = if bad_broken { vec![n - 1] } else { vec![] };
    let (dir, shas) = common::history(&common::levels_with_drop_at(n, at), &broken);
    (dir, shas[at].clone())
}

/// Hunts good..bad of `repo` with the test profile, everything under `work`.
fn hunt(repo: &Path, work: &Path, extra: &[&str]) -> Output {
    hunt_command(repo, &common::profile(work), work, extra)
        .output()
        .expect("pgbisect runs")
}

/// The command of a hunt of good..bad of `repo` with the profile `profile`,
/// the work dir `work/w`.
fn hunt_command(repo: &Path, profile: &Path, work: &Path, extra: &[&str]) -> Command {
    let mut command = common::bin();
    command
        .args(["--good", "good", "--bad", "bad", "--profile"])
        .arg(profile)
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work.join("w"))
        .args(extra);
    command
}

/// A `--notify-cmd` that writes its PGBISECT_ variables to `file`.
fn env_dump(file: &Path) -> String {
    format!("env | grep ^PGBISECT_ | sort > '{}'", file.display())
}

fn var<'a>(dump: &'a str, name: &str) -> &'a str {
    dump.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {dump}"))
}

#[test]
fn notify_cmd_gets_the_outcome_and_culprits() {
    let (repo, culprit) = make_repo(16, 9, false);
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("env.txt");
    let out = hunt(
        repo.path(),
        work.path(),
        &["--notify-cmd", &env_dump(&dump)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let env = std::fs::read_to_string(&dump).expect("the notify command ran");
    assert_eq!(var(&env, "PGBISECT_OUTCOME"), "culprit-found", "{env}");
    assert_eq!(var(&env, "PGBISECT_EXIT_CODE"), "0");
    assert_eq!(var(&env, "PGBISECT_CULPRITS"), culprit);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(var(&env, "PGBISECT_RESULT")).unwrap())
            .unwrap();
    assert_eq!(result["culprits"][0]["commit"], culprit.as_str());
    let report = std::fs::read_to_string(var(&env, "PGBISECT_REPORT")).unwrap();
    assert!(report.contains(&culprit), "{report}");
    assert_eq!(var(&env, "PGBISECT_REASON"), "");
}

#[test]
fn failed_hunt_runs_notify_cmd_with_error_and_keeps_its_exit_code() {
    let (repo, _) = make_repo(6, 3, true);
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("env.txt");
    let cmd = format!("{}; exit 7", env_dump(&dump));
    let out = hunt(repo.path(), work.path(), &["--notify-cmd", &cmd]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("cannot be measured"), "{stderr}");
    assert!(
        stderr.contains("--notify-cmd") && stderr.contains("7"),
        "{stderr}"
    );
    let env = std::fs::read_to_string(&dump).expect("the notify command ran");
    assert_eq!(var(&env, "PGBISECT_OUTCOME"), "error");
    assert_eq!(var(&env, "PGBISECT_EXIT_CODE"), "4");
    assert!(
        var(&env, "PGBISECT_REASON").contains("bad endpoint"),
        "{env}"
    );
    assert_eq!(var(&env, "PGBISECT_RESULT"), "");
}

#[test]
fn interrupted_hunt_runs_notify_cmd_with_error() {
    let (repo, _) = make_repo(12, 5, false);
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("env.txt");
    let slow = common::profile_with(work.path(), "slow.toml", "sleep 0.2");
    let child = hunt_command(
        repo.path(),
        &slow,
        work.path(),
        &["--notify-cmd", &env_dump(&dump)],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("pgbisect starts");
    // Interrupt once a few runs are journaled.
    common::wait_for_runs(&work.path().join("w"), 3);
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let env = std::fs::read_to_string(&dump).expect("the notify command ran");
    assert_eq!(var(&env, "PGBISECT_OUTCOME"), "error");
    assert!(
        var(&env, "PGBISECT_REASON").contains("interrupted"),
        "{env}"
    );
    assert!(!var(&env, "PGBISECT_WORK_DIR").is_empty(), "{env}");
}

#[test]
fn mail_to_with_smtp_sends_the_result_and_the_failure() {
    let server = MailServer::start();
    let (repo, culprit) = make_repo(12, 5, false);
    let work = tempfile::tempdir().unwrap();
    let mail = [
        "--mail-to",
        "perf@example.org",
        "--smtp",
        &server.addr(),
        "--mail-from",
        "bench@example.org",
    ];
    let out = hunt(repo.path(), work.path(), &mail);
    common::assert_code(&out, 0);
    let got = server.messages();
    assert_eq!(got.len(), 1, "{got:?}");
    let m = &got[0];
    assert_eq!(header(m, "To"), Some("perf@example.org"));
    assert_eq!(header(m, "X-RcptTo"), Some("perf@example.org"));
    assert_eq!(header(m, "From"), Some("bench@example.org"));
    let subject = header(m, "Subject").unwrap();
    assert!(
        subject.starts_with("pgbisect: ") && subject.contains(&culprit[..8]),
        "{subject}"
    );
    assert!(header(m, "Message-ID").is_some() && header(m, "Date").is_some());
    assert!(body(m).contains(&culprit), "{m}");

    let (broken, _) = make_repo(5, 2, true);
    let work = tempfile::tempdir().unwrap();
    let out = hunt(broken.path(), work.path(), &mail);
    common::assert_code(&out, 4);
    let got = server.messages();
    let failure = got
        .iter()
        .find(|m| header(m, "Subject").is_some_and(|s| s.starts_with("pgbisect: hunt failed: ")))
        .unwrap_or_else(|| panic!("no failure mail in {got:?}"));
    assert!(body(failure).contains("bad endpoint"), "{failure}");
    assert!(body(failure).contains("Work dir: "), "{failure}");
}

#[test]
fn mail_flags_without_a_recipient_are_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    let out = common::bin()
        .args(["--good", "a", "--bad", "b", "--smtp", "localhost:25"])
        .current_dir(work.path())
        .output()
        .unwrap();
    common::assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mail-to"));
}
