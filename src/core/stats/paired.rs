//! Statistics of runs paired in time.
//!
//! When the machine's speed wanders over minutes, two commits measured in
//! turn (A, B, A, B ...) differ far less within a round than across the
//! whole stretch: the wander is shared by the two runs of a round and
//! cancels in their ratio. The tools here look only at the ratios of runs
//! made beside each other: the Wilcoxon signed-rank test, and the
//! Hodges-Lehmann estimate (median of the Walsh averages) with its
//! distribution-free interval, the paired counterparts of the rank tools
//! in the parent module.

use super::{Alternative, EXACT_LIMIT, Shift, StatsError, average_ranks, shift_of_sorted};
use statrs::distribution::{ContinuousCDF, Normal};

/// Pairs the runs of two commits made close in time. Both lists hold
/// `(run number, throughput)` in time order; each run is paired with the
/// first unpaired run of the other list at most `max_gap` run numbers
/// away, and runs without such a partner are left out.
pub fn pair_in_time(base: &[(u64, f64)], new: &[(u64, f64)], max_gap: u64) -> Vec<(f64, f64)> {
    let (mut i, mut j) = (0, 0);
    let mut pairs = Vec::new();
    while i < base.len() && j < new.len() {
        let ((run_b, tps_b), (run_n, tps_n)) = (base[i], new[j]);
        if run_b.abs_diff(run_n) <= max_gap {
            pairs.push((tps_b, tps_n));
            i += 1;
            j += 1;
        } else if run_b < run_n {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

/// A Wilcoxon signed-rank test result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignedRank {
    /// Sum of the ranks of the positive differences (scipy's statistic
    /// for one-sided tests).
    pub w_plus: f64,
    pub p_value: f64,
}

/// Wilcoxon signed-rank test of differences `d` against a centre of zero
/// (`Less`: the differences tend to be negative). Zero differences are
/// dropped; the exact distribution is used up to 50 differences without
/// ties, otherwise the normal approximation with tie and continuity
/// corrections (as scipy's `method="approx", correction=True`).
pub fn wilcoxon_signed_rank(d: &[f64], alt: Alternative) -> SignedRank {
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return SignedRank {
            w_plus: 0.0,
            p_value: 1.0,
        };
    }
    let magnitudes: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, tie_term) = average_ranks(&magnitudes);
    let w_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let (less, greater) = if tie_term == 0.0 && n == d.len() && n <= EXACT_LIMIT {
        let dist = SignedRankDistribution::new(n);
        let w = w_plus.round() as usize;
        (dist.cdf_below(w + 1), 1.0 - dist.cdf_below(w))
    } else {
        normal_tails(w_plus, n, tie_term)
    };
    let p_value = match alt {
        Alternative::Less => less,
        Alternative::Greater => greater,
        Alternative::TwoSided => 2.0 * less.min(greater),
    };
    SignedRank {
        w_plus,
        p_value: p_value.clamp(0.0, 1.0),
    }
}

/// P(W+ <= w) and P(W+ >= w) under the normal approximation.
fn normal_tails(w: f64, n: usize, tie_term: f64) -> (f64, f64) {
    let nf = n as f64;
    let mu = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    let Ok(std) = Normal::new(0.0, 1.0) else {
        return (1.0, 1.0);
    };
    if var <= 0.0 {
        return (1.0, 1.0);
    }
    let sd = var.sqrt();
    (
        std.cdf((w - mu + 0.5) / sd),
        1.0 - std.cdf((w - mu - 0.5) / sd),
    )
}

/// The exact null distribution of W+ for n differences: every subset of
/// the ranks 1..=n is equally likely to be the positive ones.
struct SignedRankDistribution {
    /// probabilities of W+ = 0..=n(n+1)/2
    pmf: Vec<f64>,
}

impl SignedRankDistribution {
    fn new(n: usize) -> Self {
        let max = n * (n + 1) / 2;
        let mut counts = vec![0.0; max + 1];
        counts[0] = 1.0;
        for rank in 1..=n {
            for s in (rank..=max).rev() {
                counts[s] += counts[s - rank];
            }
        }
        let total: f64 = counts.iter().sum();
        SignedRankDistribution {
            pmf: counts.iter().map(|c| c / total).collect(),
        }
    }

    /// P(W+ < k).
    fn cdf_below(&self, k: usize) -> f64 {
        self.pmf.iter().take(k).sum::<f64>().min(1.0)
    }
}

/// Hodges-Lehmann change of log throughput over pairs `(base, new)` made
/// side by side: the median of the Walsh averages of the log ratios, with
/// the distribution-free interval from the signed-rank distribution
/// (reported with the confidence it really has).
pub fn paired_shift(pairs: &[(f64, f64)], confidence: f64) -> Result<Shift, StatsError> {
    if pairs.is_empty() {
        return Err(StatsError::Empty);
    }
    for (b, n) in pairs {
        for v in [b, n] {
            if !(v.is_finite() && *v > 0.0) {
                return Err(StatsError::NotPositive(*v));
            }
        }
    }
    let logs: Vec<f64> = pairs.iter().map(|(b, n)| n.ln() - b.ln()).collect();
    let mut walsh: Vec<f64> = (0..logs.len())
        .flat_map(|i| {
            let first = logs[i];
            logs[i..].iter().map(move |x| (first + x) / 2.0)
        })
        .collect();
    walsh.sort_by(f64::total_cmp);
    let n = logs.len();
    let exact = (n <= EXACT_LIMIT).then(|| SignedRankDistribution::new(n));
    // P(W+ < k) under the null.
    let tail = |k: usize| -> f64 {
        match &exact {
            Some(d) => d.cdf_below(k),
            None => normal_tails(k as f64 - 1.0, n, 0.0).0,
        }
    };
    Ok(shift_of_sorted(&walsh, confidence, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn signed_rank_exact_known_values() {
        // scipy.stats.wilcoxon(d, alternative=...), scipy 1.17
        let d = [-0.05, -0.031, -0.072, 0.012, -0.044, -0.018, -0.066, -0.027];
        let less = wilcoxon_signed_rank(&d, Alternative::Less);
        assert_eq!(less.w_plus, 1.0);
        assert!(close(less.p_value, 0.0078125, 1e-12), "{less:?}");
        let two = wilcoxon_signed_rank(&d, Alternative::TwoSided);
        assert!(close(two.p_value, 0.015625, 1e-12), "{two:?}");
    }

    #[test]
    fn signed_rank_with_ties_uses_the_normal_approximation() {
        // scipy.stats.wilcoxon(d, alternative="less", method="approx",
        // correction=True): statistic 8.5, p 0.02933809982619633
        let d = [
            -0.05, -0.03, -0.03, 0.01, -0.05, -0.02, -0.06, -0.02, 0.04, -0.01,
        ];
        let r = wilcoxon_signed_rank(&d, Alternative::Less);
        assert_eq!(r.w_plus, 8.5);
        assert!(close(r.p_value, 0.029338, 1e-5), "{r:?}");
    }

    #[test]
    fn pairs_are_made_of_runs_close_in_time() {
        let base = [(1, 10.0), (3, 11.0), (9, 12.0), (20, 13.0)];
        let new = [(2, 20.0), (4, 21.0), (14, 22.0), (21, 23.0)];
        assert_eq!(
            pair_in_time(&base, &new, 2),
            vec![(10.0, 20.0), (11.0, 21.0), (13.0, 23.0)]
        );
    }

    #[test]
    fn a_shared_wander_cancels_in_the_paired_shift() {
        // The machine's level swings by 40% between rounds; new is always
        // 10% below base in its round.
        let levels = [
            100.0, 140.0, 90.0, 130.0, 80.0, 120.0, 110.0, 95.0, 135.0, 85.0,
        ];
        let pairs: Vec<(f64, f64)> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| (*l, l * (0.9 + 0.002 * (i % 3) as f64)))
            .collect();
        let shift = paired_shift(&pairs, 0.98).unwrap();
        assert!(close(shift.estimate_pct, -9.8, 0.3), "{shift:?}");
        assert!(shift.low_pct > -10.5 && shift.high_pct < -9.4, "{shift:?}");
        assert!(shift.achieved_confidence >= 0.98);
    }

    proptest! {
        #[test]
        fn paired_interval_holds_its_estimate(
            ratios in proptest::collection::vec(0.5f64..1.5, 1..40),
            confidence in 0.5f64..0.999,
        ) {
            let pairs: Vec<(f64, f64)> = ratios.iter().map(|r| (1000.0, 1000.0 * r)).collect();
            let s = paired_shift(&pairs, confidence).unwrap();
            prop_assert!(s.low_pct <= s.estimate_pct + 1e-9);
            prop_assert!(s.estimate_pct <= s.high_pct + 1e-9);
            prop_assert!(s.achieved_confidence <= 1.0);
        }

        #[test]
        fn signed_rank_tails_are_probabilities(
            d in proptest::collection::vec(-1.0f64..1.0, 0..60),
        ) {
            let less = wilcoxon_signed_rank(&d, Alternative::Less).p_value;
            let greater = wilcoxon_signed_rank(&d, Alternative::Greater).p_value;
            prop_assert!((0.0..=1.0).contains(&less) && (0.0..=1.0).contains(&greater));
            // The two one-sided tails overlap at the observed value.
            prop_assert!(less + greater >= 1.0 - 1e-9);
        }
    }
}
