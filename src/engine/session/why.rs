//! The why-runs after a hunt's culprits, and in `compare --why`: what to
//! sweep, how many runs, within the time budget, kept in the hunt's
//! folder so a resumed hunt does not make them again.

use crate::core::why::{ChangedFunctions, CpuFinding, Why};
use crate::engine::hunt::budget::Budget;
use crate::engine::why::{self, WhyPlan};
use crate::files::write_file;
use crate::lab::Lab;
use crate::lab::open::{LabSpec, WhyLab};
use crate::machine::steady::Watch;
use crate::model::{Commit, LabTotals, short_sha as short};
use crate::perf::{self, Folded, FunctionChange, ProfileDiff};
use crate::profile::Profile;
use crate::progress::{Progress, ProgressEvent};
use crate::repo::CodeChange;
use crate::report::findings::HuntReport;
use crate::workspace::HuntDir;
use std::path::{Path, PathBuf};

/// The machine's CPUs, for the default client sweep.
fn cpus() -> u32 {
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok())
        .unwrap_or(1)
}

/// The client counts listed in `profile`.
pub fn profile_clients(profile: &Profile) -> Vec<u32> {
    profile
        .benchmark
        .clients
        .as_ref()
        .map(|c| c.to_vec())
        .unwrap_or_default()
}

/// The client counts the why-runs of a hunt at `clients` sweep.
pub fn sweep_of(profile: &Profile, clients: u32) -> Vec<u32> {
    why::sweep(&profile_clients(profile), cpus(), clients)
}

/// The why-runs of every culprit of `report`, each kept in the hunt's
/// folder (and read from there when a resumed hunt already made them).
///
/// `no_profile` says why the runs record no CPU profile, when they do not.
pub fn after_hunt(
    (lab, no_profile, spec): (&mut dyn Lab, Option<&str>, &LabSpec),
    report: &HuntReport,
    hunt: &HuntDir,
    (profile_clients, runs): (&[u32], usize),
    budget: Option<Budget>,
    progress: &mut dyn Progress,
) -> anyhow::Result<Vec<Why>> {
    let mut found = Vec::new();
    for (i, culprit) in report.culprits.iter().enumerate() {
        let path = hunt.why(&culprit.commit);
        if let Some(done) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Why>(&t).ok())
        {
            found.push(done);
            continue;
        }
        let plan = WhyPlan {
            clients: why::sweep(profile_clients, cpus(), report.clients),
            runs,
            main_clients: report.clients,
            first_run: (i as u64 + 1) * 10_000,
        };
        progress.event(&ProgressEvent::Phase(format!(
            "why: {} against its parent at {} clients, {} runs a side each",
            short(&culprit.commit),
            list(&plan.clients),
            plan.runs
        )));
        let mut fits = |seconds: f64| budget.is_none_or(|b| b.fits(b.now(), seconds));
        let built = lab.totals();
        let mut found_now = why::measure(
            lab,
            &Commit::bare(culprit.parent.clone()),
            &Commit::bare(culprit.commit.clone()),
            &plan,
            &mut fits,
            progress,
        )?;
        compare_profiles(
            &mut found_now,
            &hunt.why_profile(&culprit.commit),
            no_profile,
            code_change(spec, &culprit.parent, &culprit.commit),
        );
        note_builds(&mut found_now, &built, &lab.totals());
        let body = serde_json::to_string_pretty(&found_now)?;
        write_file(&path, &body)?;
        found.push(found_now);
    }
    Ok(found)
}

/// Whether the time budget leaves room for building each culprit and its
/// parent once more with frame pointers for `perf`, priced at the hunt's
/// mean build time; why not otherwise (the why-runs are then made on the
/// hunt's own builds, without a CPU profile).
pub fn room_for_builds(budget: Option<Budget>, report: &HuntReport) -> Result<(), String> {
    let (Some(budget), Some(per_build)) = (budget, mean_build_seconds(report)) else {
        return Ok(());
    };
    // Each culprit and its parent, and the endpoint whose pgbench drives
    // the load.
    let needed = (2 * report.culprits.len() + 1) as f64 * per_build;
    if budget.fits(budget.now(), needed) {
        Ok(())
    } else {
        Err(format!(
            "no CPU profile: the time budget left no room for building the culprits and \
             their parents with frame pointers (about {needed:.0} s)"
        ))
    }
}

/// The lab `report`'s why-runs are made in, its runs in `runs_dir`: one
/// with instruments and `perf` when their builds fit the budget; else
/// none, and why.
pub fn why_lab(
    spec: &LabSpec,
    (budget, report): (Option<Budget>, &HuntReport),
    runs_dir: &Path,
    watch: &Watch,
) -> anyhow::Result<WhyLab> {
    match room_for_builds(budget, report) {
        Ok(()) => crate::lab::open::open_for_why(spec, runs_dir, watch),
        Err(no_room) => Ok(WhyLab {
            lab: None,
            no_profile: Some(no_room),
        }),
    }
}

fn mean_build_seconds(report: &HuntReport) -> Option<f64> {
    (report.totals.builds > 0).then(|| report.totals.build_seconds / report.totals.builds as f64)
}

/// What `commit` changed against `parent` in the server's source, read
/// from the hunt's repository (with the private objects of patched
/// commits); why not, when it cannot be read (the report then says so,
/// and goes without the part that needs it).
pub fn code_change(spec: &LabSpec, parent: &str, commit: &str) -> Result<CodeChange, String> {
    crate::lab::open::open_repo(spec)
        .and_then(|repo| Ok(repo.code_change(parent, commit)?))
        .map_err(|e| {
            format!(
                "the functions {} changed were not read: {e:#}",
                short(commit)
            )
        })
}

/// Adds up the CPU profiles of each side of `why`'s runs and compares
/// them into `why.cpu`, writing the folded profiles, the table and the
/// differential flame graph into `dir`; `no_profile` is why there are
/// none. A profile that cannot be read or written is said in the report,
/// not an error: the rest of the why-runs stands.
pub fn compare_profiles(
    why: &mut Why,
    dir: &Path,
    no_profile: Option<&str>,
    change: Result<CodeChange, String>,
) {
    if let Some(reason) = no_profile {
        why.cpu = Some(CpuFinding::Unavailable(reason.to_string()));
        return;
    }
    if why.profiles_before.is_empty() && why.profiles_after.is_empty() {
        return;
    }
    let change = change.map_err(|why_not| why.notes.push(why_not)).ok();
    let sides = side_profile(&why.profiles_before)
        .and_then(|before| side_profile(&why.profiles_after).map(|after| (before, after)));
    let title = format!(
        "CPU profile: {} against its parent {}",
        short(&why.commit),
        short(&why.parent)
    );
    why.cpu = Some(match sides {
        Err(reason) => CpuFinding::Unavailable(reason),
        Ok((before, after)) => match perf::write_comparison(dir, &before, &after, &title) {
            Ok(written) => cpu_finding(
                &written.diff,
                (perf::TABLE_ROWS, why.statements_clients),
                change.as_ref(),
                written.svg,
            ),
            Err(e) => CpuFinding::Unavailable(format!(
                "the profiles could not be written to {}: {e}",
                dir.display()
            )),
        },
    });
}

/// The top `rows` risers and fallers of `diff`, profiled at `clients`,
/// and how the functions of `change` moved.
fn cpu_finding(
    diff: &ProfileDiff,
    (rows, clients): (usize, u32),
    change: Option<&CodeChange>,
    flame_graph: PathBuf,
) -> CpuFinding {
    let risers: Vec<FunctionChange> = diff.risers(rows).into_iter().cloned().collect();
    let fallers: Vec<FunctionChange> = diff.fallers(rows).into_iter().cloned().collect();
    let grown: Vec<FunctionChange> = diff.grown(rows).into_iter().cloned().collect();
    let may_be_chance = risers
        .iter()
        .chain(&fallers)
        .filter(|f| diff.may_be_chance(f))
        .map(|f| f.name.clone())
        .collect();
    CpuFinding::Compared {
        clients,
        samples_before: diff.before_samples,
        samples_after: diff.after_samples,
        risers,
        fallers,
        grown,
        changed: change.map(|c| {
            let (sampled, unsampled) = diff.of_functions(&c.functions);
            ChangedFunctions {
                sampled,
                unsampled,
                other_files: c.other_files.clone(),
            }
        }),
        may_be_chance,
        flame_graph: Some(flame_graph),
    }
}

/// A side's profiles (as [`PerfProfiler`](crate::lab::pg::PerfProfiler)
/// gives them: a folded file, or why there is none) added up; why there
/// is nothing to add up otherwise.
fn side_profile(profiles: &[serde_json::Value]) -> Result<Folded, String> {
    let mut sum = Folded::default();
    let mut reason = None;
    for profile in profiles {
        let Some(path) = profile["folded"].as_str() else {
            let why = profile["unavailable"]
                .as_str()
                .or(profile["error"].as_str())
                .unwrap_or("the profiler gave no profile");
            reason.get_or_insert_with(|| why.to_string());
            continue;
        };
        let read = std::fs::read_to_string(path)
            .map_err(|e| format!("{path}: {e}"))
            .and_then(|text| Folded::parse(&text).map_err(|e| format!("{path}: {e}")));
        match read {
            Ok(folded) => sum.merge(&folded),
            Err(e) => {
                reason.get_or_insert(e);
            }
        }
    }
    if sum.samples() > 0 {
        Ok(sum)
    } else {
        Err(reason.unwrap_or_else(|| "no run recorded a CPU profile".into()))
    }
}

/// Says what builds the why-runs needed (those with frame pointers for
/// `perf`), from the lab's totals before and after them, and takes their
/// time out of the runs'.
pub fn note_builds(why: &mut Why, before: &LabTotals, after: &LabTotals) {
    let builds = after.builds.saturating_sub(before.builds);
    if builds > 0 {
        let seconds = after.build_seconds - before.build_seconds;
        // The runs' time is said without the builds'.
        why.seconds = (why.seconds - seconds).max(0.0);
        why.notes.push(format!(
            "{builds} build{} for these runs (with frame pointers, for perf) took {seconds:.0} s",
            if builds == 1 { "" } else { "s" },
        ));
    }
}

/// `1, 2, 4`.
pub fn list(clients: &[u32]) -> String {
    clients
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::why::WhyRuns;
    use serde_json::json;

    /// A why with the given profiles on each side.
    fn why_with(before: Vec<serde_json::Value>, after: Vec<serde_json::Value>) -> Why {
        let mut why = WhyRuns::default().summarize(&"c".repeat(40), &"p".repeat(40), 1, 0.0);
        why.profiles_before = before;
        why.profiles_after = after;
        why
    }

    /// Two runs' folded files of a recorded `perf script`, in `dir`.
    fn folded_runs(dir: &Path, name: &str, script: &str) -> Vec<serde_json::Value> {
        let folded = Folded::from_perf_script(script).unwrap();
        (1..=2)
            .map(|n| {
                let path = dir.join(format!("{name}-{n}.folded"));
                std::fs::write(&path, folded.to_text()).unwrap();
                json!({ "folded": path, "samples": folded.samples() })
            })
            .collect()
    }

    #[test]
    fn the_runs_profiles_add_up_and_name_the_slowed_function_first() {
        let dir = tempfile::tempdir().unwrap();
        let before = folded_runs(
            dir.path(),
            "parent",
            include_str!("../../perf/testdata/parent.perf-script"),
        );
        let after = folded_runs(
            dir.path(),
            "slowed",
            include_str!("../../perf/testdata/slowed.perf-script"),
        );
        let mut why = why_with(before, after);
        let out = dir.path().join("why-profile");
        let change = CodeChange {
            functions: vec!["ExecutorStart".into(), "never_sampled".into()],
            other_files: vec!["src/backend/catalog/system_views.sql".into()],
        };
        compare_profiles(&mut why, &out, None, Ok(change.clone()));
        let Some(CpuFinding::Compared {
            risers,
            samples_before,
            flame_graph,
            changed: Some(changed),
            ..
        }) = &why.cpu
        else {
            panic!("{:?}", why.cpu)
        };
        assert_eq!(risers[0].name, "ExecutorStart", "{risers:?}");
        assert_eq!(changed.sampled[0].name, "ExecutorStart");
        assert!(changed.sampled[0].total_change() > 0.0);
        assert_eq!(changed.unsampled, 1);
        assert_eq!(changed.other_files, change.other_files);
        assert_eq!(*samples_before, 600, "two runs of 300 samples");
        assert!(flame_graph.as_ref().unwrap().is_file());
        assert!(out.join("before.folded").is_file() && out.join("profile-diff.txt").is_file());
    }

    #[test]
    fn a_side_without_a_profile_says_why_and_no_profiler_leaves_it_out() {
        let dir = tempfile::tempdir().unwrap();
        let before = folded_runs(
            dir.path(),
            "parent",
            include_str!("../../perf/testdata/parent.perf-script"),
        );
        let refused = json!({ "unavailable": "no CPU profile: the kernel refused" });
        let mut why = why_with(before, vec![refused]);
        compare_profiles(&mut why, dir.path(), None, Err(String::new()));
        assert_eq!(
            why.cpu,
            Some(CpuFinding::Unavailable(
                "no CPU profile: the kernel refused".into()
            ))
        );

        let mut gone = why_with(vec![json!({ "folded": "/nonexistent/p.folded" })], vec![]);
        compare_profiles(&mut gone, dir.path(), None, Err("diff unread".into()));
        assert!(
            matches!(&gone.cpu, Some(CpuFinding::Unavailable(r)) if r.contains("/nonexistent")),
            "{:?}",
            gone.cpu
        );
        assert_eq!(
            gone.notes,
            ["diff unread"],
            "why the changed functions are missing"
        );

        let mut none = why_with(vec![], vec![]);
        compare_profiles(&mut none, dir.path(), None, Err(String::new()));
        assert_eq!(none.cpu, None, "a lab without a profiler");
        compare_profiles(
            &mut none,
            dir.path(),
            Some("no CPU profile: perf is missing"),
            Err(String::new()),
        );
        assert!(matches!(none.cpu, Some(CpuFinding::Unavailable(_))));
    }

    #[test]
    fn frame_pointer_builds_are_made_only_when_the_budget_has_room_for_them() {
        use crate::engine::hunt::{Hunt, HuntConfig};
        use crate::lab::sim::{History, NoiseModel, SimLab};
        let history = History {
            len: 24,
            steps: vec![(11, 0.85)],
            unbuildable: Default::default(),
            base_tps: 1000.0,
        };
        let mut lab = SimLab::new(history.clone(), NoiseModel::Gaussian { cv: 0.005 }, 7);
        let mut silent = crate::progress::Silent;
        let hunt = Hunt::new(
            HuntConfig::default(),
            history.commits(),
            &mut lab,
            &mut silent,
        );
        let mut report = hunt.run().unwrap();
        assert_eq!(report.culprits.len(), 1);
        report.totals.builds = 4;
        report.totals.build_seconds = 400.0;
        let in_secs = |s: u64| {
            Some(Budget::until(
                std::time::SystemTime::now() + std::time::Duration::from_secs(s),
            ))
        };
        assert_eq!(room_for_builds(None, &report), Ok(()));
        assert_eq!(room_for_builds(in_secs(3600), &report), Ok(()));
        let no_room = room_for_builds(in_secs(250), &report).unwrap_err();
        assert!(no_room.contains("about 300 s"), "{no_room}");
    }

    #[test]
    fn builds_made_for_the_runs_are_noted() {
        let mut why = why_with(vec![], vec![]);
        why.seconds = 472.4;
        let before = LabTotals::default();
        note_builds(&mut why, &before, &before);
        assert!(why.notes.is_empty());
        let after = LabTotals {
            builds: 2,
            build_seconds: 412.4,
            ..Default::default()
        };
        note_builds(&mut why, &before, &after);
        assert_eq!(
            why.notes,
            ["2 builds for these runs (with frame pointers, for perf) took 412 s"]
        );
        assert!((why.seconds - 60.0).abs() < 1e-9, "{}", why.seconds);
    }
}
