//! Sequential decisions built on [`crate::core::stats`].
//!
//! Two questions are asked again and again during a hunt, and each is
//! answered with as few benchmark runs as the noise allows:
//!
//! * **Is B slower than A by at least the threshold?** ([`compare`]) Asked of
//!   the endpoints, of a culprit and its parent side by side, and of a
//!   culprit and the bad end to see whether the whole drop is explained.
//!   The answer has three names, as in criterion's comparisons: regressed,
//!   unchanged (any drop is surely smaller than the threshold), or not yet
//!   clear. A caller that has hit its run cap reports the unclear case as
//!   inconclusive rather than forcing a verdict.
//! * **Is this candidate nearer the good level or the bad one?**
//!   ([`classify`]) A sequential probability ratio test between the two
//!   levels of the range, measured close in time, on log throughput,
//!   stopping as soon as the evidence is clear.
//!
//! Noise in pgbench results is not always normal (outliers from a busy
//! machine, two modes at high client counts). [`compare`] checks the
//! samples for outliers and falls back from Welch's t-test to rank-based
//! methods (Mann-Whitney U and the Hodges-Lehmann shift) when they are not
//! clean; [`classify`] clips every run's contribution so one wild run
//! cannot decide on its own. Every confident answer is checked again side
//! by side before a culprit is reported.

use crate::core::stats::{self, Alternative};
pub use blocks::{Block, classify_hosts, compare_blocked};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

mod blocks;
#[cfg(test)]
mod counted_tests;

/// Knobs of the decisions; defaults are what a hunt uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecisionConfig {
    /// Smallest drop worth reporting, as a fraction (0.05 = 5%).
    pub threshold: f64,
    /// One-sided error rate of a comparison.
    pub alpha: f64,
    /// Error rate of a classification step (both directions).
    pub step_error: f64,
    /// Fewest runs per side before a comparison may decide.
    pub min_runs: usize,
    /// Most runs per side (and per classified commit) before giving up.
    pub max_runs: usize,
    /// The run-to-run noise measured over a whole hunt (a standard
    /// deviation of log throughput), below which a comparison never reads
    /// its samples' own spread: four runs can sit closer together than
    /// the machine's noise by chance, or all in one mode of it, and a
    /// t-test on their spread alone then confirms a drop that is not
    /// there. 0: the samples' spread alone (a comparison with no hunt
    /// around it). Set for each look; not a knob.
    #[serde(skip)]
    pub noise_floor: f64,
    /// The least spread (a standard deviation of logs) an outlier is
    /// measured against: a run that strays from the others by less than
    /// 3.5 times this is no outlier, however close the others sit.
    /// Instruction counts agree to a millionth, and their smallest wobble
    /// is then many of their own deviations
    /// ([`crate::core::counts::NOISE_FLOOR`]); 0 for tps.
    #[serde(skip)]
    pub outlier_floor: f64,
    /// The measure repeats to a fraction of a percent (instruction
    /// counts; [`crate::core::counts::Measure::decision`]): a drop the
    /// t-test finds stands when the ranks agree on its size, at whatever
    /// level so few runs can reach (3 against 3 cannot reach below 5%).
    /// False for tps, whose two modes can fool a t-test on a few runs.
    #[serde(skip)]
    pub exact: bool,
}

impl Default for DecisionConfig {
    fn default() -> Self {
        DecisionConfig {
            threshold: 0.05,
            alpha: 0.01,
            step_error: 0.01,
            min_runs: 4,
            max_runs: 20,
            noise_floor: 0.0,
            outlier_floor: 0.0,
            exact: false,
        }
    }
}

impl DecisionConfig {
    /// The fewest runs a side (or pairs) Welch's t (or Student's t on
    /// pairs) is read from; fewer go to the ranks. Three, so that a run far
    /// from the others is seen as one before a t-test trusts the spread.
    /// Two for a measure that repeats exactly ([`DecisionConfig::exact`]):
    /// its spread is never read below the noise floor, a wild run of two
    /// only widens the interval (and more runs come), and the ranks of 2
    /// against 2 can never reach a verdict.
    pub fn least_for_t(&self) -> usize {
        if self.exact { 2 } else { 3 }
    }

    /// The threshold as a drop in log throughput (positive).
    pub fn log_threshold(&self) -> f64 {
        -(1.0 - self.threshold).ln()
    }
}

/// What a comparison of two samples says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The new sample is slower by at least the threshold, with confidence.
    Regressed,
    /// Any drop is, with confidence, smaller than the threshold.
    Unchanged,
    /// Neither yet: more runs may settle it.
    Unclear,
}

/// Which test produced a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Welch's t-test on log throughput (samples had no outliers).
    WelchT,
    /// Mann-Whitney U with the Hodges-Lehmann shift (outliers or odd shapes).
    MannWhitney,
    /// Student's t on the log ratios of runs paired in time (the machine
    /// drifted; the ratios had no outliers).
    PairedT,
    /// Wilcoxon signed-rank with the Hodges-Lehmann shift, on the log
    /// ratios of runs paired in time (the machine drifted).
    SignedRank,
    /// The fixed-effect estimate over several hosts: per-host differences
    /// of mean log throughput, weighted by precision, with Student's t on
    /// the variance pooled within hosts.
    StratifiedT,
    /// Van Elteren's stratified rank test with the stratified
    /// Hodges-Lehmann shift, over several hosts (outliers or odd shapes).
    VanElteren,
}

impl Method {
    fn is_rank_based(self) -> bool {
        matches!(
            self,
            Method::MannWhitney | Method::SignedRank | Method::VanElteren
        )
    }
}

/// The change from a base sample to a new one, in percent of the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Point estimate; negative means slower.
    pub pct: f64,
    /// Lower end of the confidence interval.
    pub low_pct: f64,
    /// Upper end of the confidence interval.
    pub high_pct: f64,
    /// Two-sided confidence level of the interval actually achieved.
    pub confidence: f64,
}

/// The estimate and its interval, `-9.6% [-17.8%, -0.7%]`, as the hunt's
/// notes give it.
impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if ![self.pct, self.low_pct, self.high_pct]
            .iter()
            .all(|v| v.is_finite())
        {
            return write!(f, "no estimate (too few runs for an interval)");
        }
        write!(
            f,
            "{:+.1}% [{:+.1}%, {:+.1}%]",
            self.pct, self.low_pct, self.high_pct
        )
    }
}

impl Change {
    /// Whether the estimate is a drop smaller than `fraction` (0.05 = 5%),
    /// or no drop at all.
    pub fn drop_smaller_than(&self, fraction: f64) -> bool {
        self.pct > -100.0 * fraction
    }

    /// Whether the estimate is a drop of at least `fraction`.
    pub fn drop_at_least(&self, fraction: f64) -> bool {
        self.pct <= -100.0 * fraction
    }
}

/// A comparison's full answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub verdict: Verdict,
    pub change: Change,
    /// One-sided p-value for "new is slower than base".
    pub p_value: f64,
    pub method: Method,
    pub n_base: usize,
    pub n_new: usize,
}

/// Compares `new` against `base` (throughput samples, higher is better).
///
/// Regressed needs a one-sided p-value at most `alpha` and an estimated
/// drop of at least `threshold`; unchanged needs the whole one-sided
/// `1 - alpha` interval above `-threshold`. Fewer than `min_runs` a side is
/// always unclear.
pub fn compare(base: &[f64], new: &[f64], cfg: &DecisionConfig, threshold: f64) -> Comparison {
    let estimate = estimate_with_floor(
        base,
        new,
        (cfg.alpha, cfg.least_for_t()),
        (cfg.noise_floor, cfg.outlier_floor),
    );
    let enough = base.len() >= cfg.min_runs && new.len() >= cfg.min_runs;
    let verdict = verdict_of(
        enough,
        estimate,
        || rank_based(base, new, cfg.alpha),
        cfg,
        threshold,
    );
    Comparison::new(verdict, estimate, base.len(), new.len())
}

/// Compares runs paired in time, `(base, new)` each, as [`compare`] does
/// two independent samples: on a machine whose speed wanders, the ratio
/// of two runs made beside each other keeps the change and loses the
/// wander. Student's t on the log ratios when they have no outliers, the
/// signed-rank test and the Hodges-Lehmann shift otherwise. Fewer than
/// `min_runs` pairs is always unclear.
pub fn compare_paired(pairs: &[(f64, f64)], cfg: &DecisionConfig, threshold: f64) -> Comparison {
    let ratios: Vec<f64> = pairs.iter().map(|(b, n)| n / b).collect();
    let clean = pairs.len() >= cfg.least_for_t() && !has_outliers_over(&ratios, cfg.outlier_floor);
    let estimate = clean
        .then(|| paired_t(&ratios, cfg.alpha, cfg.noise_floor))
        .flatten()
        .unwrap_or_else(|| signed_rank(pairs, cfg.alpha));
    let enough = pairs.len() >= cfg.min_runs;
    let verdict = verdict_of(
        enough,
        estimate,
        || signed_rank(pairs, cfg.alpha),
        cfg,
        threshold,
    );
    Comparison::new(verdict, estimate, pairs.len(), pairs.len())
}

impl Comparison {
    fn new(
        verdict: Verdict,
        (change, p_value, method): (Change, f64, Method),
        n_base: usize,
        n_new: usize,
    ) -> Self {
        Comparison {
            verdict,
            change,
            p_value,
            method,
            n_base,
            n_new,
        }
    }
}

/// Regressed needs a one-sided p-value at most `alpha` and an estimated
/// drop of at least `threshold`; unchanged needs the whole one-sided
/// `1 - alpha` interval above `-threshold`.
fn verdict_of(
    enough: bool,
    (change, p_value, method): (Change, f64, Method),
    ranks: impl FnOnce() -> (Change, f64, Method),
    cfg: &DecisionConfig,
    threshold: f64,
) -> Verdict {
    let limit = -threshold * 100.0;
    // A t-test can be fooled by two modes in small samples; the ranks
    // must agree, on the size too (the Hodges-Lehmann shift), at a looser
    // level, as 4 against 4 runs cannot reach alpha, before a drop counts.
    // A measure that repeats exactly has no modes to fool it: the ranks
    // need agree on the size alone.
    let ranks_agree = || {
        method.is_rank_based() || {
            let (rank_change, rank_p, _) = ranks();
            (cfg.exact || rank_p <= 5.0 * cfg.alpha) && rank_change.pct <= limit
        }
    };
    if !enough {
        Verdict::Unclear
    } else if p_value <= cfg.alpha && change.pct <= limit && ranks_agree() {
        Verdict::Regressed
    } else if change.low_pct > limit {
        Verdict::Unchanged
    } else {
        Verdict::Unclear
    }
}

/// Estimates the change with the method the samples allow: Welch's t on
/// logs when both samples look clean, rank-based otherwise. The interval
/// is two-sided at `1 - 2 alpha`, so each side is a one-sided `1 - alpha`
/// bound.
pub fn estimate_change(base: &[f64], new: &[f64], alpha: f64) -> (Change, f64, Method) {
    estimate_with_floor(base, new, (alpha, 3), (0.0, 0.0))
}

/// [`estimate_change`] with Welch's variances never below `floor`
/// squared (see [`DecisionConfig::noise_floor`]), outliers measured
/// against a spread of at least `outliers`
/// ([`DecisionConfig::outlier_floor`]), and Welch's t read from `least`
/// runs a side ([`DecisionConfig::least_for_t`]).
fn estimate_with_floor(
    base: &[f64],
    new: &[f64],
    (alpha, least): (f64, usize),
    (floor, outliers): (f64, f64),
) -> (Change, f64, Method) {
    let clean = base.len() >= least
        && new.len() >= least
        && !has_outliers_over(base, outliers)
        && !has_outliers_over(new, outliers);
    if clean && let Some(result) = welch_log(base, new, alpha, floor) {
        return result;
    }
    rank_based(base, new, alpha)
}

fn rank_based(base: &[f64], new: &[f64], alpha: f64) -> (Change, f64, Method) {
    let p = stats::mann_whitney_u(new, base, Alternative::Less).p_value;
    let shift = stats::relative_shift(base, new, 1.0 - 2.0 * alpha);
    (change_of(shift), p, Method::MannWhitney)
}

fn signed_rank(pairs: &[(f64, f64)], alpha: f64) -> (Change, f64, Method) {
    let logs: Vec<f64> = pairs.iter().map(|(b, n)| n.ln() - b.ln()).collect();
    let p = stats::wilcoxon_signed_rank(&logs, Alternative::Less).p_value;
    let shift = stats::paired_shift(pairs, 1.0 - 2.0 * alpha);
    (change_of(shift), p, Method::SignedRank)
}

/// A rank-based shift as a change; no data, no knowledge.
fn change_of(shift: Result<stats::Shift, stats::StatsError>) -> Change {
    match shift {
        Ok(shift) => Change {
            pct: shift.estimate_pct,
            low_pct: shift.low_pct,
            high_pct: shift.high_pct,
            confidence: shift.achieved_confidence,
        },
        Err(_) => Change {
            pct: 0.0,
            low_pct: f64::NEG_INFINITY,
            high_pct: f64::INFINITY,
            confidence: 0.0,
        },
    }
}

/// Student's t on the log ratios of pairs, their variance never below
/// that of two runs of `floor` noise each. `None` without spread.
fn paired_t(ratios: &[f64], alpha: f64, floor: f64) -> Option<(Change, f64, Method)> {
    let (mean, var, n) = log_mean_var(ratios);
    let var = var.max(2.0 * floor * floor);
    let se = (var / n).sqrt();
    if se <= 0.0 || !se.is_finite() || n < 2.0 {
        return None;
    }
    let t_dist = StudentsT::new(0.0, 1.0, n - 1.0).ok()?;
    Some(t_change(mean, se, &t_dist, alpha, Method::PairedT))
}

/// A change of `d` in log throughput with standard error `se`, its t
/// interval and one-sided p-value for a drop.
fn t_change(
    d: f64,
    se: f64,
    t_dist: &StudentsT,
    alpha: f64,
    method: Method,
) -> (Change, f64, Method) {
    let q = t_dist.inverse_cdf(1.0 - alpha);
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    let change = Change {
        pct: pct(d),
        low_pct: pct(d - q * se),
        high_pct: pct(d + q * se),
        confidence: 1.0 - 2.0 * alpha,
    };
    (change, t_dist.cdf(d / se), method)
}

/// Welch's t-test on log throughput, each sample's variance never below
/// `floor` squared. `None` when both samples have no spread.
fn welch_log(base: &[f64], new: &[f64], alpha: f64, floor: f64) -> Option<(Change, f64, Method)> {
    let (ma, va, na) = log_mean_var(base);
    let (mb, vb, nb) = log_mean_var(new);
    let (va, vb) = (va.max(floor * floor), vb.max(floor * floor));
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let se = se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t_dist = StudentsT::new(0.0, 1.0, df.max(1.0)).ok()?;
    Some(t_change(mb - ma, se, &t_dist, alpha, Method::WelchT))
}

fn log_mean_var(values: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var, n)
}

/// True when some value lies more than 3.5 robust standard deviations from
/// the median (MAD-based).
pub fn has_outliers(values: &[f64]) -> bool {
    has_outliers_over(values, 0.0)
}

/// [`has_outliers`] of values whose noise is known to be at least `floor`
/// (a standard deviation of logs, [`DecisionConfig::noise_floor`]): a
/// value that strays from the others by less than the noise does is no
/// outlier, however close together the others sit (instruction counts
/// agree to a thousandth, and their smallest wobble is then many MADs).
fn has_outliers_over(values: &[f64], floor: f64) -> bool {
    if values.len() < 3 {
        return false;
    }
    let (mad, dev) = robust_spread(values);
    let mad = mad.max(floor);
    if mad <= 0.0 {
        // Half or more of the values are identical: anything else stands out.
        return dev.last().is_some_and(|d| *d > 0.0);
    }
    dev.last().is_some_and(|d| d / mad > 3.5)
}

/// The median absolute deviation of the logs of `values`, scaled to a
/// standard deviation, and their deviations from the median, sorted.
fn robust_spread(values: &[f64]) -> (f64, Vec<f64>) {
    let mut logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let median = stats::median(&logs);
    let mut dev: Vec<f64> = logs.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    (stats::median(&dev) * 1.4826, dev)
}

/// Where a candidate stands between the two reference levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Closer to the good level.
    GoodLike,
    /// Closer to the bad level.
    BadLike,
    /// Not yet clear.
    Unclear,
}

/// The two levels a candidate is judged between, measured recently.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// Location of log throughput at the good end of the range.
    pub good_log_level: f64,
    /// How many runs the good level rests on.
    pub good_runs: usize,
    /// Location of log throughput at the bad end of the range.
    pub bad_log_level: f64,
    pub bad_runs: usize,
    /// Run-to-run spread of log throughput (a standard deviation).
    pub log_sigma: f64,
}

/// The state of a classification.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    pub class: Class,
    /// Log-likelihood ratio of "at the bad level" over "at the good level".
    pub llr: f64,
}

/// Sequential test of a candidate (`runs`, throughput) between the good
/// and the bad level of its range.
///
/// The statistic is the log-likelihood ratio of the candidate's mean log
/// throughput being at the bad level against it being at the good level,
/// with the uncertainty of both levels added to the variance. A candidate
/// between the two levels (a multi-step drop) is sent to whichever side the
/// evidence favours; the hunt then finds the other steps by checking the
/// culprit against both ends. Each run's deviation is clipped, so a single
/// outlier moves the ratio by a bounded amount, and at least two runs are
/// needed for any decision.
pub fn classify(runs: &[f64], reference: &Reference, cfg: &DecisionConfig) -> Classification {
    let n = runs.len();
    let gap = reference.good_log_level - reference.bad_log_level;
    if n == 0 || gap <= 0.0 {
        return Classification {
            class: Class::Unclear,
            llr: 0.0,
        };
    }
    let sigma = reference.log_sigma.max(1e-4);
    let var_of = |ref_var: f64| sigma * sigma * (1.0 / n as f64 + ref_var);
    let mean_dev = |center: f64, clip: f64| {
        runs.iter()
            .map(|v| (center - v.ln()).clamp(-clip, clip))
            .sum::<f64>()
            / n as f64
    };
    // Nearer the bad level than the good one?
    let mid = (reference.good_log_level + reference.bad_log_level) / 2.0;
    let ref_var_mid =
        (1.0 / reference.good_runs.max(1) as f64 + 1.0 / reference.bad_runs.max(1) as f64) / 4.0;
    let llr = gap * mean_dev(mid, gap / 2.0 + sigma) / var_of(ref_var_mid);
    // Dropped from the good level at all (by the threshold, or half the
    // gap when that is smaller)? A commit between two steps is below the
    // good level without being near the bad one: it counts as bad-like,
    // so the search consistently finds the first step.
    let step = cfg.log_threshold().min(gap / 2.0);
    let drop_center = reference.good_log_level - step / 2.0;
    let llr_drop = step * mean_dev(drop_center, step / 2.0 + sigma)
        / var_of(1.0 / reference.good_runs.max(1) as f64);
    let bound = ((1.0 - cfg.step_error) / cfg.step_error).ln();
    let class = if n < 2 {
        Class::Unclear
    } else if llr >= bound || llr_drop >= bound {
        Class::BadLike
    } else if llr <= -bound && llr_drop <= 0.0 {
        Class::GoodLike
    } else {
        Class::Unclear
    };
    Classification { class, llr }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reads_as_estimate_and_interval() {
        let c = Change {
            pct: -9.627,
            low_pct: -17.75,
            high_pct: 0.04,
            confidence: 0.99,
        };
        assert_eq!(c.to_string(), "-9.6% [-17.8%, +0.0%]");
        let one_run = Change {
            low_pct: f64::NEG_INFINITY,
            high_pct: f64::INFINITY,
            ..c
        };
        assert_eq!(
            one_run.to_string(),
            "no estimate (too few runs for an interval)"
        );
    }

    fn cfg() -> DecisionConfig {
        DecisionConfig::default()
    }

    #[test]
    fn counted_runs_a_side_confirm_a_two_percent_rise_at_a_checks_level() {
        // What a billion instructions buy, 42,750 and 43,680 instructions
        // a transaction with the spread counted runs have (about 0.1%).
        let base = [23_390.0, 23_402.0, 23_385.0];
        let new = [22_893.0, 22_880.0, 22_899.0];
        let counted = crate::core::counts::Measure::Instructions.decision(DecisionConfig {
            threshold: 0.01,
            alpha: 0.0025,
            ..cfg()
        });
        assert!(counted.exact && counted.min_runs == 2);
        let c = compare(&base, &new, &counted, counted.threshold);
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        // Two a side, read with the noise floor: Welch's t, as 2 against
        // 2 ranks could never decide.
        let c = compare(&base[..2], &new[..2], &counted, counted.threshold);
        assert_eq!(
            (c.verdict, c.method),
            (Verdict::Regressed, Method::WelchT),
            "{c:?}"
        );
        // Timed runs as close would wait for the ranks' level: 3 against
        // 3 cannot reach it.
        let timed = DecisionConfig {
            exact: false,
            ..counted
        };
        let c = compare(&base, &new, &timed, timed.threshold);
        assert_eq!(c.verdict, Verdict::Unclear, "{c:?}");
        // The ranks must still agree on the size: a drop too small stays
        // unsettled or unchanged, never regressed.
        let small = [23_380.0, 23_392.0, 23_375.0];
        let c = compare(&base, &small, &counted, counted.threshold);
        assert_ne!(c.verdict, Verdict::Regressed, "{c:?}");
    }

    /// Rounds on a machine whose level swings by a third between rounds;
    /// in each, the new commit runs at `ratio` of the base (with a little
    /// noise of its own).
    fn wandering_pairs(ratio: f64) -> Vec<(f64, f64)> {
        let levels = [
            9000.0, 6500.0, 8800.0, 6000.0, 7000.0, 9100.0, 6400.0, 8500.0,
        ];
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| (*l, l * ratio * (1.0 + 0.004 * (i % 3) as f64 - 0.004)))
            .collect()
    }

    #[test]
    fn runs_paired_in_time_see_through_a_wandering_machine() {
        let pairs = wandering_pairs(0.88);
        let (base, new): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        assert_eq!(compare(&base, &new, &cfg(), 0.05).verdict, Verdict::Unclear);
        let paired = compare_paired(&pairs, &cfg(), 0.05);
        assert_eq!(paired.verdict, Verdict::Regressed, "{paired:?}");
        assert_eq!(paired.method, Method::PairedT);
        assert!((paired.change.pct + 12.0).abs() < 0.5, "{paired:?}");
        assert_eq!((paired.n_base, paired.n_new), (8, 8));
        let same = compare_paired(&wandering_pairs(1.0), &cfg(), 0.05);
        assert_eq!(same.verdict, Verdict::Unchanged, "{same:?}");
    }

    #[test]
    fn an_odd_pair_turns_the_paired_comparison_to_ranks() {
        let mut pairs = wandering_pairs(0.88);
        pairs[3].1 = pairs[3].0 * 0.3;
        let c = compare_paired(&pairs, &cfg(), 0.05);
        assert_eq!(c.method, Method::SignedRank);
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        assert!(compare_paired(&pairs[..3], &cfg(), 0.05).verdict == Verdict::Unclear);
    }

    #[test]
    fn clear_regression_is_regressed() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let new = [90.0, 91.0, 89.5, 90.2, 90.8];
        let c = compare(&base, &new, &cfg(), 0.05);
        assert_eq!(c.verdict, Verdict::Regressed);
        assert_eq!(c.method, Method::WelchT);
        assert!((c.change.pct + 9.6).abs() < 0.5, "{:?}", c.change);
        assert!(c.change.low_pct < c.change.pct && c.change.pct < c.change.high_pct);
    }

    #[test]
    fn same_level_is_unchanged() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let new = [100.2, 99.1, 100.9, 99.8, 100.1];
        assert_eq!(
            compare(&base, &new, &cfg(), 0.05).verdict,
            Verdict::Unchanged
        );
    }

    #[test]
    fn improvement_is_unchanged_not_regressed() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let new = [120.0, 121.0, 119.0, 120.5, 119.5];
        assert_eq!(
            compare(&base, &new, &cfg(), 0.05).verdict,
            Verdict::Unchanged
        );
    }

    #[test]
    fn counts_that_agree_to_a_millionth_decide_with_their_noise_floor() {
        // float-overflow-checks, 4 counted runs a side: +6.0% instructions.
        let parent = [36_136_905.0, 36_137_098.0, 36_137_213.0, 36_137_134.0];
        let culprit = [38_317_154.0, 38_316_247.0, 38_316_951.0, 38_317_196.0];
        let buys = |v: &[f64]| v.iter().map(|n| 1e9 / n).collect::<Vec<_>>();
        let floored = DecisionConfig {
            noise_floor: 0.001,
            outlier_floor: 0.001,
            ..cfg()
        };
        let c = compare(&buys(&parent), &buys(&culprit), &floored, 0.05);
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        assert!(c.change.high_pct - c.change.low_pct > 0.05, "{c:?}");
        let same = compare(&buys(&parent), &buys(&parent), &floored, 0.05);
        assert_eq!(same.verdict, Verdict::Unchanged, "{same:?}");
    }

    #[test]
    fn too_few_runs_is_unclear() {
        let c = compare(&[100.0, 100.0], &[50.0, 50.0], &cfg(), 0.05);
        assert_eq!(c.verdict, Verdict::Unclear);
    }

    #[test]
    fn small_significant_drop_below_threshold_is_unchanged() {
        let base = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0];
        let new = [98.0, 98.2, 97.8, 98.1, 97.9, 98.0];
        assert_eq!(
            compare(&base, &new, &cfg(), 0.05).verdict,
            Verdict::Unchanged
        );
    }

    #[test]
    fn outlier_switches_to_rank_based() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5, 40.0];
        let new = [90.0, 91.0, 89.5, 90.2, 90.8, 90.1];
        let c = compare(&base, &new, &cfg(), 0.05);
        assert_eq!(c.method, Method::MannWhitney);
        assert!(has_outliers(&base));
        assert!(!has_outliers(&new));
        // Counts that agree to a thousandth: their smallest wobble is no
        // outlier once their noise is known.
        let counts = [38_317_154.0, 38_316_247.0, 38_316_951.0, 38_317_196.0];
        assert!(has_outliers(&counts));
        assert!(!has_outliers_over(&counts, 0.001));
    }

    #[test]
    fn runs_closer_together_than_the_hunts_noise_do_not_confirm_a_drop() {
        // Four runs a side 0.2% apart, 6% down, on a machine whose runs
        // have spread 3% all hunt: what the runs alone say is not to be
        // believed.
        let base = [100.0, 100.3, 99.8, 100.1];
        let new = [94.0, 94.2, 93.9, 94.1];
        let floored = DecisionConfig {
            noise_floor: 0.03,
            ..cfg()
        };
        assert_eq!(
            compare(&base, &new, &cfg(), 0.05).verdict,
            Verdict::Regressed
        );
        let c = compare(&base, &new, &floored, 0.05);
        assert_eq!(c.verdict, Verdict::Unclear, "{c:?}");
        // Five pairs in time, as closely alike (signed ranks need five).
        let pairs: Vec<(f64, f64)> = base
            .iter()
            .copied()
            .chain([99.9])
            .zip(new.iter().copied().chain([94.05]))
            .collect();
        assert_eq!(
            compare_paired(&pairs, &cfg(), 0.05).verdict,
            Verdict::Regressed
        );
        assert_eq!(
            compare_paired(&pairs, &floored, 0.05).verdict,
            Verdict::Unclear
        );
        // A drop far beyond that noise still stands on four runs a side.
        let far: Vec<f64> = new.iter().map(|v| v * 0.85).collect();
        let c = compare(&base, &far, &floored, 0.05);
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    }

    fn sample() -> impl proptest::strategy::Strategy<Value = Vec<f64>> {
        proptest::collection::vec(80.0f64..120.0, 2..10)
    }

    proptest::proptest! {
        #[test]
        fn a_noise_floor_below_the_runs_spread_changes_nothing(
            base in sample(),
            new in sample(),
            drop in 0.8f64..1.1,
            share in 0.0f64..1.0,
        ) {
            let new: Vec<f64> = new.iter().map(|v| v * drop).collect();
            let spread = |v: &[f64]| log_mean_var(v).1.sqrt();
            let floor = share * spread(&base).min(spread(&new));
            let floored = DecisionConfig { noise_floor: floor, ..cfg() };
            let (with, without) = (compare(&base, &new, &floored, 0.05), compare(&base, &new, &cfg(), 0.05));
            proptest::prop_assert_eq!(with, without);
            // Whatever the floor, the estimate is the runs'.
            let high = DecisionConfig { noise_floor: 0.2, ..cfg() };
            proptest::prop_assert_eq!(compare(&base, &new, &high, 0.05).change.pct, without.change.pct);
        }
    }

    fn reference() -> Reference {
        Reference {
            good_log_level: 100f64.ln(),
            good_runs: 8,
            bad_log_level: 90f64.ln(),
            bad_runs: 8,
            log_sigma: 0.03,
        }
    }

    #[test]
    fn classify_good_and_bad() {
        let r = reference();
        let good = classify(&[100.5, 99.0, 101.0, 100.0, 99.5], &r, &cfg());
        assert_eq!(good.class, Class::GoodLike, "{good:?}");
        let bad = classify(&[90.0, 89.0, 91.0], &r, &cfg());
        assert_eq!(bad.class, Class::BadLike, "{bad:?}");
    }

    #[test]
    fn one_run_never_decides() {
        let r = reference();
        assert_eq!(classify(&[10.0], &r, &cfg()).class, Class::Unclear);
        assert_eq!(classify(&[100.0], &r, &cfg()).class, Class::Unclear);
    }

    #[test]
    fn one_wild_run_does_not_flip_a_good_commit() {
        let r = reference();
        let c = classify(&[100.0, 30.0], &r, &cfg());
        assert_ne!(c.class, Class::BadLike, "{c:?}");
    }

    #[test]
    fn a_commit_between_two_steps_is_bad_like() {
        let r = Reference {
            bad_log_level: 81f64.ln(),
            ..reference()
        };
        let c = classify(&[90.0, 90.5, 89.5, 90.2], &r, &cfg());
        assert_eq!(c.class, Class::BadLike, "{c:?}");
    }

    #[test]
    fn no_gap_is_never_decided() {
        let r = Reference {
            bad_log_level: 100f64.ln(),
            ..reference()
        };
        assert_eq!(
            classify(&[50.0, 50.0, 50.0], &r, &cfg()).class,
            Class::Unclear
        );
    }
}
