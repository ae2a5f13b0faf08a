//! Results on disk after every run.
//!
//! A hunt can take a night; a crash, a reboot or Ctrl-C must lose at most
//! the run in flight. Every event is appended as one JSON line and synced
//! before the hunt moves on. Because the hunt's decisions depend only on the
//! results it has seen, replaying the journal's results in order rebuilds
//! its state exactly: that is how a hunt is resumed.

pub mod spent;

use crate::model::{Prepared, RunOutcome};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
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
    /// short by a crash is ignored. A missing file is an empty journal.
    pub fn load(path: &Path) -> anyhow::Result<Vec<Event>> {
        Ok(read_journal(path)?.events)
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
}

/// Reads the journal at `path`. Every line but the last must be an event
/// (else the journal is damaged: the error names the line); a last line
/// that is not one was torn by a crash and is left out of `intact`.
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
    };
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
            Some(Ok(event)) => read.events.push(event),
            Some(Err(_)) if end == bytes.len() => break,
            Some(Err(e)) => {
                return Err(e).with_context(|| {
                    format!(
                        "line {} of the journal {} is damaged; move the journal away to \
                         start the hunt afresh, or cut the line off to keep the rest",
                        i + 1,
                        path.display()
                    )
                });
            }
        }
        read.intact = end;
        start = end;
    }
    read.ends_with_newline = read.intact == 0 || bytes[read.intact - 1] == b'\n';
    Ok(read)
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
                tps: 100.0,
                latency_ms: Some(1.0),
                failed_transactions: None,
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

    #[test]
    fn missing_journal_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Journal::load(&dir.path().join("none")).unwrap().is_empty());
    }
}
