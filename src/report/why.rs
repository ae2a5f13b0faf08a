//! The "Why" part of a culprit in every report: what its instrumented
//! runs against its parent found (see [`crate::core::why`]), laid out as
//! blocks of the report's document, each table within 72 columns.

use crate::core::why::{
    ChangedFunctions, ClientPoint, CpuFinding, FunctionChange, StatementChange, WaitFinding, Why,
};
use crate::model::short_sha as short;
use crate::report::layout::{Align, Block};

/// Longest statement text shown; the rest is cut with `...`.
const STATEMENT_CHARS: usize = 38;

/// Longest function name shown in the CPU profile's tables.
const FUNCTION_CHARS: usize = 34;

/// Rows of risers and of fallers shown in a report.
const CPU_ROWS: usize = 5;

/// The blocks of one culprit's why-runs.
pub fn blocks(why: &Why) -> Vec<Block> {
    let mut facts = vec![(
        "runs".to_string(),
        format!(
            "{} instrumented runs in {}, apart from the verdict's runs",
            why.runs,
            seconds(why.seconds)
        ),
    )];
    match &why.cpu {
        Some(CpuFinding::Unavailable(reason)) => {
            let reason = reason.strip_prefix("no CPU profile: ").unwrap_or(reason);
            facts.push(("CPU profile".into(), format!("none: {reason}")));
        }
        Some(CpuFinding::Compared {
            flame_graph: Some(svg),
            ..
        }) => facts.push((
            "flame graph".into(),
            format!("{} (red: more samples in the culprit)", svg.display()),
        )),
        _ => {}
    }
    if let WaitFinding::Unavailable(reason) = &why.waits {
        facts.push(("wait events".into(), format!("not sampled: {reason}")));
    }
    if let WaitFinding::Sampled {
        shares,
        samples_before,
        samples_after,
    } = &why.waits
        && shares.is_empty()
    {
        facts.push((
            "wait events".into(),
            format!(
                "no share moved by 2 points or more ({samples_before} + {samples_after} samples)"
            ),
        ));
    }
    let mut out = vec![Block::Item {
        title: format!(
            "why {} is slower than {}",
            short(&why.commit),
            short(&why.parent)
        ),
        facts,
    }];
    if !why.points.is_empty() {
        out.push(Block::Paragraph(
            "Median TPS of each side, its change, the change of the 50th and \
             99th percentile latency, and stddev/avg of the TPS, parent -> culprit \
             (! where the spread moved more than the median):"
                .into(),
        ));
        out.push(Block::Table {
            columns: columns(&[
                ("clients", Align::Right),
                ("parent", Align::Right),
                ("culprit", Align::Right),
                ("change", Align::Right),
                ("p50", Align::Right),
                ("p99", Align::Right),
                ("stddev/avg", Align::Right),
            ]),
            rows: why.points.iter().map(point_row).collect(),
        });
    }
    if !why.statements.is_empty() {
        out.push(Block::Paragraph(format!(
            "Statement latencies at {} client{}:",
            why.statements_clients,
            if why.statements_clients == 1 { "" } else { "s" }
        )));
        out.push(Block::Table {
            columns: columns(&[
                ("parent ms", Align::Right),
                ("culprit ms", Align::Right),
                ("change", Align::Right),
                ("statement", Align::Left),
            ]),
            rows: why.statements.iter().map(statement_row).collect(),
        });
    }
    if let WaitFinding::Sampled {
        shares,
        samples_before,
        samples_after,
    } = &why.waits
        && !shares.is_empty()
    {
        out.push(Block::Paragraph(format!(
            "Wait events that moved (share of {samples_before} + {samples_after} samples):"
        )));
        out.push(Block::Table {
            columns: columns(&[
                ("wait event", Align::Left),
                ("parent", Align::Right),
                ("culprit", Align::Right),
            ]),
            rows: shares
                .iter()
                .map(|s| {
                    vec![
                        s.event.clone(),
                        format!("{:.1}%", s.before_pct),
                        format!("{:.1}%", s.after_pct),
                    ]
                })
                .collect(),
        });
    }
    out.extend(cpu_blocks(why.cpu.as_ref()));
    if !why.notes.is_empty() {
        out.push(Block::List(why.notes.clone()));
    }
    out
}

/// The functions whose share of the server's CPU samples rose and fell
/// most.
fn cpu_blocks(cpu: Option<&CpuFinding>) -> Vec<Block> {
    let Some(CpuFinding::Compared {
        clients,
        samples_before,
        samples_after,
        risers,
        fallers,
        grown,
        changed,
        may_be_chance,
        ..
    }) = cpu
    else {
        return Vec::new();
    };
    let mut out = vec![Block::Paragraph(format!(
        "CPU profile of the server at {clients} client{} (perf, {samples_before} + \
         {samples_after} samples): share of samples in the function itself, and \
         the change of its share with its callees (total):",
        if *clients == 1 { "" } else { "s" }
    ))];
    let chance = |f: &FunctionChange| may_be_chance.contains(&f.name);
    for (title, rows) in [("rose most", risers), ("fell most", fallers)] {
        if rows.is_empty() {
            continue;
        }
        out.push(Block::Table {
            columns: columns(&[
                (title, Align::Left),
                ("parent", Align::Right),
                ("culprit", Align::Right),
                ("change", Align::Right),
                ("total", Align::Right),
            ]),
            rows: rows
                .iter()
                .take(CPU_ROWS)
                .map(|f| function_row(f, chance(f)))
                .collect(),
        });
    }
    if let Some(changed) = changed {
        out.extend(changed_blocks(changed));
    }
    if !grown.is_empty() {
        out.push(Block::Paragraph(
            "share with its callees (total) rose most in (the caller of new work \
             spent in callees other code shares leads here):"
                .into(),
        ));
        out.push(Block::Table {
            columns: columns(&[
                ("function", Align::Left),
                ("parent", Align::Right),
                ("culprit", Align::Right),
                ("change", Align::Right),
            ]),
            rows: grown.iter().take(CPU_ROWS).map(total_row).collect(),
        });
    }
    if risers.iter().chain(fallers).take(2 * CPU_ROWS).any(chance) {
        out.push(Block::Paragraph(
            "~ within two standard errors of sampling: may be chance alone".into(),
        ));
    }
    out
}

/// Files listed by name where a commit changed code outside functions.
const OTHER_FILES: usize = 4;

/// Where the culprit's diff meets its profile: the functions it changed
/// that were sampled, and what else it changed.
fn changed_blocks(changed: &ChangedFunctions) -> Vec<Block> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    if !changed.sampled.is_empty() {
        out.push(Block::Paragraph(
            "Functions the culprit's diff changed, by the change of their share with \
             callees (total), and of their share in the function itself (self):"
                .into(),
        ));
        out.push(Block::Table {
            columns: columns(&[
                ("changed function", Align::Left),
                ("parent", Align::Right),
                ("culprit", Align::Right),
                ("total", Align::Right),
                ("self", Align::Right),
            ]),
            rows: changed
                .sampled
                .iter()
                .take(CPU_ROWS)
                .map(|f| {
                    let mut row = total_row(f);
                    row.push(format!("{:+.1}pp", f.self_change()));
                    row
                })
                .collect(),
        });
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let hidden = changed.sampled.len().saturating_sub(CPU_ROWS);
    if hidden > 0 {
        notes.push(format!(
            "{} it changed, not shown",
            plural(hidden, "more sampled function", "more sampled functions")
        ));
    }
    if changed.sampled.is_empty() && changed.unsampled > 0 {
        notes.push(format!(
            "none of the {} the culprit changed was sampled",
            plural(changed.unsampled, "function", "functions")
        ));
    } else if changed.unsampled > 0 {
        notes.push(format!(
            "{} it changed {} never sampled",
            plural(changed.unsampled, "other function", "other functions"),
            if changed.unsampled == 1 {
                "was"
            } else {
                "were"
            }
        ));
    }
    if !changed.other_files.is_empty() {
        let mut files: Vec<&str> = changed
            .other_files
            .iter()
            .take(OTHER_FILES)
            .map(String::as_str)
            .collect();
        let rest = changed.other_files.len() - files.len();
        let rest = format!("and {rest} more");
        if changed.other_files.len() > OTHER_FILES {
            files.push(&rest);
        }
        notes.push(format!(
            "{}, outside any function: {}",
            if changed.sampled.is_empty() && changed.unsampled == 0 {
                "the culprit changed no C function; it changed"
            } else {
                "it also changed"
            },
            files.join(", ")
        ));
    }
    if !notes.is_empty() {
        out.push(Block::List(notes));
    }
    out
}

fn total_row(f: &FunctionChange) -> Vec<String> {
    vec![
        cut(&f.name, FUNCTION_CHARS),
        format!("{:.1}%", 100.0 * f.total_before),
        format!("{:.1}%", 100.0 * f.total_after),
        format!("{:+.1}pp", f.total_change()),
    ]
}

fn function_row(f: &FunctionChange, chance: bool) -> Vec<String> {
    vec![
        cut(&f.name, FUNCTION_CHARS),
        format!("{:.1}%", 100.0 * f.self_before),
        format!("{:.1}%", 100.0 * f.self_after),
        format!(
            "{:+.1}pp{}",
            f.self_change(),
            if chance { " ~" } else { "" }
        ),
        format!("{:+.1}pp", f.total_change()),
    ]
}

/// `text` cut to `chars` characters, its end marked with `...` when cut.
fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(chars - 3).collect();
    format!("{kept}...")
}

fn columns(names: &[(&str, Align)]) -> Vec<(String, Align)> {
    names.iter().map(|(n, a)| (n.to_string(), *a)).collect()
}

fn point_row(p: &ClientPoint) -> Vec<String> {
    vec![
        p.clients.to_string(),
        format!("{:.1}", p.before.median_tps),
        format!("{:.1}", p.after.median_tps),
        format!("{:+.1}%", p.tps_change_pct),
        // Results written before the field existed still hold the sides'.
        p.p50_change_pct
            .or_else(|| {
                Some((p.after.p50_ms? / p.before.p50_ms.filter(|b| *b > 0.0)? - 1.0) * 100.0)
            })
            .map_or("-".into(), |c| format!("{c:+.1}%")),
        p.p99_change_pct.map_or("-".into(), |c| format!("{c:+.1}%")),
        format!(
            "{:.1}%->{:.1}%{}",
            p.before.cv_pct,
            p.after.cv_pct,
            if p.spread_changed_more { " !" } else { "" }
        ),
    ]
}

fn statement_row(s: &StatementChange) -> Vec<String> {
    vec![
        format!("{:.3}", s.before_ms),
        format!("{:.3}", s.after_ms),
        format!("{:+.1}%", s.change_pct),
        cut(&s.statement, STATEMENT_CHARS),
    ]
}

fn seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(blocks: &[Block]) -> String {
        blocks
            .iter()
            .map(|b| match b {
                Block::Paragraph(p) => p.clone(),
                Block::List(items) => items.join("\n"),
                Block::Table { rows, .. } => rows
                    .iter()
                    .map(|r| r.join(" "))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_culprit_that_changed_no_function_names_the_files_it_changed() {
        let changed = ChangedFunctions {
            sampled: vec![],
            unsampled: 0,
            other_files: (1..=6)
                .map(|i| format!("src/backend/catalog/f{i}.sql"))
                .collect(),
        };
        let text = texts(&changed_blocks(&changed));
        assert!(text.contains("changed no C function"), "{text}");
        assert!(text.contains("f4.sql, and 2 more"), "{text}");
        assert!(!text.contains("f5.sql"), "{text}");
    }

    #[test]
    fn changed_functions_that_were_never_sampled_are_said_so() {
        let changed = ChangedFunctions {
            sampled: vec![],
            unsampled: 3,
            other_files: vec![],
        };
        let text = texts(&changed_blocks(&changed));
        assert_eq!(
            text,
            "none of the 3 functions the culprit changed was sampled"
        );
    }
}
