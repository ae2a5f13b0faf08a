//! The watcher's mail against a relay as strict as RFC 5321 lets one be
//! (tests/fixtures/strict_relay.py): a commit subject of 2,000 characters
//! with a CR and terminal escapes in it still makes a message it takes,
//! and a message it refuses stays owed, the run's exit saying so, until a
//! later start delivers it, once, to the culprit's author too with
//! `--cc-author`.

use crate::common;

use common::mail::MailServer;
use common::watch::{dated_history, dated_history_with, replay};
use common::*;
use std::path::{Path, PathBuf};

fn watch(repo: &Path, work: &Path, extra: &[&str]) -> std::process::Output {
    pgbisect_sub("watch", repo, work, extra)
}

/// The test profile and the work dir `w` in a temp dir, and a strict relay
/// that refuses mail while the file `refuse` there exists (made here).
struct Refusing {
    _tmp: tempfile::TempDir,
    profile: PathBuf,
    work: PathBuf,
    refuse: PathBuf,
    server: MailServer,
}

impl Refusing {
    fn new() -> Refusing {
        let tmp = tempfile::tempdir().unwrap();
        let refuse = tmp.path().join("refuse");
        std::fs::write(&refuse, "").unwrap();
        Refusing {
            profile: profile(tmp.path()),
            work: tmp.path().join("w"),
            server: MailServer::strict(&refuse),
            refuse,
            _tmp: tmp,
        }
    }
}

/// 2,000 characters of a commit subject: terminal escapes (a clear screen,
/// a window title), a CR, a run of 1,200 with no space to wrap at.
fn hostile_subject() -> String {
    let text = format!(
        "Make the planner \x1b[2J\x1b]0;owned\x07 think {}\rhidden {} end",
        "again ".repeat(130),
        "y".repeat(1200)
    );
    assert!(text.len() >= 2000, "{}", text.len());
    text
}

#[test]
fn a_hostile_subject_is_mailed_once_the_relay_takes_mail_again() {
    let (repo, shas) = dated_history_with(&levels_with_drop_at(30, 16), |i| {
        if i == 16 {
            hostile_subject()
        } else {
            format!("commit number {i}")
        }
    });
    let setup = Refusing::new();
    let (profile, work, refuse) = (&setup.profile, &setup.work, &setup.refuse);
    let (server, smtp) = (&setup.server, setup.server.addr());
    let mut args = replay(profile, "2024-01-01..2024-01-30");
    args.extend(["--every", "3", "--per-night", "1"]);
    args.extend(["--mail-to", "perf@example.org", "--smtp", &smtp]);
    // The relay refuses: the finding and the digests stay owed, and the
    // run ends in error saying so.
    let out = watch(repo.path(), work, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("not delivered: the finding of profile/c8"),
        "{stderr}"
    );
    assert!(stderr.contains("554"), "{stderr}");
    assert!(stderr.contains("stay owed"), "{stderr}");
    assert!(server.messages().is_empty());
    // Nothing a terminal would act on was printed, nor written in the
    // hunt's report.
    for text in [&stdout, &stderr] {
        assert!(!text.contains(['\x1b', '\x07', '\r']), "{text:?}");
    }
    assert!(
        stdout.contains(&format!("culprit {}", shas[16])),
        "{stdout}"
    );
    let reports = work.join("watch-hunts");
    for entry in std::fs::read_dir(&reports).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path().join("report.txt")).unwrap();
        assert!(!text.contains(['\x1b', '\x07', '\r']), "{text:?}");
        assert!(text.contains("\\u{1b}[2J"), "{text}");
    }
    // The relay takes mail again: the next start sends what was owed,
    // and exits as a night that told a finding does.
    std::fs::remove_file(refuse).unwrap();
    let again = watch(repo.path(), work, &args);
    let again_err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{again_err}");
    assert!(!again_err.contains("not delivered"), "{again_err}");
    let mails = server.messages();
    let parsed: Vec<mail_parser::Message> = mails
        .iter()
        .map(|m| {
            mail_parser::MessageParser::new()
                .parse(m.as_bytes())
                .expect("a message")
        })
        .collect();
    let findings: Vec<&mail_parser::Message> = parsed
        .iter()
        .filter(|m| {
            m.subject()
                .is_some_and(|s| s.starts_with("pgbisect watch: "))
        })
        .collect();
    assert_eq!(findings.len(), 1, "{again_err}");
    assert!(mails.len() > 1, "the digests came too: {again_err}");
    let message = findings[0];
    // Without --cc-author, the culprit's author is not told.
    assert_eq!(message.header_raw("Cc"), None);
    assert_eq!(
        message.header_raw("X-RcptTo").map(str::trim),
        Some("perf@example.org")
    );
    let subject = message.subject().expect("a subject");
    assert!(
        subject.starts_with("pgbisect watch: profile/c8 -"),
        "{subject}"
    );
    assert!(
        subject.contains("Make the planner \\u{1b}[2J\\u{1b}]0;owned\\u{7} think again"),
        "{subject}"
    );
    assert!(
        subject.ends_with(&format!("{} end", "y".repeat(1200))),
        "{subject}"
    );
    let body = message.body_text(0).expect("a body");
    assert!(body.contains(&format!("Culprit: {}", shas[16])), "{body}");
    // A third start: nothing owed, nothing sent again.
    let third = watch(repo.path(), work, &args);
    assert_eq!(third.status.code(), Some(1));
    assert_eq!(server.messages().len(), mails.len());
}

#[test]
fn a_refused_digest_stays_owed_until_a_start_delivers_it() {
    let (repo, _) = dated_history(&[1000; 3]);
    let setup = Refusing::new();
    let (profile, work, refuse) = (&setup.profile, &setup.work, &setup.refuse);
    let (server, smtp) = (&setup.server, setup.server.addr());
    let mut args = replay(profile, "2024-01-01..2024-01-03");
    args.extend(["--per-night", "1", "--digest-every", "2"]);
    args.extend(["--mail-to", "perf@example.org", "--smtp", &smtp]);
    let out = watch(repo.path(), work, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("not delivered: the digest of the period to 2024-01-02"),
        "{stderr}"
    );
    assert!(server.messages().is_empty());
    // Still refused: still owed, still an error.
    let again = watch(repo.path(), work, &args);
    assert_eq!(again.status.code(), Some(4));
    std::fs::remove_file(refuse).unwrap();
    let third = watch(repo.path(), work, &args);
    let third_err = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(1), "{third_err}");
    let mails = server.messages();
    assert_eq!(mails.len(), 1, "{third_err}");
    assert!(
        mails[0].contains("main 2024-01-01 to 2024-01-02"),
        "{}",
        mails[0]
    );
}

/// The messages `server` kept, parsed.
fn parsed(raw: &[String]) -> Vec<mail_parser::Message<'_>> {
    raw.iter()
        .map(|m| {
            mail_parser::MessageParser::new()
                .parse(m.as_bytes())
                .expect("a message")
        })
        .collect()
}

#[test]
fn a_finding_refused_one_night_arrives_once_the_next_with_its_author_in_cc() {
    let (repo, shas) = dated_history(&levels_with_drop_at(30, 16));
    let setup = Refusing::new();
    let (profile, work, refuse) = (&setup.profile, &setup.work, &setup.refuse);
    let (server, smtp) = (&setup.server, setup.server.addr());
    let night = |until: &str| {
        let range = format!("2024-01-01..{until}");
        let mut args: Vec<String> = replay(profile, &range)
            .into_iter()
            .map(str::to_string)
            .collect();
        for more in [
            "--every",
            "3",
            "--per-night",
            "1",
            "--digest-every",
            "0",
            "--cc-author",
            "--mail-from",
            "watcher@bench.example.org",
            "--mail-to",
            "perf@example.org",
            "--smtp",
            &smtp,
        ] {
            args.push(more.to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        watch(repo.path(), work, &args)
    };
    // The first night: hunted, refused, owed; the run says so and fails.
    let first = night("2024-01-30");
    let first_err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(4), "{first_err}");
    assert!(
        first_err.contains("not delivered: the finding of profile/c8 (")
            && first_err.contains("554"),
        "{first_err}"
    );
    assert!(
        first_err.contains("1 message(s) stay owed and the next start sends them"),
        "{first_err}"
    );
    assert!(server.messages().is_empty());
    // The next night the relay takes mail: the finding arrives, once, Cc
    // its culprit's author, and the night exits as one that told a finding.
    std::fs::remove_file(refuse).unwrap();
    let second = night("2024-02-02");
    let second_err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{second_err}");
    assert!(!second_err.contains("owed"), "{second_err}");
    let raw = server.messages();
    assert_eq!(raw.len(), 1, "{second_err}");
    let mails = parsed(&raw);
    let m = &mails[0];
    assert!(
        m.subject().is_some_and(|s| s.contains(&shas[16][..8])),
        "{:?}",
        m.subject()
    );
    assert_eq!(
        m.header_raw("Cc").map(str::trim),
        Some(common::AUTHOR.1),
        "{}",
        raw[0]
    );
    assert_eq!(
        m.header_raw("X-RcptTo").map(str::trim),
        Some(format!("perf@example.org, {}", common::AUTHOR.1).as_str())
    );
    let body = m.body_text(0).expect("a body");
    assert!(
        body.lines()
            .any(|l| l.trim_end() == "Reported-by: pgbisect watch <watcher@bench.example.org>"),
        "{body}"
    );
    // A third night: nothing owed, nothing sent again.
    let third = night("2024-02-05");
    assert_eq!(third.status.code(), Some(1));
    assert_eq!(server.messages().len(), 1);
}
