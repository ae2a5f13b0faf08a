//! What `pgbisect report` says of a hunt that has not ended: its progress
//! so far, read from its journal (every build and run is written there as
//! it is made), since there is no result to report yet.

use crate::journal::Event;
use crate::journal::spent::Spent;
use crate::model::{Prepared, RunOutcome, short_sha as short};
use crate::report::document::duration;
use crate::report::layout::{Align, Block, Document, Section};

/// One commit's runs so far.
#[derive(Debug, Default)]
struct Runs {
    commit: String,
    tps: Vec<f64>,
    failed: usize,
}

/// The progress of the hunt whose journal holds `events`, as text of at
/// most 72 columns; `whose` says what is running it (`pgbisect, pid
/// 1234`) and `journal` where the journal is.
pub fn text(events: &[Event], whose: &str, journal: &str) -> String {
    let (good, bad, started) = events
        .iter()
        .find_map(|e| match e {
            Event::Start { good, bad, at, .. } => Some((good.as_str(), bad.as_str(), at.as_str())),
            _ => None,
        })
        .unwrap_or(("?", "?", "?"));
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::Start { .. }))
        .count();
    let runs = runs_by_commit(events);
    let (built, cached, unbuildable) = prepared(events);
    let measured: usize = runs.iter().map(|r| r.tps.len()).sum();
    let failed: usize = runs.iter().map(|r| r.failed).sum();
    let spent = crate::journal::spent::spent_before(events).0;
    let mut facts = vec![
        (
            "started".to_string(),
            match starts {
                1 => started.to_string(),
                n => format!("{started} ({n} starts: resumed)"),
            },
        ),
        (
            "runs".to_string(),
            format!(
                "{measured} measured, {failed} failed, of {} commits",
                runs.len()
            ),
        ),
        (
            "builds".to_string(),
            format!("{built} built, {cached} from the cache, {unbuildable} could not be built"),
        ),
    ];
    facts.extend(time_fact(&spent));
    let title = format!(
        "pgbisect: hunt {}..{} still running ({whose})",
        short(good),
        short(bad)
    );
    let mut blocks = vec![
        Block::Paragraph(format!(
            "It has no result yet. Its progress so far, from its journal {journal}:"
        )),
        Block::Facts(facts),
    ];
    if !runs.is_empty() {
        blocks.push(table(&runs, good, bad));
        blocks.push(Block::Paragraph(
            "Commits in the order of their first run. Medians so far are not \
             verdicts: the hunt judges each commit as its runs come in. Run \
             `pgbisect report` again when the hunt has ended for its report."
                .into(),
        ));
    }
    super::text::render(&Document {
        title,
        sections: vec![Section {
            heading: "Progress so far".into(),
            blocks,
        }],
    })
}

/// Each commit's measured and failed runs, in the order of its first run.
fn runs_by_commit(events: &[Event]) -> Vec<Runs> {
    let mut runs: Vec<Runs> = Vec::new();
    for e in events {
        let Event::Run {
            commit, outcome, ..
        } = e
        else {
            continue;
        };
        let i = match runs.iter().position(|r| r.commit == *commit) {
            Some(i) => i,
            None => {
                runs.push(Runs {
                    commit: commit.clone(),
                    ..Runs::default()
                });
                runs.len() - 1
            }
        };
        match outcome {
            RunOutcome::Measured(m) => runs[i].tps.push(m.tps),
            RunOutcome::Failed { .. } => runs[i].failed += 1,
        }
    }
    runs
}

/// Commits built, found in the cache, and that could not be built.
fn prepared(events: &[Event]) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for e in events {
        match e {
            Event::Prepared {
                prepared: Prepared::Ready { cached: false },
                ..
            } => counts.0 += 1,
            Event::Prepared {
                prepared: Prepared::Ready { cached: true },
                ..
            } => counts.1 += 1,
            Event::Prepared {
                prepared: Prepared::Unbuildable { .. },
                ..
            } => counts.2 += 1,
            _ => {}
        }
    }
    counts
}

fn time_fact(spent: &Spent) -> Option<(String, String)> {
    (spent.wall_seconds > 0.0).then(|| {
        (
            "time".to_string(),
            format!(
                "{} so far ({} building, {} running pgbench)",
                duration(spent.wall_seconds),
                duration(spent.lab.build_seconds),
                duration(spent.lab.bench_seconds)
            ),
        )
    })
}

fn table(runs: &[Runs], good: &str, bad: &str) -> Block {
    let columns = [
        ("commit", Align::Left),
        ("", Align::Left),
        ("runs", Align::Right),
        ("median tps", Align::Right),
        ("failed", Align::Right),
    ]
    .iter()
    .map(|(n, a)| (n.to_string(), *a))
    .collect();
    let rows = runs
        .iter()
        .map(|r| {
            let end = if r.commit == good {
                "good end"
            } else if r.commit == bad {
                "bad end"
            } else {
                ""
            };
            let median = if r.tps.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}", crate::core::stats::median(&r.tps))
            };
            vec![
                short(&r.commit).to_string(),
                end.to_string(),
                r.tps.len().to_string(),
                median,
                r.failed.to_string(),
            ]
        })
        .collect();
    Block::Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(n: u64, commit: &str, tps: Option<f64>) -> Event {
        Event::Run {
            run: n,
            commit: commit.into(),
            clients: 8,
            seconds: None,
            outcome: match tps {
                Some(t) => RunOutcome::tps_only(t),
                None => RunOutcome::Failed {
                    reason: "crash".into(),
                },
            },
            host: None,
        }
    }

    #[test]
    fn a_running_hunt_shows_its_runs_so_far() {
        let (good, bad, mid) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let events = vec![
            Event::Start {
                good: good.clone(),
                bad: bad.clone(),
                plan: "p".into(),
                at: "2026-12-05T16:00:00Z".into(),
            },
            Event::Prepared {
                commit: good.clone(),
                prepared: Prepared::Ready { cached: false },
            },
            Event::Prepared {
                commit: bad.clone(),
                prepared: Prepared::Ready { cached: true },
            },
            run(1, &good, Some(1000.0)),
            run(2, &bad, Some(800.0)),
            run(3, &good, Some(1010.0)),
            run(4, &mid, None),
        ];
        let text = text(&events, "pgbisect, pid 42", "/w/hunts/h/journal.jsonl");
        assert!(
            text.starts_with(
                "pgbisect: hunt aaaaaaaa..bbbbbbbb still running (pgbisect, pid 42)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("runs:    3 measured, 1 failed, of 3 commits"),
            "{text}"
        );
        assert!(
            text.contains("1 built, 1 from the cache, 0 could not be built"),
            "{text}"
        );
        assert!(
            text.contains("aaaaaaaa  good end     2      1005.0       0"),
            "{text}"
        );
        assert!(
            text.contains("cccccccc               0           -       1"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 72), "{text}");
    }
}
