//! A hunt: `pgbisect --good A --bad B` (or `pgbisect run`).
//!
//! Resolves the endpoints and the profile into a plan, finds (or resumes)
//! the hunt's folder, runs the hunt over the lab with its journal, writes
//! the reports, and tells whoever asked how it ended, also on failure.

use super::hosts::Held;
use super::lab::{build_settings, make_lab_on};
use super::output::{check_writable_file, write_file, write_output_file};
use super::plan::{Plan, resolve_plan};
use super::run_args::{RunArgs, save};
use crate::engine::hunt::Hunt;
use crate::engine::hunt::budget::{self, Budget};
use crate::engine::hunt::posterior::candidates_a_round;
use crate::engine::release_check;
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION, UsageError};
use crate::journal::{Event, Journal};
use crate::lab::replay::ReplayLab;
use crate::machine::Machine;
use crate::machine::steady::{self, Watch};
use crate::model::LabTotals;
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::placement::{Placement, Policy};
use crate::progress::{Progress, ProgressEvent};
use crate::repo::Repo;
use crate::report::findings::{HuntOutcome, HuntReport, Provenance, ReleaseCheck};
use crate::report::{self, Format};
use crate::workspace::{HuntDir, PlanFlags, PlanKey};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

/// A hunt that reached a verdict, and where its result files are.
struct Finished {
    report: HuntReport,
    exit_code: u8,
    hunt: HuntDir,
}

/// A hunt, with notifications at its end, whether it reached a verdict or
/// failed.
pub(super) fn command(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if args.format.0 == Format::Email {
        return Err(UsageError(
            "a hunt prints text, markdown or json; for an email, run \
             `pgbisect report --format email --from ADDR --to ADDR` after it"
                .into(),
        )
        .into());
    }
    if let Some(path) = &args.json {
        check_writable_file(path, "--json")?;
    }
    let budget = budget(args)?;
    let notifier = Notifier::from_flags(
        args.notify_cmd.as_deref(),
        &args.mail_to,
        args.smtp.as_deref(),
        args.mail_from.as_deref(),
    )
    .map_err(UsageError)?;
    let mut work_dir = None;
    let result = run_hunt(args, budget, &mut work_dir);
    match &result {
        Ok(done) => notifier.deliver_and_warn(&HuntEnd {
            ending: Ending::Finished(&done.report),
            exit_code: done.exit_code,
            result: Some(done.hunt.result()),
            report: Some(done.hunt.report_text()),
            work_dir,
        }),
        Err(err) => {
            write_failure(args.json.as_deref(), err);
            notifier.deliver_and_warn(&HuntEnd {
                ending: Ending::Failed(&format!("{err:#}")),
                exit_code: super::exit_code_for(err),
                result: None,
                report: None,
                work_dir,
            })
        }
    }
    result.map(|done| ExitCode::from(done.exit_code))
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

fn run_hunt(
    args: &RunArgs,
    budget: Option<Budget>,
    work_dir: &mut Option<PathBuf>,
) -> anyhow::Result<Finished> {
    let plan = resolve_plan(&args.target, args.first_only)?;
    let candidates = Repo::open(&plan.repo_dir)?.candidates(&plan.good, &plan.bad)?;
    *work_dir = Some(plan.work.root().to_path_buf());
    let _lock = plan.work.create_and_lock()?;
    let flags = PlanFlags {
        threshold: args.target.threshold,
        max_runs: args.target.max_runs,
        first_only: args.first_only,
    };
    let key = PlanKey::new((&plan.good, &plan.bad), &plan.config, &plan.profile, flags)?;
    let hunt = plan.work.hunt_for(&key)?;
    hunt.create()?;
    // `pgbisect judge` measures with the same profile later.
    let profile_json =
        serde_json::to_string_pretty(&plan.profile).context("cannot encode the profile")?;
    write_file(&hunt.profile(), &profile_json)?;
    let past = Journal::past(&hunt.journal(), &[&key.folder_name(), &hunt.name])?;
    let mut progress = crate::progress::for_stderr();
    for record in &plan.resolution {
        progress.event(&ProgressEvent::Note(record.line()));
    }
    let interrupt =
        crate::proc::install_signal_handlers().context("cannot install the interrupt handler")?;
    let held = super::hosts::take(
        &args.on,
        &plan.profile,
        (&plan.work, &hunt.name, "hunt"),
        progress.as_mut(),
    )?;
    // Saved with what a rerun must keep: the search, and over hosts the
    // commits a round measures (the runs made depend on both).
    let mut saved = args.clone();
    saved.target.search = Some(plan.config.search);
    let hosts = held.as_ref().map_or(0, |h| h.backend.hosts().len());
    saved.target.candidates = Some(candidates_a_round(hosts, plan.config.candidates) as u32);
    save(&hunt, &saved, &plan.repo_dir, plan.work.root())?;
    let watch = Watch::default();
    let (release_check, release_cost) = check_release(
        (&plan, args, &hunt),
        held.as_ref(),
        progress.as_mut(),
        &interrupt,
        &watch,
    )?
    .unzip();
    let mut real_lab = make_lab_on(
        &plan,
        (&args.target.lab, &watch),
        &hunt.runs(),
        held.as_ref().map(|h| (h, "")),
    )?;
    let mut lab = ReplayLab::new(real_lab.as_mut(), &past.events);
    if lab.replayable_runs() > 0 {
        let repeated = match past.repeated {
            0 => String::new(),
            n => format!(" ({n} repeated journal lines skipped: each run counts once)"),
        };
        progress.event(&ProgressEvent::Note(format!(
            "resuming the hunt in {}: {} runs from its journal are reused{repeated}",
            hunt.dir().display(),
            lab.replayable_runs()
        )));
    }
    if let Some(note) = work_dir_in_repo(plan.work.root(), &plan.repo_dir) {
        progress.event(&ProgressEvent::Note(note));
    }
    let mut journal = Journal::open(&hunt.journal())?;
    if journal.cut() > 0 {
        progress.event(&ProgressEvent::Note(format!(
            "the journal's last line was torn ({} bytes, written when pgbisect was stopped); \
             it was cut off and that run will be made again",
            journal.cut()
        )));
    }
    journal.append(&Event::Start {
        good: plan.good.id.clone(),
        bad: plan.bad.id.clone(),
        plan: key.folder_name(),
        at: crate::time::now_rfc3339(),
    })?;
    let mut machine = match &held {
        // The hosts measured, not this machine.
        Some(h) => h.machine.clone(),
        None => Machine::collect(),
    };
    machine.placement = place_and_check(&plan, &watch, held.is_some(), progress.as_mut());
    let mut commits = vec![plan.good.clone()];
    commits.extend(candidates);
    let (earlier, processes) = crate::journal::spent::spent_before(&past.events);
    let mut hunt_run = Hunt::new(plan.config, commits, &mut lab, progress.as_mut())
        .with_earlier(earlier, processes)
        .with_journal(&mut journal)
        .with_interrupt(interrupt);
    if let Some(budget) = budget {
        hunt_run = hunt_run.with_budget(budget);
    }
    let mut report = hunt_run.run()?;
    if let Some(h) = &held {
        let placed = h.placement.lock();
        machine.placement = placed.unwrap_or_else(|p| p.into_inner()).clone();
    }
    if plan.profile.is_custom() && !args.no_why && !report.culprits.is_empty() {
        progress.event(&ProgressEvent::Note(
            "no why-runs: a custom benchmark command has no instruments".into(),
        ));
    } else if !args.no_why && !report.culprits.is_empty() {
        if held.is_some() {
            progress.event(&ProgressEvent::Note(
                "the why-runs (pgbench's instruments, wait events, a CPU profile) are made on \
                 this machine, not on the hosts"
                    .into(),
            ));
        }
        let clients = plan
            .profile
            .benchmark
            .clients
            .as_ref()
            .map(|c| c.to_vec())
            .unwrap_or_default();
        let mut why_lab = match super::why::room_for_builds(budget, &report) {
            Ok(()) => super::lab::why_lab(&plan, &args.target.lab, &hunt.runs(), &watch)?,
            Err(no_room) => super::lab::WhyLab {
                lab: None,
                no_profile: Some(no_room),
            },
        };
        let runs_in: &mut dyn crate::lab::Lab = match why_lab.lab.as_deref_mut() {
            Some(profiled) => profiled,
            None => &mut lab,
        };
        report.why = super::why::after_hunt(
            (runs_in, why_lab.no_profile.as_deref()),
            &report,
            &hunt,
            (&clients, args.why.why_runs),
            budget,
            progress.as_mut(),
        )?;
    }
    drop(progress);
    machine.steadiness = watch.seen();
    let mut report = with_setup(report, &plan, args, machine)?;
    report.release_check = release_check;
    if let Some((lab, wall)) = release_cost {
        report.totals.add_work(&lab, wall);
    }
    write_outputs(&report, &hunt, args.json.as_deref())?;
    print!("{}", report::render(&report, args.format.0, None)?);
    let exit_code = match report.outcome {
        HuntOutcome::CulpritFound => EXIT_CULPRIT_FOUND,
        HuntOutcome::NoRegression => EXIT_NO_REGRESSION,
        HuntOutcome::Inconclusive => EXIT_INCONCLUSIVE,
    };
    Ok(Finished {
        report,
        exit_code,
        hunt,
    })
}

/// When the good end was moved from a release to where it left master's
/// line, measures the release against that point before the search (a lab
/// of its own, so its runs do not mix with the hunt's).
fn check_release(
    (plan, args, hunt): (&Plan, &RunArgs, &HuntDir),
    held: Option<&Held>,
    progress: &mut dyn Progress,
    interrupt: &Arc<AtomicBool>,
    watch: &Watch,
) -> anyhow::Result<Option<(ReleaseCheck, (LabTotals, f64))>> {
    let Some(sides) = &plan.release else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let mut lab = make_lab_on(
        plan,
        (&args.target.lab, watch),
        &hunt.release_check_runs(),
        held.map(|h| (h, "release-")),
    )?;
    let setup = release_check::Setup {
        decision: plan.config.decision,
        clients: plan.config.clients,
        progress,
        interrupt: Some(interrupt.clone()),
    };
    let check = release_check::run_journaled(
        lab.as_mut(),
        &hunt.release_check_journal(),
        sides.clone(),
        setup,
    )?;
    // This start's cost of the check, for the report's totals.
    Ok(Some((
        check,
        (lab.totals(), started.elapsed().as_secs_f64()),
    )))
}

/// Says where the server and pgbench run and what would make the runs
/// steadier; the placement, for the report (none for custom commands).
fn place_and_check(
    plan: &Plan,
    watch: &Watch,
    on_hosts: bool,
    progress: &mut dyn Progress,
) -> Option<Placement> {
    let policy = Policy::current(&plan.profile.placement);
    let placement = (!plan.profile.is_custom() && !on_hosts)
        .then(|| policy.decide(plan.config.clients).ok())
        .flatten();
    if let Some(p) = &placement {
        progress.event(&ProgressEvent::Note(format!("placement {}", p.describe())));
    } else if on_hosts && !plan.profile.is_custom() {
        progress.event(&ProgressEvent::Note(
            "placement: decided on each host from its own CPUs (the report says where)".into(),
        ));
    }
    for finding in watch.check(policy.topology.cpus.len(), true) {
        progress.event(&ProgressEvent::Note(steady::describe(&finding)));
    }
    placement
}

/// Adds what the hunt was set up with, for its reports.
fn with_setup(
    mut report: HuntReport,
    plan: &Plan,
    args: &RunArgs,
    machine: Machine,
) -> anyhow::Result<HuntReport> {
    let profile_name = args.target.lab.profile.as_deref();
    report.machine = Some(machine);
    report.resolution = plan.resolution.clone();
    report.profile_name = profile_name.unwrap_or("default").to_string();
    report.profile_toml = profile_name.map(profile_text).unwrap_or_default();
    let short = |c: &crate::model::Commit| c.id.chars().take(12).collect::<String>();
    report.made = Some(Provenance::now(
        args.again(&short(&report.good), &short(&report.bad)),
    ));
    if !plan.profile.is_custom() {
        let profile_settings = plan.profile.server.settings_strings();
        report.server_settings =
            crate::server::for_workload(&profile_settings, plan.config.clients).0;
        report.configure_flags = crate::build::setup_args(&build_settings(&plan.profile)?);
        let tested: Vec<&str> = report.tested.iter().map(|t| t.commit.id.as_str()).collect();
        let compat = crate::build::compat_report_flags(&plan.work.lab_dirs(), &tested);
        report.configure_flags.extend(compat);
    }
    Ok(report)
}

/// A profile's TOML as [`Profile::load`] read it: the file, else the
/// bundled text.
fn profile_text(name_or_path: &str) -> String {
    let path = Path::new(name_or_path);
    if path.exists() {
        return std::fs::read_to_string(path).unwrap_or_default();
    }
    crate::profile::BUNDLED
        .iter()
        .find(|(n, _)| *n == name_or_path)
        .map_or_else(String::new, |(_, text)| text.to_string())
}

/// The result, the reports and the chart in the hunt's folder, and the
/// result where `--json` asks.
fn write_outputs(report: &HuntReport, hunt: &HuntDir, json: Option<&Path>) -> anyhow::Result<()> {
    let body = report::json(report)?;
    write_file(&hunt.result(), &body)?;
    write_file(&hunt.report_text(), &report::text(report))?;
    write_file(&hunt.report_markdown(), &report::markdown(report))?;
    write_file(&hunt.chart(), &crate::report::chart::hunt_chart(report))?;
    if let Some(path) = json {
        write_output_file(path, &body)?;
    }
    Ok(())
}

/// The hunt's time budget from `--time-budget` or `--deadline`.
fn budget(args: &RunArgs) -> anyhow::Result<Option<Budget>> {
    let now = SystemTime::now();
    let end = match (&args.time_budget, &args.deadline) {
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

/// A word when the work dir is inside the repository's checkout, where git
/// lists it as untracked.
fn work_dir_in_repo(work: &Path, repo: &Path) -> Option<String> {
    let (work, repo) = (work.canonicalize().ok()?, repo.canonicalize().ok()?);
    work.starts_with(&repo).then(|| {
        format!(
            "the work dir {} is inside the repository {}: git lists it as untracked; \
             add it to .git/info/exclude, or pass a --work-dir outside the repository",
            work.display(),
            repo.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_dir_inside_the_repository_gets_a_word() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("w");
        std::fs::create_dir(&inside).unwrap();
        let note = work_dir_in_repo(&inside, tmp.path()).unwrap();
        assert!(note.contains(".git/info/exclude"), "{note}");
        let other = tempfile::tempdir().unwrap();
        assert_eq!(work_dir_in_repo(other.path(), tmp.path()), None);
    }
}
