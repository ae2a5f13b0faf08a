//! The watcher's results: every night, every run, every change found.
//!
//! `pgbisect watch` runs from cron for months; what it measured must
//! outlive any one night and be readable by other tools. The results go
//! into a database with a versioned schema ([`sqlite`], the embedded
//! default, one file in the work dir), or in a PostgreSQL database that
//! a team's machines share ([`postgres`]), behind the [`Store`] trait
//! ([`place`] opens the one `--store` names), and can be exported in the
//! CSV layout Apache Otava reads ([`otava`]).
//!
//! A run has a unique key (night, commit, series, round, role): a night
//! killed half way and run again inserts no run twice.

pub mod conformance;
pub mod marks;
pub mod otava;
pub mod pgpass;
pub mod place;
pub mod points;
pub mod postgres;
pub mod schema;
pub mod sqlite;
mod sqlite_digests;
mod sqlite_file;
mod tls;

use crate::core::counts::Measure;
use serde::{Deserialize, Serialize};

pub use marks::{ChangeMark, Mark};

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the results database {path}: {source}")]
    Sql {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("the results database {server}: {what}: {source}")]
    Postgres {
        /// `postgres://user@host:port/db`, never the password.
        server: String,
        what: String,
        #[source]
        source: ::postgres::Error,
    },
    #[error("the results database {server}: {what}")]
    Connection { server: String, what: String },
    #[error(
        "the results database {path} has schema version {found}, newer than the {known} this \
         pgbisect knows: run a newer pgbisect, or give another --work-dir or --store"
    )]
    Newer {
        path: String,
        found: i64,
        known: i64,
    },
    /// A store file (or its folder, or a file beside it) that another
    /// user could have made or could change; the source says which and
    /// what to do.
    #[error("the results database {path} is not safe to open")]
    Unsafe {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Another watcher holds the store (for this machine).
    #[error("the results database {store} is in use by another watcher ({who})\nhint: {hint}")]
    Busy {
        store: String,
        who: String,
        hint: String,
    },
    #[error("the results database {path} holds an unknown {what} `{value}`")]
    Unknown {
        path: String,
        what: &'static str,
        value: String,
    },
}

/// What a night came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NightStatus {
    /// Started and not finished: killed, or still running.
    Running,
    /// Every run it planned was made.
    Done,
    /// Stopped at its deadline; the next run of the watcher goes on.
    Stopped,
    /// Nothing new had landed since the last night.
    Idle,
    /// The night could not measure (a build broken on the branch).
    Failed,
}

impl NightStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            NightStatus::Running => "running",
            NightStatus::Done => "done",
            NightStatus::Stopped => "stopped",
            NightStatus::Idle => "idle",
            NightStatus::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Option<NightStatus> {
        [
            NightStatus::Running,
            NightStatus::Done,
            NightStatus::Stopped,
            NightStatus::Idle,
            NightStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }

    /// Whether the night still has runs to make.
    pub fn is_open(self) -> bool {
        matches!(self, NightStatus::Running | NightStatus::Stopped)
    }
}

/// A commit a night measures, with when it landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NightCommit {
    pub id: String,
    pub subject: String,
    /// Committer time, seconds since the epoch.
    pub committed: i64,
}

/// One night of the watcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Night {
    pub id: i64,
    /// The night's clock, seconds since the epoch (the replay's, when
    /// replaying).
    pub clock: i64,
    pub branch: String,
    pub tip: String,
    pub status: NightStatus,
    pub reason: Option<String>,
    /// The commit every candidate is measured beside.
    pub reference: String,
    /// What it measures, oldest first (the tip last).
    pub commits: Vec<NightCommit>,
}

/// A night about to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNight {
    pub clock: i64,
    pub branch: String,
    pub tip: String,
    pub reference: String,
    pub commits: Vec<NightCommit>,
}

impl NewNight {
    /// The night as stored with id `id`: running, no reason yet.
    pub fn begun(&self, id: i64) -> Night {
        Night {
            id,
            clock: self.clock,
            branch: self.branch.clone(),
            tip: self.tip.clone(),
            status: NightStatus::Running,
            reason: None,
            reference: self.reference.clone(),
            commits: self.commits.clone(),
        }
    }
}

/// Whether a run is of the commit measured or of the reference beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Candidate,
    Reference,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Candidate => "candidate",
            Role::Reference => "reference",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        [Role::Candidate, Role::Reference]
            .into_iter()
            .find(|r| r.as_str() == text)
    }
}

/// One benchmark run of a night.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub night: i64,
    pub commit: String,
    /// `profile/c<clients>`: see [`series_key`].
    pub series: String,
    pub profile: String,
    pub clients: u32,
    /// The host that measured; `None` for this machine.
    pub host: Option<String>,
    pub role: Role,
    /// The pair of runs (candidate and reference) within the night.
    pub round: u32,
    /// `None` when the run gave no result (`failed` says why).
    pub tps: Option<f64>,
    pub latency_avg_ms: Option<f64>,
    /// Latency percentiles, when the benchmark printed them.
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub failed: Option<String>,
    /// Seconds since the epoch.
    pub started: i64,
    pub seconds: f64,
    pub placement: Option<String>,
    /// The machine's facts, as JSON.
    pub machine: Option<String>,
}

/// The name of a tps series: one profile at one client count.
pub fn series_key(profile: &str, clients: u32) -> String {
    format!("{profile}/c{clients}")
}

/// What a count series' name ends with, after its tps series' name.
const COUNTS_SUFFIX: &str = "/instructions";

/// The name of the series of `profile` at `clients` on `measure`: the
/// tps series keeps the name it always had ([`series_key`]), so a store
/// kept before counts reads unchanged; the count series beside it is
/// `profile/c<clients>/instructions`. A count series' runs keep, where a
/// tps series' keep tps, the transactions a billion instructions buy
/// ([`crate::core::counts::transactions_per_billion`]): higher is better
/// on both, and a point, a change's size and its test read alike.
pub fn measured_series_key(profile: &str, clients: u32, measure: Measure) -> String {
    match measure {
        Measure::Tps => series_key(profile, clients),
        Measure::Instructions => format!("{}{COUNTS_SUFFIX}", series_key(profile, clients)),
    }
}

/// The measure a series' name says: instructions for a name ending in
/// `/c<clients>/instructions`, tps for every other (every name a store
/// kept before counts).
pub fn series_measure(series: &str) -> Measure {
    let counted = series
        .strip_suffix(COUNTS_SUFFIX)
        .and_then(|tps| tps.rsplit_once("/c"))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if counted {
        Measure::Instructions
    } else {
        Measure::Tps
    }
}

/// Where a change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeStatus {
    /// Found in the series, not yet measured side by side.
    Candidate,
    /// The side-by-side runs agree: the commits around it differ.
    Confirmed,
    /// The side-by-side runs do not support it.
    Dismissed,
    /// Told to people.
    Reported,
}

impl ChangeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Candidate => "candidate",
            ChangeStatus::Confirmed => "confirmed",
            ChangeStatus::Dismissed => "dismissed",
            ChangeStatus::Reported => "reported",
        }
    }

    fn parse(text: &str) -> Option<ChangeStatus> {
        [
            ChangeStatus::Candidate,
            ChangeStatus::Confirmed,
            ChangeStatus::Dismissed,
            ChangeStatus::Reported,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// What kind of move a change is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// A step between two commits measured one after the other.
    #[default]
    Step,
    /// Small steps that added up: the level of the series some nights
    /// ago against its level now, between a commit of then and one of now
    /// ([`crate::engine::watch::drift`]).
    Drift,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Step => "step",
            ChangeKind::Drift => "drift",
        }
    }

    fn parse(text: &str) -> Option<ChangeKind> {
        [ChangeKind::Step, ChangeKind::Drift]
            .into_iter()
            .find(|k| k.as_str() == text)
    }
}

/// A change of level in a series, between two measured commits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRow {
    pub id: i64,
    pub series: String,
    /// The last measured commit before the change, the first after it.
    pub before: String,
    pub after: String,
    /// The size in percent, with its interval, from the side-by-side
    /// runs (the series' levels while only a candidate).
    pub pct: f64,
    pub low_pct: Option<f64>,
    pub high_pct: Option<f64>,
    pub status: ChangeStatus,
    /// The night it was first found.
    pub first_night: i64,
    /// The change-point test's p-value.
    pub p_value: f64,
    /// A step, or a drift.
    #[serde(default)]
    pub kind: ChangeKind,
}

/// The hunt started from a confirmed change, and what came of it: kept
/// with the change, so that a night killed in the middle of the hunt
/// takes it up again and a change is hunted, and its finding mailed, once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeHunt {
    /// The change's id.
    pub change: i64,
    /// The name of the hunt's folder under the hunts' folder
    /// (`change-<id>`). Never read back as a place: the watcher derives
    /// the folder from its work dir and the change's id, whatever is kept
    /// here (an older pgbisect kept a path).
    pub dir: String,
    /// `culprit-found`, `no-regression` or `inconclusive` once it ended,
    /// [`NOT_ON_THE_LINE`] when it could not begin; `None` while it goes
    /// on.
    pub outcome: Option<String>,
    /// The first culprit's full SHA, when one was found.
    pub culprit: Option<String>,
    /// The text report once written, as `change-<id>/report.txt` (its
    /// `report.json` beside it); like `dir`, never read back as a place.
    pub report: Option<String>,
    /// When the finding was told (seconds since the epoch), by mail and
    /// by the command: never again.
    pub mailed: Option<i64>,
    /// The Message-ID it was mailed with, kept as soon as the mail went
    /// out: set while `mailed` is not, only the command is still owed.
    pub message_id: Option<String>,
}

/// The outcome kept for a change whose commits are no longer on the
/// branch's line (the history was rewritten): never hunted.
pub const NOT_ON_THE_LINE: &str = "not-on-the-line";

impl ChangeHunt {
    /// A hunt of `change` begun in the folder named `dir`.
    pub fn begun(change: i64, dir: &str) -> ChangeHunt {
        ChangeHunt {
            change,
            dir: dir.to_string(),
            outcome: None,
            culprit: None,
            report: None,
            mailed: None,
            message_id: None,
        }
    }
}

/// A period of the weekly digest (see
/// [`crate::engine::watch::digest`]): open while `written` is `None`;
/// told once `sent` is set (mailed, or nobody to mail).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestRow {
    pub branch: String,
    /// The period's first second and the second after its last, by the
    /// watcher's clock (seconds since the epoch).
    pub start: i64,
    pub end: i64,
    /// When the digest was composed and written (the watcher's clock).
    pub written: Option<i64>,
    /// When it was told: mailed, or found nobody to mail. `None` with
    /// `written` set: the mail was refused, the next start tries again.
    pub sent: Option<i64>,
    /// The Message-ID it was mailed with.
    pub message_id: Option<String>,
    /// The ids of the changes it tells of (settled since the digest
    /// before it), fixed when it is written.
    pub changes: Vec<i64>,
}

/// The watcher's results, wherever they are kept.
pub trait Store {
    /// The night of `branch` at exactly `clock`, if any.
    fn night_at(&mut self, branch: &str, clock: i64) -> Result<Option<Night>, StoreError>;
    /// Every night of `branch`, oldest clock first.
    fn nights(&mut self, branch: &str) -> Result<Vec<Night>, StoreError>;
    /// Records a night and the commits it will measure, in one transaction.
    fn begin_night(&mut self, night: &NewNight) -> Result<Night, StoreError>;
    fn finish_night(
        &mut self,
        id: i64,
        status: NightStatus,
        reason: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Adds a run unless one with its key is stored; whether it was added.
    fn add_run(&mut self, run: &RunRow) -> Result<bool, StoreError>;
    /// The runs of the nights of `branch`, in the order they were stored.
    fn runs(&mut self, branch: &str) -> Result<Vec<RunRow>, StoreError>;
    /// The changes of `branch`'s series.
    fn changes(&mut self, branch: &str) -> Result<Vec<ChangeRow>, StoreError>;
    /// Adds a change (its `id` is ignored) unless one with its series and
    /// commits is stored; its id either way.
    fn add_change(&mut self, change: &ChangeRow) -> Result<i64, StoreError>;
    /// A change's status and size, as the side-by-side runs found them.
    fn update_change(&mut self, change: &ChangeRow) -> Result<(), StoreError>;
    /// The hunts of `branch`'s changes, begun or ended, by change id.
    fn hunts(&mut self, branch: &str) -> Result<Vec<ChangeHunt>, StoreError>;
    /// Keeps where a change's hunt stands (its change must be stored).
    fn save_hunt(&mut self, hunt: &ChangeHunt) -> Result<(), StoreError>;
    /// The digest periods of `branch`, oldest start first.
    fn digests(&mut self, branch: &str) -> Result<Vec<DigestRow>, StoreError>;
    /// Keeps a digest period, replacing the one of its branch and start.
    fn save_digest(&mut self, digest: &DigestRow) -> Result<(), StoreError>;
    /// The marks of `branch`'s changes ([`marks`]), by change id.
    fn marks(&mut self, branch: &str) -> Result<Vec<ChangeMark>, StoreError>;
    /// Keeps a change's mark (its change must be stored), replacing the
    /// one it had.
    fn save_mark(&mut self, mark: &ChangeMark) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_series_is_named_beside_its_tps_series_and_read_back() {
        assert_eq!(
            measured_series_key("select-only", 8, Measure::Tps),
            "select-only/c8"
        );
        let counted = measured_series_key("select-only", 8, Measure::Instructions);
        assert_eq!(counted, "select-only/c8/instructions");
        assert_eq!(series_measure(&counted), Measure::Instructions);
        // Every name a store kept before counts is a tps series, a
        // profile named like a measure among them.
        for tps in [
            "select-only/c8",
            "instructions/c1",
            "a/b/c64",
            "x/instructions",
        ] {
            assert_eq!(series_measure(tps), Measure::Tps, "{tps}");
        }
        assert_eq!(series_measure("p/c/instructions"), Measure::Tps);
    }
}
