//! The machine a hunt ran on, for reports.
//!
//! A throughput figure means little without the hardware and software
//! behind it: hackers on the mailing list ask first for the CPU, the
//! number of cores and NUMA nodes, the memory, the kernel and the compiler.
//! Reading the system is a boundary, so [`Machine::collect`] only gathers
//! raw text and the parse functions, which hold all the logic, are pure.
//! Nothing here fails a hunt: what cannot be read is reported as unknown.
//! [`steady`] says what would make the machine's runs steadier.

pub mod steady;

use crate::placement::Placement;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a report says about the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// e.g. `Intel(R) Xeon(R) CPU E5-2697 v4 @ 2.30GHz`.
    pub cpu_model: String,
    /// Logical CPUs (`processor` entries of /proc/cpuinfo).
    pub cpus: usize,
    /// NUMA nodes; 0 when unknown.
    pub numa_nodes: usize,
    /// Total memory in bytes; 0 when unknown.
    pub memory_bytes: u64,
    /// Kernel release, e.g. `6.1.0-18-amd64`.
    pub kernel: String,
    /// First line of `cc --version`.
    pub compiler: String,
    /// Where the server and pgbench ran (absent: not recorded, or custom
    /// benchmark commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// What would have made the runs steadier, seen before or during the hunt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steadiness: Vec<steady::Finding>,
}

const UNKNOWN: &str = "unknown";

/// What a machine is read from: /proc/cpuinfo, /proc/meminfo, the kernel
/// release, the entries of /sys/devices/system/node (one a line) and
/// `cc --version`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Texts<'a> {
    pub cpuinfo: &'a str,
    pub meminfo: &'a str,
    pub kernel: &'a str,
    pub node_names: &'a str,
    pub compiler: &'a str,
}

/// What `cc --version` prints (empty when it fails or takes over 30 s).
fn compiler_version() -> String {
    let expr = duct::cmd!("cc", "--version").stdout_capture().stderr_null();
    match crate::proc::run(expr, std::time::Duration::from_secs(30)) {
        Ok(crate::proc::Ended::Exited(o)) if o.status.success() => {
            String::from_utf8_lossy(&o.stdout).into_owned()
        }
        _ => String::new(),
    }
}

impl Machine {
    /// Reads the running machine.
    pub fn collect() -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let nodes = node_dir_names(Path::new("/sys/devices/system/node"));
        Machine::from_texts(&Texts {
            cpuinfo: &read("/proc/cpuinfo"),
            meminfo: &read("/proc/meminfo"),
            kernel: &read("/proc/sys/kernel/osrelease"),
            node_names: &nodes.join("\n"),
            compiler: &compiler_version(),
        })
    }

    /// The machine that `texts`, read from it, describe (what cannot be
    /// read is unknown).
    pub fn from_texts(texts: &Texts) -> Machine {
        let (cpu_model, cpus) = parse_cpuinfo(texts.cpuinfo);
        Machine {
            cpu_model,
            cpus,
            numa_nodes: count_numa_nodes(texts.node_names.lines().map(str::trim)),
            memory_bytes: parse_meminfo(texts.meminfo).unwrap_or(0),
            kernel: non_empty(texts.kernel.trim()),
            compiler: non_empty(first_line(texts.compiler)),
            placement: None,
            steadiness: Vec::new(),
        }
    }

    /// Memory in GiB, for reports.
    pub fn memory_gib(&self) -> f64 {
        self.memory_bytes as f64 / (1024.0 * 1024.0 * 1024.0)
    }
}

fn non_empty(text: &str) -> String {
    if text.is_empty() {
        UNKNOWN.to_string()
    } else {
        text.to_string()
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn node_dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The CPU model and the number of logical CPUs in /proc/cpuinfo text.
/// x86 names the model in `model name`; ARM and others use `Model`,
/// `Hardware` or `cpu`, tried in that order.
pub fn parse_cpuinfo(text: &str) -> (String, usize) {
    let field = |line: &str| -> Option<(String, String)> {
        let (key, value) = line.split_once(':')?;
        Some((key.trim().to_string(), value.trim().to_string()))
    };
    let fields: Vec<(String, String)> = text.lines().filter_map(field).collect();
    let cpus = fields.iter().filter(|(k, _)| k == "processor").count();
    let model = ["model name", "Model", "Hardware", "cpu"]
        .iter()
        .find_map(|name| {
            fields
                .iter()
                .find(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| UNKNOWN.to_string());
    (model, cpus)
}

/// `MemTotal` of /proc/meminfo text, in bytes.
pub fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let factor = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(factor)
}

/// NUMA nodes among the entries of /sys/devices/system/node (`node0`,
/// `node1`, ...; other entries such as `possible` are not nodes).
pub fn count_numa_nodes<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .filter(|n| {
            n.strip_prefix("node")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU E5-2697 v4 @ 2.30GHz\nflags\t\t: fpu vme\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU E5-2697 v4 @ 2.30GHz\n";
    const ARM: &str = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n\nHardware\t: Graviton2\n";

    #[test]
    fn cpuinfo_x86_names_model_and_counts() {
        assert_eq!(
            parse_cpuinfo(X86),
            ("Intel(R) Xeon(R) CPU E5-2697 v4 @ 2.30GHz".to_string(), 2)
        );
    }

    #[test]
    fn cpuinfo_arm_falls_back_to_hardware() {
        assert_eq!(parse_cpuinfo(ARM), ("Graviton2".to_string(), 2));
    }

    #[test]
    fn cpuinfo_empty_is_unknown() {
        assert_eq!(parse_cpuinfo(""), ("unknown".to_string(), 0));
    }

    #[test]
    fn meminfo_total_in_bytes() {
        let text = "MemTotal:       65842148 kB\nMemFree:         1234 kB\n";
        assert_eq!(parse_meminfo(text), Some(65_842_148 * 1024));
        assert_eq!(parse_meminfo("MemFree: 1 kB\n"), None);
        assert_eq!(parse_meminfo("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn numa_nodes_only_count_node_dirs() {
        let names = [
            "node0", "node1", "possible", "online", "power", "nodeX", "node",
        ];
        assert_eq!(count_numa_nodes(names.into_iter()), 2);
    }

    #[test]
    fn first_line_of_compiler_banner() {
        let banner = "gcc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022\n";
        assert_eq!(first_line(banner), "gcc (Debian 12.2.0-14) 12.2.0");
        assert_eq!(non_empty(first_line("")), "unknown");
    }

    /// The real machine: Linux always has these files.
    #[test]
    fn collects_the_running_machine() {
        let m = Machine::collect();
        assert!(m.cpus >= 1, "{m:?}");
        assert_ne!(m.cpu_model, "unknown", "{m:?}");
        assert!(m.memory_bytes > 64 * 1024 * 1024, "{m:?}");
        assert_ne!(m.kernel, "unknown", "{m:?}");
        // A CPU quota can lower what the process may use, never raise it.
        let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(m.cpus >= usable, "{m:?}");
    }
}
