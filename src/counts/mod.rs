//! Instruction counts: a measure that repeats where time does not.
//!
//! pgbench's transactions per second move by 3-6% from run to run on a
//! shared machine (where the scheduler puts the server and pgbench, what
//! else runs), so a regression of 1-2% hides in the noise of tps. The
//! instructions the server executes for a transaction do not depend on
//! the clock: counted by cachegrind they repeat to about 0.2%, where tps
//! spreads 3-6% (DESIGN, measured on PostgreSQL 15). rustc-perf decides on
//! `instructions:u`, CodSpeed and SQLite's speed checks on cachegrind.
//!
//! A counted run starts the server under a [`Counter`] and runs pgbench
//! three times with a fixed number of transactions per client: a warm-up
//! (thrown away), a short run and a long run. The processes each run
//! started (its backends and their parallel workers) are counted once
//! they end; the instructions of the long run less those of the short one,
//! over the transactions of the long run less those of the short one, are
//! the instructions a transaction costs
//! ([`crate::core::counts::per_transaction`]): starting a
//! backend, connecting and pgbench's own first queries cost the same in
//! both and cancel out. The server's long-lived processes (checkpointer,
//! WAL writer, background writer) are not counted: their work follows
//! the clock, not the transactions.
//!
//! What counts cannot see: time spent waiting (locks, I/O, the network,
//! sleeping) and, with cachegrind, the kernel's work for a system call.
//! A slowdown of that kind shows in tps and not in counts; the report
//! says which measure decided.

pub mod cachegrind;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Counts the instructions of the server's processes.
///
/// The real counter is [`cachegrind::Cachegrind`]; a counter that reads hardware
/// counters (`perf stat -e instructions:u`) belongs beside it for
/// machines that have them.
pub trait Counter {
    /// What counts, as the journal, the plan key and the report name it
    /// (`cachegrind (valgrind-3.19.0)`): a hunt never mixes two.
    fn name(&self) -> &str;

    /// Writes into `dir` the program `pg_ctl -p` starts in place of
    /// `postgres` (the `postgres` at `postgres`, counted), with the
    /// folder the counts go to; both made readable and the counts folder
    /// writable by the server's user (`server_uid`, when it is not ours).
    fn launcher(
        &self,
        postgres: &Path,
        dir: &Path,
        server_uid: Option<u32>,
    ) -> io::Result<Launcher>;

    /// The instructions of every counted process that has ended so far,
    /// by process id.
    fn ended(&self, launcher: &Launcher) -> io::Result<BTreeMap<u32, u64>>;

    /// The instructions the processes `pids` spent in each function, by
    /// the function's name; empty for a counter that does not name them.
    fn functions(&self, launcher: &Launcher, pids: &[u32]) -> io::Result<BTreeMap<String, u64>> {
        let _ = (launcher, pids);
        Ok(BTreeMap::new())
    }
}

/// The program that starts the server counted, and where its counts go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// Given to `pg_ctl -p`.
    pub program: PathBuf,
    /// One file of counts per process.
    pub counts: PathBuf,
}
