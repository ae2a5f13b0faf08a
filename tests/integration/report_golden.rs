//! The reports of a fixed hunt result, compared with reviewed snapshots
//! (`tests/integration/snapshots/`): any change in a report's wording or layout shows
//! up as a failing test with a diff.

use pgbisect::report::findings::HuntReport;
use pgbisect::report::{self, Envelope};

const FIXTURE: &str = include_str!("../fixtures/reports/hunt.json");

fn fixture() -> HuntReport {
    serde_json::from_str(FIXTURE).expect("the fixture is a hunt result")
}

fn envelope() -> Envelope {
    Envelope {
        from: "Jane Doe <jane@example.org>".into(),
        to: "pgsql-hackers@lists.postgresql.org".into(),
        cc: String::new(),
        date_unix: 1_796_276_907, // Thu, 03 Dec 2026 05:48:27 +0000
    }
}

#[test]
fn text_report() {
    let text = report::text(&fixture());
    for line in text.lines() {
        // A path or URL longer than a line stays whole on its own line.
        let whole_path = |w: &str| w.contains('/') && w.chars().count() > 40;
        assert!(
            line.chars().count() <= 72 || line.split_whitespace().any(whole_path),
            "longer than 72: {line:?}"
        );
    }
    let svg = "/var/tmp/pgbisect/hunts/h/why-009ee824377453148ebc52baa7a17dbda344a37e\
               -profile/profile-diff.svg";
    assert!(text.contains(svg), "the flame graph's path is cut");
    insta::assert_snapshot!("text", text);
}

#[test]
fn markdown_report() {
    insta::assert_snapshot!("markdown", report::markdown(&fixture()));
}

#[test]
fn email_report() {
    insta::assert_snapshot!("email", report::email(&fixture(), &envelope()));
}

#[test]
fn email_parses_back() {
    let report = fixture();
    let raw = report::email(&report, &envelope());
    assert!(
        raw.split("\r\n").all(|l| !l.contains('\n')),
        "bare LF in the message"
    );
    let message = mail_parser::MessageParser::new()
        .parse(raw.as_bytes())
        .expect("a message");
    let expected = "pgbisect: -30.7% TPS at 128 clients, 2 bad commits 009ee824 \
                    \"Make idle backends exit if the...\" and 623f1568 \"Compute the \
                    snapshot's xmin...\", and a drop in a range of commits";
    assert_eq!(message.subject(), Some(expected));
    let from = message.from().and_then(|a| a.first()).expect("From");
    assert_eq!(from.address(), Some("jane@example.org"));
    assert_eq!(from.name(), Some("Jane Doe"));
    let to = message.to().and_then(|a| a.first()).expect("To");
    assert_eq!(to.address(), Some("pgsql-hackers@lists.postgresql.org"));
    let date = message.date().expect("Date");
    assert_eq!(date.to_timestamp(), 1_796_276_907);
    assert!(
        message
            .message_id()
            .is_some_and(|id| id.ends_with("@example.org"))
    );
    assert_eq!(
        message.header_raw("MIME-Version").map(str::trim),
        Some("1.0")
    );
    assert_eq!(
        message
            .header_raw("Content-Transfer-Encoding")
            .map(str::trim),
        Some("8bit")
    );
    let body = message.body_text(0).expect("a text body");
    assert_eq!(body.replace("\r\n", "\n"), report::text(&report));
}

#[test]
fn non_ascii_subject_is_rfc2047_encoded_and_decodes_back() {
    let mut report = fixture();
    report.culprits[0].subject = "Réduire la contention du verrou « ProcArrayLock »".into();
    let raw = report::email(&report, &envelope());
    let header_end = raw.find("\r\n\r\n").expect("a header block");
    assert!(raw[..header_end].is_ascii(), "headers must be ASCII");
    let message = mail_parser::MessageParser::new()
        .parse(raw.as_bytes())
        .expect("a message");
    let subject = message.subject().expect("a subject");
    assert!(
        subject.contains("\"Réduire la contention du...\""),
        "{subject}"
    );
    let body = message.body_text(0).expect("a text body");
    assert!(body.contains("Réduire la contention"), "{body}");
}

#[test]
fn one_culprit_is_named_with_its_own_change() {
    let mut report = fixture();
    report.culprits.truncate(1);
    let subject = report::document::headline(&report);
    let expected = format!(
        "pgbisect: -11.9% TPS at 128 clients, first bad commit {} \
         \"Make idle backends exit if the postmaster dies\", and a drop in a range of commits",
        &report.culprits[0].commit[..8]
    );
    assert_eq!(subject, expected);
}

#[test]
fn verdicts_without_culprit_say_so() {
    let mut report = fixture();
    report.outcome = pgbisect::report::findings::HuntOutcome::NoRegression;
    let subject = report::document::headline(&report);
    assert!(
        subject.starts_with("pgbisect: no regression at 128 clients"),
        "{subject}"
    );
    report.outcome = pgbisect::report::findings::HuntOutcome::Inconclusive;
    let subject = report::document::headline(&report);
    assert!(
        subject.starts_with("pgbisect: inconclusive at 128 clients"),
        "{subject}"
    );
}

#[test]
fn results_of_older_versions_still_load() {
    let mut value: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let object = value.as_object_mut().unwrap();
    for key in [
        "machine",
        "profile_name",
        "profile_toml",
        "server_settings",
        "configure_flags",
    ] {
        object.remove(key);
    }
    let report: HuntReport = serde_json::from_value(value).expect("loads without new fields");
    assert!(report.machine.is_none());
    assert!(report::text(&report).contains("machine:   not recorded"));
}
