//! PostgreSQL builds with an install cache.
//!
//! A hunt builds many commits, often the same ones again (across hunts,
//! across pgbisect processes), so building must be incremental and its
//! results kept:
//!
//! - one build tree per build settings under `<work_dir>/build/`, outside
//!   the source tree, reused from commit to commit so only what changed is
//!   compiled (`--enable-depend`, so a changed header rebuilds its users),
//!   configured again only when the commit's `configure` changes;
//! - only what the benchmark needs is built and installed (server, initdb,
//!   pg_ctl, psql, pgbench, libpq and what initdb loads), so parts that old
//!   commits cannot build with today's compilers do not matter; when that
//!   fails, one more try builds everything under `src/` in a fresh tree and
//!   keeps going after errors, and succeeds if the benchmark's files got
//!   installed;
//! - installs go to `<work_dir>/installs/<commit>-<settings hash>/`, each
//!   finished by a stamp written last, kept up to a count, least recently
//!   used evicted first; ccache is used when on `PATH`;
//! - the output goes to `<work_dir>/logs/build-<commit>-<key>.log`, named as
//!   its install is; a commit that
//!   does not build is an ordinary outcome ([`BuildOutcome::Failed`], a
//!   skip), trouble with the machine is a [`BuildError`].

mod cache;
mod check;
mod compat;
mod fixup;
mod log;
mod profiling;
mod tree;

pub use cache::{LAST_USED_FILE, STAMP_FILE, Stamp, read_stamp};
pub use compat::report_flags as compat_report_flags;
pub(crate) use log::disk_full;
pub use profiling::profiling_cflags;

use crate::lab::LabDirs;
use cache::InstallCache;
use log::BuildLog;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tree::{Attempt, Strategy, System, TreeBuild};

/// Optimization flags when the profile gives none.
pub const DEFAULT_CFLAGS: &str = "-O2";

/// Which build system to use.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BuildSystem {
    /// autoconf when the commit has `configure`, else meson.
    #[default]
    Auto,
    Autoconf,
    Meson,
}

/// How commits are built (`[build]` of a profile).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BuildSettings {
    #[serde(default)]
    pub system: BuildSystem,
    /// Extra `configure` arguments, appended after the minimal defaults
    /// (`--enable-depend --without-readline --without-zlib --without-icu
    /// --without-openssl`), so `--with-openssl` overrides a default.
    /// `CC=` is wrapped with ccache; `LDFLAGS=` is added to ours.
    #[serde(default)]
    pub configure: Vec<String>,
    /// `CFLAGS` (default `-O2`).
    pub cflags: Option<String>,
    /// Extra `meson setup` arguments; a `-Dname=` replaces our default of
    /// the same name.
    #[serde(default)]
    pub meson: Vec<String>,
    /// Parallel jobs (default: the number of cores).
    pub jobs: Option<u32>,
    /// Patches applied before building the commits they name.
    #[serde(default)]
    pub fixups: Vec<Fixup>,
    /// Seconds one commit's build (configure, make, install) may take
    /// before it is stopped and the commit skipped (default
    /// [`DEFAULT_BUILD_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// How long one commit's build may take when the profile does not say:
/// a cold build of today's master takes about 4 minutes on 2 cores, so
/// this only stops a build that hangs.
pub const DEFAULT_BUILD_LIMIT: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

/// The `configure` (or `meson setup`) arguments builds use, for reports.
pub fn setup_args(settings: &BuildSettings) -> Vec<String> {
    match settings.system {
        BuildSystem::Meson => tree::meson_args(settings),
        BuildSystem::Auto | BuildSystem::Autoconf => tree::configure_args(settings, false),
    }
}

/// `[[build.fixups]]`: a patch applied to the listed commits or a range.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Fixup {
    pub patch: PathBuf,
    /// Commits (SHA prefixes) the patch applies to.
    #[serde(default)]
    pub commits: Vec<String>,
    /// Or a range `A..B`: commits reachable from B and not from A.
    pub range: Option<String>,
}

/// What [`Builder::ensure`] gave.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildOutcome {
    /// `prefix` holds `bin/postgres`, `initdb`, `pg_ctl`, `psql`, `pgbench`.
    Installed {
        prefix: PathBuf,
        /// True when it came from the cache and nothing was built.
        cached: bool,
        /// Wall time of the build (0 when cached).
        seconds: f64,
        log: PathBuf,
    },
    /// The commit does not build: a skip. `reason` names the log and quotes
    /// its first error lines.
    Failed { reason: String, log: PathBuf },
}

/// Trouble with the machine or the settings, not with a commit: the hunt
/// should stop and the user act.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no space left on device while building (at {}):\n{detail}\n\
         hint: free space on that file system, or keep fewer installs (--cache-size), \
         then rerun the same command: the commit is built again, not taken for one that \
         does not build",
        path.display()
    )]
    DiskFull { path: PathBuf, detail: String },
    #[error(
        "{tool} is needed to build PostgreSQL but was not found (running `{command}`)\nhint: {hint}"
    )]
    MissingTool {
        tool: String,
        command: String,
        hint: String,
    },
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("interrupted while running `{command}`")]
    Interrupted { command: String },
    #[error(
        "the source tree {} was configured in place (it has {found}), but builds happen \
         in a separate build tree, which needs a clean source tree\n\
         hint: run `make distclean` in {}",
        src.display(),
        src.display()
    )]
    ConfiguredInTree { src: PathBuf, found: String },
    #[error("{} cannot be built: {problem}", src.display())]
    NotPostgres { src: PathBuf, problem: String },
    #[error("build settings: {0}")]
    Settings(String),
    #[error("fixup {}: {message}", patch.display())]
    Fixup { patch: PathBuf, message: String },
}

impl BuildError {
    /// Maps an I/O error on `path`, telling a full disk apart.
    pub(crate) fn io(action: &str, path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
        let (action, path) = (action.to_string(), path.to_path_buf());
        move |source| {
            if source.kind() == std::io::ErrorKind::StorageFull {
                BuildError::DiskFull {
                    path,
                    detail: source.to_string(),
                }
            } else {
                BuildError::Io {
                    action,
                    path,
                    source,
                }
            }
        }
    }
}

/// Files whose presence means configure ran inside the source tree.
const IN_TREE_MARKERS: [&str; 4] = [
    "config.status",
    "GNUmakefile",
    "src/Makefile.global",
    "src/include/pg_config.h",
];

/// Configure options the build decides itself.
const RESERVED_CONFIGURE: [&str; 7] = [
    "--prefix",
    "--exec-prefix",
    "--bindir",
    "--libdir",
    "--datadir",
    "--datarootdir",
    "--disable-depend",
];

/// One build asked of [`Builder::ensure`].
struct Job<'a> {
    commit: &'a str,
    key: &'a str,
    /// The user's fixups for this commit.
    patches: &'a [PathBuf],
    /// The shipped compatibility steps this tree needs.
    steps: &'a [compat::Step],
    log_path: &'a Path,
    started: Instant,
}

/// Builds commits into cached installs.
#[derive(Debug)]
pub struct Builder {
    settings: BuildSettings,
    build_root: PathBuf,
    logs: PathBuf,
    cache: InstallCache,
    ccache: Option<PathBuf>,
    /// `flex` on `PATH`, for the compatibility steps.
    flex: Option<PathBuf>,
    jobs: u32,
    builds: u64,
    seconds: f64,
    /// Stops the build under way once set ([`Builder::cancelled_by`]).
    cancel: Option<Arc<AtomicBool>>,
}

impl Builder {
    /// A builder working in the labs' folders `dirs`, keeping at most
    /// `cache_limit` installs (at least one).
    pub fn new(
        dirs: &LabDirs,
        settings: BuildSettings,
        cache_limit: usize,
    ) -> Result<Builder, BuildError> {
        validate(&settings)?;
        let build_root = dirs.build.clone();
        let logs = dirs.logs.clone();
        for dir in [&build_root, &logs] {
            crate::folders::create_dir(dir).map_err(BuildError::io("create", dir))?;
        }
        let cache = InstallCache::open(&dirs.installs, cache_limit)?;
        let jobs = settings
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
        Ok(Builder {
            settings,
            build_root,
            logs,
            cache,
            ccache: find_on_path("ccache"),
            flex: find_on_path("flex"),
            jobs,
            builds: 0,
            seconds: 0.0,
            cancel: None,
        })
    }

    /// Makes sure `commit` is installed, building it from `src` (a checkout
    /// of `commit` the caller keeps checked out) unless this commit with
    /// these settings was installed before, also by an earlier process.
    ///
    /// The fixups whose `commits` or `range` take in `commit` are applied to
    /// `src` for the build and taken out afterwards.
    pub fn ensure(&mut self, commit: &str, src: &Path) -> Result<BuildOutcome, BuildError> {
        check_commit_name(commit)?;
        let patches = fixup::applicable(&self.settings.fixups, commit, src)?;
        let patch_texts = patches
            .iter()
            .map(|p| std::fs::read(p).map_err(BuildError::io("read the fixup", p)))
            .collect::<Result<Vec<_>, _>>()?;
        let fixed_by_user: Vec<String> = patch_texts
            .iter()
            .flat_map(|t| compat::patched_files(&String::from_utf8_lossy(t)))
            .collect();
        let steps = compat::detect(&compat::Tree {
            src,
            settings: &self.settings,
            fixed_by_user: &fixed_by_user,
            flex: self.flex.as_deref(),
        });
        let key = self.install_key(&patch_texts, &steps);
        compat::record(&self.build_root, commit, &steps)?;
        // Named as the install is: a build with other flags (frame pointers
        // for the why-runs) keeps a log of its own.
        let log_path = self.logs.join(format!("build-{commit}-{key}.log"));
        if let Some(prefix) = self.cache.lookup(commit, &key) {
            return Ok(BuildOutcome::Installed {
                prefix,
                cached: true,
                seconds: 0.0,
                log: log_path,
            });
        }
        let started = Instant::now();
        let job = Job {
            commit,
            key: &key,
            patches: &patches,
            steps: &steps,
            log_path: &log_path,
            started,
        };
        let outcome = self.build(src, &job);
        self.builds += 1;
        self.seconds += started.elapsed().as_secs_f64();
        outcome
    }

    /// Makes the builds from now on stop once `cancel` is set, as if
    /// interrupted ([`BuildError::Interrupted`]): a build started ahead
    /// of need (`crate::lab::pg::ahead`) that is no longer needed. `None`
    /// takes the flag away.
    pub fn cancelled_by(&mut self, cancel: Option<Arc<AtomicBool>>) {
        self.cancel = cancel;
    }

    /// Builds really made (cache hits not counted) and their wall time.
    pub fn totals(&self) -> (u64, f64) {
        (self.builds, self.seconds)
    }

    /// Keeps the installs of `commit` out of eviction (an endpoint whose
    /// pgbench drives every run, say).
    pub fn pin(&mut self, commit: &str) {
        self.cache.pin(commit);
    }

    /// The fingerprint naming installs: settings that change the binaries,
    /// the content of the fixups applied and the compatibility steps (none
    /// for current trees, whose keys stay what they were before steps
    /// existed).
    fn install_key(&self, patch_texts: &[Vec<u8>], steps: &[compat::Step]) -> String {
        let mut text = self.tree_key(&[]);
        for patch in patch_texts {
            text.push_str(&String::from_utf8_lossy(patch));
        }
        for step in steps {
            text.push_str(&step.fingerprint_text());
        }
        crate::core::fingerprint::fingerprint(&text)
    }

    /// What decides the build tree: everything but jobs and fixups, and the
    /// configure arguments of compatibility steps, so that old and new
    /// trees each keep a build tree of their own.
    fn tree_key(&self, compat_args: &[String]) -> String {
        let s = &self.settings;
        let mut key = format!(
            "v1|{:?}|{:?}|{:?}|{:?}",
            s.system, s.configure, s.cflags, s.meson
        );
        if !compat_args.is_empty() {
            key.push_str(&format!("|compat{compat_args:?}"));
        }
        key
    }

    fn build(&mut self, src: &Path, job: &Job) -> Result<BuildOutcome, BuildError> {
        let src = src
            .canonicalize()
            .map_err(BuildError::io("find the source tree", src))?;
        let system = self.system_for(&src)?;
        let limit = self
            .settings
            .timeout
            .map_or(DEFAULT_BUILD_LIMIT, std::time::Duration::from_secs);
        let mut log = BuildLog::create(job.log_path, limit)?.cancelled_by(self.cancel.clone());
        log.note(&format!(
            "building {} from {} with {system:?}, {} jobs, settings {}",
            job.commit,
            src.display(),
            self.jobs,
            job.key
        ))?;
        if self.ccache.is_none() {
            log.note("ccache is not on PATH: every build compiles from scratch (install ccache)")?;
        }
        for step in job.steps {
            log.note(&format!(
                "compatibility step {}: {}: {}",
                step.id,
                step.why,
                step.change()
            ))?;
        }
        let note_path = self.build_root.join("fixups-applied.json");
        fixup::recover(&note_path, &mut log)?;
        // Shipped patches first: the user's fixups are written against the
        // commit, and a file they change gets no shipped patch.
        let mut patches = compat::patch_files(job.steps, &self.build_root.join("compat"))?;
        patches.extend(job.patches.iter().cloned());
        if let Some(reason) = fixup::apply(&patches, &src, &note_path, &mut log)? {
            return Ok(BuildOutcome::Failed {
                reason,
                log: job.log_path.to_path_buf(),
            });
        }
        let cflags = self.settings.cflags.as_deref().unwrap_or(DEFAULT_CFLAGS);
        let compat_args = compat::configure_args(job.steps, cflags);
        let attempt = self.attempts(system, &src, &compat_args, &mut log);
        let reverted = fixup::revert(&patches, &src, &note_path, &mut log);
        let attempt = attempt?;
        reverted?;
        match attempt {
            Attempt::Failed(reason) => Ok(BuildOutcome::Failed {
                reason,
                log: job.log_path.to_path_buf(),
            }),
            Attempt::Staged(staged) => {
                self.install(&staged, job.commit, job.key, job.started, &mut log)
            }
        }
    }

    /// The targeted build in the reused tree, then, if that fails, the
    /// whole tree in a fresh one.
    fn attempts(
        &self,
        system: System,
        src: &Path,
        compat_args: &[String],
        log: &mut BuildLog,
    ) -> Result<Attempt, BuildError> {
        let tree = self.build_root.join(format!(
            "{}-{}",
            format!("{system:?}").to_lowercase(),
            crate::core::fingerprint::fingerprint(&self.tree_key(compat_args))
        ));
        let stage = self.build_root.join("stage");
        let build = TreeBuild {
            src,
            tree: &tree,
            stage: &stage,
            settings: &self.settings,
            compat_configure: compat_args,
            jobs: self.jobs,
            ccache: self.ccache.as_deref(),
            system,
        };
        match build.attempt(Strategy::Targeted, log)? {
            Attempt::Staged(staged) => return Ok(Attempt::Staged(staged)),
            failed @ Attempt::Failed(_) if log.timed_out() => return Ok(failed),
            Attempt::Failed(_) => {}
        }
        log.note(
            "the build failed; trying once more in a fresh build tree, building all of src/ \
             and going on after errors",
        )?;
        cache::remove_dir_if_present(&tree)?;
        build.attempt(Strategy::WholeTree, log)
    }

    /// Moves a staged install into the cache, checks that its server runs
    /// from there, and seals it.
    fn install(
        &mut self,
        staged: &Path,
        commit: &str,
        key: &str,
        started: Instant,
        log: &mut BuildLog,
    ) -> Result<BuildOutcome, BuildError> {
        let prefix = self.cache.adopt(staged, commit, key)?;
        cache::remove_dir_if_present(&self.build_root.join("stage"))?;
        let version = match check::postgres_version(&prefix)
            .and_then(|v| check::psql_starts(&prefix).map(|()| v))
        {
            Ok(version) => version,
            Err(problem) => {
                log.note(&problem)?;
                cache::remove_dir_if_present(&prefix)?;
                return Ok(BuildOutcome::Failed {
                    reason: format!("{problem} (log: {})", log.path().display()),
                    log: log.path().to_path_buf(),
                });
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        let stamp = Stamp {
            commit: commit.to_string(),
            settings_hash: key.to_string(),
            seconds,
            built_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            version: version.clone(),
        };
        let evicted = self.cache.seal(&prefix, &stamp)?;
        log.note(&format!(
            "installed {version} into {} in {seconds:.1} s",
            prefix.display()
        ))?;
        for old in evicted {
            log.note(&format!("evicted {}", old.display()))?;
        }
        Ok(BuildOutcome::Installed {
            prefix,
            cached: false,
            seconds,
            log: log.path().to_path_buf(),
        })
    }

    fn system_for(&self, src: &Path) -> Result<System, BuildError> {
        let has_configure = src.join("configure").is_file();
        let has_meson = src.join("meson.build").is_file();
        let not_postgres = |problem: &str| BuildError::NotPostgres {
            src: src.to_path_buf(),
            problem: problem.to_string(),
        };
        let system = match self.settings.system {
            BuildSystem::Auto if has_configure => System::Autoconf,
            BuildSystem::Auto if has_meson => System::Meson,
            BuildSystem::Auto => {
                return Err(not_postgres(
                    "it has neither `configure` nor `meson.build` (is it a PostgreSQL checkout?)",
                ));
            }
            BuildSystem::Autoconf if has_configure => System::Autoconf,
            BuildSystem::Autoconf => {
                return Err(not_postgres(
                    "`system = \"autoconf\"` but this commit has no `configure`; use `auto` or `meson`",
                ));
            }
            BuildSystem::Meson if has_meson => System::Meson,
            BuildSystem::Meson => {
                return Err(not_postgres(
                    "`system = \"meson\"` but this commit has no `meson.build` (before PostgreSQL 16); \
                     use `auto` or `autoconf`",
                ));
            }
        };
        if let Some(found) = IN_TREE_MARKERS.iter().find(|m| src.join(m).exists()) {
            return Err(BuildError::ConfiguredInTree {
                src: src.to_path_buf(),
                found: found.to_string(),
            });
        }
        Ok(system)
    }
}

fn validate(settings: &BuildSettings) -> Result<(), BuildError> {
    let reserved = |arg: &str, list: &[&str]| {
        list.iter()
            .any(|r| arg == *r || arg.starts_with(&format!("{r}=")))
    };
    if let Some(arg) = settings
        .configure
        .iter()
        .find(|a| reserved(a, &RESERVED_CONFIGURE))
    {
        return Err(BuildError::Settings(format!(
            "configure argument `{arg}` is decided by pgbisect (installs are cached and moved; \
             header changes must rebuild their users); remove it"
        )));
    }
    let meson_reserved = ["--prefix", "--libdir", "--bindir", "--datadir"];
    if let Some(arg) = settings.meson.iter().find(|a| reserved(a, &meson_reserved)) {
        return Err(BuildError::Settings(format!(
            "meson argument `{arg}` is decided by pgbisect; remove it"
        )));
    }
    if settings.jobs == Some(0) {
        return Err(BuildError::Settings("jobs = 0: use 1 or more".into()));
    }
    if settings.timeout == Some(0) {
        return Err(BuildError::Settings(
            "timeout = 0: give the seconds a build may take, e.g. 7200".into(),
        ));
    }
    for f in &settings.fixups {
        if f.commits.is_empty() && f.range.is_none() {
            return Err(BuildError::Fixup {
                patch: f.patch.clone(),
                message: "give `commits = [...]` or `range = \"A..B\"`".into(),
            });
        }
        if !f.patch.is_file() {
            return Err(BuildError::Fixup {
                patch: f.patch.clone(),
                message: "no such patch file".into(),
            });
        }
    }
    Ok(())
}

/// Commit ids name directories and files: hex and a few safe characters only.
fn check_commit_name(commit: &str) -> Result<(), BuildError> {
    let safe = !commit.is_empty()
        && !commit.starts_with('.')
        && commit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if safe {
        Ok(())
    } else {
        Err(BuildError::Settings(format!(
            "`{commit}` cannot name a build: pass the commit's SHA"
        )))
    }
}

pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests;
