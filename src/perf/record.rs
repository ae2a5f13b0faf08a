//! Linux `perf` recording the server's processes, and why it may not.
//!
//! `perf record -p` attaches to the processes given and, through counter
//! inheritance, to every process they fork while it records: given the
//! postmaster and its children, it follows the backends pgbench connects
//! later too. The recording is turned into text by `perf script` at once
//! and only the text is kept; the raw `perf.data` goes with a private
//! scratch folder, so no file of a name anyone can guess is written.
//!
//! A machine without `perf`, or whose kernel refuses `perf_event_open` to
//! this user, is common (containers, `perf_event_paranoid` at 3): that is
//! an [`Unavailable`] the report prints, never an error that ends a hunt.

use super::inline;
use super::{CallGraph, Request, Sampler};
use crate::machine::steady::{stat_fields, ticks_per_second};
use crate::proc::{self, Ended, Interrupted};
use std::path::Path;
use std::time::Duration;

/// Why no profile was recorded, for the report (and the JSON result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Unavailable {
    #[error("no CPU profile: `{program}` is not installed (on Debian: apt-get install linux-perf)")]
    Missing { program: String },
    #[error(
        "no CPU profile: the kernel refused perf_event_open{}: run pgbisect as root, or allow \
         profiling with `sysctl kernel.perf_event_paranoid=1` ({detail})",
        paranoid.map(|p| format!(" (kernel.perf_event_paranoid = {p})")).unwrap_or_default()
    )]
    NotPermitted {
        paranoid: Option<i32>,
        detail: String,
    },
    #[error("no CPU profile: `{command}` failed: {detail}")]
    Failed { command: String, detail: String },
    #[error("no CPU profile: perf took no samples of the server's processes (were they idle?)")]
    NoSamples,
}

/// Records with Debian's `perf` (package `linux-perf`).
#[derive(Debug, Clone)]
pub struct PerfSampler {
    /// The `perf` program: a name looked up on `PATH`, or a path.
    pub program: String,
}

impl Default for PerfSampler {
    fn default() -> Self {
        PerfSampler {
            program: "perf".to_string(),
        }
    }
}

/// How long `perf script` may take to turn a recording into text.
const SCRIPT_LIMIT: Duration = Duration::from_secs(300);

impl Sampler for PerfSampler {
    fn record(&self, req: &Request) -> anyhow::Result<Result<String, Unavailable>> {
        crate::folders::create_dir(&req.scratch)?;
        let scratch = tempfile::Builder::new()
            .prefix("perf-")
            .tempdir_in(&req.scratch)?;
        let data = scratch.path().join("perf.data");
        let record = record_args(req, &data);
        let limit = req.duration + Duration::from_secs(60);
        if let Err(why) = self.run(&record, limit)? {
            return Ok(Err(why));
        }
        // Without the period field, every sample counts one.
        let script = [
            "script",
            "-F",
            "comm,pid,tid,time,event,ip,sym,dso",
            "-i",
            &path_arg(&data),
        ]
        .map(String::from);
        match self.run(&script, SCRIPT_LIMIT)? {
            Ok(text) if text.trim().is_empty() => Ok(Err(Unavailable::NoSamples)),
            // Functions the compiler inlined, named from the debug
            // information (see `inline`).
            Ok(text) => Ok(Ok(inline::expand(&text, &inline::Addr2line::default()))),
            other => Ok(other),
        }
    }
}

/// `perf record` of `req`'s processes for its duration, into `data`.
fn record_args(req: &Request, data: &Path) -> Vec<String> {
    let pids: Vec<String> = req.pids.iter().map(u32::to_string).collect();
    let call_graph = match req.call_graph {
        CallGraph::FramePointers => "fp",
        CallGraph::Dwarf => "dwarf",
    };
    [
        "record",
        "-F",
        &req.frequency.to_string(),
        "--call-graph",
        call_graph,
        "-p",
        &pids.join(","),
        "-o",
        &path_arg(data),
        "--",
        "sleep",
        &format!("{:.3}", req.duration.as_secs_f64()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl PerfSampler {
    /// Whether `perf` can record here at all, found out in a fraction of
    /// a second by recording `true` into a private folder under `scratch`:
    /// before builds are made for profiling, not after.
    pub fn probe(&self, scratch: &Path) -> anyhow::Result<Result<(), Unavailable>> {
        crate::folders::create_dir(scratch)?;
        let dir = tempfile::Builder::new()
            .prefix("perf-probe-")
            .tempdir_in(scratch)?;
        let args = [
            "record",
            "-F",
            "99",
            "--call-graph",
            "fp",
            "-o",
            &path_arg(&dir.path().join("probe.data")),
            "--",
            "true",
        ]
        .map(String::from);
        Ok(self.run(&args, Duration::from_secs(60))?.map(|_| ()))
    }

    /// Runs `perf ARGS` to its deadline; its standard output, or why not.
    fn run(&self, args: &[String], limit: Duration) -> anyhow::Result<Result<String, Unavailable>> {
        let command = format!("{} {}", self.program, args.join(" "));
        let expr = duct::cmd(&self.program, args)
            .stdout_capture()
            .stderr_capture()
            .stdin_null();
        let ended = match proc::run(expr, limit) {
            Ok(ended) => ended,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Err(Unavailable::Missing {
                    program: self.program.clone(),
                }));
            }
            Err(e) => {
                return Ok(Err(Unavailable::Failed {
                    command,
                    detail: e.to_string(),
                }));
            }
        };
        let output = match ended {
            Ended::Exited(output) => output,
            Ended::Interrupted => return Err(Interrupted.into()),
            Ended::TimedOut(limit) => {
                return Ok(Err(Unavailable::Failed {
                    command,
                    detail: format!("it did not end within {} s", limit.as_secs()),
                }));
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            return Ok(Ok(String::from_utf8_lossy(&output.stdout).into_owned()));
        }
        Ok(Err(classify(&self.program, &command, &stderr, paranoid())))
    }
}

/// The kernel's `perf_event_paranoid` setting, when it can be read.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Why a `perf` command that failed with `stderr` did.
fn classify(program: &str, command: &str, stderr: &str, paranoid: Option<i32>) -> Unavailable {
    let detail = last_lines(stderr, 3);
    let lower = stderr.to_lowercase();
    if lower.contains("perf not found for kernel") || lower.contains("you may need to install") {
        return Unavailable::Missing {
            program: program.to_string(),
        };
    }
    let refused = [
        "perf_event_paranoid",
        "permission denied",
        "operation not permitted",
        "no permission",
        "access to performance monitoring",
    ];
    if refused.iter().any(|r| lower.contains(r)) {
        return Unavailable::NotPermitted { paranoid, detail };
    }
    Unavailable::Failed {
        command: command.to_string(),
        detail,
    }
}

/// The last `n` lines of `text` that say something, joined.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// `root` and every process descending from it now, from `/proc`: the
/// postmaster and the backends already forked (perf follows later ones).
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if let Some(ppid) = parent_of(&stat) {
                parents.push((pid, ppid));
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(parents.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    tree
}

/// The parent pid in a `/proc/PID/stat` line.
fn parent_of(stat: &str) -> Option<u32> {
    stat_fields(stat)?.get(1)?.parse().ok()
}

/// Whether process `pid` sleeps, waiting for something to happen (state
/// `S` in `/proc/PID/stat`): `None` where it cannot be read (no such
/// process, no `/proc`).
pub fn asleep(pid: u32) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    state_of(&stat).map(|state| state == 'S')
}

/// The CPU seconds (user and system) of the children process `pid` has
/// waited for (`cutime` and `cstime` in `/proc/PID/stat`): `None` where
/// they cannot be read.
pub fn reaped_children_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(reaped_ticks(&stat)? as f64 / ticks_per_second())
}

/// `cutime + cstime` of a `/proc/PID/stat` line, in clock ticks.
fn reaped_ticks(stat: &str) -> Option<u64> {
    let fields = stat_fields(stat)?;
    // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let field = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(field(13)? + field(14)?)
}

/// The state letter in a `/proc/PID/stat` line.
fn state_of(stat: &str) -> Option<char> {
    stat_fields(stat)?.first()?.chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_without_perf_says_how_to_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let sampler = PerfSampler {
            program: "/nonexistent/perf".into(),
        };
        let got = sampler.probe(dir.path()).unwrap();
        assert!(matches!(got, Err(Unavailable::Missing { .. })), "{got:?}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "the probe's folder is removed"
        );
    }

    #[test]
    fn refusals_missing_programs_and_other_failures_are_told_apart() {
        let refused = "Error:\nAccess to performance monitoring and observability operations \
                       is limited.\nConsider adjusting /proc/sys/kernel/perf_event_paranoid\n";
        let why = classify("perf", "perf record", refused, Some(3));
        assert!(matches!(
            why,
            Unavailable::NotPermitted {
                paranoid: Some(3),
                ..
            }
        ));
        assert!(
            why.to_string().contains("kernel.perf_event_paranoid = 3"),
            "{why}"
        );
        assert!(why.to_string().contains("sysctl"), "{why}");
        let json = serde_json::to_value(&why).unwrap();
        assert_eq!(json["reason"], "not-permitted");
        assert_eq!(serde_json::from_value::<Unavailable>(json).unwrap(), why);

        let wrapper = "E: linux-perf-5.10 is not installed.\nperf not found for kernel 5.10\n";
        assert!(matches!(
            classify("perf", "perf record", wrapper, None),
            Unavailable::Missing { .. }
        ));

        let gone = "Error:\nThe sys_perf_event_open() syscall returned with 3 (No such process)\n";
        let why = classify("perf", "perf record -p 1", gone, Some(2));
        assert!(matches!(why, Unavailable::Failed { .. }), "{why:?}");
        assert!(why.to_string().contains("No such process"), "{why}");
    }

    #[test]
    fn a_missing_perf_is_a_reason_not_an_error() {
        let sampler = PerfSampler {
            program: "/nonexistent/perf".into(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let req = Request {
            pids: vec![std::process::id()],
            duration: Duration::from_millis(100),
            call_graph: CallGraph::FramePointers,
            frequency: 99,
            scratch: tmp.path().join("scratch"),
        };
        let why = sampler.record(&req).unwrap().unwrap_err();
        assert_eq!(
            why,
            Unavailable::Missing {
                program: "/nonexistent/perf".into()
            }
        );
        assert!(why.to_string().contains("apt-get install linux-perf"));
    }

    #[test]
    fn the_process_tree_holds_the_root_and_its_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        child.kill().ok();
        child.wait().ok();
        assert_eq!(tree[0], std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?}");
        assert_eq!(parent_of("12 (a (b) c) S 7 12 12"), Some(7));
        assert_eq!(state_of("12 (a (b) c) S 7 12 12"), Some('S'));
        assert_eq!(state_of("12 (a) R 7 12 12"), Some('R'));
        assert_eq!(state_of("12 (a"), None);
        let line = "12 (a b) S 7 12 12 0 -1 4194560 100 5 0 0 30 4 250 17 20 0 1 0";
        assert_eq!(reaped_ticks(line), Some(267));
        assert_eq!(reaped_ticks("12 (a) S 7 12"), None);
    }
}
