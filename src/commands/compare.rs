//! `pgbisect compare`: A against B, or A against A with a patch, at
//! several client counts, the runs of the two sides alternating.

use super::args::LabArgs;
use super::lab::{make_lab_on, why_lab};
use super::output::{check_writable_file, write_file, write_output_file};
use super::plan::{Plan, load_profile};
use crate::core::decide::DecisionConfig;
use crate::engine::compare::{CompareReport, chart_series, measure, table};
use crate::engine::hunt::HuntConfig;
use crate::engine::why::{self, WhyPlan};
use crate::error::UsageError;
use crate::model::Commit;
use crate::repo::{Repo, WorkTree, as_git_diff};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `pgbisect compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The base commit, tag or branch (A).
    #[arg(value_name = "A")]
    pub a: String,
    /// The commit to set against A (B); not with --patch.
    #[arg(
        value_name = "B",
        required_unless_present = "patch",
        conflicts_with = "patch"
    )]
    pub b: Option<String>,
    /// Compare A against A with this patch applied.
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// pgbench client counts, one table row each.
    #[arg(
        long,
        value_name = "N,N,...",
        value_delimiter = ',',
        default_value = "1,8,16,32,64,128"
    )]
    pub clients: Vec<u32>,
    /// Runs of each side per client count.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: usize,
    /// Smallest drop called a regression, in percent: 5 or 5%.
    #[arg(long, value_name = "PCT", value_parser = super::args::percent, allow_hyphen_values = true)]
    pub threshold: Option<f64>,
    /// Write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the SVG chart to this file.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Then measure B against A again with instruments: per-statement
    /// latencies, latency percentiles and wait events at each client count.
    #[arg(long)]
    pub why: bool,
    #[command(flatten)]
    pub why_args: super::why::WhyArgs,
    #[command(flatten)]
    pub lab: LabArgs,
    #[command(flatten)]
    pub on: super::hosts::HostArgs,
}

/// Examples for `pgbisect compare --help`.
pub const AFTER_HELP: &str = "\
Examples:
  master against a patch, 5 runs per side and client count:
    pgbisect compare master --patch ~/lwlock-fix.patch --clients 1,16,64,128

  Two releases, custom commands, results kept:
    pgbisect compare REL_16_0 REL_17_0 --profile bench.toml --runs 7 \\
        --json cmp.json --chart cmp.svg

  On three identical machines over ssh, a run on each at once, A and B
  in turn on every one:
    pgbisect compare REL_16_0 REL_17_0 --profile bench.toml \\
        --hosts box1,box2,box3

The runs of A and B alternate (A, B, A, B, ...). Each row gives the median
TPS of both, their spread ((max-min)/max), B's change against A with its
confidence interval, and a verdict: SLOWER, same, faster or unclear. On
several hosts each host's runs are set against its own, the hosts
combined, and a second table gives each host's medians.";

/// `pgbisect compare`: flags in, table out.
pub(super) fn command(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let decision = decision_config(args)?;
    for (path, flag) in [(&args.json, "--json"), (&args.chart, "--chart")] {
        if let Some(path) = path {
            check_writable_file(path, flag)?;
        }
    }
    let lab_args = &args.lab;
    let repo_dir = lab_args.repo_dir();
    let repo = Repo::open(&repo_dir)?;
    let a_named = repo.resolve_name(&args.a)?;
    let a = a_named.commit.clone();
    let work = lab_args.work_dir()?;
    let _lock = work.create_and_lock()?;
    let (b, b_label) = side_b(&repo, &work.checkout(), &a, args)?;
    let plan = Plan {
        profile: load_profile(lab_args)?,
        config: HuntConfig {
            decision,
            clients: args.clients[0],
            ..Default::default()
        },
        good: a.clone(),
        bad: b.clone(),
        resolution: vec![],
        release: None,
        repo_dir,
        work,
    };
    let settings = serde_json::to_string(&(&args.clients, &plan.profile))
        .context("cannot encode the comparison's settings")?;
    let out_dir = plan.work.comparison(&format!(
        "{}-{}-{}",
        a.short(),
        b.short(),
        &crate::core::fingerprint::fingerprint(&settings)[..8]
    ))?;
    crate::proc::install_signal_handlers().context("cannot install the signal handlers")?;
    let watch = crate::machine::steady::Watch::default();
    let name = format!("compare-{}", file_name(&out_dir));
    let held = super::hosts::take(
        &args.on,
        &plan.profile,
        (&plan.work, &name, "comparison"),
        crate::progress::for_stderr().as_mut(),
    )?;
    let mut lab = make_lab_on(
        &plan,
        (lab_args, &watch),
        &out_dir.join("runs"),
        held.as_ref().map(|h| (h, "")),
    )?;
    let a_label = a_named.label();
    let rows = measure(
        lab.as_mut(),
        [(&a, "A"), (&b, "B")],
        &args.clients,
        args.runs,
        &decision,
        &mut |line| eprintln!("{line}"),
    )?;
    let why = if args.why {
        let why_plan = WhyPlan {
            clients: args.clients.clone(),
            runs: args.why_args.why_runs,
            main_clients: args.clients[0],
            first_run: 10_000,
        };
        eprintln!(
            "why: B against A again with instruments at {} clients, {} runs a side each",
            super::why::list(&why_plan.clients),
            why_plan.runs
        );
        let mut profiled = why_lab(&plan, lab_args, &out_dir.join("runs"), &watch)?;
        let no_profile = profiled.no_profile.take();
        let why_lab = profiled.lab.as_deref_mut().unwrap_or(lab.as_mut());
        let built = why_lab.totals();
        let mut lines = crate::progress::LogLines::new();
        let mut found = why::measure(why_lab, &a, &b, &why_plan, &mut |_| true, &mut lines)?;
        super::why::compare_profiles(
            &mut found,
            &out_dir.join("why-profile"),
            no_profile.as_deref(),
        );
        super::why::note_builds(&mut found, &built, &why_lab.totals());
        Some(found)
    } else {
        None
    };
    let report = CompareReport {
        a,
        b,
        a_label,
        b_label,
        threshold: decision.threshold,
        measurement: lab.describe(),
        measured_on: held.as_ref().map(|h| h.describe()),
        rows,
        why,
    };
    write_outputs(&report, &out_dir, args)?;
    print!("{}", table(&report));
    if let Some(why) = &report.why {
        print!("\n{}", crate::report::why_text(why));
    }
    let missing = report.sides_without_results();
    if missing.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let places: Vec<String> = missing
        .iter()
        .map(|(clients, side)| format!("{side} at {clients} clients"))
        .collect();
    eprintln!(
        "pgbisect: no run gave a result for {}: see the run failures above and the logs under {}",
        places.join(", "),
        out_dir.join("runs").display()
    );
    Ok(ExitCode::from(crate::error::EXIT_RUNTIME_ERROR))
}

/// The last part of `path`, as text.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The decision settings from the flags, which are checked first.
fn decision_config(args: &CompareArgs) -> anyhow::Result<DecisionConfig> {
    if args.runs < 2 {
        return Err(UsageError("--runs must be at least 2 to measure any spread".into()).into());
    }
    if args.clients.is_empty() || args.clients.contains(&0) {
        return Err(
            UsageError("--clients needs client counts of at least 1, e.g. 1,8,64".into()).into(),
        );
    }
    let threshold_pct = args.threshold.unwrap_or(5.0);
    if !(threshold_pct > 0.0 && threshold_pct < 100.0) {
        return Err(UsageError(format!(
            "--threshold {threshold_pct}: give a percentage between 0 and 100"
        ))
        .into());
    }
    Ok(DecisionConfig {
        threshold: threshold_pct / 100.0,
        ..DecisionConfig::default()
    })
}

/// B: a commit of the repository, or A with the patch applied.
fn side_b(
    repo: &Repo,
    checkout: &Path,
    a: &Commit,
    args: &CompareArgs,
) -> anyhow::Result<(Commit, String)> {
    match (&args.b, &args.patch) {
        (_, Some(patch)) => patched(repo, checkout, (a, &args.a), patch),
        (Some(b_rev), None) => {
            let b = repo.resolve_name(b_rev)?;
            Ok((b.commit.clone(), b.label()))
        }
        (None, None) => Err(UsageError("give B or --patch FILE".into()).into()),
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

fn write_outputs(report: &CompareReport, out_dir: &Path, args: &CompareArgs) -> anyhow::Result<()> {
    crate::folders::create_dir(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let json = serde_json::to_string_pretty(report).context("cannot encode the comparison")?;
    let title = format!("{} against {}", report.b_label, report.a_label);
    let svg = crate::report::chart::compare_chart(&title, &chart_series(report));
    write_file(&out_dir.join("result.json"), &json)?;
    write_file(&out_dir.join("chart.svg"), &svg)?;
    for (path, body) in [(&args.json, &json), (&args.chart, &svg)] {
        if let Some(path) = path {
            write_output_file(path, body)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare_args(extra: &[&str]) -> CompareArgs {
        use clap::Parser;
        let mut argv = vec!["pgbisect", "compare", "A"];
        argv.extend_from_slice(extra);
        match crate::commands::Cli::try_parse_from(argv).unwrap().command {
            Some(crate::commands::Command::Compare(args)) => args,
            other => panic!("not a compare: {other:?}"),
        }
    }

    #[test]
    fn flags_are_checked_before_anything_runs() {
        let ok = compare_args(&["B", "--threshold", "3"]);
        assert_eq!(ok.clients, [1, 8, 16, 32, 64, 128]);
        assert_eq!(ok.runs, 5);
        assert!((decision_config(&ok).unwrap().threshold - 0.03).abs() < 1e-12);
        for bad in [&["B", "--runs", "1"][..], &["B", "--clients", "1,0"]] {
            let err = decision_config(&compare_args(bad)).unwrap_err();
            assert!(err.downcast_ref::<UsageError>().is_some(), "{bad:?}");
        }
        use clap::Parser;
        assert!(crate::commands::Cli::try_parse_from(["pgbisect", "compare", "A"]).is_err());
        let over = ["pgbisect", "compare", "A", "B", "--threshold", "120"];
        assert!(crate::commands::Cli::try_parse_from(over).is_err());
        assert!(
            crate::commands::Cli::try_parse_from(["pgbisect", "compare", "A", "B", "--patch", "p"])
                .is_err()
        );
    }
}
