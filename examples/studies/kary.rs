//! A study of how a search should use several hosts: every host on one
//! candidate (each decision gathered N times faster, what the hunt does),
//! or the hosts shared among several candidates at once (a k-ary search).
//!
//! The hunt spends a round (one run on every host at once) on one
//! candidate. With many hosts most decisions end in their first round, and
//! what is left is the sequence of steps itself; splitting the range at k
//! points a round could cut the steps by about log(k+1)/log(2), at the
//! price of fewer runs per candidate and k builds per round, made one
//! after another where the hunt builds. Which wins is a question of
//! numbers, so this study runs both on the same histories with the
//! probabilistic bisection of [`crate::pba`] (a posterior over the step's
//! position updated by every run, whatever host or candidate made it),
//! in rounds: with one candidate every host measures the posterior's
//! median; with k, the hosts measure the posterior's k quantiles
//! 1/(k+1) .. k/(k+1) in turn. The hosts are alike here (no offsets): it
//! compares the two ways of spending a round, not the hosts.
//! `cargo run --release --example study_kary -- [--hosts N]`.

use crate::pba::{self, PbaConfig, Rounds};
use pgbisect::engine::simulate::ScenarioResult;
use pgbisect::engine::simulate::wall::{Costs, format_duration, with_copies};
use std::io::Write;

/// One row of the study: a scenario, a host count, candidates a round.
#[derive(Debug, Clone, PartialEq)]
pub struct KaryRow {
    pub rounds: Rounds,
    pub trials: usize,
    pub correct: usize,
    pub wrong: usize,
    pub mean_rounds: f64,
    /// The 90th percentile of the rounds (nearest rank).
    pub p90_rounds: usize,
    pub mean_runs: f64,
    pub mean_builds: f64,
}

impl KaryRow {
    /// Wall time of the mean hunt: builds one after another (each copied
    /// to every host), then rounds that each cost one run.
    pub fn wall_seconds(&self, costs: &Costs, copy: f64) -> f64 {
        let costs = with_copies(costs, self.rounds.hosts, copy);
        self.mean_builds * costs.build + self.mean_rounds * costs.per_run()
    }
}

/// The host counts to study: the one asked for, or 2, 4 and 8.
pub fn host_counts(asked: usize) -> Vec<usize> {
    if asked > 1 {
        vec![asked]
    } else {
        vec![2, 4, 8]
    }
}

/// Candidates a round for `hosts` hosts: 1, 2, 4, ... up to the hosts,
/// and the hosts themselves.
pub fn candidate_counts(hosts: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |k| Some(k * 2))
        .take_while(|k| *k <= hosts)
        .collect();
    if counts.last() != Some(&hosts) {
        counts.push(hosts);
    }
    counts
}

/// The study's rows for one scenario; empty for a scenario it cannot
/// model (see [`pba::on_histories`]).
pub fn study(
    result: &ScenarioResult,
    trials: usize,
    seed: u64,
    cfg: &PbaConfig,
    hosts: usize,
) -> Vec<KaryRow> {
    let mut rows = Vec::new();
    for hosts in host_counts(hosts) {
        for candidates in candidate_counts(hosts) {
            let rounds = Rounds { hosts, candidates };
            let Some(outcomes) = pba::on_histories(&result.scenario, trials, seed, |h, lab| {
                pba::pba_rounds(h, lab, cfg, rounds)
            }) else {
                return Vec::new();
            };
            rows.push(summarize(rounds, &outcomes));
        }
    }
    rows
}

fn summarize(rounds: Rounds, outcomes: &[(pba::PbaOutcome, Option<usize>)]) -> KaryRow {
    let n = outcomes.len().max(1) as f64;
    let correct = outcomes
        .iter()
        .filter(|(o, step)| matches!(o.answer, Some(Some(k)) if *step == Some(k)))
        .count();
    let decided = outcomes.iter().filter(|(o, _)| o.answer.is_some()).count();
    let mut per_hunt: Vec<usize> = outcomes.iter().map(|(o, _)| o.rounds).collect();
    per_hunt.sort_unstable();
    let rank = ((0.9 * per_hunt.len() as f64).ceil() as usize).clamp(1, per_hunt.len().max(1));
    KaryRow {
        rounds,
        trials: outcomes.len(),
        correct,
        wrong: decided - correct,
        mean_rounds: per_hunt.iter().sum::<usize>() as f64 / n,
        p90_rounds: per_hunt.get(rank - 1).copied().unwrap_or(0),
        mean_runs: outcomes.iter().map(|(o, _)| o.runs).sum::<usize>() as f64 / n,
        mean_builds: outcomes.iter().map(|(o, _)| o.builds).sum::<usize>() as f64 / n,
    }
}

/// Prints the study for every scenario it can model, with the wall time
/// of the mean hunt when the wall-time model is given.
pub fn write(
    results: &[ScenarioResult],
    (trials, seed): (usize, u64),
    cfg: &PbaConfig,
    hosts: usize,
    wall: Option<(&Costs, f64)>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "hosts: every host on one candidate, or k candidates a round \
         (study; probabilistic bisection, one step, buildable commits only):"
    )?;
    let wall_title = if wall.is_some() { "  wall mean" } else { "" };
    writeln!(
        out,
        "{:<20} {:>5} {:>5} {:>8} {:>6} {:>7} {:>10} {:>9} {:>9} {:>8}{wall_title}",
        "scenario", "hosts", "k", "correct", "wrong", "inconcl", "rounds", "p90", "runs", "builds"
    )?;
    for r in results {
        for row in study(r, trials, seed, cfg, hosts) {
            let pct = |c: usize| 100.0 * c as f64 / row.trials.max(1) as f64;
            let wall_text = wall
                .map(|(costs, copy)| {
                    format!(" {:>10}", format_duration(row.wall_seconds(costs, copy)))
                })
                .unwrap_or_default();
            writeln!(
                out,
                "{:<20} {:>5} {:>5} {:>7.1}% {:>5.1}% {:>6.1}% {:>10.1} {:>9} {:>9.1} {:>8.1}{wall_text}",
                r.scenario.name,
                row.rounds.hosts,
                row.rounds.candidates,
                pct(row.correct),
                pct(row.wrong),
                pct(row.trials - row.correct - row.wrong),
                row.mean_rounds,
                row.p90_rounds,
                row.mean_runs,
                row.mean_builds,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgbisect::engine::simulate::{History, NoiseModel, SimLab};
    use std::collections::BTreeSet;

    fn history(len: usize, step: usize) -> History {
        History {
            len,
            steps: vec![(step, 0.85)],
            unbuildable: BTreeSet::new(),
            base_tps: 1000.0,
        }
    }

    #[test]
    fn candidates_are_powers_of_two_and_the_hosts() {
        assert_eq!(candidate_counts(1), vec![1]);
        assert_eq!(candidate_counts(4), vec![1, 2, 4]);
        assert_eq!(candidate_counts(6), vec![1, 2, 4, 6]);
        assert_eq!(host_counts(0), vec![2, 4, 8]);
        assert_eq!(host_counts(3), vec![3]);
    }

    #[test]
    fn both_ways_of_using_hosts_find_the_step_in_fewer_rounds_than_runs() {
        for (hosts, candidates) in [(4, 1), (4, 4), (8, 2)] {
            let h = history(2000, 1234);
            let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.02 }, 7);
            let rounds = Rounds { hosts, candidates };
            let out = pba::pba_rounds(&h, &mut lab, &PbaConfig::default(), rounds);
            assert_eq!(out.answer, Some(Some(1234)), "{rounds:?}: {out:?}");
            assert!(out.rounds * hosts >= out.runs, "{rounds:?}: {out:?}");
            assert!(out.rounds < out.runs, "{rounds:?}: {out:?}");
        }
    }

    #[test]
    fn one_host_in_rounds_is_the_search_one_run_at_a_time() {
        let h = history(300, 77);
        let one = |rounds| {
            let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.03 }, 11);
            pba::pba_rounds(&h, &mut lab, &PbaConfig::default(), rounds)
        };
        let a = one(Rounds::ONE_HOST);
        let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.03 }, 11);
        let b = pba::pba_bisect(&h, &mut lab, &PbaConfig::default());
        assert_eq!(a, b);
        assert_eq!(a.rounds, a.runs);
    }

    #[test]
    fn splitting_the_range_spreads_a_rounds_runs_over_distinct_commits() {
        // From a uniform posterior, 3 candidates a round on 3 hosts build
        // more commits per round than one candidate on all three.
        let h = history(1000, 500);
        let builds = |candidates| {
            let mut lab = SimLab::new(h.clone(), NoiseModel::Gaussian { cv: 0.01 }, 5);
            let rounds = Rounds {
                hosts: 3,
                candidates,
            };
            let out = pba::pba_rounds(&h, &mut lab, &PbaConfig::default(), rounds);
            out.builds as f64 / out.rounds as f64
        };
        assert!(builds(3) > builds(1), "{} vs {}", builds(3), builds(1));
    }

    #[test]
    fn the_wall_time_counts_builds_copies_and_rounds() {
        let row = KaryRow {
            rounds: Rounds {
                hosts: 4,
                candidates: 2,
            },
            trials: 1,
            correct: 1,
            wrong: 0,
            mean_rounds: 10.0,
            p90_rounds: 10,
            mean_runs: 40.0,
            mean_builds: 5.0,
        };
        let costs = Costs {
            build: 100.0,
            run: 60.0,
            warmup: 30.0,
            setup: 10.0,
        };
        // 5 x (100 + 4 x 15) + 10 x 100.
        assert!((row.wall_seconds(&costs, 15.0) - 1800.0).abs() < 1e-9);
    }
}
