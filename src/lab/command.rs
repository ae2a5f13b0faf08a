//! A lab driven by shell commands from a profile.
//!
//! Not every hunt is over PostgreSQL's own build: an extension, a patched
//! tree, or a benchmark that is not pgbench can be measured by giving the
//! build and benchmark commands in the profile. The commands run in a
//! private checkout of each commit and get its coordinates in the
//! environment; the benchmark's output is read like pgbench's.

use crate::bench;
use crate::capture::{Capture, OUTPUT_LIMIT};
use crate::lab::{Lab, LabDirs, RunSpec};
use crate::model::{Commit, LabTotals, Measurement, Prepared, RunOutcome};
use crate::proc::{self, Ended};
use crate::repo::WorkTree;
use crate::strays::{self, Marks};
use anyhow::Context;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// The commands of a custom-command profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// Builds the checkout (cwd) and installs into `$PGBISECT_PREFIX`.
    pub build: Option<String>,
    /// Prints pgbench-style output with a `tps = N` line.
    pub benchmark: String,
    /// How long a build may take before it is stopped (the commit is
    /// then a skip).
    pub build_limit: Duration,
    /// How long one run may take before it is stopped (a failed run).
    pub benchmark_limit: Duration,
}

/// A build command's deadline when the profile gives none.
pub const DEFAULT_BUILD_LIMIT: Duration = Duration::from_secs(4 * 3600);
/// A benchmark command's deadline when the profile gives none.
pub const DEFAULT_BENCHMARK_LIMIT: Duration = Duration::from_secs(3600);

/// Runs the profile's commands on private checkouts.
pub struct CommandLab {
    commands: Commands,
    worktree: WorkTree,
    checked_out: Option<String>,
    dirs: LabDirs,
    runs_dir: PathBuf,
    prepared: HashMap<String, Prepared>,
    totals: LabTotals,
    /// Marks the commands' processes, to stop what they leave running.
    marks: Marks,
}

impl CommandLab {
    /// `worktree` is the private checkout the commands run in; logs and
    /// install prefixes go into `dirs`, run outputs into `runs_dir`.
    pub fn new(
        commands: Commands,
        worktree: WorkTree,
        dirs: LabDirs,
        runs_dir: &Path,
    ) -> anyhow::Result<Self> {
        for dir in [&dirs.logs, &dirs.installs, &runs_dir.to_path_buf()] {
            crate::folders::create_dir(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let marks = Marks::for_work_dir(&dirs.root);
        let stopped = marks.stop_earlier();
        if stopped > 0 {
            let processes = if stopped == 1 { "process" } else { "processes" };
            eprintln!(
                "pgbisect: stopped {stopped} {processes} that commands of an earlier pgbisect in \
                 {} left running",
                dirs.root.display()
            );
        }
        Ok(CommandLab {
            marks,
            commands,
            worktree,
            checked_out: None,
            dirs,
            runs_dir: runs_dir.to_path_buf(),
            prepared: HashMap::new(),
            totals: LabTotals::default(),
        })
    }

    /// The profile's commands.
    pub fn commands(&self) -> &Commands {
        &self.commands
    }

    /// Where the build of `commit` installs (`$PGBISECT_PREFIX`).
    pub fn prefix(&self, commit: &Commit) -> PathBuf {
        self.dirs.installs.join(&commit.id)
    }

    fn checkout(&mut self, commit: &Commit) -> anyhow::Result<()> {
        if self.checked_out.as_deref() != Some(commit.id.as_str()) {
            self.worktree
                .checkout(&commit.id)
                .with_context(|| format!("cannot check out {}", commit.id))?;
            self.checked_out = Some(commit.id.clone());
        }
        Ok(())
    }

    fn shell(&self, script: &str, commit: &Commit, spec: Option<RunSpec>) -> duct::Expression {
        let mut expr = duct::cmd!("sh", "-c", script)
            .dir(self.worktree.path())
            .env("PGBISECT_COMMIT", &commit.id)
            .env("PGBISECT_SRC", self.worktree.path())
            .env("PGBISECT_PREFIX", self.prefix(commit));
        if let Some(spec) = spec {
            expr = expr
                .env("PGBISECT_CLIENTS", spec.clients.to_string())
                .env("PGBISECT_RUN", spec.run.to_string());
        }
        expr
    }

    /// Runs `expr` within `limit`, its output (stdout and stderr) going
    /// to a new file `out` of its own, of which the ends are kept when it
    /// is long (see [`Capture`]); what it started is stopped when it ends.
    /// Returns how it exited and that output, or why it gave none (it was
    /// stopped at its deadline, or for printing without end). An interrupt
    /// is an error, as is a full disk.
    fn execute(
        &self,
        expr: duct::Expression,
        (limit, out): (Duration, &Path),
        what: &str,
    ) -> anyhow::Result<Result<(ExitStatus, String), String>> {
        let (pipe, capture) = Capture::start(out, b"", crate::files::KEEP_OUTPUT, OUTPUT_LIMIT)
            .with_context(|| {
                format!("cannot write the output of the {what} to {}", out.display())
            })?;
        let token = self.marks.token();
        let expr = expr
            .env(strays::VAR, &token)
            .stderr_to_stdout()
            .stdout_file(pipe);
        let ended = proc::run(expr, limit);
        // Daemons it started (`setsid`) go before its result is kept.
        strays::stop_marked(&token);
        let captured = capture.finish().with_context(|| {
            format!("cannot write the output of the {what} to {}", out.display())
        })?;
        let ended = ended.with_context(|| format!("cannot start the {what}"))?;
        if let Some(limit) = captured.over_limit {
            return Ok(Err(format!(
                "the {what} printed more than {} MiB and was stopped; the ends of its output \
                 are in {}",
                limit >> 20,
                out.display()
            )));
        }
        match ended {
            Ended::Exited(output) => Ok(Ok((output.status, captured.text))),
            Ended::TimedOut(limit) => Ok(Err(format!(
                "the {what} did not finish in {} s and was stopped (set `timeout` in the \
                 profile for more)",
                limit.as_secs()
            ))),
            Ended::Interrupted => Err(proc::Interrupted.into()),
        }
    }

    fn build(&mut self, commit: &Commit, script: &str) -> anyhow::Result<Prepared> {
        let prefix = self.prefix(commit);
        let marker = prefix.join(".pgbisect-built");
        if marker.exists() {
            return Ok(Prepared::Ready { cached: true });
        }
        crate::folders::create_dir(&prefix)
            .with_context(|| format!("cannot create {}", prefix.display()))?;
        let log = self.dirs.logs.join(format!("build-{}.log", commit.id));
        let started = Instant::now();
        let expr = self.shell(script, commit, None);
        let what = format!("build command `{script}`");
        let ran = self.execute(expr, (self.commands.build_limit, &log), &what)?;
        self.totals.builds += 1;
        self.totals.build_seconds += started.elapsed().as_secs_f64();
        let (status, text) = match ran {
            Ok(done) => done,
            Err(reason) => {
                return Ok(Prepared::Unbuildable {
                    reason,
                    log: Some(log),
                });
            }
        };
        // A full disk is the machine's fault, not the commit's: the hunt
        // stops, nothing is journaled, and the build is made again.
        let wrote_to = [log.as_path(), prefix.as_path(), self.worktree.path()];
        if !status.success()
            && let Some(full) = crate::build::disk_full(&text, &wrote_to)
        {
            return Err(full.into());
        }
        if !status.success() {
            return Ok(Prepared::Unbuildable {
                reason: format!(
                    "build command `{script}` failed ({status}); last lines:\n{}",
                    tail(&text)
                ),
                log: Some(log),
            });
        }
        crate::files::write(&marker, &commit.id)
            .with_context(|| format!("cannot write {}", marker.display()))?;
        Ok(Prepared::Ready { cached: false })
    }
}

/// What one run of the benchmark command `script` measured: `exit` is
/// `Ok` when it succeeded, else its exit status in words; `text` is its
/// output, kept in the file `output`.
pub(crate) fn read_run(
    script: &str,
    exit: Result<(), String>,
    text: &str,
    output: PathBuf,
) -> RunOutcome {
    if let Err(status) = exit {
        return RunOutcome::Failed {
            reason: format!(
                "benchmark command `{script}` failed ({status}); last lines:\n{}",
                tail(text)
            ),
        };
    }
    match bench::parse_output(text) {
        Ok(report) => RunOutcome::Measured(Measurement {
            instructions: None,
            tps: report.tps,
            latency_ms: report.latency_ms,
            failed_transactions: report.failed_transactions,
            percentiles: None,
            output: Some(output),
        }),
        Err(e) => RunOutcome::Failed {
            reason: no_result(script, &e),
        },
    }
}

/// Said of a benchmark command whose output holds no result, in the
/// reason of its failed runs (the hunt's hint is about the command then,
/// not the commit).
pub const NO_RESULT: &str = "printed no result";

/// Why a run of the custom command `script` has no result: what it must
/// print, not pgbench's lines.
fn no_result(script: &str, err: &bench::ParseError) -> String {
    let what = "a custom benchmark command must print its result as a line `tps = N` \
                (N > 0, higher is faster), e.g. `echo \"tps = $score\"`";
    match err {
        bench::ParseError::NoTps { tail } => format!(
            "benchmark command `{script}` {NO_RESULT}: {what}; its last lines were:\n{tail}"
        ),
        bench::ParseError::BadTps { line } => format!(
            "benchmark command `{script}` {NO_RESULT}: its line {line:?} is not a positive \
             number (0 means no transaction completed in the run); {what}"
        ),
    }
}

/// The last lines of a command's output, for error messages.
fn tail(output: &str) -> String {
    bench::tail_lines(output, bench::TAIL_LINES)
}

impl Lab for CommandLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        if let Some(p) = self.prepared.get(&commit.id) {
            return Ok(p.clone());
        }
        self.checkout(commit)?;
        let prepared = match self.commands.build.clone() {
            Some(script) => self.build(commit, &script)?,
            None => Prepared::Ready { cached: true },
        };
        self.prepared.insert(commit.id.clone(), prepared.clone());
        Ok(prepared)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.checkout(commit)?;
        let script = self.commands.benchmark.clone();
        let started = Instant::now();
        let expr = self.shell(&script, commit, Some(spec));
        let what = format!("benchmark command `{script}`");
        let path = self
            .runs_dir
            .join(format!("run-{:05}-{}.txt", spec.run, commit.short()));
        let ran = self.execute(expr, (self.commands.benchmark_limit, &path), &what)?;
        self.totals.runs += 1;
        self.totals.bench_seconds += started.elapsed().as_secs_f64();
        Ok(match ran {
            Ok((status, text)) => {
                let exit = if status.success() {
                    Ok(())
                } else {
                    Err(status.to_string())
                };
                read_run(&script, exit, &text, path)
            }
            Err(reason) => RunOutcome::Failed { reason },
        })
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        match &self.commands.build {
            Some(b) => format!("build: {b}; benchmark: {}", self.commands.benchmark),
            None => format!("benchmark: {}", self.commands.benchmark),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_without_a_result_is_told_what_to_print() {
        let out = read_run("./bench", Ok(()), "score: 12\n", PathBuf::from("o"));
        let RunOutcome::Failed { reason } = out else {
            panic!("{out:?}");
        };
        assert!(
            reason.contains("must print its result as a line `tps = N`"),
            "{reason}"
        );
        assert!(
            reason.contains("score: 12") && !reason.contains("pgbench"),
            "{reason}"
        );
        let out = read_run("./bench", Ok(()), "tps = 0\n", PathBuf::from("o"));
        assert!(matches!(out, RunOutcome::Failed { reason } if reason.contains("not a positive")));
    }

    proptest::proptest! {
        /// Any output of a custom command is read without panic, and is a
        /// measurement only when it holds a `tps = ` line.
        #[test]
        fn any_output_reads_without_panic(text in "(?s).{0,300}", ok in proptest::bool::ANY) {
            let exit = if ok { Ok(()) } else { Err("exit status: 1".to_string()) };
            match read_run("b", exit, &text, PathBuf::from("o")) {
                RunOutcome::Measured(m) => {
                    proptest::prop_assert!(ok && text.contains("tps = ") && m.tps > 0.0);
                }
                RunOutcome::Failed { reason } => proptest::prop_assert!(reason.contains("`b`")),
            }
        }
    }
}
