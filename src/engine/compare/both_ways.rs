//! `compare --measure auto`: each client count measured both ways, tps
//! and instruction counts, and the measure that decides there chosen as a
//! hunt chooses it at its endpoints
//! ([`crate::core::choose_measure::pick`], the one rule for both).
//!
//! A comparison makes a fixed number of runs a side, so every choice is
//! made as at a hunt's run cap: whatever is still unclear, an answer.
//! Its comparisons are single ones, at the full error rate: a comparison
//! looks at its runs once, where a hunt's check looks after every round.

use super::{CompareReport, Row};
use crate::core::choose_measure::pick;
use crate::core::counts::Measure;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The counted runs beside the timed ones (the report's `rows`), and the
/// measure that decides at each client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BothWays {
    /// One row a client count, of the counted runs.
    pub counted: Vec<Row>,
    pub deciding: Vec<Deciding>,
}

/// The measure that decides at one client count, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deciding {
    pub clients: u32,
    /// `None` when a side has too few results on either measure.
    pub measure: Option<Measure>,
    pub why: String,
}

impl BothWays {
    /// The choice at each client count of `timed` (rows on tps) and
    /// `counted` (the same client counts, counted), at `threshold`.
    pub fn of(timed: &[Row], counted: Vec<Row>, threshold: f64) -> BothWays {
        let deciding = timed
            .iter()
            .map(|row| {
                let on_counts = counted.iter().find(|c| c.clients == row.clients);
                let both = row
                    .comparison
                    .as_ref()
                    .zip(on_counts.and_then(|c| c.comparison.as_ref()));
                let picked = both.and_then(|(t, c)| pick(t, c, threshold, true));
                Deciding {
                    clients: row.clients,
                    measure: picked.as_ref().map(|p| p.measure),
                    why: picked.map_or_else(
                        || "a side has too few results on tps or on counts to choose".into(),
                        |p| p.why,
                    ),
                }
            })
            .collect();
        BothWays { counted, deciding }
    }

    /// The counted runs as a report of their own, for their table.
    pub fn counted_report(&self, report: &CompareReport) -> CompareReport {
        CompareReport {
            measure: Measure::Instructions,
            rows: self.counted.clone(),
            both_ways: None,
            why: None,
            ..report.clone()
        }
    }

    /// Which measure decides at each client count, and why.
    pub fn deciding_text(&self) -> String {
        let mut out = String::from("\ndeciding measure (as a hunt with --measure auto chooses):\n");
        for d in &self.deciding {
            let measure = d.measure.map_or("none".to_string(), |m| m.to_string());
            let _ = writeln!(out, "{:>7} clients: {measure}: {}", d.clients, d.why);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(clients: u32, a: &[f64], b: &[f64], counted: bool) -> Row {
        let mut row = Row::new(clients);
        if counted {
            (row.a_instructions, row.b_instructions) = (a.to_vec(), b.to_vec());
        } else {
            (row.a_tps, row.b_tps) = (a.to_vec(), b.to_vec());
        }
        let cfg = crate::core::decide::DecisionConfig {
            threshold: 0.03,
            ..Default::default()
        };
        let measure = if counted {
            Measure::Instructions
        } else {
            Measure::Tps
        };
        row.analyse(&measure.decision(cfg));
        row
    }

    /// Five counts of one commit, and five tps runs of it.
    const SAME: [f64; 5] = [40_000.0, 40_010.0, 39_995.0, 40_005.0, 40_002.0];
    const SLOW: [f64; 5] = [1000.0, 1010.0, 995.0, 1005.0, 1002.0];

    fn scaled(runs: &[f64], by: f64) -> Vec<f64> {
        runs.iter().map(|v| v * by).collect()
    }

    #[test]
    fn each_client_count_is_decided_by_the_hunts_rule() {
        let (same, slow) = (SAME, SLOW);
        let more = scaled(&same, 1.06);
        let (down6, down20) = (scaled(&slow, 0.94), scaled(&slow, 0.8));
        // At 1 client the instructions rose 6% and tps fell with them; at
        // 64, tps fell 20% on the same instructions (a lock wait).
        let timed = [row(1, &slow, &down6, false), row(64, &slow, &down20, false)];
        let counted = vec![row(1, &same, &more, true), row(64, &same, &same, true)];
        let both = BothWays::of(&timed, counted, 0.03);
        let measures: Vec<_> = both.deciding.iter().map(|d| d.measure).collect();
        assert_eq!(measures, [Some(Measure::Instructions), Some(Measure::Tps)]);
        assert!(
            both.deciding[1].why.contains("waiting"),
            "{:?}",
            both.deciding
        );
        let held = [row(1, &slow, &slow, false), row(64, &slow, &[], false)];
        let counted = vec![row(1, &same, &more, true), row(64, &same, &same, true)];
        let both = BothWays::of(&held, counted, 0.03);
        assert_eq!(both.deciding[0].measure, Some(Measure::Tps));
        assert!(
            both.deciding[0].why.contains("tps held"),
            "{:?}",
            both.deciding
        );
        assert_eq!(both.deciding[1].measure, None);
        let text = both.deciding_text();
        assert!(
            text.contains("     64 clients: none: a side has too few"),
            "{text}"
        );
    }

    #[test]
    fn the_table_shows_both_measures_under_one_header_then_which_decides() {
        let timed = vec![row(1, &SLOW, &scaled(&SLOW, 0.94), false)];
        let counted = vec![row(1, &SAME, &scaled(&SAME, 1.06), true)];
        let both = BothWays::of(&timed, counted, 0.03);
        let (a, b) = (
            crate::model::Commit::bare("a"),
            crate::model::Commit::bare("b"),
        );
        let report = CompareReport {
            a,
            b,
            a_label: "a".into(),
            b_label: "b".into(),
            threshold: 0.03,
            measurement: "pgbench -S".into(),
            measure: Measure::Tps,
            measured_on: None,
            rows: timed,
            why: None,
            both_ways: Some(both),
        };
        let text = super::super::table(&report);
        assert_eq!(text.matches("measured with").count(), 1, "{text}");
        let (tps, counts) = (
            text.find("A tps").unwrap(),
            text.find("A instr/tx").unwrap(),
        );
        let deciding = text.find("deciding measure").unwrap();
        assert!(tps < counts && counts < deciding, "{text}");
        assert!(
            text.contains("      1 clients: instructions: the counts rose +6.00%"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["both_ways"]["deciding"][0]["measure"], "instructions");
        assert_eq!(
            json["both_ways"]["counted"][0]["a_instructions"][0],
            40_000.0
        );
    }
}
