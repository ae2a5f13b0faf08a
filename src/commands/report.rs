//! `pgbisect report`: renders a past hunt's result again.
//!
//! Every hunt keeps its `result.json` in its folder, so a report can be
//! rendered again later, in another format, without running anything. The
//! newest result is the one most recently written.

use super::args::{HuntLocation, ReportFormat};
use super::output::write_output_file;
use crate::error::UsageError;
use crate::report::findings::HuntReport;
use crate::report::{self, Format};
use crate::workspace::{HuntDir, RESULT_FILE, WorkDir};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Where a PostgreSQL performance report goes unless told otherwise.
pub const HACKERS: &str = "pgsql-hackers@lists.postgresql.org";

/// `pgbisect report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    #[command(flatten)]
    pub at: HuntLocation,
    /// How to render the result.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Write the report to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the hunt's SVG chart (TPS of every tested commit in
    /// history order, culprits marked) to this file.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// The email's sender, e.g. "Jane Doe <jane@example.org>" (default:
    /// git's user.name and user.email, of the repository hunted, then
    /// global, as `git format-patch` takes them).
    #[arg(long, value_name = "ADDR")]
    pub from: Option<String>,
    /// The email's recipient.
    #[arg(long, value_name = "ADDR", default_value = HACKERS)]
    pub to: String,
}

/// Reads a hunt's result.
pub fn load(hunt: &HuntDir) -> anyhow::Result<HuntReport> {
    let path = hunt.result();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a pgbisect hunt result (its JSON does not match)",
            path.display()
        )
    })
}

pub(super) fn command(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    for (path, flag) in [(&args.output, "--output"), (&args.chart, "--chart")] {
        if let Some(path) = path {
            super::output::check_writable_file(path, flag)?;
        }
    }
    let work = args.at.work_dir()?;
    if let Some(progress) = still_running(&work, args.at.hunt.as_deref())? {
        print!("{}", crate::shown::visible(&progress));
        return Ok(ExitCode::SUCCESS);
    }
    let hunt = work.choose_hunt(args.at.hunt.as_deref(), RESULT_FILE)?;
    let found = load(&hunt)?;
    let envelope = match args.format.0 {
        Format::Email => Some(envelope(args, &hunt)?),
        _ => None,
    };
    let text = report::render(&found, args.format.0, envelope.as_ref())?;
    if let Some(path) = &args.chart {
        write_output_file(path, &crate::report::chart::hunt_chart(&found))?;
    }
    match &args.output {
        Some(path) => write_output_file(path, &text)?,
        // The mail is made safe as it is put together, CRLF ends kept.
        None if args.format.0 == Format::Email => print!("{text}"),
        // A terminal, most likely: commit text shows no escapes.
        None => print!("{}", crate::shown::visible(&text)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The progress so far of the hunt asked for (by name, else the newest
/// journal) when it has not ended: another process holds the work dir,
/// and the hunt has no result newer than its journal.
fn still_running(work: &WorkDir, name: Option<&str>) -> anyhow::Result<Option<String>> {
    let Some(holder) = crate::workspace::holder_of(work.root()) else {
        return Ok(None);
    };
    let journals = work.journals()?;
    let Some(hunt) = journals
        .into_iter()
        .find(|h| name.is_none_or(|n| h.name == n))
    else {
        return Ok(None);
    };
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let ended = match (modified(&hunt.result()), modified(&hunt.journal())) {
        (Some(result), Some(journal)) => result >= journal,
        (result, _) => result.is_some(),
    };
    if ended {
        return Ok(None);
    }
    let events = crate::journal::Journal::load(&hunt.journal())?;
    Ok(Some(report::running::text(
        &events,
        &holder.who(),
        &hunt.journal().display().to_string(),
    )))
}

/// The email's sender and recipient: `--from`, else git's identity (see
/// [`sender`]).
fn envelope(args: &ReportArgs, hunt: &HuntDir) -> anyhow::Result<report::Envelope> {
    let from = match &args.from {
        Some(from) => from.clone(),
        None => sender(args, hunt)?,
    };
    if !(from.contains('@') && args.to.contains('@')) {
        return Err(UsageError(format!(
            "--from `{from}` --to `{}`: give email addresses, e.g. \
             --from \"Jane Doe <jane@example.org>\"",
            args.to
        ))
        .into());
    }
    Ok(report::Envelope {
        from,
        to: args.to.clone(),
        cc: String::new(),
        date_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    })
}

/// git's identity in the repository the hunt ran in (saved with its
/// command), else in `--repo` or the current directory, else git's
/// global one.
fn sender(args: &ReportArgs, hunt: &HuntDir) -> anyhow::Result<String> {
    let hunted = super::run_args::load(hunt).ok().and_then(|c| c.repo());
    let given = args.at.repo.clone().or_else(|| {
        args.at
            .work_dir
            .is_none()
            .then(|| std::path::PathBuf::from("."))
    });
    let found = hunted
        .or(given)
        .and_then(|repo| crate::repo::sender(Some(&repo)))
        .or_else(|| crate::repo::sender(None))
        .ok_or_else(|| {
            UsageError(
                "--format email needs a sender: give --from \"Jane Doe <jane@example.org>\", \
                 or set one for git with `git config --global user.name \"Jane Doe\"` and \
                 `git config --global user.email jane@example.org`"
                    .into(),
            )
        })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_json_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let hunt = HuntDir::at(tmp.path().join("a"));
        hunt.create().unwrap();
        std::fs::write(hunt.result(), "{").unwrap();
        let err = load(&hunt).unwrap_err();
        assert!(format!("{err:#}").contains("result.json"), "{err:#}");
    }
}
