//! Results on disk after every run.
//!
//! A hunt can take a night; a crash, a reboot or Ctrl-C must lose at most
//! the run in flight. Every event is appended as one JSON line and synced
//! before the hunt moves on. Because the hunt's decisions depend only on the
//! results it has seen, replaying the journal's results in order rebuilds
//! its state exactly: that is how a hunt is resumed.

pub mod spent;

use crate::error::UsageError;
use crate::model::{Prepared, RunOutcome};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A hunt began (or was resumed) with these endpoints.
    Start {
        good: String,
        bad: String,
        /// Fingerprint of everything that shapes the decisions.
        plan: String,
        at: String,
    },
    /// A commit was prepared (built, or found in the cache).
    Prepared { commit: String, prepared: Prepared },
    /// One benchmark run.
    Run {
        run: u64,
        commit: String,
        clients: u32,
        /// The run's length when the hunt chose one (see
        /// [`crate::core::run_length`]); absent: the profile's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<u32>,
        outcome: RunOutcome,
        /// The host that made the run, when the hunt measures on several;
        /// absent for this machine alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
    /// What this process of the hunt has spent so far, written after each
    /// new build and run (see [`crate::journal::spent`]).
    Spent { spent: crate::journal::spent::Spent },
    /// The hunt ended with this outcome.
    Finish { outcome: String, at: String },
}

impl Event {
    /// Run `run` of `commit` at `clients`, made on this machine at the
    /// profile's length, ending with `outcome`.
    pub fn run_here(
        run: u64,
        commit: &crate::model::Commit,
        clients: u32,
        outcome: &RunOutcome,
    ) -> Event {
        Event::Run {
            run,
            commit: commit.id.clone(),
            clients,
            seconds: None,
            outcome: outcome.clone(),
            host: None,
        }
    }
}

/// An append-only journal file.
///
/// Opening an existing journal remembers what it holds: appending a run or
/// a preparation it already has is a no-op, so a resumed hunt that replays
/// its past does not write it twice.
pub struct Journal {
    path: PathBuf,
    file: File,
    runs: HashSet<u64>,
    prepared: HashSet<String>,
    /// Bytes of a torn last line cut off when the journal was opened.
    cut: usize,
}

impl Journal {
    /// Opens (creating if needed) the journal at `path` for appending.
    ///
    /// A last line cut short by a crash (`kill -9` in the middle of a
    /// write) is cut off the file, so that the next event starts a line of
    /// its own instead of being glued to the torn one; [`Journal::cut`]
    /// says how much was cut.
    pub fn open(path: &Path) -> anyhow::Result<Journal> {
        let read = read_journal(path)?;
        let mut runs = HashSet::new();
        let mut prepared = HashSet::new();
        for event in &read.events {
            match event {
                Event::Run { run, .. } => {
                    runs.insert(*run);
                }
                Event::Prepared { commit, .. } => {
                    prepared.insert(commit.clone());
                }
                _ => {}
            }
        }
        let mut file = crate::files::append(path)
            .with_context(|| format!("cannot open the journal {}", path.display()))?;
        let cut = read.len - read.intact;
        if cut > 0 {
            file.set_len(read.intact as u64)
                .with_context(|| format!("cannot cut the torn end of {}", path.display()))?;
        }
        if read.intact > 0 && !read.ends_with_newline {
            file.write_all(b"\n")
                .with_context(|| format!("cannot write the journal {}", path.display()))?;
        }
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            runs,
            prepared,
            cut,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many bytes of a torn last line [`Journal::open`] cut off (0
    /// when the journal was whole).
    pub fn cut(&self) -> usize {
        self.cut
    }

    /// Appends one event and syncs it to disk; says whether it was new
    /// (a run or preparation the journal already holds is not written).
    pub fn append(&mut self, event: &Event) -> anyhow::Result<bool> {
        let fresh = match event {
            Event::Run { run, .. } => self.runs.insert(*run),
            Event::Prepared { commit, .. } => self.prepared.insert(commit.clone()),
            _ => true,
        };
        if !fresh {
            return Ok(false);
        }
        let mut line = serde_json::to_string(event).context("cannot encode a journal event")?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| crate::files::explain(&self.path, e))
            .with_context(|| format!("cannot write the journal {}", self.path.display()))?;
        Ok(true)
    }

    /// Reads every complete event of the journal at `path`; a last line cut
    /// short by a crash is ignored, and so is a line repeating a run or a
    /// preparation read before (see [`Past::repeated`]). A missing file is
    /// an empty journal.
    pub fn load(path: &Path) -> anyhow::Result<Vec<Event>> {
        Ok(read_journal(path)?.events)
    }

    /// The past of the hunt whose plan is named `plans` (its folder name,
    /// or the name an earlier release gave it), from its journal at
    /// `path`. A journal whose `start` lines name another plan is refused:
    /// its runs are of other commits, settings or thresholds, and would be
    /// taken for this hunt's.
    pub fn past(path: &Path, plans: &[&str]) -> anyhow::Result<Past> {
        let read = read_journal(path)?;
        let foreign = read.events.iter().find_map(|e| match e {
            Event::Start { plan, .. } if !plans.contains(&plan.as_str()) => Some(plan),
            _ => None,
        });
        if let Some(other) = foreign {
            return Err(UsageError(format!(
                "the journal {} belongs to another hunt (plan {other}), not to this one \
                 (plan {}): its runs were made with other endpoints, settings or thresholds\n\
                 hint: move it away (`mv {} {}.other`) to start this hunt afresh, or rerun \
                 the command of the hunt it belongs to",
                path.display(),
                plans.first().copied().unwrap_or("?"),
                path.display(),
                path.display()
            ))
            .into());
        }
        Ok(Past {
            events: read.events,
            repeated: read.repeated,
        })
    }
}

/// A hunt's journal as a resumed hunt replays it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Past {
    pub events: Vec<Event>,
    /// Lines left out because they repeat a run (same run number and
    /// commit) or a preparation read before: a line copied twice counts
    /// once.
    pub repeated: usize,
}

impl Past {
    /// Runs in the journal.
    pub fn runs(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Run { .. }))
            .count()
    }
}

/// A journal as read: its events, and how much of it is intact.
struct Read {
    events: Vec<Event>,
    /// Bytes in the file.
    len: usize,
    /// Bytes up to the end of the last intact line.
    intact: usize,
    /// Whether the intact part ends a line (a last event may lack its
    /// newline when the write was cut right before it).
    ends_with_newline: bool,
    /// Lines repeating a run or a preparation read before, left out.
    repeated: usize,
}

/// Runs (by number, with their commit) and preparations read so far, to
/// tell a repeated line from a new one.
#[derive(Default)]
struct Seen {
    runs: HashMap<u64, String>,
    prepared: HashSet<String>,
}

impl Seen {
    /// Whether `event` is new; a run number seen before with another
    /// commit is damage (two hunts mixed), an error.
    fn fresh(&mut self, event: &Event) -> Result<bool, String> {
        match event {
            Event::Run { run, commit, .. } => match self.runs.get(run) {
                Some(c) if c == commit => Ok(false),
                Some(c) => Err(format!(
                    "it holds run {run} twice, of {c} and of {commit} (two hunts mixed?)"
                )),
                None => {
                    self.runs.insert(*run, commit.clone());
                    Ok(true)
                }
            },
            Event::Prepared { commit, .. } => Ok(self.prepared.insert(commit.clone())),
            _ => Ok(true),
        }
    }
}

/// Reads the journal at `path`. Every line but the last must be an event
/// with values a run can have (else the journal is damaged: the error
/// names the line); a last line that does not parse was torn by a crash
/// and is left out of `intact`, while one that parses but conflicts with
/// the lines before it (or holds values no run gives) is damage too.
fn read_journal(path: &Path) -> anyhow::Result<Read> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read the journal {}", path.display()));
        }
    };
    let mut read = Read {
        events: Vec::new(),
        len: bytes.len(),
        intact: 0,
        ends_with_newline: true,
        repeated: 0,
    };
    let mut seen = Seen::default();
    let mut start = 0;
    for (i, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let end = start + line.len();
        let text = std::str::from_utf8(line).map(str::trim);
        let event = match text {
            Ok("") => None,
            Ok(text) => match serde_json::from_str::<Event>(text) {
                Ok(event) => Some(Ok(event)),
                Err(e) => Some(Err(anyhow::Error::new(e))),
            },
            Err(e) => Some(Err(anyhow::Error::new(e).context("not UTF-8"))),
        };
        match event {
            None => {}
            // Only a line that does not parse can be a write cut short; a
            // whole event that conflicts is damage wherever it is.
            Some(Err(_)) if end == bytes.len() => break,
            Some(Err(e)) => return Err(damaged(e, i + 1, path)),
            Some(Ok(event)) => {
                let fresh = check_values(&event)
                    .and_then(|()| seen.fresh(&event))
                    .map_err(|damage| damaged(anyhow::anyhow!(damage), i + 1, path))?;
                if fresh {
                    read.events.push(event);
                } else {
                    read.repeated += 1;
                }
            }
        }
        read.intact = end;
        start = end;
    }
    read.ends_with_newline = read.intact == 0 || bytes[read.intact - 1] == b'\n';
    Ok(read)
}

/// `err`, found on line `line` of the journal at `path`, with what to do.
fn damaged(err: anyhow::Error, line: usize, path: &Path) -> anyhow::Error {
    err.context(format!(
        "line {line} of the journal {} is damaged; move the journal away to \
         start the hunt afresh, or cut the line off to keep the rest",
        path.display()
    ))
}

/// Checks that the values of a parsed `event` are ones a run can have: a
/// throughput a hunt could decide on (see [`Measurement::check`]) and
/// latencies that are numbers of milliseconds. A journal is pgbisect's own,
/// but it lies in a work dir for days; a value no run gives (`1e308`,
/// `-5`) would steer every decision made from it.
///
/// [`Measurement::check`]: crate::model::Measurement::check
fn check_values(event: &Event) -> Result<(), String> {
    match event {
        Event::Run {
            run,
            outcome: RunOutcome::Measured(m),
            ..
        } => m.check().map_err(|e| format!("run {run}: {e}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;
    use std::fs::OpenOptions;

    #[test]
    fn round_trip_and_truncated_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut j = Journal::open(&path).unwrap();
        let run = Event::Run {
            run: 1,
            commit: "abc".into(),
            clients: 1,
            seconds: None,
            outcome: RunOutcome::Measured(Measurement {
                instructions: None,
                tps: 100.0,
                latency_ms: Some(1.0),
                failed_transactions: None,
                percentiles: None,
                output: None,
            }),
            host: None,
        };
        j.append(&run).unwrap();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"event\":\"run\",\"ru").unwrap();
        let events = Journal::load(&path).unwrap();
        assert_eq!(events, vec![run.clone()]);
        // Reopened, it does not take the same run twice.
        let mut j = Journal::open(&path).unwrap();
        j.append(&run).unwrap();
        assert_eq!(Journal::load(&path).unwrap().len(), 1);
    }

    /// A run, as the hunt journals it.
    fn run(n: u64) -> Event {
        Event::Run {
            run: n,
            commit: "abc".into(),
            clients: 1,
            seconds: None,
            outcome: RunOutcome::tps_only(100.0 + n as f64),
            host: None,
        }
    }

    #[test]
    fn a_torn_tail_is_cut_off_so_later_starts_still_read_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut j = Journal::open(&path).unwrap();
        j.append(&run(1)).unwrap();
        drop(j);
        let whole = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"event\":\"run\",\"ru").unwrap();
        drop(f);
        // The next start cuts the torn line and says so ...
        let mut j = Journal::open(&path).unwrap();
        assert_eq!(j.cut(), 18);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        j.append(&run(2)).unwrap();
        drop(j);
        // ... so the start after it reads every event, the new one too.
        let j = Journal::open(&path).unwrap();
        assert_eq!(j.cut(), 0);
        assert_eq!(Journal::load(&path).unwrap(), vec![run(1), run(2)]);
    }

    #[test]
    fn a_last_event_without_its_newline_is_kept_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let line = serde_json::to_string(&run(1)).unwrap();
        std::fs::write(&path, &line).unwrap();
        let mut j = Journal::open(&path).unwrap();
        assert_eq!(j.cut(), 0);
        j.append(&run(2)).unwrap();
        assert_eq!(Journal::load(&path).unwrap(), vec![run(1), run(2)]);
    }

    #[test]
    fn damage_before_the_last_line_names_the_line_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let line = serde_json::to_string(&run(1)).unwrap();
        let mut bytes = format!("{line}\n").into_bytes();
        bytes.extend_from_slice(b"\xff\xfe not text\n");
        bytes.extend_from_slice(format!("{line}\n").as_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let err = format!("{:#}", Journal::open(&path).err().unwrap());
        assert!(err.contains("line 2 of the journal"), "{err}");
        assert!(err.contains("not UTF-8"), "{err}");
        assert!(err.contains("move the journal away"), "{err}");
        // A torn last line that is not text is cut like any other.
        std::fs::write(&path, [format!("{line}\n").as_bytes(), b"\xff"].concat()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().last(), Some(&0xff));
        assert_eq!(Journal::open(&path).unwrap().cut(), 1);
    }

    fn start(plan: &str) -> Event {
        Event::Start {
            good: "g".into(),
            bad: "b".into(),
            plan: plan.into(),
            at: "now".into(),
        }
    }

    fn write_events(path: &Path, events: &[Event]) {
        let text: String = events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap() + "\n")
            .collect();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_repeated_line_counts_once_and_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        write_events(&path, &[start("p"), run(1), run(2), run(2), run(3)]);
        let past = Journal::past(&path, &["p"]).unwrap();
        assert_eq!(past.events, vec![start("p"), run(1), run(2), run(3)]);
        assert_eq!((past.runs(), past.repeated), (3, 1));
        assert_eq!(Journal::load(&path).unwrap().len(), 4);
        // The same run number with another commit is damage, not a repeat.
        let mut other = run(2);
        if let Event::Run { commit, .. } = &mut other {
            *commit = "def".into();
        }
        write_events(&path, &[start("p"), run(1), run(2), other, run(3)]);
        let err = format!("{:#}", Journal::past(&path, &["p"]).unwrap_err());
        assert!(err.contains("line 4 of the journal"), "{err}");
        assert!(err.contains("run 2 twice, of abc and of def"), "{err}");
    }

    #[test]
    fn a_conflicting_last_line_is_refused_not_cut_as_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut other = run(1);
        if let Event::Run { commit, .. } = &mut other {
            *commit = "def".into();
        }
        write_events(&path, &[start("p"), run(1), other]);
        let before = std::fs::read(&path).unwrap();
        for err in [
            format!("{:#}", Journal::past(&path, &["p"]).unwrap_err()),
            format!("{:#}", Journal::open(&path).err().unwrap()),
        ] {
            assert!(err.contains("line 3 of the journal"), "{err}");
            assert!(err.contains("move the journal away"), "{err}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing cut");
    }

    #[test]
    fn a_run_with_a_throughput_or_latency_no_run_gives_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let with = |tps: f64, latency: Option<f64>| Event::Run {
            run: 2,
            commit: "abc".into(),
            clients: 1,
            seconds: None,
            outcome: RunOutcome::Measured(Measurement {
                tps,
                instructions: None,
                latency_ms: latency,
                failed_transactions: Some(0),
                percentiles: None,
                output: None,
            }),
            host: None,
        };
        for (bad, said) in [
            (with(1e308, None), "tps 1e308"),
            (with(-5.0, None), "tps -5"),
            (with(0.0, None), "tps 0"),
            (with(100.0, Some(-1.0)), "latency of -1 ms"),
        ] {
            // Last or not, such a line is refused with its number.
            for events in [
                vec![start("p"), run(1), bad.clone()],
                vec![start("p"), bad.clone(), run(3)],
            ] {
                write_events(&path, &events);
                let line = events.iter().position(|e| e == &bad).unwrap() + 1;
                let err = format!("{:#}", Journal::past(&path, &["p"]).unwrap_err());
                assert!(
                    err.contains(&format!("line {line} of the journal")),
                    "{err}"
                );
                assert!(err.contains(said), "{err}");
            }
        }
        write_events(&path, &[start("p"), with(1e12, Some(0.0)), run(3)]);
        assert_eq!(Journal::past(&path, &["p"]).unwrap().runs(), 2);
    }

    #[test]
    fn a_journal_of_another_plan_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        write_events(&path, &[start("theirs"), run(1)]);
        let err = Journal::past(&path, &["mine", "old-name"]).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        let err = err.to_string();
        assert!(
            err.contains("another hunt (plan theirs)") && err.contains("(plan mine)"),
            "{err}"
        );
        assert!(err.contains("mv "), "{err}");
        write_events(&path, &[start("old-name"), run(1), start("mine")]);
        assert_eq!(
            Journal::past(&path, &["mine", "old-name"]).unwrap().runs(),
            1
        );
        assert_eq!(
            Journal::past(&dir.path().join("none"), &["mine"]).unwrap(),
            Past::default()
        );
    }

    fn events_strategy() -> impl proptest::strategy::Strategy<Value = Vec<Event>> {
        use proptest::prelude::*;
        proptest::collection::vec(1u64..40, 0..12).prop_map(|runs| {
            let mut events = vec![start("p")];
            events.extend(runs.into_iter().map(|n| {
                let mut e = run(n);
                if let Event::Run { commit, .. } = &mut e {
                    // One commit a run number, as a hunt journals them.
                    *commit = ["abc", "def", "123"][n as usize % 3].into();
                }
                e
            }));
            events
        })
    }

    proptest::proptest! {
        /// Whatever a kill, a disk or a person leaves in the file, reading
        /// it never panics, and garbage is never taken for events: each
        /// event read comes from a line that is one.
        #[test]
        fn any_bytes_read_without_panic_or_invented_events(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            if let Ok(events) = Journal::load(&path) {
                let text = String::from_utf8_lossy(&bytes);
                let lines: Vec<&str> = text.lines().map(str::trim).collect();
                for e in events {
                    let found = lines.iter().any(|l| serde_json::from_str::<Event>(l).ok() == Some(e.clone()));
                    proptest::prop_assert!(found, "{e:?} from {text:?}");
                }
            }
            let _ = Journal::past(&path, &["p"]);
            let _ = Journal::open(&path);
        }

        /// A journal whose lines are repeated, or cut anywhere, reads back
        /// as its events each once, or (cut before its last line) as an
        /// error naming the damaged line.
        #[test]
        fn repeats_count_once_and_cuts_are_found(
            events in events_strategy(),
            repeat in proptest::collection::vec(0usize..20, 0..4),
            cut in 0usize..2000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.jsonl");
            let mut written = events.clone();
            for r in repeat {
                written.push(events[r % events.len()].clone());
            }
            let mut seen = Seen::default();
            let want: Vec<Event> = written.iter().filter(|e| seen.fresh(e).unwrap()).cloned().collect();
            let lines: Vec<String> = written.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
            let text = lines.join("\n") + "\n";
            std::fs::write(&path, &text).unwrap();
            let past = Journal::past(&path, &["p"]).unwrap();
            proptest::prop_assert_eq!(&past.events, &want);
            proptest::prop_assert_eq!(past.repeated, written.len() - want.len());
            let cut = cut.min(text.len());
            std::fs::write(&path, &text.as_bytes()[..cut]).unwrap();
            match Journal::past(&path, &["p"]) {
                Ok(p) => proptest::prop_assert!(p.events.len() <= want.len()),
                Err(e) => proptest::prop_assert!(format!("{e:#}").contains("is damaged"), "{e:#}"),
            }
        }
    }

    #[test]
    fn missing_journal_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Journal::load(&dir.path().join("none")).unwrap().is_empty());
    }
}
