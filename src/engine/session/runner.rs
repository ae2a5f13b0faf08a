//! One hunt run from its resolved plan, whoever asked for it: a person's
//! `pgbisect --good .. --bad ..` ([`super::hunt`]) and the watcher hunting
//! a confirmed change ([`super::watch_hunts`]) both come here, so that
//! their reports are made the same way and hold the same things.
//!
//! A start of a hunt reads its folder's journal back and replays it
//! through the lab, writes its start, counts what earlier starts spent,
//! runs the search, then the why-runs of its culprits, and completes the
//! report in one place: the machine and where runs ran, the profile, the
//! server settings, the configure flags, the release check and the command
//! that hunts the range again ([`super::rerun`]). The report is written
//! into the hunt's folder. What is the caller's own stays with it: the
//! person's lock, plan key, hosts and release check; the watcher's change,
//! its folder and telling the store and the mail.

use super::Plan;
use super::resolved::{HuntPlan, as_named};
use crate::core::counts::{FunctionCount, SHOWN_FUNCTIONS, function_changes};
use crate::core::why::Why;
use crate::engine::hunt::budget::Budget;
use crate::engine::hunt::{Hunt, ran_out_of_time};
use crate::files::write_file;
use crate::journal::{Event, Journal, Past};
use crate::lab::Lab;
use crate::lab::held::Held;
use crate::lab::open::build_settings;
use crate::lab::replay::ReplayLab;
use crate::lab::reuse::{Pool, Reusing};
use crate::machine::Machine;
use crate::machine::steady::{self, Watch};
use crate::model::{Commit, LabTotals, RunOutcome};
use crate::placement::Placement;
use crate::progress::{Progress, ProgressEvent};
use crate::report::findings::{HuntReport, MeasureChosen, Provenance, ReleaseCheck};
use crate::workspace::HuntDir;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// One start of a hunt: its plan, and what this start has beside it.
pub struct HuntRun<'a> {
    pub hunt: &'a HuntPlan,
    /// The hunt's folder: its journal, its runs and its reports.
    pub folder: &'a HuntDir,
    /// The name the journal's start line carries, first, then any other
    /// names lines of this hunt carry (a folder renamed by a release).
    pub names: &'a [&'a str],
    /// The commits after the good end up to the bad one, oldest first.
    pub candidates: &'a [Commit],
    /// The time this start has.
    pub budget: Option<Budget>,
    /// Set by Ctrl-C or SIGTERM: the hunt stops between two runs.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// The hosts the runs are made on; `None`: this machine.
    pub held: Option<&'a Held>,
    /// What made the runs unsteady, seen while they were made.
    pub watch: &'a Watch,
    /// The release check made before the search, with what this start
    /// spent on it (the lab's totals, wall seconds).
    pub release: Option<(ReleaseCheck, (LabTotals, f64))>,
    /// The measure chosen at the endpoints (`--measure auto`), with what
    /// this start spent choosing it (the lab's totals, wall seconds).
    pub measure_chosen: Option<(MeasureChosen, (LabTotals, f64))>,
    /// Runs of the endpoints made before the search on the measure the
    /// hunt decides on (choosing it): the hunt's first runs of them.
    pub reuse: Pool,
    pub why_failure: WhyFailure,
}

/// What a failure of the why-runs does to the hunt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhyFailure {
    /// It ends the hunt with the error; the same command goes on from the
    /// journal and makes them again.
    Stops,
    /// It is noted in the report and the finding stands: a hunt the
    /// watcher took up again would fail the same way every night.
    Noted,
}

/// Runs the hunt `run` asks for in `lab`; its report, complete, written
/// into its folder.
pub fn run(
    run: HuntRun,
    lab: &mut dyn Lab,
    progress: &mut dyn Progress,
) -> anyhow::Result<HuntReport> {
    let plan = &run.hunt.plan;
    let past = Journal::past(&run.folder.journal(), run.names)?;
    let pending = run.reuse.clone().without_journaled(&past.events);
    if !pending.is_empty() {
        progress.event(&ProgressEvent::Note(format!(
            "the endpoints' {} runs made choosing the measure are the hunt's first runs of them",
            pending.len()
        )));
    }
    // Only a hunt handed runs is wrapped: every other lab stays as it is.
    let mut reusing;
    let lab: &mut dyn Lab = if pending.is_empty() {
        lab
    } else {
        reusing = Reusing::new(lab, pending);
        &mut reusing
    };
    let mut lab = ReplayLab::new(lab, &past.events);
    say_resumed(&lab, &past, run.folder, progress);
    let mut journal = journal(&run, progress)?;
    let mut machine = match run.held {
        // The hosts measured, not this machine.
        Some(h) => h.machine.clone(),
        None => Machine::collect(),
    };
    machine.placement = place_and_check(plan, run.watch, run.held.is_some(), progress);
    let mut commits = vec![plan.good.clone()];
    commits.extend(run.candidates.iter().cloned());
    let (earlier, processes) = crate::journal::spent::spent_before(&past.events);
    let release_builds = run.release.as_ref().map(|(_, (lab, _))| *lab);
    let mut hunt = Hunt::new(plan.config, commits, &mut lab, progress)
        .with_known_builds(&earlier.lab)
        .with_known_builds(&release_builds.unwrap_or_default())
        .with_earlier(earlier, processes)
        .with_journal(&mut journal);
    if let Some(flag) = &run.interrupt {
        hunt = hunt.with_interrupt(flag.clone());
    }
    if let Some(budget) = run.budget {
        hunt = hunt.with_budget(budget);
    }
    let mut report = hunt.run()?;
    count_functions(&mut report, &run.folder.journal())?;
    if let Some(h) = run.held {
        let placed = h.placement.lock();
        machine.placement = placed.unwrap_or_else(|p| p.into_inner()).clone();
    }
    match (why_runs(&run, &report, &mut lab, progress), run.why_failure) {
        (Ok(why), _) => report.why = why,
        (Err(e), WhyFailure::Stops) => return Err(e),
        (Err(e), WhyFailure::Noted) => {
            let said = format!("the why-runs failed: {e:#}");
            progress.event(&ProgressEvent::Note(said.clone()));
            report.notes.push(said);
        }
    }
    machine.steadiness = run.watch.seen();
    complete(&mut report, run.hunt, machine, run.release)?;
    if let Some((mut chosen, (lab, wall))) = run.measure_chosen {
        chosen.reused = run.reuse.taken(&Journal::load(&run.folder.journal())?);
        report.measure_chosen = Some(chosen);
        report.totals.add_work(&lab, wall);
    }
    write_outputs(&report, run.folder)?;
    Ok(report)
}

/// In a hunt on counts, each culprit's functions whose instructions a
/// transaction moved most from its parent's, from the functions every
/// counted run of the two kept (the journal holds them all, this start's
/// and earlier ones').
fn count_functions(report: &mut HuntReport, journal: &Path) -> anyhow::Result<()> {
    if report.measure.is_tps() || report.culprits.is_empty() {
        return Ok(());
    }
    let events = Journal::load(journal)?;
    let functions_of = |commit: &str| -> Vec<Vec<FunctionCount>> {
        events
            .iter()
            .filter_map(|event| match event {
                Event::Run {
                    commit: c,
                    outcome: RunOutcome::Measured(m),
                    ..
                } if c == commit => m.instructions.as_ref().map(|i| i.functions.clone()),
                _ => None,
            })
            .filter(|functions| !functions.is_empty())
            .collect()
    };
    for culprit in &mut report.culprits {
        let (parent, own) = (functions_of(&culprit.parent), functions_of(&culprit.commit));
        if !parent.is_empty() && !own.is_empty() {
            culprit.functions = function_changes(&parent, &own, SHOWN_FUNCTIONS);
        }
    }
    Ok(())
}

/// Says how much of the hunt its journal already holds.
fn say_resumed(lab: &ReplayLab, past: &Past, folder: &HuntDir, progress: &mut dyn Progress) {
    if lab.replayable_runs() == 0 {
        return;
    }
    let repeated = match past.repeated {
        0 => String::new(),
        n => format!(" ({n} repeated journal lines skipped: each run counts once)"),
    };
    progress.event(&ProgressEvent::Note(format!(
        "resuming the hunt in {}: {} runs from its journal are reused{repeated}",
        folder.dir().display(),
        lab.replayable_runs()
    )));
}

/// The hunt's journal, opened to go on, its start written.
fn journal(run: &HuntRun, progress: &mut dyn Progress) -> anyhow::Result<Journal> {
    let mut journal = Journal::open(&run.folder.journal())?;
    if journal.cut() > 0 {
        progress.event(&ProgressEvent::Note(format!(
            "the journal's last line was torn ({} bytes, written when pgbisect was stopped); \
             it was cut off and that run will be made again",
            journal.cut()
        )));
    }
    let plan = &run.hunt.plan;
    journal.append(&Event::Start {
        good: plan.good.id.clone(),
        bad: plan.bad.id.clone(),
        plan: run
            .names
            .first()
            .map_or_else(String::new, |n| n.to_string()),
        at: crate::time::now_rfc3339(),
    })?;
    Ok(journal)
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

/// The why-runs of the culprits; none when there are none to make (no
/// culprit, none asked, or the time ran out: the next start makes them).
fn why_runs(
    run: &HuntRun,
    report: &HuntReport,
    lab: &mut ReplayLab,
    progress: &mut dyn Progress,
) -> anyhow::Result<Vec<Why>> {
    let plan = &run.hunt.plan;
    let Some(runs) = run.hunt.why_runs else {
        return Ok(vec![]);
    };
    if report.culprits.is_empty() || ran_out_of_time(report) {
        return Ok(vec![]);
    }
    if plan.profile.is_custom() {
        progress.event(&ProgressEvent::Note(
            "no why-runs: a custom benchmark command has no instruments".into(),
        ));
        return Ok(vec![]);
    }
    if run.held.is_some() {
        progress.event(&ProgressEvent::Note(
            "the why-runs (pgbench's instruments, wait events, a CPU profile) are made on \
             this machine, not on the hosts"
                .into(),
        ));
    }
    let clients = super::why::profile_clients(&plan.profile);
    let spec = plan.lab_spec();
    let mut why_lab =
        super::why::why_lab(&spec, (run.budget, report), &run.folder.runs(), run.watch)?;
    let runs_in: &mut dyn Lab = match why_lab.lab.as_deref_mut() {
        Some(profiled) => profiled,
        None => lab,
    };
    super::why::after_hunt(
        (runs_in, why_lab.no_profile.as_deref(), &spec),
        report,
        run.folder,
        (&clients, runs),
        run.budget,
        progress,
    )
}

/// Fills in what the hunt was set up with, for its reports: the one place
/// a hunt's report is completed.
fn complete(
    report: &mut HuntReport,
    hunt: &HuntPlan,
    machine: Machine,
    release: Option<(ReleaseCheck, (LabTotals, f64))>,
) -> anyhow::Result<()> {
    let plan = &hunt.plan;
    report.machine = Some(machine);
    report.resolution = plan.resolution.clone();
    // As the command to hunt again names it: the same from any folder,
    // and on the first start as on a resumed one.
    report.profile_name = hunt
        .profile_name
        .as_deref()
        .map_or_else(|| "default".to_string(), as_named);
    report.profile_toml = hunt.profile_toml.clone();
    if !plan.profile.is_custom() {
        report.server_settings = plan.setups.at(plan.config.clients)?.settings.clone();
        report.configure_flags = crate::build::setup_args(&build_settings(&plan.profile)?);
        let tested: Vec<&str> = report.tested.iter().map(|t| t.commit.id.as_str()).collect();
        let compat = crate::build::compat_report_flags(&plan.work.lab_dirs(), &tested);
        report.configure_flags.extend(compat);
    }
    if let Some((check, (lab, wall))) = release {
        report.release_check = Some(check);
        report.totals.add_work(&lab, wall);
    }
    report.made = Some(Provenance::now(super::rerun::again(hunt)));
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::Measure;

    /// A counted run of `commit` whose transactions spent `per_tx` in
    /// `float8mul` and 1,000 in `ExecInterpExpr`.
    fn counted_run(run: u64, commit: &str, per_tx: f64) -> Event {
        let functions = [("float8mul", per_tx), ("ExecInterpExpr", 1_000.0)]
            .map(|(name, per_transaction)| FunctionCount {
                name: name.into(),
                per_transaction,
            })
            .to_vec();
        let outcome = crate::testing::counted_outcome(40_000.0 + per_tx, functions);
        Event::run_here(run, &Commit::bare(commit), 1, &outcome)
    }

    #[test]
    fn a_culprit_on_counts_gets_the_functions_that_moved_from_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        let mut report: HuntReport =
            serde_json::from_str(include_str!("../../../tests/fixtures/reports/hunt.json"))
                .unwrap();
        let (parent, culprit) = (
            report.culprits[0].parent.clone(),
            report.culprits[0].commit.clone(),
        );
        let mut journal = Journal::open(&path).unwrap();
        for (run, (commit, per_tx)) in [
            (&parent, 1_000.0),
            (&culprit, 2_000.0),
            (&parent, 1_002.0),
            (&culprit, 2_002.0),
        ]
        .into_iter()
        .enumerate()
        {
            journal
                .append(&counted_run(run as u64 + 1, commit, per_tx))
                .unwrap();
        }
        // A hunt on tps lists none.
        count_functions(&mut report, &path).unwrap();
        assert!(report.culprits[0].functions.is_empty());
        report.measure = Measure::Instructions;
        count_functions(&mut report, &path).unwrap();
        let moved = &report.culprits[0].functions;
        assert_eq!(moved[0].name, "float8mul");
        assert_eq!((moved[0].a, moved[0].b), (1_001.0, 2_001.0));
        // ExecInterpExpr, which did not move, is left out.
        assert_eq!(moved.len(), 1);
    }
}
