//! A study of `--run-length auto`: how often its pilot runs choose each
//! length when a share of the noise at --run-length does not shrink with
//! the length, and the machine time of the hunt that follows against runs
//! of --run-length (first gaussian scenario). Takes the flags of
//! `pgbisect simulate` (--run-length is needed) and prints its tables,
//! then the study:
//!
//!     cargo run --release --example study_run_length -- --run-length 5m --trials 50
//!
//! (formerly `pgbisect simulate --study-run-length`, same output).

#[path = "studies/run_length.rs"]
mod run_length;

use clap::Parser;
use pgbisect::commands::SimulateArgs;

#[derive(Debug, Parser)]
#[command(name = "study_run_length")]
struct Cli {
    #[command(flatten)]
    sim: SimulateArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (options, config) = cli.sim.resolve()?;
    let Some(costs) = options.costs else {
        anyhow::bail!("the run-length study needs --run-length (the profile's run length)");
    };
    let out = &mut std::io::stdout().lock();
    let results = cli.sim.run(out)?;
    run_length::write(
        &results,
        &costs,
        (cli.sim.trials, cli.sim.seed),
        &config,
        out,
    )
}
