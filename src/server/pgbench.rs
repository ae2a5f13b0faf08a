//! Running pgbench against a private server.
//!
//! The full output of every run is kept on disk (a number in a table should
//! be traceable to the run that gave it), and a run that fails says which
//! command failed and why: pgbench's own last lines, and when the server
//! died under it, the server log's last lines.

use super::{Invocation, LOG_TAIL_LINES, RunAs, RunningServer};
use crate::bench::{ParseError, PgbenchReport, TAIL_LINES, parse_output, tail_lines};
use crate::capture::{Capture, OUTPUT_LIMIT};
use crate::placement::Pin;
use crate::proc::{self, Ended};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A pgbench run without a result.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("`{command}` could not be started: {source}; check the pgbench path")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot keep pgbench output in {}: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}); last lines of its output:\n{tail}")]
    Failed {
        command: String,
        status: String,
        tail: String,
    },
    #[error(
        "`{command}` did not finish within {seconds} s and was stopped (a hung server or \
         client); last lines of its output:\n{tail}"
    )]
    TimedOut {
        command: String,
        seconds: u64,
        tail: String,
    },
    #[error("interrupted while running `{command}`")]
    Interrupted { command: String },
    #[error("`{command}` gave no result: {source}")]
    NoResult { command: String, source: ParseError },
    #[error(
        "the server crashed during `{command}`: {detail}; last lines of the server log {}:\n{log_tail}\n\
         last lines of pgbench's output:\n{bench_tail}",
        log.display()
    )]
    ServerCrashed {
        command: String,
        detail: String,
        log: PathBuf,
        log_tail: String,
        bench_tail: String,
    },
}

/// How long a pgbench run of `duration_secs` may take before it counts as
/// hung: three times its length, plus a minute for connections and the
/// end of the run.
pub fn time_limit(duration_secs: u32) -> Duration {
    Duration::from_secs(u64::from(duration_secs) * 3 + 60)
}

/// Runs `PGBENCH ARGS` as `run_as` on `pin`'s CPUs, its stdout and stderr
/// going to `output_path` (never wholly to disk nor into memory: past
/// [`crate::files::KEEP_OUTPUT`] only the ends are kept, see [`Capture`]),
/// and reads the
/// result. A run still going after `limit` is stopped and is a failure: an
/// unattended hunt must not wait forever on a commit that hangs. The first
/// signal stops it too ([`BenchError::Interrupted`]).
pub fn run_pgbench(
    pgbench: &Path,
    args: &[String],
    run_as: &RunAs,
    pin: &Pin,
    output_path: &Path,
    limit: Duration,
) -> Result<PgbenchReport, BenchError> {
    let invocation = Invocation::new(pgbench, args);
    let command = invocation.display();
    let output_error = |source| BenchError::Output {
        path: output_path.to_path_buf(),
        source,
    };
    let header = format!("$ {command}\n");
    let (pipe, capture) = Capture::start(
        output_path,
        header.as_bytes(),
        crate::files::KEEP_OUTPUT,
        OUTPUT_LIMIT,
    )
    .map_err(output_error)?;
    let expr = pin
        .apply(run_as.command(pgbench, args))
        .stderr_to_stdout()
        .stdout_file(pipe);
    let ended = proc::run(expr, limit);
    let captured = capture.finish().map_err(output_error)?;
    let ended = ended.map_err(|source| BenchError::Spawn {
        command: command.clone(),
        source,
    })?;
    // What pgbench printed, without the command line written first.
    let text = captured.text.split_once('\n').map_or("", |(_, rest)| rest);
    if let Some(limit) = captured.over_limit {
        return Err(BenchError::Failed {
            command,
            status: format!("stopped after printing more than {} MiB", limit >> 20),
            tail: tail_lines(text, TAIL_LINES),
        });
    }
    let status = match ended {
        Ended::Exited(output) => output.status,
        Ended::TimedOut(limit) => {
            return Err(BenchError::TimedOut {
                command,
                seconds: limit.as_secs(),
                tail: tail_lines(text, TAIL_LINES),
            });
        }
        Ended::Interrupted => return Err(BenchError::Interrupted { command }),
    };
    if !status.success() {
        return Err(BenchError::Failed {
            command,
            status: status.to_string(),
            tail: tail_lines(text, TAIL_LINES),
        });
    }
    parse_output(text).map_err(|source| BenchError::NoResult { command, source })
}

impl BenchError {
    /// The pgbench output's tail this error carries, if any.
    fn bench_tail(&self) -> String {
        match self {
            BenchError::Failed { tail, .. } | BenchError::TimedOut { tail, .. } => tail.clone(),
            BenchError::NoResult {
                source: ParseError::NoTps { tail },
                ..
            } => tail.clone(),
            other => other.to_string(),
        }
    }
}

impl RunningServer {
    /// Runs pgbench against this server (as the server's user) and checks
    /// the server survived it: a postmaster gone, or a log that reports a
    /// backend killed by a signal or a PANIC, makes the run a
    /// [`BenchError::ServerCrashed`] even when pgbench printed a number.
    pub fn run_pgbench(
        &self,
        pgbench: &Path,
        args: &[String],
        pin: &Pin,
        output_path: &Path,
        limit: Duration,
    ) -> Result<PgbenchReport, BenchError> {
        let log_len = self.log_len();
        let result = run_pgbench(pgbench, args, self.run_as(), pin, output_path, limit);
        if let Err(BenchError::Interrupted { .. }) = result {
            return result;
        }
        // Clients can see the postmaster die a moment before it is gone.
        let grace = if result.is_err() {
            Duration::from_secs(3)
        } else {
            Duration::ZERO
        };
        let Some(detail) = self.crash_since(log_len, grace) else {
            return result;
        };
        let bench_tail = match &result {
            Ok(_) => tail_lines(&super::read_lossy(output_path, 0), TAIL_LINES),
            Err(err) => err.bench_tail(),
        };
        Err(BenchError::ServerCrashed {
            command: Invocation::new(pgbench, args).display(),
            detail,
            log: self.log_path().to_path_buf(),
            log_tail: tail_lines(&super::read_lossy(self.log_path(), 0), LOG_TAIL_LINES),
            bench_tail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hung_pgbench_is_stopped_and_is_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("pgbench");
        std::fs::write(&fake, "#!/bin/sh\necho starting\nexec sleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = dir.path().join("out.txt");
        let started = std::time::Instant::now();
        let err = run_pgbench(
            &fake,
            &[],
            &RunAs::CurrentUser,
            &Pin::none(),
            &out,
            Duration::from_millis(500),
        )
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(matches!(err, BenchError::TimedOut { .. }), "{err}");
        assert!(err.to_string().contains("starting"), "{err}");
        assert!(std::fs::read_to_string(&out).unwrap().contains("starting"));
    }

    #[test]
    fn long_output_goes_to_the_file_and_only_its_ends_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("pgbench");
        // 3 MiB of progress lines, then the result on stderr.
        crate::testing::write_script(
            &fake,
            "#!/bin/sh\nhead -c 3145728 /dev/zero | tr '\\0' x\necho\n\
             echo 'tps = 123.5 (without initial connection time)' >&2\n",
        );
        let out = dir.path().join("out.txt");
        let report = run_pgbench(
            &fake,
            &["-T".into(), "1".into()],
            &RunAs::CurrentUser,
            &Pin::none(),
            &out,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(report.tps, 123.5);
        let kept = std::fs::read_to_string(&out).unwrap();
        assert!(kept.len() < 1_100_000, "{}", kept.len());
        assert!(kept.starts_with(&format!("$ {} -T 1\n", fake.display())));
        assert!(kept.contains("bytes of output cut by pgbisect"));
    }

    #[test]
    fn a_pgbench_printing_without_end_is_stopped_with_little_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("pgbench");
        crate::testing::write_script(&fake, "#!/bin/sh\nyes 'progress: 1.0 s, 5.0 tps'\n");
        let out = dir.path().join("out.txt");
        let err = run_pgbench(
            &fake,
            &[],
            &RunAs::CurrentUser,
            &Pin::none(),
            &out,
            Duration::from_secs(120),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("stopped after printing more than 256 MiB"),
            "{err}"
        );
        assert!(std::fs::metadata(&out).unwrap().len() < 1_100_000);
    }

    #[test]
    fn time_limits_grow_with_the_run() {
        assert_eq!(time_limit(5), Duration::from_secs(75));
        assert!(time_limit(1800) > Duration::from_secs(1800));
    }
}
