//! One look of a hunt's check: the decision knobs it uses and the
//! comparison it makes of two commits' runs.
//!
//! A check looks at its runs after every round, so each look spends only
//! part of the error rate ([`look_decision`]). The endpoints are the
//! first such check, and `--measure auto` asks the same question of the
//! same runs before the hunt starts ([`endpoint_check`]): a measure
//! chosen on a verdict the hunt's own check would not reach sends the hunt
//! to the end of its run cap for nothing.

use super::evidence::{self, Evidence, Spans};
use super::{HuntConfig, Search};
use crate::core::decide::{self, Comparison, DecisionConfig};
use crate::core::stats;
use crate::report::findings::RunSample;

/// The decision knobs for one look of a check that looks after every
/// round: half the error rate a check may spend (a Pocock-like spending),
/// with `noise` (the hunt's so far) as the floor of the runs' spread
/// ([`floored`]).
/// When the noise has shown wild runs (outliers, two modes), a few runs a
/// side can differ by which runs landed in the slow mode, so such checks
/// wait for twice as many runs and spend a quarter of the error rate a
/// look. `decision` is the hunt's, for its measure; `alpha_share` the
/// share of the error rate the check may spend.
pub(super) fn look_decision(
    decision: DecisionConfig,
    noise: Option<stats::NoiseEstimate>,
    alpha_share: f64,
    search: Search,
) -> DecisionConfig {
    let d = DecisionConfig {
        alpha: decision.alpha * alpha_share,
        ..floored(decision, noise)
    };
    let wild = noise.is_some_and(|n| n.differences >= 20 && n.wild_fraction > wild_limit(search));
    if wild {
        DecisionConfig {
            alpha: d.alpha / 4.0,
            min_runs: (2 * d.min_runs).min(d.max_runs),
            ..d
        }
    } else {
        DecisionConfig {
            alpha: d.alpha / 2.0,
            ..d
        }
    }
}

/// `decision` with `noise` (the hunt's so far) as the floor of every
/// comparison's spread ([`DecisionConfig::noise_floor`]), never below the
/// measure's own floor (instruction counts:
/// [`crate::core::counts::NOISE_FLOOR`]).
pub(super) fn floored(
    decision: DecisionConfig,
    noise: Option<stats::NoiseEstimate>,
) -> DecisionConfig {
    DecisionConfig {
        noise_floor: noise.map_or(0.0, |n| n.sigma).max(decision.noise_floor),
        ..decision
    }
}

/// The share of wild differences between successive runs beyond which
/// checks wait for more runs. Under the posterior search, one run in
/// twenty slowed (an outlier the rank tests set aside) does not make
/// checks wait; a second mode does (a quarter of the runs in it makes
/// about 37% of the differences wild). The candidate-by-candidate search
/// keeps the limit it was measured with.
fn wild_limit(search: Search) -> f64 {
    match search {
        Search::Bisect => 0.05,
        Search::Posterior => 0.2,
    }
}

/// Compares the runs of `base` and `new` in `spans` with the knobs `cfg`
/// of one look. While the machine drifts, only runs made side by side are
/// set against each other, pair by pair. Runs of different hosts are
/// never set against each other.
pub(super) fn compare_in(
    evidence: &Evidence,
    (base, new): (usize, usize),
    spans: &Spans,
    cfg: &DecisionConfig,
    threshold: f64,
) -> Comparison {
    if evidence.drifting() {
        return decide::compare_paired(&evidence.pairs_in(base, new, spans), cfg, threshold);
    }
    decide::compare_blocked(
        &evidence::blocks(
            &evidence.samples_in(base, spans),
            &evidence.samples_in(new, spans),
        ),
        cfg,
        threshold,
    )
}

/// What a hunt configured as `cfg` says of its endpoints at its first
/// check, given their runs (good, bad; figures where higher is better,
/// each side oldest first, made interleaved on this machine): the check
/// the hunt makes when these are its first runs, at the level it makes
/// it. `cfg.decision` is before [`crate::core::counts::Measure::decision`]
/// adjusts it to `cfg.measure`, as [`super::Hunt::new`] takes it.
pub fn endpoint_check(cfg: &HuntConfig, (good, bad): (&[f64], &[f64])) -> Comparison {
    let decision = cfg.measure.decision(cfg.decision);
    let mut evidence = Evidence::new(2);
    let mut run = 0;
    for i in 0..good.len().max(bad.len()) {
        for (pos, side) in [good, bad].into_iter().enumerate() {
            if let Some(&figure) = side.get(i) {
                run += 1;
                let host = None;
                evidence.record(
                    pos,
                    RunSample {
                        run,
                        tps: figure,
                        host,
                    },
                );
            }
        }
    }
    let look = look_decision(decision, evidence.noise(), 1.0, cfg.search);
    compare_in(
        &evidence,
        (0, 1),
        &Spans::since(0),
        &look,
        decision.threshold,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::Measure;

    fn config(measure: Measure) -> HuntConfig {
        HuntConfig {
            measure,
            decision: DecisionConfig {
                threshold: 0.03,
                ..DecisionConfig::default()
            },
            ..HuntConfig::default()
        }
    }

    #[test]
    fn an_endpoint_check_spends_half_the_error_rate_of_a_single_comparison() {
        // Eight runs a side, 6% apart, in a 4-5% spread: a single
        // comparison at the full level sees the drop, a look of a check
        // does not yet.
        let good = [1000.0, 1040.0, 970.0, 1020.0, 980.0, 1045.0, 960.0, 1010.0];
        let bad: Vec<f64> = good.iter().rev().map(|v| v * 0.94).collect();
        let cfg = config(Measure::Tps);
        let once = decide::compare(&good, &bad, &cfg.decision, cfg.decision.threshold);
        let check = endpoint_check(&cfg, (&good, &bad));
        assert!(
            check.change.low_pct < once.change.low_pct,
            "{check:?} {once:?}"
        );
        assert!(
            check.change.high_pct > once.change.high_pct,
            "{check:?} {once:?}"
        );
        assert_eq!((check.n_base, check.n_new), (8, 8));
        let look = look_decision(cfg.decision, None, 1.0, cfg.search);
        assert_eq!(look.alpha, cfg.decision.alpha / 2.0);
    }

    #[test]
    fn counts_are_checked_with_their_own_floor_and_fewest_runs() {
        let good = [23_390.0, 23_391.0, 23_390.5];
        let bad = [22_840.0, 22_840.5, 22_841.0];
        let c = endpoint_check(&config(Measure::Instructions), (&good, &bad));
        assert_eq!(c.verdict, decide::Verdict::Unchanged, "{c:?}");
        let c = endpoint_check(
            &HuntConfig {
                decision: DecisionConfig {
                    threshold: 0.02,
                    ..DecisionConfig::default()
                },
                ..config(Measure::Instructions)
            },
            (&good, &bad),
        );
        assert_eq!(c.verdict, decide::Verdict::Regressed, "{c:?}");
    }
}
