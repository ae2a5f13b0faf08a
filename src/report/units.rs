//! How a report shows a level and a change: in tps, or, for a hunt that
//! decided on instruction counts, in the instructions a transaction costs
//! (see [`crate::report::counted`]), with the interval and the confidence
//! of the change.

use crate::core::counts::{Measure, instructions_change_pct};
use crate::core::decide::Change;
use crate::model::short_sha;
use crate::report::findings::{Culprit, HuntReport};

/// A change in percent, signed, to a tenth: `-26.9%`.
pub(crate) fn pct(value: f64) -> String {
    format!("{value:+.1}%")
}

/// `-26.9% [-28.1%, -25.7%] at 95% confidence`; a change without a
/// finite interval (too few runs on a side) says so instead.
pub(crate) fn change(c: &Change) -> String {
    if !(c.pct.is_finite() && c.low_pct.is_finite() && c.high_pct.is_finite()) {
        return "not measured: too few runs for an interval".into();
    }
    format!(
        "{} [{}, {}] at {}% confidence",
        pct(c.pct),
        pct(c.low_pct),
        pct(c.high_pct),
        confidence_pct(c.confidence)
    )
}

/// A confidence level in percent, rounded down to a tenth so that an
/// achieved level of 99.99% never reads as a certain 100%.
pub fn confidence_pct(confidence: f64) -> String {
    let tenths = (confidence * 1000.0 + 1e-6).floor().min(999.0);
    if tenths % 10.0 == 0.0 {
        format!("{:.0}", tenths / 10.0)
    } else {
        format!("{:.1}", tenths / 10.0)
    }
}

/// What a report's levels and changes are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Units(pub Measure);

impl Units {
    pub fn of(report: &HuntReport) -> Units {
        Units(report.measure)
    }

    /// What a level is, after a number: `TPS`, or `instructions a
    /// transaction`.
    pub fn name(&self) -> &'static str {
        match self.0 {
            Measure::Tps => "TPS",
            Measure::Instructions => "instructions a transaction",
        }
    }

    /// A figure decided on, as shown: tps, or the instructions a
    /// transaction it stands for.
    pub fn level(&self, figure: f64) -> String {
        match self.0 {
            Measure::Tps => format!("{figure:.1}"),
            Measure::Instructions => format!("{:.0}", 1e9 / figure),
        }
    }

    /// A change of the figure decided on as the change of what was
    /// measured, in percent: of tps, or of instructions a transaction.
    pub fn pct(&self, pct: f64) -> f64 {
        match self.0 {
            Measure::Tps => pct,
            Measure::Instructions => instructions_change_pct(pct),
        }
    }

    /// `-26.9% [-28.1%, -25.7%] at 95% confidence` of tps, or `+6.03%
    /// [+5.80%, +6.27%] at 99% confidence` of instructions a transaction
    /// (a drop of what a billion instructions buy is a rise of the
    /// instructions, its interval's ends swapped).
    pub fn change(&self, c: &Change) -> String {
        match self.0 {
            Measure::Tps => change(c),
            Measure::Instructions => {
                if !(c.pct.is_finite() && c.low_pct.is_finite() && c.high_pct.is_finite()) {
                    return change(c);
                }
                format!(
                    "{:+.2}% [{:+.2}%, {:+.2}%] at {}% confidence",
                    instructions_change_pct(c.pct),
                    instructions_change_pct(c.high_pct),
                    instructions_change_pct(c.low_pct),
                    confidence_pct(c.confidence)
                )
            }
        }
    }

    /// A culprit's level against its parent's: `{before} -> {after}, {n}
    /// + {m} {runs} side by side with its parent {sha}`.
    pub fn beside_parent(&self, c: &Culprit, runs: &str) -> String {
        format!(
            "{} -> {}, {} + {} {runs} side by side with its parent {}",
            self.level(c.before_tps),
            self.level(c.after_tps),
            c.runs_before,
            c.runs_after,
            short_sha(&c.parent)
        )
    }
}
