//! `pgbisect compare`: A against B, or A against A with a patch, at
//! several client counts, the runs of the two sides alternating.

use super::args::LabArgs;
use super::output::{check_writable_file, write_output_file};
use super::plan::{choices, load_profile};
use super::resolve;
use crate::core::counts::{Measure, MeasureChoice};
use crate::core::decide::DecisionConfig;
use crate::engine::compare::table;
use crate::engine::session::compare::{self, Bench, CompareAsk, Compared, SideB};
use crate::error::UsageError;
use crate::lab::open::LabChoices;
use crate::profile::Profile;
use clap::Args;
use std::path::PathBuf;
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
    /// pgbench client counts, one table row each (default: the profile's
    /// `clients`, else 1,8,16,32,64,128).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    pub clients: Vec<u32>,
    /// Runs of each side per client count.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: usize,
    /// Smallest drop called a regression, in percent: 5 or 5% (default:
    /// the profile's `threshold`, else 5).
    #[arg(long, value_name = "PCT", value_parser = super::args::percent, allow_hyphen_values = true)]
    pub threshold: Option<f64>,
    /// What decides: `tps`, pgbench's transactions per second,
    /// `instructions`, the instructions a transaction costs, counted by
    /// cachegrind (repeats to about 0.2% where tps moves 3-6%; slower runs),
    /// or `auto`: both, side by side, and which decides at each client
    /// count, as a hunt chooses (default: the profile's `measure`, else tps).
    #[arg(long, value_name = "tps|instructions|auto", value_parser = MeasureChoice::parse)]
    pub measure: Option<MeasureChoice>,
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

  Both tps and instruction counts, and which of them decides:
    pgbisect compare REL_16_0 REL_17_0 --clients 1,64 --measure auto

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
    let profile = load_profile(&args.lab)?;
    let (clients, decision) = decision_config(args, &profile)?;
    for (path, flag) in [(&args.json, "--json"), (&args.chart, "--chart")] {
        if let Some(path) = path {
            check_writable_file(path, flag)?;
        }
    }
    let b = match (&args.b, &args.patch) {
        (_, Some(patch)) => SideB::Patch(patch),
        (Some(b_rev), None) => SideB::Rev(b_rev),
        (None, None) => return Err(UsageError("give B or --patch FILE".into()).into()),
    };
    let (measure, both_ways) = measure_of(args, &profile)?;
    let ask = CompareAsk {
        a: &args.a,
        b,
        clients: &clients,
        runs: args.runs,
        decision,
        why_runs: args.why.then_some(args.why_args.why_runs),
        hosts: args.on.wanted(),
        both_ways,
    };
    let done = compare::run(bench(&args.lab, measure, profile)?, &ask)?;
    write_outputs(&done, args)?;
    Ok(print(&done))
}

/// The measure the lab is opened with, and whether both are measured
/// (`auto`: counted runs need PostgreSQL on this machine, so neither a
/// custom benchmark command nor hosts), refused before anything runs.
fn measure_of(args: &CompareArgs, profile: &Profile) -> anyhow::Result<(Measure, bool)> {
    let Some(measure) = resolve::measure(args.measure, profile).fixed() else {
        if profile.is_custom() {
            return Err(crate::lab::cannot_count());
        }
        if crate::lab::held::elsewhere(&args.on.wanted(), &profile.hosts) {
            return Err(UsageError(
                "--measure auto counts instructions on this machine, and a comparison on \
                 hosts measures tps: give --measure tps to compare on the hosts, or leave the \
                 hosts out"
                    .into(),
            )
            .into());
        }
        return Ok((Measure::Instructions, true));
    };
    Ok((measure, false))
}

/// Where the comparison measures, from the lab flags, with the profile.
fn bench(lab: &LabArgs, measure: Measure, profile: Profile) -> anyhow::Result<Bench> {
    let (repo_dir, work) = (lab.repo_dir(), lab.work_dir()?);
    Ok(Bench {
        repo_dir,
        work,
        profile,
        choices: LabChoices {
            measure,
            ..choices(lab)
        },
    })
}

/// Prints the table (and the why-runs); the exit code: an error when a
/// side has no result at some client count.
fn print(done: &Compared) -> ExitCode {
    let report = &done.report;
    print!("{}", table(report));
    if let Some(why) = &report.why {
        print!("\n{}", crate::report::why_text(why));
    }
    let missing = report.sides_without_results();
    if missing.is_empty() {
        return ExitCode::SUCCESS;
    }
    let places: Vec<String> = missing
        .iter()
        .map(|(clients, side)| format!("{side} at {clients} clients"))
        .collect();
    eprintln!(
        "pgbisect: no run gave a result for {}: see the run failures above and the logs under {}",
        places.join(", "),
        done.out_dir.join("runs").display()
    );
    ExitCode::from(crate::error::EXIT_RUNTIME_ERROR)
}

/// The result and the chart where `--json` and `--chart` ask.
fn write_outputs(done: &Compared, args: &CompareArgs) -> anyhow::Result<()> {
    let (json, svg) = compare::outputs(&done.report)?;
    for (path, body) in [(&args.json, &json), (&args.chart, &svg)] {
        if let Some(path) = path {
            write_output_file(path, body)?;
        }
    }
    Ok(())
}

/// The client counts and the decision settings: the flags, else the
/// profile's (see [`super::resolve`]), checked before anything runs.
fn decision_config(
    args: &CompareArgs,
    profile: &Profile,
) -> anyhow::Result<(Vec<u32>, DecisionConfig)> {
    if args.runs < 2 {
        return Err(UsageError("--runs must be at least 2 to measure any spread".into()).into());
    }
    let clients = resolve::client_counts(&args.clients, profile, &resolve::COMPARE_CLIENTS)?;
    let decision = DecisionConfig {
        threshold: resolve::threshold_pct(args.threshold, profile)? / 100.0,
        ..DecisionConfig::default()
    };
    Ok((clients, decision))
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
        assert_eq!(ok.runs, 5);
        let (clients, decision) = decision_config(&ok, &Profile::default()).unwrap();
        assert_eq!(clients, [1, 8, 16, 32, 64, 128]);
        assert!((decision.threshold - 0.03).abs() < 1e-12);
        for bad in [&["B", "--runs", "1"][..], &["B", "--clients", "1,0"]] {
            let err = decision_config(&compare_args(bad), &Profile::default()).unwrap_err();
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
