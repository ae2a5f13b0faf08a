//! A hunt: `pgbisect --good A --bad B` (or `pgbisect run`).
//!
//! Resolves the endpoints and the profile into a plan, finds (or resumes)
//! the hunt's folder, runs the hunt over the lab with its journal, writes
//! the reports, and tells whoever asked how it ended, also on failure.

use super::output::write_output_file;
use super::plan::resolve_plan;
use super::run_args::{RunArgs, save};
use crate::engine::hunt::budget::{self, Budget};
use crate::engine::session::hunt::{Finished, HuntAsk};
use crate::error::UsageError;
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::report::{self, Format};
use crate::workspace::{HuntDir, PlanFlags};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

/// A hunt, with notifications at its end, whether it reached a verdict or
/// failed.
pub(super) fn command(args: &RunArgs) -> anyhow::Result<ExitCode> {
    check_outputs(args)?;
    let budget = budget(args)?;
    let notifier = Notifier::from_flags(
        args.notify_cmd.as_deref(),
        &args.mail_to,
        args.smtp.as_deref(),
        args.mail_from.as_deref(),
    )
    .map_err(UsageError)?;
    super::preflight::check(args)?;
    let mut work_dir = None;
    let result = run_hunt(args, budget, &mut work_dir);
    tell(&notifier, &result, args.json.as_deref(), work_dir);
    result.map(|done| ExitCode::from(done.exit_code))
}

/// What a hunt prints and writes, checked before anything runs.
fn check_outputs(args: &RunArgs) -> anyhow::Result<()> {
    if args.format.0 == Format::Email {
        return Err(UsageError(
            "a hunt prints text, markdown or json; for an email, run \
             `pgbisect report --format email --from ADDR --to ADDR` after it"
                .into(),
        )
        .into());
    }
    Ok(())
}

/// Tells whoever asked how the hunt ended, also on failure.
fn tell(
    notifier: &Notifier,
    result: &anyhow::Result<Finished>,
    json: Option<&Path>,
    work_dir: Option<PathBuf>,
) {
    match result {
        Ok(done) => notifier.deliver_and_warn(&HuntEnd {
            ending: Ending::Finished(&done.report),
            exit_code: done.exit_code,
            result: Some(done.hunt.result()),
            report: Some(done.hunt.report_text()),
            work_dir,
        }),
        Err(err) => {
            write_failure(json, err);
            notifier.deliver_and_warn(&HuntEnd {
                ending: Ending::Failed(&format!("{err:#}")),
                exit_code: super::exit_code_for(err),
                result: None,
                report: None,
                work_dir,
            })
        }
    }
}

/// A hunt that failed still leaves its `--json`, so that a cron wrapper
/// reading it finds why: `{"outcome": "failed", "reason": ..., "exit_code": N}`.
/// A path that cannot be written is said on stderr, beside the error itself.
fn write_failure(json: Option<&Path>, err: &anyhow::Error) {
    let Some(path) = json else { return };
    let body = serde_json::json!({
        "outcome": "failed",
        "reason": format!("{err:#}"),
        "exit_code": super::exit_code_for(err),
    });
    if let Err(e) = write_output_file(path, &format!("{body:#}\n")) {
        eprintln!("pgbisect: warning: {e:#}");
    }
}

/// The hunt the flags resolve to, run; its result written where
/// `--json` asks and printed.
fn run_hunt(
    args: &RunArgs,
    budget: Option<Budget>,
    work_dir: &mut Option<PathBuf>,
) -> anyhow::Result<Finished> {
    let plan = resolve_plan(&args.target, args.first_only)?;
    let save_command = |hunt: &HuntDir, search, candidates| {
        let mut saved = args.clone();
        saved.target.search = Some(search);
        saved.target.candidates = Some(candidates);
        save(hunt, &saved, &plan.repo_dir, plan.work.root())
    };
    let ask = HuntAsk {
        flags: PlanFlags {
            threshold: args.target.threshold,
            max_runs: args.target.max_runs,
            first_only: args.first_only,
        },
        hosts: args.on.wanted(),
        budget,
        why_runs: (!args.no_why).then_some(args.why.why_runs),
        profile_name: args.target.lab.profile.clone(),
        save: &save_command,
        again: args.again(&short(&plan.good), &short(&plan.bad)),
    };
    let done = crate::engine::session::hunt::run(&plan, &ask, work_dir)?;
    if let Some(path) = &args.json {
        write_output_file(path, &report::json(&done.report)?)?;
    }
    print!("{}", report::render(&done.report, args.format.0, None)?);
    Ok(done)
}

/// A commit as the command to hunt again names it.
fn short(commit: &crate::model::Commit) -> String {
    commit.id.chars().take(12).collect()
}

/// The hunt's time budget from `--time-budget` or `--deadline`.
fn budget(args: &RunArgs) -> anyhow::Result<Option<Budget>> {
    budget_of(&args.time_budget, &args.deadline)
}

/// A time budget from `--time-budget` or `--deadline`, as a hunt reads
/// them (the watcher too).
pub(super) fn budget_of(
    time_budget: &Option<String>,
    deadline: &Option<String>,
) -> anyhow::Result<Option<Budget>> {
    let now = SystemTime::now();
    let end = match (time_budget, deadline) {
        (Some(text), _) => {
            let d = budget::parse_duration(text)
                .map_err(|e| UsageError(format!("--time-budget: {e}")))?;
            now + d
        }
        (None, Some(text)) => crate::time::next_local(text, now)
            .map_err(|e| UsageError(format!("--deadline: {e}")))?,
        (None, None) => return Ok(None),
    };
    Ok(Some(Budget::until(end)))
}
