//! Mail: the messages a hunt sends and the transports that deliver them.
//!
//! A hunt left to run overnight is only useful if its result reaches
//! someone. Messages are plain RFC 5322 text, so whoever renders them (a
//! short summary here, a richer report elsewhere) does not care how they
//! travel; a [`MailTransport`] takes the text as it is to a local relay over
//! SMTP or to the system's `sendmail`.

use crate::proc::{self, Ended};
use anyhow::{Context, anyhow};
use lettre::address::{Address, Envelope};
use lettre::transport::smtp::SmtpTransport;
use lettre::transport::smtp::extension::ClientId;
use lettre::{Transport, transport::smtp};
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
        let expr = duct::cmd!(&self.path, "-t", "-i", "-f", from)
            .stdin_bytes(with_line_ends(message, "\n"))
            .stdout_capture()
            .stderr_capture();
        let ended = proc::run_to_deadline(expr, super::NOTIFY_LIMIT).with_context(|| {
            format!(
                "cannot run {} (install a mail transfer agent or use --smtp HOST:PORT)",
                self.path.display()
            )
        })?;
        let Ended::Exited(out) = ended else {
            return Err(anyhow!(
                "{} did not finish in {} s and was stopped",
                self.path.display(),
                super::NOTIFY_LIMIT.as_secs()
            ));
        };
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

/// The address of a commit's author as git gives it (`Name <email>`),
/// when it is one a transport will accept.
pub fn address_of(author: &str) -> Option<String> {
    let (_, rest) = author.rsplit_once('<')?;
    let addr = rest.strip_suffix('>')?.trim();
    valid_address(addr).then(|| addr.to_string())
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
    /// Told as well, in a Cc header (a culprit's author).
    pub cc: Vec<String>,
    /// Seconds since the epoch.
    pub date: i64,
    /// Right-hand side of the Message-ID.
    pub host: String,
}

impl Envelope5322 {
    /// The envelope of the message's headers.
    pub fn header_envelope(&self) -> crate::report::Envelope {
        crate::report::Envelope {
            from: self.from.clone(),
            to: self.to.join(", "),
            cc: self.cc.join(", "),
            date_unix: self.date,
        }
    }

    /// Dated now, with this machine's name in the Message-ID.
    pub fn now(from: &str, to: &[String]) -> Self {
        let date = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Envelope5322 {
            from: from.to_string(),
            to: to.to_vec(),
            cc: Vec::new(),
            date: i64::try_from(date).unwrap_or(0),
            host: hostname(),
        }
    }
}

/// A plain-text message: headers from `env`, `subject`, then `body`,
/// rendered by the report's mail renderer, so every message pgbisect writes
/// has the same form.
pub fn plain_message(env: &Envelope5322, subject: &str, body: &str) -> String {
    let id = format!("{}.{}", env.host, std::process::id());
    crate::report::email::render(subject, body, &id, &env.header_envelope())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn line_ends_are_normalised() {
        assert_eq!(with_line_ends("a\nb\r\nc", "\r\n"), "a\r\nb\r\nc");
        assert_eq!(with_line_ends("a\r\nb\n", "\n"), "a\nb\n");
    }

    #[test]
    fn each_transport_gets_one_kind_of_line_end() {
        let env = Envelope5322 {
            from: "pgbisect@bench".into(),
            to: vec!["perf@example.org".into()],
            cc: vec![],
            date: 0,
            host: "bench".into(),
        };
        let subject = "Fix\r\x1b[2J the planner\rBcc: x@y";
        let body = format!("Culprit: ac1d7945 {subject}\n{}\n", "word ".repeat(400));
        let message = plain_message(&env, subject, &body);
        // sendmail -t reads LF lines; SMTP's DATA takes CRLF lines.
        let unix = with_line_ends(&message, "\n");
        assert!(!unix.contains('\r'), "{unix}");
        let smtp = with_line_ends(&message, "\r\n");
        assert_eq!(smtp.matches('\r').count(), smtp.matches('\n').count());
        assert!(smtp.split("\r\n").all(|l| l.len() <= 998));
        assert!(!unix.lines().any(|l| l.starts_with("Bcc:")), "{unix}");
    }

    #[test]
    fn an_authors_address_is_read_from_name_and_email() {
        let read = |a: &str| address_of(a);
        assert_eq!(
            read("Tom Lane <tgl@sss.pgh.pa.us>").as_deref(),
            Some("tgl@sss.pgh.pa.us")
        );
        assert_eq!(read("A <b> C <d@e.org>").as_deref(), Some("d@e.org"));
        for bad in [
            "Tom Lane",
            "Tom <>",
            "Tom <not an address>",
            "Tom <a@b.org> x",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_addresses_are_refused_before_sending() {
        let err = envelope("pgbisect@bench", &["not an address".into()]).unwrap_err();
        assert!(format!("{err:#}").contains("not an address"));
        assert!(envelope("pgbisect@bench", &[]).is_err());
        assert!(valid_address("someone@example.org"));
    }
}
