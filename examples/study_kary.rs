//! A study of how a search should use several hosts: every host on one
//! candidate a round, or k candidates a round (a k-ary search), on the
//! one-step scenarios, for --hosts N (or 2, 4 and 8 hosts). Takes the
//! flags of `pgbisect simulate` and prints its tables, then the study:
//!
//!     cargo run --release --example study_kary -- --hosts 4 --trials 200
//!
//! (formerly `pgbisect simulate --study-kary`, same output).

#[path = "studies/kary.rs"]
mod kary;
// Its study table is study_pba's; this study uses its search only.
#[allow(dead_code)]
#[path = "studies/pba.rs"]
mod pba;

use clap::Parser;
use pgbisect::commands::SimulateArgs;

#[derive(Debug, Parser)]
#[command(name = "study_kary")]
struct Cli {
    #[command(flatten)]
    sim: SimulateArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (options, config) = cli.sim.resolve()?;
    let out = &mut std::io::stdout().lock();
    let results = cli.sim.run(out)?;
    let cfg = pba::PbaConfig {
        threshold: config.decision.threshold,
        ..pba::PbaConfig::default()
    };
    let wall = options.costs.as_ref().map(|c| (c, options.copy));
    let trials = (cli.sim.trials, cli.sim.seed);
    kary::write(&results, trials, &cfg, options.hosts, wall, out)
}
