//! What a simulated hunt would cost in wall time on a real machine.
//!
//! Runs and builds are what the search controls, but what a user waiting
//! for the morning sees is hours: every build costs its compile time, and
//! every measured run its length plus the warm-up run before it and the
//! server's set-up (start, a fresh copy of the data). [`Costs`] turns the
//! counts of one hunt into seconds with that plain model, and
//! [`WallSummary`] says what many hunts cost on average and in a bad case
//! (the 90th percentile), so that a plan can be checked against a night.

use crate::core::stats::percentile;
use serde::{Deserialize, Serialize};

/// What one build and one measured run cost, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// One build of a commit.
    pub build: f64,
    /// One measured run (the benchmark's duration).
    pub run: f64,
    /// The warm-up before each measured run.
    pub warmup: f64,
    /// The set-up of each run: server start and stop, a copy of the data.
    pub setup: f64,
}

impl Costs {
    /// Wall time of a hunt that made `builds` builds and `runs` measured
    /// runs: builds x build + runs x (run + warm-up + set-up).
    pub fn hunt_seconds(&self, builds: u64, runs: u64) -> f64 {
        builds as f64 * self.build + runs as f64 * self.per_run()
    }

    /// What one measured run costs with its warm-up and set-up.
    pub fn per_run(&self) -> f64 {
        self.run + self.warmup + self.setup
    }

    /// The longest run length at which a hunt of `builds` builds and `runs`
    /// runs ends within `budget` seconds, keeping the warm-up and set-up;
    /// `None` when the builds, warm-ups and set-ups alone do not fit.
    pub fn run_length_within(&self, budget: f64, builds: f64, runs: f64) -> Option<f64> {
        if runs <= 0.0 {
            return None;
        }
        let left = budget - builds * self.build - runs * (self.warmup + self.setup);
        (left > 0.0).then(|| left / runs)
    }

    /// One line saying the model, for the table's title.
    pub fn describe(&self) -> String {
        format!(
            "builds x {} + runs x ({} run + {} warm-up + {} set-up)",
            format_duration(self.build),
            format_duration(self.run),
            format_duration(self.warmup),
            format_duration(self.setup)
        )
    }
}

/// Mean and 90th percentile of many hunts' wall times, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WallSummary {
    pub mean: f64,
    pub p90: f64,
}

impl WallSummary {
    /// `None` for no hunts.
    pub fn of(seconds: &[f64]) -> Option<WallSummary> {
        if seconds.is_empty() {
            return None;
        }
        let mean = seconds.iter().sum::<f64>() / seconds.len() as f64;
        Some(WallSummary {
            mean,
            p90: percentile(seconds, 0.9),
        })
    }
}

/// A duration for a table: `45s`, `3m07s`, `7h42m`.
pub fn format_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => {
            let minutes = (s + 30) / 60;
            format!("{}h{:02}m", minutes / 60, minutes % 60)
        }
    }
}

/// Over several hosts a build costs its compile and a copy of the
/// install to every host, one after another.
pub fn with_copies(costs: &Costs, hosts: usize, copy: f64) -> Costs {
    if hosts <= 1 {
        return *costs;
    }
    Costs {
        build: costs.build + hosts as f64 * copy,
        ..*costs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_000() -> Costs {
        Costs {
            build: 180.0,
            run: 1800.0,
            warmup: 300.0,
            setup: 20.0,
        }
    }

    #[test]
    fn a_hunt_pays_builds_and_each_run_with_its_warmup_and_setup() {
        let c = seed_000();
        assert_eq!(c.per_run(), 2120.0);
        assert_eq!(c.hunt_seconds(0, 0), 0.0);
        assert_eq!(c.hunt_seconds(20, 0), 3600.0);
        assert_eq!(c.hunt_seconds(20, 10), 3600.0 + 21_200.0);
    }

    #[test]
    fn the_run_length_that_fits_a_budget_solves_the_model() {
        let c = seed_000();
        let (builds, runs) = (20.0, 60.0);
        let length = c.run_length_within(8.0 * 3600.0, builds, runs).unwrap();
        let with = Costs { run: length, ..c };
        assert!((with.hunt_seconds(20, 60) - 8.0 * 3600.0).abs() < 1e-6);
        assert!((length - 100.0).abs() < 1e-9);
        // Warm-ups and set-ups alone over the budget: no run length fits.
        assert_eq!(c.run_length_within(3600.0, builds, runs), None);
        assert_eq!(c.run_length_within(3600.0, 0.0, 0.0), None);
    }

    #[test]
    fn summary_has_the_mean_and_the_nearest_rank_90th_percentile() {
        let hours: Vec<f64> = (1..=10).map(|h| h as f64 * 3600.0).collect();
        let s = WallSummary::of(&hours).unwrap();
        assert_eq!(s.mean, 5.5 * 3600.0);
        assert_eq!(s.p90, 9.0 * 3600.0);
        assert_eq!(WallSummary::of(&[]), None);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 0.9), 3.0);
        assert_eq!(percentile(&[7.0], 0.9), 7.0);
        assert_eq!(percentile(&[1.0, 2.0], 0.0), 1.0);
    }

    #[test]
    fn durations_print_in_the_largest_useful_unit() {
        assert_eq!(format_duration(14.0), "14s");
        assert_eq!(format_duration(187.0), "3m07s");
        assert_eq!(format_duration(7.0 * 3600.0 + 42.0 * 60.0 + 10.0), "7h42m");
        assert_eq!(format_duration(3599.6), "1h00m");
        assert_eq!(format_duration(49.0 * 3600.0), "49h00m");
    }
}
