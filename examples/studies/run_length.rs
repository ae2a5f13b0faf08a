//! How well the pilot runs choose a run length, and what the choice saves
//! (`cargo run --release --example study_run_length -- --run-length D`).
//!
//! A hunt with `--run-length auto` decides from two rounds of pilot runs
//! (both endpoints at a quarter of the profile's length and at all of it)
//! how long its runs last ([`pgbisect::core::run_length`]). Four runs per
//! length estimate a variance only roughly, so the choice is sometimes
//! not the best. This study draws those pilots from a known noise
//! structure (a share of the variance at the profile's length that no
//! length removes, the rest shrinking as 1/L), lets the real chooser
//! decide, and prices each choice with the real hunt on simulated
//! histories whose noise is that of the chosen length: the machine time
//! of the whole hunt, pilot included, against the same hunt at the
//! profile's length.

use pgbisect::core::run_length::{self, NoiseFit, PilotRun};
use pgbisect::engine::hunt::HuntConfig;
use pgbisect::engine::simulate::{NoiseModel, Scenario, ScenarioResult, evaluate, wall::Costs};
use rand::SeedableRng;
use rand::distr::Distribution;
use rand::rngs::StdRng;
use statrs::distribution::Normal;
use std::collections::BTreeMap;
use std::io::Write;

/// Shares of the profile length's variance that no length removes.
pub const FLOOR_SHARES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// Pilot rounds a hunt makes (as [`pgbisect::engine::hunt`] does).
const PILOT_ROUNDS: usize = 2;

/// Pilots drawn per noise structure.
const PILOTS: usize = 400;

/// One row: a noise structure, how often each length was chosen, and the
/// machine time of the hunt that follows against the fixed length's.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyRow {
    pub floor_share: f64,
    /// The length that would be cheapest if the noise were known.
    pub best: u32,
    /// Share of pilots that chose each length.
    pub chosen: BTreeMap<u32, f64>,
    /// Mean machine time of the hunt with the choice (pilot included)
    /// over the hunt at the profile's length.
    pub time_ratio: f64,
}

/// The noise structure whose CV at `profile` seconds is `cv`, with
/// `floor_share` of its variance not shrinking with the length.
pub fn structure(cv: f64, floor_share: f64, profile: u32, overhead: f64) -> NoiseFit {
    let var = cv * cv;
    NoiseFit {
        within: var * (1.0 - floor_share) * f64::from(profile),
        floor: var * floor_share,
        overhead,
    }
}

/// Runs the study for runs of `costs.run` seconds with `cv` noise at that
/// length, pricing hunts of `scenario`'s shape (its noise is replaced).
pub fn study(
    scenario: &Scenario,
    cv: f64,
    costs: &Costs,
    trials: usize,
    seed: u64,
    config: &HuntConfig,
) -> anyhow::Result<Vec<StudyRow>> {
    let profile = costs.run.round().max(1.0) as u32;
    let overhead = costs.warmup + costs.setup;
    let candidates = run_length::candidates(profile, 10);
    let mut rows = Vec::new();
    for floor_share in FLOOR_SHARES {
        let truth = structure(cv, floor_share, profile, overhead);
        // Runs a hunt makes at each length: the real hunt at that noise.
        let mut runs_at = BTreeMap::new();
        for &len in &candidates {
            let s = Scenario {
                noise: NoiseModel::Gaussian {
                    cv: truth.cv_pct(len) / 100.0,
                },
                ..scenario.clone()
            };
            runs_at.insert(len, evaluate(&s, trials, seed, config)?.mean_runs);
        }
        let hunt_time = |len: u32| runs_at[&len] * (f64::from(len) + overhead);
        let fixed = hunt_time(profile);
        let short = candidates[0];
        let pilot_time =
            (PILOT_ROUNDS * 2) as f64 * (f64::from(short) + f64::from(profile) + 2.0 * overhead);
        let mut rng = StdRng::seed_from_u64(seed ^ (floor_share * 1000.0) as u64);
        let mut chosen = BTreeMap::new();
        let mut total = 0.0;
        for _ in 0..PILOTS {
            let pilot = draw_pilot(&truth, short, profile, &mut rng);
            let decision = (config.decision.threshold, config.decision.min_runs);
            let c = run_length::choose(&pilot, &candidates, overhead, decision);
            *chosen.entry(c.seconds).or_insert(0.0) += 1.0 / PILOTS as f64;
            // Pilot runs of the chosen length are evidence: they stand in
            // for as many of the hunt's own runs.
            let reused = if c.seconds == short || c.seconds == profile {
                (PILOT_ROUNDS * 2) as f64 * (f64::from(c.seconds) + overhead)
            } else {
                0.0
            };
            total += pilot_time + (hunt_time(c.seconds) - reused).max(0.0);
        }
        let best = candidates
            .iter()
            .copied()
            .min_by(|a, b| hunt_time(*a).total_cmp(&hunt_time(*b)))
            .unwrap_or(profile);
        rows.push(StudyRow {
            floor_share,
            best,
            chosen,
            time_ratio: total / PILOTS as f64 / fixed,
        });
    }
    Ok(rows)
}

/// Two rounds of pilot runs at both endpoints (a 10% drop) and both lengths.
fn draw_pilot(truth: &NoiseFit, short: u32, long: u32, rng: &mut StdRng) -> Vec<PilotRun> {
    let mut runs = Vec::new();
    for _ in 0..PILOT_ROUNDS {
        for seconds in [short, long] {
            let sd = truth.cv_pct(seconds) / 100.0;
            for (bad_end, level) in [(false, 1000.0f64), (true, 900.0)] {
                let z = Normal::new(0.0, sd.max(1e-12)).map_or(0.0, |n| n.sample(rng));
                runs.push(PilotRun {
                    bad_end,
                    seconds,
                    tps: (level.ln() + z).exp(),
                });
            }
        }
    }
    runs
}

/// The table's header.
pub fn header(candidates: &[u32]) -> String {
    let chosen: Vec<String> = candidates.iter().map(|c| format!("{c:>6} s")).collect();
    format!(
        "{:<12} {:>8}  chosen: {}  {:>10}",
        "floor share",
        "best",
        chosen.join(" "),
        "time/fixed"
    )
}

/// One row of the table.
pub fn row(r: &StudyRow, candidates: &[u32]) -> String {
    let chosen: Vec<String> = candidates
        .iter()
        .map(|c| format!("{:>7.0}%", 100.0 * r.chosen.get(c).copied().unwrap_or(0.0)))
        .collect();
    format!(
        "{:<12} {:>6} s          {}  {:>10.2}",
        format!("{:.0}%", 100.0 * r.floor_share),
        r.best,
        chosen.join(" "),
        r.time_ratio
    )
}

/// The run-length study for the first scenario with Gaussian noise (its
/// CV is the noise at the profile's run length).
pub fn write(
    results: &[ScenarioResult],
    costs: &Costs,
    (trials, seed): (usize, u64),
    config: &HuntConfig,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out)?;
    let Some((scenario, cv)) = results.iter().find_map(|r| match r.scenario.noise {
        NoiseModel::Gaussian { cv } => Some((&r.scenario, cv)),
        _ => None,
    }) else {
        writeln!(
            out,
            "run-length study: needs a scenario with gaussian noise"
        )?;
        return Ok(());
    };
    let profile = costs.run.round().max(1.0) as u32;
    let candidates = run_length::candidates(profile, 10);
    writeln!(
        out,
        "run-length choice (study; {}, CV {:.1}% at {profile} s, {:.0} s of warm-up and \
         set-up a run; the share of that variance no run length removes):",
        scenario.name,
        100.0 * cv,
        costs.warmup + costs.setup
    )?;
    writeln!(out, "{}", header(&candidates))?;
    for r in study(scenario, cv, costs, trials, seed, config)? {
        writeln!(out, "{}", row(&r, &candidates))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgbisect::engine::simulate::NoiseModel;

    fn one_step() -> Scenario {
        Scenario {
            name: "study".into(),
            commits: 100,
            steps: vec![0.9],
            noise: NoiseModel::Gaussian { cv: 0.02 },
            unbuildable: 0.0,
        }
    }

    #[test]
    fn the_structure_has_the_given_cv_at_the_profiles_length() {
        let s = structure(0.02, 0.25, 1800, 360.0);
        assert!((s.cv_pct(1800) - 2.0).abs() < 1e-9);
        assert!(s.cv_pct(450) > s.cv_pct(1800));
        let flat = structure(0.02, 1.0, 1800, 0.0);
        assert!((flat.cv_pct(450) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn noise_no_length_removes_is_mostly_met_with_short_runs_that_save_time() {
        let costs = Costs {
            build: 0.0,
            run: 1800.0,
            warmup: 300.0,
            setup: 60.0,
        };
        let rows = study(&one_step(), 0.02, &costs, 20, 1, &HuntConfig::default()).unwrap();
        let flat = rows.iter().find(|r| r.floor_share == 1.0).unwrap();
        assert_eq!(flat.best, 450, "{flat:?}");
        assert!(flat.chosen[&450] > 0.5, "{flat:?}");
        assert!(flat.time_ratio < 0.8, "{flat:?}");
        // Whatever the structure, the shares of the choices add up to one
        // and the best length is one of the candidates.
        for r in &rows {
            let total: f64 = r.chosen.values().sum();
            assert!((total - 1.0).abs() < 1e-9, "{r:?}");
            assert!([450, 900, 1800].contains(&r.best), "{r:?}");
        }
    }
}
