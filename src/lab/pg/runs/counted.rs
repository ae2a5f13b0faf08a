//! A counted run: the server started under a counter, pgbench made to run
//! fixed numbers of transactions, and the instructions of the processes
//! each pgbench run started read once they ended (see `crate::counts`).

use super::{RunJob, Runs, Session, failed, fits};
use crate::bench;
use crate::core::counts::{
    Counted, Lengths, MAX_PROBES, Window, functions_per_transaction, next_probe, per_transaction,
    probe_told,
};
use crate::counts::{Counter, Launcher};
use crate::model::{Measurement, RunOutcome};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long the processes of a pgbench run may take to end, and to write
/// their counts, after pgbench itself has: under the counter, on a
/// machine busy with builds, a backend took over a minute to.
const ENDING: Duration = Duration::from_secs(300);

/// The functions a counted run keeps, those a transaction spent most in:
/// enough to hold what a culprit changed among the server's busiest.
const KEPT_FUNCTIONS: usize = 60;

/// The transactions a client of the first warm-up run, which times them.
const PROBE: u64 = 10;

/// How long the server's processes must stay the same before a counted
/// run's first pgbench run ([`settle`]), and the most it waits for that.
const SETTLED: Duration = Duration::from_secs(2);
const SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// The seed of every counted pgbench run's random draws (`--random-seed`).
const COUNTED_SEED: u64 = 1;

/// A counted pgbench run may take this long: the counter slows the
/// server down tens of times, and a transaction count has no clock.
const COUNTED_LIMIT: Duration = Duration::from_secs(1800);

impl Runs {
    /// One server start under `counter` (its launcher in the job's
    /// server), a warm-up, a short and a long run of `lengths`
    /// transactions per client (fitted to how long the warm-up took,
    /// [`Lengths::fitted`]): the instructions a transaction cost, or why
    /// the run gave none.
    pub fn count(
        &mut self,
        job: RunJob,
        counter: &dyn Counter,
        launcher: &Launcher,
        lengths: Lengths,
    ) -> anyhow::Result<RunOutcome> {
        let running = match self.start_on_copy(&job)? {
            Ok(r) => r,
            Err(failed) => return Ok(failed),
        };
        let started = Instant::now();
        let outcome = self.count_windows(running.as_ref(), &job, (counter, launcher), lengths);
        self.totals.bench_seconds += started.elapsed().as_secs_f64();
        running.stop()?;
        Ok(match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                self.fresh_copy_of = None;
                failed(&e)
            }
        })
    }

    fn count_windows(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        lengths: Lengths,
    ) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 3;
        self.totals.warmup_runs += 1;
        settle(|| running.server_processes(), SETTLED, SETTLE_LIMIT)?;
        let lengths = self.warm_up(running, job, counting, lengths)?;
        let (short, _, short_fns) =
            self.window(running, job, counting, ("count-short", lengths.short))?;
        let (long, report, long_fns) =
            self.window(running, job, counting, ("count-long", lengths.long))?;
        let per_transaction = per_transaction(&short, &long)?;
        let functions = functions_per_transaction(
            &short_fns,
            &long_fns,
            long.transactions - short.transactions,
            KEPT_FUNCTIONS,
        );
        Ok(RunOutcome::Measured(Measurement {
            tps: report.tps,
            latency_ms: report.latency_ms,
            failed_transactions: report.failed_transactions,
            percentiles: None,
            instructions: Some(Counted {
                per_transaction,
                counter: counting.0.name().to_string(),
                short,
                long,
                functions,
            }),
            output: Some(job.output("count-long")),
        }))
    }

    /// Warms the server up and fits `lengths` to how long a transaction
    /// takes under the counter ([`Lengths::fitted`]): a first pgbench run
    /// of [`PROBE`] transactions a client, then timed runs, each about 3 s
    /// longer than the one before at that one's rate, until one takes
    /// 1.5 s more; their difference times a transaction ([`probe_told`]),
    /// with what every run pays once taken out. A workload fast enough to
    /// keep its lengths gets the rest of its warm-up after them. A
    /// transaction that takes a second under the counter is then warmed
    /// up in seconds, not in the minutes the whole warm-up would take. The
    /// first fit of a workload is kept for every later run, in this lab
    /// and in the work dir's later ones ([`fits`]), and the timed runs
    /// past the first are made only for it. A pgbench that refuses
    /// `--random-seed` is remembered, and its runs go unseeded.
    fn warm_up(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        lengths: Lengths,
    ) -> anyhow::Result<Lengths> {
        let first = lengths.warmup.min(PROBE);
        let warming = Instant::now();
        match self.window(running, job, counting, ("warmup1", first)) {
            Err(e) if bench::refused_random_seed(&format!("{e:#}")) => {
                self.without_random_seed.insert(job.pgbench.clone());
                return self.warm_up(running, job, counting, lengths);
            }
            other => other?,
        };
        let first = (first, warming.elapsed().as_secs_f64());
        let key = fits::key(&self.options, job.spec.clients, lengths);
        let (fitted, warmed) = match self.fits.get(&key)? {
            Some(fitted) => (fitted, first.0),
            None => {
                let (each, warmed) = self.time_a_transaction(running, job, counting, first)?;
                let fitted = Lengths {
                    warmup: lengths.warmup,
                    ..lengths.fitted(each)
                };
                self.fits.keep(key, fitted)?;
                (fitted, warmed)
            }
        };
        if fitted == lengths && lengths.warmup > warmed {
            let rest = lengths.warmup - warmed;
            self.more_warm_up(running, job, counting, ("warmup-rest", rest))?;
        }
        Ok(fitted)
    }

    /// The seconds a transaction takes under the counter, from timed
    /// warm-up runs after `first` ([`next_probe`]), and the transactions
    /// a client they and `first` made. Past [`MAX_PROBES`] runs the last
    /// one's own rate, its fixed costs in it, is taken: a dearer
    /// transaction and shorter runs than it should be, never longer ones.
    fn time_a_transaction(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        first: (u64, f64),
    ) -> anyhow::Result<(f64, u64)> {
        let (mut latest, mut warmed) = (first, first.0);
        for probe in 2..=MAX_PROBES {
            let more = next_probe(latest);
            let timing = Instant::now();
            self.more_warm_up(running, job, counting, (&format!("warmup{probe}"), more))?;
            let timed = (more, timing.elapsed().as_secs_f64());
            warmed += more;
            if let Some(each) = probe_told(latest, timed) {
                return Ok((each, warmed));
            }
            latest = timed;
        }
        Ok((latest.1 / latest.0.max(1) as f64, warmed))
    }

    /// A warm-up run past the first (which [`Runs::count_windows`]
    /// counts), counted in the totals as one.
    fn more_warm_up(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        (name, per_client): (&str, u64),
    ) -> anyhow::Result<()> {
        self.totals.runs += 1;
        self.totals.warmup_runs += 1;
        self.window(running, job, counting, (name, per_client))?;
        Ok(())
    }

    /// One pgbench run of `per_client` transactions a client, and what
    /// the processes it started counted.
    fn window(
        &self,
        running: &dyn Session,
        job: &RunJob,
        (counter, launcher): (&dyn Counter, &Launcher),
        (name, per_client): (&str, u64),
    ) -> anyhow::Result<(Window, bench::PgbenchReport, BTreeMap<String, u64>)> {
        let before: BTreeSet<u32> = running.server_processes().into_iter().collect();
        let counted_before: BTreeSet<u32> = counter.ended(launcher)?.into_keys().collect();
        let conn = running.conn("postgres");
        let seed = (!self.without_random_seed.contains(&job.pgbench)).then_some(COUNTED_SEED);
        let args = bench::counted_args(&self.options, job.spec.clients, per_client, (&conn, seed));
        let out = job.output(name);
        let report =
            running.run_pgbench(&job.pgbench, &args, &job.pgbench_pin, &out, COUNTED_LIMIT)?;
        // The run's backends end after pgbench has gone; each writes its
        // counts as it ends.
        let deadline = Instant::now() + ENDING;
        loop {
            let left: Vec<u32> = (running.server_processes().into_iter())
                .filter(|pid| !before.contains(pid))
                .collect();
            if left.is_empty() {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the server's processes of a counted pgbench run had not ended {}s after it \
                 (process ids {left:?}, started while it ran)",
                ENDING.as_secs()
            );
            crate::proc::check_interrupt()?;
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut window = Window {
            transactions: report
                .transactions
                .unwrap_or(per_client * u64::from(job.spec.clients.max(1))),
            instructions: 0,
            processes: 0,
        };
        let mut pids = Vec::new();
        for (pid, n) in counter.ended(launcher)? {
            if !before.contains(&pid) && !counted_before.contains(&pid) {
                window.instructions += n;
                window.processes += 1;
                pids.push(pid);
            }
        }
        let functions = counter.functions(launcher, &pids)?;
        Ok((window, report, functions))
    }
}

/// Waits until the server's processes (`processes`) have stayed the same
/// for `settled`, for at most `limit`. The postmaster starts some of its
/// own processes (the logical replication launcher) after it says it is
/// ready, and under the counter on a busy machine that took seconds: one
/// that started after a pgbench run began would be taken for one of the
/// run's backends and waited for until the run failed, as it never ends.
/// A server whose processes cannot be listed is not waited for.
fn settle(
    processes: impl Fn() -> Vec<u32>,
    settled: Duration,
    limit: Duration,
) -> anyhow::Result<()> {
    let list = || processes().into_iter().collect::<BTreeSet<u32>>();
    let mut seen = list();
    if seen.is_empty() {
        return Ok(());
    }
    let (start, mut since) = (Instant::now(), Instant::now());
    while since.elapsed() < settled && start.elapsed() < limit {
        crate::proc::check_interrupt()?;
        std::thread::sleep(settled / 20);
        let now = list();
        if now != seen {
            (seen, since) = (now, Instant::now());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_process_the_server_starts_late_is_waited_for_before_the_first_run() {
        // The launcher comes up 5 polls after the server said it was ready.
        let (polls, appeared) = (Cell::new(0), Cell::new(None));
        let processes = || {
            polls.set(polls.get() + 1);
            if polls.get() <= 5 {
                return vec![1, 2];
            }
            appeared.set(appeared.get().or(Some(Instant::now())));
            vec![3, 1, 2]
        };
        let settled = Duration::from_millis(100);
        settle(processes, settled, Duration::from_secs(10)).unwrap();
        let waited = appeared.get().expect("the late process was seen").elapsed();
        assert!(
            waited >= settled,
            "settled {waited:?} after the late process"
        );
        // Never settling ends at the limit; nothing to list ends at once.
        let changing = Cell::new(0u32);
        let limit = Duration::from_millis(300);
        let start = Instant::now();
        settle(
            || {
                changing.set(changing.get() + 1);
                vec![changing.get()]
            },
            Duration::from_secs(10),
            limit,
        )
        .unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        let start = Instant::now();
        settle(Vec::new, Duration::from_secs(10), Duration::from_secs(10)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
