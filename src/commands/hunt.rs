//! A hunt: `pgbisect --good A --bad B` (or `pgbisect run`).
//!
//! Resolves the endpoints and the profile into a plan, finds (or resumes)
//! the hunt's folder, runs the hunt over the lab with its journal, writes
//! the reports, and tells whoever asked how it ended, also on failure.

use super::output::write_output_file;
use super::run_args::RunArgs;
use crate::engine::hunt::budget::{self, Budget};
use crate::engine::session::hunt::Finished;
use crate::engine::session::resolved::{HuntPlan, Outputs, TimeLimit};
use crate::error::UsageError;
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::report::{self, Format};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

/// A hunt, with notifications at its end, whether it reached a verdict or
/// failed (also when its flags do not resolve).
pub(super) fn command(args: &RunArgs) -> anyhow::Result<ExitCode> {
    check_outputs(args)?;
    let outputs = args.outputs();
    let budget = budget(&args.time())?;
    let notifier = notifier(&outputs)?;
    let hunt = args
        .resolve()
        .inspect_err(|err| tell_failure(&notifier, outputs.json.as_deref(), err, None))?;
    start(&hunt, budget, &notifier)
}

/// A saved hunt, run again as it was resolved.
pub(super) fn resume(hunt: &HuntPlan) -> anyhow::Result<ExitCode> {
    let budget = budget(&hunt.time)?;
    let notifier = notifier(&hunt.outputs)?;
    start(hunt, budget, &notifier)
}

/// Whom the hunt tells how it ended.
fn notifier(outputs: &Outputs) -> anyhow::Result<Notifier> {
    let notifier = Notifier::from_flags(
        outputs.notify_cmd.as_deref(),
        &outputs.mail_to,
        outputs.smtp.as_deref(),
        outputs.mail_from.as_deref(),
    )
    .map_err(UsageError)?;
    Ok(notifier)
}

/// The checks made before the first build, then the hunt, and whoever
/// asked told how it ended.
fn start(hunt: &HuntPlan, budget: Option<Budget>, notifier: &Notifier) -> anyhow::Result<ExitCode> {
    let json = hunt.outputs.json.as_deref();
    super::preflight::check_json(&hunt.outputs)?;
    super::preflight::check(hunt).inspect_err(|err| tell_failure(notifier, json, err, None))?;
    let mut work_dir = None;
    let result = run_hunt(hunt, budget, &mut work_dir);
    tell(notifier, &result, json, work_dir);
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
        Err(err) => tell_failure(notifier, json, err, work_dir),
    }
}

/// Tells whoever asked that the hunt failed, and why.
fn tell_failure(
    notifier: &Notifier,
    json: Option<&Path>,
    err: &anyhow::Error,
    work_dir: Option<PathBuf>,
) {
    write_failure(json, err);
    notifier.deliver_and_warn(&HuntEnd {
        ending: Ending::Failed(&format!("{err:#}")),
        exit_code: super::exit_code_for(err),
        result: None,
        report: None,
        work_dir,
    })
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

/// The hunt run; its result written where `--json` asks and printed.
fn run_hunt(
    hunt: &HuntPlan,
    budget: Option<Budget>,
    work_dir: &mut Option<PathBuf>,
) -> anyhow::Result<Finished> {
    let done = crate::engine::session::hunt::run(hunt, budget, work_dir)?;
    if let Some(path) = &hunt.outputs.json {
        write_output_file(path, &report::json(&done.report)?)?;
    }
    print!(
        "{}",
        report::render(&done.report, hunt.outputs.format, None)?
    );
    Ok(done)
}

/// The hunt's time budget from `--time-budget` or `--deadline`, counted
/// from now (the watcher reads them so too).
pub(super) fn budget(time: &TimeLimit) -> anyhow::Result<Option<Budget>> {
    let now = SystemTime::now();
    let end = match (&time.budget, &time.deadline) {
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
