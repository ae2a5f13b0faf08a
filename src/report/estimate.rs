//! The size of the drop a report leads with: the best estimate the hunt
//! has, not the first one it made.
//!
//! A hunt decides that the endpoints differ from a few interleaved runs
//! (5 + 5 on a quiet machine), made before anything else and stopped as
//! soon as the drop is sure: enough to say *that* it dropped, not *how
//! much*. A real 30-commit hunt headed its report "-37.0% TPS" from such
//! runs (interval -55.4% to -3.4%) while its two culprits, each measured
//! side by side with its parent, had cost -9.2% and -11.5%.
//!
//! "Best" is decided so:
//!
//! 1. When the whole drop is pinned to culprits (no range left
//!    unresolved), it is their side-by-side changes combined: the log
//!    ratios add, their variances add (each read back from the culprit's
//!    interval as a normal one), and the interval is given at the lowest
//!    confidence of the culprits'. Each was measured with its parent in
//!    alternation, so a swing of the machine between the two hurts it
//!    least, and together they hold many more runs than the endpoints'
//!    first look. One culprit is its own change, as measured.
//! 2. Otherwise (a drop pinned only to a range, or culprits and a range)
//!    the culprits do not cover the drop, and the estimate is every run of
//!    the two endpoints the hunt made, from first to last (they are
//!    measured as references all through the search), compared as the
//!    verdicts are (Welch's t on logs, or Mann-Whitney U with the
//!    Hodges-Lehmann shift when the runs have outliers).
//! 3. A hunt without a culprit keeps the endpoints' first comparison: it
//!    is the verdict itself, and the report says so.

use crate::core::decide::{self, Change};
use crate::report::findings::{HuntOutcome, HuntReport, Judgement, RunSample};
use statrs::distribution::{ContinuousCDF, Normal};

/// The drop a report leads with, and what it was computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub change: Change,
    /// `2 culprits' side-by-side changes combined`, `all 31 + 29 runs of
    /// the endpoints`, `the endpoints' first 5 + 5 runs`.
    pub basis: String,
}

/// The best estimate of the whole drop `report` has (see the module docs).
pub fn best(report: &HuntReport) -> Estimate {
    let first = Estimate {
        change: report.endpoints.change,
        basis: format!(
            "the endpoints' first {} + {} runs",
            report.endpoints.n_base, report.endpoints.n_new
        ),
    };
    if report.outcome != HuntOutcome::CulpritFound {
        return first;
    }
    if report.unresolved.is_empty() {
        match report.culprits.as_slice() {
            [] => {}
            [one] => {
                return Estimate {
                    change: one.change,
                    basis: "the culprit side by side with its parent".into(),
                };
            }
            many => {
                if let Some(change) = combined(many.iter().map(|c| c.change)) {
                    return Estimate {
                        change,
                        basis: format!("{} culprits' side-by-side changes combined", many.len()),
                    };
                }
            }
        }
    }
    all_endpoint_runs(report).unwrap_or(first)
}

/// Changes of independent steps combined: log ratios and their
/// variances add.
pub fn combined(changes: impl Iterator<Item = Change>) -> Option<Change> {
    let normal = Normal::standard();
    let (mut sum, mut var, mut confidence) = (0.0, 0.0, 1.0f64);
    for c in changes {
        let ln = |pct: f64| (1.0 + pct / 100.0).ln();
        let z = normal.inverse_cdf(0.5 + c.confidence / 2.0);
        let (lo, hi) = (ln(c.low_pct), ln(c.high_pct));
        if !(z.is_finite() && z > 0.0 && lo.is_finite() && hi.is_finite()) {
            return None;
        }
        sum += ln(c.pct);
        var += ((hi - lo) / (2.0 * z)).powi(2);
        confidence = confidence.min(c.confidence);
    }
    let z = normal.inverse_cdf(0.5 + confidence / 2.0);
    let half = z * var.sqrt();
    let pct = |l: f64| (l.exp() - 1.0) * 100.0;
    sum.is_finite().then(|| Change {
        pct: pct(sum),
        low_pct: pct(sum - half),
        high_pct: pct(sum + half),
        confidence,
    })
}

/// Every run of the good endpoint against every run of the bad one.
fn all_endpoint_runs(report: &HuntReport) -> Option<Estimate> {
    let runs = |j: Judgement| -> Vec<RunSample> {
        report
            .tested
            .iter()
            .filter(|t| t.judgement == j)
            .flat_map(|t| t.samples.iter().cloned())
            .collect()
    };
    let (good, bad) = (runs(Judgement::GoodEndpoint), runs(Judgement::BadEndpoint));
    let more = good.len() + bad.len() > report.endpoints.n_base + report.endpoints.n_new;
    if good.len() < 2 || bad.len() < 2 || !more {
        return None;
    }
    let alpha = (1.0 - report.endpoints.change.confidence) / 2.0;
    // Runs of several hosts are set against their own host's only; on one
    // machine this is the plain estimate.
    let cfg = decide::DecisionConfig {
        alpha: alpha.clamp(0.001, 0.25),
        ..decide::DecisionConfig::default()
    };
    let blocks = RunSample::blocks(&good, &bad);
    let change = decide::compare_blocked(&blocks, &cfg, cfg.threshold).change;
    Some(Estimate {
        change,
        basis: format!("all {} + {} runs of the endpoints", good.len(), bad.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(pct: f64, low: f64, high: f64) -> Change {
        Change {
            pct,
            low_pct: low,
            high_pct: high,
            confidence: 0.98,
        }
    }

    #[test]
    fn two_steps_combine_multiplicatively_with_a_wider_interval() {
        let c =
            combined([change(-9.2, -12.0, -6.3), change(-11.5, -14.0, -9.0)].into_iter()).unwrap();
        // 0.908 * 0.885 = 0.8036
        assert!((c.pct - -19.64).abs() < 0.05, "{c:?}");
        assert!(c.low_pct < -19.64 && c.high_pct > -19.64, "{c:?}");
        let width = c.high_pct - c.low_pct;
        assert!(width > 5.7 && width < 5.7 + 5.0, "{c:?}");
        assert_eq!(c.confidence, 0.98);
    }

    fn fixture() -> HuntReport {
        serde_json::from_str(include_str!("../../tests/fixtures/reports/hunt.json")).unwrap()
    }

    /// The case: a first look at -37.0% from 5 + 5 runs, two
    /// culprits at -9.2% and -11.5% side by side.
    #[test]
    fn the_headline_leads_with_the_culprits_not_the_first_look() {
        let mut report = fixture();
        report.outcome = HuntOutcome::CulpritFound;
        report.unresolved.clear();
        report.endpoints.change = change(-37.0, -55.4, -3.4);
        let first = report.culprits[0].clone();
        report.culprits = vec![first.clone(), first];
        report.culprits[0].change = change(-9.2, -12.0, -6.3);
        report.culprits[1].change = change(-11.5, -14.0, -9.0);
        let best = best(&report);
        assert!((best.change.pct - -19.6).abs() < 0.1, "{best:?}");
        assert_eq!(best.basis, "2 culprits' side-by-side changes combined");
        let headline = crate::report::document::headline(&report);
        assert!(headline.starts_with("pgbisect: -19.6% TPS"), "{headline}");
        report.culprits.truncate(1);
        assert_eq!(super::best(&report).change, report.culprits[0].change);
    }

    #[test]
    fn a_range_left_unresolved_takes_every_run_of_the_endpoints() {
        let mut report = fixture();
        report.outcome = HuntOutcome::CulpritFound;
        assert!(!report.unresolved.is_empty());
        let mut tps = 1000.0;
        for t in &mut report.tested {
            let level = match t.judgement {
                Judgement::GoodEndpoint => 1000.0,
                Judgement::BadEndpoint => 800.0,
                _ => continue,
            };
            t.samples = (0..12)
                .map(|run| {
                    tps = level + (run % 3) as f64;
                    crate::report::findings::RunSample {
                        run,
                        tps,
                        host: None,
                    }
                })
                .collect();
        }
        let best = best(&report);
        assert_eq!(best.basis, "all 12 + 12 runs of the endpoints");
        assert!((best.change.pct - -20.0).abs() < 0.5, "{best:?}");
        report.outcome = HuntOutcome::Inconclusive;
        assert_eq!(super::best(&report).change, report.endpoints.change);
    }

    #[test]
    fn an_unusable_interval_gives_no_combination() {
        assert_eq!(combined([change(-9.0, -100.0, -5.0)].into_iter()), None);
    }
}
