use super::*;
use crate::engine::hunt::{Hunt, HuntConfig};
use crate::lab::sim::{History, NoiseModel, SimLab};
use crate::progress::Silent;
use crate::report::findings::HuntOutcome;
use std::collections::BTreeSet;

/// A real hunt over a simulated history with one 15% drop.
fn hunt_report() -> HuntReport {
    simulated_hunt(vec![(11, 0.85)])
}

/// A real hunt over a simulated history with these drops.
fn simulated_hunt(steps: Vec<(usize, f64)>) -> HuntReport {
    let history = History {
        len: 24,
        steps,
        unbuildable: BTreeSet::new(),
        base_tps: 1000.0,
    };
    let mut lab = SimLab::new(history.clone(), NoiseModel::Gaussian { cv: 0.005 }, 7);
    Hunt::new(
        HuntConfig::default(),
        history.commits(),
        &mut lab,
        &mut Silent,
    )
    .run()
    .unwrap()
}

fn envelope() -> Envelope5322 {
    Envelope5322 {
        from: "pgbisect@bench".into(),
        to: vec!["hackers@example.org".into()],
        cc: vec![],
        date: 1_796_276_907,
        host: "bench".into(),
    }
}

fn headers(message: &str) -> (Vec<(String, String)>, String) {
    let message = message.replace("\r\n", "\n");
    let (head, body) = message.split_once("\n\n").unwrap();
    // Folded header lines continue with white space.
    let head = head.replace("\n ", " ");
    let headers = head
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    (headers, body.to_string())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
}

#[test]
fn finished_message_names_the_culprit() {
    let report = hunt_report();
    assert_eq!(report.outcome, HuntOutcome::CulpritFound);
    let message = finished_message(&report, &envelope());
    let (h, body) = headers(&message);
    let subject = header(&h, "Subject");
    assert!(subject.starts_with("pgbisect: "), "{subject}");
    assert!(
        subject.contains(&report.culprits[0].commit[..8]),
        "{subject}"
    );
    assert_eq!(header(&h, "Date"), "Thu, 03 Dec 2026 05:48:27 +0000");
    assert_eq!(header(&h, "To"), "hackers@example.org");
    assert_eq!(body, crate::report::text(&report));
}

#[test]
fn failure_message_gives_reason_and_work_dir() {
    let reason = "the good endpoint 1234abcd cannot be measured: build failed\nhint: pick another";
    let message = failure_message(reason, Some(Path::new("/var/tmp/pgbisect/x")), &envelope());
    let (h, body) = headers(&message);
    assert_eq!(
        header(&h, "Subject"),
        "pgbisect: hunt failed: the good endpoint 1234abcd cannot be measured: build failed"
    );
    assert_eq!(header(&h, "From"), "pgbisect@bench");
    assert!(header(&h, "Message-ID").ends_with("@bench>"));
    assert!(body.contains(reason), "{body}");
    assert!(body.contains("Work dir: /var/tmp/pgbisect/x"), "{body}");
}

#[test]
fn environment_of_a_finished_and_a_failed_hunt() {
    let report = hunt_report();
    let end = HuntEnd {
        ending: Ending::Finished(&report),
        exit_code: 0,
        result: Some(PathBuf::from("/w/result.json")),
        report: Some(PathBuf::from("/w/report.txt")),
        work_dir: Some(PathBuf::from("/w")),
    };
    let env: std::collections::HashMap<_, _> = end.environment().into_iter().collect();
    assert_eq!(env["PGBISECT_OUTCOME"], "culprit-found");
    assert_eq!(env["PGBISECT_CULPRITS"], report.culprits[0].commit);
    assert_eq!(env["PGBISECT_RESULT"], "/w/result.json");
    assert_eq!(env["PGBISECT_REASON"], "");
    let failed = HuntEnd {
        ending: Ending::Failed("disk full"),
        exit_code: 4,
        result: None,
        report: None,
        work_dir: None,
    };
    let env: std::collections::HashMap<_, _> = failed.environment().into_iter().collect();
    assert_eq!(env["PGBISECT_OUTCOME"], "error");
    assert_eq!(env["PGBISECT_EXIT_CODE"], "4");
    assert_eq!(env["PGBISECT_REASON"], "disk full");
    assert_eq!(env["PGBISECT_RESULT"], "");
}

fn failed_end(reason: &str) -> HuntEnd<'_> {
    HuntEnd {
        ending: Ending::Failed(reason),
        exit_code: 4,
        result: None,
        report: None,
        work_dir: None,
    }
}

#[test]
fn notify_command_gets_the_environment_and_its_failure_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env");
    let cmd = format!(
        "echo \"$PGBISECT_OUTCOME $PGBISECT_EXIT_CODE $PGBISECT_REASON\" > '{}'",
        out.display()
    );
    run_command(&cmd, &failed_end("it broke")).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "error 4 it broke\n");
    let err = run_command("exit 3", &failed_end("x")).unwrap_err();
    assert!(format!("{err:#}").contains("exit 3"), "{err:#}");
}

#[test]
fn flags_are_checked() {
    assert!(Notifier::from_flags(None, &[], Some("localhost:25"), None).is_err());
    assert!(Notifier::from_flags(None, &[], None, Some("a@b.org")).is_err());
    assert!(Notifier::from_flags(None, &["nobody".into()], None, None).is_err());
    assert!(Notifier::from_flags(None, &["a@b.org".into()], Some("host:x"), None).is_err());
    let n = Notifier::from_flags(Some("true"), &["a@b.org".into()], Some("host:2525"), None);
    assert!(n.is_ok());
}

/// A stand-in `sendmail` that keeps its arguments and input.
fn fake_sendmail(dir: &Path, exit: i32) -> Sendmail {
    let path = dir.join("sendmail");
    crate::testing::write_script(
        &path,
        &format!(
            "#!/bin/sh\necho \"$@\" > '{0}/args'\ncat > '{0}/message'\necho 'queue full' >&2\nexit {exit}\n",
            dir.display()
        ),
    );
    Sendmail { path }
}

#[test]
fn sendmail_gets_the_message_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let sendmail = fake_sendmail(dir.path(), 0);
    let message = failure_message("boom", None, &envelope());
    let to = vec!["hackers@example.org".to_string()];
    sendmail.send("pgbisect@bench", &to, &message).unwrap();
    let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
    assert_eq!(args, "-t -i -f pgbisect@bench\n");
    let got = std::fs::read_to_string(dir.path().join("message")).unwrap();
    assert_eq!(got, message.replace("\r\n", "\n"));
}

#[test]
fn sendmail_failure_says_what_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let sendmail = fake_sendmail(dir.path(), 75);
    let to = vec!["hackers@example.org".to_string()];
    let err = sendmail
        .send("pgbisect@bench", &to, "Subject: x\n\nbody\n")
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("queue full") && text.contains("75"), "{text}");
    let missing = Sendmail {
        path: dir.path().join("no-such-sendmail"),
    };
    let err = missing.send("pgbisect@bench", &to, "x").unwrap_err();
    assert!(format!("{err:#}").contains("--smtp"), "{err:#}");
}

#[test]
fn smtp_to_a_closed_port_names_the_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let smtp = Smtp {
        host: "127.0.0.1".into(),
        port,
    };
    let err = smtp
        .send(
            "pgbisect@bench",
            &["a@example.org".into()],
            "Subject: x\n\nbody\n",
        )
        .unwrap_err();
    assert!(
        format!("{err:#}").contains(&format!("127.0.0.1:{port}")),
        "{err:#}"
    );
}
