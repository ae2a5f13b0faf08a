//! What `pgbisect simulate` is asked to model, and its printed tables.
//!
//! The standard scenarios answer "is the method right?"; a user planning a
//! night asks "how long will my hunt take?". For that the simulator takes
//! the shape of the user's hunt (commits, steps, the noise of the machine,
//! given as a model or read from a real hunt's journal) and the cost of a
//! build and of a run, and prints, beside runs and builds, the wall time of
//! a hunt by pgbisect and by hand. Without those options the output is the
//! standard table, unchanged, so earlier figures stay comparable.

use super::journal_noise::JournalNoise;
use super::wall::{Costs, WallSummary, format_duration, with_copies};
use super::{NoiseModel, Scenario, ScenarioResult, evaluate_on_hosts, standard_scenarios};
use super::{table_header, table_row};
use crate::engine::hunt::HuntConfig;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Where a custom scenario's noise comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum NoiseSource {
    Model(NoiseModel),
    /// A hunt's `journal.jsonl`.
    Journal(PathBuf),
}

/// What to simulate and what to print.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOptions {
    /// Only the standard scenarios whose name contains this.
    pub scenario: Option<String>,
    /// Commits per history (the standard scenarios' 400 otherwise).
    pub commits: Option<usize>,
    /// Step factors (0.84 = a 16% drop) of one custom scenario.
    pub steps: Option<Vec<f64>>,
    /// Noise of one custom scenario.
    pub noise: Option<NoiseSource>,
    /// Share of commits that do not build, in the custom scenario.
    pub unbuildable: Option<f64>,
    /// The wall-time model; no wall-time table without it.
    pub costs: Option<Costs>,
    /// A night to fit in: the table then says what run length would.
    pub budget: Option<f64>,
    /// Hosts each hunt measures on (0 or 1: one machine).
    pub hosts: usize,
    /// Seconds to copy a built install to one host, with several hosts.
    pub copy: f64,
}

impl SimOptions {
    /// Whether the user described a scenario of their own.
    fn custom(&self) -> bool {
        self.steps.is_some() || self.noise.is_some() || self.unbuildable.is_some()
    }

    /// The scenarios to run: the standard ones (filtered, and with the
    /// given commit count), or the one custom scenario. Returns a note to
    /// print first (what was read from a journal).
    pub fn scenarios(&self) -> anyhow::Result<(Vec<Scenario>, Option<String>)> {
        if !self.custom() {
            let chosen = standard_scenarios()
                .into_iter()
                .filter(|s| {
                    self.scenario
                        .as_ref()
                        .is_none_or(|f| s.name.contains(f.as_str()))
                })
                .map(|s| Scenario {
                    commits: self.commits.unwrap_or(s.commits),
                    ..s
                })
                .collect();
            return Ok((chosen, None));
        }
        let (noise, note, name) = match &self.noise {
            None => (NoiseModel::Gaussian { cv: 0.03 }, None, "custom"),
            Some(NoiseSource::Model(m)) => (m.clone(), None, "custom"),
            Some(NoiseSource::Journal(path)) => {
                let measured = JournalNoise::load(path)
                    .with_context(|| format!("cannot take the noise of {}", path.display()))?;
                let note = measured.describe();
                let model = NoiseModel::empirical(measured.residuals).ok_or_else(|| {
                    anyhow::anyhow!("the journal {} holds too few runs", path.display())
                })?;
                (model, Some(note), "from-journal")
            }
        };
        let scenario = Scenario {
            name: name.into(),
            commits: self.commits.unwrap_or(400),
            steps: self.steps.clone().unwrap_or_else(|| vec![0.90]),
            noise,
            unbuildable: self.unbuildable.unwrap_or(0.0),
        };
        Ok((vec![scenario], note))
    }
}

/// Runs the evaluation and prints its tables to `out`; returns the results.
pub fn run_and_print(
    options: &SimOptions,
    trials: usize,
    seed: u64,
    config: &HuntConfig,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<ScenarioResult>> {
    let (scenarios, note) = options.scenarios()?;
    if scenarios.is_empty() {
        anyhow::bail!("no scenario matches --scenario");
    }
    if let Some(note) = note {
        writeln!(out, "{note}")?;
    }
    writeln!(out, "{}", table_header())?;
    let mut results = Vec::new();
    for scenario in scenarios {
        let mut result = evaluate_on_hosts(&scenario, trials, seed, config, options.hosts)?;
        result.copy_seconds = options.copy;
        writeln!(out, "{}", table_row(&result))?;
        out.flush()?;
        results.push(result);
    }
    if options.hosts > 1 {
        write_hosts_note(&results, options.hosts, out)?;
    }
    if let Some(costs) = options.costs {
        writeln!(out)?;
        if options.hosts > 1 {
            writeln!(
                out,
                "{} hosts: a round of runs, one a host in parallel, costs one run (its slowest); \
                 each build is copied to every host, one after another ({} a copy)",
                options.hosts,
                format_duration(options.copy)
            )?;
        }
        write_wall_table(&results, &costs, options.budget, out)?;
    }
    Ok(results)
}

/// What the hunts over several hosts made: rounds beside all hosts' runs.
fn write_hosts_note(
    results: &[ScenarioResult],
    hosts: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{hosts} hosts, speeds {:.2}-{:.2} and noise x{:.1}-{:.1} of the scenario's; \
         runs/hunt above counts every host's runs",
        1.0 - super::HOST_SPEED_SPREAD,
        1.0 + super::HOST_SPEED_SPREAD,
        1.0 - super::HOST_NOISE_SPREAD,
        1.0 + super::HOST_NOISE_SPREAD
    )?;
    for r in results {
        writeln!(
            out,
            "{:<20} rounds/hunt {:.1} (runs/hunt {:.1} over {hosts} hosts)",
            r.scenario.name, r.mean_rounds, r.mean_runs
        )?;
    }
    Ok(())
}

/// The wall time of a hunt per scenario, by pgbisect and by hand (mean
/// and 90th percentile); with a budget, the longest run length at which
/// pgbisect's mean and 90th-percentile hunt fit in it.
pub fn write_wall_table(
    results: &[ScenarioResult],
    costs: &Costs,
    budget: Option<f64>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "wall time per hunt: {}", costs.describe())?;
    let mut header = format!(
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "scenario", "wall mean", "wall p90", "hand mean", "hand p90", "ratio"
    );
    if let Some(b) = budget {
        header += &format!("  run length to fit {} (mean / p90)", format_duration(b));
    }
    writeln!(out, "{header}")?;
    for r in results {
        writeln!(out, "{}", wall_row(r, costs, budget))?;
    }
    Ok(())
}

fn wall_row(r: &ScenarioResult, hand_costs: &Costs, budget: Option<f64>) -> String {
    // By hand is one bisection on one machine; pgbisect's builds are
    // copied to its hosts.
    let costs = &with_copies(hand_costs, r.hosts, r.copy_seconds);
    let ours: Vec<f64> = r
        .spent
        .iter()
        .map(|t| costs.hunt_seconds(t.builds, t.rounds))
        .collect();
    let hand: Vec<f64> = r
        .spent
        .iter()
        .map(|t| hand_costs.hunt_seconds(t.naive_builds, t.naive_runs))
        .collect();
    let (Some(ours_s), Some(hand_s)) = (WallSummary::of(&ours), WallSummary::of(&hand)) else {
        return format!("{:<20} (no trials)", r.scenario.name);
    };
    let ratio = if hand_s.mean > 0.0 {
        format!("{:.2}x", ours_s.mean / hand_s.mean)
    } else {
        "-".into()
    };
    let mut row = format!(
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>7}",
        r.scenario.name,
        format_duration(ours_s.mean),
        format_duration(ours_s.p90),
        format_duration(hand_s.mean),
        format_duration(hand_s.p90),
        ratio
    );
    if let Some(budget) = budget {
        let fit = |builds: f64, runs: f64| {
            costs
                .run_length_within(budget, builds, runs)
                .map_or_else(|| "none".to_string(), format_duration)
        };
        // The 90th-percentile hunt: the trial at that rank of wall time.
        let p90_trial = percentile_trial(&r.spent, costs);
        row += &format!(
            "  {} / {}",
            fit(r.mean_builds, r.mean_rounds),
            fit(p90_trial.0, p90_trial.1)
        );
    }
    row
}

/// Builds and runs of the trial whose wall time is the 90th percentile
/// (nearest rank) at these costs.
fn percentile_trial(spent: &[super::TrialSpent], costs: &Costs) -> (f64, f64) {
    let mut trials: Vec<(f64, f64, f64)> = spent
        .iter()
        .map(|t| {
            let (b, n) = (t.builds as f64, t.rounds as f64);
            (costs.hunt_seconds(t.builds, t.rounds), b, n)
        })
        .collect();
    trials.sort_by(|a, b| a.0.total_cmp(&b.0));
    let rank = (0.9 * trials.len() as f64).ceil() as usize;
    trials
        .get(rank.clamp(1, trials.len().max(1)) - 1)
        .map_or((0.0, 0.0), |t| (t.1, t.2))
}

/// Reads one step of `--steps`: a drop in percent (`-16`) into a factor
/// (0.84).
pub fn parse_step(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(pct) if pct < 0.0 && pct > -100.0 => Ok(1.0 + pct / 100.0),
        _ => Err(format!(
            "`{text}` is not a drop: give each step's change in percent, \
             negative and above -100, e.g. --steps -16,-18"
        )),
    }
}

/// Reads `--noise`: a model and its figures in percent (the t
/// distribution's degrees of freedom as they are).
pub fn parse_noise(text: &str) -> Result<NoiseModel, String> {
    let help = "give gaussian:CV, heavy-tail:CV:DF, outliers:CV:P:LOW:HIGH, \
                bimodal:CV:P:FACTOR or drift:CV:STEP:BOUND, figures in percent \
                (e.g. gaussian:5, outliers:3:5:50:85), or read a real hunt's noise \
                with --noise-from-journal";
    let mut parts = text.split(':');
    let name = parts.next().unwrap_or_default().trim();
    let figures: Result<Vec<f64>, _> = parts.map(|p| p.trim().parse::<f64>()).collect();
    let Ok(f) = figures else {
        return Err(format!(
            "`{text}` has a figure that is not a number: {help}"
        ));
    };
    if f.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(format!("`{text}` has a negative figure: {help}"));
    }
    let pct = |i: usize| f[i] / 100.0;
    let model = match (name, f.len()) {
        ("gaussian", 1) => NoiseModel::Gaussian { cv: pct(0) },
        ("heavy-tail", 2) if f[1] > 2.0 => NoiseModel::HeavyTail {
            cv: pct(0),
            df: f[1],
        },
        ("heavy-tail", 2) => {
            return Err(format!(
                "`{text}`: the t distribution needs more than 2 degrees of freedom \
                 for a finite spread, e.g. heavy-tail:3:3"
            ));
        }
        ("outliers", 4) if f[2] < f[3] && f[3] <= 100.0 && f[1] <= 100.0 => NoiseModel::Outliers {
            cv: pct(0),
            p: pct(1),
            low: pct(2),
            high: pct(3),
        },
        ("bimodal", 3) if f[1] <= 100.0 => NoiseModel::Bimodal {
            cv: pct(0),
            p: pct(1),
            factor: pct(2),
        },
        ("drift", 3) => NoiseModel::Drift {
            cv: pct(0),
            step: pct(1),
            bound: pct(2),
        },
        _ => return Err(format!("`{text}` is not a noise model: {help}")),
    };
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_drops_in_percent() {
        assert!((parse_step("-16").unwrap() - 0.84).abs() < 1e-12);
        assert!((parse_step(" -18 ").unwrap() - 0.82).abs() < 1e-12);
        for bad in ["16", "x", "", "-100", "0", "NaN"] {
            let err = parse_step(bad).unwrap_err();
            assert!(err.contains("--steps -16,-18"), "{bad}: {err}");
        }
    }

    #[test]
    fn noise_models_read_in_percent() {
        assert_eq!(
            parse_noise("gaussian:5"),
            Ok(NoiseModel::Gaussian { cv: 0.05 })
        );
        assert_eq!(
            parse_noise("heavy-tail:3:3"),
            Ok(NoiseModel::HeavyTail { cv: 0.03, df: 3.0 })
        );
        assert_eq!(
            parse_noise("outliers:3:5:50:85"),
            Ok(NoiseModel::Outliers {
                cv: 0.03,
                p: 0.05,
                low: 0.5,
                high: 0.85
            })
        );
        assert!(matches!(
            parse_noise("bimodal:2:25:85"),
            Ok(NoiseModel::Bimodal { .. })
        ));
        assert!(matches!(
            parse_noise("drift:2:0.5:6"),
            Ok(NoiseModel::Drift { .. })
        ));
        for bad in [
            "gaussian",
            "gaussian:x",
            "gaussian:-1",
            "laplace:3",
            "heavy-tail:3:2",
            "outliers:3:5:85:50",
            "bimodal:2:125:85",
        ] {
            assert!(parse_noise(bad).is_err(), "{bad}");
        }
        assert!(
            parse_noise("laplace:3")
                .unwrap_err()
                .contains("gaussian:CV")
        );
    }

    fn options_for(steps: &[&str], noise: &str) -> SimOptions {
        SimOptions {
            commits: Some(60),
            steps: Some(steps.iter().map(|s| parse_step(s).unwrap()).collect()),
            noise: Some(NoiseSource::Model(parse_noise(noise).unwrap())),
            costs: Some(Costs {
                build: 180.0,
                run: 1800.0,
                warmup: 300.0,
                setup: 20.0,
            }),
            budget: Some(8.0 * 3600.0),
            ..SimOptions::default()
        }
    }

    #[test]
    fn a_custom_scenario_prints_wall_times_that_follow_the_model() {
        let options = options_for(&["-16", "-18"], "gaussian:2");
        let mut out = Vec::new();
        let results = run_and_print(&options, 5, 3, &HuntConfig::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!(r.scenario.name, "custom");
        assert_eq!(r.spent.len(), 5);
        assert!(text.contains("wall time per hunt: builds x 3m00s + runs x (30m00s run"));
        assert!(text.contains("run length to fit 8h00m"));
        let costs = options.costs.unwrap();
        let walls: Vec<f64> = r
            .spent
            .iter()
            .map(|t| costs.hunt_seconds(t.builds, t.runs))
            .collect();
        let mean = WallSummary::of(&walls).unwrap().mean;
        let row = text.lines().last().unwrap();
        assert!(row.starts_with("custom"), "{text}");
        assert!(row.contains(&format_duration(mean)), "{row} vs {mean}");
        // The runs and builds behind the wall time are the table's.
        let runs = r.spent.iter().map(|t| t.runs as f64).sum::<f64>() / 5.0;
        assert!((runs - r.mean_runs).abs() < 1e-9);
    }

    #[test]
    fn hosts_run_rounds_in_parallel_and_copy_each_build() {
        let options = SimOptions {
            hosts: 4,
            copy: 15.0,
            ..options_for(&["-16"], "gaussian:2")
        };
        let mut out = Vec::new();
        let results = run_and_print(&options, 4, 3, &HuntConfig::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let r = &results[0];
        assert_eq!(r.correct, 4, "{text}");
        assert!(
            r.spent.iter().all(|t| t.runs == 4 * t.rounds),
            "{:?}",
            r.spent
        );
        assert!(text.contains("rounds/hunt"), "{text}");
        let costs = options.costs.unwrap();
        let walls: Vec<f64> = r
            .spent
            .iter()
            .map(|t| {
                let per_build = costs.build + 4.0 * 15.0;
                t.builds as f64 * per_build + t.rounds as f64 * costs.per_run()
            })
            .collect();
        let mean = WallSummary::of(&walls).unwrap().mean;
        let row = text.lines().last().unwrap();
        assert!(row.contains(&format_duration(mean)), "{row} vs {mean}");
    }

    #[test]
    fn without_custom_options_the_standard_table_is_all_there_is() {
        let options = SimOptions {
            scenario: Some("one-step".into()),
            commits: Some(40),
            ..SimOptions::default()
        };
        let mut out = Vec::new();
        run_and_print(&options, 2, 1, &HuntConfig::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(text.lines().next().unwrap(), table_header());
        let none = SimOptions {
            scenario: Some("no such".into()),
            ..SimOptions::default()
        };
        let err = run_and_print(&none, 1, 1, &HuntConfig::default(), &mut Vec::new());
        assert!(err.unwrap_err().to_string().contains("--scenario"));
    }
}
