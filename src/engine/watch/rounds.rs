//! How many pairs of runs a commit gets tonight, series by series.
//!
//! A night's point is the median of a commit's pairs (its run over the
//! reference's). On a quiet machine three pairs put a 5% step several
//! standard errors away from the level before it; on a busy one, whose
//! runs scatter by 5% or more, three pairs cannot, and the step is found
//! nights later or never. So the watcher reads how far a series' pairs
//! of the same commit and night have scattered over the last nights and
//! gives each commit enough pairs that a step of [`STEP`] is three
//! standard errors of the night's point, between `--rounds` and
//! `--max-rounds`. Tonight's runs are not read: a night started again
//! plans the same pairs.

use crate::store::{Role, RunRow};
use std::collections::BTreeMap;

/// The step a night's point must tell apart (a log-ratio of 5%).
pub const STEP: f64 = 0.05;

/// Standard errors of the night's point a step should be.
const SEPARATION: f64 = 3.0;

/// Nights back read for the spread.
const NIGHTS_READ: usize = 10;

/// Differences of pairs needed before the spread is trusted.
const LEAST_DIFFERENCES: usize = 10;

/// How the pairs of a series scatter: the standard deviation of one
/// pair's log-ratio, and the number of differences it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub sigma: f64,
    pub differences: usize,
}

/// One pair of runs of a series: the commit's and the reference's tps
/// (a run that failed: none).
#[derive(Default)]
struct Pair<'a> {
    commit: &'a str,
    reference: Option<f64>,
    candidate: Option<f64>,
}

/// The spread of each series' pairs over the last nights before `night`,
/// for the series with enough of them. Two pairs of one commit on one
/// night differ by chance alone, whatever the commit's level: their
/// differences' median, scaled as for a normal distribution, is the
/// spread, and a wild run moves it little.
pub fn spreads(runs: &[RunRow], night: i64) -> BTreeMap<String, Spread> {
    let mut pairs: BTreeMap<(&str, i64, u32), Pair> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.night < night) {
        let Some(tps) = r.tps.filter(|t| *t > 0.0) else {
            continue;
        };
        let pair = pairs
            .entry((r.series.as_str(), r.night, r.round))
            .or_default();
        match r.role {
            Role::Reference => pair.reference = Some(tps),
            Role::Candidate => {
                pair.commit = r.commit.as_str();
                pair.candidate = Some(tps);
            }
        }
    }
    // (series) -> night -> commit -> log-ratios
    let mut by_series: BTreeMap<&str, BTreeMap<i64, BTreeMap<&str, Vec<f64>>>> = BTreeMap::new();
    for ((series, night, _), pair) in pairs {
        if let (Some(r), Some(c)) = (pair.reference, pair.candidate) {
            by_series
                .entry(series)
                .or_default()
                .entry(night)
                .or_default()
                .entry(pair.commit)
                .or_default()
                .push((c / r).ln());
        }
    }
    by_series
        .into_iter()
        .filter_map(|(series, nights)| {
            let mut differences: Vec<f64> = nights
                .values()
                .rev()
                .take(NIGHTS_READ)
                .flat_map(|commits| commits.values())
                .flat_map(|ratios| {
                    ratios
                        .iter()
                        .enumerate()
                        .flat_map(move |(i, a)| ratios[i + 1..].iter().map(move |b| (a - b).abs()))
                })
                .collect();
            if differences.len() < LEAST_DIFFERENCES {
                return None;
            }
            differences.sort_by(f64::total_cmp);
            let median = differences[differences.len() / 2];
            // |a - b| of two normal draws: its median is 0.6745 * sqrt(2) sigma.
            let sigma = median / (0.6745 * std::f64::consts::SQRT_2);
            Some((
                series.to_string(),
                Spread {
                    sigma,
                    differences: differences.len(),
                },
            ))
        })
        .collect()
}

/// Pairs a commit gets in a series whose pairs scatter by `spread`:
/// enough that [`STEP`] is [`SEPARATION`] standard errors of the median
/// of its pairs, at least `floor`, at most `cap`.
pub fn pairs_for(spread: Option<Spread>, floor: u32, cap: u32) -> u32 {
    let Some(spread) = spread else {
        return floor;
    };
    // The median of n draws has a standard error of about 1.25 sigma / sqrt(n).
    let needed = (SEPARATION * 1.25 * spread.sigma / STEP).powi(2).ceil();
    (needed.min(f64::from(u32::MAX)) as u32).clamp(floor, cap.max(floor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance::run as row;

    /// `nights` nights of one commit each, 3 pairs, the candidate's runs
    /// scattered by `wobble` (a fraction) around a level of its own.
    fn history(nights: i64, wobble: f64) -> Vec<RunRow> {
        let mut rows = Vec::new();
        for n in 1..=nights {
            let level = 1000.0 * (1.0 + 0.2 * (n % 2) as f64);
            for (round, w) in [-1.0, 0.0, 1.0].into_iter().enumerate() {
                let round = round as u32;
                rows.push(row(n, "ref", round, Role::Reference, 1000.0));
                rows.push(row(
                    n,
                    &format!("c{n}"),
                    round,
                    Role::Candidate,
                    level * (1.0 + w * wobble),
                ));
            }
        }
        rows
    }

    #[test]
    fn the_spread_is_of_pairs_within_a_commit_whatever_the_commits_levels() {
        let quiet = spreads(&history(6, 0.01), 100);
        let busy = spreads(&history(6, 0.06), 100);
        let (q, b) = (quiet["default/c8"].sigma, busy["default/c8"].sigma);
        // A commit 20% faster every other night does not count as spread.
        assert!(q < 0.02, "{q}");
        assert!(b > 3.0 * q, "{b} against {q}");
        assert_eq!(quiet["default/c8"].differences, 18);
    }

    #[test]
    fn tonight_and_too_few_pairs_are_not_read() {
        assert!(spreads(&history(6, 0.06), 1).is_empty(), "nights before 1");
        assert!(spreads(&history(3, 0.06), 100).is_empty(), "9 differences");
    }

    #[test]
    fn a_noisier_series_gets_more_pairs_within_its_bounds() {
        let at = |sigma| {
            pairs_for(
                Some(Spread {
                    sigma,
                    differences: 30,
                }),
                3,
                20,
            )
        };
        assert_eq!(at(0.01), 3, "a quiet series keeps the floor");
        assert_eq!(at(0.03), 6);
        assert_eq!(at(0.05), 15);
        assert_eq!(at(0.2), 20, "the cap");
        assert_eq!(pairs_for(None, 3, 20), 3, "no spread read yet");
        assert_eq!(
            pairs_for(
                Some(Spread {
                    sigma: 0.05,
                    differences: 30
                }),
                3,
                3
            ),
            3
        );
    }
}
