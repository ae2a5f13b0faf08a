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
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
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
        outcome: RunOutcome,
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
}

impl Journal {
    /// Opens (creating if needed) the journal at `path` for appending.
    pub fn open(path: &Path) -> anyhow::Result<Journal> {
        let mut runs = HashSet::new();
        let mut prepared = HashSet::new();
        for event in Journal::load(path)? {
            match event {
                Event::Run { run, .. } => {
                    runs.insert(run);
                }
                Event::Prepared { commit, .. } => {
                    prepared.insert(commit);
                }
                _ => {}
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open the journal {}", path.display()))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            runs,
            prepared,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
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
            .with_context(|| {
                format!(
                    "cannot write the journal {} (is the disk full?)",
                    self.path.display()
                )
            })?;
        Ok(true)
    }

    /// Reads every complete event of the journal at `path`; a last line cut
    /// short by a crash is ignored. A missing file is an empty journal.
    pub fn load(path: &Path) -> anyhow::Result<Vec<Event>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot read the journal {}", path.display()));
            }
        };
        let lines: Vec<String> = BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot read the journal {}", path.display()))?;
        let mut events = Vec::with_capacity(lines.len());
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(line) {
                Ok(event) => events.push(event),
                Err(_) if i == last => break,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "line {} of the journal {} is damaged",
                            i + 1,
                            path.display()
                        )
                    });
                }
            }
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;

    #[test]
    fn round_trip_and_truncated_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut j = Journal::open(&path).unwrap();
        let run = Event::Run {
            run: 1,
            commit: "abc".into(),
            clients: 1,
            outcome: RunOutcome::Measured(Measurement {
                tps: 100.0,
                latency_ms: Some(1.0),
                failed_transactions: None,
                output: None,
            }),
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

    #[test]
    fn missing_journal_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Journal::load(&dir.path().join("none")).unwrap().is_empty());
    }
}
