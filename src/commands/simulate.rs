//! `pgbisect simulate`: the real hunt against simulated histories with
//! known culprits, beside the by-hand method.

use crate::core::decide::DecisionConfig;
use crate::engine::hunt::HuntConfig;
use crate::engine::simulate;
use crate::error::UsageError;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `pgbisect simulate`.
#[derive(Debug, Args, Clone)]
pub struct SimulateArgs {
    /// Hunts per scenario.
    #[arg(long, default_value_t = 200)]
    pub trials: usize,
    /// Seed of the random histories and noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the scenarios whose name contains this text.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Commits per simulated history.
    #[arg(long)]
    pub commits: Option<usize>,
    /// Smallest drop worth hunting, in percent.
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub(super) fn command(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    if args.trials == 0 {
        return Err(UsageError("--trials must be at least 1".into()).into());
    }
    let config = HuntConfig {
        decision: DecisionConfig {
            threshold: args.threshold / 100.0,
            ..DecisionConfig::default()
        },
        ..HuntConfig::default()
    };
    let mut results = Vec::new();
    println!("{}", simulate::table_header());
    for mut scenario in simulate::standard_scenarios() {
        if args
            .scenario
            .as_ref()
            .is_some_and(|s| !scenario.name.contains(s.as_str()))
        {
            continue;
        }
        if let Some(c) = args.commits {
            scenario.commits = c;
        }
        let result = simulate::evaluate(&scenario, args.trials, args.seed, &config)?;
        println!("{}", simulate::table_row(&result));
        results.push(result);
    }
    if results.is_empty() {
        return Err(UsageError("no scenario matches --scenario".into()).into());
    }
    if let Some(path) = &args.json {
        let body = serde_json::to_string_pretty(&results).context("cannot encode the results")?;
        std::fs::write(path, body).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
