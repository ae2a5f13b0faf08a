//! `pgbisect host-run`: one run of the PostgreSQL lab on a host, for a
//! hunt coordinated from another machine (hidden: the coordinator starts
//! it through ssh or Slurm, with the request in the environment).
//!
//! It prints pgbench's output of the measured run, then one answer line
//! the coordinator reads (`crate::lab::pg::host`). A first signal (the
//! job stopped at its deadline, or by the coordinator) stops the server
//! and ends it without an answer.

use crate::lab::pg::host::{self, Answer, REQUEST_ENV, Request};
use crate::model::RunOutcome;
use anyhow::Context;
use std::io::Write;
use std::process::ExitCode;

/// Reads the request, does it, prints the answer.
pub(super) fn command() -> anyhow::Result<ExitCode> {
    let text = std::env::var(REQUEST_ENV)
        .with_context(|| format!("no request in ${REQUEST_ENV}: host-run is started by a hunt"))?;
    let request: Request =
        serde_json::from_str(&text).with_context(|| format!("cannot read ${REQUEST_ENV}"))?;
    crate::proc::install_signal_handlers().context("cannot install the interrupt handler")?;
    let answer: Answer = host::serve(&request)?;
    let mut out = std::io::stdout().lock();
    if let Some(RunOutcome::Measured(m)) = &answer.outcome
        && let Some(path) = &m.output
    {
        // What pgbench printed, for the coordinator's copy of the run.
        let printed = std::fs::read(path).unwrap_or_default();
        out.write_all(&printed)?;
        writeln!(out)?;
    }
    writeln!(out, "{}", answer.line())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
