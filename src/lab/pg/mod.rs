//! The real PostgreSQL lab: build a commit, start a private server on a
//! fresh copy of a data template, warm up, run pgbench once.
//!
//! Each measurement starts from the same data (a copy of a template made
//! once per data-directory format), so bloat from earlier runs never leaks
//! into later ones, and every server is stopped when its run ends, also on
//! error and interrupt.

mod ahead;
pub mod host;
mod key;
mod plan;
pub mod pool;
mod profiler;
pub mod runs;
pub mod setup;

use crate::bench::{self, PgbenchOptions};
use crate::build::{BuildOutcome, BuildSettings, Builder};
use crate::core::counts::Lengths;
use crate::core::why::Instrumented;
use crate::counts::Counter;
use crate::lab::{Lab, LabDirs, RunSpec};
use crate::machine::steady::{self, Watch};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use crate::placement::{Pin, Placement, PlacementSpec};
use crate::repo::{Repo, WorkTree};
use crate::server::{self, RunAs, ServerError, SocketDir, TemplateSpec, settings};
use crate::strays::{self, Marks};
use ahead::{Builds, GitWorkshop};
use anyhow::Context;
pub use key::{define_value, package_version};
pub use plan::{Place, RunPlan};
pub use profiler::PerfProfiler;
use runs::{RealMachinery, RunJob, Runs};
pub use runs::{ServerProfiler, WaitSampler};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Which pgbench drives the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgbenchChoice {
    /// The pgbench built from the good endpoint (or from the other one
    /// when its source says it is older), for every commit: one load
    /// generator for the whole hunt, old enough to talk to every server in
    /// the range (pgbench of 2025 cannot reach a 2016 server; 2015's
    /// reaches every later one, with pgbisect's argument order).
    Good,
    /// Each commit's own pgbench (client-side changes are measured too).
    Candidate,
    /// A pgbench binary given by path.
    Fixed(PathBuf),
}

impl PgbenchChoice {
    /// Parses `good`, `candidate` or `fixed:PATH`.
    pub fn parse(text: &str) -> Result<PgbenchChoice, String> {
        match text {
            "good" => Ok(PgbenchChoice::Good),
            "candidate" => Ok(PgbenchChoice::Candidate),
            _ => match text.strip_prefix("fixed:") {
                Some(p) if !p.is_empty() => Ok(PgbenchChoice::Fixed(PathBuf::from(p))),
                _ => Err(format!(
                    "pgbench = `{text}`: use `good`, `candidate` or `fixed:/path/to/pgbench`"
                )),
            },
        }
    }
}

/// Everything the lab needs besides the repository.
#[derive(Debug, Clone)]
pub struct PgLabConfig {
    /// Where builds, data and servers are kept.
    pub dirs: LabDirs,
    /// The private git work tree commits are checked out in.
    pub checkout: PathBuf,
    /// Where each run's full pgbench output is kept (one folder per hunt).
    pub runs_dir: PathBuf,
    pub options: PgbenchOptions,
    pub settings: Vec<(String, String)>,
    pub run_as: RunAs,
    pub pgbench: PgbenchChoice,
    pub build: BuildSettings,
    /// Installs kept in the cache.
    pub cache_size: usize,
    /// The share of transactions each measured run logs for latency
    /// percentiles; `None`: no log (pgbench's own average only).
    pub percentiles: Option<f64>,
    /// The good endpoint (its pgbench may drive every run).
    pub good: String,
    /// The bad endpoint: with the good one, the versions the profile's
    /// settings are checked against before anything is built.
    pub bad: String,
    /// The profile's placement rules, which a host applies to its own
    /// CPUs (here, `setups` holds what they gave).
    pub placement: PlacementSpec,
    /// Each client count's settings, `max_connections` and placement here,
    /// as the plan decided them.
    pub setups: setup::Setups,
    /// Checks of the machine between runs, kept for the report.
    pub watch: Watch,
}

/// Builds and benchmarks real PostgreSQL commits.
pub struct PgLab {
    cfg: PgLabConfig,
    /// The endpoint whose pgbench drives every run with [`PgbenchChoice::Good`].
    driver: String,
    repo: Repo,
    /// The checkout and builder, one build of which may run ahead.
    builds: Builds<GitWorkshop>,
    installs: HashMap<String, PathBuf>,
    template_keys: HashMap<String, String>,
    sockets: SocketDir,
    runs: Runs,
    /// The profile's settings as each built commit's server takes them.
    settings: HashMap<String, Vec<(String, String)>>,
    /// Notes about settings already shown, shown again in `describe`.
    notes: Vec<String>,
    /// Client counts whose machine limits were checked.
    limits_checked: HashSet<u32>,
    /// Pins of the server and pgbench, per client count.
    pins: HashMap<u32, (Pin, Pin)>,
    /// Records the server's CPU profile during instrumented runs.
    profiler: Option<Box<dyn ServerProfiler>>,
    /// What counts instructions in counted runs, and their lengths.
    counting: Option<(Box<dyn Counter>, Lengths)>,
    /// Marks the processes of each run, to stop what a run leaves running.
    marks: Marks,
}

impl PgLab {
    pub fn new(mut cfg: PgLabConfig, repo: Repo) -> anyhow::Result<PgLab> {
        let (good, bad) = (
            source_major(&repo, &cfg.good),
            source_major(&repo, &cfg.bad),
        );
        settings::check(&cfg.settings, good.zip(bad))?;
        // Newer pgbench cannot reach old servers, older reaches newer: the
        // older endpoint's drives the load (the bad one only when a
        // comparison names a newer commit first).
        let driver = match (good, bad) {
            (Some(good), Some(bad)) if bad < good => cfg.bad.clone(),
            _ => cfg.good.clone(),
        };
        if cfg.options.cpus.is_none() {
            cfg.options.cpus = std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok());
        }
        let dirs = [&cfg.dirs.logs, &cfg.dirs.templates, &cfg.dirs.data];
        for dir in dirs.into_iter().chain([&cfg.runs_dir]) {
            crate::folders::create_dir(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let marks = Marks::for_work_dir(&cfg.dirs.root);
        let reaped = stop_left_behind(&cfg.dirs, &marks)?;
        if reaped > 0 {
            eprintln!(
                "pgbisect: stopped {reaped} server(s) or process(es) an earlier run left behind"
            );
        }
        let worktree = WorkTree::open_or_create(&repo, &cfg.checkout)?;
        let mut builder = Builder::new(&cfg.dirs, cfg.build.clone(), cfg.cache_size)?;
        if cfg.pgbench == PgbenchChoice::Good {
            // Its pgbench drives every run: never evict it.
            builder.pin(&driver);
        }
        let sockets = SocketDir::create(&cfg.run_as)?;
        let runs = Runs::new(Box::new(RealMachinery), cfg.options.clone())
            .keeping_fits(cfg.dirs.root.join(runs::fits::FILE));
        let clients = cfg.options.clients;
        PgLab {
            cfg,
            marks,
            driver,
            repo,
            builds: Builds::new(GitWorkshop { worktree, builder }),
            installs: HashMap::new(),
            template_keys: HashMap::new(),
            sockets,
            runs,
            settings: HashMap::new(),
            notes: Vec::new(),
            limits_checked: HashSet::new(),
            pins: HashMap::new(),
            profiler: None,
            counting: None,
        }
        .checked_for_clients(clients)
    }

    /// Counts instructions with `counter` in counted runs
    /// ([`Lab::counted_run`]), `lengths` transactions a client.
    pub fn with_counter(mut self, counter: Box<dyn Counter>, lengths: Lengths) -> PgLab {
        self.counting = Some((counter, lengths));
        self
    }

    /// Checks, once for each client count, that the machine lets that many
    /// connections be made, and says when `max_connections` is raised.
    fn checked_for_clients(mut self, clients: u32) -> anyhow::Result<PgLab> {
        self.check_clients(clients)?;
        Ok(self)
    }

    fn check_clients(&mut self, clients: u32) -> anyhow::Result<()> {
        if !self.limits_checked.insert(clients) {
            return Ok(());
        }
        let setup = self.cfg.setups.at(clients)?.clone();
        check_machine(&self.cfg.options, clients, setup.max_connections)?;
        if let Some(note) = setup.raised {
            self.note(note);
        }
        Ok(())
    }

    /// Shows a note about the settings once.
    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            eprintln!("pgbisect: note: {note}");
            self.notes.push(note);
        }
    }

    /// Data-directory format of a commit (see [`key::template_key`]),
    /// read from its tree.
    fn template_key(&self, commit: &str) -> anyhow::Result<String> {
        let setup = crate::server::setup_digest(&self.cfg.options);
        key::template_key(
            |path| Ok(self.repo.read_file(commit, path)?),
            self.cfg.options.scale,
            setup.as_deref(),
            &self.cfg.build,
        )
    }

    fn pgbench_for(&self, commit: &str) -> anyhow::Result<PathBuf> {
        Ok(match &self.cfg.pgbench {
            PgbenchChoice::Candidate => self.prefix(commit)?.join("bin/pgbench"),
            PgbenchChoice::Good => self.prefix(&self.driver)?.join("bin/pgbench"),
            PgbenchChoice::Fixed(p) => p.clone(),
        })
    }

    fn prefix(&self, commit: &str) -> anyhow::Result<&PathBuf> {
        self.installs
            .get(commit)
            .ok_or_else(|| anyhow::anyhow!("commit {commit} was not built before use"))
    }

    /// The data template's folder name for `commit`: one per data format
    /// (versions, WAL format, initdb's SQL, build options) and scale.
    fn template_name(&mut self, commit: &str) -> anyhow::Result<String> {
        if let Some(k) = self.template_keys.get(commit) {
            return Ok(k.clone());
        }
        let k = self.template_key(commit)?;
        self.template_keys.insert(commit.to_string(), k.clone());
        Ok(k)
    }

    /// What one run of a built `commit` is, its files' names starting
    /// with `label`: made here by [`PgLab::measure`], or on a host. A
    /// commit whose data format cannot be read makes a failed run.
    pub fn plan(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
        label: &str,
    ) -> anyhow::Result<Result<RunPlan, String>> {
        let template = match self.template_name(&commit.id) {
            Ok(t) => t,
            Err(e) => return Ok(Err(format!("{e:#}"))),
        };
        Ok(Ok(RunPlan {
            commit: commit.short().to_string(),
            bin: self.prefix(&commit.id)?.join("bin"),
            pgbench: self.pgbench_for(&commit.id)?,
            template,
            options: self.cfg.options.clone(),
            settings: self.settings_for_run(&commit.id, spec.clients)?,
            max_connections: self.cfg.setups.at(spec.clients)?.max_connections,
            clients: spec.clients,
            run: spec.run,
            seconds: spec.seconds,
            label: label.to_string(),
        }))
    }

    /// Where this machine's runs are made.
    fn place(&self) -> Place<'_> {
        Place {
            dirs: &self.cfg.dirs,
            runs_dir: &self.cfg.runs_dir,
            sockets: &self.sockets,
            run_as: &self.cfg.run_as,
        }
    }

    /// One server start on a fresh copy, warm-ups, one measured run.
    fn measure(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let plan = match self.plan(commit, spec, "")? {
            Ok(p) => p,
            Err(reason) => return Ok(RunOutcome::Failed { reason }),
        };
        let template = plan.template_spec(&self.place());
        let mut job = self.job(&plan, &template)?;
        if let Some(share) = self.cfg.percentiles {
            job.sampled_log = Some((self.transaction_log("logs", commit, spec)?, share));
        }
        let runs = &mut self.runs;
        strays::run_marked(&self.marks.token(), || runs.measure(job))
    }

    /// The prefix of a run's transaction log, in the folder `folder` of
    /// the runs' folder, which pgbench's user may write.
    fn transaction_log(
        &self,
        folder: &str,
        commit: &Commit,
        spec: RunSpec,
    ) -> anyhow::Result<PathBuf> {
        let logs = self.cfg.runs_dir.join(folder);
        crate::folders::create_dir_for(&logs, self.cfg.run_as.uid())
            .with_context(|| format!("cannot create {}", logs.display()))?;
        self.cfg.run_as.hand_over(&logs)?;
        Ok(logs.join(format!("{:05}-{}", spec.run, commit.short())))
    }

    /// [`PgLab::measure`] with instruments, its files named `why-...`
    /// apart from the hunt's runs.
    fn measure_instrumented(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
    ) -> anyhow::Result<Instrumented> {
        let plan = match self.plan(commit, spec, "why-")? {
            Ok(p) => p,
            Err(reason) => return Ok(Instrumented::Failed(reason)),
        };
        let template = plan.template_spec(&self.place());
        let mut job = self.job(&plan, &template)?;
        job.transaction_log = Some(self.transaction_log("why-logs", commit, spec)?);
        let (runs, profiler) = (&mut self.runs, self.profiler.as_mut());
        strays::run_marked(&self.marks.token(), || match profiler {
            Some(p) => runs.measure_instrumented(job, Some(p.as_mut())),
            None => runs.measure_instrumented(job, None),
        })
    }

    /// A counted run ([`crate::counts`]): the server started under the
    /// lab's counter, its files named `count-...` apart from timed runs.
    fn measure_counted(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let Some((counter, lengths)) = self.counting.take() else {
            return Err(crate::lab::cannot_count());
        };
        let done = self.measure_counted_with(commit, spec, (counter.as_ref(), lengths));
        self.counting = Some((counter, lengths));
        done
    }

    fn measure_counted_with(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
        (counter, lengths): (&dyn Counter, Lengths),
    ) -> anyhow::Result<RunOutcome> {
        let plan = match self.plan(commit, spec, "count-")? {
            Ok(p) => p,
            Err(reason) => return Ok(RunOutcome::Failed { reason }),
        };
        let template = plan.template_spec(&self.place());
        let mut job = self.job(&plan, &template)?;
        let dir = self.cfg.runs_dir.join("counted");
        crate::folders::create_dir(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let launcher = counter
            .launcher(&plan.bin.join("postgres"), &dir, self.cfg.run_as.uid())
            .with_context(|| format!("cannot prepare the counted server in {}", dir.display()))?;
        job.server.launcher = Some(launcher.program.clone());
        // An autovacuum worker started in one window and not the other
        // is not the transactions' cost.
        job.server
            .settings
            .push(("autovacuum".into(), "off".into()));
        let runs = &mut self.runs;
        strays::run_marked(&self.marks.token(), || {
            runs.count(job, counter, &launcher, lengths)
        })
    }

    /// The job of one run here.
    fn job<'t>(
        &mut self,
        plan: &RunPlan,
        template: &'t TemplateSpec,
    ) -> anyhow::Result<RunJob<'t>> {
        let pins = self.pins_for(plan.clients)?;
        self.watch_machine();
        Ok(plan.job(&self.place(), template, pins))
    }

    /// Builds `commit`, and the commit whose pgbench drives the load,
    /// when they are not yet; why `commit` cannot run when it does not
    /// build. A driver that does not build ends the hunt: no commit can be
    /// measured without it.
    pub fn ready_to_run(&mut self, commit: &Commit) -> anyhow::Result<Option<String>> {
        if !self.installs.contains_key(&commit.id)
            && let Prepared::Unbuildable { reason, .. } = self.prepare(commit)?
        {
            return Ok(Some(reason));
        }
        if matches!(self.cfg.pgbench, PgbenchChoice::Good)
            && !self.installs.contains_key(&self.driver)
            && let Prepared::Unbuildable { reason, .. } =
                self.prepare(&Commit::bare(self.driver.clone()))?
        {
            anyhow::bail!(
                "the pgbench of {} (the older endpoint) is needed to drive the load, but it does \
                 not build: {reason}",
                self.driver
            );
        }
        Ok(None)
    }

    /// The installs a run of `commit` uses, those built so far: its own,
    /// and the one whose pgbench drives the load.
    pub fn installs_for_run(&self, commit: &str) -> Vec<PathBuf> {
        let mut uses = vec![commit];
        if self.cfg.pgbench == PgbenchChoice::Good && self.driver != commit {
            uses.push(&self.driver);
        }
        uses.iter()
            .filter_map(|c| self.installs.get(*c).cloned())
            .collect()
    }

    /// What a host needs to make this lab's runs as they are made here,
    /// but the run and the host's folder: the user PostgreSQL runs as
    /// (for a host whose login is root), the placement's rules, the
    /// custom script, a fixed pgbench that must be there.
    pub fn host_request(&self) -> anyhow::Result<host::Request> {
        let o = &self.cfg.options;
        anyhow::ensure!(
            o.scripts.is_empty() && o.setup.is_none(),
            "a profile with `scripts` or `setup` runs on this machine only for now: \
             measure it without `--hosts`, or with one `script` and no `setup`"
        );
        let script = match &self.cfg.options.script {
            Some(path) => {
                // Checked where the profile named it; read as it was.
                let dir = path.parent().unwrap_or(std::path::Path::new("/"));
                let named = crate::profile_files::read_in(dir, "script", path)
                    .map_err(|e| anyhow::anyhow!("the pgbench script: {e}"))?;
                Some(String::from_utf8_lossy(&named.text).into_owned())
            }
            None => None,
        };
        Ok(host::Request {
            lab: PathBuf::new(),
            run_as: match &self.cfg.run_as {
                RunAs::User { name, .. } => Some(name.clone()),
                RunAs::CurrentUser => None,
            },
            placement: self.cfg.placement.clone(),
            script,
            programs: match &self.cfg.pgbench {
                PgbenchChoice::Fixed(path) => vec![path.clone()],
                _ => Vec::new(),
            },
            plan: None,
        })
    }

    /// The work dir this lab keeps its folders in.
    pub fn work_root(&self) -> PathBuf {
        self.cfg
            .dirs
            .installs
            .parent()
            .map_or_else(|| PathBuf::from("."), PathBuf::from)
    }

    /// Lets `profiler` record the server of every instrumented run.
    pub fn set_profiler(&mut self, profiler: Box<dyn ServerProfiler>) {
        self.profiler = Some(profiler);
    }

    /// The settings of one run: the commit's form of the profile's, with
    /// `max_connections` for the run's clients.
    fn settings_for_run(
        &mut self,
        commit: &str,
        clients: u32,
    ) -> anyhow::Result<Vec<(String, String)>> {
        self.check_clients(clients)?;
        let applied = self
            .settings
            .get(commit)
            .ok_or_else(|| anyhow::anyhow!("commit {commit} was not built before use"))?;
        Ok(self.cfg.setups.at(clients)?.applied_to(applied))
    }

    /// The pins of the server and pgbench at `clients`.
    fn pins_for(&mut self, clients: u32) -> anyhow::Result<(Pin, Pin)> {
        if let Some(pins) = self.pins.get(&clients) {
            return Ok(pins.clone());
        }
        let placement: Placement =
            (self.cfg.setups.at(clients)?.placement.clone()).map_err(anyhow::Error::msg)?;
        let pins = placement.pins();
        self.pins.insert(clients, pins.clone());
        Ok(pins)
    }

    /// Says once what newly makes runs less steady, every few minutes.
    fn watch_machine(&self) {
        let cpus = self.cfg.setups.cpus;
        for finding in self.cfg.watch.check_if_due(cpus) {
            eprintln!("pgbisect: {}", steady::describe(&finding));
        }
    }
}

/// Stops what earlier runs in `dirs` left running (their pgbisect
/// killed): the servers they recorded, servers still running in the data
/// directory or the templates (one run at a time uses them, so any there
/// outlived its run), then every process carrying the work dir's mark
/// (pgbench, psql, initdb, a postmaster elsewhere); how many that was.
pub(crate) fn stop_left_behind(dirs: &LabDirs, marks: &Marks) -> anyhow::Result<usize> {
    let mut stopped = server::reap_leftovers(&dirs.servers)?;
    let mut folders = vec![dirs.data.join("current")];
    if let Ok(templates) = std::fs::read_dir(&dirs.templates) {
        folders.extend(
            templates
                .filter_map(Result::ok)
                .map(|e| e.path().join("data")),
        );
    }
    for folder in folders {
        stopped += usize::from(server::stop_server_in(&folder)?);
    }
    Ok(stopped + marks.stop_earlier())
}

/// Checks that this machine lets `clients` connections be made to a
/// server with `max_connections` (raising the open-files limit when it
/// may).
pub(crate) fn check_machine(
    options: &PgbenchOptions,
    clients: u32,
    max_connections: u32,
) -> anyhow::Result<()> {
    server::raise_open_files(server::open_files_needed(clients));
    let threads = options.threads_for(clients);
    server::check_limits(
        &server::SystemLimits::read(),
        clients,
        threads,
        max_connections,
    )?;
    Ok(())
}

/// The major version of `commit`'s source tree, from its configure script
/// or meson.build; None when it cannot be read.
fn source_major(repo: &Repo, commit: &str) -> Option<settings::Major> {
    ["configure.ac", "configure.in", "meson.build"]
        .iter()
        .find_map(|path| {
            let text = repo.read_file(commit, path).ok()??;
            settings::Major::from_source(&String::from_utf8_lossy(&text))
        })
}

/// The fewest installs the cache must keep for a build ahead: the two
/// commits counted side by side and the one built beside them.
const AHEAD_CACHE: usize = 3;

impl Lab for PgLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let outcome = self.builds.build(&commit.id)?;
        let (prefix, cached) = match outcome {
            BuildOutcome::Installed { prefix, cached, .. } => (prefix, cached),
            BuildOutcome::Failed { reason, log } => {
                return Ok(Prepared::Unbuildable {
                    reason,
                    log: Some(log),
                });
            }
        };
        let applied =
            match server::apply_settings(&prefix.join("bin"), &self.cfg.run_as, &self.cfg.settings)
            {
                Ok(applied) => applied,
                Err(e @ (ServerError::UnknownSetting { .. } | ServerError::Setting(_))) => {
                    return Ok(Prepared::Unbuildable {
                        reason: e.to_string(),
                        log: None,
                    });
                }
                Err(other) => return Err(other.into()),
            };
        // PostgreSQL's user runs what is in it: nobody else may change it.
        crate::folders::check_tree(&prefix).with_context(|| {
            format!(
                "refusing the install {}: PostgreSQL's user runs its programs",
                prefix.display()
            )
        })?;
        for note in applied.notes {
            self.note(note);
        }
        self.settings.insert(commit.id.clone(), applied.settings);
        self.installs.insert(commit.id.clone(), prefix);
        Ok(Prepared::Ready { cached })
    }

    /// Builds `commit` in a thread of its own while the lab counts: a
    /// timed run waits for the build first ([`Lab::run`]), and a cache of
    /// fewer than [`AHEAD_CACHE`] installs could evict the commit being
    /// counted to keep it.
    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.cfg.cache_size >= AHEAD_CACHE
            && !self.installs.contains_key(&commit.id)
            && self.builds.start(&commit.id)
    }

    /// A timed run never runs beside a build made ahead: it waits for it.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.builds.wait()?;
        if let Some(reason) = self.ready_to_run(commit)? {
            return Ok(RunOutcome::Failed { reason });
        }
        self.measure(commit, spec)
    }

    fn run_length(&self) -> Option<u32> {
        Some(self.cfg.options.duration_secs)
    }

    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if let Some(reason) = self.ready_to_run(commit)? {
            return Ok(RunOutcome::Failed { reason });
        }
        self.measure_counted(commit, spec)
    }

    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        self.builds.wait()?;
        if let Some(reason) = self.ready_to_run(commit)? {
            return Ok(Instrumented::Failed(reason));
        }
        self.measure_instrumented(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        let (builds, build_seconds) = self.builds.totals();
        LabTotals {
            builds,
            build_seconds,
            ..self.runs.totals()
        }
    }

    fn describe(&self) -> String {
        let conn = bench::Conn {
            socket_dir: PathBuf::from("SOCKETDIR"),
            port: 5432,
            dbname: "postgres".into(),
        };
        let args = bench::run_args(
            &self.cfg.options,
            self.cfg.options.clients,
            self.cfg.options.duration_secs,
            &conn,
        );
        let settings = (self.cfg.setups.at(self.cfg.options.clients))
            .map_or_else(|_| self.cfg.settings.clone(), |s| s.settings.clone());
        let settings: Vec<String> = settings
            .iter()
            .map(|(k, v)| format!("-c {k}={v}"))
            .collect();
        let mut notes = self.notes.clone();
        if let Some((counter, _)) = &self.counting {
            notes.push(format!(
                "instructions counted by {} (autovacuum off; -t transactions a client fitted to \
                 the workload, not -T)",
                counter.name()
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        };
        format!(
            "pgbench {} ({} pgbench); server {}{notes}",
            args.join(" "),
            match &self.cfg.pgbench {
                PgbenchChoice::Good if self.driver == self.cfg.good => {
                    "the good endpoint's".to_string()
                }
                PgbenchChoice::Good => "the older endpoint's".to_string(),
                PgbenchChoice::Candidate => "each commit's own".to_string(),
                PgbenchChoice::Fixed(p) => p.display().to_string(),
            },
            if settings.is_empty() {
                "defaults".to_string()
            } else {
                settings.join(" ")
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_choice_parses() {
        assert_eq!(PgbenchChoice::parse("good"), Ok(PgbenchChoice::Good));
        assert_eq!(
            PgbenchChoice::parse("fixed:/usr/bin/pgbench"),
            Ok(PgbenchChoice::Fixed("/usr/bin/pgbench".into()))
        );
        assert!(PgbenchChoice::parse("fixed:").is_err());
        assert!(PgbenchChoice::parse("newest").is_err());
    }
}
