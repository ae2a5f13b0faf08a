//! The measuring boundary.
//!
//! A hunt needs two things from the outside world: a commit turned into
//! something runnable, and one benchmark run of it. Both go through [`Lab`],
//! so the search and the statistics can be driven by the real PostgreSQL lab,
//! by shell commands from a profile, or by a simulation, without knowing which.
//!
//! | module    | lab |
//! |-----------|-----|
//! | `pg`      | the real PostgreSQL lab: build, server, pgbench |
//! | `command` | shell commands from a profile |
//! | `counting` | another lab, every run counted (`--measure instructions`) |
//! | `replay`  | runs from a journal first, then a real lab (resume) |
//! | `pool`    | shell commands from a profile, run on several hosts (`crate::hosts`) |
//! | `pg::pool` | real PostgreSQL builds made here, measured on several hosts |
//! | `open`    | opens the lab a [`open::LabSpec`] names (`held`: the hosts it measures on) |
//! | `spread`  | what labs of several hosts share: rounds, lone runs in turn, hosts down, sends |

pub mod command;
pub mod counting;
pub mod held;
pub mod open;
pub mod pg;
pub mod pool;
pub mod replay;
pub mod reuse;
pub mod sim;
pub(crate) mod spread;

use crate::core::why::Instrumented;
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::path::{Path, PathBuf};

/// Where a lab keeps what outlives one run: named by the work dir
/// ([`crate::workspace::WorkDir::lab_dirs`]), used by the labs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LabDirs {
    /// The work dir itself: it marks the processes of its commands.
    pub root: PathBuf,
    /// Build trees, one per build settings.
    pub build: PathBuf,
    /// Installed builds, one per commit and settings.
    pub installs: PathBuf,
    /// Build logs.
    pub logs: PathBuf,
    /// Data templates (`initdb` and `pgbench -i`), one per data format.
    pub templates: PathBuf,
    /// The data directory runs use.
    pub data: PathBuf,
    /// Servers started and not yet stopped, so leftovers can be reaped.
    pub servers: PathBuf,
}

impl LabDirs {
    /// The labs' folders directly under `root` (a work dir).
    pub fn under(root: &Path) -> LabDirs {
        LabDirs {
            root: root.to_path_buf(),
            build: root.join("build"),
            installs: root.join("installs"),
            logs: root.join("logs"),
            templates: root.join("templates"),
            data: root.join("data"),
            servers: root.join("servers"),
        }
    }
}

/// Which run of which workload to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// pgbench clients (`-c`).
    pub clients: u32,
    /// Run number within the hunt, counted from 1 over all commits.
    pub run: u64,
    /// Seconds the run lasts, when the hunt chose a length other than the
    /// profile's (see [`Lab::run_length`]); `None`: the profile's.
    pub seconds: Option<u32>,
}

/// One run of a round ([`Lab::run_on`]): which commit, on which host (its
/// place in [`Lab::hosts`]), numbered how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned<'a> {
    pub commit: &'a Commit,
    pub host: usize,
    pub run: u64,
}

/// One run of a round ([`Lab::run_round`]) and where it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRun {
    /// The host's name; `None` for this machine when it is the only one.
    pub host: Option<String>,
    pub outcome: RunOutcome,
}

/// The error of a lab asked for a counted run it cannot make.
pub fn cannot_count() -> anyhow::Error {
    crate::error::UsageError(
        "this lab cannot count instructions: counts need pgbench and a PostgreSQL server \
         started here (not a custom benchmark command, not --hosts); measure with --measure tps"
            .into(),
    )
    .into()
}

/// Turns commits into measurements.
///
/// `Err` is for trouble with the environment (disk full, a missing tool,
/// an interrupt) that should stop the hunt; a commit that will not build
/// or a run without a result are ordinary outcomes.
/// `runs` made one after another with `lab`'s [`Lab::run`] on this
/// machine: [`Lab::run_on`] of a lab without hosts.
pub fn each_here<L: Lab + ?Sized>(
    lab: &mut L,
    spec: RunSpec,
    runs: &[Planned],
) -> anyhow::Result<Vec<HostRun>> {
    runs.iter()
        .map(|p| {
            let outcome = lab.run(p.commit, RunSpec { run: p.run, ..spec })?;
            Ok(HostRun {
                host: None,
                outcome,
            })
        })
        .collect()
}

/// How the progress tells that `commit` is being prepared beside the
/// counted runs ([`Lab::prepare_ahead`]).
pub fn preparing_ahead(commit: &Commit) -> String {
    format!("preparing {} beside the counted runs", commit.short())
}

pub trait Lab {
    /// Make `commit` runnable. Called before the first run of a commit and
    /// again whenever the hunt comes back to it; cheap when already built.
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared>;

    /// Run the benchmark once on a prepared commit.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome>;

    /// Says that `commit` will be prepared soon, while counted runs go
    /// on: a lab that can build it beside them starts now, and its
    /// [`Lab::prepare`] of `commit` then finds it built (or waits for the
    /// rest). Only a hunt on counts asks, as counts do not move with a busy
    /// CPU; a lab must not let a timed run run beside such a build.
    /// Whether a build started; by default nothing is built ahead.
    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        let _ = commit;
        false
    }

    /// The hosts this lab measures on, in the order of a round's runs;
    /// empty when it measures on this machine alone.
    fn hosts(&self) -> Vec<String> {
        Vec::new()
    }

    /// One run of a prepared commit on every host at once, in [`Lab::hosts`]
    /// order, numbered `spec.run`, `spec.run + 1`, and so on: [`Lab::run_on`]
    /// with every host. A lab on this machine alone makes one run, on no
    /// named host.
    fn run_round(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Vec<HostRun>> {
        let all: Vec<Planned> = (0..self.hosts().len().max(1))
            .map(|host| Planned {
                commit,
                host,
                run: spec.run + host as u64,
            })
            .collect();
        self.run_on(spec, &all)
    }

    /// Some runs, all at once, each of its own prepared commit on its own
    /// host: a whole round of one commit, a round shared among several
    /// commits (a search that measures several candidates at once), or
    /// the runs of a round a stopped hunt did not journal, so that no run
    /// is made or counted twice. This default is a lab on this machine
    /// alone, which makes each with [`Lab::run`] in turn; a lab of several
    /// hosts provides its own.
    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        each_here(self, spec, runs)
    }

    /// One run with instruments, for the why-runs after a culprit: kept
    /// apart from the evidence, never journaled as a run. Labs without
    /// instruments say so.
    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        let _ = (commit, spec);
        Ok(Instrumented::Unsupported(
            "a custom benchmark command has no instruments; why-runs need pgbench".into(),
        ))
    }

    /// One counted run (`--measure instructions`): the instructions a
    /// transaction costs in [`crate::model::Measurement::instructions`].
    /// Labs that cannot count say so as an error: a hunt or comparison
    /// asked to count where nothing can is a mistake to report, not a run
    /// that failed.
    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let _ = (commit, spec);
        Err(cannot_count())
    }

    /// Work done so far.
    fn totals(&self) -> LabTotals;

    /// A line describing what measures, for reports (e.g. the pgbench
    /// command line or the profile's commands).
    fn describe(&self) -> String;

    /// The profile's run length in seconds when this lab can make runs of
    /// another length (`RunSpec::seconds`); `None` when it cannot (a
    /// custom benchmark command decides its own length).
    fn run_length(&self) -> Option<u32> {
        None
    }
}
