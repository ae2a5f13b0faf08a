//! A person's hunt, from its resolved plan to its exit code: the work
//! dir's lock, the hunt's folder and plan key, the plan saved for
//! `resume`, the hosts taken, the release checked and the lab opened; the
//! hunt itself runs in [`super::runner`], as the watcher's do.

use super::Plan;
use super::resolved::HuntPlan;
use super::runner::{HuntRun, WhyFailure};
use crate::core::counts::Measure;
use crate::engine::choose_measure::{self, Chosen};
use crate::engine::hunt::budget::Budget;
use crate::engine::hunt::posterior::candidates_a_round;
use crate::engine::release_check;
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION, UsageError};
use crate::files::write_file;
use crate::lab::held::Held;
use crate::lab::reuse::Pool;
use crate::machine::steady::Watch;
use crate::model::LabTotals;
use crate::progress::{Progress, ProgressEvent};
use crate::repo::Repo;
use crate::report::findings::{HuntOutcome, HuntReport, ReleaseCheck};
use crate::workspace::{HuntDir, PlanKey};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A hunt that reached a verdict, and where its result files are.
pub struct Finished {
    pub report: HuntReport,
    pub exit_code: u8,
    pub hunt: HuntDir,
}

/// The hunt's folder, opened and locked.
struct Opened {
    _lock: crate::workspace::Lock,
    key: PlanKey,
    hunt: HuntDir,
}

/// Runs the hunt `hunt` resolved, within `budget` from now; `work_dir`
/// is set once its work dir is known (for whoever is told how it ended).
pub fn run(
    hunt: &HuntPlan,
    budget: Option<Budget>,
    work_dir: &mut Option<PathBuf>,
) -> anyhow::Result<Finished> {
    let given = &hunt.plan;
    let candidates = Repo::open(&given.repo_dir)?.candidates(&given.good, &given.bad)?;
    *work_dir = Some(given.work.root().to_path_buf());
    let lock = given.work.create_and_lock()?;
    let mut progress = crate::progress::for_stderr();
    for record in &given.resolution {
        progress.event(&ProgressEvent::Note(record.line()));
    }
    let interrupt =
        crate::proc::install_signal_handlers().context("cannot install the interrupt handler")?;
    let watch = Watch::default();
    let (hunt, chosen, reuse) = decide_measure(hunt, (progress.as_mut(), &interrupt), &watch)?;
    let plan = &hunt.plan;
    let opened = open(plan, hunt.key()?, lock)?;
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
    super::outline::say(plan, candidates.len(), budget, progress.as_mut());
    let release = check_release(
        (plan, &opened.hunt, budget),
        held.as_ref(),
        progress.as_mut(),
        &interrupt,
        &watch,
    )?;
    let mut lab = crate::lab::open::open(
        &plan.lab_spec(),
        &watch,
        &opened.hunt.runs(),
        held.as_ref().map(|h| (h, "")),
    )?;
    if let Some(note) = work_dir_in_repo(plan.work.root(), &plan.repo_dir) {
        progress.event(&ProgressEvent::Note(note));
    }
    let name = opened.key.folder_name();
    let run = HuntRun {
        hunt: &hunt,
        folder: &opened.hunt,
        names: &[&name, &opened.hunt.name],
        candidates: &candidates,
        budget,
        interrupt: Some(interrupt),
        held: held.as_ref(),
        watch: &watch,
        release,
        measure_chosen: chosen,
        reuse,
        why_failure: WhyFailure::Stops,
    };
    let report = super::runner::run(run, lab.as_mut(), progress.as_mut())?;
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

/// Opens the hunt's folder, the work dir locked by `lock`: the folder
/// `key` names, and the profile kept for `judge`.
fn open(plan: &Plan, key: PlanKey, lock: crate::workspace::Lock) -> anyhow::Result<Opened> {
    let hunt = plan.work.hunt_for(&key)?;
    hunt.create()?;
    // `pgbisect judge` measures with the same profile later.
    let profile_json =
        serde_json::to_string_pretty(&plan.profile).context("cannot encode the profile")?;
    write_file(&hunt.profile(), &profile_json)?;
    Ok(Opened {
        _lock: lock,
        key,
        hunt,
    })
}

/// The measure chosen, with what choosing it spent (the lab's totals,
/// wall seconds).
type ChosenAndSpent = (Chosen, (LabTotals, f64));

/// The hunt deciding on the measure chosen, the choice, and the runs it
/// made that the hunt takes as its first ([`choose_measure::reusable`]).
type Decided = (HuntPlan, Option<ChosenAndSpent>, Pool);

/// `--measure auto`: the hunt deciding on the measure its endpoints
/// chose ([`crate::engine::choose_measure`]), the choice and its runs on
/// that measure; the hunt as it is when its measure was given. The choice's runs are journaled
/// in the folder of the hunt on tps, so a resumed hunt replays them and
/// comes to the same folder.
fn decide_measure(
    hunt: &HuntPlan,
    (progress, interrupt): (&mut dyn Progress, &Arc<AtomicBool>),
    watch: &Watch,
) -> anyhow::Result<Decided> {
    let given = &hunt.plan;
    let Some(counter) = given.auto_counter.as_deref() else {
        return Ok((hunt.clone(), None, Pool::default()));
    };
    if crate::lab::held::elsewhere(&hunt.hosts, &given.profile.hosts) {
        return Err(UsageError(
            "--measure auto counts instructions on this machine, and a hunt on hosts measures \
             tps: give --measure tps to hunt on the hosts, or leave the hosts out"
                .into(),
        )
        .into());
    }
    let mut on_tps = hunt.clone();
    on_tps.plan = given.deciding_on(Measure::Tps, None);
    let folder = given.work.hunt_for(&on_tps.key()?)?;
    folder.create()?;
    let counting = given.deciding_on(Measure::Instructions, Some(counter));
    let mut lab = crate::lab::open::open_timed_and_counted(
        &counting.lab_spec(),
        watch,
        &folder.measure_choice_runs(),
    )?;
    let started = std::time::Instant::now();
    let (timed, counted) = folder.measure_choice_journals();
    let setup = choose_measure::Setup {
        hunt: given.config,
        progress,
        interrupt: Some(interrupt.clone()),
    };
    let chosen = choose_measure::choose(
        lab.as_mut(),
        (&timed, &counted),
        (&given.good, &given.bad),
        setup,
    )?;
    let mut decided = hunt.clone();
    decided.plan = given.deciding_on(chosen.measure, Some(counter));
    let spent = (lab.totals(), started.elapsed().as_secs_f64());
    let reuse = choose_measure::reusable(&chosen, (&timed, &counted), (&given.good, &given.bad))?;
    Ok((decided, Some((chosen, spent)), reuse))
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
