//! Other machines a hunt measures on, through an engine that already
//! hands out machines: the system's `ssh`, or Slurm.
//!
//! A hunt bound by benchmark time on one machine goes faster on several
//! identical ones. pgbisect does not schedule them itself: a team with a
//! couple of boxes reaches them with `ssh` and its own ssh config, a lab
//! or an HPC centre hands out whole nodes with Slurm. Both sit behind
//! [`Backend`], which is all a lab needs of a host: run a script there
//! within a deadline and get its exit status and output back, put an
//! install there once (keyed as the build cache keys it), read the host's
//! facts in the shape of the report's machine section, keep other hunts
//! off the host while this one uses it, and clean up what a coordinator
//! that was killed left running there.
//!
//! | module  | back end |
//! |---------|----------|
//! | `ssh`   | `ssh -o BatchMode=yes`, a pid file per run and a lock per host |
//! | `slurm` | `sbatch --exclusive`, watched with `squeue`/`scontrol`, stopped with `scancel`; the work dir on a filesystem the nodes share |
//! | `facts` | the shell text that reads a host's facts, and the check that hosts are alike |

pub mod facts;
pub mod slurm;
pub mod ssh;

use crate::machine::Machine;
use std::path::Path;
use std::time::Duration;

/// Trouble with a host that stops a hunt before it starts: it cannot be
/// reached, is used by another hunt or comparison, or the tool to reach it is missing.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot reach the host {host}: {reason}\nhint: {hint}")]
    Unreachable {
        host: String,
        reason: String,
        hint: String,
    },
    #[error(
        "the host {host} is used by another pgbisect hunt or comparison ({holder})\n\
         hint: wait for it to end, leave {host} out of the hosts, or, if nothing \
         uses it any more, remove its lock: ssh {host} 'rm -r {lock}'"
    )]
    Locked {
        host: String,
        holder: String,
        lock: String,
    },
    #[error("{tool} is not available here: {reason}\nhint: {hint}")]
    NoTool {
        tool: String,
        reason: String,
        hint: String,
    },
}

/// One script to run on one host.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// Names the job on the host (a Slurm job name, a pid file), unique
    /// within the hunt: `pgbisect-<hunt>-<run>`.
    pub name: String,
    /// Shell text, run with `sh -c`.
    pub script: &'a str,
    /// Environment it gets, besides the host's own.
    pub env: Vec<(String, String)>,
    /// Directory it runs in on the host.
    pub dir: String,
    /// How long it may run before it is stopped (a failed run).
    pub limit: Duration,
    /// What it is, for messages (`the benchmark command`, `the pgbench run`).
    pub what: &'a str,
    /// What to do when it is stopped at its deadline.
    pub deadline_hint: &'a str,
    /// Local file its output (stdout and stderr) goes to.
    pub output: &'a Path,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// It ran to its end, with this exit code and output (its ends, when
    /// long).
    Exited { code: i32, output: String },
    /// It did not run to its end, and why: stopped at its deadline,
    /// cancelled, preempted.
    Lost(String),
    /// The host could not be reached (it went away, or the job could not
    /// be handed to it), and why: another host may make the run.
    HostDown(String),
}

/// Who holds a host: one hunt of one coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The hunt's folder name (the same on every start of that hunt).
    pub hunt: String,
    /// `<coordinator's hostname>:<work dir>`: a hunt of the same name in
    /// another work dir is another hunt.
    pub place: String,
}

impl Owner {
    /// The hunt `hunt` coordinated from here with the work dir `work_dir`.
    pub fn here(hunt: &str, work_dir: &Path) -> Owner {
        let work = std::path::absolute(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
        Owner {
            hunt: hunt.to_string(),
            place: format!("{}:{}", this_hostname(), work.display()),
        }
    }

    /// One line naming the holder, as a lock file keeps it.
    pub fn line(&self) -> String {
        format!("{} {}", self.place, self.hunt)
    }

    /// The prefix of the names of this hunt's jobs.
    pub fn job_prefix(&self) -> String {
        job_prefix(&self.hunt)
    }
}

/// `pgbisect-<hunt>-`: every job of the hunt `hunt` is named so.
pub fn job_prefix(hunt: &str) -> String {
    format!("pgbisect-{hunt}-")
}

/// This machine's hostname (`uname -n`), for naming a lock's holder.
pub fn this_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// What a lab needs of the machines it measures on.
///
/// `Err` is for trouble that should stop the hunt (an interrupt, a local
/// file that cannot be written); a job that does not run to its end is a
/// [`JobEnd::Lost`], and the hunt goes on.
pub trait Backend: Send + Sync {
    /// `ssh` or `slurm`, for messages.
    fn kind(&self) -> &'static str;

    /// The hosts, in the order they were given.
    fn hosts(&self) -> &[String];

    /// Runs `job` on `host` and waits for its end.
    fn run(&self, host: &str, job: &Job) -> anyhow::Result<JobEnd>;

    /// Puts the directory tree `local` on `host` under `key` (named as the
    /// build cache names installs), unless it is there already; where it
    /// is on the host, or why it could not be put there.
    fn send(&self, host: &str, local: &Path, key: &str) -> anyhow::Result<Result<String, String>>;

    /// The host's facts, or why they could not be read.
    fn facts(&self, host: &str) -> anyhow::Result<Result<Machine, String>>;

    /// Takes `host` for `owner`: refused while another hunt holds it, taken
    /// over from an earlier start of the same hunt.
    fn lock(&self, host: &str, owner: &Owner) -> Result<(), HostError>;

    /// Gives `host` back (best effort: a host that went away keeps a lock
    /// the same hunt takes over when it starts again).
    fn unlock(&self, host: &str, owner: &Owner);

    /// Stops what an earlier start of `owner`'s hunt left running on
    /// `host`; what was stopped, one line each.
    fn clean_up(&self, host: &str, owner: &Owner) -> anyhow::Result<Vec<String>>;
}

/// Quotes a word for a POSIX shell.
pub(crate) fn quote(word: &str) -> String {
    crate::proc::shell_quote(word)
}

/// `export NAME=value` lines for `env`.
pub(crate) fn exports(env: &[(String, String)]) -> String {
    env.iter()
        .map(|(k, v)| format!("export {k}={}\n", quote(v)))
        .collect()
}

/// The variable that marks every process a job starts on its host, in
/// the job's own process tree only (not the shell that starts it): after
/// the job, and when it is stopped, whatever still carries it is killed,
/// daemons started with `setsid` included.
pub const JOB_VAR: &str = "PGBISECT_JOB";

/// Shell functions for a job's host (POSIX sh, Linux `/proc`):
///
/// - `pgbisect_dir DIR` makes DIR and its missing parents one level at a
///   time, and refuses (exit status 1, saying why on stderr) a level that
///   is a symbolic link, not a folder, owned by a user other than the
///   login user or root, or writable by group or others without the
///   sticky bit: the checks pgbisect makes of its folders here
///   (`folders`), on the host;
/// - `pgbisect_sweep NAME` kills every process whose environment holds
///   `PGBISECT_JOB=NAME`, until two looks 0.1 s apart find none: a
///   process in the middle of an exec shows an empty environment for a
///   moment, and one look alone let such a daemon, started as its job
///   ended, outlive the job.
pub(crate) const HOST_FUNCTIONS: &str = r#"pgbisect_dir() {
  case $1 in /*) d=$1;; *) d=$(pwd)/$1;; esac
  me=$(id -u); level=""; ifs=$IFS; IFS=/; set -f
  for part in $d; do
    IFS=$ifs; set +f
    [ -n "$part" ] || continue
    level="$level/$part"
    [ -e "$level" ] || [ -L "$level" ] || mkdir -m 755 "$level" 2>/dev/null
    if [ -L "$level" ]; then echo "pgbisect: $level is a symbolic link; pgbisect does not follow links on the way to where it writes on this host" >&2; return 1; fi
    [ -d "$level" ] || { echo "pgbisect: $level is not a folder (or cannot be made); pgbisect needs a folder there" >&2; return 1; }
    owner=$(stat -c %u "$level") mode=$(stat -c %a "$level")
    if [ "$owner" != "$me" ] && [ "$owner" != 0 ]; then echo "pgbisect: $level belongs to another user (uid $owner), not to the login user (uid $me) or root: that user could swap what pgbisect writes and runs there; hint: chown $me $level, or give [hosts] dir another folder" >&2; return 1; fi
    m=$((0$mode))
    if [ $((m & 18)) -ne 0 ] && [ $((m & 512)) -eq 0 ]; then echo "pgbisect: $level is writable by other users (mode $mode): they could swap what pgbisect writes and runs there; hint: chmod go-w $level, or give [hosts] dir another folder" >&2; return 1; fi
  done
  IFS=$ifs; set +f
}
pgbisect_sweep() {
  quiet=0
  for round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    found=$(grep -lsxzF "PGBISECT_JOB=$1" /proc/[0-9]*/environ | cut -d/ -f3)
    if [ -n "$found" ]; then
      quiet=0
      kill -KILL $found 2>/dev/null
    else
      quiet=$((quiet + 1))
      [ "$quiet" -lt 2 ] || return 0
    fi
    sleep 0.1
  done
}
"#;

/// A job stopped at its deadline, for messages.
pub(crate) fn stopped_at_deadline(job: &Job) -> String {
    format!(
        "{} did not finish in {} s and was stopped ({})",
        job.what,
        job.limit.as_secs(),
        job.deadline_hint
    )
}

/// What a custom benchmark command's job is called, and the way to give
/// it more time.
pub const BENCHMARK_COMMAND: (&str, &str) = (
    "the benchmark command",
    "set `timeout` in the profile's [benchmark] for more",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_name_the_place_and_the_hunt() {
        let o = Owner::here("abc-def-c1-0123", Path::new("/var/tmp/w"));
        assert!(o.place.ends_with(":/var/tmp/w"), "{o:?}");
        assert_eq!(o.line(), format!("{} abc-def-c1-0123", o.place));
        assert_eq!(o.job_prefix(), "pgbisect-abc-def-c1-0123-");
    }

    #[test]
    fn a_job_stopped_at_its_deadline_is_named_with_what_to_do() {
        let output = Path::new("/dev/null");
        let job = Job {
            name: "pgbisect-h-1".into(),
            script: "true",
            env: Vec::new(),
            dir: "/".into(),
            limit: Duration::from_secs(90),
            what: BENCHMARK_COMMAND.0,
            deadline_hint: BENCHMARK_COMMAND.1,
            output,
        };
        assert_eq!(
            stopped_at_deadline(&job),
            "the benchmark command did not finish in 90 s and was stopped (set `timeout` in \
             the profile's [benchmark] for more)"
        );
    }

    #[test]
    fn exports_quote_their_values() {
        let env = vec![
            ("A".to_string(), "plain".to_string()),
            ("B".to_string(), "it's spaced".to_string()),
        ];
        assert_eq!(
            exports(&env),
            "export A=plain\nexport B='it'\\''s spaced'\n"
        );
    }
}
