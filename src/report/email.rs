//! The report as an RFC 5322 message, ready for `sendmail -t` or a mail
//! client's "open draft", so a result goes to pgsql-hackers as written.
//!
//! The body is the text report (72 columns) sent as 8-bit UTF-8; a subject
//! with non-ASCII characters (a commit subject with an accented author's
//! word, say) is encoded per RFC 2047. Lines end with CRLF, and none is
//! longer than a relay takes, whatever the commits it tells of say.

use base64::Engine;

/// Who sends the message to whom, and when. Given by the caller so the
/// rendering stays pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub from: String,
    pub to: String,
    /// The Cc header's addresses, comma-separated; empty: no Cc header.
    pub cc: String,
    /// Seconds since the Unix epoch.
    pub date_unix: i64,
}

/// The whole message: headers, a blank line, the body; CRLF line ends.
pub fn render(subject: &str, body: &str, id_part: &str, envelope: &Envelope) -> String {
    let id = stable_message_id(&format!("{id_part}.{}", envelope.date_unix), envelope);
    render_with_id(subject, body, &id, envelope)
}

/// The whole message under a Message-ID made of `id_part` alone
/// ([`stable_message_id`]), and that id: a watcher's finding or digest,
/// sent again under the same id until a relay takes it.
pub fn render_stable(
    subject: &str,
    body: &str,
    id_part: &str,
    envelope: &Envelope,
) -> (String, String) {
    let id = stable_message_id(id_part, envelope);
    let message = render_with_id(subject, body, &id, envelope);
    (id, message)
}

/// A Message-ID made of `id_part` and the sender's domain alone, the same
/// whenever it is made: a message sent again under it is dropped as a
/// repeat by a list or a mail reader that keeps the ids it has seen.
pub fn stable_message_id(id_part: &str, envelope: &Envelope) -> String {
    let mut part = one_line(id_part).replace(|c: char| !c.is_ascii_alphanumeric(), ".");
    if part.len() > ID_PART {
        // A long series name: its start, and a hash of the whole so that
        // two names that start alike still make two ids.
        part = format!("{}.{:016x}", &part[..ID_PART], fnv1a(id_part.as_bytes()));
    }
    let mut host = domain(&envelope.from);
    host.truncate(ID_PART);
    format!("<pgbisect.{part}@{host}>")
}

/// Longest part of a Message-ID made of a name (ASCII once made).
const ID_PART: usize = 200;

/// FNV-1a, 64 bits: the same for the same bytes in every build, as a
/// Message-ID made again must be.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Longest line of a message in octets, its CRLF left out (RFC 5321
/// 4.5.3.1.6, RFC 5322 2.1.1): a relay that keeps the limit answers
/// "500 Line too long" to a message with a longer one, at every try.
pub const MAX_LINE: usize = 998;

/// Where a header is folded when it can be (RFC 5322 2.1.1's 78).
const FOLD_AT: usize = 78;

/// The whole message under the Message-ID `id` (`<...>`). Every message
/// pgbisect sends is put together here, so this is where the text of
/// others (commit subjects, authors, profile names) is made fit to send:
/// a header value is one line with its control characters as spaces,
/// folded; a body line shows its control characters as escapes (a bare CR
/// or NUL never reaches the relay) and one longer than [`MAX_LINE`] is
/// wrapped at a space. Lines end with CRLF.
pub fn render_with_id(subject: &str, body: &str, id: &str, envelope: &Envelope) -> String {
    let mut headers = vec![
        folded("From:", &plain_words(&envelope.from)),
        folded("To:", &plain_words(&envelope.to)),
        format!("Date: {}", rfc5322_date(envelope.date_unix)),
        subject_header(&one_line(subject)),
        folded("Message-ID:", &plain_words(id)),
        "MIME-Version: 1.0".to_string(),
        "Content-Type: text/plain; charset=utf-8".to_string(),
        "Content-Transfer-Encoding: 8bit".to_string(),
    ];
    if !envelope.cc.is_empty() {
        headers.insert(2, folded("Cc:", &plain_words(&envelope.cc)));
    }
    let mut out = headers.join("\r\n");
    out.push_str("\r\n\r\n");
    for line in body.lines() {
        for piece in wrapped(&crate::shown::visible(line), MAX_LINE) {
            out.push_str(piece);
            out.push_str("\r\n");
        }
    }
    out
}

/// Headers are one line each: a CR or LF in a value would start a header
/// of its own, and other control characters have no place in one.
fn one_line(text: &str) -> String {
    crate::shown::header_value(text)
}

/// The words of a header value, none too long for a line of its own.
fn plain_words(text: &str) -> Vec<String> {
    one_line(text)
        .split(' ')
        .flat_map(|w| wrapped(w, MAX_LINE - 1).into_iter().map(str::to_string))
        .collect()
}

/// `name` and `words` as one header, folded before a word that would take
/// its line past [`FOLD_AT`] columns (each word stays whole).
fn folded(name: &str, words: &[String]) -> String {
    let mut lines = vec![String::from(name)];
    for word in words {
        let Some(last) = lines.last_mut() else {
            break;
        };
        if last.len() + 1 + word.len() > FOLD_AT && last.as_str() != name {
            lines.push(format!(" {word}"));
        } else {
            last.push(' ');
            last.push_str(word);
        }
    }
    lines.join("\r\n")
}

/// `line` cut into pieces of at most `max` octets: at the last space that
/// keeps a piece under the limit (the space dropped), else at the last
/// whole character that does. A line within the limit is left as it is.
fn wrapped(mut line: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    while line.len() > max {
        let mut cut = max;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        let space = if line.as_bytes()[cut] == b' ' {
            Some(cut)
        } else {
            line[..cut].rfind(' ')
        };
        match space.filter(|&at| at > 0) {
            Some(at) => {
                pieces.push(&line[..at]);
                line = &line[at + 1..];
            }
            None => {
                pieces.push(&line[..cut]);
                line = &line[cut..];
            }
        }
    }
    pieces.push(line);
    pieces
}

/// The domain of an address such as `Jane <jane@example.org>`, for the
/// Message-ID; `localhost` when there is none.
fn domain(address: &str) -> String {
    address
        .rsplit_once('@')
        .map(|(_, d)| {
            d.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                .collect::<String>()
        })
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The `Subject:` header, folded so lines stay under 78 columns: ASCII
/// text folds at spaces; other text, a word too long to fold, or text
/// that could be read as an encoded word becomes RFC 2047 encoded words.
fn subject_header(subject: &str) -> String {
    let plain = subject.is_ascii()
        && !subject.contains("=?")
        && subject.split(' ').all(|w| w.len() < FOLD_AT - 1);
    let words: Vec<String> = if plain {
        subject.split(' ').map(str::to_string).collect()
    } else {
        encoded_words(subject)
    };
    folded("Subject:", &words)
}

/// RFC 2047 `B` encoded words, each at most 75 characters and holding
/// whole UTF-8 characters.
fn encoded_words(text: &str) -> Vec<String> {
    const MAX_BYTES: usize = 39; // 52 base64 characters, 64 with the frame
    let mut chunks: Vec<String> = vec![String::new()];
    for c in text.chars() {
        if chunks
            .last()
            .is_some_and(|s| s.len() + c.len_utf8() > MAX_BYTES)
        {
            chunks.push(String::new());
        }
        if let Some(last) = chunks.last_mut() {
            last.push(c);
        }
    }
    chunks
        .iter()
        .map(|c| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(c.as_bytes());
            format!("=?utf-8?B?{b64}?=")
        })
        .collect()
}

/// `Thu, 03 Dec 2026 05:48:27 +0000`.
pub fn rfc5322_date(unix: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // `YYYY-MM-DDTHH:MM:SSZ`, fixed widths.
    let iso = crate::time::rfc3339_from_unix(unix);
    let weekday = DAYS[(unix.div_euclid(86_400) + 4).rem_euclid(7) as usize];
    let month: usize = iso.get(5..7).and_then(|m| m.parse().ok()).unwrap_or(1);
    format!(
        "{weekday}, {} {} {} {} +0000",
        iso.get(8..10).unwrap_or("01"),
        MONTHS[(month.clamp(1, 12)) - 1],
        iso.get(0..4).unwrap_or("1970"),
        iso.get(11..19).unwrap_or("00:00:00"),
    )
}

#[cfg(test)]
#[path = "email_props.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_rfc5322_form() {
        assert_eq!(rfc5322_date(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(
            rfc5322_date(1_796_276_907),
            "Thu, 03 Dec 2026 05:48:27 +0000"
        );
        assert_eq!(rfc5322_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn long_ascii_subject_folds_at_spaces() {
        let subject = "pgbisect: -26.9% TPS at 128 clients, first bad commit ac1d7945 \"Make idle backends exit if the postmaster dies\"";
        let header = subject_header(subject);
        let lines: Vec<&str> = header.split("\r\n").collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.len() <= 78), "{lines:?}");
        assert_eq!(header.replace("\r\n", ""), format!("Subject: {subject}"));
    }

    #[test]
    fn non_ascii_subject_is_encoded() {
        let words = encoded_words("Évite les verrous à répétition, très souvent ».");
        assert!(words.len() > 1);
        for w in &words {
            assert!(w.len() <= 75 && w.is_ascii(), "{w}");
        }
    }

    #[test]
    fn a_cc_is_a_header_after_to_only_when_given() {
        let mut env = Envelope {
            from: "pgbisect@bench.example.org".into(),
            to: "perf@example.org".into(),
            cc: String::new(),
            date_unix: 0,
        };
        let head = |env: &Envelope| {
            let message = render_with_id("s", "b", "<i@x>", env);
            let (head, _) = message.split_once("\r\n\r\n").unwrap();
            head.lines().map(str::to_string).collect::<Vec<_>>()
        };
        assert!(!head(&env).iter().any(|l| l.starts_with("Cc:")));
        env.cc = "tgl@sss.pgh.pa.us\r\nBcc: x@y".into();
        let lines = head(&env);
        assert_eq!(lines[1], "To: perf@example.org");
        assert_eq!(lines[2], "Cc: tgl@sss.pgh.pa.us Bcc: x@y");
    }

    #[test]
    fn header_values_stay_on_one_line() {
        assert_eq!(one_line("a\r\nBcc: x@y"), "a Bcc: x@y");
        assert_eq!(domain("Jane <jane@example.org>"), "example.org");
        assert_eq!(domain("nobody"), "localhost");
    }
}
