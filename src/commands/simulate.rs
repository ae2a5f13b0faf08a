//! `pgbisect simulate`: the real hunt against simulated histories with
//! known culprits, beside the by-hand method.

use crate::core::decide::DecisionConfig;
use crate::engine::hunt::{HuntConfig, Search};
use crate::engine::simulate::options::SimOptions;
use crate::engine::simulate::{self, ScenarioResult};
use crate::error::UsageError;
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `pgbisect simulate`.
#[derive(Debug, Args, Clone)]
pub struct SimulateArgs {
    /// Hunts per scenario.
    #[arg(long, default_value_t = 200, value_parser = super::values::count_usize)]
    pub trials: usize,
    /// Seed of the random histories and noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the scenarios whose name contains this text.
    #[arg(long, conflicts_with_all = ["steps", "noise", "noise_from_journal", "unbuildable"])]
    pub scenario: Option<String>,
    /// Commits per simulated history.
    #[arg(long, value_parser = super::values::count_usize)]
    pub commits: Option<usize>,
    /// Simulate one scenario of your own with these steps: each drop in
    /// percent, e.g. -16,-18 (default: -10).
    #[arg(long, value_name = "PCT,PCT,...", allow_hyphen_values = true,
          value_delimiter = ',', value_parser = crate::engine::simulate::options::parse_step)]
    pub steps: Option<Vec<f64>>,
    /// Noise of your own scenario, figures in percent: gaussian:CV,
    /// heavy-tail:CV:DF, outliers:CV:P:LOW:HIGH, bimodal:CV:P:FACTOR or
    /// drift:CV:STEP:BOUND (default: gaussian:3).
    #[arg(long, value_name = "MODEL", conflicts_with = "noise_from_journal",
          value_parser = crate::engine::simulate::options::parse_noise)]
    pub noise: Option<crate::lab::sim::NoiseModel>,
    /// Noise of your own scenario as measured by a real hunt: its
    /// WORK_DIR/hunts/<hunt>/journal.jsonl.
    #[arg(long, value_name = "FILE")]
    pub noise_from_journal: Option<PathBuf>,
    /// Share of commits that do not build in your own scenario, in percent.
    #[arg(long, value_name = "PCT", value_parser = super::values::share_percent)]
    pub unbuildable: Option<f64>,
    /// Length of one measured run (e.g. 30m, 300s); prints each hunt's
    /// expected wall time: builds x build time + runs x (run length +
    /// warm-up + set-up).
    #[arg(long, value_name = "DURATION", value_parser = super::values::positive_duration)]
    pub run_length: Option<f64>,
    /// Time of one build (e.g. 3m); with --run-length.
    #[arg(long, value_name = "DURATION", requires = "run_length",
          value_parser = crate::time::parse_duration)]
    pub build_time: Option<f64>,
    /// Warm-up before each measured run (e.g. 5m); with --run-length.
    #[arg(long, value_name = "DURATION", requires = "run_length",
          value_parser = crate::time::parse_duration)]
    pub warmup: Option<f64>,
    /// Server start and data set-up before each run (e.g. 20s); with
    /// --run-length.
    #[arg(long, value_name = "DURATION", requires = "run_length",
          value_parser = crate::time::parse_duration)]
    pub setup: Option<f64>,
    /// A time budget (e.g. 8h): also print the longest run length at
    /// which a hunt would fit in it.
    #[arg(long, value_name = "DURATION", requires = "run_length",
          value_parser = crate::time::parse_duration)]
    pub budget: Option<f64>,
    /// Smallest drop worth hunting, in percent.
    #[arg(long, default_value_t = 5.0, value_parser = super::args::percent)]
    pub threshold: f64,
    /// How the hunt searches a range: `posterior` or `bisect` (see
    /// `pgbisect --help`).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Search::default(),
          hide_possible_values = true)]
    pub search: Search,
    /// Decide as a hunt on this measure does (`tps` or `instructions`:
    /// its noise floor and fewest runs a side); the simulated runs' noise
    /// stands for the measure's spread, e.g. --noise gaussian:0.2 for
    /// counts.
    #[arg(long, value_name = "tps|instructions", value_parser = crate::core::counts::Measure::parse,
          default_value = "tps")]
    pub measure: crate::core::counts::Measure,
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Model a hunt spread over N identical hosts: each a few percent
    /// faster or slower, with noise of its own; each round is a run on
    /// every host at once, of one commit or of several (--candidates). The wall time counts a round of runs as
    /// one run and copies each build to every host.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = super::values::count_usize)]
    pub hosts: usize,
    /// With --hosts, how many commits the posterior search measures at
    /// once, each host taking one in turn (default: the hosts, at most 4;
    /// 1: every host on the same commit, each decision's runs gathered N
    /// times faster).
    #[arg(long, value_name = "K", requires = "hosts",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub candidates: Option<u32>,
    /// Time to copy a built install to one host (e.g. 15s); with --hosts.
    #[arg(long, value_name = "DURATION", value_parser = crate::time::parse_duration)]
    pub copy_time: Option<f64>,
}

impl SimulateArgs {
    /// What these flags ask to simulate, and the hunt's settings.
    pub fn resolve(&self) -> anyhow::Result<(SimOptions, HuntConfig)> {
        self.check()?;
        let args = self;
        // The simulated lab's runs are its figures: the decision is the
        // measure's, the runs' figure stays theirs.
        let config = HuntConfig {
            decision: args.measure.decision(DecisionConfig {
                threshold: args.threshold / 100.0,
                ..DecisionConfig::default()
            }),
            search: args.search,
            candidates: args.candidates,
            ..HuntConfig::default()
        };
        let options = simulate::options::SimOptions {
            scenario: args.scenario.clone(),
            commits: args.commits,
            steps: args.steps.clone(),
            noise: (args
                .noise
                .clone()
                .map(simulate::options::NoiseSource::Model))
            .or_else(|| {
                (args.noise_from_journal.clone()).map(simulate::options::NoiseSource::Journal)
            }),
            unbuildable: args.unbuildable.map(|pct| pct / 100.0),
            costs: args.run_length.map(|run| simulate::wall::Costs {
                build: args.build_time.unwrap_or(0.0),
                run,
                warmup: args.warmup.unwrap_or(0.0),
                setup: args.setup.unwrap_or(0.0),
            }),
            budget: args.budget,
            hosts: args.hosts,
            copy: args.copy_time.unwrap_or(0.0),
        };
        Ok((options, config))
    }

    /// `--commits` against the steps, `--json`, and `--scenario`'s text.
    fn check(&self) -> anyhow::Result<()> {
        if let Some(commits) = self.commits {
            // Each step lands on a commit of its own after the first.
            let most = match &self.steps {
                Some(steps) => steps.len(),
                None => simulate::standard_scenarios()
                    .iter()
                    .map(|s| s.steps.len())
                    .max()
                    .unwrap_or(1),
            };
            if commits <= most {
                return Err(UsageError(format!(
                    "--commits {commits}: a history needs more commits than its steps \
                     ({most}); give at least {}",
                    most + 1
                ))
                .into());
            }
        }
        if let Some(path) = &self.json {
            super::output::check_writable_file(path, "--json")?;
        }
        if let Some(f) = &self.scenario
            && !simulate::standard_scenarios()
                .iter()
                .any(|s| s.name.contains(f.as_str()))
        {
            return Err(UsageError("no scenario matches --scenario".into()).into());
        }
        Ok(())
    }

    /// Runs the simulation, prints its tables to `out` and writes the
    /// results to `--json`; returns them (the studies in `examples/` go on
    /// from them).
    pub fn run(&self, out: &mut dyn Write) -> anyhow::Result<Vec<ScenarioResult>> {
        let (options, config) = self.resolve()?;
        let results =
            simulate::options::run_and_print(&options, self.trials, self.seed, &config, out)?;
        if let Some(path) = &self.json {
            let body =
                serde_json::to_string_pretty(&results).context("cannot encode the results")?;
            super::output::write_output_file(path, &body)?;
        }
        Ok(results)
    }
}

pub(super) fn command(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    args.run(&mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
