//! One measured run of a built commit: data, server, warm-ups, pgbench.
//!
//! The bookkeeping of a run is where a lab quietly goes wrong: which copy
//! of the data a run may reuse (a read-only workload leaves it as it was;
//! a write workload and a failed run do not), when a template is made,
//! what counts as a warm-up, which failures end the hunt (the disk) and
//! which only the run (a crash). It is written here against [`Machinery`],
//! the processes it starts, so it is tested with a fake; the real
//! machinery is PostgreSQL's `initdb`, `cp`, `pg_ctl` and pgbench.

use crate::bench::{self, Builtin, Conn, PgbenchOptions, PgbenchReport};
use crate::lab::RunSpec;
use crate::model::{LabTotals, Measurement, RunOutcome};
use crate::placement::Pin;
use crate::server::{self, BenchError, DataTemplate, Server, ServerError, TemplateSpec};
use std::collections::HashMap;
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
    /// The template the data directory is a copy of, not yet written to.
    fresh_copy_of: Option<DataTemplate>,
    /// Whether the data folder was checked for copies that share blocks.
    copies_checked: bool,
    totals: LabTotals,
}

impl Runs {
    pub fn new(machinery: Box<dyn Machinery>, options: PgbenchOptions) -> Runs {
        Runs {
            machinery,
            options,
            templates: HashMap::new(),
            fresh_copy_of: None,
            copies_checked: false,
            totals: LabTotals::default(),
        }
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
        let started = Instant::now();
        let (template, built) = self.machinery.ensure_template(spec)?;
        if built {
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
        let template = match self.template(job.template) {
            Ok(t) => t,
            Err(e) => return Ok(failed(&e.into())),
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
        let running = match started {
            Ok(r) => r,
            Err(e @ ServerError::Io { .. }) => return Err(e.into()),
            Err(e) => {
                self.fresh_copy_of = None;
                return Ok(failed(&e.into()));
            }
        };
        let outcome = self.pgbench_runs(running.as_ref(), &job);
        running.stop()?;
        Ok(outcome)
    }

    /// The warm-ups, then the measured run.
    fn pgbench_runs(&mut self, running: &dyn Session, job: &RunJob) -> RunOutcome {
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
                return failed(&e.into());
            }
        }
        let args = bench::run_args(opts, job.spec.clients, seconds, &conn);
        let limit = server::time_limit(seconds);
        let out = job.output("run");
        let result = running.run_pgbench(&job.pgbench, &args, &job.pgbench_pin, &out, limit);
        self.totals.runs += 1;
        self.totals.bench_seconds += started.elapsed().as_secs_f64();
        match result {
            Ok(report) => RunOutcome::Measured(Measurement {
                tps: report.tps,
                latency_ms: report.latency_ms,
                failed_transactions: report.failed_transactions,
                output: Some(out),
            }),
            Err(e) => {
                self.fresh_copy_of = None;
                failed(&e.into())
            }
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

#[cfg(test)]
mod tests;
