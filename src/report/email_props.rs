//! Whatever a commit says, the message stays one a relay takes: every
//! line at most 998 octets and ended by CRLF, no bare CR or LF, ASCII
//! headers, and the subject read back as it was given (its control
//! characters as spaces).

use super::*;
use proptest::prelude::*;

/// Text as commits write it, and worse: control characters, line breaks,
/// odd Unicode, and runs with no space to wrap at.
fn commit_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "(\\PC|[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\u{2028}é😀 ]){0,400}",
        "[a-z\\r\\n\\x1b]{1,10}[a-zé]{900,2600}",
        ("[ -~]{0,60}", "[\\r\\n\\x00]{1,3}", "[ -~]{1000,2200}").prop_map(|(a, b, c)| a + &b + &c),
    ]
}

fn envelope() -> Envelope {
    Envelope {
        from: "pgbisect <pgbisect@bench.example.org>".into(),
        to: "pgsql-hackers@lists.postgresql.org".into(),
        cc: String::new(),
        date_unix: 1_796_276_907,
    }
}

/// The message's lines, checked to end in CRLF with no other CR or LF.
fn lines(raw: &str) -> Result<Vec<&str>, TestCaseError> {
    let lines: Vec<&str> = raw.split("\r\n").collect();
    prop_assert_eq!(lines.last().copied(), Some(""), "the message ends in CRLF");
    for line in &lines {
        prop_assert!(!line.contains(['\r', '\n']), "bare CR or LF in {:?}", line);
        prop_assert!(line.len() <= MAX_LINE, "a line of {} octets", line.len());
    }
    Ok(lines)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_line_is_fit_to_send(
        subject in commit_text(),
        author in commit_text(),
        series in commit_text(),
    ) {
        let title = format!("pgbisect watch: {series} -12.0%: ac1d7945 {subject}");
        let body = format!(
            "Culprit: ac1d7945 {subject}\nAuthor: {author}\n\n{series}: -12.0%\r\n{}\n",
            "x".repeat(3000)
        );
        let id = stable_message_id(&format!("watch.{series}.ac1d7945"), &envelope());
        let raw = render_with_id(&title, &body, &id, &envelope());
        let lines = lines(&raw)?;
        let blank = lines.iter().position(|l| l.is_empty()).unwrap_or(0);
        prop_assert!(lines[..blank].iter().all(|l| l.is_ascii()), "headers must be ASCII");
        let message = mail_parser::MessageParser::new()
            .parse(raw.as_bytes())
            .ok_or_else(|| TestCaseError::fail("mail-parser read no message"))?;
        let expected = one_line(&title);
        prop_assert_eq!(message.subject(), Some(expected.as_str()));
        let text = message.body_text(0).unwrap_or_default();
        prop_assert!(text.contains("Culprit: ac1d7945"), "{}", text);
    }

    #[test]
    fn a_long_line_is_cut_only_where_it_must_be(line in "([a-zé]{1,30} ?){0,200}[a-z]{0,1200}") {
        let pieces = wrapped(&line, MAX_LINE);
        prop_assert!(pieces.iter().all(|p| p.len() <= MAX_LINE));
        if line.len() <= MAX_LINE {
            prop_assert_eq!(&pieces, &vec![line.as_str()]);
        }
        // Nothing is lost but one space at each cut.
        let mut rest = line.as_str();
        for piece in &pieces {
            rest = rest.strip_prefix(piece).ok_or_else(|| TestCaseError::fail("a piece lost"))?;
            rest = rest.strip_prefix(' ').unwrap_or(rest);
        }
        prop_assert_eq!(rest, "");
    }
}

#[test]
fn a_long_commit_subject_makes_lines_a_relay_takes() {
    let subject = format!("Fix {}\r in the \x1b[31mplanner", "very ".repeat(224));
    let body = format!("Culprit: ac1d7945 {subject}\n");
    let raw = render_with_id(&subject, &body, "<x@example.org>", &envelope());
    assert!(
        raw.split("\r\n")
            .all(|l| l.len() <= 78 || !l.starts_with(' '))
    );
    assert!(raw.contains("planner\r\n") && raw.contains("\\r in the \\u{1b}[31mplanner"));
    let message = mail_parser::MessageParser::new()
        .parse(raw.as_bytes())
        .expect("a message");
    assert_eq!(
        message.subject(),
        Some(format!("Fix {}in the [31mplanner", "very ".repeat(224)).trim_end())
    );
    // The body line of 1,138 octets is wrapped at a space.
    let body = message.body_text(0).expect("a body");
    assert!(body.lines().count() == 2, "{body}");
    assert!(body.lines().all(|l| l.len() <= MAX_LINE));
}

#[test]
fn a_long_series_name_makes_a_bounded_message_id() {
    let env = envelope();
    let long = stable_message_id(&format!("watch.{}.a.b", "p".repeat(5000)), &env);
    let other = stable_message_id(&format!("watch.{}.a.c", "p".repeat(5000)), &env);
    assert!(long.len() < 300, "{long}");
    assert_ne!(long, other);
    assert_eq!(
        stable_message_id("watch.default/c8.a.b", &env),
        "<pgbisect.watch.default.c8.a.b@bench.example.org>"
    );
}
