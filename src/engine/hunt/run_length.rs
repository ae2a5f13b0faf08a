//! The run length, chosen from the noise before the endpoints are judged.
//!
//! With `choose_run_length`, the hunt first runs both endpoints at the
//! shortest candidate length and at the profile's, interleaved, and lets
//! [`crate::core::run_length::choose`] pick the length that buys the
//! needed precision in the least machine time. Every later run has that
//! length. Pilot runs of the chosen length are evidence like any other;
//! the others are journaled and counted but judge nothing, since runs of
//! different lengths are not pooled. The choice depends only on the runs'
//! results, so a resumed hunt makes it again from the journal.

use super::Hunt;
use crate::core::run_length::{self, PilotRun};
use std::time::Instant;

/// Rounds of pilot runs; each runs both endpoints at both lengths.
const PILOT_ROUNDS: usize = 2;

/// No run is made shorter than this: a pgbench run of a few seconds
/// mostly measures its own start.
const MIN_SECONDS: u32 = 10;

impl Hunt<'_> {
    /// Chooses the hunt's run length when it is asked to and the lab can
    /// vary it; says what was chosen and why.
    pub(super) fn choose_run_length(&mut self) -> anyhow::Result<()> {
        if !self.cfg.choose_run_length {
            return Ok(());
        }
        let Some(profile) = self.lab.run_length() else {
            self.note("the run length is not chosen: the benchmark command decides its own".into());
            return Ok(());
        };
        let candidates = run_length::candidates(profile, MIN_SECONDS);
        let short = candidates.first().copied().unwrap_or(profile);
        if short >= profile {
            self.note(format!(
                "the run length stays at the profile's {profile} s: a quarter of it is under \
                 {MIN_SECONDS} s"
            ));
            return Ok(());
        }
        self.phase(&format!(
            "choosing the run length: the endpoints at {short} s and {profile} s, interleaved"
        ));
        let bad = self.bad();
        let mut pilot = Vec::new();
        let mut walls = Vec::new();
        'rounds: for _ in 0..PILOT_ROUNDS {
            for seconds in [short, profile] {
                for (pos, bad_end) in [(0, false), (bad, true)] {
                    let started = Instant::now();
                    let (measured, samples) = self.measure_at(pos, Some(seconds), false)?;
                    walls.push((seconds, started.elapsed().as_secs_f64()));
                    if matches!(measured, super::Measured::Unmeasurable(_)) {
                        break 'rounds;
                    }
                    for sample in samples {
                        let run = PilotRun {
                            bad_end,
                            seconds,
                            tps: sample.tps,
                        };
                        pilot.push((sample, pos, run));
                    }
                }
            }
        }
        // Hosts differ in speed: the noise is read from one host's runs
        // (the hosts are alike, so any one of them tells it).
        let first_host = pilot.first().and_then(|(s, _, _)| s.host.clone());
        let runs: Vec<PilotRun> = pilot
            .iter()
            .filter(|(s, _, _)| s.host == first_host)
            .map(|(_, _, r)| *r)
            .collect();
        let overhead = overhead(&walls);
        let decision = (self.cfg.decision.threshold, self.cfg.decision.min_runs);
        let choice = run_length::choose(&runs, &candidates, overhead, decision);
        for (sample, pos, r) in pilot {
            if r.seconds == choice.seconds {
                self.evidence.record(pos, sample);
            }
        }
        self.run_seconds = (choice.seconds != profile).then_some(choice.seconds);
        self.note(format!(
            "run length: {} s{} ({})",
            choice.seconds,
            if choice.seconds == profile {
                ", the profile's".to_string()
            } else {
                format!(" instead of the profile's {profile} s")
            },
            choice.reason
        ));
        Ok(())
    }
}

/// Seconds a run costs besides its measured length, in units of that
/// length's cost: from the pilot's wall times at two lengths, the cost
/// of a run is `k * L + s` (`k` counts warm-ups as long as a run), and
/// `s / k` is what a run pays besides its length.
fn overhead(walls: &[(u32, f64)]) -> f64 {
    let mean_at = |len: u32| {
        let w: Vec<f64> = walls
            .iter()
            .filter(|(l, _)| *l == len)
            .map(|(_, w)| *w)
            .collect();
        (!w.is_empty()).then(|| w.iter().sum::<f64>() / w.len() as f64)
    };
    let lengths = (
        walls.iter().map(|(l, _)| *l).min(),
        walls.iter().map(|(l, _)| *l).max(),
    );
    if let (Some(short), Some(long)) = lengths
        && short < long
        && let (Some(ws), Some(wl)) = (mean_at(short), mean_at(long))
    {
        let k = (wl - ws) / f64::from(long - short);
        if k > 0.5 {
            return ((ws - k * f64::from(short)) / k).max(0.0);
        }
    }
    let n = walls.len().max(1) as f64;
    (walls.iter().map(|(l, w)| w - f64::from(*l)).sum::<f64>() / n).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::overhead;

    #[test]
    fn the_overhead_is_what_a_run_costs_besides_its_length() {
        // 30 s of set-up a run, no warm-up.
        let walls = [(300, 330.0), (1200, 1230.0), (300, 330.0), (1200, 1230.0)];
        assert!((overhead(&walls) - 30.0).abs() < 1e-9);
        // A warm-up as long as each run: twice the length, plus 30 s.
        let walls = [(300, 630.0), (1200, 2430.0)];
        assert!((overhead(&walls) - 15.0).abs() < 1e-9);
        // Runs that cost nothing (a simulation): no overhead.
        assert_eq!(overhead(&[(300, 0.0), (1200, 0.0)]), 0.0);
        assert_eq!(overhead(&[]), 0.0);
    }
}
