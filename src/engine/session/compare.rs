//! A comparison's session: A against B, or A against A with a patch, at
//! several client counts, the runs of the two sides alternating; then,
//! when asked, the why-runs of B against A. Its result and chart are kept
//! in the work dir.

use crate::core::counts::Measure;
use crate::core::decide::DecisionConfig;
use crate::engine::compare::{BothWays, CompareReport, Row, chart_series, measure};
use crate::engine::why::{self, WhyPlan};
use crate::error::UsageError;
use crate::files::write_file;
use crate::lab::Lab;
use crate::lab::held::HostsWanted;
use crate::lab::open::{LabChoices, LabSpec};
use crate::machine::steady::Watch;
use crate::model::Commit;
use crate::profile::Profile;
use crate::repo::{Repo, WorkTree, as_git_diff};
use crate::workspace::WorkDir;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// B: another revision, or A with a patch applied.
pub enum SideB<'a> {
    Rev(&'a str),
    Patch(&'a Path),
}

/// What a comparison is asked.
pub struct CompareAsk<'a> {
    /// A, as given.
    pub a: &'a str,
    pub b: SideB<'a>,
    pub clients: &'a [u32],
    /// Runs of each side per client count.
    pub runs: usize,
    pub decision: DecisionConfig,
    /// Runs a side of the why-runs; `None`: none.
    pub why_runs: Option<usize>,
    pub hosts: HostsWanted,
    /// `--measure auto`: measure both ways and say which decides (the
    /// lab's choices then count).
    pub both_ways: bool,
}

/// Where a comparison measures: the repository, the work dir, the
/// profile and the lab flags.
pub struct Bench {
    pub repo_dir: PathBuf,
    pub work: WorkDir,
    pub profile: Profile,
    pub choices: LabChoices,
}

/// A comparison made, and the folder its files are in.
pub struct Compared {
    pub report: CompareReport,
    pub out_dir: PathBuf,
}

/// Measures A against B as `ask` says, on `bench`.
pub fn run(bench: Bench, ask: &CompareAsk) -> anyhow::Result<Compared> {
    let repo = Repo::open(&bench.repo_dir)?;
    let a_named = repo.resolve_name(ask.a)?;
    let a = a_named.commit.clone();
    let _lock = bench.work.create_and_lock()?;
    let (b, b_label) = side_b(&repo, &bench.work.checkout(), &a, ask)?;
    let spec = super::lab_spec(
        (
            &bench.profile,
            ask.clients[0],
            &super::decide_setups(&bench.profile, ask.clients),
        ),
        (&bench.repo_dir, &bench.work),
        (&a, &b),
        &bench.choices,
    );
    let out_dir = out_dir(&bench, (&a, &b), ask.clients)?;
    crate::proc::install_signal_handlers().context("cannot install the signal handlers")?;
    let watch = Watch::default();
    let name = format!("compare-{}", file_name(&out_dir));
    let held = crate::lab::held::take(
        &ask.hosts,
        &bench.profile,
        (bench.work.root(), &name, "comparison"),
        crate::progress::for_stderr().as_mut(),
    )?;
    let runs_dir = out_dir.join("runs");
    let mut lab = if ask.both_ways {
        crate::lab::open::open_timed_and_counted(&spec, &watch, &runs_dir)?
    } else {
        crate::lab::open::open(&spec, &watch, &runs_dir, held.as_ref().map(|h| (h, "")))?
    };
    let (rows, both_ways) = measure_as_asked(lab.as_mut(), (&a, &b), ask, bench.choices.measure)?;
    let why = match ask.why_runs {
        Some(runs) => Some(why_runs(
            (&spec, (&a, &b)),
            (lab.as_mut(), &watch),
            &out_dir,
            (ask, runs),
        )?),
        None => None,
    };
    let report = CompareReport {
        a,
        b,
        a_label: a_named.label(),
        b_label,
        threshold: ask.decision.threshold,
        measurement: lab.describe(),
        measure: rows_measure(ask, bench.choices.measure),
        measured_on: held.as_ref().map(|h| h.describe()),
        rows,
        why,
        both_ways,
    };
    write_outputs(&report, &out_dir)?;
    Ok(Compared { report, out_dir })
}

/// The rows of `measure`; with `--measure auto`, the rows of tps and,
/// beside them, the counted rows and the measure that decides.
fn measure_as_asked(
    lab: &mut dyn Lab,
    (a, b): (&Commit, &Commit),
    ask: &CompareAsk,
    measured: Measure,
) -> anyhow::Result<(Vec<Row>, Option<BothWays>)> {
    let mut rows_of = |measured: Measure| {
        measure(
            lab,
            [(a, "A"), (b, "B")],
            (ask.clients, ask.runs, measured),
            &ask.decision,
            &mut |line| eprintln!("{}", crate::shown::visible_line(line)),
        )
    };
    if !ask.both_ways {
        return Ok((rows_of(measured)?, None));
    }
    let timed = rows_of(Measure::Tps)?;
    let counted = rows_of(Measure::Instructions)?;
    let both = BothWays::of(&timed, counted, ask.decision.threshold);
    Ok((timed, Some(both)))
}

/// The measure of the report's rows: tps with `--measure auto`.
fn rows_measure(ask: &CompareAsk, measured: Measure) -> Measure {
    if ask.both_ways {
        Measure::Tps
    } else {
        measured
    }
}

/// The comparison's folder, named by its commits and settings.
fn out_dir(bench: &Bench, (a, b): (&Commit, &Commit), clients: &[u32]) -> anyhow::Result<PathBuf> {
    let settings = serde_json::to_string(&(clients, &bench.profile))
        .context("cannot encode the comparison's settings")?;
    bench.work.comparison(&format!(
        "{}-{}-{}",
        a.short(),
        b.short(),
        &crate::core::fingerprint::fingerprint(&settings)[..8]
    ))
}

/// B measured against A again with instruments, at every client count.
fn why_runs(
    (spec, (a, b)): (&LabSpec, (&Commit, &Commit)),
    (lab, watch): (&mut (dyn Lab + 'static), &Watch),
    out_dir: &Path,
    (ask, runs): (&CompareAsk, usize),
) -> anyhow::Result<crate::core::why::Why> {
    let why_plan = WhyPlan {
        clients: ask.clients.to_vec(),
        runs,
        main_clients: ask.clients[0],
        first_run: 10_000,
    };
    eprintln!(
        "why: B against A again with instruments at {} clients, {} runs a side each",
        super::why::list(&why_plan.clients),
        why_plan.runs
    );
    let mut profiled = crate::lab::open::open_for_why(spec, &out_dir.join("runs"), watch)?;
    let no_profile = profiled.no_profile.take();
    let why_lab = profiled.lab.as_deref_mut().unwrap_or(lab);
    let built = why_lab.totals();
    let mut lines = crate::progress::LogLines::new();
    let mut found = why::measure(why_lab, a, b, &why_plan, &mut |_| true, &mut lines)?;
    super::why::compare_profiles(
        &mut found,
        &out_dir.join("why-profile"),
        no_profile.as_deref(),
        super::why::code_change(spec, &a.id, &b.id),
    );
    super::why::note_builds(&mut found, &built, &why_lab.totals());
    Ok(found)
}

/// The last part of `path`, as text.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// B: a commit of the repository, or A with the patch applied.
fn side_b(
    repo: &Repo,
    checkout: &Path,
    a: &Commit,
    ask: &CompareAsk,
) -> anyhow::Result<(Commit, String)> {
    match ask.b {
        SideB::Patch(patch) => patched(repo, checkout, (a, ask.a), patch),
        SideB::Rev(b_rev) => {
            let b = repo.resolve_name(b_rev)?;
            Ok((b.commit.clone(), b.label()))
        }
    }
}

/// A's commit with the patch applied, made in the work dir's private repository.
fn patched(
    repo: &Repo,
    checkout: &Path,
    (a, a_rev): (&Commit, &str),
    patch: &Path,
) -> anyhow::Result<(Commit, String)> {
    let text = std::fs::read(patch)
        .map_err(|e| UsageError(format!("cannot read the patch {}: {e}", patch.display())))?;
    let name = patch
        .file_name()
        .map_or_else(|| "patch".into(), |n| n.to_string_lossy().into_owned());
    let text = as_git_diff(&text);
    let worktree = WorkTree::open_or_create(repo, checkout)?;
    let message = format!("{} + {name}", a.subject);
    let id = worktree
        .commit_with_patch(&a.id, &text, &message)?
        .ok_or_else(|| {
            UsageError(format!(
                "the patch {} does not apply to {} (a patch from git diff, git format-patch or diff -u, applied as with -p1, is expected)",
                patch.display(),
                a.short()
            ))
        })?;
    let label = format!("{a_rev}+{name}");
    let commit = Commit {
        id,
        subject: message,
        author: a.author.clone(),
        date: a.date.clone(),
    };
    Ok((commit, label))
}

/// The comparison as JSON, and its chart.
pub fn outputs(report: &CompareReport) -> anyhow::Result<(String, String)> {
    let json = serde_json::to_string_pretty(report).context("cannot encode the comparison")?;
    let title = format!("{} against {}", report.b_label, report.a_label);
    let svg = crate::report::chart::compare_chart(&title, &chart_series(report));
    Ok((json, svg))
}

/// The result and the chart in the comparison's folder.
fn write_outputs(report: &CompareReport, out_dir: &Path) -> anyhow::Result<()> {
    crate::folders::create_dir(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let (json, svg) = outputs(report)?;
    write_file(&out_dir.join("result.json"), &json)?;
    write_file(&out_dir.join("chart.svg"), &svg)?;
    Ok(())
}
