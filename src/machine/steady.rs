//! What would make the machine's runs steadier, as pyperf's `system show`
//! says for Python benchmarks.
//!
//! Other work on the machine, a CPU frequency that follows the load,
//! turbo boost, transparent huge pages compacted in the background, swap
//! and a hypervisor that takes the CPU away (steal time) all move a
//! pgbench run's throughput more than the regressions a hunt looks for.
//! pgbisect never changes the system: it says what it sees and the
//! command that would fix it. Reading takes a root path so tests run on
//! fake /sys and /proc trees; the judging functions are pure.

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One thing that makes runs less steady, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What was seen, e.g. `CPU frequency governor powersave`.
    pub what: String,
    /// The command (or step) that would make runs steadier.
    pub advice: String,
}

impl Finding {
    fn new(what: impl Into<String>, advice: impl Into<String>) -> Finding {
        Finding {
            what: what.into(),
            advice: advice.into(),
        }
    }
}

/// A process's CPU time so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcTimes {
    pub pid: u32,
    pub ppid: u32,
    pub name: String,
    /// utime + stime, in clock ticks.
    pub ticks: u64,
}

/// The machine's CPU time and steal time so far (/proc/stat's `cpu` line).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTimes {
    pub total: u64,
    pub steal: u64,
}

/// Processes and CPU times at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub procs: Vec<ProcTimes>,
    pub cpu: Option<CpuTimes>,
}

/// What happened on the machine between two samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    /// Other processes using at least [`BUSY_SHARE`] of a CPU: name, share.
    pub busy: Vec<(String, f64)>,
    /// Share of CPU time the hypervisor took.
    pub steal: Option<f64>,
}

/// A process using this share of one CPU counts as other load.
pub const BUSY_SHARE: f64 = 0.10;

/// Steal time above this share shows another guest on our CPUs.
pub const STEAL_SHARE: f64 = 0.02;

/// A 1-minute load average above this, before the hunt, is other work.
pub const IDLE_LOAD: f64 = 0.5;

/// Reads every /proc/PID/stat and /proc/stat under `root`.
pub fn sample(root: &Path) -> Sample {
    let proc_dir = root.join("proc");
    let procs = std::fs::read_dir(&proc_dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_proc_stat(pid, &text)
        })
        .collect();
    let cpu = std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|t| parse_cpu_line(&t));
    Sample { procs, cpu }
}

/// The fields of a /proc/PID/stat line after the process's name, the
/// state first: the name is in parentheses and may hold spaces and
/// parentheses itself, so its last `)` ends it.
pub fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let close = text.rfind(')')?;
    Some(text.get(close + 1..)?.split_whitespace().collect())
}

/// pid, ppid, name and CPU ticks of a /proc/PID/stat line.
pub fn parse_proc_stat(pid: u32, text: &str) -> Option<ProcTimes> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let fields = stat_fields(text)?;
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(ProcTimes {
        pid,
        ppid,
        name,
        ticks: utime + stime,
    })
}

/// Total and steal ticks of /proc/stat's first (`cpu`) line.
pub fn parse_cpu_line(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal guest guest_nice;
    // guest time is already counted in user.
    let total = values.iter().take(8).sum();
    Some(CpuTimes {
        total,
        steal: values.get(7).copied().unwrap_or(0),
    })
}

/// Who else used the CPUs between `before` and `after`, `seconds` apart,
/// leaving out `own` (pgbisect) and everything it started.
pub fn activity(
    before: &Sample,
    after: &Sample,
    seconds: f64,
    ticks_per_second: f64,
    own: u32,
) -> Activity {
    let ours = descendants(&after.procs, own);
    let earlier: HashMap<u32, u64> = before.procs.iter().map(|p| (p.pid, p.ticks)).collect();
    let mut busy: Vec<(String, f64)> = after
        .procs
        .iter()
        .filter(|p| !ours.contains(&p.pid))
        .filter_map(|p| {
            let used = p.ticks.checked_sub(*earlier.get(&p.pid)?)?;
            let share = used as f64 / ticks_per_second / seconds;
            (share >= BUSY_SHARE).then(|| (p.name.clone(), share))
        })
        .collect();
    busy.sort_by(|a, b| b.1.total_cmp(&a.1));
    let steal = match (before.cpu, after.cpu) {
        (Some(b), Some(a)) if a.total > b.total => {
            Some(a.steal.saturating_sub(b.steal) as f64 / (a.total - b.total) as f64)
        }
        _ => None,
    };
    Activity { busy, steal }
}

/// `own` and every process whose parents lead to it.
fn descendants(procs: &[ProcTimes], own: u32) -> HashSet<u32> {
    let parent: HashMap<u32, u32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    procs
        .iter()
        .map(|p| p.pid)
        .filter(|pid| {
            let mut at = *pid;
            for _ in 0..64 {
                if at == own {
                    return true;
                }
                match parent.get(&at) {
                    Some(&up) if up != 0 && up != at => at = up,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// What under `root` makes runs less steady on a machine with `cpus`
/// CPUs, given the `activity` seen. The load average counts only before
/// the hunt (during it, it counts the hunt's own runs).
pub fn findings(root: &Path, cpus: usize, activity: &Activity, before_hunt: bool) -> Vec<Finding> {
    let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    let mut found = Vec::new();
    if before_hunt {
        found.extend(load_finding(read("proc/loadavg").as_deref(), cpus));
    }
    found.extend(busy_finding(activity));
    found.extend(steal_finding(activity));
    found.extend(governor_finding(root));
    found.extend(turbo_finding(
        read("sys/devices/system/cpu/intel_pstate/no_turbo").as_deref(),
        read("sys/devices/system/cpu/cpufreq/boost").as_deref(),
    ));
    found.extend(thp_finding(
        read("sys/kernel/mm/transparent_hugepage/enabled").as_deref(),
    ));
    found.extend(swap_finding(read("proc/meminfo").as_deref()));
    found
}

fn load_finding(loadavg: Option<&str>, cpus: usize) -> Option<Finding> {
    let load: f64 = loadavg?.split_whitespace().next()?.parse().ok()?;
    (load > IDLE_LOAD).then(|| {
        Finding::new(
            format!("load average {load:.2} on {cpus} CPUs before the hunt"),
            "run hunts while nothing else runs (`top` shows what does)",
        )
    })
}

fn busy_finding(activity: &Activity) -> Option<Finding> {
    if activity.busy.is_empty() {
        return None;
    }
    let named: Vec<String> = activity
        .busy
        .iter()
        .take(3)
        .map(|(name, share)| format!("{name} {:.0}%", share * 100.0))
        .collect();
    Some(Finding::new(
        format!("other processes use the CPUs: {}", named.join(", ")),
        "stop them, or move them off the placement's CPUs (`taskset -apc CPUS PID`) \
         or below them (`renice -n 19 -p PID`)",
    ))
}

fn steal_finding(activity: &Activity) -> Option<Finding> {
    let steal = activity.steal.filter(|s| *s > STEAL_SHARE)?;
    Some(Finding::new(
        format!(
            "the hypervisor took {:.0}% of the CPU time (steal)",
            steal * 100.0
        ),
        "use dedicated virtual CPUs or a bare-metal machine",
    ))
}

fn governor_finding(root: &Path) -> Option<Finding> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    let mut governors: Vec<(u32, String)> = std::fs::read_dir(&cpu_dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let cpu: u32 = entry
                .file_name()
                .to_str()?
                .strip_prefix("cpu")?
                .parse()
                .ok()?;
            let path = entry.path().join("cpufreq/scaling_governor");
            Some((cpu, std::fs::read_to_string(path).ok()?.trim().to_string()))
        })
        .filter(|(_, g)| g != "performance")
        .collect();
    governors.sort();
    let (_, first) = governors.first()?;
    let cpus = crate::placement::CpuSet::from_cpus(governors.iter().map(|(c, _)| *c))?;
    Some(Finding::new(
        format!("CPU frequency governor {first} on {}", cpus.describe()),
        "cpupower frequency-set -g performance",
    ))
}

fn turbo_finding(no_turbo: Option<&str>, boost: Option<&str>) -> Option<Finding> {
    if no_turbo.map(str::trim) == Some("0") {
        return Some(Finding::new(
            "turbo boost on (intel_pstate)",
            "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo",
        ));
    }
    (boost.map(str::trim) == Some("1")).then(|| {
        Finding::new(
            "CPU boost on (cpufreq)",
            "echo 0 > /sys/devices/system/cpu/cpufreq/boost",
        )
    })
}

fn thp_finding(enabled: Option<&str>) -> Option<Finding> {
    enabled?.contains("[always]").then(|| {
        Finding::new(
            "transparent huge pages: always (khugepaged compacts memory under the runs)",
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        )
    })
}

fn swap_finding(meminfo: Option<&str>) -> Option<Finding> {
    let field = |name: &str| -> Option<u64> {
        let line = meminfo?.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    let used_kb = field("SwapTotal:")?.checked_sub(field("SwapFree:")?)?;
    (used_kb > 0).then(|| {
        Finding::new(
            format!("{} MiB of swap in use", used_kb.div_ceil(1024)),
            "free memory, then `swapoff -a && swapon -a` to bring it back",
        )
    })
}

/// Checks the running machine, sampling other processes over `window`.
pub fn check(cpus: usize, window: Duration, before_hunt: bool) -> Vec<Finding> {
    let root = Path::new("/");
    let before = sample(root);
    std::thread::sleep(window);
    let after = sample(root);
    let seen = activity(
        &before,
        &after,
        window.as_secs_f64(),
        ticks_per_second(),
        std::process::id(),
    );
    findings(root, cpus, &seen, before_hunt)
}

/// The clock ticks a second of `/proc`'s CPU times (`USER_HZ`).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// How long other processes are watched at each check.
pub const WINDOW: Duration = Duration::from_secs(1);

/// How often the machine is checked during a hunt.
pub const EVERY: Duration = Duration::from_secs(600);

/// The findings of a hunt's checks, shared by the lab that checks between
/// runs and the report that lists them. A finding counts once per advice.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    seen: Arc<Mutex<Vec<Finding>>>,
    last: Arc<Mutex<Option<Instant>>>,
}

impl Watch {
    /// Keeps `found`; returns those whose advice is new.
    pub fn record(&self, found: Vec<Finding>) -> Vec<Finding> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<Finding> = found
            .into_iter()
            .filter(|f| !seen.iter().any(|s| s.advice == f.advice))
            .collect();
        seen.extend(new.iter().cloned());
        new
    }

    /// Whether [`EVERY`] has passed since the last check (or none was made);
    /// marks a check as made now when it has.
    pub fn due(&self, every: Duration) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let due = last.is_none_or(|at| at.elapsed() >= every);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    /// Checks the running machine now; returns what is new.
    pub fn check(&self, cpus: usize, before_hunt: bool) -> Vec<Finding> {
        self.due(Duration::ZERO);
        self.record(check(cpus, WINDOW, before_hunt))
    }

    /// Checks when [`EVERY`] has passed; returns what is new.
    pub fn check_if_due(&self, cpus: usize) -> Vec<Finding> {
        if !self.due(EVERY) {
            return Vec::new();
        }
        self.record(check(cpus, WINDOW, false))
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Finding> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One line for progress output.
pub fn describe(finding: &Finding) -> String {
    format!(
        "for steadier runs: {}; to fix: {}",
        finding.what, finding.advice
    )
}

#[cfg(test)]
mod tests;
