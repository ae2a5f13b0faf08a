//! One measured run of a built commit: data, server, warm-ups, pgbench.
//!
//! The bookkeeping of a run is where a lab quietly goes wrong: which copy
//! of the data a run may reuse (a read-only workload leaves it as it was;
//! a write workload and a failed run do not), when a template is made,
//! what counts as a warm-up, which failures end the hunt (the disk) and
//! which only the run (a crash). It is written here against [`Machinery`],
//! the processes it starts, so it is tested with a fake; the real
//! machinery is PostgreSQL's `initdb`, `cp`, `pg_ctl` and pgbench.

use crate::bench::{self, Builtin, Conn, PgbenchOptions, PgbenchReport, instruments};
use crate::core::why::{Instrumented, InstrumentedRun, WaitEvents};
use crate::lab::RunSpec;
use crate::model::{LabTotals, Measurement, RunOutcome};
use crate::placement::Pin;
use crate::server::{self, BenchError, DataTemplate, Server, ServerError, TemplateSpec};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The processes a run starts.
pub trait Machinery {
    /// The data template for `spec`, made first when missing; and whether
    /// it was made now.
    fn ensure_template(&mut self, spec: &TemplateSpec)
    -> Result<(DataTemplate, bool), ServerError>;
    /// A fresh copy of `template` at `data`.
    fn fresh_copy(&mut self, template: &DataTemplate, data: &Path) -> Result<(), ServerError>;
    /// Starts `server` and waits until it accepts connections.
    fn start(&mut self, server: Server) -> Result<Box<dyn Session>, ServerError>;
}

/// A started server.
pub trait Session {
    fn conn(&self, dbname: &str) -> Conn;
    /// Runs pgbench against the server on `pin`'s CPUs, its output kept
    /// in `out`.
    fn run_pgbench(
        &self,
        pgbench: &Path,
        args: &[String],
        pin: &Pin,
        out: &Path,
        limit: Duration,
    ) -> Result<PgbenchReport, BenchError>;
    fn stop(self: Box<Self>) -> Result<(), ServerError>;
    /// The postmaster's process id, for a profiler to find the server's
    /// processes.
    fn server_pid(&self) -> Option<u32> {
        None
    }
    /// The server's processes now: the postmaster's children and theirs
    /// (a counted run counts those a pgbench run started).
    fn server_processes(&self) -> Vec<u32> {
        self.server_pid()
            .map(|pid| {
                let mut tree = crate::perf::record::process_tree(pid);
                tree.retain(|p| *p != pid);
                tree
            })
            .unwrap_or_default()
    }
    /// Whether the postmaster sleeps, waiting for connections or its
    /// children: `None` where that cannot be told.
    fn server_asleep(&self) -> Option<bool> {
        self.server_pid().and_then(crate::perf::record::asleep)
    }
    /// The CPU seconds of the server's processes that have ended (those
    /// the postmaster has waited for): `None` where that cannot be read.
    fn ended_processes_seconds(&self) -> Option<f64> {
        self.server_pid()
            .and_then(crate::perf::record::reaped_children_seconds)
    }
    /// Starts sampling the client backends' wait events into `out`;
    /// `Err` inside says why this server has none (before 9.6).
    fn sample_wait_events(
        &self,
        out: &Path,
    ) -> Result<Result<Box<dyn WaitSampler>, String>, ServerError> {
        let _ = out;
        Ok(Err("this server's wait events cannot be sampled".into()))
    }
}

/// A running wait-event sampler.
pub trait WaitSampler {
    /// Stops it; the samples counted by `Type:Event`.
    fn finish(self: Box<Self>) -> Result<BTreeMap<String, u64>, ServerError>;
}

/// The hook a CPU profiler plugs into: told the postmaster's PID once the
/// server of an instrumented run is up and warmed, just before its
/// measured run of `seconds`, and asked for what it recorded after it.
/// What it returns goes, as it is, into the side's profile in the "why"
/// result.
pub trait ServerProfiler {
    fn start(&mut self, postmaster_pid: u32, seconds: u32) -> anyhow::Result<()>;
    fn finish(&mut self) -> anyhow::Result<serde_json::Value>;
}

/// PostgreSQL's own programs.
pub struct RealMachinery;

impl Machinery for RealMachinery {
    fn ensure_template(
        &mut self,
        spec: &TemplateSpec,
    ) -> Result<(DataTemplate, bool), ServerError> {
        DataTemplate::ensure(spec)
    }

    fn fresh_copy(&mut self, template: &DataTemplate, data: &Path) -> Result<(), ServerError> {
        server::fresh_copy(template, data).map(|_| ())
    }

    fn start(&mut self, server: Server) -> Result<Box<dyn Session>, ServerError> {
        Ok(Box::new(server.start()?))
    }
}

impl Session for server::RunningServer {
    fn conn(&self, dbname: &str) -> Conn {
        server::RunningServer::conn(self, dbname)
    }

    fn run_pgbench(
        &self,
        pgbench: &Path,
        args: &[String],
        pin: &Pin,
        out: &Path,
        limit: Duration,
    ) -> Result<PgbenchReport, BenchError> {
        server::RunningServer::run_pgbench(self, pgbench, args, pin, out, limit)
    }

    fn stop(self: Box<Self>) -> Result<(), ServerError> {
        server::RunningServer::stop(*self)
    }

    fn server_pid(&self) -> Option<u32> {
        Some(self.pid())
    }

    fn sample_wait_events(
        &self,
        out: &Path,
    ) -> Result<Result<Box<dyn WaitSampler>, String>, ServerError> {
        Ok(
            match server::RunningServer::sample_wait_events(self, out)? {
                server::waits::Sampling::Started(s) => Ok(s),
                server::waits::Sampling::Unavailable(why) => Err(why),
            },
        )
    }
}

impl WaitSampler for server::waits::WaitSampler {
    fn finish(self: Box<Self>) -> Result<BTreeMap<String, u64>, ServerError> {
        server::waits::WaitSampler::finish(*self)
    }
}

/// What one run is made of.
pub struct RunJob<'a> {
    pub template: &'a TemplateSpec,
    /// The server to start; its data directory gets the fresh copy.
    pub server: Server,
    pub pgbench: PathBuf,
    /// CPUs and memory node of pgbench.
    pub pgbench_pin: Pin,
    pub spec: RunSpec,
    /// pgbench's output of warm-up `n` goes to `<out>-warmup<n>.txt`, that
    /// of the measured run to `<out>-run.txt`.
    pub out: PathBuf,
    /// Instruments the measured run when given: per-statement latencies,
    /// pgbench's transaction log under this prefix (in a folder pgbench's
    /// user may write), wait events sampled into `<out>-waits.txt`.
    pub transaction_log: Option<PathBuf>,
    /// A plain run's transaction log: its prefix, and the share of
    /// transactions logged (`--sampling-rate`), read for latency
    /// percentiles and removed.
    pub sampled_log: Option<(PathBuf, f64)>,
}

impl RunJob<'_> {
    fn output(&self, what: &str) -> PathBuf {
        let mut name = self.out.clone().into_os_string();
        name.push(format!("-{what}.txt"));
        PathBuf::from(name)
    }
}

/// Makes runs, and counts what they cost.
pub struct Runs {
    machinery: Box<dyn Machinery>,
    options: PgbenchOptions,
    /// Templates made or found, by their folder.
    templates: HashMap<PathBuf, DataTemplate>,
    /// Templates whose setup SQL failed, by their folder: the SQL and the
    /// version are what they were, so every later run fails the same way
    /// without making the template again. Holds the SQL's path and psql's
    /// words.
    failed_setups: HashMap<PathBuf, (PathBuf, String)>,
    /// The commit's install (`bin`) that made each template made here.
    made_by: HashMap<PathBuf, PathBuf>,
    /// Templates a commit's own programs made, after its server did not
    /// start on the one it shares with other commits: by that one's folder
    /// and the commit's `bin`.
    own: HashMap<(PathBuf, PathBuf), TemplateSpec>,
    /// The template the data directory is a copy of, not yet written to.
    fresh_copy_of: Option<DataTemplate>,
    /// Whether the data folder was checked for copies that share blocks.
    copies_checked: bool,
    /// pgbench programs that refused `--log-prefix` (before 10): their
    /// instrumented runs go without the transaction log.
    without_log_prefix: HashSet<PathBuf>,
    /// pgbench programs that refused `--random-seed` (before 11): their
    /// counted runs draw unseeded.
    without_random_seed: HashSet<PathBuf>,
    /// The lengths the first counted run of each workload fitted: every
    /// later counted run keeps them, so that the transactions between its
    /// short and long runs are the same ones, drawn from the same seed.
    fits: fits::Fits,
    totals: LabTotals,
}

impl Runs {
    pub fn new(machinery: Box<dyn Machinery>, options: PgbenchOptions) -> Runs {
        Runs {
            machinery,
            options,
            templates: HashMap::new(),
            failed_setups: HashMap::new(),
            made_by: HashMap::new(),
            own: HashMap::new(),
            fresh_copy_of: None,
            copies_checked: false,
            without_log_prefix: HashSet::new(),
            without_random_seed: HashSet::new(),
            fits: fits::Fits::default(),
            totals: LabTotals::default(),
        }
    }

    /// The template the data directory is still an unwritten copy of,
    /// when the workload only reads: a later process may reuse the copy
    /// ([`Runs::with_unwritten_copy`]), as runs of one process do.
    pub fn unwritten_copy(&self) -> Option<&DataTemplate> {
        self.fresh_copy_of.as_ref().filter(|_| self.read_only())
    }

    /// Keeps the lengths counted runs are fitted to in `file`, where the
    /// work dir's later labs find them ([`fits`]).
    pub fn keeping_fits(mut self, file: PathBuf) -> Runs {
        self.fits = fits::Fits::kept_in(file);
        self
    }

    /// Takes the data directory as an unwritten copy of `template`, as an
    /// earlier process's [`Runs::unwritten_copy`] said it was; used only
    /// by a read-only workload of the same template.
    pub fn with_unwritten_copy(mut self, template: Option<DataTemplate>) -> Runs {
        self.fresh_copy_of = template;
        self
    }

    /// What runs and templates cost so far (builds are not counted here).
    pub fn totals(&self) -> LabTotals {
        self.totals
    }

    /// The template of `spec`, made (and counted) the first time a run
    /// needs it.
    fn template(&mut self, spec: &TemplateSpec) -> Result<DataTemplate, ServerError> {
        if let Some(t) = self.templates.get(&spec.dir) {
            return Ok(t.clone());
        }
        if let Some((path, tail)) = self.failed_setups.get(&spec.dir) {
            let (path, tail) = (path.clone(), tail.clone());
            return Err(ServerError::SetupFailed { path, tail });
        }
        let started = Instant::now();
        let (template, built) = match self.machinery.ensure_template(spec) {
            Ok(made) => made,
            Err(ServerError::SetupFailed { path, tail }) => {
                let failed = (path.clone(), tail.clone());
                self.failed_setups.insert(spec.dir.clone(), failed);
                return Err(ServerError::SetupFailed { path, tail });
            }
            Err(e) => return Err(e),
        };
        if built {
            self.made_by.insert(spec.dir.clone(), spec.bin.clone());
            self.totals.setup.templates += 1;
            self.totals.setup.template_seconds += started.elapsed().as_secs_f64();
        }
        self.templates.insert(spec.dir.clone(), template.clone());
        Ok(template)
    }

    /// A read-only workload leaves the data as it found it, so one copy
    /// serves every run of the same data format; a copy costs as much as
    /// `pgbench -i` on a file system without reflinks.
    fn read_only(&self) -> bool {
        self.options.script.is_none() && self.options.builtin == Some(Builtin::SelectOnly)
    }

    /// One server start on a fresh (or still unwritten) copy of the data,
    /// the warm-ups, one measured run. A run that fails is an outcome; an
    /// error is trouble the hunt cannot go on with (the disk).
    pub fn measure(&mut self, job: RunJob) -> anyhow::Result<RunOutcome> {
        Ok(self.measure_with(job, None)?.0)
    }

    /// [`Runs::measure`] with the job's instruments on, and `profiler`
    /// told where the server runs.
    pub fn measure_instrumented(
        &mut self,
        job: RunJob,
        profiler: Option<&mut dyn ServerProfiler>,
    ) -> anyhow::Result<Instrumented> {
        anyhow::ensure!(
            job.transaction_log.is_some(),
            "an instrumented run needs a folder for pgbench's transaction log"
        );
        let clients = job.spec.clients;
        let (outcome, extras) = self.measure_with(job, profiler)?;
        Ok(match (outcome, extras) {
            (RunOutcome::Measured(m), Some(x)) => Instrumented::Measured(InstrumentedRun {
                clients,
                tps: m.tps,
                statements: x.statements,
                latency: x.latency,
                waits: x.waits,
                output: m.output,
                profile: x.profile,
            }),
            (RunOutcome::Failed { reason }, _) => Instrumented::Failed(reason),
            (RunOutcome::Measured(_), None) => {
                Instrumented::Failed("the run gave no instrument readings".into())
            }
        })
    }

    fn measure_with(
        &mut self,
        job: RunJob,
        profiler: Option<&mut dyn ServerProfiler>,
    ) -> anyhow::Result<(RunOutcome, Option<Extras>)> {
        let running = match self.start_on_copy(&job)? {
            Ok(r) => r,
            Err(failed) => return Ok((failed, None)),
        };
        let outcome = self.pgbench_runs(running.as_ref(), &job, profiler);
        running.stop()?;
        Ok(outcome)
    }

    /// The job's server started on a fresh (or still unwritten) copy of
    /// its template, or of one made with the commit's own programs when
    /// its server did not start on the shared one ([`Runs::own_template`]);
    /// the run's outcome when neither started.
    pub(super) fn start_on_copy(
        &mut self,
        job: &RunJob,
    ) -> anyhow::Result<Result<Box<dyn Session>, RunOutcome>> {
        let shared = self.own_or_shared(job.template);
        Ok(Ok(match self.start_on(&shared, job)? {
            Start::Running(r) => r,
            Start::NoTemplate(e) => return Ok(Err(failed(&e))),
            Start::NotStarted(e) => match self.own_template(&shared) {
                None => return Ok(Err(failed(&e))),
                Some(own) => {
                    eprintln!(
                        "pgbisect: note: the server of {} did not start on the data template \
                         {}, which other programs made ({e:#}); making one with its own",
                        own.bin.display(),
                        shared.dir.display()
                    );
                    match self.start_on(&own, job)? {
                        Start::Running(r) => r,
                        Start::NoTemplate(e) | Start::NotStarted(e) => {
                            return Ok(Err(failed(&e)));
                        }
                    }
                }
            },
        }))
    }

    /// A server started on a fresh (or still unwritten) copy of the
    /// template of `spec`, made first when it is missing; or why not. An
    /// error ends the hunt (the disk, a refused folder).
    fn start_on(&mut self, spec: &TemplateSpec, job: &RunJob) -> anyhow::Result<Start> {
        let template = match self.template(spec) {
            Ok(t) => t,
            Err(e @ ServerError::Refused { .. }) => return Err(e.into()),
            Err(e) => return Ok(Start::NoTemplate(e.into())),
        };
        let setup = Instant::now();
        let data = job.server.data_dir.clone();
        if !self.read_only() || self.fresh_copy_of.as_ref() != Some(&template) {
            self.fresh_copy_of = None;
            self.machinery.fresh_copy(&template, &data)?;
            self.fresh_copy_of = Some(template);
            if !self.read_only() && !self.copies_checked {
                self.copies_checked = true;
                note_full_copies(&data);
            }
        }
        let started = self.machinery.start(job.server.clone());
        self.totals.setup.setups += 1;
        self.totals.setup.setup_seconds += setup.elapsed().as_secs_f64();
        match started {
            Ok(r) => Ok(Start::Running(r)),
            Err(e) if e.ends_the_hunt() => Err(e.into()),
            Err(e) => {
                self.fresh_copy_of = None;
                Ok(Start::NotStarted(e.into()))
            }
        }
    }

    /// The template a run of `spec`'s commit starts from: the one made
    /// with its own programs when its server did not start on the shared
    /// one before.
    fn own_or_shared(&self, spec: &TemplateSpec) -> TemplateSpec {
        let key = (spec.dir.clone(), spec.bin.clone());
        self.own.get(&key).cloned().unwrap_or_else(|| spec.clone())
    }

    /// A template of the commit's own (initdb, `pgbench -i` and the setup
    /// SQL of its own install), beside the shared one of `spec`, when its
    /// server did not start on that one and other programs made it (an
    /// earlier pgbisect, another commit of the same key): a data directory
    /// of a WAL or control-file format the key missed makes the server
    /// stop at start, which is the template's fault, not the commit's.
    /// None when the commit made it itself, or already has its own: then
    /// the commit is broken.
    fn own_template(&mut self, spec: &TemplateSpec) -> Option<TemplateSpec> {
        let key = (spec.dir.clone(), spec.bin.clone());
        if self.own.contains_key(&key) || self.made_by.get(&spec.dir) == Some(&spec.bin) {
            return None;
        }
        let suffix = format!(
            "-own{}",
            &server::digest(spec.bin.as_os_str().as_bytes())[..8]
        );
        let own_pgbench = spec.bin.join("pgbench");
        let own = TemplateSpec {
            dir: server::sibling(&spec.dir, &suffix),
            pgbench: if own_pgbench.is_file() {
                own_pgbench
            } else {
                spec.pgbench.clone()
            },
            ..spec.clone()
        };
        self.own.insert(key, own.clone());
        Some(own)
    }

    /// The warm-ups, then the measured run.
    fn pgbench_runs(
        &mut self,
        running: &dyn Session,
        job: &RunJob,
        profiler: Option<&mut dyn ServerProfiler>,
    ) -> (RunOutcome, Option<Extras>) {
        let conn = running.conn("postgres");
        let opts = &self.options;
        let started = Instant::now();
        // A length the hunt chose replaces the profile's; warm-ups not
        // given their own length last as long as a run, as in the profile.
        let seconds = job.spec.seconds.unwrap_or(opts.duration_secs);
        let warmup = opts.warmup_secs.unwrap_or(seconds);
        for w in 1..=opts.warmup_runs {
            let args = bench::run_args(opts, job.spec.clients, warmup, &conn);
            let limit = server::time_limit(warmup);
            self.totals.runs += 1;
            self.totals.warmup_runs += 1;
            let out = job.output(&format!("warmup{w}"));
            let result = running.run_pgbench(&job.pgbench, &args, &job.pgbench_pin, &out, limit);
            if let Err(e) = result {
                self.fresh_copy_of = None;
                self.totals.bench_seconds += started.elapsed().as_secs_f64();
                return (failed(&e.into()), None);
            }
        }
        let limit = server::time_limit(seconds);
        let out = job.output("run");
        let watching = job
            .transaction_log
            .as_ref()
            .map(|_| Watching::start(running, job, profiler, seconds));
        let mut result = running.run_pgbench(
            &job.pgbench,
            &self.measured_args(job, seconds, &conn),
            &job.pgbench_pin,
            &out,
            limit,
        );
        if let Err(e) = &result
            && (job.transaction_log.is_some() || job.sampled_log.is_some())
            && instruments::refused_log_prefix(&format!("{e:#}"))
        {
            // An old pgbench: the same run again, without the log.
            self.without_log_prefix.insert(job.pgbench.clone());
            let args = self.measured_args(job, seconds, &conn);
            result = running.run_pgbench(&job.pgbench, &args, &job.pgbench_pin, &out, limit);
        }
        self.totals.runs += 1;
        self.totals.bench_seconds += started.elapsed().as_secs_f64();
        let extras = watching
            .zip(job.transaction_log.as_deref())
            .map(|(w, log)| w.finish(&out, log));
        let percentiles = job.sampled_log.as_ref().and_then(|(prefix, _)| {
            instruments::log_percentiles(&instruments::log_files(prefix))
                .ok()
                .flatten()
        });
        match result {
            Ok(report) => (
                RunOutcome::Measured(Measurement {
                    instructions: None,
                    tps: report.tps,
                    latency_ms: report.latency_ms,
                    failed_transactions: report.failed_transactions,
                    percentiles,
                    output: Some(out),
                }),
                extras,
            ),
            Err(e) => {
                self.fresh_copy_of = None;
                (failed(&e.into()), None)
            }
        }
    }
}

impl Runs {
    /// The measured run's arguments: instrumented when the job asks for
    /// it (the transaction log only where this pgbench takes a prefix).
    fn measured_args(&self, job: &RunJob, seconds: u32, conn: &Conn) -> Vec<String> {
        let mut args = bench::run_args(&self.options, job.spec.clients, seconds, conn);
        let takes_prefix = !self.without_log_prefix.contains(&job.pgbench);
        // Before the database name, which pgbench wants last.
        let db = args.pop();
        if let Some(log_prefix) = &job.transaction_log {
            let prefix = takes_prefix.then_some(log_prefix);
            args.extend(instruments::args(prefix.map(PathBuf::as_path)));
        } else if let Some((prefix, share)) = job.sampled_log.as_ref().filter(|_| takes_prefix) {
            args.extend(instruments::sampled_log_args(prefix, *share));
        }
        args.extend(db);
        args
    }
}

/// How a server start on a copy of a template went.
enum Start {
    Running(Box<dyn Session>),
    /// The template could not be made: the run fails.
    NoTemplate(anyhow::Error),
    /// The server did not start on the copy.
    NotStarted(anyhow::Error),
}

/// What an instrumented run gave besides its throughput.
struct Extras {
    statements: Vec<crate::core::why::StatementLatency>,
    latency: Option<crate::core::why::Percentiles>,
    waits: WaitEvents,
    profile: Option<serde_json::Value>,
}

/// The instruments that watch the server during a measured run.
struct Watching<'p> {
    sampler: Result<Box<dyn WaitSampler>, String>,
    profiler: Option<&'p mut dyn ServerProfiler>,
    profiler_failed: Option<String>,
}

impl<'p> Watching<'p> {
    fn start(
        running: &dyn Session,
        job: &RunJob,
        mut profiler: Option<&'p mut dyn ServerProfiler>,
        seconds: u32,
    ) -> Watching<'p> {
        let sampler = match running.sample_wait_events(&job.output("waits")) {
            Ok(s) => s,
            Err(e) => Err(format!("the wait-event sampler failed: {e}")),
        };
        let mut profiler_failed = None;
        if let (Some(p), Some(pid)) = (profiler.as_deref_mut(), running.server_pid())
            && let Err(e) = p.start(pid, seconds)
        {
            profiler_failed = Some(format!("{e:#}"));
        }
        Watching {
            sampler,
            profiler,
            profiler_failed,
        }
    }

    fn finish(self, out: &Path, log_prefix: &Path) -> Extras {
        let waits = match self.sampler {
            Ok(s) => match s.finish() {
                Ok(counts) => WaitEvents::Sampled(counts),
                Err(e) => WaitEvents::Unavailable(format!("the wait-event sampler failed: {e}")),
            },
            Err(why) => WaitEvents::Unavailable(why),
        };
        let profile = match (self.profiler, self.profiler_failed) {
            (_, Some(why)) => Some(serde_json::json!({ "error": why })),
            (Some(p), None) => Some(
                p.finish()
                    .unwrap_or_else(|e| serde_json::json!({ "error": format!("{e:#}") })),
            ),
            (None, None) => None,
        };
        let text = std::fs::read_to_string(out).unwrap_or_default();
        Extras {
            statements: instruments::statement_latencies(&text),
            latency: instruments::log_percentiles(&instruments::log_files(log_prefix))
                .ok()
                .flatten(),
            waits,
            profile,
        }
    }
}

pub(super) fn failed(err: &anyhow::Error) -> RunOutcome {
    RunOutcome::Failed {
        reason: format!("{err:#}"),
    }
}

/// Says once when every run of a write workload pays for a full copy of
/// the data directory: on a file system without shared-block copies
/// (ext4), a copy at scale 100 costs about as much as `pgbench -i`.
fn note_full_copies(data: &Path) {
    let Some(dir) = data.parent() else { return };
    if server::shares_blocks(dir) {
        return;
    }
    eprintln!(
        "pgbisect: note: {} cannot share blocks between copies (no reflink, as on ext4): \
         every run of this write workload copies the whole data directory; \
         a work dir on XFS (reflink=1) or btrfs makes that copy nearly free",
        dir.display()
    );
}

mod counted;
pub mod fits;
#[cfg(test)]
mod tests;
