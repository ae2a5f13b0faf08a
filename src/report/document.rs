//! What a report says, before it is laid out.
//!
//! The text, markdown and email reports must say the same things; only
//! their layout differs. So the content is chosen once here, as a small
//! document of sections, facts, lists and tables, and each format only
//! lays that document out.

use crate::core::decide::Method;
use crate::model::{Commit, short_sha as short};
use crate::report::counted::{self, Units};
pub use crate::report::finding::headline;
use crate::report::finding::{self, change};
use crate::report::findings::{
    Culprit, HuntReport, Judgement, ReleaseCheck, ReleaseFinding, TestedCommit, Totals,
    UnresolvedRange,
};
pub use crate::report::units::confidence_pct;
use crate::report::why;

use crate::report::layout::{Align, Block, Document, Section};

fn fact(label: &str, value: impl Into<String>) -> (String, String) {
    (label.to_string(), value.into())
}

/// The report's content.
pub fn document(report: &HuntReport) -> Document {
    let mut sections = vec![finding::section(report)];
    sections.extend(counted::chosen_section(report));
    sections.extend(counted::section(report));
    sections.extend([
        Section {
            heading: "What was hunted".into(),
            blocks: [Block::Facts(hunted_facts(report))]
                .into_iter()
                .chain(resolution_block(report))
                .collect(),
        },
        Section {
            heading: "Machine".into(),
            blocks: vec![Block::Facts(machine_facts(report))],
        },
        Section {
            heading: "Result".into(),
            blocks: result_blocks(report),
        },
        Section {
            heading: "Tested commits, in history order".into(),
            blocks: tested_blocks(report),
        },
        Section {
            heading: "Totals".into(),
            blocks: vec![Block::Facts(totals_facts(report))],
        },
    ]);
    if !report.profile_toml.trim().is_empty() {
        sections.push(Section {
            heading: format!("Profile {}", report.profile_name),
            blocks: vec![Block::Verbatim(report.profile_toml.trim_end().to_string())],
        });
    }
    Document {
        title: headline(report),
        sections,
    }
}

/// `p = 0.0021`, or `p < 0.0001` for what four decimals would show as 0.
fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "p < 0.0001".to_string()
    } else {
        format!("p = {p:.4}")
    }
}

fn method(m: Method) -> &'static str {
    match m {
        Method::WelchT => "Welch's t-test",
        Method::MannWhitney => "Mann-Whitney U",
        Method::PairedT => "paired t-test",
        Method::SignedRank => "Wilcoxon signed-rank",
        Method::StratifiedT => "stratified t-test over hosts",
        Method::VanElteren => "Van Elteren's test over hosts",
    }
}

fn hunted_facts(report: &HuntReport) -> Vec<(String, String)> {
    let profile = if report.profile_name.is_empty() {
        "default"
    } else {
        &report.profile_name
    };
    let settings = if report.server_settings.is_empty() {
        "none given".to_string()
    } else {
        report
            .server_settings
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        fact(
            "range",
            format!(
                "{}..{} ({} commits)",
                report.good.short(),
                report.bad.short(),
                report.candidates
            ),
        ),
        fact("good", commit_line(&report.good)),
        fact("bad", commit_line(&report.bad)),
        fact("profile", profile),
        fact("clients", report.clients.to_string()),
        fact("benchmark", report.measurement.clone()),
        fact("settings", settings),
        fact("threshold", format!("{:.1}%", report.threshold * 100.0)),
    ]
}

/// How the names given became the endpoints, when that needs saying: a
/// release name read as its tag, a release off the line of `--bad` hunted
/// from where it left. Nothing for names git knew and the hunt measured.
fn resolution_block(report: &HuntReport) -> Option<Block> {
    let lines: Vec<String> = report
        .resolution
        .iter()
        .flat_map(|r| {
            r.reasons
                .iter()
                .map(|why| format!("--{}: {why}", r.endpoint))
        })
        .collect();
    (!lines.is_empty()).then_some(Block::List(lines))
}

fn commit_line(c: &Commit) -> String {
    if c.subject.is_empty() {
        c.id.clone()
    } else {
        format!("{} {}", c.short(), c.subject)
    }
}

fn machine_facts(report: &HuntReport) -> Vec<(String, String)> {
    let configure = if report.configure_flags.is_empty() {
        "none recorded".to_string()
    } else {
        report.configure_flags.join(" ")
    };
    let Some(m) = &report.machine else {
        return vec![
            fact("machine", "not recorded"),
            fact("configure", configure),
        ];
    };
    let mut facts = vec![
        fact("cpu", format!("{} ({} CPUs)", m.cpu_model, m.cpus)),
        fact("numa nodes", m.numa_nodes.to_string()),
        fact("memory", format!("{:.1} GiB", m.memory_gib())),
        fact("kernel", m.kernel.clone()),
        fact("compiler", m.compiler.clone()),
        fact("configure", configure),
    ];
    if let Some(p) = &m.placement {
        facts.push(fact("placement", p.describe()));
    }
    facts.extend(
        m.steadiness
            .iter()
            .map(|f| fact("noise source", format!("{}; fix: {}", f.what, f.advice))),
    );
    facts
}

fn result_blocks(report: &HuntReport) -> Vec<Block> {
    let e = &report.endpoints;
    // The best estimate of the whole is in the finding; this is the
    // comparison that decided there was a drop to hunt.
    let mut blocks = vec![Block::Facts(vec![
        fact("outcome", report.outcome.as_str()),
        fact(
            "good..bad",
            format!(
                "{}, the first {} + {} runs",
                Units::of(report).change(&e.change),
                e.n_base,
                e.n_new
            ),
        ),
    ])];
    blocks.extend(report.release_check.as_ref().map(release_item));
    for c in &report.culprits {
        blocks.push(culprit_item(c, Units::of(report)));
        blocks.extend(
            report
                .why_of(&c.commit)
                .map(why::blocks)
                .into_iter()
                .flatten(),
        );
    }
    blocks.extend(report.unresolved.iter().map(unresolved_item));
    if !report.notes.is_empty() {
        blocks.push(Block::List(report.notes.clone()));
    }
    blocks
}

/// The release given as `--good` against where it left master's line.
fn release_item(c: &ReleaseCheck) -> Block {
    let (given, base, left) = (&c.given, c.merge_base.short(), &c.left);
    let branch = c.branch.as_deref().unwrap_or("its stable branch");
    let finding = match c.finding {
        ReleaseFinding::ReleaseFaster => format!(
            "{base} is slower than {given} by at least the threshold: the drop from \
             {given}, or part of it, came from commits on {branch}, not from {left}; \
             the hunt searched {left} after {base} only"
        ),
        ReleaseFinding::ReleaseSlower => format!(
            "{given} is slower than {base} by at least the threshold: commits on \
             {branch} made the release slower; {left} was hunted from {base}"
        ),
        ReleaseFinding::Same => format!(
            "the same within the threshold: the whole drop from {given} lies on \
             {left} after {base}, where the hunt searched"
        ),
        ReleaseFinding::Unclear => format!(
            "not settled {}: whether commits on {branch} account for part of the drop \
             is not known",
            c.reason
                .as_deref()
                .map_or_else(|| "at the run cap".to_string(), |r| format!("({r})"))
        ),
        ReleaseFinding::Unmeasured => format!(
            "not measured ({}); {left} was hunted from {base}",
            c.reason.as_deref().unwrap_or("no reason recorded")
        ),
    };
    let mut facts = Vec::new();
    if let Some(cmp) = &c.comparison {
        facts.push(fact(
            "change",
            format!(
                "{}, {} + {} runs",
                change(&cmp.change),
                cmp.n_base,
                cmp.n_new
            ),
        ));
    }
    facts.push(fact("finding", finding));
    Block::Item {
        title: format!(
            "release: {given} ({}) -> {base}, where it left {left}",
            c.release.short()
        ),
        facts,
    }
}

fn culprit_item(c: &Culprit, units: Units) -> Block {
    let mut facts = vec![
        fact("subject", c.subject.clone()),
        fact("author", c.author.clone()),
        fact("date", c.date.clone()),
    ];
    if c.per_host.is_empty() {
        facts.push(fact(
            if units.0.is_tps() { "tps" } else { "instr/tx" },
            format!(
                "{} -> {}",
                units.level(c.before_tps),
                units.level(c.after_tps)
            ),
        ));
    } else {
        // Each machine's own numbers; the change below combines them.
        facts.extend(
            c.per_host
                .iter()
                .map(|h| fact(&format!("tps on {}", h.host), h.describe())),
        );
    }
    facts.extend([
        fact("change", units.change(&c.change)),
        fact(
            "runs",
            format!(
                "{} + {} side by side with {} ({}, {})",
                c.runs_before,
                c.runs_after,
                short(&c.parent),
                method(c.method),
                p_value(c.p_value)
            ),
        ),
    ]);
    Block::Item {
        title: format!("first bad commit: {}", c.commit),
        facts,
    }
}

fn unresolved_item(r: &UnresolvedRange) -> Block {
    let mut facts = vec![
        fact(
            "suspects",
            r.suspects
                .iter()
                .map(|s| short(s))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        fact("reason", r.reason.clone()),
    ];
    if let Some(c) = &r.comparison {
        facts.push(fact(
            "change",
            format!("{}, {} + {} runs", change(&c.change), c.n_base, c.n_new),
        ));
    }
    Block::Item {
        title: format!(
            "unresolved: {}..{} ({} suspects)",
            r.last_good.short(),
            r.first_bad.short(),
            r.suspects.len()
        ),
        facts,
    }
}

fn judgement(j: Judgement) -> &'static str {
    match j {
        Judgement::GoodEndpoint => "good end",
        Judgement::BadEndpoint => "bad end",
        Judgement::GoodLike => "good-like",
        Judgement::BadLike => "bad-like",
        Judgement::Unsure => "unsure",
        Judgement::Unbuildable => "unbuildable",
        Judgement::RunsFailed => "runs failed",
    }
}

fn tested_blocks(report: &HuntReport) -> Vec<Block> {
    let columns = [
        ("commit", Align::Left),
        ("judgement", Align::Left),
        ("runs", Align::Right),
        (
            if report.measure.is_tps() {
                "median tps"
            } else {
                "median instr/tx"
            },
            Align::Right,
        ),
        ("(max-min)/max", Align::Right),
        ("stddev/avg", Align::Right),
    ]
    .iter()
    .map(|(name, align)| (name.to_string(), *align))
    .collect();
    let is_culprit = |t: &TestedCommit| report.culprits.iter().any(|c| c.commit == t.commit.id);
    let levels = between_drops(report);
    let rows = report
        .tested
        .iter()
        .map(|t| {
            let mut row = tested_row(t, is_culprit(t), Units::of(report));
            if let Some((mark, _)) = levels.iter().find(|(_, at)| at.contains(&t.position)) {
                row[1] = format!("{} ({mark})", row[1]);
            }
            row
        })
        .collect();
    let mut blocks = vec![Block::Table { columns, rows }];
    if !report.culprits.is_empty() {
        blocks.push(Block::Paragraph("* first bad commit".into()));
    }
    let legend: Vec<String> = levels
        .iter()
        .filter(|(_, at)| !at.is_empty())
        .map(|(mark, _)| mark.clone())
        .collect();
    if !legend.is_empty() {
        blocks.push(Block::List(
            between_legend(report)
                .into_iter()
                .filter(|(mark, _)| legend.contains(mark))
                .map(|(mark, text)| format!("({mark}) {text}"))
                .collect(),
        ));
    }
    let notes: Vec<String> = report
        .tested
        .iter()
        .filter_map(|t| Some(format!("{}: {}", t.commit.short(), t.note.as_ref()?)))
        .collect();
    if !notes.is_empty() {
        blocks.push(Block::List(notes));
    }
    blocks
}

/// The drops the hunt found (culprits and ranges left unresolved), as the
/// positions of their last good and first bad commits, in history order.
fn drops(report: &HuntReport) -> Vec<(usize, usize, String)> {
    let position = |id: &str| {
        report
            .tested
            .iter()
            .find(|t| t.commit.id == id)
            .map(|t| t.position)
    };
    let mut drops: Vec<(usize, usize, String)> = report
        .culprits
        .iter()
        .filter_map(|c| Some((position(&c.parent)?, position(&c.commit)?, c.commit.clone())))
        .chain(report.unresolved.iter().filter_map(|r| {
            Some((
                position(&r.last_good.id)?,
                position(&r.first_bad.id)?,
                r.first_bad.id.clone(),
            ))
        }))
        .collect();
    drops.sort_unstable();
    drops
}

/// Commits judged between two drops, by the drop they come after: the
/// search judged them against the ends of the range left after it, so
/// their good-like or bad-like is against the level after that drop, not
/// against the good end. One mark (`a`, `b`, ...) a drop, and the
/// positions it marks.
fn between_drops(report: &HuntReport) -> Vec<(String, Vec<usize>)> {
    let drops = drops(report);
    let endpoint = |j: Judgement| matches!(j, Judgement::GoodEndpoint | Judgement::BadEndpoint);
    drops
        .iter()
        .enumerate()
        .map(|(i, (_, bad, _))| {
            let next_bad = drops.get(i + 1).map(|d| d.1);
            let at = report
                .tested
                .iter()
                .filter(|t| !endpoint(t.judgement))
                .filter(|t| matches!(t.judgement, Judgement::GoodLike | Judgement::BadLike))
                .map(|t| t.position)
                .filter(|&p| p > *bad && next_bad.is_some_and(|next| p < next))
                .collect();
            (mark(i), at)
        })
        .collect()
}

/// What each mark of [`between_drops`] means.
fn between_legend(report: &HuntReport) -> Vec<(String, String)> {
    drops(report)
        .iter()
        .enumerate()
        .map(|(i, (_, _, after))| {
            (
                mark(i),
                format!(
                    "judged against the level after {}, between the drops, not against \
                     the good end",
                    short(after)
                ),
            )
        })
        .collect()
}

fn mark(i: usize) -> String {
    char::from(b'a' + (i % 26) as u8).to_string()
}

fn tested_row(t: &TestedCommit, culprit: bool, units: Units) -> Vec<String> {
    let mark = if culprit { "*" } else { "" };
    let mut row = vec![
        format!("{}{mark}", t.commit.short()),
        judgement(t.judgement).to_string(),
        t.samples.len().to_string(),
    ];
    match &t.summary {
        Some(s) => row.extend([
            units.level(s.median),
            format!("{:.2}%", s.range_ratio * 100.0),
            format!("{:.2}%", s.cv * 100.0),
        ]),
        None => row.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
    }
    row
}

/// `1 h 02 min`, `12 min 03 s` or `45 s`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s / 60 % 60),
    }
}

/// The wall time, and how many starts it adds up when the hunt was
/// resumed.
fn wall_time(t: &Totals) -> String {
    match t.processes {
        0 | 1 => duration(t.wall_seconds),
        n => format!(
            "{} in {n} starts (resumed; the time between them not counted)",
            duration(t.wall_seconds)
        ),
    }
}

fn totals_facts(report: &HuntReport) -> Vec<(String, String)> {
    let t = &report.totals;
    let setup = &t.setup;
    let mut facts = vec![
        fact(
            "builds",
            format!("{} in {}", t.builds, duration(t.build_seconds)),
        ),
        fact(
            "runs",
            format!(
                "{} ({} warm-up, {} measured) in {}",
                t.runs,
                t.warmup_runs,
                t.measured_runs,
                duration(t.bench_seconds)
            ),
        ),
        fact("wall time", wall_time(t)),
    ];
    // Only the PostgreSQL lab makes templates and sets servers up.
    if setup.templates > 0 {
        facts.push(fact(
            "templates",
            format!(
                "{} made (initdb, pgbench -i) in {}",
                setup.templates,
                duration(setup.template_seconds)
            ),
        ));
    }
    if setup.setups > 0 {
        facts.push(fact(
            "set-up",
            format!(
                "{:.2} s a run (data copy, server start), {} in all",
                setup.setup_seconds / setup.setups as f64,
                duration(setup.setup_seconds)
            ),
        ));
    }
    // Results from before it was measured have none.
    if t.cpu_seconds > 0.0 {
        facts.push(fact(
            "pgbisect's CPU",
            format!(
                "{:.1} s ({:.2}% of the wall time)",
                t.cpu_seconds,
                100.0 * t.cpu_seconds / t.wall_seconds.max(1e-9)
            ),
        ));
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::Change;
    use crate::report::findings::{EndpointResolution, HuntOutcome};

    #[test]
    fn one_client_is_singular() {
        let text = include_str!("../../tests/fixtures/reports/hunt.json");
        let mut report: HuntReport = serde_json::from_str(text).unwrap();
        report.outcome = HuntOutcome::NoRegression;
        report.clients = 1;
        assert!(headline(&report).starts_with("pgbisect: no regression at 1 client in "));
    }

    #[test]
    fn data_set_up_is_in_the_totals_only_when_made() {
        let text = include_str!("../../tests/fixtures/reports/hunt.json");
        let mut report: HuntReport = serde_json::from_str(text).unwrap();
        let names = |r: &HuntReport| -> Vec<String> {
            totals_facts(r).into_iter().map(|(name, _)| name).collect()
        };
        assert!(!names(&report).contains(&"set-up".to_string()));
        report.totals.setup = crate::model::SetupTotals {
            templates: 2,
            template_seconds: 130.0,
            setups: 40,
            setup_seconds: 6.0,
        };
        let facts = totals_facts(&report);
        let value = |name: &str| {
            facts
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            value("templates").as_deref(),
            Some("2 made (initdb, pgbench -i) in 2 min 10 s")
        );
        assert_eq!(
            value("set-up").as_deref(),
            Some("0.15 s a run (data copy, server start), 6 s in all")
        );
    }

    fn fixture() -> HuntReport {
        serde_json::from_str(include_str!("../../tests/fixtures/reports/hunt.json")).unwrap()
    }

    #[test]
    fn a_headline_with_a_culprit_also_tells_of_a_drop_left_in_a_range() {
        let mut report = fixture();
        report.outcome = HuntOutcome::CulpritFound;
        report.culprits.truncate(1);
        assert!(!report.culprits.is_empty());
        report.unresolved.clear();
        let plain = headline(&report);
        assert!(!plain.contains("range"), "{plain}");
        report.unresolved.push(UnresolvedRange {
            last_good: report.good.clone(),
            first_bad: report.bad.clone(),
            suspects: vec![report.good.id.clone(), report.bad.id.clone()],
            reason: "unsure".into(),
            comparison: None,
        });
        assert_eq!(
            headline(&report),
            format!("{plain}, and a drop in a range of commits")
        );
    }

    #[test]
    fn the_machine_says_where_runs_ran_and_what_made_them_noisy() {
        let mut report = fixture();
        let plain = machine_facts(&report);
        assert!(!plain.iter().any(|(label, _)| label == "placement"));
        let machine = report.machine.as_mut().unwrap();
        let topology = crate::placement::Topology {
            cpus: crate::placement::CpuSet::parse("0-1").unwrap(),
            nodes: vec![],
        };
        let spec = crate::placement::PlacementSpec::default();
        machine.placement = Some(crate::placement::decide(&spec, &topology, 1).unwrap());
        machine.steadiness = vec![crate::machine::steady::Finding {
            what: "1 MiB of swap in use".into(),
            advice: "swapoff -a && swapon -a".into(),
        }];
        let facts = machine_facts(&report);
        assert_eq!(facts.len(), plain.len() + 2);
        let (label, value) = &facts[plain.len()];
        assert_eq!(label, "placement");
        assert!(
            value.starts_with("same-cpu: server on CPU 1, pgbench on CPU 1"),
            "{value}"
        );
        assert_eq!(
            facts[plain.len() + 1].1,
            "1 MiB of swap in use; fix: swapoff -a && swapon -a"
        );
    }

    #[test]
    fn a_resumed_hunt_says_its_wall_time_adds_up_its_starts() {
        let mut report = fixture();
        report.totals.wall_seconds = 723.0;
        report.totals.processes = 1;
        assert_eq!(wall_time(&report.totals), "12 min 03 s");
        report.totals.processes = 2;
        assert_eq!(
            wall_time(&report.totals),
            "12 min 03 s in 2 starts (resumed; the time between them not counted)"
        );
    }

    #[test]
    fn endpoints_are_explained_only_when_moved_or_read_as_a_release() {
        let mut report = fixture();
        let plain = document(&report);
        let record = |endpoint: &str, given: &str, reasons: &[&str]| EndpointResolution {
            endpoint: endpoint.into(),
            given: given.into(),
            resolved: "301c2273".repeat(5),
            measured: "a05dc4d7".repeat(5),
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
        };
        report.resolution = vec![
            record("good", "006a283a", &[]),
            record("bad", "master", &[]),
        ];
        assert_eq!(document(&report), plain, "names git knew need no words");
        report.resolution[0] = record(
            "good",
            "REL9_5",
            &[
                "REL9_5 -> tag REL9_5_0 (301c2273)",
                "REL9_5_0 is on REL9_5_STABLE, off master's line: hunting from a05dc4d7, \
                 where it left master",
            ],
        );
        let explained = document(&report);
        assert_eq!(
            explained.sections[1].blocks[1],
            Block::List(vec![
                "--good: REL9_5 -> tag REL9_5_0 (301c2273)".into(),
                "--good: REL9_5_0 is on REL9_5_STABLE, off master's line: hunting from \
                 a05dc4d7, where it left master"
                    .into(),
            ])
        );
        assert_eq!(explained.sections[2..], plain.sections[2..]);
        let text = crate::report::text(&report);
        assert!(
            text.contains("- --good: REL9_5 -> tag REL9_5_0 (301c2273)\n"),
            "{text}"
        );
    }

    #[test]
    fn a_release_check_is_reported_in_the_result() {
        let mut report = fixture();
        let plain = document(&report);
        report.release_check = Some(ReleaseCheck {
            given: "REL9_5_0".into(),
            release: Commit::bare("301c2273".repeat(5)),
            merge_base: Commit::bare("a05dc4d7".repeat(5)),
            branch: Some("REL9_5_STABLE".into()),
            left: "master".into(),
            finding: ReleaseFinding::Same,
            comparison: Some(report.endpoints),
            reason: None,
        });
        let doc = document(&report);
        let Block::Item { title, facts } = &doc.sections[3].blocks[1] else {
            panic!("{:?}", doc.sections[3]);
        };
        assert_eq!(
            title,
            "release: REL9_5_0 (301c2273) -> a05dc4d7, where it left master"
        );
        assert_eq!(
            facts[1].1,
            "the same within the threshold: the whole drop from REL9_5_0 lies on master \
             after a05dc4d7, where the hunt searched"
        );
        assert_eq!(doc.sections[1..3], plain.sections[1..3]);
    }

    #[test]
    fn a_commit_between_two_drops_says_which_level_it_was_judged_against() {
        let report = fixture();
        let blocks = tested_blocks(&report);
        let Block::Table { rows, .. } = &blocks[0] else {
            panic!("{blocks:?}");
        };
        let judged = |sha: &str| {
            rows.iter()
                .find(|r| r[0].starts_with(sha))
                .map(|r| r[1].clone())
                .unwrap()
        };
        // Before the first drop, and each culprit: judged for its own drop.
        assert_eq!(judged("1fa540e4"), "good-like");
        assert_eq!(judged("009ee824"), "bad-like");
        // Between 009ee824 and the range's drop, then the range and 623f1568.
        assert_eq!(judged("775e1ef0"), "good-like (a)");
        assert_eq!(judged("293bba0a"), "good-like (b)");
        assert_eq!(judged("623f1568"), "bad-like");
        assert!(
            blocks.contains(&Block::List(vec![
                "(a) judged against the level after 009ee824, between the drops, not against \
                 the good end"
                    .into(),
                "(b) judged against the level after e0646d0a, between the drops, not against \
                 the good end"
                    .into(),
            ])),
            "{blocks:?}"
        );
        let mut one = fixture();
        one.culprits.truncate(1);
        one.unresolved.clear();
        assert!(
            tested_blocks(&one)
                .iter()
                .all(|b| !matches!(b, Block::List(l) if l[0].starts_with("(a)"))),
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(0.4), "0 s");
        assert_eq!(duration(59.0), "59 s");
        assert_eq!(duration(723.0), "12 min 03 s");
        assert_eq!(duration(3720.0), "1 h 02 min");
    }

    #[test]
    fn change_names_interval_and_confidence() {
        let c = Change {
            pct: -26.94,
            low_pct: -28.1,
            high_pct: -25.66,
            confidence: 0.95,
        };
        assert_eq!(change(&c), "-26.9% [-28.1%, -25.7%] at 95% confidence");
        let unmeasured = Change {
            pct: 0.0,
            low_pct: f64::NEG_INFINITY,
            high_pct: f64::INFINITY,
            confidence: 0.0,
        };
        assert_eq!(
            change(&unmeasured),
            "not measured: too few runs for an interval"
        );
    }

    #[test]
    fn confidence_is_rounded_down_and_never_reads_as_certain() {
        assert_eq!(confidence_pct(0.99), "99");
        assert_eq!(confidence_pct(0.57), "57");
        assert_eq!(confidence_pct(0.9996), "99.9");
        assert_eq!(confidence_pct(1.0), "99.9");
        assert_eq!(confidence_pct(0.9849), "98.4");
    }
}
