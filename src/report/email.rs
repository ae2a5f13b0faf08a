//! The report as an RFC 5322 message, ready for `sendmail -t` or a mail
//! client's "open draft", so a result goes to pgsql-hackers as written.
//!
//! The body is the text report (72 columns) sent as 8-bit UTF-8; a subject
//! with non-ASCII characters (a commit subject with an accented author's
//! word, say) is encoded per RFC 2047. Lines end with CRLF.

use base64::Engine;

/// Who sends the message to whom, and when. Given by the caller so the
/// rendering stays pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub from: String,
    pub to: String,
    /// Seconds since the Unix epoch.
    pub date_unix: i64,
}

/// The whole message: headers, a blank line, the body; CRLF line ends.
pub fn render(subject: &str, body: &str, id_part: &str, envelope: &Envelope) -> String {
    let id = stable_message_id(&format!("{id_part}.{}", envelope.date_unix), envelope);
    render_with_id(subject, body, &id, envelope)
}

/// A Message-ID made of `id_part` and the sender's domain alone, the same
/// whenever it is made: a message sent again under it is dropped as a
/// repeat by a list or a mail reader that keeps the ids it has seen.
pub fn stable_message_id(id_part: &str, envelope: &Envelope) -> String {
    format!(
        "<pgbisect.{}@{}>",
        one_line(id_part).replace(|c: char| !c.is_ascii_alphanumeric(), "."),
        domain(&envelope.from)
    )
}

/// The whole message under the Message-ID `id` (`<...>`).
pub fn render_with_id(subject: &str, body: &str, id: &str, envelope: &Envelope) -> String {
    let headers = [
        format!("From: {}", one_line(&envelope.from)),
        format!("To: {}", one_line(&envelope.to)),
        format!("Date: {}", rfc5322_date(envelope.date_unix)),
        subject_header(&one_line(subject)),
        format!("Message-ID: {}", one_line(id)),
        "MIME-Version: 1.0".to_string(),
        "Content-Type: text/plain; charset=utf-8".to_string(),
        "Content-Transfer-Encoding: 8bit".to_string(),
    ];
    let mut out = headers.join("\r\n");
    out.push_str("\r\n\r\n");
    for line in body.lines() {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out
}

/// Headers are one line each: a CR or LF in a value would start a header
/// of its own.
fn one_line(text: &str) -> String {
    text.split(['\r', '\n'])
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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
/// text folds at spaces, other text becomes RFC 2047 encoded words.
fn subject_header(subject: &str) -> String {
    let words: Vec<String> = if subject.is_ascii() {
        subject.split(' ').map(str::to_string).collect()
    } else {
        encoded_words(subject)
    };
    let mut lines = vec![String::from("Subject:")];
    for word in words {
        let Some(last) = lines.last_mut() else {
            break;
        };
        if last.len() + 1 + word.len() > 78 && last.trim() != "Subject:" {
            lines.push(format!(" {word}"));
        } else {
            last.push(' ');
            last.push_str(&word);
        }
    }
    lines.join("\r\n")
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
    fn header_values_stay_on_one_line() {
        assert_eq!(one_line("a\r\nBcc: x@y"), "a Bcc: x@y");
        assert_eq!(domain("Jane <jane@example.org>"), "example.org");
        assert_eq!(domain("nobody"), "localhost");
    }
}
