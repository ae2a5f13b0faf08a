//! How a series' values and changes read, by the measure its name says
//! ([`crate::store::series_measure`]). A tps series reads as it is kept.
//! A count series keeps what instructions buy, so that higher is better
//! on both and one change-point test and one decision serve both; a
//! reader sees instructions a transaction, where lower is better: a drop
//! of what they buy is a rise of instructions, a slowdown, and its
//! interval's ends swap ([`instructions_change_pct`]).

use crate::core::counts::{Measure, instructions_change_pct, transactions_per_billion};
use crate::store::{ChangeRow, series_measure};

/// A change's size as a reader sees it: in percent, with its interval
/// when measured side by side, and the words after it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    pub pct: f64,
    /// Low end, high end.
    pub interval: Option<(f64, f64)>,
    /// `""` for tps; ` instructions a transaction` for counts.
    pub unit: &'static str,
}

impl Size {
    /// `-10.0%`, or `+1.2% instructions a transaction`.
    pub fn short(&self) -> String {
        format!("{:+.1}%{}", self.pct, self.unit)
    }

    /// `-10.0% [-12.0%, -8.0%]`, or `+1.2% [+1.0%, +1.4%] instructions a
    /// transaction`; without an interval, [`Size::short`].
    pub fn bracketed(&self) -> String {
        match self.interval {
            Some((lo, hi)) => format!("{:+.1}% [{lo:+.1}%, {hi:+.1}%]{}", self.pct, self.unit),
            None => self.short(),
        }
    }

    /// The interval alone, ` [-12.0%, -8.0%]` (empty without one).
    pub fn interval_text(&self) -> String {
        self.interval
            .map_or_else(String::new, |(lo, hi)| format!(" [{lo:+.1}%, {hi:+.1}%]"))
    }
}

/// What a move of `series` up is called where it is not hunted: a rise
/// of tps, or fewer instructions a transaction.
pub fn gain_words(series: &str) -> &'static str {
    match series_measure(series) {
        Measure::Tps => "a rise",
        Measure::Instructions => "fewer instructions",
    }
}

/// The size of `change` as its series' measure reads.
pub fn size(change: &ChangeRow) -> Size {
    let interval = change.low_pct.zip(change.high_pct);
    match series_measure(&change.series) {
        Measure::Tps => Size {
            pct: change.pct,
            interval,
            unit: "",
        },
        Measure::Instructions => Size {
            pct: instructions_change_pct(change.pct),
            interval: interval
                .map(|(lo, hi)| (instructions_change_pct(hi), instructions_change_pct(lo))),
            unit: " instructions a transaction",
        },
    }
}

/// The measure of `series` as a reader names it: `tps`, or `instructions
/// a transaction`.
pub fn measure_words(series: &str) -> &'static str {
    match series_measure(series) {
        Measure::Tps => "tps",
        Measure::Instructions => "instructions a transaction",
    }
}

/// A value kept in `series`, as a reader reads it: tps as it is, a
/// count's what instructions buy back as the instructions a transaction
/// costs.
pub fn shown_value(series: &str, value: f64) -> f64 {
    match series_measure(series) {
        Measure::Tps => value,
        Measure::Instructions => transactions_per_billion(value),
    }
}

/// `1234.5 tps`, or `45210 instructions a transaction`.
pub fn value_text(series: &str, value: f64) -> String {
    match series_measure(series) {
        Measure::Tps => format!("{value:.1} tps"),
        Measure::Instructions => format!(
            "{:.0} instructions a transaction",
            shown_value(series, value)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ChangeKind, ChangeStatus};

    fn change(series: &str, pct: f64, (lo, hi): (f64, f64)) -> ChangeRow {
        ChangeRow {
            id: 1,
            series: series.into(),
            before: "a".into(),
            after: "b".into(),
            pct,
            low_pct: Some(lo),
            high_pct: Some(hi),
            status: ChangeStatus::Confirmed,
            first_night: 1,
            p_value: 0.001,
            kind: ChangeKind::Step,
        }
    }

    #[test]
    fn a_drop_of_what_instructions_buy_reads_as_more_instructions() {
        // 1.2% more instructions: what they buy falls by 1/1.012.
        let bought = (1.0 / 1.012 - 1.0) * 100.0;
        let s = size(&change(
            "p/c1/instructions",
            bought,
            (bought - 0.2, bought + 0.2),
        ));
        assert!((s.pct - 1.2).abs() < 1e-9, "{s:?}");
        let (lo, hi) = s.interval.unwrap();
        assert!(lo < s.pct && s.pct < hi && lo > 0.9, "{s:?}");
        assert_eq!(s.short(), "+1.2% instructions a transaction");
        assert!(
            s.bracketed().starts_with("+1.2% [+1.")
                && s.bracketed().ends_with("%] instructions a transaction"),
            "{}",
            s.bracketed()
        );
        // tps reads as it is kept.
        let t = size(&change("p/c1", -10.0, (-12.0, -8.0)));
        assert_eq!(
            (t.pct, t.interval, t.short()),
            (-10.0, Some((-12.0, -8.0)), "-10.0%".into())
        );
    }

    #[test]
    fn a_count_value_reads_as_instructions_a_transaction() {
        let kept = transactions_per_billion(45_000.0);
        assert_eq!(
            value_text("p/c1/instructions", kept),
            "45000 instructions a transaction"
        );
        assert_eq!(value_text("p/c1", 1234.56), "1234.6 tps");
        assert_eq!(
            measure_words("p/c1/instructions"),
            "instructions a transaction"
        );
        assert_eq!(measure_words("p/c1"), "tps");
    }
}
