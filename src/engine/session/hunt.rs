//! A hunt's session, from its resolved plan to its report: the work
//! dir's lock, the hunt's folder and plan key, the journal replayed, the
//! hosts taken, the release checked, the search, the why-runs, the report
//! and the exit code.

use super::Plan;
use super::resolved::HuntPlan;
use crate::engine::hunt::Hunt;
use crate::engine::hunt::budget::Budget;
use crate::engine::hunt::posterior::candidates_a_round;
use crate::engine::release_check;
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION};
use crate::files::write_file;
use crate::journal::{Event, Journal, Past};
use crate::lab::Lab;
use crate::lab::held::Held;
use crate::lab::open::build_settings;
use crate::lab::replay::ReplayLab;
use crate::machine::Machine;
use crate::machine::steady::{self, Watch};
use crate::model::{Commit, LabTotals};
use crate::placement::Placement;
use crate::progress::{Progress, ProgressEvent};
use crate::repo::Repo;
use crate::report::findings::{HuntOutcome, HuntReport, Provenance, ReleaseCheck};
use crate::workspace::{HuntDir, PlanKey};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A hunt's plan, and the time it has from this start.
struct HuntAsk<'a> {
    hunt: &'a HuntPlan,
    budget: Option<Budget>,
}

/// A hunt that reached a verdict, and where its result files are.
pub struct Finished {
    pub report: HuntReport,
    pub exit_code: u8,
    pub hunt: HuntDir,
}

/// The hunt's folder, opened and locked, with what its journal holds.
struct Opened {
    _lock: crate::workspace::Lock,
    key: PlanKey,
    hunt: HuntDir,
    past: Past,
    candidates: Vec<Commit>,
}

/// Runs the hunt `hunt` resolved, within `budget` from now; `work_dir`
/// is set once its work dir is known (for whoever is told how it ended).
pub fn run(
    hunt: &HuntPlan,
    budget: Option<Budget>,
    work_dir: &mut Option<PathBuf>,
) -> anyhow::Result<Finished> {
    let (plan, ask) = (&hunt.plan, &HuntAsk { hunt, budget });
    let candidates = Repo::open(&plan.repo_dir)?.candidates(&plan.good, &plan.bad)?;
    *work_dir = Some(plan.work.root().to_path_buf());
    let opened = open(plan, hunt.key()?, candidates)?;
    let mut progress = crate::progress::for_stderr();
    for record in &plan.resolution {
        progress.event(&ProgressEvent::Note(record.line()));
    }
    let interrupt =
        crate::proc::install_signal_handlers().context("cannot install the interrupt handler")?;
    let held = crate::lab::held::take(
        &hunt.hosts,
        &plan.profile,
        (plan.work.root(), &opened.hunt.name, "hunt"),
        progress.as_mut(),
    )?;
    let hosts = held.as_ref().map_or(0, |h| h.backend.hosts().len());
    // A rerun keeps the commits a round measures, whatever hosts it gets.
    let mut saved = hunt.clone();
    saved.plan.config.candidates = Some(candidates_a_round(hosts, plan.config.candidates) as u32);
    saved.save(&opened.hunt)?;
    let watch = Watch::default();
    super::outline::say(plan, opened.candidates.len(), ask.budget, progress.as_mut());
    let (release_check, release_cost) = check_release(
        (plan, &opened.hunt, ask.budget),
        held.as_ref(),
        progress.as_mut(),
        &interrupt,
        &watch,
    )?
    .unzip();
    let mut real_lab = crate::lab::open::open(
        &plan.lab_spec(),
        &watch,
        &opened.hunt.runs(),
        held.as_ref().map(|h| (h, "")),
    )?;
    let mut lab = ReplayLab::new(real_lab.as_mut(), &opened.past.events);
    let run = Running {
        plan,
        ask,
        held: held.as_ref(),
        watch: &watch,
        interrupt,
        release_builds: release_cost.map(|(totals, _)| totals).unwrap_or_default(),
    };
    let (report, machine) = run.search(&opened, &mut lab, progress.as_mut())?;
    drop(progress);
    finish(
        ask,
        (report, machine, &watch),
        (release_check, release_cost),
        opened,
    )
}

/// Opens the hunt's folder under the lock: the folder `key` names, the
/// profile kept for `judge`, and what its journal already holds.
fn open(plan: &Plan, key: PlanKey, candidates: Vec<Commit>) -> anyhow::Result<Opened> {
    let lock = plan.work.create_and_lock()?;
    let hunt = plan.work.hunt_for(&key)?;
    hunt.create()?;
    // `pgbisect judge` measures with the same profile later.
    let profile_json =
        serde_json::to_string_pretty(&plan.profile).context("cannot encode the profile")?;
    write_file(&hunt.profile(), &profile_json)?;
    let past = Journal::past(&hunt.journal(), &[&key.folder_name(), &hunt.name])?;
    Ok(Opened {
        _lock: lock,
        key,
        hunt,
        past,
        candidates,
    })
}

/// A hunt under way: its plan and what it holds.
struct Running<'a> {
    plan: &'a Plan,
    ask: &'a HuntAsk<'a>,
    held: Option<&'a Held>,
    watch: &'a Watch,
    interrupt: Arc<AtomicBool>,
    /// What the release check's builds cost: the search's first build is
    /// weighed against the budget with it.
    release_builds: LabTotals,
}

impl Running<'_> {
    /// The search over the candidates, then the why-runs of its culprits;
    /// the report and the machine it measured on.
    fn search(
        &self,
        opened: &Opened,
        lab: &mut ReplayLab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<(HuntReport, Machine)> {
        let (plan, hunt) = (self.plan, &opened.hunt);
        if lab.replayable_runs() > 0 {
            let repeated = match opened.past.repeated {
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
        let mut journal = self.journal(opened, progress)?;
        let mut machine = match self.held {
            // The hosts measured, not this machine.
            Some(h) => h.machine.clone(),
            None => Machine::collect(),
        };
        machine.placement = place_and_check(plan, self.watch, self.held.is_some(), progress);
        let mut commits = vec![plan.good.clone()];
        commits.extend(opened.candidates.iter().cloned());
        let (earlier, processes) = crate::journal::spent::spent_before(&opened.past.events);
        let mut hunt_run = Hunt::new(plan.config, commits, lab, progress)
            .with_known_builds(&earlier.lab)
            .with_known_builds(&self.release_builds)
            .with_earlier(earlier, processes)
            .with_journal(&mut journal)
            .with_interrupt(self.interrupt.clone());
        if let Some(budget) = self.ask.budget {
            hunt_run = hunt_run.with_budget(budget);
        }
        let mut report = hunt_run.run()?;
        if let Some(h) = self.held {
            let placed = h.placement.lock();
            machine.placement = placed.unwrap_or_else(|p| p.into_inner()).clone();
        }
        if let Some(why) = self.why_runs(&report, hunt, lab, progress)? {
            report.why = why;
        }
        Ok((report, machine))
    }

    /// The hunt's journal, opened to go on, its start written.
    fn journal(&self, opened: &Opened, progress: &mut dyn Progress) -> anyhow::Result<Journal> {
        let mut journal = Journal::open(&opened.hunt.journal())?;
        if journal.cut() > 0 {
            progress.event(&ProgressEvent::Note(format!(
                "the journal's last line was torn ({} bytes, written when pgbisect was stopped); \
                 it was cut off and that run will be made again",
                journal.cut()
            )));
        }
        journal.append(&Event::Start {
            good: self.plan.good.id.clone(),
            bad: self.plan.bad.id.clone(),
            plan: opened.key.folder_name(),
            at: crate::time::now_rfc3339(),
        })?;
        Ok(journal)
    }

    /// The why-runs of the culprits; `None` when there are none to make.
    fn why_runs(
        &self,
        report: &HuntReport,
        hunt: &HuntDir,
        lab: &mut ReplayLab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<Option<Vec<crate::core::why::Why>>> {
        let plan = self.plan;
        let (Some(why_runs), false) = (self.ask.hunt.why_runs, report.culprits.is_empty()) else {
            return Ok(None);
        };
        if plan.profile.is_custom() {
            progress.event(&ProgressEvent::Note(
                "no why-runs: a custom benchmark command has no instruments".into(),
            ));
            return Ok(None);
        }
        if self.held.is_some() {
            progress.event(&ProgressEvent::Note(
                "the why-runs (pgbench's instruments, wait events, a CPU profile) are made on \
                 this machine, not on the hosts"
                    .into(),
            ));
        }
        let clients = super::why::profile_clients(&plan.profile);
        let budget = self.ask.budget;
        let spec = plan.lab_spec();
        let mut why_lab = super::why::why_lab(&spec, (budget, report), &hunt.runs(), self.watch)?;
        let runs_in: &mut dyn Lab = match why_lab.lab.as_deref_mut() {
            Some(profiled) => profiled,
            None => lab,
        };
        super::why::after_hunt(
            (runs_in, why_lab.no_profile.as_deref(), &spec),
            report,
            hunt,
            (&clients, why_runs),
            budget,
            progress,
        )
        .map(Some)
    }
}

/// The report completed with the hunt's setup and the release check,
/// written into the hunt's folder; the exit code it ends with.
fn finish(
    ask: &HuntAsk,
    (report, machine, watch): (HuntReport, Machine, &Watch),
    (release_check, release_cost): (Option<ReleaseCheck>, Option<(LabTotals, f64)>),
    opened: Opened,
) -> anyhow::Result<Finished> {
    let mut machine = machine;
    machine.steadiness = watch.seen();
    let mut report = with_setup(report, ask.hunt, machine)?;
    report.release_check = release_check;
    report.made = Some(Provenance::now(ask.hunt.again.clone()));
    if let Some((lab, wall)) = release_cost {
        report.totals.add_work(&lab, wall);
    }
    write_outputs(&report, &opened.hunt)?;
    let exit_code = match report.outcome {
        HuntOutcome::CulpritFound => EXIT_CULPRIT_FOUND,
        HuntOutcome::NoRegression => EXIT_NO_REGRESSION,
        HuntOutcome::Inconclusive => EXIT_INCONCLUSIVE,
    };
    Ok(Finished {
        report,
        exit_code,
        hunt: opened.hunt,
    })
}

/// When the good end was moved from a release to where it left master's
/// line, measures the release against that point before the search (a lab
/// of its own, so its runs do not mix with the hunt's).
fn check_release(
    (plan, hunt, budget): (&Plan, &HuntDir, Option<Budget>),
    held: Option<&Held>,
    progress: &mut dyn Progress,
    interrupt: &Arc<AtomicBool>,
    watch: &Watch,
) -> anyhow::Result<Option<(ReleaseCheck, (LabTotals, f64))>> {
    let Some(sides) = &plan.release else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let mut lab = crate::lab::open::open(
        &plan.lab_spec(),
        watch,
        &hunt.release_check_runs(),
        held.map(|h| (h, "release-")),
    )?;
    let setup = release_check::Setup {
        decision: plan.config.decision,
        clients: plan.config.clients,
        progress,
        interrupt: Some(interrupt.clone()),
        budget: budget.map(release_check::share_of),
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
    let here = plan.setups.at(plan.config.clients).ok();
    let placement = (!plan.profile.is_custom() && !on_hosts)
        .then(|| here.and_then(|s| s.placement.clone().ok()))
        .flatten();
    if let Some(p) = &placement {
        progress.event(&ProgressEvent::Note(format!("placement {}", p.describe())));
    } else if on_hosts && !plan.profile.is_custom() {
        progress.event(&ProgressEvent::Note(
            "placement: decided on each host from its own CPUs (the report says where)".into(),
        ));
    }
    for finding in watch.check(plan.setups.cpus, true) {
        progress.event(&ProgressEvent::Note(steady::describe(&finding)));
    }
    placement
}

/// Adds what the hunt was set up with, for its reports.
fn with_setup(
    mut report: HuntReport,
    hunt: &HuntPlan,
    machine: Machine,
) -> anyhow::Result<HuntReport> {
    let plan = &hunt.plan;
    report.machine = Some(machine);
    report.resolution = plan.resolution.clone();
    report.profile_name = hunt
        .profile_name
        .as_deref()
        .unwrap_or("default")
        .to_string();
    report.profile_toml = hunt.profile_toml.clone();
    if !plan.profile.is_custom() {
        report.server_settings = plan.setups.at(plan.config.clients)?.settings.clone();
        report.configure_flags = crate::build::setup_args(&build_settings(&plan.profile)?);
        let tested: Vec<&str> = report.tested.iter().map(|t| t.commit.id.as_str()).collect();
        let compat = crate::build::compat_report_flags(&plan.work.lab_dirs(), &tested);
        report.configure_flags.extend(compat);
    }
    Ok(report)
}

/// The result, the reports and the chart in the hunt's folder.
fn write_outputs(report: &HuntReport, hunt: &HuntDir) -> anyhow::Result<()> {
    let body = crate::report::json(report)?;
    write_file(&hunt.result(), &body)?;
    write_file(&hunt.report_text(), &crate::report::text(report))?;
    write_file(&hunt.report_markdown(), &crate::report::markdown(report))?;
    write_file(&hunt.chart(), &crate::report::chart::hunt_chart(report))?;
    Ok(())
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
