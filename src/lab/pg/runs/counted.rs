//! A counted run: the server started under a counter, pgbench made to run
//! fixed numbers of transactions, and the instructions of the processes
//! each pgbench run started read once they ended (see `crate::counts`).

use super::{RunJob, Runs, Session, failed, fits};
use crate::bench;
use crate::core::counts::{
    Counted, Lengths, MAX_PROBES, Window, functions_per_transaction, next_probe, pace,
    per_transaction, probe_told,
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

/// How often [`settle`] looks, and how many looks in a row must find the
/// postmaster asleep and its processes the same for it to stop early.
const SETTLE_POLL: Duration = Duration::from_millis(50);
const ASLEEP_LOOKS: u32 = 4;

/// The seed of every counted pgbench run's random draws (`--random-seed`).
const COUNTED_SEED: u64 = 1;

/// A counted pgbench run may take this long: the counter slows the
/// server down tens of times, and a transaction count has no clock.
const COUNTED_LIMIT: Duration = Duration::from_secs(1800);

impl Runs {
    /// One server start under `counter` (its launcher in the job's
    /// server), a warm-up, a short and a long run of `lengths`
    /// transactions per client (fitted to how long a transaction takes
    /// under the counter, [`Runs::fit`]): the instructions a transaction
    /// cost, or why the run gave none.
    pub fn count(
        &mut self,
        job: RunJob,
        counter: &dyn Counter,
        launcher: &Launcher,
        lengths: Lengths,
    ) -> anyhow::Result<RunOutcome> {
        let fitted = match self.fit(&job, (counter, launcher), lengths)? {
            Ok(fitted) => fitted,
            Err(failed) => return Ok(failed),
        };
        let counted = self.in_session(&job, |runs, running| {
            runs.count_windows(running, &job, (counter, launcher), (lengths, fitted))
        })?;
        Ok(counted.unwrap_or_else(|failed| failed))
    }

    /// `work` on a server started for `job` (on a fresh copy of its data
    /// where the last run wrote to it) once its processes have settled
    /// ([`settle`]), stopped after it: what `work` gave, or why the server
    /// did not start or `work` failed.
    fn in_session<T>(
        &mut self,
        job: &RunJob,
        work: impl FnOnce(&mut Runs, &dyn Session) -> anyhow::Result<T>,
    ) -> anyhow::Result<Result<T, RunOutcome>> {
        let running = match self.start_on_copy(job)? {
            Ok(r) => r,
            Err(failed) => return Ok(Err(failed)),
        };
        let started = Instant::now();
        let server = (|| running.server_processes(), || running.server_asleep());
        let outcome =
            settle(server, SETTLED, SETTLE_LIMIT).and_then(|()| work(self, running.as_ref()));
        self.totals.bench_seconds += started.elapsed().as_secs_f64();
        running.stop()?;
        Ok(outcome.map_err(|e| {
            self.fresh_copy_of = None;
            failed(&e)
        }))
    }

    fn count_windows(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        (given, lengths): (Lengths, Lengths),
    ) -> anyhow::Result<RunOutcome> {
        self.totals.runs += 3;
        self.totals.warmup_runs += 1;
        self.first_window(running, job, counting, given, "warmup1")?;
        if lengths == given && given.warmup > PROBE {
            let rest = given.warmup - PROBE;
            self.more_warm_up(running, job, counting, ("warmup-rest", rest))?;
        }
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

    /// `lengths` fitted to how long a transaction of `job`'s workload
    /// takes under the counter ([`Lengths::fitted`]), timed on a server
    /// started for that alone: a first pgbench run of [`PROBE`]
    /// transactions a client, then timed runs, each about 3 s longer than
    /// the one before at that one's rate, until one takes 1.5 s more;
    /// their difference times a transaction ([`probe_told`]), with what
    /// every run pays once taken out. A transaction that takes a second
    /// under the counter is then timed in seconds, not in the minutes the
    /// given lengths would take. The timed runs fill the server's buffers
    /// with the pages of their transactions, so they are not the warm-up
    /// of a counted run: every counted run starts its server afresh and
    /// makes the same runs, and its short and long run find the same
    /// buffers. The first fit of a workload is kept for every later run,
    /// in this lab and in the work dir's later ones ([`fits`]).
    fn fit(
        &mut self,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        lengths: Lengths,
    ) -> anyhow::Result<Result<Lengths, RunOutcome>> {
        let key = fits::key(&self.options, job.spec.clients, lengths);
        if let Some(kept) = self.fits.get(&key)? {
            return Ok(Ok(kept));
        }
        let timed = self.in_session(job, |runs, running| {
            runs.totals.runs += 1;
            runs.totals.warmup_runs += 1;
            let first = runs.first_window(running, job, counting, lengths, "fit1")?;
            runs.time_a_transaction(running, job, counting, first)
        })?;
        let each = match timed {
            Ok(each) => each,
            Err(failed) => return Ok(Err(failed)),
        };
        let fitted = Lengths {
            warmup: lengths.warmup,
            ..lengths.fitted(each)
        };
        self.fits.keep(key, fitted)?;
        Ok(Ok(fitted))
    }

    /// The first pgbench run on a counted server, of [`PROBE`]
    /// transactions a client (fewer where `lengths` warm up with fewer):
    /// its transactions and the seconds it took. A pgbench that refuses
    /// `--random-seed` is remembered, and its runs go unseeded.
    fn first_window(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        lengths: Lengths,
        name: &str,
    ) -> anyhow::Result<(u64, f64)> {
        let first = lengths.warmup.min(PROBE);
        match timed(running, || {
            self.window(running, job, counting, (name, first))
        }) {
            Err(e) if bench::refused_random_seed(&format!("{e:#}")) => {
                self.without_random_seed.insert(job.pgbench.clone());
                self.first_window(running, job, counting, lengths, name)
            }
            Err(e) => Err(e),
            Ok((_, seconds)) => Ok((first, seconds)),
        }
    }

    /// The seconds a transaction takes under the counter, from timed
    /// runs after `first` ([`next_probe`]). Past [`MAX_PROBES`] runs the
    /// last one's own rate, its fixed costs in it, is taken: a dearer
    /// transaction and shorter runs than it should be, never longer ones.
    fn time_a_transaction(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        counting: (&dyn Counter, &Launcher),
        first: (u64, f64),
    ) -> anyhow::Result<f64> {
        let mut latest = first;
        for probe in 2..=MAX_PROBES {
            let more = next_probe(latest);
            let name = format!("fit{probe}");
            let ((), seconds) = timed(running, || {
                self.more_warm_up(running, job, counting, (&name, more))
            })?;
            if let Some(each) = probe_told(latest, (more, seconds)) {
                return Ok(each);
            }
            latest = (more, seconds);
        }
        Ok(pace(latest))
    }

    /// A warm-up run past a server's first (which [`Runs::count_windows`]
    /// and [`Runs::fit`] count), counted in the totals as one.
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

/// What `run` (pgbench runs on `running`, each waited for until the
/// processes it started have ended) gave, and the seconds it took: the
/// CPU seconds those processes spent, read from what the postmaster has
/// reaped, or the wall clock's where that cannot be read. A busy machine
/// stretches the wall clock, not much the CPU a server process spends
/// under the counter: select-only's short run was fitted by the wall
/// clock to 2,971 transactions at one moment of a compile loop and to
/// 8,041 at a quieter one, and by the CPU to within 17% of an idle
/// machine's fit under one and two compile loops (BENCHMARKS). Runs
/// fitted by the wall clock under load would, on a quiet night, end
/// within their backend's first second.
fn timed<T>(
    running: &dyn Session,
    run: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(T, f64)> {
    let (cpu, wall) = (running.ended_processes_seconds(), Instant::now());
    let out = run()?;
    let seconds = match (cpu, running.ended_processes_seconds()) {
        (Some(before), Some(after)) if after >= before => after - before,
        _ => wall.elapsed().as_secs_f64(),
    };
    Ok((out, seconds))
}

/// Waits until the server's processes (`processes`) have stayed the same
/// for `settled`, for at most `limit`, or, sooner, until [`ASLEEP_LOOKS`]
/// looks in a row find them the same with the postmaster asleep
/// (`asleep`). The postmaster starts some of its own processes (the
/// logical replication launcher; on newer servers the WAL writer too)
/// after it says it is ready, and under the counter on a busy machine
/// that took seconds: one that started after a pgbench run began would be
/// taken for one of the run's backends and waited for until the run
/// failed, as it never ends. The postmaster starts them before it next
/// waits for connections, and while one is still to start it does not
/// sleep, so once it sleeps with the same processes look after look,
/// they are all there. Where its state cannot be read, the processes must
/// stay the same for `settled`. A server whose processes cannot be listed
/// is not waited for.
fn settle(
    (processes, asleep): (impl Fn() -> Vec<u32>, impl Fn() -> Option<bool>),
    settled: Duration,
    limit: Duration,
) -> anyhow::Result<()> {
    let list = || processes().into_iter().collect::<BTreeSet<u32>>();
    let mut seen = list();
    if seen.is_empty() {
        return Ok(());
    }
    let (start, mut since) = (Instant::now(), Instant::now());
    let mut asleep_looks = 0;
    while since.elapsed() < settled && start.elapsed() < limit {
        crate::proc::check_interrupt()?;
        std::thread::sleep(SETTLE_POLL.min(settled / 20));
        let now = list();
        if now != seen {
            (seen, since, asleep_looks) = (now, Instant::now(), 0);
        } else if asleep() == Some(true) {
            asleep_looks += 1;
            if asleep_looks >= ASLEEP_LOOKS {
                return Ok(());
            }
        } else {
            asleep_looks = 0;
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
        settle((processes, || None), settled, Duration::from_secs(10)).unwrap();
        let waited = appeared.get().expect("the late process was seen").elapsed();
        assert!(
            waited >= settled,
            "settled {waited:?} after the late process"
        );
        // Never settling ends at the limit; nothing to list ends at once.
        let changing = Cell::new(0u32);
        let limit = Duration::from_millis(300);
        let start = Instant::now();
        let changing_processes = || {
            changing.set(changing.get() + 1);
            vec![changing.get()]
        };
        settle(
            (changing_processes, || Some(true)),
            Duration::from_secs(10),
            limit,
        )
        .unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        let start = Instant::now();
        let nothing = (Vec::new, || None);
        settle(nothing, Duration::from_secs(10), Duration::from_secs(10)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_postmaster_asleep_with_the_same_processes_ends_the_wait_early() {
        let settled = Duration::from_secs(10);
        let start = Instant::now();
        settle((|| vec![1, 2], || Some(true)), settled, settled * 2).unwrap();
        let waited = start.elapsed();
        assert!(
            waited >= SETTLE_POLL * ASLEEP_LOOKS && waited < Duration::from_secs(2),
            "waited {waited:?}"
        );

        // The postmaster sleeps once before it starts its launcher, 3
        // looks in; the wait goes on past the launcher by as many looks.
        let looks = Cell::new(0);
        let appeared = Cell::new(None);
        let processes = || {
            looks.set(looks.get() + 1);
            if looks.get() <= 3 {
                return vec![1, 2];
            }
            appeared.set(appeared.get().or(Some(Instant::now())));
            vec![1, 2, 3]
        };
        settle((processes, || Some(true)), settled, settled * 2).unwrap();
        let after = appeared.get().expect("the launcher was seen").elapsed();
        assert!(after >= SETTLE_POLL * (ASLEEP_LOOKS - 1), "{after:?}");

        // A postmaster that is busy (or whose state cannot be read) is
        // waited for until its processes stay the same for `settled`.
        let settled = Duration::from_millis(400);
        for state in [Some(false), None] {
            let start = Instant::now();
            settle((|| vec![1, 2], || state), settled, settled * 10).unwrap();
            assert!(start.elapsed() >= settled, "{state:?}");
        }
    }
}
