//! A study of probabilistic bisection on the one-step scenarios (not a
//! hunt method): its runs and answers beside the by-hand method's. Takes
//! the flags of `pgbisect simulate` and prints its tables, then the study:
//!
//!     cargo run --release --example study_pba -- --trials 200 --seed 1
//!
//! (formerly `pgbisect simulate --study-pba`, same output).

#[path = "studies/pba.rs"]
mod pba;

use clap::Parser;
use pgbisect::commands::SimulateArgs;
use std::io::Write;

#[derive(Debug, Parser)]
#[command(name = "study_pba")]
struct Cli {
    #[command(flatten)]
    sim: SimulateArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (_, config) = cli.sim.resolve()?;
    let out = &mut std::io::stdout().lock();
    let results = cli.sim.run(out)?;
    writeln!(out)?;
    writeln!(
        out,
        "probabilistic bisection (study; one step, buildable commits only):"
    )?;
    writeln!(out, "{}", pba::study_header())?;
    let cfg = pba::PbaConfig {
        threshold: config.decision.threshold,
        ..pba::PbaConfig::default()
    };
    for r in &results {
        if let Some(row) = pba::study_row(&r.scenario, cli.sim.trials, cli.sim.seed, &cfg, r) {
            writeln!(out, "{row}")?;
        }
    }
    Ok(())
}
