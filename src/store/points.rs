//! The series read from the stored runs: one point per night, commit and
//! series, the commit's median throughput over the median of the
//! reference measured beside it that night.
//!
//! The ratio is what the change-point test reads: a night on which the
//! machine was slow slows the reference as much as the commit, and the
//! ratio stays where it was.

use super::{Night, Role, RunRow};
use crate::core::stats::median_of;
use std::collections::BTreeMap;

/// One commit measured one night in one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub night: i64,
    /// The night's clock.
    pub clock: i64,
    pub commit: String,
    pub subject: String,
    /// When the commit landed.
    pub committed: i64,
    pub series: String,
    /// Median tps of the commit's runs.
    pub tps: f64,
    /// Median tps of the reference's runs paired with them.
    pub reference_tps: f64,
    /// `tps / reference_tps`.
    pub ratio: f64,
    /// Median average latency of the commit's runs, when printed.
    pub latency_ms: Option<f64>,
}

/// The points of `series` (or of every series), in the order the nights
/// ran and, within a night, the order its commits landed. A commit needs a
/// usable run of its own and of the reference beside it to make a point.
pub fn points(nights: &[Night], runs: &[RunRow], series: Option<&str>) -> Vec<Point> {
    // (night, series, candidate commit) -> rounds; the reference runs of
    // a round pair with the candidate of the same round.
    let mut by_round: BTreeMap<(i64, &str, u32), [Option<&RunRow>; 2]> = BTreeMap::new();
    for run in runs.iter().filter(|r| series.is_none_or(|s| r.series == s)) {
        let slot = match run.role {
            Role::Candidate => 0,
            Role::Reference => 1,
        };
        by_round
            .entry((run.night, run.series.as_str(), run.round))
            .or_default()[slot] = Some(run);
    }
    let mut out = Vec::new();
    for night in nights {
        let names: Vec<&str> = {
            let mut names: Vec<&str> = by_round
                .keys()
                .filter(|k| k.0 == night.id)
                .map(|k| k.1)
                .collect();
            names.dedup();
            names
        };
        for commit in &night.commits {
            for name in &names {
                let pairs: Vec<(&RunRow, &RunRow)> = by_round
                    .range((night.id, *name, 0)..=(night.id, *name, u32::MAX))
                    .filter_map(|(_, [c, r])| Some(((*c)?, (*r)?)))
                    .filter(|(c, _)| c.commit == commit.id)
                    .collect();
                let usable = |r: &RunRow| r.tps.filter(|t| t.is_finite() && *t > 0.0);
                let tps: Vec<f64> = pairs.iter().filter_map(|(c, _)| usable(c)).collect();
                let reference: Vec<f64> = pairs.iter().filter_map(|(_, r)| usable(r)).collect();
                let (Some(tps), Some(reference_tps)) = (median_of(&tps), median_of(&reference))
                else {
                    continue;
                };
                let latency: Vec<f64> =
                    pairs.iter().filter_map(|(c, _)| c.latency_avg_ms).collect();
                out.push(Point {
                    night: night.id,
                    clock: night.clock,
                    commit: commit.id.clone(),
                    subject: commit.subject.clone(),
                    committed: commit.committed,
                    series: name.to_string(),
                    tps,
                    reference_tps,
                    ratio: tps / reference_tps,
                    latency_ms: median_of(&latency),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NightCommit, NightStatus};

    fn run(night: i64, commit: &str, round: u32, role: Role, tps: f64) -> RunRow {
        RunRow {
            night,
            commit: commit.into(),
            series: "p/c8".into(),
            profile: "p".into(),
            clients: 8,
            host: None,
            role,
            round,
            tps: Some(tps),
            latency_avg_ms: None,
            latency_p50_ms: None,
            latency_p95_ms: None,
            latency_p99_ms: None,
            failed: None,
            started: 0,
            seconds: 1.0,
            placement: None,
            machine: None,
        }
    }

    #[test]
    fn a_point_is_the_commit_over_the_reference_beside_it() {
        let commit = |id: &str| NightCommit {
            id: id.into(),
            subject: String::new(),
            committed: 0,
        };
        let night = Night {
            id: 1,
            clock: 86_400,
            branch: "master".into(),
            tip: "b".into(),
            status: NightStatus::Done,
            reason: None,
            reference: "r".into(),
            commits: vec![commit("a"), commit("b")],
        };
        let runs = vec![
            run(1, "a", 0, Role::Candidate, 100.0),
            run(1, "r", 0, Role::Reference, 50.0),
            run(1, "a", 1, Role::Candidate, 102.0),
            run(1, "r", 1, Role::Reference, 50.0),
            run(1, "b", 2, Role::Candidate, 90.0),
            run(1, "r", 2, Role::Reference, 45.0),
            // A candidate whose reference run was never made: no point.
            run(1, "b", 3, Role::Candidate, 10.0),
        ];
        let found = points(&[night], &runs, None);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].commit, "a");
        assert!((found[0].ratio - 2.02).abs() < 1e-9, "{found:?}");
        assert!((found[1].ratio - 2.0).abs() < 1e-9, "{found:?}");
        assert!(points(&[], &runs, None).is_empty());
    }
}
