//! What a hunt cost, across every time pgbisect was started on it.
//!
//! A hunt stopped by Ctrl-C, a reboot or a crash is resumed by running the
//! same command again; the resumed process replays the journal without
//! building or running anything twice, so its own counters see only the
//! new work. To report what the whole hunt cost (builds, runs, benchmark
//! and wall time, pgbisect's own CPU), the hunt journals what its process
//! has spent so far after each new build and run, and a resumed hunt adds
//! up the last such record of every earlier process.

use crate::journal::Event;
use crate::model::{LabTotals, Prepared};
use serde::{Deserialize, Serialize};

/// Work done by one or more processes of the same hunt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub lab: LabTotals,
    pub wall_seconds: f64,
    /// CPU time of pgbisect itself (children excluded).
    pub cpu_seconds: f64,
}

impl Spent {
    /// The sum of two parts of a hunt.
    pub fn plus(self, other: Spent) -> Spent {
        let (a, b) = (self.lab, other.lab);
        Spent {
            lab: LabTotals {
                builds: a.builds + b.builds,
                build_seconds: a.build_seconds + b.build_seconds,
                runs: a.runs + b.runs,
                warmup_runs: a.warmup_runs + b.warmup_runs,
                bench_seconds: a.bench_seconds + b.bench_seconds,
                setup: crate::model::SetupTotals {
                    templates: a.setup.templates + b.setup.templates,
                    template_seconds: a.setup.template_seconds + b.setup.template_seconds,
                    setups: a.setup.setups + b.setup.setups,
                    setup_seconds: a.setup.setup_seconds + b.setup.setup_seconds,
                },
            },
            wall_seconds: self.wall_seconds + other.wall_seconds,
            cpu_seconds: self.cpu_seconds + other.cpu_seconds,
        }
    }
}

/// What the earlier processes of a hunt spent, from its journal, and how
/// many there were.
///
/// Each process's part starts at a `start` event; its last `spent` event
/// holds its cost up to there, and runs and real builds journaled after it
/// count one each. A part without one (journals from versions that did not
/// write it) counts its runs and real builds, without times.
pub fn spent_before(events: &[Event]) -> (Spent, u64) {
    let mut total = Spent::default();
    let processes = events.iter().filter(|e| is_start(e)).count() as u64;
    for part in parts(events) {
        // The last record holds the part's cost up to it; a run or build
        // journaled after it (the process was killed between the two
        // lines) is counted from the journal, without its times.
        let last = part.iter().rposition(|e| matches!(e, Event::Spent { .. }));
        let spent = match last.map(|i| (&part[i], &part[i + 1..])) {
            Some((Event::Spent { spent }, after)) => spent.plus(counted(after)),
            _ => counted(part),
        };
        total = total.plus(spent);
    }
    (total, processes)
}

fn is_start(e: &Event) -> bool {
    matches!(e, Event::Start { .. })
}

/// The journal cut at each `start` event, each part beginning with its
/// start (events before the first start, if any, form a part of their own).
fn parts(events: &[Event]) -> Vec<&[Event]> {
    let mut parts = Vec::new();
    let mut begin = 0;
    for (i, e) in events.iter().enumerate() {
        if is_start(e) && i > begin {
            parts.push(&events[begin..i]);
            begin = i;
        }
    }
    if begin < events.len() {
        parts.push(&events[begin..]);
    }
    parts
}

/// Runs and real builds of a part that recorded no cost.
fn counted(part: &[Event]) -> Spent {
    let mut spent = Spent::default();
    for e in part {
        match e {
            Event::Run { .. } => spent.lab.runs += 1,
            Event::Prepared {
                prepared: Prepared::Ready { cached: false },
                ..
            } => spent.lab.builds += 1,
            _ => {}
        }
    }
    spent
}

/// User and system CPU time of this process so far (children excluded).
pub fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Measurement, RunOutcome};

    fn start() -> Event {
        Event::Start {
            good: "g".into(),
            bad: "b".into(),
            plan: "p".into(),
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn run(n: u64) -> Event {
        Event::Run {
            run: n,
            commit: "c".into(),
            clients: 1,
            seconds: None,
            outcome: RunOutcome::Measured(Measurement {
                instructions: None,
                tps: 100.0,
                latency_ms: None,
                failed_transactions: None,
                percentiles: None,
                output: None,
            }),
            host: None,
        }
    }

    fn spent(runs: u64, bench_seconds: f64, wall_seconds: f64) -> Event {
        let mut lab = LabTotals {
            runs,
            bench_seconds,
            ..LabTotals::default()
        };
        lab.setup.setups = runs;
        Event::Spent {
            spent: Spent {
                lab,
                wall_seconds,
                cpu_seconds: 0.5,
            },
        }
    }

    #[test]
    fn each_start_counts_its_last_record() {
        let events = vec![
            start(),
            run(1),
            spent(1, 5.0, 6.0),
            run(2),
            spent(2, 10.0, 12.0),
            run(3), // its record was lost with the process
            start(),
            run(4),
            spent(1, 5.0, 7.0),
        ];
        let (total, processes) = spent_before(&events);
        assert_eq!(processes, 2);
        assert_eq!(total.lab.runs, 4, "run 3 counts, from the journal");
        assert_eq!(total.lab.setup.setups, 3);
        assert!((total.lab.bench_seconds - 15.0).abs() < 1e-9);
        assert!((total.wall_seconds - 19.0).abs() < 1e-9);
        assert!((total.cpu_seconds - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_start_without_records_counts_runs_and_real_builds() {
        let built = |cached| Event::Prepared {
            commit: "c".into(),
            prepared: Prepared::Ready { cached },
        };
        let events = vec![start(), built(false), built(true), run(1), run(2)];
        let (total, processes) = spent_before(&events);
        assert_eq!((processes, total.lab.builds, total.lab.runs), (1, 1, 2));
        assert_eq!(total.wall_seconds, 0.0);
    }

    #[test]
    fn an_empty_journal_spent_nothing() {
        assert_eq!(spent_before(&[]), (Spent::default(), 0));
    }

    #[test]
    fn own_cpu_time_grows_with_work() {
        let before = own_cpu_seconds();
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(own_cpu_seconds() > before, "{x}");
    }
}
