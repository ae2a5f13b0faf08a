//! The hunt against simulated histories.
//!
//! A bisection method can only be trusted when it has been seen to be right
//! on many histories whose truth is known. [`SimLab`] is a [`Lab`](crate::lab::Lab) whose
//! commits have known throughput levels (one or more steps down at known
//! positions) and whose runs carry noise drawn from a chosen model: normal,
//! with outliers, bimodal, heavy-tailed, drifting with time. [`evaluate`]
//! runs the real hunt many times on fresh random histories and counts how
//! often it names exactly the true culprits, beside the way people do it by
//! hand (median of 3 runs against a threshold halfway between the
//! endpoints).

use crate::engine::hunt::{Hunt, HuntConfig};
use crate::progress::Silent;
use crate::report::findings::HuntOutcome;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub mod journal_noise;
pub mod options;
pub mod wall;

pub use crate::lab::sim::{History, NoiseModel, SimLab};
use crate::lab::sim::{hosts, sim_pos};

/// A family of random histories to evaluate on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub commits: usize,
    /// Factors of the steps; their positions are drawn per trial.
    pub steps: Vec<f64>,
    pub noise: NoiseModel,
    /// Fraction of commits that do not build.
    pub unbuildable: f64,
}

/// The scenarios `pgbisect simulate` runs by default.
pub fn standard_scenarios() -> Vec<Scenario> {
    let s = |name: &str, steps: Vec<f64>, noise| Scenario {
        name: name.into(),
        commits: 400,
        steps,
        noise,
        unbuildable: 0.0,
    };
    let gauss = NoiseModel::Gaussian { cv: 0.03 };
    vec![
        s("one-step-gaussian", vec![0.90], gauss.clone()),
        s("no-regression", vec![], gauss.clone()),
        s("two-steps", vec![0.90, 0.90], gauss.clone()),
        s(
            "outliers",
            vec![0.90],
            NoiseModel::Outliers {
                cv: 0.03,
                p: 0.05,
                low: 0.5,
                high: 0.85,
            },
        ),
        s(
            "heavy-tail",
            vec![0.90],
            NoiseModel::HeavyTail { cv: 0.03, df: 3.0 },
        ),
        s(
            "bimodal",
            vec![0.90],
            NoiseModel::Bimodal {
                cv: 0.02,
                p: 0.25,
                factor: 0.85,
            },
        ),
        s(
            "drift",
            vec![0.90],
            NoiseModel::Drift {
                cv: 0.02,
                step: 0.005,
                bound: 0.06,
            },
        ),
        s(
            "strong-drift",
            vec![0.90],
            NoiseModel::Drift {
                cv: 0.03,
                step: 0.02,
                bound: 0.20,
            },
        ),
        Scenario {
            unbuildable: 0.1,
            ..s("unbuildable-10pct", vec![0.90], gauss.clone())
        },
    ]
}

/// How one hunt's answer compares with the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grade {
    /// Exactly the true culprits (or no-regression when there is none).
    Correct,
    /// Named a commit that is not a true culprit, or said no-regression
    /// when there was one, or blamed a commit when there was none.
    Wrong,
    /// Named no wrong commit but missed some, or gave no verdict.
    Inconclusive,
}

/// Results of many trials of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub trials: usize,
    pub correct: usize,
    pub wrong: usize,
    pub inconclusive: usize,
    pub mean_runs: f64,
    pub mean_builds: f64,
    /// The by-hand method on the same histories and noise.
    pub naive_correct: usize,
    pub naive_mean_runs: f64,
    /// What each trial spent, for the wall-time model.
    #[serde(skip)]
    pub spent: Vec<TrialSpent>,
    /// Hosts each hunt measured on (one: this machine alone).
    #[serde(skip)]
    pub hosts: usize,
    /// Rounds of runs a hunt made on average: its runs on one host.
    #[serde(skip)]
    pub mean_rounds: f64,
    /// Seconds to copy a build to one host, when there are several.
    #[serde(skip)]
    pub copy_seconds: f64,
}

/// Builds and measured runs of one trial, by both methods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrialSpent {
    pub builds: u64,
    pub runs: u64,
    /// Rounds of runs, one run a host each, made at once: the runs
    /// themselves on one host.
    pub rounds: u64,
    pub naive_builds: u64,
    pub naive_runs: u64,
}

/// What the by-hand method found and spent on one history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NaiveOutcome {
    /// The first bad position (`None` for "no regression").
    pub first_bad: Option<usize>,
    pub runs: usize,
    /// Commits built: the endpoints and every probe.
    pub builds: usize,
}

/// Draws one history of a scenario.
pub fn draw_history(scenario: &Scenario, rng: &mut StdRng) -> History {
    let mut positions = BTreeSet::new();
    while positions.len() < scenario.steps.len() {
        positions.insert(rng.random_range(1..=scenario.commits));
    }
    let steps = positions
        .iter()
        .copied()
        .zip(scenario.steps.iter().copied())
        .collect();
    let unbuildable = (1..scenario.commits)
        .filter(|p| !positions.contains(p) && rng.random_bool(scenario.unbuildable))
        .collect();
    History {
        len: scenario.commits,
        steps,
        unbuildable,
        base_tps: 20_000.0,
    }
}

/// Grades a hunt's culprits against the truth.
pub fn grade(history: &History, outcome: HuntOutcome, culprits: &[usize]) -> Grade {
    let truth: BTreeSet<usize> = history.steps.iter().map(|(p, _)| *p).collect();
    let found: BTreeSet<usize> = culprits.iter().copied().collect();
    if !found.is_subset(&truth) {
        return Grade::Wrong;
    }
    match outcome {
        HuntOutcome::NoRegression if truth.is_empty() => Grade::Correct,
        HuntOutcome::NoRegression => Grade::Wrong,
        _ if !truth.is_empty() && found == truth => Grade::Correct,
        _ => Grade::Inconclusive,
    }
}

/// Runs `trials` hunts of `scenario` and the naive method on each history.
pub fn evaluate(
    scenario: &Scenario,
    trials: usize,
    seed: u64,
    config: &HuntConfig,
) -> anyhow::Result<ScenarioResult> {
    evaluate_on_hosts(scenario, trials, seed, config, 1)
}

/// Hosts' speeds are spread over this much either side of the history's
/// levels in `simulate --hosts`.
pub const HOST_SPEED_SPREAD: f64 = 0.03;

/// Hosts' noise is spread over this share either side of the scenario's.
pub const HOST_NOISE_SPREAD: f64 = 0.2;

/// One hunt of `history` on `hosts` simulated hosts (see
/// [`hosts::HostModel::spread`]); with one, on a [`SimLab`]. Returns the
/// report and the rounds of runs it made.
fn hunt_on_hosts(
    history: &History,
    noise: &NoiseModel,
    config: &HuntConfig,
    hosts: usize,
    seed: u64,
) -> anyhow::Result<(crate::report::findings::HuntReport, u64)> {
    let mut silent = Silent;
    if hosts <= 1 {
        let mut lab = SimLab::new(history.clone(), noise.clone(), seed);
        let report = Hunt::new(*config, history.commits(), &mut lab, &mut silent).run()?;
        let rounds = report.totals.runs;
        return Ok((report, rounds));
    }
    let models = hosts::HostModel::spread(hosts, HOST_SPEED_SPREAD, HOST_NOISE_SPREAD);
    let mut lab = hosts::HostsLab::new(history, noise, &models, seed);
    let report = Hunt::new(*config, history.commits(), &mut lab, &mut silent).run()?;
    Ok((report, lab.rounds))
}

/// [`evaluate`] with every hunt measuring on `hosts` simulated hosts.
pub fn evaluate_on_hosts(
    scenario: &Scenario,
    trials: usize,
    seed: u64,
    config: &HuntConfig,
    hosts: usize,
) -> anyhow::Result<ScenarioResult> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut result = ScenarioResult {
        scenario: scenario.clone(),
        trials,
        correct: 0,
        wrong: 0,
        inconclusive: 0,
        mean_runs: 0.0,
        mean_builds: 0.0,
        naive_correct: 0,
        naive_mean_runs: 0.0,
        spent: Vec::with_capacity(trials),
        hosts: hosts.max(1),
        mean_rounds: 0.0,
        copy_seconds: 0.0,
    };
    for trial in 0..trials {
        let history = draw_history(scenario, &mut rng);
        let trial_seed = seed.wrapping_mul(1_000_003).wrapping_add(trial as u64);
        let (report, rounds) = hunt_on_hosts(&history, &scenario.noise, config, hosts, trial_seed)?;
        let culprits: Vec<usize> = report
            .culprits
            .iter()
            .filter_map(|c| sim_pos(&c.commit))
            .collect();
        match grade(&history, report.outcome, &culprits) {
            Grade::Correct => result.correct += 1,
            Grade::Wrong => result.wrong += 1,
            Grade::Inconclusive => result.inconclusive += 1,
        }
        result.mean_runs += report.totals.runs as f64;
        result.mean_builds += report.totals.builds as f64;
        result.mean_rounds += rounds as f64;

        let mut naive_lab =
            SimLab::new(history.clone(), scenario.noise.clone(), trial_seed ^ 0x5eed);
        let naive = naive_bisect(&history, &mut naive_lab);
        let naive_truth = history.steps.first().map(|(p, _)| *p);
        if naive.first_bad == naive_truth && history.steps.len() <= 1 {
            result.naive_correct += 1;
        }
        result.naive_mean_runs += naive.runs as f64;
        result.spent.push(TrialSpent {
            builds: report.totals.builds,
            runs: report.totals.runs,
            rounds,
            naive_builds: naive.builds as u64,
            naive_runs: naive.runs as u64,
        });
    }
    let n = trials.max(1) as f64;
    result.mean_runs /= n;
    result.mean_builds /= n;
    result.naive_mean_runs /= n;
    result.mean_rounds /= n;
    Ok(result)
}

/// The way it is done by hand: median of 3 runs of each endpoint, a
/// threshold halfway between them, then `git bisect` with the median of 3
/// runs per commit (unbuildable commits skipped by moving to a neighbour).
/// Every commit measured is a build: the endpoints and each probe.
pub fn naive_bisect(history: &History, lab: &mut SimLab) -> NaiveOutcome {
    let mut runs = 0;
    let mut median3 = |pos: usize, lab: &mut SimLab| {
        let mut v: Vec<f64> = (0..3).map(|_| lab.draw(history.level(pos))).collect();
        runs += 3;
        v.sort_by(f64::total_cmp);
        v[1]
    };
    let good = median3(0, lab);
    let bad = median3(history.len, lab);
    let mut builds = 2;
    if bad >= good {
        return NaiveOutcome {
            first_bad: None,
            runs,
            builds,
        };
    }
    let threshold = (good + bad) / 2.0;
    let (mut lo, mut hi) = (0, history.len);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let probe = (mid..hi)
            .chain((lo + 1..mid).rev())
            .find(|p| !history.unbuildable.contains(p));
        let Some(p) = probe else { break };
        builds += 1;
        if median3(p, lab) > threshold {
            lo = p;
        } else {
            hi = p;
        }
    }
    NaiveOutcome {
        first_bad: Some(hi),
        runs,
        builds,
    }
}

/// Column titles for [`table_row`].
pub fn table_header() -> String {
    format!(
        "{:<20} {:>6} {:>8} {:>6} {:>8} {:>9} {:>9} {:>9} {:>10}",
        "scenario",
        "trials",
        "correct",
        "wrong",
        "inconcl",
        "runs/hunt",
        "builds",
        "naive ok",
        "naive runs"
    )
}

/// One line of the evaluation table.
pub fn table_row(r: &ScenarioResult) -> String {
    let pct = |n: usize| 100.0 * n as f64 / r.trials.max(1) as f64;
    let naive = if r.scenario.steps.len() == 1 {
        format!("{:.1}%", pct(r.naive_correct))
    } else {
        "-".to_string()
    };
    format!(
        "{:<20} {:>6} {:>7.1}% {:>5.1}% {:>7.1}% {:>9.1} {:>9.1} {:>9} {:>10.1}",
        r.scenario.name,
        r.trials,
        pct(r.correct),
        pct(r.wrong),
        pct(r.inconclusive),
        r.mean_runs,
        r.mean_builds,
        naive,
        r.naive_mean_runs
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::sim::sim_id;

    #[test]
    fn levels_follow_steps() {
        let h = History {
            len: 10,
            steps: vec![(3, 0.9), (7, 0.5)],
            unbuildable: BTreeSet::new(),
            base_tps: 100.0,
        };
        assert_eq!(h.level(2), 100.0);
        assert!((h.level(3) - 90.0).abs() < 1e-9);
        assert!((h.level(10) - 45.0).abs() < 1e-9);
    }

    #[test]
    fn grading() {
        let h = History {
            len: 10,
            steps: vec![(3, 0.9)],
            unbuildable: BTreeSet::new(),
            base_tps: 100.0,
        };
        assert_eq!(grade(&h, HuntOutcome::CulpritFound, &[3]), Grade::Correct);
        assert_eq!(grade(&h, HuntOutcome::CulpritFound, &[4]), Grade::Wrong);
        assert_eq!(grade(&h, HuntOutcome::NoRegression, &[]), Grade::Wrong);
        assert_eq!(
            grade(&h, HuntOutcome::Inconclusive, &[]),
            Grade::Inconclusive
        );
    }

    #[test]
    fn noiseless_hunt_finds_the_step() {
        let h = History {
            len: 50,
            steps: vec![(17, 0.9)],
            unbuildable: BTreeSet::new(),
            base_tps: 100.0,
        };
        let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.005 }, 1);
        let report = Hunt::new(HuntConfig::default(), h.commits(), &mut lab, &mut Silent)
            .run()
            .unwrap();
        assert_eq!(report.outcome, HuntOutcome::CulpritFound);
        assert_eq!(report.culprits.len(), 1);
        assert_eq!(report.culprits[0].commit, sim_id(17));
    }
}
