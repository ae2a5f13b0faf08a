//! Telling the user what the hunt is doing.
//!
//! On a terminal the user wants bars and an ETA; from cron, one timestamped
//! line per event; in tests, nothing. The hunt reports through
//! [`Progress`] and does not know which it is talking to.

use std::io::Write;

/// Something worth telling while a hunt runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgressEvent {
    /// A new phase began (endpoints, bisection of a range, verification).
    Phase(String),
    /// A commit is being built or taken from the cache.
    Preparing { commit: String },
    /// One run finished.
    Run {
        run: u64,
        commit: String,
        tps: Option<f64>,
    },
    /// A commit was judged.
    Judged { commit: String, judgement: String },
    /// The search's state: commits left in the window, steps left.
    Search { remaining: usize, steps_left: u32 },
    /// A remark worth a line of its own.
    Note(String),
}

/// Receives progress events.
pub trait Progress {
    fn event(&mut self, event: &ProgressEvent);
}

/// Says nothing: for tests and for callers that report elsewhere.
pub struct Silent;

impl Progress for Silent {
    fn event(&mut self, _event: &ProgressEvent) {}
}

/// One timestamped line per event on standard error, for cron and logs.
pub struct LogLines {
    pub started: std::time::Instant,
}

impl LogLines {
    pub fn new() -> Self {
        LogLines {
            started: std::time::Instant::now(),
        }
    }
}

impl Default for LogLines {
    fn default() -> Self {
        Self::new()
    }
}

/// The text of one event, shared by every reporter that prints lines.
pub fn describe(event: &ProgressEvent) -> String {
    match event {
        ProgressEvent::Phase(p) => format!("== {p}"),
        ProgressEvent::Preparing { commit } => format!("preparing {commit}"),
        ProgressEvent::Run { run, commit, tps } => match tps {
            Some(t) => format!("run {run}: {commit} {t:.1} tps"),
            None => format!("run {run}: {commit} failed"),
        },
        ProgressEvent::Judged { commit, judgement } => format!("{commit} is {judgement}"),
        ProgressEvent::Search {
            remaining,
            steps_left,
        } => format!("{remaining} commits left, about {steps_left} steps"),
        ProgressEvent::Note(n) => n.clone(),
    }
}

impl Progress for LogLines {
    fn event(&mut self, event: &ProgressEvent) {
        let secs = self.started.elapsed().as_secs();
        let stamp = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
        let _ = writeln!(std::io::stderr(), "[{stamp}] {}", describe(event));
    }
}
