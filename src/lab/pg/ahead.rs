//! Building the next commit while this one is counted.
//!
//! A hunt on instruction counts spends most of its wall time building:
//! once the endpoints are built, what is left besides builds is a counted
//! run or two a commit. Counts do not move with the clock or with a busy
//! CPU (BENCHMARKS), so while the lab counts one commit it may build the
//! one the hunt will want next: the bad endpoint while the good one is
//! fitted and counted, the search's first commit while the endpoints are
//! counted. Timed runs never run beside such a build: a run of tps first
//! waits for it.
//!
//! One build at a time: the checkout and the build tree are shared, so a
//! build asked for in the foreground waits for the one ahead. A build made
//! ahead is kept, outcome and all, until its commit is prepared (a commit
//! that does not compile is not compiled twice), and one nobody waits for
//! any more (the hunt ended first) is stopped as an interrupt stops it.

use crate::build::{BuildOutcome, Builder};
use crate::repo::WorkTree;
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// What builds commits: a checkout and a builder, used by one build at a
/// time, in the foreground or in the thread that builds ahead.
pub trait Workshop: Send + 'static {
    /// Checks `commit` out and builds it (or finds its install).
    fn build(&mut self, commit: &str) -> anyhow::Result<BuildOutcome>;
    /// Builds really made and their wall time ([`Builder::totals`]).
    fn totals(&self) -> (u64, f64);
    /// Makes the builds from now on stop once `cancel` is set.
    fn cancelled_by(&mut self, cancel: Option<Arc<AtomicBool>>);
}

/// The lab's private checkout and its builder.
pub struct GitWorkshop {
    pub worktree: WorkTree,
    pub builder: Builder,
}

impl Workshop for GitWorkshop {
    fn build(&mut self, commit: &str) -> anyhow::Result<BuildOutcome> {
        self.worktree
            .checkout(commit)
            .with_context(|| format!("cannot check out {commit}"))?;
        Ok(self.builder.ensure(commit, self.worktree.path())?)
    }

    fn totals(&self) -> (u64, f64) {
        self.builder.totals()
    }

    fn cancelled_by(&mut self, cancel: Option<Arc<AtomicBool>>) {
        self.builder.cancelled_by(cancel);
    }
}

/// A build under way in a thread of its own.
struct InFlight {
    commit: String,
    cancel: Arc<AtomicBool>,
    handle: JoinHandle<anyhow::Result<BuildOutcome>>,
    /// The workshop's totals when it started, told while it builds.
    totals_before: (u64, f64),
}

/// Builds commits, one of them possibly ahead of need.
pub struct Builds<W: Workshop> {
    workshop: Arc<Mutex<W>>,
    ahead: Option<InFlight>,
    /// Builds made ahead whose commits were not prepared yet.
    done: Vec<(String, BuildOutcome)>,
}

impl<W: Workshop> Builds<W> {
    pub fn new(workshop: W) -> Builds<W> {
        Builds {
            workshop: Arc::new(Mutex::new(workshop)),
            ahead: None,
            done: Vec::new(),
        }
    }

    /// Starts building `commit` in a thread of its own, unless a build is
    /// already under way or `commit` was built ahead before. Whether it
    /// started: a thread that cannot be started leaves the build to
    /// [`Builds::build`].
    pub fn start(&mut self, commit: &str) -> bool {
        if self.ahead.is_some() || self.done.iter().any(|(c, _)| c == commit) {
            return false;
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let totals_before = lock(&self.workshop).totals();
        let (workshop, flag, name) = (self.workshop.clone(), cancel.clone(), commit.to_string());
        let spawned = std::thread::Builder::new()
            .name("build-ahead".into())
            .spawn(move || build_in(&workshop, &name, Some(flag)));
        match spawned {
            Ok(handle) => {
                self.ahead = Some(InFlight {
                    commit: commit.to_string(),
                    cancel,
                    handle,
                    totals_before,
                });
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for the build ahead, if one is under way, and keeps its
    /// outcome for its commit. Trouble it met (a full disk, the interrupt)
    /// comes out here.
    pub fn wait(&mut self) -> anyhow::Result<()> {
        let Some(flight) = self.ahead.take() else {
            return Ok(());
        };
        let outcome = flight
            .handle
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the build thread panicked")))
            .with_context(|| format!("building {} ahead, beside the runs", flight.commit))?;
        self.done.push((flight.commit, outcome));
        Ok(())
    }

    /// `commit` built: what its build ahead gave, or a build made now
    /// (after waiting for one ahead of another commit).
    pub fn build(&mut self, commit: &str) -> anyhow::Result<BuildOutcome> {
        self.wait()?;
        if let Some(at) = self.done.iter().position(|(c, _)| c == commit) {
            match self.done.remove(at).1 {
                // Evicted since by a later build: built (or found) again.
                BuildOutcome::Installed { prefix, .. } if !prefix.is_dir() => {}
                outcome => return Ok(outcome),
            }
        }
        build_in(&self.workshop, commit, None)
    }

    /// Builds really made, those ahead included once they end, and their
    /// wall time. While one builds ahead its thread holds the workshop, so
    /// the totals from before it are told; with none under way, no thread
    /// holds it.
    pub fn totals(&self) -> (u64, f64) {
        match &self.ahead {
            Some(flight) => flight.totals_before,
            None => lock(&self.workshop).totals(),
        }
    }
}

impl<W: Workshop> Drop for Builds<W> {
    /// A build ahead nobody waits for is stopped, and its thread ended,
    /// before the lab goes: it must not outlive the hunt (nor its lock of
    /// the work dir).
    fn drop(&mut self) {
        if let Some(flight) = self.ahead.take() {
            flight.cancel.store(true, Ordering::SeqCst);
            let _ = flight.handle.join();
        }
    }
}

/// Builds `commit` in `workshop`, its commands stopped by `cancel`.
fn build_in<W: Workshop>(
    workshop: &Mutex<W>,
    commit: &str,
    cancel: Option<Arc<AtomicBool>>,
) -> anyhow::Result<BuildOutcome> {
    let mut workshop = lock(workshop);
    workshop.cancelled_by(cancel);
    let built = workshop.build(commit);
    workshop.cancelled_by(None);
    built
}

/// The workshop, also after a build that panicked holding it (its state
/// is a checkout and a cache, which the next build checks anyway).
fn lock<W>(workshop: &Mutex<W>) -> MutexGuard<'_, W> {
    workshop.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
