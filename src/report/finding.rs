//! What a report opens with: the finding, before how it was found.
//!
//! A PostgreSQL hacker reading a report on the list wants, first, which
//! commits cost how much: each culprit with its subject, its drop with the
//! interval and its share of the whole drop, the TPS of the good and bad
//! ends, the TPS at each client count when the why-runs swept them, and
//! which pgbisect made it, when, with the command that does it again. The
//! set-up, the machine and the evidence follow in the report's other
//! sections.

use crate::core::decide::Change;
use crate::model::short_sha as short;
use crate::report::estimate;
use crate::report::findings::{
    Culprit, HuntOutcome, HuntReport, Judgement, Provenance, UnresolvedRange,
};
use crate::report::layout::{Align, Block, Section};
pub(crate) use crate::report::units::{Units, change, pct};

/// Longest headline (it is also the mail's subject) before the culprits'
/// subjects are cut to fit.
const HEADLINE_CHARS: usize = 180;

/// Fewest characters of a commit's subject worth keeping in a headline;
/// below that the headline names the commits by SHA alone.
const SUBJECT_CHARS: usize = 20;

/// Culprits whose parent and culprit columns fit the client-count table
/// within 72 columns.
const LEVEL_PAIRS: usize = 3;

/// One line saying what was found, e.g. `pgbisect: -26.9% TPS at 128
/// clients, first bad commit ac1d7945 "Make idle backends exit ..."`. It
/// names every culprit; when their subjects make it longer than
/// [`HEADLINE_CHARS`], the subjects are cut.
pub fn headline(report: &HuntReport) -> String {
    let at = at_clients(report.clients);
    let range = format!("{}..{}", report.good.short(), report.bad.short());
    // `-26.9% TPS`, or `+6.0% instructions a transaction`.
    let units = Units::of(report);
    let pct = |value: f64| format!("{} {}", pct(units.pct(value)), units.name());
    let whole = pct(report.endpoints.change.pct);
    let best = pct(estimate::best(report).change.pct);
    match report.outcome {
        HuntOutcome::NoRegression => {
            format!("pgbisect: no regression {at} in {range} ({whole})")
        }
        HuntOutcome::Inconclusive => {
            format!("pgbisect: inconclusive {at} in {range} ({whole})")
        }
        HuntOutcome::CulpritFound => match report.culprits.as_slice() {
            [] => format!("pgbisect: {best} {at}, pinned to a range in {range}"),
            [c] => format!(
                "pgbisect: {} {at}, first bad commit {}{}",
                pct(c.change.pct),
                named(c, None),
                also_unpinned(report)
            ),
            many => {
                let line = |cut: Option<usize>| {
                    format!(
                        "pgbisect: {best} {at}, {} bad commits {}{}",
                        many.len(),
                        and_list(many.iter().map(|c| named(c, cut)).collect()),
                        also_unpinned(report)
                    )
                };
                let full = line(None);
                if full.chars().count() <= HEADLINE_CHARS {
                    return full;
                }
                // What is left for the subjects, shared out evenly; each
                // also takes ` ""`.
                let bare = line(Some(0));
                let room = HEADLINE_CHARS.saturating_sub(bare.chars().count()) / many.len();
                match room.saturating_sub(3) {
                    each if each >= SUBJECT_CHARS => line(Some(each)),
                    _ => bare,
                }
            }
        },
    }
}

/// `ac1d7945 "Make idle backends exit ..."`: a culprit's short SHA and its
/// subject, cut to `cut` characters (`Some(0)`: the SHA alone).
fn named(c: &Culprit, cut: Option<usize>) -> String {
    match cut {
        Some(0) => short(&c.commit).to_string(),
        Some(n) => format!("{} \"{}\"", short(&c.commit), cut_words(&c.subject, n)),
        None => format!("{} \"{}\"", short(&c.commit), c.subject),
    }
}

/// `text` cut at a word boundary to at most `chars` characters, `...`
/// included, when it is longer.
fn cut_words(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let room = chars.saturating_sub(3);
    let head: String = text.chars().take(room).collect();
    let kept = match head.rfind(' ') {
        Some(i) if i > room / 2 => head[..i].trim_end_matches([',', ';', ':']),
        _ => head.as_str(),
    };
    format!("{kept}...")
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(mut items: Vec<String>) -> String {
    match items.len() {
        0 | 1 => items.pop().unwrap_or_default(),
        _ => {
            let last = items.pop().unwrap_or_default();
            format!("{} and {last}", items.join(", "))
        }
    }
}

/// The end of a headline naming culprits when other drops were pinned
/// only to a range of commits, so the subject line does not read as the
/// whole story.
fn also_unpinned(report: &HuntReport) -> String {
    match report.unresolved.len() {
        0 => String::new(),
        1 => ", and a drop in a range of commits".into(),
        n => format!(", and drops in {n} ranges of commits"),
    }
}

fn at_clients(clients: u32) -> String {
    match clients {
        1 => "at 1 client".to_string(),
        n => format!("at {n} clients"),
    }
}

/// The section a report opens with.
pub fn section(report: &HuntReport) -> Section {
    let best = estimate::best(report);
    let mut blocks = vec![Block::Facts(whole_facts(report, &best))];
    blocks.extend(steps(report, &best.change));
    blocks.extend(levels(report));
    blocks.extend(provenance(report.made.as_ref()));
    Section {
        heading: "Finding".into(),
        blocks,
    }
}

/// The good and bad ends' TPS, and the best estimate of the change.
fn whole_facts(report: &HuntReport, best: &estimate::Estimate) -> Vec<(String, String)> {
    let end = |j: Judgement| report.tested.iter().find(|t| t.judgement == j);
    let units = Units::of(report);
    let (mut facts, mut medians) = (Vec::new(), None);
    if let (Some(good), Some(bad)) = (end(Judgement::GoodEndpoint), end(Judgement::BadEndpoint))
        && let (Some(g), Some(b)) = (&good.summary, &bad.summary)
    {
        let ratio = 100.0 * (b.median / g.median - 1.0);
        medians = Some(ratio);
        facts.push((
            "good..bad".to_string(),
            format!(
                "{} -> {} {} {} ({:+.1}%), medians of {} + {} runs",
                units.level(g.median),
                units.level(b.median),
                units.name(),
                at_clients(report.clients),
                units.pct(ratio),
                good.samples.len(),
                bad.samples.len()
            ),
        ));
    }
    facts.push((
        "change".to_string(),
        format!("{}, from {}", units.change(&best.change), best.basis),
    ));
    let c = &best.change;
    if let Some(m) = medians.filter(|m| m.is_finite() && (*m < c.low_pct || *m > c.high_pct)) {
        facts.push((
            "why two".to_string(),
            format!(
                "the endpoints' medians ({:+.1}%) set runs made at different times against \
                 each other, and the machine's speed moved between them (see the noise \
                 below); the change is from {}, which such swings move far less",
                units.pct(m),
                best.basis
            ),
        ));
    }
    facts
}

/// Each culprit and each range left unresolved, in history order, with
/// its drop and its share of the whole.
fn steps(report: &HuntReport, whole: &Change) -> Vec<Block> {
    let units = Units::of(report);
    let position = |id: &str| {
        report
            .tested
            .iter()
            .find(|t| t.commit.id == id)
            .map_or(usize::MAX, |t| t.position)
    };
    let mut steps: Vec<(usize, Block)> = report
        .culprits
        .iter()
        .map(|c| (position(&c.commit), culprit_step(c, whole, units)))
        .chain(
            report
                .unresolved
                .iter()
                .map(|r| (position(&r.first_bad.id), range_step(r, whole, units))),
        )
        .collect();
    steps.sort_by_key(|(pos, _)| *pos);
    steps.into_iter().map(|(_, block)| block).collect()
}

fn culprit_step(c: &Culprit, whole: &Change, units: Units) -> Block {
    Block::Item {
        title: format!("{} {}", short(&c.commit), c.subject),
        facts: vec![
            ("change".into(), with_share(&c.change, whole, units)),
            (
                if units.0.is_tps() { "tps" } else { "instr/tx" }.into(),
                units.beside_parent(c, "runs"),
            ),
        ],
    }
}

fn range_step(r: &UnresolvedRange, whole: &Change, units: Units) -> Block {
    let drop = match &r.comparison {
        Some(cmp) => with_share(&cmp.change, whole, units),
        None => "not measured side by side".into(),
    };
    Block::Item {
        title: format!(
            "{}..{}: a drop not pinned to one of its {} commits",
            r.last_good.short(),
            r.first_bad.short(),
            r.suspects.len()
        ),
        facts: vec![("change".into(), drop)],
    }
}

/// A step's change and, when both it and the whole are drops, its share
/// of the whole: the ratio of their logarithms, so that steps that make
/// up the whole drop add up to 100%.
fn with_share(step: &Change, whole: &Change, units: Units) -> String {
    let ln = |pct: f64| (1.0 + pct / 100.0).ln();
    let (s, w) = (ln(step.pct), ln(whole.pct));
    if step.pct < 0.0 && whole.pct < 0.0 && s.is_finite() && w.is_finite() {
        format!(
            "{}, {:.0}% of the whole drop",
            units.change(step),
            100.0 * s / w
        )
    } else {
        units.change(step)
    }
}

/// Median TPS at each client count of the why-runs, each culprit beside
/// its parent, as a hacker lays out a version comparison; nothing when
/// no culprit's why-runs swept the client counts.
fn levels(report: &HuntReport) -> Vec<Block> {
    let mut whys: Vec<_> = report
        .culprits
        .iter()
        .filter_map(|c| report.why_of(&c.commit))
        .filter(|w| !w.points.is_empty())
        .collect();
    let swept = whys.iter().any(|w| w.points.len() > 1);
    if !swept {
        return Vec::new();
    }
    let left_out = whys.len().saturating_sub(LEVEL_PAIRS);
    whys.truncate(LEVEL_PAIRS);
    let mut clients: Vec<u32> = whys
        .iter()
        .flat_map(|w| w.points.iter().map(|p| p.clients))
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let mut columns = vec![("clients".to_string(), Align::Right)];
    for w in &whys {
        columns.push((short(&w.parent).to_string(), Align::Right));
        columns.push((format!("{}*", short(&w.commit)), Align::Right));
    }
    let rows = clients
        .iter()
        .map(|&n| {
            let mut row = vec![n.to_string()];
            for w in &whys {
                let point = w.points.iter().find(|p| p.clients == n);
                let tps = |side: Option<f64>| side.map_or("-".to_string(), |t| format!("{t:.1}"));
                row.push(tps(point.map(|p| p.before.median_tps)));
                row.push(tps(point.map(|p| p.after.median_tps)));
            }
            row
        })
        .collect();
    let mut intro = "Median TPS at each client count, each first bad commit (*) beside its \
                     parent, from the why-runs (each pair measured side by side, - where a \
                     pair was not measured):"
        .to_string();
    if left_out > 0 {
        intro += &format!(" {left_out} more culprits' tables are under each below.");
    }
    vec![Block::Paragraph(intro), Block::Table { columns, rows }]
}

/// Which pgbisect made the result, when, and the command that hunts the
/// same range again.
fn provenance(made: Option<&Provenance>) -> Vec<Block> {
    let Some(m) = made else {
        return vec![Block::Paragraph(
            "The pgbisect that made this result did not record its version, the date or \
             its command."
                .into(),
        )];
    };
    vec![
        Block::Paragraph(format!(
            "pgbisect {}, hunt ended {}. To hunt the same range again, in a PostgreSQL \
             checkout:",
            m.version,
            readable_date(&m.finished)
        )),
        Block::Command(m.command.clone()),
    ]
}

/// `2026-12-03T05:48:27Z` as `2026-12-03 05:48 UTC`; anything else as it is.
fn readable_date(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(day), Some(time)) if rfc3339.ends_with('Z') => format!("{day} {time} UTC"),
        _ => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::Measure;

    fn fixture() -> HuntReport {
        serde_json::from_str(include_str!("../../tests/fixtures/reports/hunt.json")).unwrap()
    }

    #[test]
    fn the_headline_names_every_culprit() {
        let report = fixture();
        let line = headline(&report);
        for c in &report.culprits {
            assert!(line.contains(short(&c.commit)), "{line}");
        }
        assert!(line.chars().count() <= HEADLINE_CHARS, "{line}");
    }

    #[test]
    fn many_culprits_keep_their_shas_and_lose_their_subjects_first() {
        let mut report = fixture();
        let one = report.culprits[0].clone();
        report.culprits = (0..12)
            .map(|i| Culprit {
                commit: format!("{i:02}{}", &one.commit[2..]),
                ..one.clone()
            })
            .collect();
        let line = headline(&report);
        assert!(line.chars().count() <= HEADLINE_CHARS + 12 * 10, "{line}");
        assert!(line.contains("12 bad commits 009ee824, 019ee824"), "{line}");
        assert!(line.contains(" and 119ee824,"), "{line}");
        assert!(!line.contains('"'), "{line}");
    }

    #[test]
    fn subjects_are_cut_at_a_word() {
        assert_eq!(
            cut_words("Make idle backends exit if the postmaster dies", 24),
            "Make idle backends..."
        );
        assert_eq!(cut_words("short", 24), "short");
        assert_eq!(and_list(vec!["a".into()]), "a");
        assert_eq!(
            and_list(vec!["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
    }

    #[test]
    fn shares_of_steps_that_make_the_whole_add_up() {
        let c = |pct: f64| Change {
            pct,
            low_pct: pct - 1.0,
            high_pct: pct + 1.0,
            confidence: 0.95,
        };
        // 0.9 * 0.8 = 0.72: -10% and -20% make -28%.
        let whole = c(-28.0);
        let a = with_share(&c(-10.0), &whole, Units(Measure::Tps));
        let b = with_share(&c(-20.0), &whole, Units(Measure::Tps));
        assert!(a.ends_with(", 32% of the whole drop"), "{a}");
        assert!(b.ends_with(", 68% of the whole drop"), "{b}");
        assert!(!with_share(&c(-10.0), &c(3.0), Units(Measure::Tps)).contains("share"));
    }

    #[test]
    fn the_finding_opens_with_the_ends_then_each_step_in_history_order() {
        let report = fixture();
        let s = section(&report);
        let Block::Facts(facts) = &s.blocks[0] else {
            panic!("{:?}", s.blocks[0]);
        };
        assert_eq!(facts[0].0, "good..bad");
        assert!(
            facts[0]
                .1
                .starts_with("52111.1 -> 36012.3 TPS at 128 clients"),
            "{}",
            facts[0].1
        );
        let titles: Vec<&str> = s
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Item { title, .. } => Some(title.as_str()),
                _ => None,
            })
            .collect();
        assert!(titles[0].starts_with("009ee824 "), "{titles:?}");
        assert!(titles[1].starts_with("775e1ef0..e0646d0a"), "{titles:?}");
        assert!(titles[2].starts_with("623f1568 "), "{titles:?}");
    }

    #[test]
    fn medians_that_disagree_with_the_change_are_explained_not_left_to_puzzle() {
        let facts = |report: &HuntReport| {
            let Block::Facts(facts) = section(report).blocks.remove(0) else {
                panic!("no facts first");
            };
            facts
        };
        let mut report = fixture();
        assert!(facts(&report).iter().all(|(k, _)| k != "why two"));
        // The good end's runs fell in a slow spell: its median reads low.
        for t in &mut report.tested {
            if t.judgement == Judgement::GoodEndpoint
                && let Some(s) = &mut t.summary
            {
                s.median = 40_000.0;
            }
        }
        let facts = facts(&report);
        assert!(facts[0].1.contains("(-10.0%)"), "{}", facts[0].1);
        let (_, why) = facts.iter().find(|(k, _)| k == "why two").expect("why two");
        assert!(
            why.contains("(-10.0%)") && why.contains("different times"),
            "{why}"
        );
    }

    #[test]
    fn without_a_sweep_there_is_no_client_table_and_an_old_result_says_what_it_lacks() {
        let mut report = fixture();
        assert!(!levels(&report).is_empty());
        for w in &mut report.why {
            w.points.truncate(1);
        }
        assert!(levels(&report).is_empty());
        report.made = None;
        let blocks = provenance(None);
        assert!(
            matches!(&blocks[0], Block::Paragraph(p) if p.contains("did not record")),
            "{blocks:?}"
        );
    }

    #[test]
    fn dates_read_as_people_write_them() {
        assert_eq!(
            readable_date("2026-12-03T05:48:27Z"),
            "2026-12-03 05:48 UTC"
        );
        assert_eq!(readable_date("yesterday"), "yesterday");
    }
}
