//! `pgbisect resume`: continues a stopped hunt as it was started.
//!
//! An overnight hunt can be killed (a reboot, the OOM killer, Ctrl-C).
//! Every hunt saves the command it was given (`command.json`, with paths
//! made absolute) in its folder when it starts; `resume` reads it back and
//! runs the same hunt, which replays its journal, so nothing already built
//! or measured is done again. Rerunning the original command line does the
//! same; `resume` only spares the user from remembering it.

use super::args::HuntLocation;
use super::run_args::load;
use crate::workspace::COMMAND_FILE;
use clap::Args;
use std::process::ExitCode;

/// `pgbisect resume`.
#[derive(Debug, Args, Clone)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub at: HuntLocation,
}

pub(super) fn command(args: &ResumeArgs) -> anyhow::Result<ExitCode> {
    let hunt = args
        .at
        .work_dir()?
        .choose_hunt(args.at.hunt.as_deref(), COMMAND_FILE)?;
    let run = load(&hunt)?;
    let journaled = crate::journal::Journal::load(&hunt.journal())?
        .iter()
        .any(|e| matches!(e, crate::journal::Event::Run { .. }));
    let how = if journaled {
        "resuming the hunt"
    } else {
        "its journal holds no run yet: starting over the hunt"
    };
    eprintln!(
        "{how} in {}: --good {} --bad {}",
        hunt.dir().display(),
        run.target.good.as_deref().unwrap_or("?"),
        run.target.bad.as_deref().unwrap_or("?")
    );
    super::hunt::command(&run)
}
