//! Decisions over several hosts, each host a block.
//!
//! Identical machines still differ in speed by a few percent and in
//! noise. Pooling their runs as if one machine had made them would read a
//! host's speed as a commit's: a host 3% faster that happened to measure
//! one side more often would make a 3% change. So runs are only ever set
//! against runs of the same host, and the per-host comparisons combined:
//!
//! * [`compare_blocked`]: the fixed-effect (stratified) estimate, the
//!   additive model `log tps = host + side + noise` fitted by least
//!   squares, whose side effect is the per-host differences of mean log
//!   throughput weighted by their precision `n_b n_n / (n_b + n_n)`; its t
//!   interval uses the residual variance pooled within hosts, on
//!   `N - H - 1` degrees of freedom (one run a side on each host still
//!   leaves `H - 1`). When the residuals have outliers it falls back, as
//!   [`compare`] does to Mann-Whitney, to Van Elteren's stratified rank
//!   test and the stratified Hodges-Lehmann shift.
//! * [`classify_hosts`]: each run set against its own host's good and bad
//!   levels.
//!
//! With one host both are exactly [`compare`] and [`classify`].

use super::{
    Change, Classification, Comparison, DecisionConfig, Method, Reference, change_of, classify,
    compare, has_outliers, log_mean_var, t_change, verdict_of,
};
use crate::core::stats::{self, Alternative, Stratum};
use statrs::distribution::StudentsT;

/// One host's runs of the two sides of a comparison: `(base, new)`.
pub type Block = (Vec<f64>, Vec<f64>);

/// Compares `new` against `base` over hosts (`blocks`, one a host), as
/// [`compare`] does on one machine; hosts that measured only one side say
/// nothing. Regressed and unchanged mean what they mean there, and fewer
/// than `min_runs` a side over all hosts is always unclear.
pub fn compare_blocked(blocks: &[Block], cfg: &DecisionConfig, threshold: f64) -> Comparison {
    if let [(base, new)] = blocks {
        return compare(base, new, cfg, threshold);
    }
    let both: Vec<Stratum> = blocks
        .iter()
        .filter(|(b, n)| !b.is_empty() && !n.is_empty())
        .map(|(b, n)| (b.as_slice(), n.as_slice()))
        .collect();
    if both.len() <= 1 {
        let (base, new) = both.first().copied().unwrap_or((&[], &[]));
        return compare(base, new, cfg, threshold);
    }
    let n_base: usize = both.iter().map(|(b, _)| b.len()).sum();
    let n_new: usize = both.iter().map(|(_, n)| n.len()).sum();
    let clean = n_base >= 3 && n_new >= 3 && !residuals_have_outliers(&both);
    let estimate = clean
        .then(|| fixed_effect(&both, cfg.alpha, cfg.noise_floor))
        .flatten()
        .unwrap_or_else(|| stratified_ranks(&both, cfg.alpha));
    let enough = n_base >= cfg.min_runs && n_new >= cfg.min_runs;
    let verdict = verdict_of(
        enough,
        estimate,
        || stratified_ranks(&both, cfg.alpha),
        cfg,
        threshold,
    );
    Comparison::new(verdict, estimate, n_base, n_new)
}

/// Per-host differences of mean log throughput, their precision weights
/// and the within-host sum of squares.
struct Cells {
    diffs: Vec<(f64, f64)>,
    within: f64,
    runs: f64,
}

fn cells(strata: &[Stratum]) -> Cells {
    let mut cells = Cells {
        diffs: Vec::new(),
        within: 0.0,
        runs: 0.0,
    };
    for (base, new) in strata {
        let (mb, vb, nb) = log_mean_var(base);
        let (mn, vn, nn) = log_mean_var(new);
        cells.diffs.push((mn - mb, nb * nn / (nb + nn)));
        cells.within += vb * (nb - 1.0) + vn * (nn - 1.0);
        cells.runs += nb + nn;
    }
    cells
}

/// The combined shift: the precision-weighted mean of the per-host
/// differences.
fn combined(cells: &Cells) -> f64 {
    let weights: f64 = cells.diffs.iter().map(|(_, w)| w).sum();
    cells.diffs.iter().map(|(d, w)| d * w).sum::<f64>() / weights
}

/// The fixed-effect estimate with its t interval, the pooled variance
/// never below `floor` squared; `None` without residual degrees of
/// freedom or spread.
fn fixed_effect(strata: &[Stratum], alpha: f64, floor: f64) -> Option<(Change, f64, Method)> {
    let cells = cells(strata);
    let shift = combined(&cells);
    let weights: f64 = cells.diffs.iter().map(|(_, w)| w).sum();
    let interaction: f64 = cells
        .diffs
        .iter()
        .map(|(d, w)| w * (d - shift).powi(2))
        .sum();
    let df = cells.runs - strata.len() as f64 - 1.0;
    if df < 1.0 {
        return None;
    }
    let variance = ((cells.within + interaction) / df).max(floor * floor);
    let se = (variance / weights).sqrt();
    if se <= 0.0 || !se.is_finite() {
        return None;
    }
    let t_dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t_change(shift, se, &t_dist, alpha, Method::StratifiedT))
}

/// Whether a run lies far from what the additive model expects of it
/// (its host's level, moved by the combined shift on the new side).
fn residuals_have_outliers(strata: &[Stratum]) -> bool {
    let shift = combined(&cells(strata));
    let residuals: Vec<f64> = strata
        .iter()
        .flat_map(|(base, new)| {
            let logs = |v: &[f64], by: f64| v.iter().map(|x| x.ln() - by).collect::<Vec<f64>>();
            let mut both = logs(base, 0.0);
            both.extend(logs(new, shift));
            let level = both.iter().sum::<f64>() / both.len() as f64;
            both.into_iter().map(move |x| (x - level).exp())
        })
        .collect();
    has_outliers(&residuals)
}

/// Van Elteren's test with the stratified Hodges-Lehmann shift.
fn stratified_ranks(strata: &[Stratum], alpha: f64) -> (Change, f64, Method) {
    let p = stats::van_elteren(strata, Alternative::Less);
    let shift = stats::stratified_shift(strata, 1.0 - 2.0 * alpha);
    (change_of(shift), p, Method::VanElteren)
}

/// Classifies a candidate measured on several hosts: `groups` holds, for
/// each host, the candidate's runs there and that host's reference levels.
/// Every run is read relative to its own host's good level; the gap
/// between the levels is the hosts' gaps averaged over the candidate's
/// runs, and the levels rest on all hosts' reference runs. Hosts without
/// runs of the candidate or without both levels say nothing. One host is
/// exactly [`classify`].
pub fn classify_hosts(groups: &[(Vec<f64>, Reference)], cfg: &DecisionConfig) -> Classification {
    if let [(runs, reference)] = groups {
        return classify(runs, reference, cfg);
    }
    let usable: Vec<&(Vec<f64>, Reference)> = groups
        .iter()
        .filter(|(runs, r)| !runs.is_empty() && r.good_runs > 0 && r.bad_runs > 0)
        .collect();
    if let [(runs, reference)] = usable.as_slice() {
        return classify(runs, reference, cfg);
    }
    let n: usize = usable.iter().map(|(runs, _)| runs.len()).sum();
    let gap = usable
        .iter()
        .map(|(runs, r)| runs.len() as f64 * (r.good_log_level - r.bad_log_level))
        .sum::<f64>()
        / n.max(1) as f64;
    let relative: Vec<f64> = usable
        .iter()
        .flat_map(|(runs, r)| runs.iter().map(|v| (v.ln() - r.good_log_level).exp()))
        .collect();
    let reference = Reference {
        good_log_level: 0.0,
        good_runs: usable.iter().map(|(_, r)| r.good_runs).sum(),
        bad_log_level: -gap,
        bad_runs: usable.iter().map(|(_, r)| r.bad_runs).sum(),
        log_sigma: usable.iter().map(|(_, r)| r.log_sigma).fold(0.0, f64::max),
    };
    classify(&relative, &reference, cfg)
}

#[cfg(test)]
mod tests {
    use super::super::{Class, Verdict};
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> DecisionConfig {
        DecisionConfig::default()
    }

    #[test]
    fn one_host_is_the_plain_comparison() {
        let base = vec![100.0, 101.0, 99.0, 100.5, 99.5];
        let new = vec![90.0, 91.0, 89.5, 90.2, 90.8];
        let plain = compare(&base, &new, &cfg(), 0.05);
        let blocked = compare_blocked(&[(base.clone(), new.clone())], &cfg(), 0.05);
        assert_eq!(plain, blocked);
        // A second host that measured only one side changes nothing.
        let lopsided = compare_blocked(&[(base, new), (vec![70.0], vec![])], &cfg(), 0.05);
        assert_eq!(plain, lopsided);
    }

    /// A fast host measured the base more often, a slow one the new
    /// commit: pooled, their speeds read as a drop that is not there.
    #[test]
    fn unequal_hosts_are_not_pooled_into_a_false_drop() {
        let fast = (
            vec![1000.0, 1004.0, 996.0, 1002.0, 998.0],
            vec![1001.0, 999.0],
        );
        let slow = (vec![801.0, 799.0], vec![800.0, 803.0, 797.0, 801.0, 799.0]);
        let pooled_base: Vec<f64> = fast.0.iter().chain(&slow.0).copied().collect();
        let pooled_new: Vec<f64> = fast.1.iter().chain(&slow.1).copied().collect();
        let pooled = compare(&pooled_base, &pooled_new, &cfg(), 0.05);
        assert_ne!(pooled.verdict, Verdict::Unchanged, "{pooled:?}");
        let blocked = compare_blocked(&[fast, slow], &cfg(), 0.05);
        assert_eq!(blocked.verdict, Verdict::Unchanged, "{blocked:?}");
        assert_eq!(blocked.method, Method::StratifiedT);
        assert!(blocked.change.pct.abs() < 0.5, "{blocked:?}");
        assert_eq!((blocked.n_base, blocked.n_new), (7, 7));
    }

    #[test]
    fn a_drop_on_every_host_is_a_regression_even_one_run_a_side_each() {
        let blocks: Vec<Block> = [1000.0, 800.0, 1200.0, 900.0]
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let wobble = 1.0 + 0.003 * (i % 2) as f64;
                (vec![l * wobble], vec![l * 0.88 / wobble])
            })
            .collect();
        let c = compare_blocked(
            &blocks,
            &DecisionConfig {
                min_runs: 4,
                ..cfg()
            },
            0.05,
        );
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        assert!((c.change.pct + 12.0).abs() < 1.0, "{c:?}");
    }

    #[test]
    fn an_outlier_turns_the_comparison_to_stratified_ranks() {
        let a = (
            vec![1000.0, 1004.0, 996.0, 1002.0],
            vec![900.0, 903.0, 897.0, 901.0],
        );
        let b = (
            vec![800.0, 803.0, 797.0, 801.0],
            vec![720.0, 722.0, 300.0, 721.0],
        );
        let c = compare_blocked(&[a, b], &cfg(), 0.05);
        assert_eq!(c.method, Method::VanElteren);
        assert!((c.change.pct + 10.0).abs() < 1.0, "{c:?}");
    }

    fn reference(good: f64, bad: f64) -> Reference {
        Reference {
            good_log_level: good.ln(),
            good_runs: 8,
            bad_log_level: bad.ln(),
            bad_runs: 8,
            log_sigma: 0.02,
        }
    }

    #[test]
    fn each_run_is_judged_against_its_own_hosts_levels() {
        // The slow host's good level is below the fast host's bad level:
        // pooled levels would call every slow-host run bad.
        let groups = vec![
            (vec![1000.0, 995.0], reference(1000.0, 880.0)),
            (vec![760.0, 757.0], reference(760.0, 669.0)),
        ];
        assert_eq!(classify_hosts(&groups, &cfg()).class, Class::GoodLike);
        let bad = vec![
            (vec![881.0, 879.0], reference(1000.0, 880.0)),
            (vec![670.0, 668.0], reference(760.0, 669.0)),
        ];
        assert_eq!(classify_hosts(&bad, &cfg()).class, Class::BadLike);
        let one = [(vec![990.0, 1001.0, 1003.0], reference(1000.0, 880.0))];
        assert_eq!(
            classify_hosts(&one, &cfg()),
            classify(&one[0].0, &one[0].1, &cfg())
        );
    }

    fn sample() -> impl Strategy<Value = Vec<f64>> {
        proptest::collection::vec(900.0f64..1100.0, 1..7)
    }

    proptest! {
        #[test]
        fn one_host_is_always_the_old_comparison(base in sample(), new in sample(), drop in 0.8f64..1.1) {
            let new: Vec<f64> = new.iter().map(|v| v * drop).collect();
            let plain = compare(&base, &new, &cfg(), 0.05);
            prop_assert_eq!(plain, compare_blocked(&[(base, new)], &cfg(), 0.05));
        }

        #[test]
        fn a_speed_offset_per_host_never_changes_a_verdict(
            hosts in proptest::collection::vec((sample(), sample()), 2..4),
            drop in 0.8f64..1.1,
            offsets in proptest::collection::vec(0.7f64..1.3, 4),
        ) {
            let blocks: Vec<Block> = hosts
                .iter()
                .map(|(b, n)| (b.clone(), n.iter().map(|v| v * drop).collect()))
                .collect();
            let moved: Vec<Block> = blocks
                .iter()
                .zip(&offsets)
                .map(|((b, n), o)| (b.iter().map(|v| v * o).collect(), n.iter().map(|v| v * o).collect()))
                .collect();
            let (a, b) = (compare_blocked(&blocks, &cfg(), 0.05), compare_blocked(&moved, &cfg(), 0.05));
            prop_assert_eq!(a.verdict, b.verdict);
            prop_assert_eq!(a.method, b.method);
            prop_assert!((a.change.pct - b.change.pct).abs() < 1e-6);
        }

        #[test]
        fn a_speed_offset_per_host_never_changes_a_class(
            hosts in proptest::collection::vec(sample(), 2..4),
            level in 0.8f64..1.02,
            offsets in proptest::collection::vec(0.7f64..1.3, 4),
        ) {
            let groups = |scale: &dyn Fn(usize) -> f64| -> Vec<(Vec<f64>, Reference)> {
                hosts
                    .iter()
                    .enumerate()
                    .map(|(i, runs)| {
                        let s = scale(i);
                        let runs = runs.iter().map(|v| v * level * s).collect();
                        (runs, reference(1000.0 * s, 880.0 * s))
                    })
                    .collect()
            };
            let plain = classify_hosts(&groups(&|_| 1.0), &cfg());
            let moved = classify_hosts(&groups(&|i| offsets[i]), &cfg());
            prop_assert_eq!(plain.class, moved.class);
            prop_assert!((plain.llr - moved.llr).abs() < 1e-6 * plain.llr.abs().max(1.0));
        }
    }
}
