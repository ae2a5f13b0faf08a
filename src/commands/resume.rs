//! `pgbisect resume`: continues a stopped hunt as it was started.
//!
//! An overnight hunt can be killed (a reboot, the OOM killer, Ctrl-C).
//! Every hunt saves its resolved plan (`command.json`, with paths made
//! absolute) in its folder when it starts; `resume` reads it back and
//! runs that plan again, which replays its journal, so nothing already
//! built or measured is done again. A folder of an earlier release holds
//! the flags it was given instead: those are resolved again, as then.
//! Rerunning the original command line does the same; `resume` only
//! spares the user from remembering it.

use super::args::HuntLocation;
use super::run_args::{Saved, load};
use crate::engine::session::resolved::TimeLimit;
use crate::workspace::COMMAND_FILE;
use clap::Args;
use std::process::ExitCode;

/// `pgbisect resume`.
#[derive(Debug, Args, Clone)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub at: HuntLocation,
    /// A new time budget from now (e.g. 8h, 90m), in place of the one
    /// the hunt was started with.
    #[arg(long, value_name = "DURATION", conflicts_with = "deadline")]
    pub time_budget: Option<String>,
    /// A new local time of day to end by (HH:MM), in place of the hunt's
    /// own budget.
    #[arg(long, value_name = "HH:MM")]
    pub deadline: Option<String>,
}

pub(super) fn command(args: &ResumeArgs) -> anyhow::Result<ExitCode> {
    let hunt = args
        .at
        .work_dir()?
        .choose_hunt(args.at.hunt.as_deref(), COMMAND_FILE)?;
    let saved = load(&hunt)?;
    let journaled = crate::journal::Journal::load(&hunt.journal())?
        .iter()
        .any(|e| matches!(e, crate::journal::Event::Run { .. }));
    let how = if journaled {
        "resuming the hunt"
    } else {
        "its journal holds no run yet: starting over the hunt"
    };
    let (good, bad) = saved.endpoints();
    eprintln!(
        "{how} in {}: --good {good} --bad {bad}",
        hunt.dir().display()
    );
    let new_time = (args.time_budget.is_some() || args.deadline.is_some()).then(|| TimeLimit {
        budget: args.time_budget.clone(),
        deadline: args.deadline.clone(),
    });
    match saved {
        Saved::Plan(mut plan) => {
            plan.time = new_time.unwrap_or(plan.time);
            super::hunt::resume(&plan)
        }
        Saved::Flags(mut run) => {
            if let Some(time) = new_time {
                (run.time_budget, run.deadline) = (time.budget, time.deadline);
            }
            super::hunt::command(&run)
        }
    }
}
