//! Telling someone how a hunt ended.
//!
//! Hunts take hours and usually run unattended (overnight, from cron), so
//! the end of one, a verdict or a failure, is pushed to the user: a command
//! of theirs (`--notify-cmd`) gets the outcome in its environment, and mail
//! (`--mail-to`) goes out through SMTP or the local `sendmail`. A
//! notification that fails is reported but never changes the hunt's exit
//! code or hides its error.

pub mod mail;

use crate::proc::{self, Ended};
use crate::report::findings::HuntReport;
use anyhow::{Context, anyhow};
use mail::{Envelope5322, MailTransport, Sendmail, Smtp};
use std::path::{Path, PathBuf};

/// How a hunt ended, for the notifications.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// The hunt reached a verdict.
    Finished(&'a HuntReport),
    /// The hunt stopped on an error; the text is the error.
    Failed(&'a str),
}

/// Everything the notifications tell about a hunt's end.
#[derive(Debug, Clone)]
pub struct HuntEnd<'a> {
    pub ending: Ending<'a>,
    /// The process's exit code.
    pub exit_code: u8,
    /// `result.json`, when the hunt wrote one.
    pub result: Option<PathBuf>,
    /// The text report file, when the hunt wrote one.
    pub report: Option<PathBuf>,
    /// The hunt's work dir, when it got that far.
    pub work_dir: Option<PathBuf>,
}

impl HuntEnd<'_> {
    /// `culprit-found`, `no-regression`, `inconclusive` or `error`.
    pub fn outcome(&self) -> &'static str {
        match self.ending {
            Ending::Finished(r) => r.outcome.as_str(),
            Ending::Failed(_) => "error",
        }
    }

    /// Full SHAs of the culprits, space-separated.
    pub fn culprits(&self) -> String {
        match self.ending {
            Ending::Finished(r) => r
                .culprits
                .iter()
                .map(|c| c.commit.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            Ending::Failed(_) => String::new(),
        }
    }

    /// The environment of the `--notify-cmd` command.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map_or_else(String::new, |p| p.display().to_string())
        };
        let reason = match self.ending {
            Ending::Failed(reason) => reason.to_string(),
            Ending::Finished(_) => String::new(),
        };
        vec![
            ("PGBISECT_OUTCOME", self.outcome().to_string()),
            ("PGBISECT_EXIT_CODE", self.exit_code.to_string()),
            ("PGBISECT_RESULT", path(&self.result)),
            ("PGBISECT_REPORT", path(&self.report)),
            ("PGBISECT_REASON", reason),
            ("PGBISECT_CULPRITS", self.culprits()),
            ("PGBISECT_WORK_DIR", path(&self.work_dir)),
        ]
    }

    /// The mail for this ending.
    pub fn message(&self, env: &Envelope5322) -> String {
        match self.ending {
            Ending::Finished(report) => finished_message(report, env),
            Ending::Failed(reason) => failure_message(reason, self.work_dir.as_deref(), env),
        }
    }
}

/// The message for a hunt that reached a verdict: the report's email.
pub fn finished_message(report: &HuntReport, env: &Envelope5322) -> String {
    crate::report::email(report, &env.header_envelope())
}

/// The message for a hunt that stopped on an error (a failed build of an
/// endpoint, a crash, an interrupt).
pub fn failure_message(reason: &str, work_dir: Option<&Path>, env: &Envelope5322) -> String {
    let first = reason.lines().next().unwrap_or("").trim();
    let mut body = format!("The hunt stopped on an error:\n\n{}\n", reason.trim_end());
    if let Some(dir) = work_dir {
        body.push_str(&format!(
            "\nWork dir: {}\nRuns measured so far are kept in its journal: running the same \
             command again resumes the hunt.\n",
            dir.display()
        ));
    }
    mail::plain_message(env, &format!("pgbisect: hunt failed: {first}"), &body)
}

/// Who is told, and how.
pub struct Notifier {
    command: Option<String>,
    mail: Option<Mail>,
}

struct Mail {
    from: String,
    to: Vec<String>,
    transport: Box<dyn MailTransport>,
}

impl Mail {
    /// Sends the message `render` makes (see [`crate::report::email`],
    /// where every message is put together) from an envelope dated now.
    fn send(&self, render: impl FnOnce(&Envelope5322) -> String) -> anyhow::Result<()> {
        self.send_cc(&[], render)
    }

    /// [`Mail::send`], to `cc` as well (a Cc header, and a recipient of
    /// the envelope).
    fn send_cc(
        &self,
        cc: &[String],
        render: impl FnOnce(&Envelope5322) -> String,
    ) -> anyhow::Result<()> {
        let cc: Vec<String> = cc
            .iter()
            .filter(|a| !self.to.contains(a))
            .cloned()
            .collect();
        let message = render(&Envelope5322 {
            cc: cc.clone(),
            ..Envelope5322::now(&self.from, &self.to)
        });
        let all: Vec<String> = self.to.iter().chain(&cc).cloned().collect();
        self.transport
            .send(&self.from, &all, &message)
            .with_context(|| format!("cannot mail {}", all.join(", ")))
    }
}

impl Notifier {
    /// From the flags; an `Err` is a usage mistake.
    pub fn from_flags(
        command: Option<&str>,
        mail_to: &[String],
        smtp: Option<&str>,
        mail_from: Option<&str>,
    ) -> Result<Notifier, String> {
        if mail_to.is_empty() {
            if smtp.is_some() || mail_from.is_some() {
                return Err("--smtp and --mail-from need --mail-to ADDR".into());
            }
            return Ok(Notifier {
                command: command.map(str::to_string),
                mail: None,
            });
        }
        let transport: Box<dyn MailTransport> = match smtp {
            Some(addr) => Box::new(Smtp::parse(addr)?),
            None => Box::new(Sendmail::default()),
        };
        let from = mail_from.map_or_else(default_sender, str::to_string);
        for addr in mail_to.iter().chain(std::iter::once(&from)) {
            if !mail::valid_address(addr) {
                return Err(format!("`{addr}` is not a mail address (user@host)"));
            }
        }
        Ok(Notifier {
            command: command.map(str::to_string),
            mail: Some(Mail {
                from,
                to: mail_to.to_vec(),
                transport,
            }),
        })
    }

    /// Runs the command and sends the mail; returns what went wrong.
    pub fn deliver(&self, end: &HuntEnd) -> Vec<anyhow::Error> {
        let mut problems = Vec::new();
        if let Some(Err(e)) = self.command.as_ref().map(|c| run_command(c, end)) {
            problems.push(e);
        }
        if let Some(Err(e)) = self.mail.as_ref().map(|m| m.send(|env| end.message(env))) {
            problems.push(e);
        }
        problems
    }

    /// Runs `--notify-cmd` for a finding of the watcher, the hunt's end in
    /// its environment: `Ok(false)` when there is no command; an error
    /// when it failed. Its mail goes apart ([`Notifier::mail_only`]), so
    /// that each way is recorded as it is taken.
    pub fn command_only(&self, end: &HuntEnd) -> anyhow::Result<bool> {
        let Some(command) = &self.command else {
            return Ok(false);
        };
        run_command(command, end)?;
        Ok(true)
    }

    /// Whether anybody is told at all: a command or a mail.
    pub fn tells_anyone(&self) -> bool {
        self.command.is_some() || self.mail.is_some()
    }

    /// Mails `subject` and `body` to `--mail-to` under a Message-ID made
    /// of `id_part` alone, the same each time (see
    /// [`crate::report::email::stable_message_id`]). The Message-ID
    /// once mailed; `None` when no mail is configured; an error when the
    /// mail was refused.
    pub fn mail_only(&self, text: (&str, &str), id_part: &str) -> anyhow::Result<Option<String>> {
        self.mail_cc(text, id_part, &[])
    }

    /// [`Notifier::mail_only`], to `cc` as well (a Cc header): a finding to
    /// its culprit's author.
    pub fn mail_cc(
        &self,
        (subject, body): (&str, &str),
        id_part: &str,
        cc: &[String],
    ) -> anyhow::Result<Option<String>> {
        let Some(mail) = &self.mail else {
            return Ok(None);
        };
        let mut id = String::new();
        mail.send_cc(cc, |env| {
            let (stable, message) =
                crate::report::email::render_stable(subject, body, id_part, &env.header_envelope());
            id = stable;
            message
        })?;
        Ok(Some(id))
    }

    /// [`Notifier::deliver`], with each problem as a warning on stderr.
    pub fn deliver_and_warn(&self, end: &HuntEnd) {
        for problem in self.deliver(end) {
            eprintln!("pgbisect: warning: {problem:#}");
        }
    }
}

/// `pgbisect@<hostname>`, or `pgbisect@localhost` when the host's name
/// does not make a valid address.
pub fn default_sender() -> String {
    let from = format!("pgbisect@{}", mail::hostname());
    if mail::valid_address(&from) {
        from
    } else {
        "pgbisect@localhost".to_string()
    }
}

/// How long `--notify-cmd` or sendmail may take.
pub const NOTIFY_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs the user's `--notify-cmd` with `sh -c`; its output goes to stderr,
/// so stdout keeps only the report.
pub fn run_command(command: &str, end: &HuntEnd) -> anyhow::Result<()> {
    let mut expr = duct::cmd!("sh", "-c", command).stdout_to_stderr();
    for (key, value) in end.environment() {
        expr = expr.env(key, value);
    }
    let ended = proc::run_to_deadline(expr, NOTIFY_LIMIT)
        .with_context(|| format!("cannot run the --notify-cmd `{command}`"))?;
    let out = match ended {
        Ended::Exited(out) => out,
        _ => {
            return Err(anyhow!(
                "the --notify-cmd `{command}` did not finish in {} s and was stopped",
                NOTIFY_LIMIT.as_secs()
            ));
        }
    };
    if out.status.success() {
        Ok(())
    } else {
        Err(anyhow!(
            "the --notify-cmd `{command}` failed ({})",
            out.status
        ))
    }
}

#[cfg(test)]
mod tests;
