//! `pgbisect completions SHELL`: a shell completion script on standard
//! output (a reader that stops early, like `head`, is not an error).

use super::Cli;
use anyhow::Context;
use std::io::Write;
use std::process::ExitCode;

pub(super) fn command(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pgbisect", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write the completion script")
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}
