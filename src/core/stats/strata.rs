//! Rank statistics of two samples split into strata (hosts).
//!
//! Runs of one commit made on two machines differ by the machines' speed,
//! which has nothing to do with the commit. A rank test over all runs at
//! once would rank a fast host's runs above a slow host's, whatever the
//! commits; the tools here rank and pair runs only within their stratum
//! and add up the strata:
//!
//! * Van Elteren's test, the stratified Wilcoxon rank-sum test: each
//!   stratum's rank sum weighted by `1 / (N_h + 1)`, which gives every
//!   stratum about the same say, normal approximation with ties.
//! * The stratified Hodges-Lehmann shift: the median of the differences
//!   of log throughput between every base and new run of the same
//!   stratum, with the distribution-free interval from the summed
//!   Mann-Whitney counts of the strata (their null mean and variance add
//!   up; normal approximation, reported with the confidence achieved).

use super::{Alternative, Shift, StatsError, average_ranks, shift_of_sorted};
use statrs::distribution::{ContinuousCDF, Normal};

/// One stratum: the base runs and the new runs made on it.
pub type Stratum<'a> = (&'a [f64], &'a [f64]);

/// Van Elteren's test of `new` against `base` within strata; the p-value
/// for the alternative that `new` is `alt` than `base` (as
/// [`super::mann_whitney_u`] with `x = new`). Strata missing a side say
/// nothing and are left out; without any, the p-value is 1.
pub fn van_elteren(strata: &[Stratum], alt: Alternative) -> f64 {
    let (mut stat, mut mean, mut var) = (0.0, 0.0, 0.0);
    for (base, new) in strata
        .iter()
        .filter(|(b, n)| !b.is_empty() && !n.is_empty())
    {
        let all: Vec<f64> = new.iter().chain(base.iter()).copied().collect();
        let (ranks, tie_term) = average_ranks(&all);
        let (m, n) = (new.len() as f64, base.len() as f64);
        let total = m + n;
        let weight = 1.0 / (total + 1.0);
        stat += weight * ranks[..new.len()].iter().sum::<f64>();
        mean += weight * m * (total + 1.0) / 2.0;
        var +=
            weight * weight * m * n / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    }
    if var <= 0.0 {
        return 1.0;
    }
    let Ok(std) = Normal::new(0.0, 1.0) else {
        return 1.0;
    };
    let z = (stat - mean) / var.sqrt();
    let p = match alt {
        Alternative::Less => std.cdf(z),
        Alternative::Greater => 1.0 - std.cdf(z),
        Alternative::TwoSided => 2.0 * std.cdf(-z.abs()),
    };
    p.clamp(0.0, 1.0)
}

/// Stratified Hodges-Lehmann shift of log throughput from base to new,
/// as [`super::relative_shift`] is for one stratum: the median of the
/// within-stratum differences, with the interval between the k-th
/// smallest and k-th largest of them, k from the summed Mann-Whitney
/// counts (normal approximation with continuity).
pub fn stratified_shift(strata: &[Stratum], confidence: f64) -> Result<Shift, StatsError> {
    for v in strata.iter().flat_map(|(b, n)| b.iter().chain(n.iter())) {
        if !(v.is_finite() && *v > 0.0) {
            return Err(StatsError::NotPositive(*v));
        }
    }
    let mut diffs = Vec::new();
    let (mut mu, mut var) = (0.0, 0.0);
    for (base, new) in strata {
        diffs.extend(
            base.iter()
                .flat_map(|b| new.iter().map(move |n| n.ln() - b.ln())),
        );
        let (m, n) = (base.len() as f64, new.len() as f64);
        mu += m * n / 2.0;
        var += m * n * (m + n + 1.0) / 12.0;
    }
    if diffs.is_empty() {
        return Err(StatsError::Empty);
    }
    diffs.sort_by(f64::total_cmp);
    let sd = var.sqrt();
    let tail = |k: usize| -> f64 {
        Normal::new(0.0, 1.0).map_or(0.0, |d| d.cdf((k as f64 - 0.5 - mu) / sd))
    };
    Ok(shift_of_sorted(&diffs, confidence, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_shift_within_every_stratum_is_found_whatever_the_strata_speeds() {
        let fast_base = [1000.0, 1010.0, 990.0, 1005.0];
        let fast_new: Vec<f64> = fast_base.iter().map(|v| v * 0.9).collect();
        let slow_base: Vec<f64> = fast_base.iter().map(|v| v * 0.75).collect();
        let slow_new: Vec<f64> = slow_base.iter().map(|v| v * 0.9).collect();
        let strata: [Stratum; 2] = [(&fast_base, &fast_new), (&slow_base, &slow_new)];
        let s = stratified_shift(&strata, 0.95).unwrap();
        assert!((s.estimate_pct + 10.0).abs() < 1e-9, "{s:?}");
        assert!(s.low_pct <= s.estimate_pct && s.estimate_pct <= s.high_pct);
        assert!(van_elteren(&strata, Alternative::Less) < 0.01);
        assert!(van_elteren(&strata, Alternative::Greater) > 0.99);
    }

    #[test]
    fn strata_without_both_sides_say_nothing() {
        assert_eq!(van_elteren(&[], Alternative::Less), 1.0);
        let only_base: [Stratum; 1] = [(&[1.0, 2.0], &[])];
        assert_eq!(van_elteren(&only_base, Alternative::Less), 1.0);
        assert_eq!(stratified_shift(&only_base, 0.9), Err(StatsError::Empty));
    }

    proptest! {
        #[test]
        fn a_speed_factor_per_stratum_changes_nothing(
            b1 in proptest::collection::vec(100.0f64..200.0, 1..8),
            n1 in proptest::collection::vec(100.0f64..200.0, 1..8),
            b2 in proptest::collection::vec(100.0f64..200.0, 1..8),
            n2 in proptest::collection::vec(100.0f64..200.0, 1..8),
            factor in 0.5f64..2.0,
        ) {
            let scale = |v: &[f64]| v.iter().map(|x| x * factor).collect::<Vec<f64>>();
            let (sb, sn) = (scale(&b2), scale(&n2));
            let plain: [Stratum; 2] = [(&b1, &n1), (&b2, &n2)];
            let scaled: [Stratum; 2] = [(&b1, &n1), (&sb, &sn)];
            let (p, q) = (van_elteren(&plain, Alternative::Less), van_elteren(&scaled, Alternative::Less));
            prop_assert!((p - q).abs() < 1e-9);
            let (s, t) = (stratified_shift(&plain, 0.9).unwrap(), stratified_shift(&scaled, 0.9).unwrap());
            prop_assert!((s.estimate_pct - t.estimate_pct).abs() < 1e-6);
            prop_assert!(s.low_pct <= s.estimate_pct + 1e-9 && s.estimate_pct <= s.high_pct + 1e-9);
            prop_assert!((0.0..=1.0).contains(&p));
        }
    }
}
