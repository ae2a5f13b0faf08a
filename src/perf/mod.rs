//! Where the server's CPU time went: sampled profiles of two builds and
//! their difference.
//!
//! Once a commit is named, the next question is why it is slower. Linux
//! `perf` sampling the postmaster and its backends while pgbench runs, for
//! the culprit and for its parent, answers it in most cases: the function
//! the commit made slower takes a larger share of the samples. This module
//! records ([`Sampler`], with the real [`PerfSampler`] and fakes in tests),
//! folds the stacks ([`Folded`], inferno's collapse-perf), compares two
//! profiles function by function ([`ProfileDiff`], pure) and draws the
//! differential flame graph ([`flame`]). What it cannot do (no `perf`, a
//! kernel that refuses) comes back as an [`Unavailable`] to print.
//! [`record_during`] samples beside a load given as a closure;
//! [`Recording`] starts and finishes the same around a load the caller
//! runs itself (a lab's hook before and after a measured run).
//!
//! Useful stacks need frame pointers in the build
//! (`BuildSettings::for_profiling`) or DWARF unwinding ([`CallGraph`]),
//! which copies stack memory at every sample and costs far more.

pub mod diff;
pub mod flame;
pub mod fold;
pub mod inline;
pub mod record;

pub use diff::{FunctionChange, ProfileDiff};
pub use fold::{FoldError, Folded};
pub use record::{PerfSampler, Unavailable, paranoid, process_tree};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How `perf` walks a sampled stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// Following frame pointers: cheap, needs a build that keeps them.
    FramePointers,
    /// From a copy of the stack and the binaries' unwind tables: works on
    /// any build (Debian's packages), at a much higher cost per sample.
    Dwarf,
}

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Processes sampled, with the ones they fork while recording.
    pub pids: Vec<u32>,
    pub duration: Duration,
    pub call_graph: CallGraph,
    /// Samples a second per CPU.
    pub frequency: u32,
    /// A folder for the raw recording, removed when done.
    pub scratch: PathBuf,
}

/// Records on-CPU samples with call stacks.
pub trait Sampler: Send + Sync {
    /// Samples `req`'s processes for its duration and returns what
    /// `perf script` prints of the samples. `Err` is only for what stops a
    /// hunt anyway (an interrupt, a work dir that cannot be written).
    fn record(&self, req: &Request) -> anyhow::Result<Result<String, Unavailable>>;
}

/// When and how to sample while a load runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Time given to the load to connect and settle before sampling.
    pub settle: Duration,
    /// How long samples are taken; the load must run at least
    /// `settle + duration`.
    pub duration: Duration,
    pub call_graph: CallGraph,
    pub frequency: u32,
}

impl Plan {
    /// Frame-pointer stacks at 99 samples a second (a prime, so the
    /// sampling does not beat with periodic work; at 499 the server lost
    /// more throughput for the same answer, see BENCHMARKS.md), starting
    /// 1 s into a run of `run` and ending 1 s before its end (at least 1 s
    /// long: runs should last 3 s or more).
    pub fn within(run: Duration) -> Plan {
        let settle = Duration::from_secs(1);
        Plan {
            settle,
            duration: run.saturating_sub(2 * settle).max(settle),
            call_graph: CallGraph::FramePointers,
            frequency: 99,
        }
    }
}

/// A recording running beside a load that the caller starts and waits
/// for itself (a lab's hook told the postmaster's pid before its measured
/// run, say).
pub struct Recording {
    thread: std::thread::JoinHandle<anyhow::Result<Result<String, Unavailable>>>,
}

impl Recording {
    /// Starts sampling the server whose postmaster is `root` as `plan`
    /// says: after `plan.settle`, for `plan.duration`. Returns at once.
    pub fn start(sampler: Arc<dyn Sampler>, root: u32, plan: Plan, scratch: PathBuf) -> Recording {
        let thread = std::thread::spawn(move || {
            std::thread::sleep(plan.settle);
            let req = Request {
                pids: process_tree(root),
                duration: plan.duration,
                call_graph: plan.call_graph,
                frequency: plan.frequency,
                scratch,
            };
            sampler.record(&req)
        });
        Recording { thread }
    }

    /// Waits for the sampling to end; the folded profile, or why there is
    /// none.
    pub fn finish(self) -> anyhow::Result<Result<Folded, Unavailable>> {
        let recorded = self
            .thread
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the thread recording the profile failed")))?;
        Ok(recorded.and_then(|script| {
            let folded = Folded::from_perf_script(&script).map_err(|e| Unavailable::Failed {
                command: "folding perf script's output".into(),
                detail: e.to_string(),
            })?;
            if folded.samples() == 0 {
                return Err(Unavailable::NoSamples);
            }
            Ok(folded)
        }))
    }
}

/// Runs `load` (pgbench against the server whose postmaster is `root`)
/// and, beside it, samples the server's processes as `plan` says; returns
/// the folded profile, or why there is none, with what `load` returned.
pub fn record_during<T>(
    sampler: Arc<dyn Sampler>,
    root: u32,
    plan: &Plan,
    scratch: &Path,
    load: impl FnOnce() -> T,
) -> (anyhow::Result<Result<Folded, Unavailable>>, T) {
    let recording = Recording::start(sampler, root, *plan, scratch.to_path_buf());
    let out = load();
    (recording.finish(), out)
}

/// What [`write_comparison`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub diff: ProfileDiff,
    /// The table of risers and fallers (also in `profile-diff.txt`).
    pub table: String,
    pub svg: PathBuf,
}

/// Rows of risers and of fallers in the table.
pub const TABLE_ROWS: usize = 10;

/// Writes both folded profiles (`before.folded`, `after.folded`, which
/// inferno and other flame graph tools read), the table
/// (`profile-diff.txt`) and the differential flame graph
/// (`profile-diff.svg`) into `dir`; no link there is followed.
pub fn write_comparison(
    dir: &Path,
    before: &Folded,
    after: &Folded,
    title: &str,
) -> std::io::Result<Written> {
    crate::folders::create_dir(dir)?;
    crate::files::write(&dir.join("before.folded"), before.to_text())?;
    crate::files::write(&dir.join("after.folded"), after.to_text())?;
    let diff = ProfileDiff::between(before, after);
    let table = diff.table(TABLE_ROWS);
    crate::files::write(&dir.join("profile-diff.txt"), &table)?;
    let svg = dir.join("profile-diff.svg");
    flame::write_differential(&svg, before, after, title)?;
    Ok(Written { diff, table, svg })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Gives canned `perf script` text (or a reason) and remembers the
    /// requests it was given.
    struct FakeSampler {
        answer: Result<String, Unavailable>,
        asked: Mutex<Vec<Request>>,
    }

    impl Sampler for FakeSampler {
        fn record(&self, req: &Request) -> anyhow::Result<Result<String, Unavailable>> {
            self.asked.lock().unwrap().push(req.clone());
            Ok(self.answer.clone())
        }
    }

    fn fake(answer: Result<String, Unavailable>) -> Arc<FakeSampler> {
        Arc::new(FakeSampler {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    #[test]
    fn sampling_runs_beside_the_load_and_folds_what_it_got() {
        let sampler = fake(Ok(fold::tests::BEFORE.to_string()));
        let tmp = tempfile::tempdir().unwrap();
        let plan = Plan {
            settle: Duration::from_millis(10),
            ..Plan::within(Duration::from_secs(5))
        };
        let (folded, tps) = record_during(
            sampler.clone(),
            std::process::id(),
            &plan,
            tmp.path(),
            || 42,
        );
        assert_eq!(tps, 42);
        assert!(folded.unwrap().unwrap().has_function("PostgresMain"));
        let asked = sampler.asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].pids[0], std::process::id());
        assert_eq!(asked[0].duration, Duration::from_secs(3));
        assert_eq!(asked[0].call_graph, CallGraph::FramePointers);
    }

    #[test]
    fn a_refusal_comes_back_as_a_reason_and_the_load_still_runs() {
        let refused = Unavailable::NotPermitted {
            paranoid: Some(3),
            detail: "Permission denied".into(),
        };
        let sampler = fake(Err(refused.clone()));
        let tmp = tempfile::tempdir().unwrap();
        let plan = Plan {
            settle: Duration::ZERO,
            ..Plan::within(Duration::from_secs(1))
        };
        let (folded, ran) = record_during(sampler, 1, &plan, tmp.path(), || true);
        assert!(ran);
        assert_eq!(folded.unwrap().unwrap_err(), refused);
        let empty = fake(Ok(String::new()));
        // Started and finished by a caller that runs the load itself.
        let recording = Recording::start(empty, 1, plan, tmp.path().to_path_buf());
        assert_eq!(
            recording.finish().unwrap().unwrap_err(),
            Unavailable::NoSamples
        );
    }

    #[test]
    fn a_comparison_writes_profiles_table_and_graph() {
        let before =
            Folded::parse("postgres;PostgresMain;ExecutorStart 1\npostgres;b 9\n").unwrap();
        let after = Folded::parse("postgres;PostgresMain;ExecutorStart 5\npostgres;b 5\n").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("why");
        let written = write_comparison(&dir, &before, &after, "t").unwrap();
        assert_eq!(written.diff.risers(1)[0].name, "ExecutorStart");
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(Folded::parse(&read("before.folded")).unwrap(), before);
        assert_eq!(Folded::parse(&read("after.folded")).unwrap(), after);
        assert_eq!(read("profile-diff.txt"), written.table);
        assert!(read("profile-diff.svg").starts_with("<?xml"));
    }
}
