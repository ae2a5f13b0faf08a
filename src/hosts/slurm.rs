//! Nodes handed out by Slurm.
//!
//! Benchmark labs and HPC centres share their machines through Slurm, so
//! a hunt asks it for them as every other user does: each run is a batch
//! job (`sbatch --exclusive`: no other job shares the node while it runs)
//! pinned to one of the profile's nodes (`--nodelist`, so runs on the
//! same host can be set side by side), in the profile's partition or
//! `--constraint`, named `pgbisect-<hunt>-<run>`, with the benchmark's
//! deadline as its time limit. pgbisect watches it with `squeue`, reads
//! how it ended from the status file its script writes last and, when
//! there is none, from `scontrol show job` (the job failed, was cancelled,
//! preempted, or hit its time limit: a failed run, and the hunt goes on),
//! and cancels it with `scancel` when the hunt is stopped.
//!
//! The work dir must be on a filesystem the nodes share, as HPC sites
//! have: job scripts, their output and status files, and the installs
//! the builds made are read there by path, so nothing is copied.

use super::{Backend, HostError, Job, JobEnd, Owner, exports, quote};
use crate::capture::OUTPUT_LIMIT;
use crate::machine::Machine;
use crate::proc::{self, Ended};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one Slurm command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);
/// How long a job reading a node's facts may take, queueing included.
const FACTS_LIMIT: Duration = Duration::from_secs(1800);
/// How long a job that wrote its status may take to leave the queue.
const EXIT_LIMIT: Duration = Duration::from_secs(60);

/// Where and how jobs are submitted.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--constraint`.
    pub constraint: Option<String>,
}

/// The Slurm back end.
#[derive(Debug, Clone)]
pub struct Slurm {
    nodes: Vec<String>,
    placement: Placement,
    /// Job scripts and status files, on the shared filesystem.
    jobs_dir: PathBuf,
    /// How often a job's state is read.
    poll: Duration,
}

impl Slurm {
    /// Jobs on `nodes`, submitted with `placement`, their scripts in
    /// `jobs_dir` (under the work dir, which the nodes must share).
    pub fn new(nodes: Vec<String>, placement: Placement, jobs_dir: &Path) -> Slurm {
        Slurm {
            nodes,
            placement,
            jobs_dir: std::path::absolute(jobs_dir).unwrap_or_else(|_| jobs_dir.to_path_buf()),
            poll: Duration::from_secs(1),
        }
    }

    /// `Err` naming what to do when Slurm's commands are not here.
    pub fn check_tools() -> Result<(), HostError> {
        for tool in ["sbatch", "squeue", "scancel", "scontrol"] {
            if let Err(reason) = command_output(&[tool, "--version"]) {
                return Err(HostError::NoTool {
                    tool: tool.into(),
                    reason,
                    hint: "--slurm submits jobs with Slurm's own commands: run pgbisect on a \
                           machine that can submit jobs (a login node), or install Slurm's \
                           client commands (Debian: apt-get install slurm-client)"
                        .into(),
                });
            }
        }
        Ok(())
    }

    /// The files of the job `name`: its script and its status.
    fn files(&self, name: &str) -> (PathBuf, PathBuf) {
        (
            self.jobs_dir.join(format!("{name}.sh")),
            self.jobs_dir.join(format!("{name}.status")),
        )
    }

    /// Submits `job` to `host`: its Slurm job id.
    fn submit(&self, host: &str, job: &Job) -> anyhow::Result<Result<String, String>> {
        crate::folders::create_dir(&self.jobs_dir)
            .with_context(|| format!("cannot create {}", self.jobs_dir.display()))?;
        let (script, status) = self.files(&job.name);
        let _ = std::fs::remove_file(&status);
        crate::files::write(&script, batch_script(job, &status))
            .with_context(|| format!("cannot write {}", script.display()))?;
        let minutes = job.limit.as_secs().div_ceil(60).max(1);
        let mut args = vec![
            "sbatch".to_string(),
            "--parsable".into(),
            "--exclusive".into(),
            "--nodes=1".into(),
            format!("--nodelist={host}"),
            format!("--job-name={}", job.name),
            format!("--time={minutes}"),
            // The script writes the job's output itself, within bounds;
            // Slurm's own words go beside its status.
            format!("--output={}.log", status.display()),
        ];
        if let Some(p) = &self.placement.partition {
            args.push(format!("--partition={p}"));
        }
        if let Some(c) = &self.placement.constraint {
            args.push(format!("--constraint={c}"));
        }
        args.push(script.display().to_string());
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(command_output(&words).map(|out| {
            let id = out.trim();
            id.split(';').next().unwrap_or(id).to_string()
        }))
    }

    /// Waits for the job `id` to end: how it did. Its status file is read
    /// every tenth of `poll`, so a short job ends when it does; the queue is
    /// asked once a `poll`.
    fn watch(&self, host: &str, id: &str, job: &Job) -> anyhow::Result<JobEnd> {
        let (_, status) = self.files(&job.name);
        let mut asked = std::time::Instant::now();
        loop {
            if proc::check_interrupt().is_err() {
                let _ = command_output(&["scancel", id]);
                return Err(proc::Interrupted.into());
            }
            if let Some(ended) = read_status(&status) {
                self.wait_for_exit(id);
                return ended_with_status(host, job, ended);
            }
            if asked.elapsed() < self.poll {
                std::thread::sleep(self.poll / 10);
                continue;
            }
            asked = std::time::Instant::now();
            if !in_queue(id) {
                // Gone from the queue: its status file, else Slurm's word.
                if let Some(ended) = read_status(&status) {
                    return ended_with_status(host, job, ended);
                }
                return Ok(JobEnd::Lost(ended_without_status(host, id, job)));
            }
        }
    }

    /// Waits, for at most [`EXIT_LIMIT`], for the job `id`, whose status
    /// is written, to leave the queue: its script is past its last line,
    /// and Slurm still has it running or completing for a moment. The
    /// next run on the node waits for it anyway (`--exclusive`), and a
    /// hunt that ends leaves no job of its own behind.
    fn wait_for_exit(&self, id: &str) {
        let start = std::time::Instant::now();
        while start.elapsed() < EXIT_LIMIT && proc::check_interrupt().is_ok() && in_queue(id) {
            std::thread::sleep(self.poll / 10);
        }
    }
}

/// Whether `squeue` lists the job `id` (a queue that cannot be read lists
/// nothing).
fn in_queue(id: &str) -> bool {
    matches!(command_output(&["squeue", "-h", "-j", id, "-o", "%T"]), Ok(s) if !s.trim().is_empty())
}

/// The batch script of `job`: runs its script in its dir with its
/// environment, its output kept within bounds while it is written (its
/// first and last halves of [`crate::files::KEEP_OUTPUT`] in `job.output`,
/// with a line saying how much was cut; past [`OUTPUT_LIMIT`] it is
/// stopped), kills what it left running (marked with the job's name),
/// then writes the exit code, and `over` past the limit, to `status`
/// (renamed into place, so a status file is always whole).
fn batch_script(job: &Job, status: &Path) -> String {
    let status = quote(&status.display().to_string());
    let half = crate::files::KEEP_OUTPUT / 2;
    format!(
        r#"#!/bin/sh
{functions}cd {dir} || exit 125
{exports}out={output}; rest="$out.rest"; count="$out.count"; fifo="$out.fifo"; pipe="$out.pipe"
rm -f "$rest" "$count" "$fifo" "$pipe"; mkfifo "$fifo" "$pipe" || exit 125
wc -c < "$fifo" > "$count" &
{{ head -c {half} > "$out"; head -c {rest_limit} | tee "$fifo" | tail -c {half} > "$rest"; }} < "$pipe" &
{var}={name} sh -c {script} > "$pipe" 2>&1 < /dev/null &
wait $!
rc=$?
pgbisect_sweep {name}
wait
total=$(cat "$count")
if [ "$total" -gt {half} ]; then printf '\n[... %s bytes of output cut by pgbisect ...]\n' $((total - {half})) >> "$out"; fi
cat "$rest" >> "$out"; rm -f "$rest" "$count" "$fifo" "$pipe"
over=""; [ "$total" -lt {rest_limit} ] || over=" over"
echo "$rc$over" > {status}.part && mv {status}.part {status}
exit $rc
"#,
        functions = super::HOST_FUNCTIONS,
        dir = quote(&job.dir),
        exports = exports(&job.env),
        output = quote(&job.output.display().to_string()),
        var = super::JOB_VAR,
        name = quote(&job.name),
        script = quote(job.script),
        rest_limit = OUTPUT_LIMIT - half,
    )
}

/// How a job ended, from its status file, once it is there: its exit
/// code, and whether it printed past [`OUTPUT_LIMIT`] and was stopped.
fn read_status(path: &Path) -> Option<(i32, bool)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let code = words.next()?.parse().ok()?;
    Some((code, words.next() == Some("over")))
}

/// How a job that wrote its status ended: its output, or why it has none
/// (it printed past the limit and was stopped).
fn ended_with_status(host: &str, job: &Job, (code, over): (i32, bool)) -> anyhow::Result<JobEnd> {
    if over {
        return Ok(JobEnd::Lost(format!(
            "{} printed more than {} MiB on {host} and was stopped; the ends of its output are \
             in {}",
            job.what,
            OUTPUT_LIMIT >> 20,
            job.output.display()
        )));
    }
    let output = crate::files::keep_ends(job.output, crate::files::KEEP_OUTPUT)
        .with_context(|| format!("cannot read {}", job.output.display()))?;
    Ok(JobEnd::Exited { code, output })
}

/// Why a job left the queue without a status: its state and reason as
/// `scontrol show job` gives them.
fn ended_without_status(host: &str, id: &str, job: &Job) -> String {
    let shown = command_output(&["scontrol", "show", "job", id]).unwrap_or_default();
    let field = |name: &str| {
        shown
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or("unknown")
            .to_string()
    };
    let state = field("JobState");
    let what = match state.as_str() {
        "TIMEOUT" => format!(
            "hit its time limit ({} min, the deadline of {}; {})",
            job.limit.as_secs().div_ceil(60),
            job.what,
            job.deadline_hint
        ),
        "CANCELLED" => "was cancelled".to_string(),
        "PREEMPTED" => "was preempted".to_string(),
        "NODE_FAIL" => "lost its node".to_string(),
        _ => format!("ended {state}"),
    };
    format!(
        "Slurm job {id} on {host} {what} before the benchmark finished (state {state}, \
         reason {})",
        field("Reason")
    )
}

/// Runs a Slurm command: its stdout, or why it failed.
fn command_output(words: &[&str]) -> Result<String, String> {
    let (program, args) = words.split_first().ok_or("no command")?;
    let expr = duct::cmd(*program, args)
        .stdin_null()
        .stdout_capture()
        .stderr_capture()
        .unchecked();
    match proc::run_to_deadline(expr, COMMAND_LIMIT) {
        Ok(Ended::Exited(o)) if o.status.success() => {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        }
        Ok(Ended::Exited(o)) => Err(format!(
            "`{}` failed ({}): {}",
            words.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(Ended::TimedOut(limit)) => Err(format!(
            "`{}` gave no answer in {} s",
            words.join(" "),
            limit.as_secs()
        )),
        Ok(Ended::Interrupted) => Err("stopped".into()),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

impl Backend for Slurm {
    fn kind(&self) -> &'static str {
        "slurm"
    }

    fn hosts(&self) -> &[String] {
        &self.nodes
    }

    fn run(&self, host: &str, job: &Job) -> anyhow::Result<JobEnd> {
        match self.submit(host, job)? {
            Ok(id) => self.watch(host, &id, job),
            Err(reason) => Ok(JobEnd::HostDown(format!(
                "cannot submit the run to {host}: {reason}"
            ))),
        }
    }

    /// The work dir is shared with the nodes: an install is where it was
    /// built, and nothing is copied.
    fn send(
        &self,
        _host: &str,
        local: &Path,
        _key: &str,
    ) -> anyhow::Result<Result<String, String>> {
        let path = std::path::absolute(local).unwrap_or_else(|_| local.to_path_buf());
        Ok(Ok(path.display().to_string()))
    }

    fn facts(&self, host: &str) -> anyhow::Result<Result<Machine, String>> {
        let output = self.jobs_dir.join(format!("facts-{host}.txt"));
        let job = Job {
            name: format!("pgbisect-facts-{host}"),
            script: super::facts::SCRIPT,
            env: Vec::new(),
            dir: "/".into(),
            limit: FACTS_LIMIT,
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: &output,
        };
        Ok(match self.run(host, &job)? {
            JobEnd::Exited { code: 0, output } => {
                super::facts::parse(&output).ok_or_else(|| format!("{host} printed no facts"))
            }
            JobEnd::Exited { code, output } => Err(format!(
                "the job reading {host}'s facts failed (exit code {code}): {}",
                crate::bench::tail_lines(&output, 5)
            )),
            JobEnd::Lost(reason) | JobEnd::HostDown(reason) => Err(reason),
        })
    }

    /// `--exclusive` keeps every other job off a node while a run is on
    /// it: Slurm is the lock.
    fn lock(&self, _host: &str, _owner: &Owner) -> Result<(), HostError> {
        Ok(())
    }

    fn unlock(&self, _host: &str, _owner: &Owner) {}

    /// Cancels every job of the hunt still queued or running (found by
    /// name: `squeue` lists the user's jobs), whichever node it is on.
    fn clean_up(&self, _host: &str, owner: &Owner) -> anyhow::Result<Vec<String>> {
        let listed = command_output(&["squeue", "-h", "--me", "-o", "%i|%j|%T|%N"])
            .map_err(|reason| anyhow::anyhow!("cannot list the Slurm queue: {reason}"))?;
        let prefix = owner.job_prefix();
        let mut stopped = Vec::new();
        for line in listed.lines() {
            let fields: Vec<&str> = line.split('|').collect();
            let [id, name, state, node] = fields[..] else {
                continue;
            };
            if !name.starts_with(&prefix) {
                continue;
            }
            command_output(&["scancel", id])
                .map_err(|reason| anyhow::anyhow!("cannot cancel Slurm job {id}: {reason}"))?;
            stopped.push(format!("Slurm job {id} {name} ({state} {node})"));
        }
        Ok(stopped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_script_writes_its_status_last() {
        let tmp = tempfile::tempdir().unwrap();
        let output = tmp.path().join("out.txt");
        let job = Job {
            name: "pgbisect-h-3".into(),
            script: "echo \"$X\"; exit 4",
            env: vec![("X".into(), "it's".into())],
            dir: "/tmp".into(),
            limit: Duration::from_secs(60),
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: &output,
        };
        let status = tmp.path().join("s");
        let text = batch_script(&job, &status);
        assert!(text.contains("\ncd /tmp || exit 125\n"), "{text}");
        let out = std::process::Command::new("sh")
            .args(["-c", &text])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4));
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "it's\n");
        assert_eq!(read_status(&status), Some((4, false)));
        assert_eq!(read_status(&tmp.path().join("none")), None);
        // 3 MiB: its ends kept, a line saying what was cut between them.
        let chatty = Job {
            script: "head -c 3145728 /dev/zero | tr '\\0' x; echo; echo tps = 5",
            ..job.clone()
        };
        let out = std::process::Command::new("sh")
            .args(["-c", &batch_script(&chatty, &status)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let kept = std::fs::read_to_string(&output).unwrap();
        assert!(kept.len() < 1_100_000, "{}", kept.len());
        assert!(kept.ends_with("tps = 5\n"));
        assert!(kept.contains("[... 2097161 bytes of output cut by pgbisect ...]"));
        assert_eq!(read_status(&status), Some((0, false)));
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            2,
            "only output and status"
        );
        // A daemon keeping the output open neither holds the job nor
        // outlives it.
        let daemon = Job {
            script: "setsid sleep 600 & echo tps = 6",
            ..job
        };
        let started = std::time::Instant::now();
        let out = std::process::Command::new("sh")
            .args(["-c", &batch_script(&daemon, &status)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "tps = 6\n");
    }
}
