//! A local SMTP server for the mail tests (Python's aiosmtpd, installed
//! by scripts/setup.sh): every message it gets is kept as a file.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Fails the test, naming `what` and the setup script, unless the shell
/// `check` succeeds.
pub fn require(check: &str, what: &str) {
    let out = Command::new("sh")
        .args(["-c", check])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{what} is missing: run scripts/setup.sh ({})",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// A local SMTP server that keeps every message it gets as a file in a
/// maildir; stopped when dropped.
pub struct MailServer {
    child: Child,
    pub port: u16,
    maildir: tempfile::TempDir,
}

impl MailServer {
    pub fn start() -> MailServer {
        MailServer::start_with(&[])
    }

    /// With extra aiosmtpd options, e.g. `-s SIZE`.
    pub fn start_with(options: &[&str]) -> MailServer {
        let maildir = tempfile::tempdir().unwrap();
        let mut handler = vec!["-c".to_string(), "aiosmtpd.handlers.Mailbox".to_string()];
        handler.push(maildir.path().join("box").display().to_string());
        MailServer::spawn(maildir, options, &handler)
    }

    /// A relay as strict as RFC 5321 allows (tests/fixtures/strict_relay.py):
    /// it refuses a line over 998 octets or a bare CR or LF with 500, and
    /// every message with 554 while the file `refuse` exists.
    pub fn strict(refuse: &Path) -> MailServer {
        let maildir = tempfile::tempdir().unwrap();
        let handler = [
            "-c".to_string(),
            "strict_relay.Strict".to_string(),
            maildir.path().join("box").display().to_string(),
            refuse.display().to_string(),
        ];
        MailServer::spawn(maildir, &[], &handler)
    }

    fn spawn(maildir: tempfile::TempDir, options: &[&str], handler: &[String]) -> MailServer {
        require("python3 -c 'import aiosmtpd'", "Python's aiosmtpd");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let child = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n"])
            .args(options)
            .arg("-l")
            .arg(format!("127.0.0.1:{port}"))
            .args(handler)
            .env("PYTHONPATH", fixtures)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("aiosmtpd starts");
        let server = MailServer {
            child,
            port,
            maildir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "aiosmtpd did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every message received so far, as text.
    pub fn messages(&self) -> Vec<String> {
        let new = self.maildir.path().join("box").join("new");
        let Ok(entries) = std::fs::read_dir(&new) else {
            return Vec::new();
        };
        entries
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
