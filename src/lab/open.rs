//! Opens the lab a command measures with, from a [`LabSpec`]: the
//! profile's shell commands, or real PostgreSQL builds, servers and
//! pgbench, here or on the hosts a hunt holds.

use crate::build::{BuildSettings, BuildSystem, Fixup};
use crate::core::counts::{Lengths, Measure};
use crate::counts::cachegrind::Cachegrind;
use crate::error::UsageError;
use crate::lab::command::{CommandLab, Commands, DEFAULT_BENCHMARK_LIMIT, DEFAULT_BUILD_LIMIT};
use crate::lab::held::Held;
use crate::lab::pg::pool::PgPoolLab;
use crate::lab::pg::setup::Setups;
use crate::lab::pg::{PerfProfiler, PgLab, PgLabConfig, PgbenchChoice};
use crate::lab::pool::PoolLab;
use crate::lab::{Lab, LabDirs};
use crate::machine::steady::Watch;
use crate::perf::PerfSampler;
use crate::profile::Profile;
use crate::repo::{Repo, WorkTree};
use crate::server::{RunAs, ServerError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The lab flags: which pgbench drives the load, the user PostgreSQL
/// runs as, the build cache's size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabChoices {
    /// `--pgbench`: `good`, `candidate` or `fixed:PATH` (else the profile's).
    pub pgbench: Option<String>,
    /// `--run-as` (else the profile's).
    pub run_as: Option<String>,
    /// `--cache-size`: installs kept.
    pub cache_size: usize,
    /// `watch --percentiles`: the share of transactions each run logs,
    /// read for latency percentiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<f64>,
    /// `--measure`: what decides; with `instructions`, runs are counted.
    #[serde(default, skip_serializing_if = "Measure::is_tps")]
    pub measure: Measure,
    /// With `instructions`, the counter the runs are counted by, as it
    /// named itself when the plan was made (`cachegrind
    /// (valgrind-3.19.0)`): counts of another are not this plan's, and
    /// the lab refuses to open on a machine whose counter differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
}

/// Everything a lab is opened with, resolved before: a plain value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabSpec {
    pub profile: Profile,
    /// pgbench clients of the measured runs.
    pub clients: u32,
    pub repo_dir: PathBuf,
    /// The work dir's labs' folders.
    pub dirs: LabDirs,
    /// The private git work tree commits are checked out in.
    pub checkout: PathBuf,
    /// Objects of commits made in the private work tree (patches applied).
    pub private_objects: PathBuf,
    /// The endpoints (the good one's pgbench may drive every run).
    pub good: String,
    pub bad: String,
    pub choices: LabChoices,
    /// Each client count's server settings, `max_connections` and
    /// placement, as the plan decided them.
    pub setups: Setups,
}

/// The lab of `plan`, measuring on the hosts `on` holds (its jobs
/// named `<hunt's job prefix><tag><run>`) or, without hosts, here.
pub fn open(
    plan: &LabSpec,
    watch: &Watch,
    runs_dir: &Path,
    on: Option<(&Held, &str)>,
) -> anyhow::Result<Box<dyn Lab>> {
    if plan.choices.measure == Measure::Instructions
        && (plan.profile.benchmark.command.is_some() || on.is_some())
    {
        return Err(crate::lab::cannot_count());
    }
    let repo = open_repo(plan)?;
    if let Some(benchmark) = &plan.profile.benchmark.command {
        let worktree = WorkTree::open_or_create(&repo, &plan.checkout)?;
        let seconds = std::time::Duration::from_secs;
        let commands = Commands {
            build: plan.profile.build.command.clone(),
            benchmark: benchmark.clone(),
            build_limit: plan
                .profile
                .build
                .timeout
                .map_or(DEFAULT_BUILD_LIMIT, seconds),
            benchmark_limit: plan
                .profile
                .benchmark
                .timeout
                .map_or(DEFAULT_BENCHMARK_LIMIT, seconds),
        };
        let lab = CommandLab::new(commands, worktree, plan.dirs.clone(), runs_dir)?;
        return Ok(match on {
            Some((held, tag)) => {
                let prefix = format!("{}{tag}", held.owner.job_prefix());
                Box::new(PoolLab::new(lab, held.backend.clone(), &prefix, runs_dir))
            }
            None => Box::new(lab),
        });
    }
    let lab = pg_lab(plan, runs_dir, watch, repo, build_settings(&plan.profile)?)?;
    Ok(match on {
        Some((held, tag)) => {
            let prefix = format!("{}{tag}", held.owner.job_prefix());
            let pool = PgPoolLab::new(
                lab,
                held.backend.clone(),
                (&prefix, runs_dir),
                held.placement.clone(),
            )?;
            Box::new(pool)
        }
        None if plan.choices.measure == Measure::Instructions => {
            Box::new(crate::lab::counting::Counting(lab))
        }
        None => Box::new(lab),
    })
}

/// The PostgreSQL lab of `plan` on this machine with both measures: its
/// runs timed, its counted runs counted by the plan's counter (the plan
/// counts). For `--measure auto`, which measures the endpoints both ways.
pub fn open_timed_and_counted(
    plan: &LabSpec,
    watch: &Watch,
    runs_dir: &Path,
) -> anyhow::Result<Box<dyn Lab>> {
    if plan.choices.measure != Measure::Instructions || plan.profile.benchmark.command.is_some() {
        return Err(crate::lab::cannot_count());
    }
    let repo = open_repo(plan)?;
    let lab = pg_lab(plan, runs_dir, watch, repo, build_settings(&plan.profile)?)?;
    Ok(Box::new(lab))
}

/// The repository of `plan`, with the commits made in the private work
/// tree (a patch applied) readable too.
pub fn open_repo(plan: &LabSpec) -> anyhow::Result<Repo> {
    let repo = Repo::open(&plan.repo_dir)?;
    if plan.private_objects.is_dir() {
        repo.add_object_source(&plan.private_objects)?;
    }
    Ok(repo)
}

/// The PostgreSQL lab of `plan`, building with `build`.
fn pg_lab(
    plan: &LabSpec,
    runs_dir: &Path,
    watch: &Watch,
    repo: Repo,
    build: BuildSettings,
) -> anyhow::Result<PgLab> {
    let profile = &plan.profile;
    let args = &plan.choices;
    let options = profile.benchmark.pgbench_options(plan.clients);
    options
        .validate()
        .map_err(|e| UsageError(format!("the profile's [benchmark]: {e}")))?;
    let pgbench = args
        .pgbench
        .as_deref()
        .or(profile.benchmark.pgbench.as_deref())
        .map_or(Ok(PgbenchChoice::Good), PgbenchChoice::parse)
        .map_err(UsageError)?;
    let run_as = RunAs::resolve(args.run_as.as_deref().or(profile.server.run_as.as_deref()))?;
    check_reachable(&run_as, plan)?;
    (plan.setups.at(plan.clients)?.placement.clone()).map_err(UsageError)?;
    let cfg = PgLabConfig {
        dirs: plan.dirs.clone(),
        checkout: plan.checkout.clone(),
        runs_dir: runs_dir.to_path_buf(),
        options,
        settings: profile.server.settings_strings(),
        run_as,
        pgbench,
        build,
        cache_size: args.cache_size.max(2),
        percentiles: args.percentiles,
        good: plan.good.clone(),
        bad: plan.bad.clone(),
        placement: profile.placement.clone(),
        setups: plan.setups.clone(),
        watch: watch.clone(),
    };
    let lab = PgLab::new(cfg, repo)?;
    Ok(match args.measure {
        Measure::Tps => lab,
        Measure::Instructions => {
            let counter = Cachegrind::find().map_err(|e| UsageError(e.to_string()))?;
            same_counter(
                args.counter.as_deref(),
                crate::counts::Counter::name(&counter),
            )?;
            lab.with_counter(Box::new(counter), Lengths::default())
        }
    })
}

/// The counter the plan was made with, `planned`, is the one found
/// here, `found`: a hunt's counts by another counter (valgrind upgraded
/// since) are not comparable to its journal's.
fn same_counter(planned: Option<&str>, found: &str) -> Result<(), UsageError> {
    match planned {
        Some(planned) if planned != found => Err(UsageError(format!(
            "this plan counts instructions with {planned}, and this machine's counter is \
             {found}: counts of two counters are not set against each other\n\
             hint: rerun the hunt's command (a hunt on {found} gets a folder of its own), or \
             install the counter the plan was made with"
        ))),
        _ => Ok(()),
    }
}

/// Where the why-runs are made.
#[derive(Default)]
pub struct WhyLab {
    /// A lab of their own, or `None` for the measuring lab's.
    pub lab: Option<Box<dyn Lab>>,
    /// Why the runs record no CPU profile, when they do not.
    pub no_profile: Option<String>,
}

/// The lab the why-runs of `plan` are made in: with PostgreSQL builds and
/// `perf` able to record here, one whose builds keep frame pointers
/// (their own installs, by the build cache's key) and whose instrumented
/// runs are sampled by `perf`; otherwise the measuring lab, with the
/// reason there is no CPU profile (none for custom commands, which have
/// no why-runs).
pub fn open_for_why(plan: &LabSpec, runs_dir: &Path, watch: &Watch) -> anyhow::Result<WhyLab> {
    if plan.profile.is_custom() {
        return Ok(WhyLab::default());
    }
    let sampler = PerfSampler::default();
    if let Err(why) = sampler.probe(&runs_dir.join("profiles"))? {
        return Ok(WhyLab {
            lab: None,
            no_profile: Some(why.to_string()),
        });
    }
    let repo = open_repo(plan)?;
    let build = build_settings(&plan.profile)?.for_profiling();
    let mut lab = pg_lab(plan, runs_dir, watch, repo, build)?;
    lab.set_profiler(Box::new(PerfProfiler::new(
        Arc::new(sampler),
        runs_dir.join("profiles"),
    )));
    Ok(WhyLab {
        lab: Some(Box::new(lab)),
        no_profile: None,
    })
}

/// The server's user must reach the work dir (its installs, data and
/// logs live there): found out now, before anything is built, not when
/// the first server is to start.
fn check_reachable(run_as: &RunAs, plan: &LabSpec) -> anyhow::Result<()> {
    let inside = plan.dirs.data.clone();
    let inside = std::path::absolute(&inside).unwrap_or(inside);
    run_as.check_reachable(&inside).map_err(|e| match e {
        ServerError::Unreachable {
            blocked_at, who, ..
        } => UsageError(format!(
            "{who}, which runs PostgreSQL's programs (--run-as), cannot reach the work dir {}: \
             {} is not searchable by it\n\
             hint: `chmod o+x {}` (or `chmod 755`), or pass another --work-dir, e.g. under /var/tmp",
            plan.dirs.root.display(),
            blocked_at.display(),
            blocked_at.display()
        ))
        .into(),
        other => other.into(),
    })
}

/// The profile's `[build]` as the builder's settings.
pub fn build_settings(profile: &Profile) -> anyhow::Result<BuildSettings> {
    let b = &profile.build;
    let system = match b.system.as_deref() {
        None | Some("auto") => BuildSystem::Auto,
        Some("autoconf") => BuildSystem::Autoconf,
        Some("meson") => BuildSystem::Meson,
        Some(other) => {
            return Err(UsageError(format!(
                "[build] system = `{other}`: use `auto`, `autoconf` or `meson`"
            ))
            .into());
        }
    };
    Ok(BuildSettings {
        system,
        configure: b.configure.clone().unwrap_or_default(),
        cflags: b.cflags.clone(),
        meson: b.meson.clone().unwrap_or_default(),
        jobs: b.jobs,
        fixups: b
            .fixups
            .iter()
            .map(|f| Fixup {
                patch: f.patch.clone(),
                commits: f.commits.clone(),
                range: f.range.clone(),
            })
            .collect(),
        timeout: b.timeout,
    })
}
