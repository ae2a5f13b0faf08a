//! The hosts a hunt (or `compare`, or `judge`) measures on, taken for it
//! before anything is built (`--hosts`, `--slurm`, the profile's `[hosts]`).
//!
//! Taking the hosts is where a hunt learns whether it can use them at all,
//! so every refusal happens here, before the first build, and says what to
//! do next: no `ssh` or `sbatch`, a host that cannot be reached, a host
//! another hunt holds, hosts that are not alike. What an earlier start of the same hunt left running on the hosts
//! (its coordinator was killed) is stopped here too.

use crate::error::UsageError;
use crate::hosts::slurm::{Placement, Slurm};
use crate::hosts::ssh::Ssh;
use crate::hosts::{Backend, HostError, Owner, facts};
use crate::lab::pg::pool::HostsPlacement;
use crate::machine::Machine;
use crate::profile::{HostsSection, Profile};
use crate::progress::{Progress, ProgressEvent};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The hosts asked for on the command line: `--hosts a,b` or `--slurm`
/// (neither: the profile's `[hosts]`, else this machine).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostsWanted {
    pub hosts: Vec<String>,
    pub slurm: bool,
}

/// The hosts a hunt holds: given back when dropped.
pub struct Held {
    pub backend: Arc<dyn Backend>,
    pub owner: Owner,
    /// The hosts' facts (alike on every host), for the report.
    pub machine: Machine,
    /// Where the hosts placed server and pgbench (PostgreSQL profiles),
    /// once a run has said so.
    pub placement: HostsPlacement,
}

impl Drop for Held {
    fn drop(&mut self) {
        for host in self.backend.hosts() {
            self.backend.unlock(host, &self.owner);
        }
    }
}

impl Held {
    /// The hosts, their back end and their facts, in one line.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}): {} x {} CPUs, {:.0} GiB, kernel {}",
            self.backend.hosts().join(", "),
            self.backend.kind(),
            self.machine.cpu_model,
            self.machine.cpus,
            self.machine.memory_gib(),
            self.machine.kernel
        )
    }
}

/// The back end the flags and the profile ask for, for the hunt (or
/// comparison) named `name`; `None` for this machine alone.
fn choose(
    args: &HostsWanted,
    section: &HostsSection,
    work: &Path,
    name: &str,
) -> anyhow::Result<Option<Arc<dyn Backend>>> {
    let ssh_hosts = if args.hosts.is_empty() {
        section.ssh.clone().unwrap_or_default()
    } else {
        args.hosts.clone()
    };
    let nodes = section.nodes.clone().unwrap_or_default();
    let slurm = args.slurm || (args.hosts.is_empty() && ssh_hosts.is_empty() && !nodes.is_empty());
    if slurm {
        if nodes.is_empty() {
            return Err(UsageError(
                "--slurm needs the nodes to run on: add `nodes = [\"node1\", \"node2\"]` under \
                 [hosts] in the profile (`sinfo -N` lists them), with `partition` or \
                 `constraint` if your site needs them"
                    .into(),
            )
            .into());
        }
        check_names(&nodes, "[hosts] nodes")?;
        Slurm::check_tools()?;
        let placement = Placement {
            partition: section.partition.clone(),
            constraint: section.constraint.clone(),
        };
        let jobs = work.join("slurm").join(name);
        return Ok(Some(Arc::new(Slurm::new(nodes, placement, &jobs))));
    }
    if !nodes.is_empty() && args.hosts.is_empty() {
        return Err(UsageError(
            "the profile's [hosts] names both ssh hosts and Slurm nodes: keep one, or choose \
             with --hosts a,b or --slurm"
                .into(),
        )
        .into());
    }
    if ssh_hosts.is_empty() {
        return Ok(None);
    }
    check_names(&ssh_hosts, "--hosts")?;
    Ssh::check_tool()?;
    let ssh = Ssh::new(
        ssh_hosts,
        section.dir.as_deref(),
        section.ssh_config.clone(),
    );
    Ok(Some(Arc::new(ssh)))
}

/// Whether a hunt with `args` and the profile's `section` measures on
/// other machines (ssh hosts or Slurm nodes) rather than here.
pub fn elsewhere(args: &HostsWanted, section: &HostsSection) -> bool {
    args.slurm
        || !args.hosts.is_empty()
        || section.ssh.as_ref().is_some_and(|s| !s.is_empty())
        || section.nodes.as_ref().is_some_and(|n| !n.is_empty())
}

/// Host names: not empty, no repeats, nothing a shell or ssh would read
/// as an option.
fn check_names(names: &[String], from: &str) -> anyhow::Result<()> {
    for (i, name) in names.iter().enumerate() {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_.@:".contains(c);
        if name.is_empty() || name.starts_with('-') || !name.chars().all(plain) {
            return Err(UsageError(format!(
                "{from}: `{name}` is not a host name (letters, digits, `-`, `_`, `.`, `@`, `:`)"
            ))
            .into());
        }
        if names[..i].contains(name) {
            return Err(UsageError(format!(
                "{from}: {name} is named twice; each host makes one run at a time"
            ))
            .into());
        }
    }
    Ok(())
}

/// Takes the hosts the flags and the profile name for the hunt named
/// `name` (a hunt's folder name; a comparison's), `what` saying which
/// (`hunt`, `comparison`): locks them, stops what an earlier start of it
/// left on them, and checks that they are alike.
/// `None` when it measures here.
pub fn take(
    args: &HostsWanted,
    profile: &Profile,
    (work, name, what): (&Path, &str, &str),
    progress: &mut dyn Progress,
) -> anyhow::Result<Option<Held>> {
    let Some(backend) = choose(args, &profile.hosts, work, name)? else {
        return Ok(None);
    };
    let owner = Owner::here(name, work);
    let mut held = Held {
        backend: backend.clone(),
        owner,
        machine: Machine::default(),
        placement: HostsPlacement::default(),
    };
    for host in backend.hosts() {
        // On an error, `held` gives back every host it took.
        backend.lock(host, &held.owner)?;
        for line in backend.clean_up(host, &held.owner)? {
            progress.event(&ProgressEvent::Note(format!(
                "stopped what an earlier start of this {what} left running: {line}"
            )));
        }
    }
    let mut seen = Vec::new();
    for host in backend.hosts() {
        match backend.facts(host)? {
            Ok(m) => seen.push((host.clone(), m)),
            Err(reason) => {
                return Err(HostError::Unreachable {
                    host: host.clone(),
                    reason: format!("cannot read its facts: {reason}"),
                    hint: format!("check that {} can run jobs on {host}", backend.kind()),
                }
                .into());
            }
        }
    }
    held.machine = facts::alike(&seen).map_err(|differences| {
        UsageError(format!(
            "the hosts are not alike, and runs on different machines cannot be set side by \
             side as one machine's:\n{differences}\nhint: give hosts with the same CPU, \
             memory, kernel and compiler (the report's machine section)"
        ))
    })?;
    progress.event(&ProgressEvent::Note(format!(
        "measuring on {}",
        held.describe()
    )));
    Ok(Some(held))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunt() -> (tempfile::TempDir, std::path::PathBuf, &'static str) {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().to_path_buf();
        (tmp, work, "g-b-c1-0")
    }

    #[test]
    fn names_that_are_no_host_names_are_refused() {
        let bad = [
            vec!["-oProxyCommand=x".to_string()],
            vec!["a b".into()],
            vec!["a".into(), "a".into()],
        ];
        for names in bad {
            let err = check_names(&names, "--hosts").unwrap_err();
            assert!(err.downcast_ref::<UsageError>().is_some(), "{err}");
        }
        check_names(&["box-1.lab".into(), "me@box2".into()], "--hosts").unwrap();
    }

    #[test]
    fn slurm_without_nodes_and_two_kinds_of_hosts_are_refused() {
        let (_tmp, work, hunt) = hunt();
        let slurm = HostsWanted {
            slurm: true,
            ..HostsWanted::default()
        };
        let err = choose(&slurm, &HostsSection::default(), &work, hunt)
            .err()
            .unwrap();
        assert!(err.to_string().contains("`sinfo -N` lists them"), "{err}");
        let both = HostsSection {
            ssh: Some(vec!["a".into()]),
            nodes: Some(vec!["n1".into()]),
            ..HostsSection::default()
        };
        let err = choose(&HostsWanted::default(), &both, &work, hunt)
            .err()
            .unwrap();
        assert!(err.to_string().contains("keep one"), "{err}");
        let none = choose(
            &HostsWanted::default(),
            &HostsSection::default(),
            &work,
            hunt,
        )
        .unwrap();
        assert!(none.is_none());
    }
}
