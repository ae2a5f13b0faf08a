//! The watcher's whole loop over simulated nights: `engine::watch` with
//! its looser detector and the side-by-side confirmation of every
//! candidate, over the simulated lab. How many changes a flat history
//! confirms (false alarms per 100 nights and series) and how many nights
//! after it landed a step is confirmed, between the right commits.
//!
//! Each trial: three commits land a day; a first night backfills
//! `--backfill` days (a commit a day), then `--nights` nights are
//! watched, each measuring `--per-night` commits beside the reference
//! (3 pairs of runs each), runs with normal noise of `--noise`
//! (relative). In the step trials a `--step` lands at a random commit of
//! night `--step-night` of the watch. The store is SQLite in memory.
//!
//!     cargo run --release --example study_watch_loop -- --trials 50
//!
//! With `STUDY_SHOW_MISSED` set, the changes of each step trial whose
//! step was not confirmed are printed.

use clap::Parser;
use pgbisect::engine::watch::{ProfileLab, WatchConfig, watch_night};
use pgbisect::lab::sim::{History, NoiseModel, SimLab};
use pgbisect::repo::Landed;
use pgbisect::store::sqlite::SqliteStore;
use pgbisect::store::{ChangeStatus, Store};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::path::Path;

const DAY: i64 = 86_400;

#[derive(Debug, Parser)]
#[command(name = "study_watch_loop")]
struct Cli {
    /// Histories of each kind (flat, with a step).
    #[arg(long, default_value_t = 50)]
    trials: usize,
    /// Nights watched after the backfill.
    #[arg(long, default_value_t = 100)]
    nights: usize,
    #[arg(long, default_value_t = 30)]
    backfill: usize,
    #[arg(long, default_value_t = 3)]
    per_night: usize,
    /// Relative noise of a run (standard deviation).
    #[arg(long, default_value_t = 0.02)]
    noise: f64,
    /// The step (relative; negative is a drop).
    #[arg(long, default_value_t = -0.05, allow_hyphen_values = true)]
    step: f64,
    /// The watched night the step lands in.
    #[arg(long, default_value_t = 50)]
    step_night: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What one trial gave: changes confirmed, and for a step, the night it
/// was confirmed between the right commits (counted from its landing).
struct Trial {
    confirmed: usize,
    wrong: usize,
    delay: Option<i64>,
}

fn trial(cli: &Cli, step: Option<usize>, seed: u64) -> anyhow::Result<Trial> {
    let days = cli.backfill + cli.nights + 1;
    let history = History {
        len: 3 * days,
        steps: step.map(|p| (p, 1.0 + cli.step)).into_iter().collect(),
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    let line: Vec<Landed> = history
        .commits()
        .into_iter()
        .enumerate()
        .map(|(p, commit)| Landed {
            commit,
            committed: p as i64 * DAY / 3,
        })
        .collect();
    let position = |id: &str| line.iter().position(|l| l.commit.id == id);
    let noise = NoiseModel::Gaussian { cv: cli.noise };
    let mut labs = vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8],
        lab: Box::new(SimLab::new(history, noise, seed)),
        placements: vec![],
    }];
    let mut store = SqliteStore::open(Path::new(":memory:"))?;
    let cfg = WatchConfig {
        backfill: cli.backfill,
        per_night: cli.per_night,
        ..WatchConfig::new("master")
    };
    let mut out = Trial {
        confirmed: 0,
        wrong: 0,
        delay: None,
    };
    for night in 0..=cli.nights {
        let day = (cli.backfill + night) as i64;
        let clock = (day + 1) * DAY - 1;
        let w = watch_night(&mut store, &mut labs, &line, clock, &cfg, &mut |_| {})?;
        for c in w
            .changes
            .iter()
            .filter(|c| c.status == ChangeStatus::Confirmed)
        {
            out.confirmed += 1;
            let right = step.is_some_and(|s| {
                position(&c.before).is_some_and(|b| b < s)
                    && position(&c.after).is_some_and(|a| a >= s)
            });
            match step {
                Some(s) if right && out.delay.is_none() => {
                    out.delay = Some(day - s as i64 / 3);
                }
                _ => out.wrong += 1,
            }
        }
    }
    if std::env::var_os("STUDY_SHOW_MISSED").is_some() && step.is_some() && out.delay.is_none() {
        for c in store.changes("master")? {
            eprintln!(
                "  missed step at {:?}: {:?} {:?}..{:?} {:+.1}% p={:.3}",
                step,
                c.status,
                position(&c.before),
                position(&c.after),
                c.pct,
                c.p_value
            );
        }
    }
    Ok(out)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return -1;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut rng = StdRng::seed_from_u64(cli.seed);
    let (mut flat_confirmed, mut step_wrong) = (0usize, 0usize);
    let mut delays = Vec::new();
    for t in 0..cli.trials {
        flat_confirmed += trial(&cli, None, rng.random())?.confirmed;
        let at = 3 * (cli.backfill + cli.step_night) + rng.random_range(1..=3);
        let s = trial(&cli, Some(at), rng.random())?;
        step_wrong += s.wrong;
        delays.extend(s.delay);
        eprintln!(
            "trial {}: {} flat confirmed so far, {} steps found",
            t + 1,
            flat_confirmed,
            delays.len()
        );
    }
    delays.sort();
    let watched = (cli.trials * cli.nights) as f64;
    println!(
        "per night {} noise {:.0}% step {:+.0}%: false confirmed per 100 nights {:.2} \
         (flat) and {:.2} (step trials, besides the step) | step confirmed between the \
         right commits {}/{} | delay in nights from landing: median {} p90 {} max {}",
        cli.per_night,
        cli.noise * 100.0,
        cli.step * 100.0,
        flat_confirmed as f64 / watched * 100.0,
        step_wrong as f64 / watched * 100.0,
        delays.len(),
        cli.trials,
        percentile(&delays, 0.5),
        percentile(&delays, 0.9),
        delays.last().copied().unwrap_or(-1)
    );
    Ok(())
}
