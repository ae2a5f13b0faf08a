//! Mail: the messages a hunt sends and the transports that deliver them.
//!
//! A hunt left to run overnight is only useful if its result reaches
//! someone. Messages are plain RFC 5322 text, so whoever renders them (a
//! short summary here, a richer report elsewhere) does not care how they
//! travel; a [`MailTransport`] takes the text as it is to a local relay over
//! SMTP or to the system's `sendmail`.

use anyhow::{Context, anyhow};
use base64::Engine;
use lettre::address::{Address, Envelope};
use lettre::transport::smtp::SmtpTransport;
use lettre::transport::smtp::extension::ClientId;
use lettre::{Transport, transport::smtp};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Delivers a finished RFC 5322 message.
pub trait MailTransport {
    /// Sends `message` from the envelope sender `from` to every address in
    /// `to`.
    fn send(&self, from: &str, to: &[String], message: &str) -> anyhow::Result<()>;
}

/// Plain SMTP to a relay, without authentication or TLS: the usual local
/// relay (`localhost:25`) of a benchmark machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Smtp {
    pub host: String,
    pub port: u16,
}

impl Smtp {
    /// Parses `HOST:PORT`, `HOST` (port 25) or `[IPV6]:PORT`.
    pub fn parse(addr: &str) -> Result<Smtp, String> {
        let bad = || format!("--smtp {addr}: give HOST:PORT, e.g. localhost:25");
        let (host, port) = match addr.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (addr, 25),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok(Smtp {
            host: host.to_string(),
            port,
        })
    }

    fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl MailTransport for Smtp {
    fn send(&self, from: &str, to: &[String], message: &str) -> anyhow::Result<()> {
        let envelope = envelope(from, to)?;
        let transport = SmtpTransport::builder_dangerous(self.host.as_str())
            .port(self.port)
            .hello_name(ClientId::Domain(hostname()))
            .timeout(Some(Duration::from_secs(60)))
            .build();
        let text = with_line_ends(message, "\r\n");
        let body = text.strip_suffix("\r\n").unwrap_or(&text);
        transport
            .send_raw(&envelope, body.as_bytes())
            .map_err(|e| smtp_error(&self.name(), &e))?;
        Ok(())
    }
}

fn smtp_error(server: &str, err: &smtp::Error) -> anyhow::Error {
    if err.status().is_some() {
        anyhow!("the SMTP server {server} refused the message: {err}")
    } else {
        anyhow!("cannot send mail through the SMTP server {server}: {err}")
    }
}

/// The local mail system's `sendmail -t -i`, which takes the recipients
/// from the message's headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sendmail {
    pub path: PathBuf,
}

impl Default for Sendmail {
    fn default() -> Self {
        Sendmail {
            path: PathBuf::from("/usr/sbin/sendmail"),
        }
    }
}

impl MailTransport for Sendmail {
    fn send(&self, from: &str, to: &[String], message: &str) -> anyhow::Result<()> {
        envelope(from, to)?;
        let out = duct::cmd!(&self.path, "-t", "-i", "-f", from)
            .stdin_bytes(with_line_ends(message, "\n"))
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .with_context(|| {
                format!(
                    "cannot run {} (install a mail transfer agent or use --smtp HOST:PORT)",
                    self.path.display()
                )
            })?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let said = said.trim();
            return Err(anyhow!(
                "{} did not take the message ({}){}{}",
                self.path.display(),
                out.status,
                if said.is_empty() { "" } else { ": " },
                said
            ));
        }
        Ok(())
    }
}

/// Checks the addresses and makes the SMTP envelope.
fn envelope(from: &str, to: &[String]) -> anyhow::Result<Envelope> {
    let from: Address = from
        .parse()
        .with_context(|| format!("the sender address `{from}` is not valid"))?;
    let to = to
        .iter()
        .map(|a| {
            a.parse::<Address>()
                .with_context(|| format!("the recipient address `{a}` is not valid"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Envelope::new(Some(from), to).context("a message needs at least one recipient")
}

/// Whether `addr` is a mail address a transport will accept.
pub fn valid_address(addr: &str) -> bool {
    addr.parse::<Address>().is_ok()
}

/// `text` with every line ending (LF or CRLF) written as `eol`.
fn with_line_ends(text: &str, eol: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 40);
    for line in text.split_inclusive('\n') {
        match line.strip_suffix('\n') {
            Some(l) => {
                out.push_str(l.strip_suffix('\r').unwrap_or(l));
                out.push_str(eol);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// This machine's name, for the default sender and the SMTP greeting.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the pointer and length describe `buf`, which outlives the call;
    // gethostname writes at most `buf.len()` bytes into it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    if rc != 0 || name.is_empty() {
        "localhost".to_string()
    } else {
        name
    }
}

/// Who a message is from and to, and when it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope5322 {
    pub from: String,
    pub to: Vec<String>,
    /// Seconds since the epoch.
    pub date: i64,
    /// Right-hand side of the Message-ID.
    pub host: String,
}

impl Envelope5322 {
    /// Dated now, with this machine's name in the Message-ID.
    pub fn now(from: &str, to: &[String]) -> Self {
        let date = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Envelope5322 {
            from: from.to_string(),
            to: to.to_vec(),
            date: i64::try_from(date).unwrap_or(0),
            host: hostname(),
        }
    }
}

/// A plain-text message: headers from `env`, `subject`, then `body`.
pub fn plain_message(env: &Envelope5322, subject: &str, body: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Date: {}", rfc5322_date(env.date));
    let _ = writeln!(out, "From: {}", env.from);
    let _ = writeln!(out, "To: {}", env.to.join(", "));
    let _ = writeln!(out, "Subject: {}", encode_header(subject));
    let _ = writeln!(
        out,
        "Message-ID: <pgbisect.{}.{}@{}>",
        env.date,
        std::process::id(),
        env.host
    );
    out.push_str("MIME-Version: 1.0\n");
    out.push_str("Content-Type: text/plain; charset=utf-8\n");
    out.push_str("Content-Transfer-Encoding: 8bit\n\n");
    out.push_str(body);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A header value, as RFC 2047 encoded words when it is not plain ASCII.
pub fn encode_header(value: &str) -> String {
    let value: String = value.chars().filter(|c| !c.is_control()).collect();
    if value.is_ascii() {
        return value;
    }
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in value.chars() {
        if chunk.len() + c.len_utf8() > 45 {
            words.push(std::mem::take(&mut chunk));
        }
        chunk.push(c);
    }
    words.push(chunk);
    words
        .iter()
        .map(|w| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(w.as_bytes());
            format!("=?UTF-8?B?{b64}?=")
        })
        .collect::<Vec<_>>()
        .join("\n ")
}

/// `Thu, 03 Dec 2026 05:48:27 +0000` for seconds since the epoch.
pub fn rfc5322_date(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // `YYYY-MM-DDTHH:MM:SSZ`
    let iso = crate::hunt::rfc3339_from_unix(secs);
    let weekday = DAYS[secs.div_euclid(86_400).rem_euclid(7) as usize];
    let month = iso
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .unwrap_or(&"Jan");
    format!(
        "{weekday}, {} {month} {} {} +0000",
        iso.get(8..10).unwrap_or("01"),
        iso.get(0..4).unwrap_or("1970"),
        iso.get(11..19).unwrap_or("00:00:00")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc5322() {
        assert_eq!(rfc5322_date(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(
            rfc5322_date(1_796_276_907),
            "Thu, 03 Dec 2026 05:48:27 +0000"
        );
        assert_eq!(rfc5322_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn smtp_addresses_parse() {
        let s = |h: &str, p| Smtp {
            host: h.into(),
            port: p,
        };
        assert_eq!(Smtp::parse("localhost:2525"), Ok(s("localhost", 2525)));
        assert_eq!(
            Smtp::parse("mail.example.org"),
            Ok(s("mail.example.org", 25))
        );
        assert_eq!(Smtp::parse("[::1]:587"), Ok(s("::1", 587)));
        assert!(Smtp::parse("host:port").is_err());
        assert!(Smtp::parse(":25").is_err());
        assert!(Smtp::parse("host:0").is_err());
    }

    #[test]
    fn non_ascii_subjects_are_encoded_words() {
        assert_eq!(encode_header("plain subject"), "plain subject");
        assert_eq!(encode_header("a\r\nb"), "ab");
        let long = "pgbisect: hunt failed: cannot read «données» ".repeat(3);
        let encoded = encode_header(&long);
        let mut decoded = String::new();
        for word in encoded.split("\n ") {
            assert!(word.len() <= 75, "{word}");
            let b64 = word
                .strip_prefix("=?UTF-8?B?")
                .and_then(|w| w.strip_suffix("?="))
                .unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            decoded.push_str(&String::from_utf8(bytes).unwrap());
        }
        assert_eq!(decoded, long);
    }

    #[test]
    fn line_ends_are_normalised() {
        assert_eq!(with_line_ends("a\nb\r\nc", "\r\n"), "a\r\nb\r\nc");
        assert_eq!(with_line_ends("a\r\nb\n", "\n"), "a\nb\n");
    }

    #[test]
    fn plain_message_has_the_headers() {
        let env = Envelope5322 {
            from: "pgbisect@bench".into(),
            to: vec!["a@example.org".into(), "b@example.org".into()],
            date: 0,
            host: "bench".into(),
        };
        let m = plain_message(&env, "pgbisect: hello", "body line");
        let (head, body) = m.split_once("\n\n").unwrap();
        assert!(
            head.contains("\nTo: a@example.org, b@example.org\n"),
            "{head}"
        );
        assert!(head.contains("\nSubject: pgbisect: hello\n"), "{head}");
        assert!(head.starts_with("Date: Thu, 01 Jan 1970 00:00:00 +0000\n"));
        assert!(head.contains("Message-ID: <pgbisect.0."), "{head}");
        assert_eq!(body, "body line\n");
    }

    #[test]
    fn bad_addresses_are_refused_before_sending() {
        let err = envelope("pgbisect@bench", &["not an address".into()]).unwrap_err();
        assert!(format!("{err:#}").contains("not an address"));
        assert!(envelope("pgbisect@bench", &[]).is_err());
        assert!(valid_address("someone@example.org"));
    }
}
