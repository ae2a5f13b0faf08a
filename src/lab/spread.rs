//! Runs spread over several hosts: what every lab of several hosts does,
//! whatever a run on a host is (a custom benchmark command, a PostgreSQL
//! server under pgbench).
//!
//! A round runs on every host at once (a thread each) and hands back one
//! run per host in the hosts' order; a lone run goes to the next host in
//! turn. A host that goes away makes failed runs in rounds, each with the
//! reason, and the hunt goes on with the others; a lone run meant for it
//! is made on the next host instead, and it is tried again every
//! [`RETRY_DOWN_EVERY`] runs. Trees built here (installs, pgbisect itself)
//! are put on each host once, under their key ([`Sent`]).

use crate::hosts::Backend;
use crate::lab::{HostRun, RunSpec};
use crate::model::{LabTotals, RunOutcome};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Lone runs between two tries of hosts that were down.
pub(crate) const RETRY_DOWN_EVERY: u64 = 20;

/// One run on one host.
pub(crate) struct Ran {
    pub outcome: RunOutcome,
    /// What it cost (a run that never started costs nothing but counts).
    pub totals: LabTotals,
    /// The host could not be reached: another may make the run.
    pub host_down: bool,
}

impl Ran {
    /// A run made in `seconds`, with `outcome`.
    pub fn made(outcome: RunOutcome, seconds: f64) -> Ran {
        Ran {
            outcome,
            totals: LabTotals {
                runs: 1,
                bench_seconds: seconds,
                ..LabTotals::default()
            },
            host_down: false,
        }
    }

    /// No run: the host could not be reached, and why.
    pub fn down(reason: String) -> Ran {
        Ran {
            host_down: true,
            ..Ran::made(RunOutcome::Failed { reason }, 0.0)
        }
    }
}

/// How one run is made on one host: shared by the threads of a round.
pub(crate) trait OnHost: Sync {
    /// What a run of one commit needs, made here before the round.
    type Work: Sync;

    /// The hosts, in the order of a round's runs.
    fn hosts(&self) -> &[String];

    /// One run on `host`, numbered and timed as `spec` says.
    fn run_on(&self, host: &str, work: &Self::Work, spec: RunSpec) -> anyhow::Result<Ran>;
}

/// Which host a lone run goes to, which hosts are down, and what the runs
/// cost.
#[derive(Default)]
pub(crate) struct Spread {
    /// The host the next lone run goes to.
    next: usize,
    /// Hosts found down, left out of lone runs for a while.
    down: HashSet<String>,
    totals: LabTotals,
}

impl Spread {
    /// What the runs cost so far.
    pub fn totals(&self) -> LabTotals {
        self.totals
    }

    /// Whether `host` was found down.
    #[cfg(test)]
    pub fn is_down(&self, host: &str) -> bool {
        self.down.contains(host)
    }

    fn count(&mut self, totals: &LabTotals) {
        add_totals(&mut self.totals, totals);
    }

    /// One run on the next host in turn that is up; a host found down is
    /// left out of lone runs (tried again every [`RETRY_DOWN_EVERY`] runs)
    /// and the run goes to the next host. When every host is down, the
    /// run fails with the last host's reason.
    pub fn lone<O: OnHost>(
        &mut self,
        on: &O,
        work: &O::Work,
        spec: RunSpec,
    ) -> anyhow::Result<RunOutcome> {
        let hosts = on.hosts();
        if spec.run.is_multiple_of(RETRY_DOWN_EVERY) {
            self.down.clear();
        }
        let start = self.next;
        let mut order: Vec<usize> = (0..hosts.len())
            .map(|i| (start + i) % hosts.len())
            .collect();
        order.sort_by_key(|i| self.down.contains(&hosts[*i]));
        let mut last = None;
        for i in order {
            let ran = on.run_on(&hosts[i], work, spec)?;
            if ran.host_down {
                self.down.insert(hosts[i].clone());
                last = Some(ran.outcome);
                continue;
            }
            self.down.remove(&hosts[i]);
            self.next = (i + 1) % hosts.len();
            self.count(&ran.totals);
            return Ok(ran.outcome);
        }
        self.totals.runs += 1;
        Ok(last.unwrap_or_else(|| RunOutcome::Failed {
            reason: "no hosts".into(),
        }))
    }

    /// The runs asked for, each of its own work (a commit's) on its own
    /// host (its place in the hosts) with its run number, all at once: a
    /// whole round, a round shared among several commits, or the part of
    /// one that a stopped hunt did not journal.
    pub fn some<O: OnHost>(
        &mut self,
        on: &O,
        spec: RunSpec,
        runs: &[(usize, u64, &O::Work)],
    ) -> anyhow::Result<Vec<HostRun>> {
        let hosts = on.hosts();
        let mut asked = Vec::with_capacity(runs.len());
        for &(i, run, work) in runs {
            let host = hosts.get(i).ok_or_else(|| {
                anyhow::anyhow!("no host number {i}: the hunt has {}", hosts.len())
            })?;
            asked.push((host.as_str(), RunSpec { run, ..spec }, work));
        }
        let ended: Vec<anyhow::Result<Ran>> = std::thread::scope(|s| {
            let handles: Vec<_> = asked
                .iter()
                .map(|&(host, spec, work)| s.spawn(move || on.run_on(host, work, spec)))
                .collect();
            handles.into_iter().map(join).collect()
        });
        let mut made = Vec::with_capacity(asked.len());
        for ((host, _, _), result) in asked.iter().zip(ended) {
            let ran = result?;
            self.count(&ran.totals);
            if ran.host_down {
                self.down.insert(host.to_string());
            } else {
                self.down.remove(*host);
            }
            made.push(HostRun {
                host: Some(host.to_string()),
                outcome: ran.outcome,
            });
        }
        Ok(made)
    }
}

/// Where each tree sent from here is on each host.
pub(crate) struct Sent {
    backend: Arc<dyn Backend>,
    /// (host, key) to the tree's path on the host.
    at: Mutex<HashMap<(String, String), String>>,
}

impl Sent {
    pub fn new(backend: Arc<dyn Backend>) -> Sent {
        Sent {
            backend,
            at: Mutex::new(HashMap::new()),
        }
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Where the tree `local` (named `key`) is on `host`, sent there first
    /// if it is not yet; or why it could not be.
    pub fn ensure(
        &self,
        host: &str,
        local: &Path,
        key: &str,
    ) -> anyhow::Result<Result<String, String>> {
        let index = (host.to_string(), key.to_string());
        if let Some(path) = self.lock().get(&index) {
            return Ok(Ok(path.clone()));
        }
        let sent = self.backend.send(host, local, key)?;
        if let Ok(path) = &sent {
            self.lock().insert(index, path.clone());
        }
        Ok(sent)
    }

    /// Puts `local` on every host at once; a host that cannot take it now
    /// gets it before its next run.
    pub fn everywhere(&self, local: &Path, key: &str) -> anyhow::Result<()> {
        let sent: Vec<anyhow::Result<Result<String, String>>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .backend
                .hosts()
                .iter()
                .map(|host| s.spawn(move || self.ensure(host, local, key)))
                .collect();
            handles.into_iter().map(join).collect()
        });
        for result in sent {
            let _not_now = result?;
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), String>> {
        self.at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Adds the runs, warm-ups, benchmark time and set-ups of `more` to
/// `totals` (not the builds: those are made here).
pub(crate) fn add_totals(totals: &mut LabTotals, more: &LabTotals) {
    totals.runs += more.runs;
    totals.warmup_runs += more.warmup_runs;
    totals.bench_seconds += more.bench_seconds;
    totals.setup.templates += more.setup.templates;
    totals.setup.template_seconds += more.setup.template_seconds;
    totals.setup.setups += more.setup.setups;
    totals.setup.setup_seconds += more.setup.setup_seconds;
}

/// A thread's result; a thread that panicked is an error, not a panic here.
pub(crate) fn join<T>(
    handle: std::thread::ScopedJoinHandle<'_, anyhow::Result<T>>,
) -> anyhow::Result<T> {
    handle
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("a thread running on a host panicked")))
}
