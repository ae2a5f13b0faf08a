//! Where the server and pgbench run: CPU sets and NUMA memory binding.
//!
//! At one client, a pgbench run on a small machine measures mostly where
//! the scheduler puts the client and its backend: on this project's 2-vCPU
//! test machine, PostgreSQL 15 select-only ran at 10-12K tps with the two
//! on different CPUs and 80-84K (CV about 2%) on the same one, and the
//! scheduler moved between the two states during a hunt ("noise
//! episodes"). A hunt must measure PostgreSQL, so the placement is chosen
//! (from the machine and the client count, or by the profile's
//! `[placement]`), applied to the postmaster (its backends inherit it) and
//! to pgbench, and recorded in the report.
//!
//! The decision is pure ([`decide`] over a [`Topology`]); reading the
//! machine takes a root path so tests use fake /sys trees; applying it
//! lives in [`pin`].

mod cpuset;
pub mod pin;

pub use cpuset::{CpuListError, CpuSet, MAX_CPUS};
pub use pin::Pin;

use serde::{Deserialize, Serialize};
use std::path::Path;

/// How the profile asks for the placement to be chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Same CPU at 1 client; nothing below 4 CPUs at more clients;
    /// server and pgbench on CPUs of their own above.
    #[default]
    Auto,
    /// Server and pgbench on one CPU.
    SameCpu,
    /// pgbench on CPUs of its own, the server on the rest.
    Split,
    /// No CPU sets (NUMA binding still applies when `numa-node` is set).
    None,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::SameCpu => "same-cpu",
            Mode::Split => "split",
            Mode::None => "none",
        }
    }
}

/// The profile's `[placement]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PlacementSpec {
    pub mode: Option<Mode>,
    /// CPUs of the postmaster and its backends, e.g. `"0-3"`.
    pub server_cpus: Option<CpuSet>,
    /// CPUs of pgbench.
    pub pgbench_cpus: Option<CpuSet>,
    /// Keep both on this NUMA node's CPUs and memory.
    pub numa_node: Option<u32>,
}

impl PlacementSpec {
    /// Whether the section sets nothing (the default placement).
    pub fn is_unset(&self) -> bool {
        *self == PlacementSpec::default()
    }
}

/// The CPUs pgbisect may use and the NUMA nodes they sit on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Online CPUs this process may run on.
    pub cpus: CpuSet,
    /// NUMA nodes with their CPUs (empty when the kernel shows none).
    pub nodes: Vec<(u32, CpuSet)>,
}

impl Topology {
    /// Reads `ROOT/sys/devices/system/{cpu/online,node/node*/cpulist}`;
    /// `allowed` (this process's affinity) narrows the online CPUs.
    pub fn read(root: &Path, allowed: Option<&CpuSet>) -> Topology {
        let sys = root.join("sys/devices/system");
        let read_set = |path: &Path| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| CpuSet::parse(&t).ok())
        };
        let online = read_set(&sys.join("cpu/online"));
        let mut nodes: Vec<(u32, CpuSet)> = std::fs::read_dir(sys.join("node"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let id: u32 = name.strip_prefix("node")?.parse().ok()?;
                Some((id, read_set(&entry.path().join("cpulist"))?))
            })
            .collect();
        nodes.sort_by_key(|(id, _)| *id);
        let everything = CpuSet::from_cpus(0..1).expect("CPU 0");
        let cpus = match (online, allowed) {
            (Some(on), Some(mine)) => on.intersection(mine).unwrap_or(on),
            (Some(on), None) => on,
            (None, Some(mine)) => mine.clone(),
            (None, None) => everything,
        };
        Topology { cpus, nodes }
    }

    /// The running machine, within this process's CPU affinity.
    pub fn current() -> Topology {
        Topology::read(Path::new("/"), pin::current_affinity().as_ref())
    }

    fn node(&self, id: u32) -> Option<&CpuSet> {
        self.nodes.iter().find(|(n, _)| *n == id).map(|(_, c)| c)
    }

    /// The usable CPUs of the first node that has any.
    fn first_node(&self) -> Option<(u32, CpuSet)> {
        self.nodes
            .iter()
            .find_map(|(id, cpus)| Some((*id, cpus.intersection(&self.cpus)?)))
    }
}

/// Where the server and pgbench run, as decided and as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// `same-cpu`, `split`, `none` or `custom`.
    pub mode: String,
    /// CPUs of the postmaster and its backends; none: not pinned.
    pub server_cpus: Option<CpuSet>,
    pub pgbench_cpus: Option<CpuSet>,
    /// The node whose memory both are bound to, on machines with several.
    pub memory_node: Option<u32>,
    /// Why, in a sentence.
    pub why: String,
}

impl Placement {
    /// One line for reports and progress output.
    pub fn describe(&self) -> String {
        let side = |cpus: &Option<CpuSet>| match cpus {
            Some(set) => format!("on {}", set.describe()),
            None => "unpinned".to_string(),
        };
        let memory = match self.memory_node {
            Some(node) => format!(", memory on NUMA node {node}"),
            None => String::new(),
        };
        format!(
            "{}: server {}, pgbench {}{memory} ({})",
            self.mode,
            side(&self.server_cpus),
            side(&self.pgbench_cpus),
            self.why
        )
    }

    /// The pins to apply to the server and to pgbench.
    pub fn pins(&self) -> (Pin, Pin) {
        (
            Pin::new(self.server_cpus.clone(), self.memory_node),
            Pin::new(self.pgbench_cpus.clone(), self.memory_node),
        )
    }
}

/// The profile's wishes on a machine: decides per client count.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub spec: PlacementSpec,
    pub topology: Topology,
}

impl Policy {
    /// `spec` on the running machine.
    pub fn current(spec: &PlacementSpec) -> Policy {
        Policy {
            spec: spec.clone(),
            topology: Topology::current(),
        }
    }

    pub fn decide(&self, clients: u32) -> Result<Placement, PlacementError> {
        decide(&self.spec, &self.topology, clients)
    }
}

/// A placement the machine cannot give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "[placement] {key} = \"{asked}\" names CPUs this machine does not offer: pgbisect may use {usable}; \
         name CPUs among those (or run pgbisect with a wider `taskset`)"
    )]
    NoSuchCpus {
        key: &'static str,
        asked: CpuSet,
        usable: CpuSet,
    },
    #[error(
        "[placement] numa-node = {node}: this machine has no such node with usable CPUs ({known}); \
         pick one of those or leave numa-node out"
    )]
    NoSuchNode { node: u32, known: String },
    #[error(
        "[placement] mode = \"split\" needs at least 2 CPUs, and only {usable} can be used; \
         use mode = \"same-cpu\" or \"none\""
    )]
    TooFewForSplit { usable: CpuSet },
}

/// Smallest machine (or node) on which clients above 1 get a split
/// placement by default: below it, CPUs of pgbench's own are taken from
/// the server, and at 2 clients on 2 CPUs the scheduler already pairs each
/// client with its backend.
pub const SPLIT_FROM_CPUS: usize = 4;

/// Chooses the placement for `clients` on `topo` as `spec` asks.
pub fn decide(
    spec: &PlacementSpec,
    topo: &Topology,
    clients: u32,
) -> Result<Placement, PlacementError> {
    let (scope, memory_node) = scope(spec, topo, clients)?;
    for (key, asked) in [
        ("server-cpus", &spec.server_cpus),
        ("pgbench-cpus", &spec.pgbench_cpus),
    ] {
        if let Some(asked) = asked.as_ref().filter(|a| !a.is_subset(&topo.cpus)) {
            return Err(PlacementError::NoSuchCpus {
                key,
                asked: asked.clone(),
                usable: topo.cpus.clone(),
            });
        }
    }
    if spec.server_cpus.is_some() || spec.pgbench_cpus.is_some() {
        return Ok(Placement {
            mode: "custom".into(),
            server_cpus: spec.server_cpus.clone(),
            pgbench_cpus: spec.pgbench_cpus.clone(),
            memory_node,
            why: "as the profile says".into(),
        });
    }
    let mode = match spec.mode.unwrap_or_default() {
        Mode::Auto if clients <= 1 => Mode::SameCpu,
        Mode::Auto if scope.len() < SPLIT_FROM_CPUS => Mode::None,
        Mode::Auto => Mode::Split,
        asked => asked,
    };
    let asked = spec.mode.is_some_and(|m| m != Mode::Auto);
    let placed = |server: Option<CpuSet>, pgbench: Option<CpuSet>, why: String| Placement {
        mode: mode.as_str().into(),
        server_cpus: server,
        pgbench_cpus: pgbench,
        memory_node,
        why: if asked {
            "as the profile says".into()
        } else {
            why
        },
    };
    Ok(match mode {
        Mode::SameCpu => {
            let cpu = scope.highest(1);
            placed(
                Some(cpu.clone()),
                Some(cpu),
                "1 client: client and backend take turns, so one CPU spares every \
                 transaction a cross-CPU wake-up"
                    .into(),
            )
        }
        Mode::Split => {
            let (server, pgbench) = split(&scope)?;
            placed(
                Some(server),
                Some(pgbench),
                format!(
                    "{clients} clients on {} CPUs: pgbench on CPUs of its own, so it \
                     never takes the server's",
                    scope.len()
                ),
            )
        }
        Mode::None | Mode::Auto => {
            let whole = memory_node.map(|_| scope.clone());
            placed(
                whole.clone(),
                whole,
                format!(
                    "{clients} clients on {} CPUs: the scheduler pairs each client with its \
                     backend; CPUs of pgbench's own would be taken from the server",
                    scope.len()
                ),
            )
        }
    })
}

/// The CPUs to place on, and the node whose memory to bind: the named
/// node; else, on a machine with several nodes, the first node when the
/// clients fit in it (1 client, or a split of one node); else every CPU.
fn scope(
    spec: &PlacementSpec,
    topo: &Topology,
    clients: u32,
) -> Result<(CpuSet, Option<u32>), PlacementError> {
    if let Some(node) = spec.numa_node {
        let cpus = topo.node(node).and_then(|c| c.intersection(&topo.cpus));
        return match cpus {
            Some(cpus) => Ok((cpus, Some(node))),
            None => Err(PlacementError::NoSuchNode {
                node,
                known: known_nodes(topo),
            }),
        };
    }
    let explicit = spec.server_cpus.is_some() || spec.pgbench_cpus.is_some();
    let unpinned = spec.mode == Some(Mode::None);
    if topo.nodes.len() < 2 || explicit || unpinned {
        return Ok((topo.cpus.clone(), None));
    }
    match topo.first_node() {
        Some((id, cpus)) if clients <= 1 || clients as usize <= cpus.len() => Ok((cpus, Some(id))),
        _ => Ok((topo.cpus.clone(), None)),
    }
}

fn known_nodes(topo: &Topology) -> String {
    if topo.nodes.is_empty() {
        return "the kernel shows no NUMA nodes".into();
    }
    let nodes: Vec<String> = topo
        .nodes
        .iter()
        .map(|(id, cpus)| format!("node {id}: {}", cpus.describe()))
        .collect();
    nodes.join("; ")
}

/// pgbench on the highest quarter of `scope` (at least one CPU), the
/// server on the rest: select-only pgbench spends a fraction of what its
/// backends spend per transaction.
fn split(scope: &CpuSet) -> Result<(CpuSet, CpuSet), PlacementError> {
    let pgbench = scope.highest((scope.len() / 4).max(1));
    match scope.difference(&pgbench) {
        Some(server) => Ok((server, pgbench)),
        None => Err(PlacementError::TooFewForSplit {
            usable: scope.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;
