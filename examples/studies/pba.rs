//! A study of probabilistic bisection for one step, against the simulator.
//!
//! The hunt judges each candidate afresh, with its own sequential test, and
//! so spends more runs than bisecting by hand with a median of 3. The
//! alternative studied here keeps a posterior over where the step is
//! (uniform at first) and updates it with every run: a run of commit `m`
//! that looks like the bad level moves mass onto positions at or before
//! `m`, one that looks good onto those after. The next run goes to the
//! posterior's median, and the search ends when one position holds all
//! but `epsilon` of the mass. The levels a run is set against are the
//! endpoints' runs made nearest to it in time (a reference run of an end
//! every few runs), so a wandering machine is followed; the likelihood is
//! Student's t with 4 degrees of freedom, so a wild run cannot decide
//! alone. It handles one step and buildable commits only, and is not a
//! hunt: it is kept with the studies in `examples/` to measure what such a search would
//! cost (`cargo run --release --example study_pba`).

use pgbisect::core::stats::robust_log_sigma;
use pgbisect::engine::simulate::{History, Scenario, ScenarioResult, SimLab, draw_history};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Knobs of the study.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PbaConfig {
    /// Posterior mass allowed outside the answer.
    pub epsilon: f64,
    /// A reference run of an endpoint (alternating) every this many runs.
    pub reference_every: usize,
    /// Endpoint runs of each side nearest in time that set a run's levels.
    pub window: usize,
    /// Runs before the search gives up.
    pub max_runs: usize,
    /// Runs of the answer and of its parent before the search may stop:
    /// one wild run in the bad level's band must not decide.
    pub min_runs: usize,
    /// Smallest drop worth hunting (a fraction).
    pub threshold: f64,
}

impl Default for PbaConfig {
    fn default() -> Self {
        PbaConfig {
            epsilon: 0.0001,
            reference_every: 5,
            window: 5,
            max_runs: 400,
            min_runs: 3,
            threshold: 0.05,
        }
    }
}

/// What the study search found and spent.
#[derive(Debug, Clone, PartialEq)]
pub struct PbaOutcome {
    /// `Some(Some(k))` a first bad position; `Some(None)` no regression;
    /// `None` undecided at the run cap.
    pub answer: Option<Option<usize>>,
    pub runs: usize,
    /// Distinct commits measured.
    pub builds: usize,
    /// Rounds of runs, one run on every host at once (runs, on one host).
    pub rounds: usize,
}

/// One run: when, which position, log throughput.
#[derive(Debug, Clone, Copy)]
struct Obs {
    at: usize,
    pos: usize,
    y: f64,
}

/// Runs the probabilistic bisection on one history, one run at a time.
pub fn pba_bisect(history: &History, lab: &mut SimLab, cfg: &PbaConfig) -> PbaOutcome {
    pba_rounds(history, lab, cfg, Rounds::ONE_HOST)
}

/// How the runs of a search are made over several hosts: a round is one
/// run on every host at once, and the candidates of a round share its
/// hosts (one candidate: every host measures it; several: the range is
/// split at as many quantiles of the posterior, a k-ary search).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rounds {
    pub hosts: usize,
    /// Distinct candidates a round measures (at most `hosts`).
    pub candidates: usize,
}

impl Rounds {
    /// One machine, one run at a time.
    pub const ONE_HOST: Rounds = Rounds {
        hosts: 1,
        candidates: 1,
    };
}

/// Runs the probabilistic bisection on one history in rounds of
/// `rounds.hosts` runs; [`PbaOutcome::rounds`] counts them.
pub fn pba_rounds(
    history: &History,
    lab: &mut SimLab,
    cfg: &PbaConfig,
    rounds: Rounds,
) -> PbaOutcome {
    let n = history.len;
    let hosts = rounds.hosts.max(1);
    let mut search = Search {
        obs: Vec::new(),
        rounds: 0,
        hosts,
    };
    search.batch(&[0, n, 0, n, 0, n], history, lab);
    // The drop must be clear before the search (a Welch-like z on the log
    // means of the two ends, at most 10 runs a side); a drop ruled out
    // above half the threshold is no regression.
    loop {
        let (d, se) = endpoint_drop(&search.obs, n);
        if d > 3.5 * se {
            break;
        }
        if d + 3.5 * se < -(1.0 - cfg.threshold / 2.0).ln() {
            return search.finish(Some(None));
        }
        if search.obs.len() >= 20 {
            return search.finish(None);
        }
        let pairs: Vec<usize> = (0..hosts.div_ceil(2)).flat_map(|_| [0, n]).collect();
        search.batch(&pairs, history, lab);
    }
    let mut next_end = 0;
    while search.obs.len() < cfg.max_runs {
        let posterior = posterior(&search.obs, n, cfg);
        let mut planned = round_positions(&posterior, &search.obs, rounds);
        if let Some((k, p)) = posterior
            .iter()
            .enumerate()
            .skip(1)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, p)| (k, *p))
            && p >= 1.0 - cfg.epsilon
        {
            let (answer, parent) = (runs_at(&search.obs, k), runs_at(&search.obs, k - 1));
            if answer >= cfg.min_runs && parent >= cfg.min_runs {
                return search.finish(Some(Some(k)));
            }
            let first = if answer <= parent { k } else { k - 1 };
            let other = if first == k { k - 1 } else { k };
            planned = (0..hosts)
                .map(|i| if i % 2 == 0 { first } else { other })
                .collect();
        }
        for (i, pos) in planned.iter_mut().enumerate() {
            if (search.obs.len() + i).is_multiple_of(cfg.reference_every) {
                next_end = if next_end == 0 { n } else { 0 };
                *pos = next_end;
            }
        }
        search.batch(&planned, history, lab);
    }
    search.finish(None)
}

/// Runs made so far and the rounds they took.
struct Search {
    obs: Vec<Obs>,
    rounds: usize,
    hosts: usize,
}

impl Search {
    /// Measures `positions`, in as many rounds as the hosts need.
    fn batch(&mut self, positions: &[usize], history: &History, lab: &mut SimLab) {
        for &pos in positions {
            let y = lab.draw(history.level(pos)).ln();
            let at = self.obs.len();
            self.obs.push(Obs { at, pos, y });
        }
        self.rounds += positions.len().div_ceil(self.hosts);
    }

    fn finish(&self, answer: Option<Option<usize>>) -> PbaOutcome {
        let mut positions: Vec<usize> = self.obs.iter().map(|o| o.pos).collect();
        positions.sort_unstable();
        positions.dedup();
        PbaOutcome {
            answer,
            runs: self.obs.len(),
            builds: positions.len(),
            rounds: self.rounds,
        }
    }
}

fn runs_at(obs: &[Obs], pos: usize) -> usize {
    obs.iter().filter(|o| o.pos == pos).count()
}

/// The candidates of one round, a host each: with one candidate, the
/// posterior's median ([`next_position`]) on every host; with `k`, the
/// positions whose "bad from here on" mass is nearest the quantiles
/// 1/(k+1) .. k/(k+1) of the posterior, the hosts shared among them in
/// turn. (Nearest, not the first to reach it: a run of a commit at or
/// after all the mass says nothing.)
fn round_positions(posterior: &[f64], obs: &[Obs], rounds: Rounds) -> Vec<usize> {
    let k = rounds.candidates.clamp(1, rounds.hosts.max(1));
    let targets: Vec<usize> = if k == 1 {
        vec![next_position(posterior, obs)]
    } else {
        let n = posterior.len() - 1;
        let mut cumulative = Vec::with_capacity(n);
        let mut sum = 0.0;
        for p in &posterior[1..n.max(1)] {
            sum += p;
            cumulative.push(sum);
        }
        (1..=k)
            .map(|j| {
                let q = j as f64 / (k + 1) as f64;
                (1..n.max(2))
                    .min_by(|a, b| {
                        (cumulative[a - 1] - q)
                            .abs()
                            .total_cmp(&(cumulative[b - 1] - q).abs())
                    })
                    .unwrap_or(1)
            })
            .collect()
    };
    (0..rounds.hosts.max(1))
        .map(|i| targets[i % targets.len()])
        .collect()
}

/// The drop from good to bad in log throughput, and its standard error.
fn endpoint_drop(obs: &[Obs], n: usize) -> (f64, f64) {
    let side = |pos: usize| {
        let v: Vec<f64> = obs.iter().filter(|o| o.pos == pos).map(|o| o.y).collect();
        let k = v.len() as f64;
        let mean = v.iter().sum::<f64>() / k;
        let var = v.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (k - 1.0).max(1.0);
        (mean, var / k)
    };
    let ((g, vg), (b, vb)) = (side(0), side(n));
    (g - b, (vg + vb).sqrt())
}

/// The commit to measure next: of the posterior's median position `m` and
/// the one before it, the one whose "bad from here on" mass is nearer one
/// half, or, when both are as far (one position holds nearly all the mass),
/// the one with fewer runs: the answer's parent must be seen good-like too.
fn next_position(posterior: &[f64], obs: &[Obs]) -> usize {
    let m = median_position(posterior);
    let at_or_before = |pos: usize| posterior[1..=pos].iter().sum::<f64>();
    let score = |pos: usize| (at_or_before(pos) - 0.5).abs() + 0.01 * runs_at(obs, pos) as f64;
    if m > 1 && score(m - 1) < score(m) {
        m - 1
    } else {
        m
    }
}

/// The first position `m` (1..n-1) at which
/// the posterior's mass on `k <= m` reaches one half.
fn median_position(posterior: &[f64]) -> usize {
    let n = posterior.len() - 1;
    let mut cumulative = 0.0;
    for (m, p) in posterior.iter().enumerate().skip(1) {
        cumulative += p;
        if cumulative >= 0.5 {
            return m.min(n - 1).max(1);
        }
    }
    (n - 1).max(1)
}

/// The posterior over the first bad position k (1..=n; index 0 unused),
/// from a uniform prior and every candidate run, each set against the
/// endpoints' runs nearest to it in time.
fn posterior(obs: &[Obs], n: usize, cfg: &PbaConfig) -> Vec<f64> {
    let good: Vec<Obs> = obs.iter().copied().filter(|o| o.pos == 0).collect();
    let bad: Vec<Obs> = obs.iter().copied().filter(|o| o.pos == n).collect();
    let sigma = noise_sigma(obs);
    // log P(runs | k): a run at m is bad-like for k <= m, good-like after.
    // Accumulate per m the log-likelihood difference, then sweep.
    let mut at_or_before = vec![0.0; n + 2];
    let mut after = vec![0.0; n + 2];
    for o in obs.iter().filter(|o| o.pos != 0 && o.pos != n) {
        let g = nearest_level(&good, o.at, cfg.window);
        let b = nearest_level(&bad, o.at, cfg.window);
        at_or_before[o.pos] += log_density((o.y - b) / sigma);
        after[o.pos] += log_density((o.y - g) / sigma);
    }
    // log L(k) = sum over runs at m >= k of bad-like + at m < k of good-like.
    let mut log_l = vec![f64::NEG_INFINITY; n + 1];
    let total_bad: f64 = at_or_before.iter().sum();
    let (mut bad_from_k, mut good_below_k) = (total_bad, 0.0);
    for (k, slot) in log_l.iter_mut().enumerate().skip(1) {
        // Runs at m = k-1 move from "bad-like" (m >= k-1) to "good-like".
        bad_from_k -= at_or_before[k - 1];
        good_below_k += after[k - 1];
        *slot = bad_from_k + good_below_k;
    }
    let max = log_l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut post: Vec<f64> = log_l.iter().map(|l| (l - max).exp()).collect();
    post[0] = 0.0;
    let sum: f64 = post.iter().sum();
    post.iter_mut().for_each(|p| *p /= sum);
    post
}

/// The log-level of an endpoint around time `at`: the median of its
/// `window` runs nearest in time (a median, so one wild run of an end does
/// not move the level every candidate is set against).
fn nearest_level(end: &[Obs], at: usize, window: usize) -> f64 {
    let mut by_distance: Vec<&Obs> = end.iter().collect();
    by_distance.sort_by_key(|o| o.at.abs_diff(at));
    let near: Vec<f64> = by_distance.iter().take(window).map(|o| o.y).collect();
    pgbisect::core::stats::median(&near)
}

/// The run-to-run spread from successive runs of each position, made
/// cautious while few runs exist, and never below 0.2%.
fn noise_sigma(obs: &[Obs]) -> f64 {
    let mut groups: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for o in obs {
        groups.entry(o.pos).or_default().push(o.y.exp());
    }
    let series: Vec<&[f64]> = groups.values().map(Vec::as_slice).collect();
    robust_log_sigma(&series).map_or(0.05, |e| e.cautious_sigma().max(0.002))
}

/// Log density of a run `z` spreads from a level: normal, mixed with a
/// 5% chance of a wild run anywhere within 10 spreads either side, so a
/// wild run says almost nothing about which level it came from.
fn log_density(z: f64) -> f64 {
    let normal = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (0.95 * normal + 0.05 / 20.0).ln()
}

/// Runs `search` on the histories `evaluate` draws for this scenario and
/// seed, each with its own noise; each outcome with the history's first
/// step. `None` for a scenario the study cannot model (other than one
/// step, or with unbuildable commits).
pub fn on_histories(
    scenario: &Scenario,
    trials: usize,
    seed: u64,
    mut search: impl FnMut(&History, &mut SimLab) -> PbaOutcome,
) -> Option<Vec<(PbaOutcome, Option<usize>)>> {
    if scenario.steps.len() != 1 || scenario.unbuildable > 0.0 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut outcomes = Vec::with_capacity(trials);
    for trial in 0..trials {
        let history = draw_history(scenario, &mut rng);
        let trial_seed = seed.wrapping_mul(1_000_003).wrapping_add(trial as u64);
        let mut lab = SimLab::new(history.clone(), scenario.noise.clone(), trial_seed ^ 0xba);
        let out = search(&history, &mut lab);
        outcomes.push((out, history.steps.first().map(|s| s.0)));
    }
    Some(outcomes)
}

/// Runs the study search on the same histories `evaluate` draws for this
/// scenario and seed, and prints a row beside the by-hand method's runs.
/// `None` for a scenario it cannot model (other than one step, or with
/// unbuildable commits).
pub fn study_row(
    scenario: &Scenario,
    trials: usize,
    seed: u64,
    cfg: &PbaConfig,
    naive: &ScenarioResult,
) -> Option<String> {
    let outcomes = on_histories(scenario, trials, seed, |h, lab| pba_bisect(h, lab, cfg))?;
    let (mut correct, mut wrong, mut runs, mut builds) = (0, 0, 0, 0);
    for (out, first_step) in &outcomes {
        match out.answer {
            Some(Some(k)) if *first_step == Some(k) => correct += 1,
            Some(_) => wrong += 1,
            None => {}
        }
        runs += out.runs;
        builds += out.builds;
    }
    let n = trials.max(1) as f64;
    let pct = |c: usize| 100.0 * c as f64 / n;
    let mean_runs = runs as f64 / n;
    Some(format!(
        "{:<20} {:>6} {:>7.1}% {:>5.1}% {:>7.1}% {:>9.1} {:>9.1} {:>10.1} {:>6.2}x",
        scenario.name,
        trials,
        pct(correct),
        pct(wrong),
        pct(trials - correct - wrong),
        mean_runs,
        builds as f64 / n,
        naive.naive_mean_runs,
        mean_runs / naive.naive_mean_runs.max(1e-9)
    ))
}

/// Column titles for [`study_row`]: the standard table's first seven
/// (72 columns), then the by-hand runs and the ratio.
pub fn study_header() -> String {
    let standard = pgbisect::engine::simulate::table_header();
    let first_seven = standard.get(..72).unwrap_or(&standard);
    format!("{first_seven} {:>10} {:>7}", "naive runs", "ratio")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgbisect::engine::simulate::NoiseModel;
    use std::collections::BTreeSet;

    fn history(step: usize) -> History {
        History {
            len: 100,
            steps: vec![(step, 0.9)],
            unbuildable: BTreeSet::new(),
            base_tps: 1000.0,
        }
    }

    #[test]
    fn finds_the_step_in_quiet_and_noisy_runs() {
        for (cv, seed) in [(0.002, 1), (0.03, 2), (0.03, 3)] {
            let h = history(37);
            let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv }, seed);
            let out = pba_bisect(&h, &mut lab, &PbaConfig::default());
            assert_eq!(out.answer, Some(Some(37)), "cv {cv}: {out:?}");
            assert!(out.builds <= out.runs);
        }
    }

    #[test]
    fn a_history_without_a_drop_is_no_regression() {
        let h = History {
            steps: vec![],
            ..history(1)
        };
        let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.002 }, 4);
        let out = pba_bisect(&h, &mut lab, &PbaConfig::default());
        assert_eq!(out.answer, Some(None));
        assert_eq!(out.runs, 6);
    }

    #[test]
    fn the_posterior_follows_the_runs() {
        // Good at 0, bad at 10 (log levels 0 and -0.1); runs at 4 (good)
        // and 5 (bad) put the mass on k = 5.
        let mut obs = vec![];
        for (i, (pos, y)) in [
            (0, 0.0),
            (10, -0.1),
            (0, 0.001),
            (10, -0.101),
            (4, 0.0),
            (5, -0.1),
        ]
        .iter()
        .enumerate()
        {
            obs.push(Obs {
                at: i,
                pos: *pos,
                y: *y,
            });
        }
        for _ in 0..3 {
            obs.extend_from_within(4..6);
        }
        let post = posterior(&obs, 10, &PbaConfig::default());
        assert!((post.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let best = (1..=10)
            .max_by(|a, b| post[*a].total_cmp(&post[*b]))
            .unwrap();
        assert_eq!(best, 5, "{post:?}");
        assert_eq!(median_position(&post), 5);
    }
}
