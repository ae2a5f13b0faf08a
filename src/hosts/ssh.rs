//! Hosts reached with the system's `ssh`.
//!
//! A team with a couple of benchmark boxes already reaches them with ssh:
//! its config names them, its keys and jump hosts get there. So pgbisect
//! runs the system's `ssh` in batch mode (never a password prompt) with
//! that config, or the one the profile names, and keeps, on each host,
//! under one folder per host name (several names for one box stay apart):
//!
//! | path on the host | what |
//! |------------------|------|
//! | `installs/<commit>-<key>/` | installs sent from the coordinator, `.pgbisect-sent` written last |
//! | `pids/<job>.pid` | the process group of each running job, so a later start of the hunt finds and stops it |
//! | `lock/owner` | the hunt using the host |
//!
//! A job runs in a session of its own (`setsid`), its pid file written
//! first; at its deadline, on an interrupt, or when a later start of the
//! same hunt finds it, its whole process group is stopped (SIGTERM, then
//! SIGKILL).

use super::{Backend, HostError, Job, JobEnd, Owner, exports, quote};
use crate::capture::{Capture, OUTPUT_LIMIT};
use crate::machine::Machine;
use crate::proc::{self, Ended};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a short ssh command (facts, lock, a check) may take.
const SHORT: Duration = Duration::from_secs(120);
/// How long sending one install may take.
const SEND_LIMIT: Duration = Duration::from_secs(3600);
/// Written last into an install on a host.
const SENT_MARK: &str = ".pgbisect-sent";
/// The folder on each host when the profile names none: in the remote
/// user's home, expanded there.
pub const DEFAULT_ROOT: &str = "$HOME/.cache/pgbisect-hosts";

/// The `ssh` back end.
#[derive(Debug, Clone)]
pub struct Ssh {
    hosts: Vec<String>,
    /// The folder on each host, as shell text (`$HOME` expands there).
    root: String,
    /// `ssh -F FILE`, when the profile names an ssh config.
    config: Option<PathBuf>,
}

impl Ssh {
    /// The hosts `hosts`, their files under `root` (default
    /// [`DEFAULT_ROOT`]), reached with the ssh config `config` (default:
    /// the user's).
    pub fn new(hosts: Vec<String>, root: Option<&str>, config: Option<PathBuf>) -> Ssh {
        let root = match root {
            Some(dir) => quote(dir),
            None => format!("\"{DEFAULT_ROOT}\""),
        };
        Ssh {
            hosts,
            root,
            config,
        }
    }

    /// `Err` naming what to do when there is no `ssh` to run.
    pub fn check_tool() -> Result<(), HostError> {
        let expr = duct::cmd!("ssh", "-V").stdout_null().stderr_null();
        match proc::run(expr, Duration::from_secs(30)) {
            Ok(Ended::Exited(o)) if o.status.success() => Ok(()),
            other => Err(HostError::NoTool {
                tool: "ssh".into(),
                reason: match other {
                    Err(e) => e.to_string(),
                    Ok(end) => format!("`ssh -V` ended {end:?}"),
                },
                hint: "install OpenSSH's client (Debian: apt-get install openssh-client)".into(),
            }),
        }
    }

    /// The host's own folder, as shell text.
    fn base(&self, host: &str) -> String {
        format!("{}/{}", self.root, quote(host))
    }

    /// `ssh HOST sh -c SCRIPT`, batch mode, with keep-alives so that a host
    /// that goes away ends the command within a minute.
    fn ssh(&self, host: &str, script: &str) -> duct::Expression {
        let mut args: Vec<String> = Vec::new();
        if let Some(config) = &self.config {
            args.extend(["-F".into(), config.display().to_string()]);
        }
        for option in [
            "BatchMode=yes",
            "ConnectTimeout=30",
            "ServerAliveInterval=15",
            "ServerAliveCountMax=4",
        ] {
            args.extend(["-o".into(), option.into()]);
        }
        args.extend([
            "-T".into(),
            "--".into(),
            host.into(),
            format!("sh -c {}", quote(script)),
        ]);
        duct::cmd("ssh", args)
    }

    /// Runs `script` on `host` within [`SHORT`]: its stdout, or why not
    /// (ssh's or the script's last words). Stopped only by a second
    /// signal: it is also used to clean up after the first.
    fn short(&self, host: &str, script: &str) -> anyhow::Result<Result<String, String>> {
        let expr = self
            .ssh(host, script)
            .stdin_null()
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        let ended = proc::run_to_deadline(expr, SHORT)
            .with_context(|| format!("cannot start ssh to {host}"))?;
        Ok(match ended {
            Ended::Exited(o) if o.status.success() => {
                Ok(String::from_utf8_lossy(&o.stdout).into_owned())
            }
            Ended::Exited(o) => Err(last_words(&o.stderr, o.status.code())),
            Ended::TimedOut(limit) => Err(format!("no answer in {} s", limit.as_secs())),
            Ended::Interrupted => Err("stopped".into()),
        })
    }

    /// Stops the job `name` on `host` (its process group), if it runs.
    fn stop_job(&self, host: &str, name: &str) {
        let pidfile = format!("{}/pids/{}.pid", self.base(host), quote(name));
        let _ = self.short(host, &kill_script(&[pidfile]));
    }
}

/// Shell text that stops the jobs whose pid files are `pidfiles` (shell
/// words, globs allowed): SIGTERM to each group whose leader still has the
/// job's name in its environment, SIGKILL 5 s later, then every process
/// still carrying the job's name (a daemon that left the group); prints
/// each job it stopped and removes the pid files.
fn kill_script(pidfiles: &[String]) -> String {
    format!(
        r#"{functions}stopped="" names=""
for f in {files}; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .pid); pid=$(cat "$f")
  if [ -n "$pid" ] && {{ tr '\0' '\n' < "/proc/$pid/environ"; echo; }} 2>/dev/null | grep -qxF "PGBISECT_JOB=$name"; then
    kill -TERM "-$pid" 2>/dev/null && stopped="$stopped $pid" && names="$names $name" && echo "$name (process group $pid)"
  fi
  rm -f "$f"
done
if [ -n "$stopped" ]; then
  sleep 5
  for pid in $stopped; do kill -KILL "-$pid" 2>/dev/null; done
  for name in $names; do pgbisect_sweep "$name"; done
fi
exit 0"#,
        functions = super::HOST_FUNCTIONS,
        files = pidfiles.join(" ")
    )
}

/// The last line ssh or a script wrote to stderr, with the exit code.
fn last_words(stderr: &[u8], code: Option<i32>) -> String {
    let text = String::from_utf8_lossy(stderr);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match code {
        Some(255) => format!("ssh failed: {}", last.trim()),
        Some(c) => format!("exit code {c}: {}", last.trim()),
        None => format!("ssh was killed: {}", last.trim()),
    }
}

/// The script a job runs under on the host: checks every level of its
/// folder (see [`super::HOST_FUNCTIONS`]), records its process group,
/// runs `job.script` in `job.dir` with its environment, and, once it
/// ended, kills what it left running (marked with the job's name), removes
/// the record, exits as the script did.
fn job_script(base: &str, job: &Job) -> String {
    format!(
        r#"exec 2>&1
{functions}pids={base}/pids
pidfile="$pids"/{name}.pid
pgbisect_dir "$pids" || exit 125
cd {dir} || exit 125
{exports}{var}={name} setsid sh -c 'echo $$ > "$1"; exec sh -c "$2" 2>&1' pgbisect-job "$pidfile" {script} < /dev/null &
wait $!
rc=$?
pgbisect_sweep {name}
rm -f "$pidfile"
exit $rc"#,
        functions = super::HOST_FUNCTIONS,
        var = super::JOB_VAR,
        name = quote(&job.name),
        dir = quote(&job.dir),
        exports = exports(&job.env),
        script = quote(job.script),
    )
}

impl Backend for Ssh {
    fn kind(&self) -> &'static str {
        "ssh"
    }

    fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The job's output comes back through ssh into a pipe pgbisect reads,
    /// kept within bounds while it is written (see [`Capture`]): past
    /// [`OUTPUT_LIMIT`] the job is stopped on its host.
    fn run(&self, host: &str, job: &Job) -> anyhow::Result<JobEnd> {
        let (pipe, capture) =
            Capture::start(job.output, b"", crate::files::KEEP_OUTPUT, OUTPUT_LIMIT)
                .with_context(|| format!("cannot write {}", job.output.display()))?;
        let expr = self
            .ssh(host, &job_script(&self.base(host), job))
            .stdin_null()
            .stdout_file(pipe)
            .stderr_capture()
            .unchecked();
        let ended = proc::run(expr, job.limit);
        let captured = capture
            .finish()
            .with_context(|| format!("cannot write {}", job.output.display()))?;
        let ended = ended.with_context(|| format!("cannot start ssh to {host}"))?;
        if let Some(limit) = captured.over_limit {
            self.stop_job(host, &job.name);
            return Ok(JobEnd::Lost(format!(
                "{} printed more than {} MiB on {host} and was stopped; the ends of its output \
                 are in {}",
                job.what,
                limit >> 20,
                job.output.display()
            )));
        }
        let output = match ended {
            Ended::Exited(o) => o,
            Ended::TimedOut(_) => {
                self.stop_job(host, &job.name);
                return Ok(JobEnd::Lost(super::stopped_at_deadline(job)));
            }
            Ended::Interrupted => {
                self.stop_job(host, &job.name);
                return Err(proc::Interrupted.into());
            }
        };
        let code = output.status.code();
        if code == Some(255) || code.is_none() {
            return Ok(JobEnd::HostDown(format!(
                "on {host}: {} (the host may have gone away)",
                last_words(&output.stderr, code)
            )));
        }
        Ok(JobEnd::Exited {
            code: code.unwrap_or(-1),
            output: captured.text,
        })
    }

    fn send(&self, host: &str, local: &Path, key: &str) -> anyhow::Result<Result<String, String>> {
        let dest = format!("{}/installs/{}", self.base(host), quote(key));
        let there = format!("test -f {dest}/{SENT_MARK} && cd {dest} && pwd");
        if let Ok(path) = self.short(host, &there)? {
            return Ok(Ok(path.trim().to_string()));
        }
        let receive = format!(
            "{functions}pgbisect_dir {base}/installs || exit 1\nset -e; rm -rf {dest}.part; \
             mkdir -m 755 {dest}.part; tar -C {dest}.part -xf -; touch {dest}.part/{SENT_MARK}; \
             rm -rf {dest}; mv {dest}.part {dest}; cd {dest}; pwd",
            functions = super::HOST_FUNCTIONS,
            base = self.base(host),
        );
        let tar = duct::cmd!("tar", "-C", local, "-cf", "-", ".");
        let expr = tar
            .pipe(self.ssh(host, &receive))
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        let ended = proc::run(expr, SEND_LIMIT)
            .with_context(|| format!("cannot start sending {} to {host}", local.display()))?;
        Ok(match ended {
            Ended::Exited(o) if o.status.success() => {
                Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
            }
            Ended::Exited(o) => Err(format!(
                "cannot send {} to {host}: {}",
                local.display(),
                last_words(&o.stderr, o.status.code())
            )),
            Ended::TimedOut(limit) => Err(format!(
                "sending {} to {host} took over {} s",
                local.display(),
                limit.as_secs()
            )),
            Ended::Interrupted => return Err(proc::Interrupted.into()),
        })
    }

    fn facts(&self, host: &str) -> anyhow::Result<Result<Machine, String>> {
        Ok(self.short(host, super::facts::SCRIPT)?.and_then(|out| {
            super::facts::parse(&out).ok_or_else(|| format!("{host} printed no facts"))
        }))
    }

    fn lock(&self, host: &str, owner: &Owner) -> Result<(), HostError> {
        let lock = format!("{}/lock", self.base(host));
        let line = quote(&owner.line());
        // The holder of the same place (work dir) is an earlier start of
        // this coordinator's hunts: the work dir's own lock keeps two
        // coordinators out of one work dir.
        let script = format!(
            r#"{functions}pgbisect_dir {base}/pids && pgbisect_dir {base}/installs || exit 1
if mkdir {lock} 2>/dev/null; then echo {line} > {lock}/owner; echo taken; exit 0; fi
holder=$(cat {lock}/owner 2>/dev/null)
case "$holder" in {place}\ *) echo {line} > {lock}/owner; echo taken; exit 0;; esac
echo "$holder""#,
            functions = super::HOST_FUNCTIONS,
            base = self.base(host),
            place = quote(&owner.place),
        );
        match self.short(host, &script) {
            Ok(Ok(out)) if out.trim() == "taken" => Ok(()),
            Ok(Ok(holder)) => Err(HostError::Locked {
                host: host.to_string(),
                holder: holder.trim().to_string(),
                lock: lock.replace('"', ""),
            }),
            Ok(Err(reason)) => Err(unreachable(host, reason)),
            Err(e) => Err(unreachable(host, format!("{e:#}"))),
        }
    }

    fn unlock(&self, host: &str, owner: &Owner) {
        let lock = format!("{}/lock", self.base(host));
        let script = format!(
            r#"case "$(cat {lock}/owner 2>/dev/null)" in {place}\ *) rm -rf {lock};; esac"#,
            place = quote(&owner.place),
        );
        let _ = self.short(host, &script);
    }

    fn clean_up(&self, host: &str, owner: &Owner) -> anyhow::Result<Vec<String>> {
        let pattern = format!(
            "{}/pids/{}*.pid",
            self.base(host),
            quote(&owner.job_prefix())
        );
        match self.short(host, &kill_script(&[pattern]))? {
            Ok(out) => Ok(out.lines().map(|l| format!("{host}: {l}")).collect()),
            Err(reason) => Err(unreachable(host, reason).into()),
        }
    }
}

fn unreachable(host: &str, reason: String) -> HostError {
    HostError::Unreachable {
        host: host.to_string(),
        reason,
        hint: format!(
            "check that `ssh -o BatchMode=yes {host} true` works from here (a key, not a \
             password; the host in your ssh config), or leave {host} out of --hosts"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_records_its_process_group_and_exports_its_environment() {
        let job = Job {
            name: "pgbisect-h-7".into(),
            script: "echo \"$X\"",
            env: vec![("X".into(), "a b".into())],
            dir: "/tmp/in stall".into(),
            limit: Duration::from_secs(5),
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: Path::new("/dev/null"),
        };
        let text = job_script("/r/h", &job);
        assert!(text.contains("cd '/tmp/in stall' || exit 125"), "{text}");
        assert!(text.contains("export X='a b'\n"), "{text}");
        assert!(
            text.contains("PGBISECT_JOB=pgbisect-h-7 setsid sh -c"),
            "{text}"
        );
        assert!(text.contains("pgbisect_sweep pgbisect-h-7\n"), "{text}");
        assert!(
            text.contains("pidfile=\"$pids\"/pgbisect-h-7.pid"),
            "{text}"
        );
    }

    /// A daemon the job starts with `setsid` is gone when the job script
    /// ends; a level of the host's folder open to all is refused.
    #[test]
    fn the_job_script_sweeps_daemons_and_checks_its_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("h");
        let daemon = tmp.path().join("daemon");
        // Its output away from the job's: a daemon the sweep missed fails
        // the check below instead of holding the test's pipe open.
        let script = format!(
            "setsid sleep 600 > /dev/null 2>&1 & echo $! > {}",
            daemon.display()
        );
        let job = Job {
            name: format!("pgbisect-sweep-{}", std::process::id()),
            script: &script,
            env: Vec::new(),
            dir: tmp.path().display().to_string(),
            limit: Duration::from_secs(5),
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: Path::new("/dev/null"),
        };
        let base_text = base.display().to_string();
        let out = std::process::Command::new("sh")
            .args(["-c", &job_script(&base_text, &job)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let pid = std::fs::read_to_string(&daemon).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        assert!(
            stat.is_err() || stat.is_ok_and(|s| s.contains(") Z ")),
            "the daemon outlived its job"
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", &job_script(&base_text, &job)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("is writable by other users (mode 777)"),
            "{said}"
        );
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(tmp.path(), base.join("pids-link")).unwrap();
        std::fs::remove_dir(base.join("pids")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), base.join("pids")).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", &job_script(&base_text, &job)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125));
        assert!(String::from_utf8_lossy(&out.stdout).contains("is a symbolic link"));
    }

    /// The job script, run here by `sh` instead of over ssh, runs the
    /// script with its environment, and the kill script stops it by its
    /// pid file.
    #[test]
    fn the_scripts_run_and_stop_a_job_here() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().display().to_string();
        let job = Job {
            name: "pgbisect-t-1".into(),
            script: "echo \"value $X\"; exit 3",
            env: vec![("X".into(), "x y".into())],
            dir: base.clone(),
            limit: Duration::from_secs(5),
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: Path::new("/dev/null"),
        };
        let out = std::process::Command::new("sh")
            .args(["-c", &job_script(&base, &job)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "value x y\n");
        assert!(!tmp.path().join("pids/pgbisect-t-1.pid").exists());

        let long = Job {
            script: "sleep 60",
            ..job
        };
        let mut child = std::process::Command::new("sh")
            .args(["-c", &job_script(&base, &long)])
            .spawn()
            .unwrap();
        let pidfile = tmp.path().join("pids/pgbisect-t-1.pid");
        for _ in 0..100 {
            if std::fs::read_to_string(&pidfile).is_ok_and(|s| !s.trim().is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let pattern = format!("{base}/pids/pgbisect-t-*.pid");
        let stopped = std::process::Command::new("sh")
            .args(["-c", &kill_script(&[pattern])])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&stopped.stdout);
        assert!(said.starts_with("pgbisect-t-1 (process group "), "{said}");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(143), "SIGTERM ended the job");
    }
}
