//! How a hunt that decided on instruction counts says so.
//!
//! The engine decides on one figure a run, higher being better: with
//! `--measure instructions` that is the transactions a billion
//! instructions buy ([`crate::core::counts::transactions_per_billion`]).
//! A reader wants the instructions a transaction costs, and a rise of
//! them, not a drop of a figure nobody quotes: [`Units`] turns the
//! engine's figures and changes back into what was counted wherever the
//! report shows a level or a change. The section of [`section`] says that
//! the hunt decided on counts, what each culprit costs a transaction, and
//! what tps says beside (the why-runs' timed runs), plainly when the two
//! disagree: counts do not see time spent waiting.

use crate::core::counts::Measure;
use crate::core::decide::Comparison;
use crate::model::short_sha as short;
use crate::report::findings::{Culprit, HuntReport};
use crate::report::layout::{Align, Block, Section};
pub use crate::report::units::Units;

/// The section a hunt on counts adds after the finding; none for a hunt
/// on tps.
pub fn section(report: &HuntReport) -> Option<Section> {
    if report.measure.is_tps() {
        return None;
    }
    let units = Units::of(report);
    let mut blocks = vec![Block::Paragraph(
        "This hunt decided on the instructions the server's backends executed a \
         transaction (counted as the benchmark below says), not on tps: counts repeat to \
         tenths of a percent where tps moves by several percent, and they do not see time \
         spent waiting (locks, I/O, the network, sleeping). The tps of a counted run is \
         that of a server slowed by the counter, and is not reported."
            .into(),
    )];
    for c in &report.culprits {
        blocks.push(culprit(report, units, c));
        blocks.extend(functions(c));
    }
    Some(Section {
        heading: "Decided on instruction counts".into(),
        blocks,
    })
}

/// The section of a hunt asked to choose its measure (`--measure auto`):
/// which one its endpoints chose, and from what; none otherwise.
pub fn chosen_section(report: &HuntReport) -> Option<Section> {
    let chosen = report.measure_chosen.as_ref()?;
    let said = |c: Option<&Comparison>, measure: Measure, runs: &str| {
        c.map_or_else(
            || "no usable runs".to_string(),
            |c| {
                format!(
                    "{} in {} + {} {runs}",
                    measure.change_text(&c.change),
                    c.n_base,
                    c.n_new
                )
            },
        )
    };
    let facts = vec![
        ("decided on".to_string(), chosen.measure.name().to_string()),
        (
            "tps".to_string(),
            said(chosen.tps.as_ref(), Measure::Tps, "timed runs"),
        ),
        (
            "instructions".to_string(),
            said(
                chosen.counts.as_ref(),
                Measure::Instructions,
                "counted runs",
            ),
        ),
    ];
    let mut blocks = vec![
        Block::Paragraph(
            "Asked to choose (--measure auto), the hunt measured both endpoints on tps \
             and on instruction counts, interleaved, before the search."
                .into(),
        ),
        Block::Facts(facts),
        Block::Paragraph(format!("Why: {}.", chosen.why)),
    ];
    if chosen.reused > 0 {
        blocks.push(Block::Paragraph(format!(
            "The {} runs of the endpoints on {} made choosing are the hunt's first runs \
             of them: they were not made again.",
            chosen.reused,
            chosen.measure.name()
        )));
    }
    Some(Section {
        heading: "Measure chosen at the endpoints".into(),
        blocks,
    })
}

/// A culprit's instructions a transaction, side by side with its parent,
/// and what tps said of it.
fn culprit(report: &HuntReport, units: Units, c: &Culprit) -> Block {
    let facts = vec![
        (
            "instr/tx".to_string(),
            units.beside_parent(c, "counted runs"),
        ),
        ("change".to_string(), units.change(&c.change)),
        ("tps".to_string(), tps_beside(report, units, c)),
    ];
    Block::Item {
        title: format!("{} {}", short(&c.commit), c.subject),
        facts,
    }
}

/// Where a culprit's instructions went: the functions whose instructions
/// a transaction moved most from its parent's, as cachegrind counted them
/// in their runs (`compare --measure instructions` shows the same table).
fn functions(c: &Culprit) -> Option<Block> {
    if c.functions.is_empty() {
        return None;
    }
    let rows = c
        .functions
        .iter()
        .map(|f| {
            let ratio = f.ratio_text();
            vec![
                format!("{:.0}", f.a),
                format!("{:.0}", f.b),
                format!("{:+.0}", f.b - f.a),
                ratio,
                crate::shown::visible_line(&f.name).into_owned(),
            ]
        })
        .collect();
    let right = |name: &str| (name.to_string(), Align::Right);
    Some(Block::Table {
        columns: vec![
            right(short(&c.parent)),
            right(short(&c.commit)),
            right("change"),
            right("ratio"),
            (
                "instructions a transaction, by function".to_string(),
                Align::Left,
            ),
        ],
        rows,
    })
}

/// What the why-runs' timed runs said of the culprit's tps at the hunt's
/// client count, and whether it agrees with the counts; what to run when
/// there were none.
fn tps_beside(report: &HuntReport, units: Units, c: &Culprit) -> String {
    let point = report
        .why_of(&c.commit)
        .and_then(|w| w.points.iter().find(|p| p.clients == report.clients));
    let Some(p) = point else {
        return format!(
            "not measured (the hunt made counted runs only); measure it beside the counts: \
             pgbisect compare {} {} --measure tps --clients {}",
            short(&c.parent),
            short(&c.commit),
            report.clients
        );
    };
    let counted = units.pct(c.change.pct);
    let timed = p.tps_change_pct;
    let said = format!(
        "{:.1} -> {:.1} ({timed:+.1}%), medians of {} + {} timed why-runs",
        p.before.median_tps, p.after.median_tps, p.before.runs, p.after.runs
    );
    // More instructions a transaction is fewer transactions a second.
    let agree = (counted > 0.0) == (timed < 0.0);
    if agree {
        format!("{said}: the same direction as the counts")
    } else {
        format!(
            "{said}: the two DISAGREE ({counted:+.2}% instructions a transaction, \
             {timed:+.1}% tps): counts do not see waiting, and the machine may hide a \
             change of instructions; this is not a change of speed of that size until tps \
             shows it"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::Measure;
    use crate::core::counts::transactions_per_billion;
    use crate::core::decide::Change;
    use crate::report::units::change;

    fn fixture() -> HuntReport {
        serde_json::from_str(include_str!("../../tests/fixtures/reports/hunt.json")).unwrap()
    }

    /// The fixture's first culprit as a hunt on counts saw it: its parent
    /// at 36,137,002 instructions a transaction, itself at 38,316,919.
    fn counted() -> HuntReport {
        let mut report = fixture();
        report.measure = Measure::Instructions;
        report.why.clear();
        let c = &mut report.culprits[0];
        c.before_tps = transactions_per_billion(36_137_002.0);
        c.after_tps = transactions_per_billion(38_316_919.0);
        c.change = Change {
            pct: -5.69,
            low_pct: -5.91,
            high_pct: -5.48,
            confidence: 0.99,
        };
        report
    }

    #[test]
    fn a_hunt_on_tps_has_no_such_section_and_keeps_its_units() {
        let report = fixture();
        assert!(section(&report).is_none());
        let units = Units::of(&report);
        assert_eq!(units.level(353.04), "353.0");
        assert_eq!(
            units.change(&report.culprits[0].change),
            change(&report.culprits[0].change)
        );
    }

    #[test]
    fn a_culprit_found_by_counts_is_shown_in_instructions_with_tps_to_measure() {
        let report = counted();
        let section = section(&report).expect("a hunt on counts says so");
        assert_eq!(section.heading, "Decided on instruction counts");
        let Some(Block::Item { facts, .. }) = section.blocks.get(1) else {
            panic!("the culprit follows the paragraph: {:?}", section.blocks);
        };
        let fact = |label: &str| {
            facts
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert!(
            fact("instr/tx").starts_with("36137002 -> 38316919, "),
            "{facts:?}"
        );
        assert_eq!(fact("change"), "+6.03% [+5.80%, +6.28%] at 99% confidence");
        assert!(fact("tps").starts_with("not measured"), "{facts:?}");
        assert!(fact("tps").contains("--measure tps --clients"), "{facts:?}");
        let headline = crate::report::finding::headline(&report);
        assert!(
            headline.contains("% instructions a transaction at 128 clients"),
            "{headline}"
        );
        assert!(!headline.contains("TPS"), "{headline}");
    }

    #[test]
    fn a_culprit_found_by_counts_shows_where_its_instructions_went() {
        let mut report = counted();
        assert!(
            !section(&report)
                .unwrap()
                .blocks
                .iter()
                .any(|b| matches!(b, Block::Table { .. })),
            "no functions, no table"
        );
        report.culprits[0].functions = vec![crate::core::counts::FunctionChange {
            name: "float8mul\u{1b}[31m".into(),
            a: 1_080_054.0,
            b: 2_100_105.0,
        }];
        let blocks = section(&report).unwrap().blocks;
        let Some(Block::Table { columns, rows }) = blocks.get(2) else {
            panic!("the table follows its culprit: {blocks:?}");
        };
        assert_eq!(columns.len(), rows[0].len());
        assert_eq!(rows[0][..4], ["1080054", "2100105", "+1020051", "+94.4%"]);
        assert!(rows[0][4].starts_with("float8mul") && !rows[0][4].contains('\u{1b}'));
        let text = crate::report::text(&report);
        assert!(
            text.contains("instructions a transaction, by function"),
            "{text}"
        );
    }

    #[test]
    fn the_chosen_measure_says_when_its_runs_were_the_hunts_first() {
        let mut report = counted();
        let mut chosen = crate::report::findings::MeasureChosen {
            measure: Measure::Instructions,
            why: "counts rose by 6.0%".into(),
            tps: None,
            counts: None,
            reused: 0,
        };
        report.measure_chosen = Some(chosen.clone());
        let paragraphs = |report: &HuntReport| -> Vec<String> {
            chosen_section(report)
                .unwrap()
                .blocks
                .into_iter()
                .filter_map(|b| match b {
                    Block::Paragraph(p) => Some(p),
                    _ => None,
                })
                .collect()
        };
        assert!(
            !paragraphs(&report)
                .iter()
                .any(|p| p.contains("not made again"))
        );
        chosen.reused = 7;
        report.measure_chosen = Some(chosen);
        let said = paragraphs(&report);
        assert!(
            said.iter().any(
                |p| p.starts_with("The 7 runs of the endpoints on instructions")
                    && p.ends_with("not made again.")
            ),
            "{said:?}"
        );
    }
}
