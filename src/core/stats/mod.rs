//! Samples, rank tests and confidence intervals: pure statistics.
//!
//! Benchmark throughput is noisy, sometimes with outliers or two modes, and
//! a hunt makes few runs. So the tools here are the ones that stay honest
//! on small, odd samples: the exact Mann-Whitney U distribution, the
//! Hodges-Lehmann shift with its distribution-free interval (reported with
//! the confidence actually achieved, never more), and robust spreads.

mod paired;
mod strata;

pub use paired::{pair_in_time, paired_shift, wilcoxon_signed_rank};
pub use strata::{Stratum, stratified_shift, van_elteren};

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Errors building samples or estimates.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("a sample needs at least one value")]
    Empty,
    #[error("throughput values must be finite and positive, got {0}")]
    NotPositive(f64),
}

/// Throughput values of one commit: at least one, all finite and positive.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample(Vec<f64>);

/// What a report shows of a sample (seed 004's variability figures too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub std_dev: f64,
    /// Standard deviation over the mean.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / max.
    pub range_ratio: f64,
}

impl Sample {
    pub fn new(values: Vec<f64>) -> Result<Sample, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(bad) = values.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
            return Err(StatsError::NotPositive(*bad));
        }
        Ok(Sample(values))
    }

    pub fn values(&self) -> &[f64] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }

    pub fn median(&self) -> f64 {
        median(&self.0)
    }

    /// Sample standard deviation (n - 1); 0 for one value.
    pub fn std_dev(&self) -> f64 {
        std_dev(&self.0)
    }

    pub fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    pub fn cv(&self) -> f64 {
        self.std_dev() / self.mean()
    }

    pub fn range_ratio(&self) -> f64 {
        (self.max() - self.min()) / self.max()
    }

    /// Median absolute deviation from the median (unscaled).
    pub fn mad(&self) -> f64 {
        mad(&self.0)
    }

    pub fn summary(&self) -> Summary {
        Summary {
            n: self.len(),
            mean: self.mean(),
            median: self.median(),
            std_dev: self.std_dev(),
            cv: self.cv(),
            min: self.min(),
            max: self.max(),
            range_ratio: self.range_ratio(),
        }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The `q` quantile by nearest rank: the smallest value with at least a
/// share `q` of the values at or below it. `values` must not be empty.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median of unsorted values (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    median_of(values).unwrap_or(f64::NAN)
}

/// The median, `None` for no values: for callers that skip what has
/// none (a point of the watcher's series) rather than carry a NaN. NaNs
/// among the values sort to the ends, as `f64::total_cmp` puts them;
/// callers that read measurements drop them first.
pub fn median_of(values: &[f64]) -> Option<f64> {
    let v = sorted(values);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn std_dev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

fn mad(values: &[f64]) -> f64 {
    let m = median(values);
    let dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Direction of a one- or two-sided test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    TwoSided,
    /// `x` tends to be smaller than `y`.
    Less,
    /// `x` tends to be larger than `y`.
    Greater,
}

/// A Mann-Whitney U test result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U statistic of `x` (as scipy reports it).
    pub u: f64,
    pub p_value: f64,
}

/// Samples up to this size per side use the exact U distribution.
const EXACT_LIMIT: usize = 50;

/// Mann-Whitney U test of `x` against `y`: exact distribution when both
/// sides have at most 50 values and there are no ties, otherwise the
/// normal approximation with tie and continuity corrections (as scipy).
pub fn mann_whitney_u(x: &[f64], y: &[f64], alt: Alternative) -> MannWhitney {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 {
        return MannWhitney {
            u: 0.0,
            p_value: 1.0,
        };
    }
    let (ranks, tie_term) = ranks_of(x, y);
    let rank_sum: f64 = ranks[..m].iter().sum();
    let u = rank_sum - (m * (m + 1)) as f64 / 2.0;
    let p_value = if tie_term == 0.0 && m <= EXACT_LIMIT && n <= EXACT_LIMIT {
        let cdf = UDistribution::new(m, n);
        let less = cdf.cdf(u.round() as usize);
        let greater = 1.0 - cdf.cdf_below(u.round() as usize);
        match alt {
            Alternative::Less => less,
            Alternative::Greater => greater,
            Alternative::TwoSided => (2.0 * less.min(greater)).min(1.0),
        }
    } else {
        normal_p(u, m, n, tie_term, alt)
    };
    MannWhitney {
        u,
        p_value: p_value.clamp(0.0, 1.0),
    }
}

/// Average ranks of x followed by y, and the tie term sum(t^3 - t).
fn ranks_of(x: &[f64], y: &[f64]) -> (Vec<f64>, f64) {
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    average_ranks(&all)
}

/// Ranks of `values` (1-based, ties sharing their average rank) and the
/// tie term sum(t^3 - t).
fn average_ranks(values: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = avg;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    (ranks, tie_term)
}

fn normal_p(u: f64, m: usize, n: usize, tie_term: f64, alt: Alternative) -> f64 {
    let (mf, nf) = (m as f64, n as f64);
    let total = mf + nf;
    let mu = mf * nf / 2.0;
    let var = mf * nf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let sd = var.sqrt();
    let Ok(std) = Normal::new(0.0, 1.0) else {
        return 1.0;
    };
    let less = std.cdf((u - mu + 0.5) / sd);
    let greater = 1.0 - std.cdf((u - mu - 0.5) / sd);
    match alt {
        Alternative::Less => less,
        Alternative::Greater => greater,
        Alternative::TwoSided => (2.0 * less.min(greater)).min(1.0),
    }
}

/// The exact null distribution of U for sample sizes m and n.
struct UDistribution {
    /// probabilities of U = 0..=m*n
    pmf: Vec<f64>,
}

impl UDistribution {
    fn new(m: usize, n: usize) -> Self {
        // counts[j][k]: arrangements of i x's and j y's with U = k, built up
        // over i with f(i, j, k) = f(i-1, j, k-j) + f(i, j-1, k).
        let max = m * n;
        let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| one_at_zero(max)).collect();
        for _ in 1..=m {
            let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
            cur.push(one_at_zero(max));
            for j in 1..=n {
                let mut row = cur[j - 1].clone();
                for k in j..=max {
                    row[k] += prev[j][k - j];
                }
                cur.push(row);
            }
            prev = cur;
        }
        let counts = &prev[n];
        let total: f64 = counts.iter().sum();
        UDistribution {
            pmf: counts.iter().map(|c| c / total).collect(),
        }
    }

    /// P(U <= k).
    fn cdf(&self, k: usize) -> f64 {
        self.pmf.iter().take(k + 1).sum::<f64>().min(1.0)
    }

    /// P(U < k).
    fn cdf_below(&self, k: usize) -> f64 {
        self.pmf.iter().take(k).sum()
    }
}

fn one_at_zero(max: usize) -> Vec<f64> {
    let mut v = vec![0.0; max + 1];
    v[0] = 1.0;
    v
}

/// A relative change of `new` against `base`, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    pub estimate_pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
    /// Confidence asked for.
    pub confidence: f64,
    /// Confidence the interval really has (never more than the data give).
    pub achieved_confidence: f64,
}

/// Hodges-Lehmann shift of log throughput from `base` to `new`, with the
/// distribution-free (Moses) confidence interval from the U distribution.
pub fn relative_shift(base: &[f64], new: &[f64], confidence: f64) -> Result<Shift, StatsError> {
    for v in base.iter().chain(new) {
        if !(v.is_finite() && *v > 0.0) {
            return Err(StatsError::NotPositive(*v));
        }
    }
    if base.is_empty() || new.is_empty() {
        return Err(StatsError::Empty);
    }
    let mut diffs: Vec<f64> = base
        .iter()
        .flat_map(|b| new.iter().map(move |n| n.ln() - b.ln()))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let (m, n) = (base.len(), new.len());
    // Largest k with P(U <= k - 1) <= alpha/2; at least 1 (min..max).
    let exact = (m <= EXACT_LIMIT && n <= EXACT_LIMIT).then(|| UDistribution::new(m, n));
    let tail = |k: usize| -> f64 {
        match &exact {
            Some(d) => d.cdf_below(k),
            None => normal_tail(k, m, n),
        }
    };
    Ok(shift_of_sorted(&diffs, confidence, tail))
}

/// The Hodges-Lehmann shift of `sorted` log differences (their median)
/// and its distribution-free interval: from the k-th smallest to the k-th
/// largest, k the largest (at least 1) whose null tail `tail(k)`, the
/// chance of a count below k, stays within half of `1 - confidence`.
fn shift_of_sorted(sorted: &[f64], confidence: f64, tail: impl Fn(usize) -> f64) -> Shift {
    let total = sorted.len();
    let alpha_half = (1.0 - confidence) / 2.0;
    let mut k = 1;
    while k < total.div_ceil(2) && tail(k + 1) <= alpha_half {
        k += 1;
    }
    let pct = |d: f64| (d.exp() - 1.0) * 100.0;
    Shift {
        estimate_pct: pct(median(sorted)),
        low_pct: pct(sorted[k - 1]),
        high_pct: pct(sorted[total - k]),
        confidence,
        achieved_confidence: 1.0 - 2.0 * tail(k),
    }
}

fn normal_tail(k: usize, m: usize, n: usize) -> f64 {
    let (mf, nf) = (m as f64, n as f64);
    let mu = mf * nf / 2.0;
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    Normal::new(0.0, 1.0).map_or(0.0, |d| d.cdf((k as f64 - 0.5 - mu) / sd))
}

/// Run-to-run spread of log throughput, pooled over several commits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseEstimate {
    /// Standard deviation of one run's log throughput.
    pub sigma: f64,
    /// How many successive differences it rests on (after trimming).
    pub differences: usize,
    /// Share of the differences set aside as wild: near zero for normal
    /// noise, large for outliers or two modes.
    pub wild_fraction: f64,
}

impl NoiseEstimate {
    /// An upper bound of sigma (about one standard error above the
    /// estimate): early in a hunt, when few runs exist, a sigma that is too
    /// small would make every sequential test overconfident.
    pub fn cautious_sigma(&self) -> f64 {
        self.sigma * (1.0 + 0.75 / (self.differences.max(1) as f64).sqrt())
    }
}

/// Mean log throughput of `tps`, without the largest and the smallest
/// value when there are five or more: the level of a commit that one wild
/// run cannot move.
pub fn trimmed_log_mean(tps: &[f64]) -> f64 {
    let mut logs: Vec<f64> = tps.iter().map(|v| v.ln()).collect();
    logs.sort_by(f64::total_cmp);
    if logs.len() >= 5 {
        logs = logs[1..logs.len() - 1].to_vec();
    }
    logs.iter().sum::<f64>() / logs.len().max(1) as f64
}

/// The run-to-run noise (sigma of log throughput) a decision assumes: the
/// estimate's cautious value, 5% before there is any, and never below
/// 0.2%, so that a few identical runs do not make every difference look
/// certain.
pub fn decision_sigma(estimate: Option<NoiseEstimate>) -> f64 {
    estimate.map_or(0.05, |n| n.cautious_sigma()).max(0.002)
}

/// Pooled run-to-run spread of log throughput over several commits'
/// samples, from the differences between successive runs of each commit
/// (in the order given).
///
/// Successive differences keep a slow drift of the machine out of the
/// estimate. A first, median-based scale (x1.4826 / sqrt 2) flags wild
/// differences (beyond 3.5 scales); the root mean square of the others is
/// the estimate, which wastes fewer runs than the median alone. Per-commit
/// MADs would not do: in a group of three, one deviation from the median
/// is always zero, and the estimate is far too small. `None` when no group
/// has 2 values.
pub fn robust_log_sigma(groups: &[&[f64]]) -> Option<NoiseEstimate> {
    let diffs: Vec<f64> = groups
        .iter()
        .flat_map(|g| {
            let logs: Vec<f64> = g.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
            logs.windows(2)
                .map(|w| (w[1] - w[0]).abs())
                .collect::<Vec<_>>()
        })
        .collect();
    if diffs.is_empty() {
        return None;
    }
    let scale = median(&diffs) * 1.4826 / std::f64::consts::SQRT_2;
    let limit = 3.5 * std::f64::consts::SQRT_2 * scale;
    let total = diffs.len();
    let kept: Vec<f64> = diffs.into_iter().filter(|d| *d <= limit).collect();
    let mean_square = kept.iter().map(|d| d * d).sum::<f64>() / kept.len().max(1) as f64;
    Some(NoiseEstimate {
        sigma: (mean_square / 2.0).sqrt(),
        differences: kept.len(),
        wild_fraction: 1.0 - kept.len() as f64 / total as f64,
    })
}

/// Whether series (each in time order) wander: their pooled von Neumann
/// ratio, the mean squared successive difference over the variance, is
/// about 2 for independent values whatever their distribution, and well
/// below 2 when neighbours move together, as runs of one commit do on a
/// machine whose speed drifts. True when the ratio is below 2 by more than
/// `z` of its standard errors under independence. `None` below 12 values
/// in all or without spread.
pub fn wanders(series: &[&[f64]], z: f64) -> Option<bool> {
    let (mut successive, mut squares, mut n) = (0.0, 0.0, 0usize);
    for s in series.iter().filter(|s| s.len() >= 2) {
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        squares += s.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        successive += s.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum::<f64>();
        n += s.len();
    }
    if n < 12 || squares <= 0.0 {
        return None;
    }
    let ratio = successive / squares;
    let nf = n as f64;
    let se = (4.0 * (nf - 2.0) / (nf * nf - 1.0)).sqrt();
    Some(ratio < 2.0 - z * se)
}

/// Student's t interval for the mean of a sample.
pub fn mean_ci(sample: &Sample, confidence: f64) -> (f64, f64) {
    let n = sample.len() as f64;
    let mean = sample.mean();
    if n < 2.0 {
        return (mean, mean);
    }
    let se = sample.std_dev() / n.sqrt();
    let q = StudentsT::new(0.0, 1.0, n - 1.0)
        .map_or(f64::INFINITY, |t| t.inverse_cdf(0.5 + confidence / 2.0));
    (mean - q * se, mean + q * se)
}

#[cfg(test)]
mod tests {
    #[test]
    fn wandering_series_are_told_from_independent_ones() {
        // A slow wave wanders; alternating values are as far from
        // wandering as a series can be.
        let wave: Vec<f64> = (0..40).map(|i| (i as f64 / 6.0).sin()).collect();
        assert_eq!(super::wanders(&[&wave], 3.09), Some(true));
        let alternating: Vec<f64> = (0..40).map(|i| f64::from(i % 2)).collect();
        assert_eq!(super::wanders(&[&alternating], 3.09), Some(false));
        assert_eq!(super::wanders(&[&alternating, &wave], 3.09), Some(false));
        assert_eq!(super::wanders(&[&wave[..11]], 3.09), None);
        assert_eq!(super::wanders(&[&[1.0; 20]], 3.09), None);
        // 1..=12 in order: ratio 11 / 143 = 0.077, far below 2; two
        // halves of it pooled: 10 / 2 x 17.5 = 0.29.
        let ramp: Vec<f64> = (1..=12).map(f64::from).collect();
        assert_eq!(super::wanders(&[&ramp], 3.09), Some(true));
        assert_eq!(super::wanders(&[&ramp[..6], &ramp[6..]], 3.09), Some(true));
    }

    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_of_a_sample() {
        let s = Sample::new(vec![10.0, 12.0, 11.0, 13.0]).unwrap();
        let sum = s.summary();
        assert_eq!(sum.median, 11.5);
        assert!(close(sum.mean, 11.5, 1e-12));
        assert!(close(sum.std_dev, 1.290_994_448_7, 1e-9));
        assert!(close(sum.range_ratio, 3.0 / 13.0, 1e-12));
        assert!(Sample::new(vec![]).is_err());
        assert!(Sample::new(vec![1.0, f64::NAN]).is_err());
        assert!(Sample::new(vec![1.0, -2.0]).is_err());
    }

    #[test]
    fn mann_whitney_exact_known_values() {
        // scipy.stats.mannwhitneyu([1,2,3],[4,5,6], alternative='less') -> U=0, p=0.05
        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], Alternative::Less);
        assert_eq!(r.u, 0.0);
        assert!(close(r.p_value, 0.05, 1e-12));
        let two = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], Alternative::TwoSided);
        assert!(close(two.p_value, 0.1, 1e-12));
        // 5 vs 5 fully separated: 1 / C(10, 5) = 1/252.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(
            mann_whitney_u(&x, &y, Alternative::Less).p_value,
            1.0 / 252.0,
            1e-12
        ));
        // One swap: U = 1, P(U <= 1) = 2/252.
        let x = [1.0, 2.0, 3.0, 4.0, 6.0];
        let y = [5.0, 7.0, 8.0, 9.0, 10.0];
        let r = mann_whitney_u(&x, &y, Alternative::Less);
        assert_eq!(r.u, 1.0);
        assert!(close(r.p_value, 2.0 / 252.0, 1e-12));
    }

    #[test]
    fn mann_whitney_with_ties_uses_the_normal_approximation() {
        // scipy.stats.mannwhitneyu([1,2,2,3],[2,3,4,5], alternative='less',
        // method='asymptotic'): U = 2.5, p = 0.0481 (tie-corrected, continuity).
        let r = mann_whitney_u(
            &[1.0, 2.0, 2.0, 3.0],
            &[2.0, 3.0, 4.0, 5.0],
            Alternative::Less,
        );
        assert_eq!(r.u, 2.5);
        let mu: f64 = 8.0;
        let var: f64 = 16.0 / 12.0 * (9.0 - (24.0 + 6.0) / 56.0);
        let z = (2.5 - mu + 0.5) / var.sqrt();
        let expect = Normal::new(0.0, 1.0).unwrap().cdf(z);
        assert!(close(r.p_value, expect, 1e-12), "{} vs {expect}", r.p_value);
    }

    #[test]
    fn hodges_lehmann_on_a_known_shift() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let new: Vec<f64> = base.iter().map(|v| v * 0.9).collect();
        let s = relative_shift(&base, &new, 0.95).unwrap();
        assert!(close(s.estimate_pct, -10.0, 1e-9), "{s:?}");
        assert!(s.low_pct <= s.estimate_pct && s.estimate_pct <= s.high_pct);
        assert!(s.achieved_confidence >= 0.9);
    }

    #[test]
    fn tiny_samples_report_the_confidence_they_have() {
        let s = relative_shift(&[100.0, 101.0], &[90.0, 91.0], 0.99).unwrap();
        // Only 6 arrangements: min..max covers 1 - 2/6.
        assert!(
            close(s.achieved_confidence, 1.0 - 2.0 / 6.0, 1e-12),
            "{s:?}"
        );
    }

    #[test]
    fn robust_sigma_is_not_small_for_small_groups() {
        // Many commits with three runs each, spread 3%: a per-group MAD
        // would say about half of that.
        use rand::SeedableRng;
        use rand::distr::Distribution;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let normal = Normal::new(0.0, 0.03).unwrap();
        let groups: Vec<Vec<f64>> = (0..200)
            .map(|_| {
                (0..3)
                    .map(|_| 1000.0 * normal.sample(&mut rng).exp())
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let s = robust_log_sigma(&refs).unwrap().sigma;
        assert!((0.027..0.033).contains(&s), "{s}");
    }

    #[test]
    fn robust_sigma_ignores_one_outlier() {
        let a = [100.0, 101.0, 99.0, 100.0, 40.0];
        let s = robust_log_sigma(&[&a]).unwrap().sigma;
        assert!(s < 0.03, "{s}");
        assert_eq!(robust_log_sigma(&[&[1.0]]), None);
    }

    proptest! {
        #[test]
        fn p_values_are_probabilities_and_symmetric(
            x in proptest::collection::vec(1.0f64..1000.0, 1..12),
            y in proptest::collection::vec(1.0f64..1000.0, 1..12),
        ) {
            let less = mann_whitney_u(&x, &y, Alternative::Less).p_value;
            let greater = mann_whitney_u(&y, &x, Alternative::Greater).p_value;
            prop_assert!((0.0..=1.0).contains(&less));
            prop_assert!((less - greater).abs() < 1e-9);
            let two = mann_whitney_u(&x, &y, Alternative::TwoSided).p_value;
            prop_assert!((0.0..=1.0).contains(&two));
        }

        #[test]
        fn shift_follows_a_scaling_of_new(
            x in proptest::collection::vec(1.0f64..1000.0, 2..10),
            y in proptest::collection::vec(1.0f64..1000.0, 2..10),
            factor in 0.5f64..2.0,
        ) {
            let a = relative_shift(&x, &y, 0.95).unwrap();
            let scaled: Vec<f64> = y.iter().map(|v| v * factor).collect();
            let b = relative_shift(&x, &scaled, 0.95).unwrap();
            let expect = ((1.0 + a.estimate_pct / 100.0) * factor - 1.0) * 100.0;
            prop_assert!((b.estimate_pct - expect).abs() < 1e-6 * expect.abs().max(1.0));
            prop_assert!(a.low_pct <= a.estimate_pct + 1e-9 && a.estimate_pct <= a.high_pct + 1e-9);
            prop_assert!(a.achieved_confidence <= 0.95 + 1e-12 || a.achieved_confidence <= 1.0);
        }

        #[test]
        fn scale_invariance(
            x in proptest::collection::vec(1.0f64..1000.0, 2..10),
            y in proptest::collection::vec(1.0f64..1000.0, 2..10),
            c in 0.1f64..10.0,
        ) {
            let p1 = mann_whitney_u(&x, &y, Alternative::Less).p_value;
            let xs: Vec<f64> = x.iter().map(|v| v * c).collect();
            let ys: Vec<f64> = y.iter().map(|v| v * c).collect();
            let p2 = mann_whitney_u(&xs, &ys, Alternative::Less).p_value;
            prop_assert!((p1 - p2).abs() < 1e-9);
        }

        /// The median splits the values: as many at or below it as at or
        /// above, whatever their order.
        #[test]
        fn the_median_splits_the_values_in_any_order(
            mut x in proptest::collection::vec(-1e6f64..1e6, 1..15),
        ) {
            let m = median_of(&x).unwrap();
            prop_assert_eq!(m.to_bits(), median(&x).to_bits());
            let below = x.iter().filter(|v| **v <= m).count();
            let above = x.iter().filter(|v| **v >= m).count();
            prop_assert!(2 * below >= x.len() && 2 * above >= x.len());
            x.reverse();
            prop_assert_eq!(median_of(&x), Some(m));
        }
    }

    #[test]
    fn no_values_have_no_median() {
        assert_eq!(median_of(&[]), None);
        assert!(median(&[]).is_nan());
        assert_eq!(median_of(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }
}
