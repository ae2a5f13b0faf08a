//! A study of change points over nightly measurements: how often a flat
//! series raises a new change (false alarms per 100 nights) and how many
//! nights a step needs before it is found where it landed, for the
//! options of `pgbisect::core::change_points`.
//!
//! Each night adds `--per-night` points (the tip and commits sampled
//! among those that landed), each the ratio of a commit's median to a
//! reference measured beside it: normal noise of `--noise` (relative),
//! and with probability `--wild` a night whose points read 5-15% low (a
//! slow spell the reference did not share). The nightly check reads the
//! last `--window` nights, a night's points as one group
//! (`change_points_by_group`, `--min-segment` in nights), or point by point
//! with `--by-point`; a change is new when no change raised before lies
//! within `--min-segment` of it. The step lands at a random point of its
//! night; a change is in the right place when the hunt it starts, over the
//! commits of the change's night and the night before, holds the step.
//!
//!     cargo run --release --example study_watch -- --trials 200

use clap::Parser;
use pgbisect::core::change_points::{ChangeOptions, change_points, change_points_by_group};
use rand::distr::Distribution;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

#[derive(Debug, Parser)]
#[command(name = "study_watch")]
struct Cli {
    /// Series per configuration.
    #[arg(long, default_value_t = 200)]
    trials: usize,
    /// Nights watched after the backfill.
    #[arg(long, default_value_t = 100)]
    nights: usize,
    /// Nights of backfill before the watch starts.
    #[arg(long, default_value_t = 30)]
    backfill: usize,
    /// Points measured a night.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 3])]
    per_night: Vec<usize>,
    /// Relative noise of a point (standard deviation).
    #[arg(long, value_delimiter = ',', default_values_t = [0.01, 0.02])]
    noise: Vec<f64>,
    /// Chance a night reads 5-15% low.
    #[arg(long, default_value_t = 0.03)]
    wild: f64,
    /// Smallest segment, in points.
    #[arg(long, value_delimiter = ',', default_values_t = [3usize, 4, 5])]
    min_segment: Vec<usize>,
    /// Significance of the permutation test.
    #[arg(long, value_delimiter = ',', default_values_t = [0.01, 0.001])]
    significance: Vec<f64>,
    /// Nights the nightly check reads.
    #[arg(long, default_value_t = 60)]
    window: usize,
    /// Read a night's points one by one instead of as one group.
    #[arg(long)]
    by_point: bool,
    /// Size of the step in the detection trials (relative, negative is a drop).
    #[arg(long, default_value_t = -0.05)]
    step: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

struct Night {
    /// The points this night added.
    values: Vec<f64>,
}

fn nights(
    cli: &Cli,
    per_night: usize,
    noise: f64,
    step_at: Option<usize>,
    rng: &mut StdRng,
) -> Vec<Night> {
    let normal = statrs::distribution::Normal::new(0.0, noise).expect("valid noise");
    (0..cli.backfill + cli.nights)
        .map(|night| {
            let wild = rng.random_bool(cli.wild);
            let values = (0..per_night)
                .map(|k| {
                    // The step lands on the first point of its night.
                    let stepped = step_at.is_some_and(|s| night > s || (night == s && k == 0));
                    let level = if stepped { 1.0 + cli.step } else { 1.0 };
                    let slow = if wild {
                        1.0 - rng.random_range(0.05..0.15)
                    } else {
                        1.0
                    };
                    level * slow * (1.0 + normal.sample(rng))
                })
                .collect();
            Night { values }
        })
        .collect()
}

/// Nights (after the backfill) on which a new change was raised, and the
/// night the change's new level starts.
fn watch(cli: &Cli, series: &[Night], options: &ChangeOptions) -> Vec<(usize, usize)> {
    let mut raised: Vec<usize> = Vec::new();
    let mut alarms = Vec::new();
    for night in cli.backfill..series.len() {
        let start = (night + 1).saturating_sub(cli.window);
        let read = &series[start..=night];
        let changes: Vec<usize> = if cli.by_point {
            // A change inside a night counts as that night's.
            let points: Vec<f64> = read.iter().flat_map(|n| n.values.iter().copied()).collect();
            let per_night = read[0].values.len();
            let options = ChangeOptions {
                min_segment: options.min_segment * per_night,
                ..*options
            };
            change_points(&points, &options)
                .iter()
                .map(|c| c.index / per_night)
                .collect()
        } else {
            let groups: Vec<&[f64]> = read.iter().map(|n| n.values.as_slice()).collect();
            change_points_by_group(&groups, options)
                .iter()
                .map(|c| c.index)
                .collect()
        };
        for index in changes {
            let at = start + index;
            if raised.iter().any(|&r| r.abs_diff(at) < options.min_segment) {
                continue;
            }
            raised.push(at);
            alarms.push((night, at));
        }
    }
    alarms
}

fn main() {
    let cli = Cli::parse();
    println!(
        "{:>5} {:>6} {:>4} {:>7} | {:>16} | {:>10} {:>10} {:>10} {:>8}",
        "/night",
        "noise",
        "min",
        "signif",
        "false per 100 n.",
        "found",
        "right pt",
        "delay med",
        "delay p90"
    );
    for &per_night in &cli.per_night {
        for &noise in &cli.noise {
            for &min_segment in &cli.min_segment {
                for &significance in &cli.significance {
                    let options = ChangeOptions {
                        min_segment,
                        significance,
                        permutations: ((2.0 / significance) as usize).max(199),
                        seed: cli.seed,
                    };
                    row(&cli, per_night, noise, &options);
                }
            }
        }
    }
}

fn row(cli: &Cli, per_night: usize, noise: f64, options: &ChangeOptions) {
    let mut rng = StdRng::seed_from_u64(cli.seed);
    let mut false_alarms = 0usize;
    let (mut found, mut right, mut delays) = (0usize, 0usize, Vec::new());
    for _ in 0..cli.trials {
        let flat = nights(cli, per_night, noise, None, &mut rng);
        false_alarms += watch(cli, &flat, options).len();
        let step_night = cli.backfill + cli.nights / 2;
        let stepped = nights(cli, per_night, noise, Some(step_night), &mut rng);
        let alarms: Vec<_> = watch(cli, &stepped, options)
            .into_iter()
            .filter(|&(night, _)| night >= step_night)
            .collect();
        // The hunt covers the commits of the change's night and the night
        // before: it must hold the step.
        if let Some(&(night, at)) = alarms.first() {
            found += 1;
            if at == step_night || at == step_night + 1 {
                right += 1;
                delays.push(night - step_night);
            }
        }
    }
    delays.sort_unstable();
    let quantile = |q: f64| {
        delays
            .get(((delays.len() as f64 - 1.0) * q).round() as usize)
            .map_or("-".to_string(), |d| d.to_string())
    };
    let nights_watched = (cli.trials * cli.nights) as f64;
    println!(
        "{:>6} {:>5.0}% {:>4} {:>7} | {:>16.2} | {:>9.1}% {:>9.1}% {:>10} {:>8}",
        per_night,
        noise * 100.0,
        options.min_segment,
        options.significance,
        false_alarms as f64 / nights_watched * 100.0,
        found as f64 / cli.trials as f64 * 100.0,
        right as f64 / cli.trials as f64 * 100.0,
        quantile(0.5),
        quantile(0.9),
    );
}
