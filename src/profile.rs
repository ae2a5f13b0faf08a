//! Workload profiles: what to build, how to benchmark, how to decide.
//!
//! A profile is a TOML file (`bisect-profiles/*.toml` ship with pgbisect)
//! describing one workload as the mailing-list threads ran it: server
//! settings, pgbench options, build flags. Unknown keys are errors that name
//! the key and the file, because a typo in a setting silently benchmarks the
//! wrong thing. Flags on the command line override the profile.

use crate::bench::{Builtin, PgbenchOptions, QueryMode, WeightedScript};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors reading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read the profile {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "in the profile {path}: {message}\nhint: `pgbisect profiles` lists the bundled profiles; docs/src/profiles.md lists every key"
    )]
    Parse { path: PathBuf, message: String },
    #[error("in the profile {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "no profile named `{name}`; bundled profiles: {known}\nhint: pass a path to a .toml file, or one of these names"
    )]
    Unknown { name: String, known: String },
}

/// A whole profile file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Profile {
    /// One line for `pgbisect profiles`.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub build: BuildSection,
    #[serde(default)]
    pub benchmark: BenchmarkSection,
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub hunt: HuntSection,
    /// Where the server and pgbench run. Left out when unset, so that a
    /// profile without `[placement]` is written (and hashed) as before.
    #[serde(
        default,
        skip_serializing_if = "crate::placement::PlacementSpec::is_unset"
    )]
    pub placement: crate::placement::PlacementSpec,
    /// Other machines to measure on. Left out when
    /// unset, so that a profile without `[hosts]` is hashed as before.
    #[serde(default, skip_serializing_if = "HostsSection::is_unset")]
    pub hosts: HostsSection,
}

/// `[hosts]`: the machines a hunt measures on, over ssh or through Slurm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostsSection {
    /// Hosts reached with ssh (names the ssh config knows), as `--hosts`.
    pub ssh: Option<Vec<String>>,
    /// ssh: a config file for `ssh -F` (default: the user's).
    pub ssh_config: Option<PathBuf>,
    /// ssh: the folder on each host for installs, pid files and the lock
    /// (default `~/.cache/pgbisect-hosts`).
    pub dir: Option<String>,
    /// Slurm nodes (as `sinfo -N` names them), one run on each at a time.
    pub nodes: Option<Vec<String>>,
    /// Slurm partition (`sbatch --partition`).
    pub partition: Option<String>,
    /// Slurm node features (`sbatch --constraint`).
    pub constraint: Option<String>,
}

impl HostsSection {
    /// True when the profile has no `[hosts]` (or an empty one).
    pub fn is_unset(&self) -> bool {
        *self == HostsSection::default()
    }
}

/// `[build]`: either a custom `command`, or PostgreSQL build settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BuildSection {
    /// Shell command run in the checkout; installs into `$PGBISECT_PREFIX`.
    pub command: Option<String>,
    /// `auto`, `autoconf` or `meson`.
    pub system: Option<String>,
    /// Extra arguments for `configure`, after the minimal defaults (the
    /// last of two clashing options wins).
    pub configure: Option<Vec<String>>,
    pub cflags: Option<String>,
    /// Arguments for `meson setup`.
    pub meson: Option<Vec<String>>,
    /// Parallel build jobs (default: the number of cores).
    pub jobs: Option<u32>,
    /// Seconds a custom build command may take before it is stopped and
    /// the commit skipped (default 14400: four hours).
    pub timeout: Option<u64>,
    /// Patches applied before building some commits (tool-chain breakage).
    #[serde(default)]
    pub fixups: Vec<FixupEntry>,
}

/// `[[build.fixups]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FixupEntry {
    /// Patch file, relative to the profile's directory.
    pub patch: PathBuf,
    /// Commits it applies to.
    #[serde(default)]
    pub commits: Vec<String>,
    /// Or a range `A..B` (B included, A not) it applies to.
    pub range: Option<String>,
}

/// Client counts: one number or a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a client count (clients = 8) or a list of them (clients = [1, 8, 32])"
)]
pub enum Clients {
    One(u32),
    Many(Vec<u32>),
}

impl Clients {
    pub fn to_vec(&self) -> Vec<u32> {
        match self {
            Clients::One(c) => vec![*c],
            Clients::Many(v) => v.clone(),
        }
    }
}

/// `[benchmark]`: either a custom `command`, or pgbench options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BenchmarkSection {
    /// Shell command run in the checkout; its output has a `tps = N` line.
    pub command: Option<String>,
    /// Seconds one run of the benchmark command may take before it is
    /// stopped and counted as a failed run (default 3600).
    pub timeout: Option<u64>,
    /// `tpcb-like`, `select-only` or `simple-update`.
    pub builtin: Option<Builtin>,
    /// A pgbench script file (`-f`), relative to the profile's directory.
    pub script: Option<PathBuf>,
    /// Several scripts with weights, as pgbench takes them:
    /// `["lookup.sql@9", "insert.sql@1"]` (`-f lookup.sql@9 -f insert.sql@1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<WeightedScript>,
    /// SQL run once with psql on the data template after `pgbench -i`,
    /// relative to the profile's directory: tables, functions, and
    /// `ALTER DATABASE postgres SET ...` for settings of the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<PathBuf>,
    /// `simple`, `extended` or `prepared` (`-M`).
    pub mode: Option<QueryMode>,
    pub clients: Option<Clients>,
    /// `-j`; default: one a CPU (at most the clients, and a divisor of them).
    pub threads: Option<u32>,
    /// Seconds per run (`-T`); with `run-length = "auto"`, the longest.
    pub duration: Option<u32>,
    /// `fixed` (every run lasts `duration`) or `auto` (a hunt chooses the
    /// length from the noise at its endpoints, `duration` the longest).
    pub run_length: Option<RunLength>,
    /// `pgbench -i -s`.
    pub scale: Option<u32>,
    /// Runs discarded before each measurement.
    pub warmup_runs: Option<u32>,
    /// Seconds per warm-up run.
    pub warmup_duration: Option<u32>,
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// `candidate` (each commit's own pgbench) or `fixed:PATH`.
    pub pgbench: Option<String>,
    /// Digests of the files named above (`setup`, `script`, `scripts.N`),
    /// taken when the profile was loaded: part of the hunt's identity, so
    /// that fixed SQL starts a new hunt. Not a key of the TOML.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub file_digests: BTreeMap<String, String>,
    /// The setup SQL's text, read once with the profile.
    #[serde(skip)]
    pub setup_sql: Option<Vec<u8>>,
}

/// How long a hunt's runs last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RunLength {
    /// The profile's `duration`.
    Fixed,
    /// Chosen from the noise at the endpoints: runs at a quarter of the
    /// profile's `duration` and at all of it, and the length that reaches
    /// the precision in the least machine time.
    Auto,
}

/// `[server]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerSection {
    /// Settings passed with `-c name=value`.
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    /// Unprivileged user to run PostgreSQL as when pgbisect runs as root.
    pub run_as: Option<String>,
}

/// `[hunt]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HuntSection {
    /// Smallest drop worth hunting, in percent.
    pub threshold: Option<f64>,
    /// Most runs per commit.
    pub max_runs: Option<usize>,
    pub first_only: Option<bool>,
    /// `posterior` (every run is evidence about where the drop is) or
    /// `bisect` (candidate by candidate).
    pub search: Option<crate::core::posterior::Search>,
    /// `tps` or `instructions` (the instructions a transaction costs,
    /// counted by cachegrind): what the hunt and `judge` decide on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<crate::core::counts::MeasureChoice>,
}

impl BenchmarkSection {
    /// Whether it names files: a setup, a script or scripts.
    pub fn names_files(&self) -> bool {
        self.setup.is_some() || self.script.is_some() || !self.scripts.is_empty()
    }

    /// pgbench options for `clients`, the profile's values over pgbench's
    /// defaults.
    pub fn pgbench_options(&self, clients: u32) -> PgbenchOptions {
        let d = PgbenchOptions::default();
        PgbenchOptions {
            builtin: self
                .builtin
                .or(if self.script.is_none() && self.scripts.is_empty() {
                    Some(Builtin::SelectOnly)
                } else {
                    None
                }),
            script: self.script.clone(),
            scripts: self.scripts.clone(),
            setup: self.setup.clone(),
            setup_sql: self.setup_sql.clone(),
            mode: self.mode.unwrap_or(d.mode),
            clients,
            threads: self.threads,
            cpus: None,
            duration_secs: self.duration.unwrap_or(d.duration_secs),
            scale: self.scale.unwrap_or(d.scale),
            warmup_runs: self.warmup_runs.unwrap_or(d.warmup_runs),
            warmup_secs: self.warmup_duration,
            extra_args: self.extra_args.clone(),
        }
    }
}

impl ServerSection {
    /// Settings as `name=value` strings, in name order.
    pub fn settings_strings(&self) -> Vec<(String, String)> {
        self.settings
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
                    other => other.to_string(),
                };
                (k.clone(), value)
            })
            .collect()
    }
}

/// Profiles that ship with pgbisect, by name.
pub const BUNDLED: &[(&str, &str)] = &[
    ("smoke", include_str!("../bisect-profiles/smoke.toml")),
    (
        "smoke-read-write",
        include_str!("../bisect-profiles/smoke-read-write.toml"),
    ),
    (
        "select-only",
        include_str!("../bisect-profiles/select-only.toml"),
    ),
    (
        "rw-exceeds-buffers",
        include_str!("../bisect-profiles/rw-exceeds-buffers.toml"),
    ),
    (
        "rw-exceeds-buffers-small",
        include_str!("../bisect-profiles/rw-exceeds-buffers-small.toml"),
    ),
    (
        "rw-fits-buffers",
        include_str!("../bisect-profiles/rw-fits-buffers.toml"),
    ),
    (
        "checkpoint-stress",
        include_str!("../bisect-profiles/checkpoint-stress.toml"),
    ),
    (
        "read-only-scaling",
        include_str!("../bisect-profiles/read-only-scaling.toml"),
    ),
];

impl Profile {
    /// Parses profile text; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        profile.validate(path)?;
        Ok(profile)
    }

    /// Loads a profile from a file path, or a bundled profile by name.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        Profile::load_with_text(name_or_path).map(|(profile, _)| profile)
    }

    /// [`Profile::load`], with the TOML it was read from (the file's, or
    /// the bundled text), for the reports that quote it.
    pub fn load_with_text(name_or_path: &str) -> Result<(Profile, String), ProfileError> {
        let path = Path::new(name_or_path);
        if path.exists() || name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let mut profile = Profile::parse(&text, path)?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            profile
                .anchor(dir)
                .map_err(|message| ProfileError::Invalid {
                    path: path.to_path_buf(),
                    message,
                })?;
            return Ok((profile, text));
        }
        match BUNDLED.iter().find(|(n, _)| *n == name_or_path) {
            Some((n, text)) => {
                let path = PathBuf::from(format!("bisect-profiles/{n}.toml"));
                let profile = Profile::parse(text, &path)?;
                // A bundled profile has no folder here: it names no files.
                if profile.benchmark.names_files() {
                    return Err(ProfileError::Invalid {
                        path,
                        message: "a bundled profile names no files".into(),
                    });
                }
                Ok((profile, text.to_string()))
            }
            None => Err(ProfileError::Unknown {
                name: name_or_path.to_string(),
                known: BUNDLED
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Makes relative patch paths relative to the profile's directory
    /// `dir`, and reads the files the benchmark names from it (see
    /// [`crate::profile_files`]); why one is refused.
    fn anchor(&mut self, dir: &Path) -> Result<(), String> {
        for f in &mut self.build.fixups {
            if f.patch.is_relative() {
                f.patch = dir.join(&f.patch);
            }
        }
        let b = &mut self.benchmark;
        let mut digests = BTreeMap::new();
        let mut read = |key: &str, id: String, path: &mut PathBuf| -> Result<Vec<u8>, String> {
            let named = crate::profile_files::read_in(dir, key, path)?;
            digests.insert(id, crate::core::fingerprint::digest(&named.text));
            *path = named.path;
            Ok(named.text)
        };
        if let Some(setup) = &mut b.setup {
            b.setup_sql = Some(read("setup", "setup".into(), setup)?);
        }
        if let Some(script) = &mut b.script {
            read("script", "script".into(), script)?;
        }
        for (n, s) in b.scripts.iter_mut().enumerate() {
            read("scripts", format!("scripts.{n}"), &mut s.path)?;
        }
        b.file_digests = digests;
        Ok(())
    }

    /// Reads again the setup SQL of a profile kept with a hunt (its path
    /// made absolute when the hunt began), from the folder it is in; an
    /// error when it is refused, or its text is no longer the one the
    /// hunt was made with.
    pub fn reread_setup(&mut self) -> Result<(), String> {
        let b = &mut self.benchmark;
        let Some(setup) = &b.setup else {
            return Ok(());
        };
        let dir = setup.parent().unwrap_or(Path::new("/"));
        let named = crate::profile_files::read_in(dir, "setup", setup)?;
        let digest = crate::core::fingerprint::digest(&named.text);
        if b.file_digests.get("setup").is_some_and(|d| *d != digest) {
            return Err(format!(
                "the setup SQL {} changed since the hunt was made: measure with the SQL the \
                 hunt used, or hunt again",
                setup.display()
            ));
        }
        b.setup_sql = Some(named.text);
        Ok(())
    }

    fn validate(&self, path: &Path) -> Result<(), ProfileError> {
        let invalid = |message: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let b = &self.benchmark;
        if !b.file_digests.is_empty() {
            return Err(invalid(
                "unknown key `file-digests` in [benchmark]: pgbisect works it out itself".into(),
            ));
        }
        if b.command.is_some() && (b.builtin.is_some() || b.script.is_some()) {
            return Err(invalid(
                "[benchmark] has `command` and pgbench options: keep one of them".into(),
            ));
        }
        if b.builtin.is_some() && b.script.is_some() {
            return Err(invalid(
                "[benchmark] has both `builtin` and `script`: keep one".into(),
            ));
        }
        if !b.scripts.is_empty() && (b.builtin.is_some() || b.script.is_some()) {
            return Err(invalid(
                "[benchmark] has `scripts` with `builtin` or `script`: keep one workload \
                 (a single script is `scripts = [\"a.sql\"]` too)"
                    .into(),
            ));
        }
        if b.command.is_some() && (!b.scripts.is_empty() || b.setup.is_some()) {
            return Err(invalid(
                "[benchmark] has `command` with `scripts` or `setup`, which only pgbench runs use: \
                 keep one of them"
                    .into(),
            ));
        }
        if let Some(t) = self.hunt.threshold
            && !(t > 0.0 && t < 100.0)
        {
            return Err(invalid(format!(
                "[hunt] threshold = {t}: give a percentage between 0 and 100, e.g. 5"
            )));
        }
        if let Some(Clients::Many(v)) = &b.clients
            && (v.is_empty() || v.contains(&0))
        {
            return Err(invalid(
                "[benchmark] clients: give one or more counts >= 1".into(),
            ));
        }
        self.check_commands().map_err(invalid)
    }

    /// Custom commands that cannot run, and settings they would silently
    /// ignore: a custom build measured by pgbench against nothing
    /// pgbisect built, PostgreSQL's build and server settings, pgbench's
    /// options for a command that runs as it is written.
    fn check_commands(&self) -> Result<(), String> {
        let (build, bench) = (&self.build, &self.benchmark);
        for (section, command) in [("build", &build.command), ("benchmark", &bench.command)] {
            if command.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return Err(format!(
                    "[{section}] command is empty: give the shell command to run, or remove \
                     the key"
                ));
            }
        }
        for (section, timeout) in [("build", build.timeout), ("benchmark", bench.timeout)] {
            if timeout == Some(0) {
                return Err(format!(
                    "[{section}] timeout = 0: give the seconds a command may take (1 or more), \
                     or remove the key for the default"
                ));
            }
        }
        if build.command.is_some() && bench.command.is_none() {
            return Err(
                "[build] command is set but [benchmark] command is not: pgbench would not \
                 measure what the custom build made; add [benchmark] command = \"...\" \
                 (printing a `tps = N` line), or remove [build] command to build PostgreSQL"
                    .into(),
            );
        }
        if bench.command.is_none() {
            return Ok(());
        }
        if !build.fixups.is_empty() {
            return Err(
                "[[build.fixups]] patch PostgreSQL builds only; with custom commands, \
                        apply the patch in the [build] command instead"
                    .into(),
            );
        }
        let ignored =
            |keys: &[(&'static str, bool)]| keys.iter().find(|(_, set)| *set).map(|k| k.0);
        let pgbench = ignored(&[
            ("duration", bench.duration.is_some()),
            ("scale", bench.scale.is_some()),
            ("mode", bench.mode.is_some()),
            ("threads", bench.threads.is_some()),
            ("warmup-runs", bench.warmup_runs.is_some()),
            ("warmup-duration", bench.warmup_duration.is_some()),
            ("extra-args", !bench.extra_args.is_empty()),
            ("pgbench", bench.pgbench.is_some()),
        ]);
        if let Some(key) = pgbench {
            return Err(format!(
                "[benchmark] {key} is pgbench's; a custom [benchmark] command runs as it is \
                 written and ignores it: remove {key}, or drop the command to use pgbench"
            ));
        }
        let postgres = ignored(&[
            ("[build] system", build.system.is_some()),
            ("[build] configure", build.configure.is_some()),
            ("[build] cflags", build.cflags.is_some()),
            ("[build] meson", build.meson.is_some()),
            ("[build] jobs", build.jobs.is_some()),
            ("[server] settings", !self.server.settings.is_empty()),
        ]);
        match postgres {
            Some(key) => Err(format!(
                "{key} is for the PostgreSQL pgbisect builds and starts; with a custom \
                 [benchmark] command nothing reads it: remove it (build and start what you \
                 need in the commands), or drop the commands to build PostgreSQL"
            )),
            None => Ok(()),
        }
    }

    /// True when the profile measures with its own shell commands.
    pub fn is_custom(&self) -> bool {
        self.benchmark.command.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_commands_parse() {
        let p = Profile::parse(
            "[build]\ncommand = \"make\"\n[benchmark]\ncommand = \"./bench\"\n",
            Path::new("x.toml"),
        )
        .unwrap();
        assert!(p.is_custom());
        assert_eq!(p.build.command.as_deref(), Some("make"));
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let err = Profile::parse("[benchmark]\nclinets = 4\n", Path::new("my.toml")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("clinets"), "{text}");
        assert!(text.contains("my.toml"), "{text}");
    }

    #[test]
    fn settings_render_as_strings() {
        let p = Profile::parse(
            "[server.settings]\nshared_buffers = \"8GB\"\nmax_connections = 200\nfsync = false\n",
            Path::new("x.toml"),
        )
        .unwrap();
        assert_eq!(
            p.server.settings_strings(),
            vec![
                ("fsync".to_string(), "off".to_string()),
                ("max_connections".to_string(), "200".to_string()),
                ("shared_buffers".to_string(), "8GB".to_string()),
            ]
        );
    }

    #[test]
    fn every_bundled_profile_parses() {
        for (name, _) in BUNDLED {
            let p = Profile::load(name).unwrap();
            assert!(!p.description.is_empty(), "{name} has no description");
        }
        let seed = Profile::load("rw-exceeds-buffers").unwrap();
        assert!(
            seed.server
                .settings_strings()
                .contains(&("shared_buffers".into(), "8GB".into()))
        );
    }

    /// The seed-000 profiles' settings exist under their own names on
    /// every version from 9.5 to master, so every server of such a hunt
    /// runs them as written; commits from before 9.5's rename get
    /// `checkpoint_segments` instead of `max_wal_size`.
    #[test]
    fn seed_profiles_mean_the_same_from_9_5_to_master() {
        use crate::server::settings::{self, Major, known_names};
        for name in ["rw-exceeds-buffers", "rw-exceeds-buffers-small"] {
            let profile = Profile::load(name).unwrap();
            let given = profile.server.settings_strings();
            let range = Major::parse("9.5").zip(Major::parse("20"));
            settings::check(&given, range).unwrap();
            for version in ["9.5", "9.6", "10", "13", "16", "20"] {
                let v = Major::parse(version).unwrap();
                let known = known_names()
                    .iter()
                    .filter(|(_, life)| life.includes(v))
                    .map(|(n, _)| n.clone())
                    .collect();
                let applied = settings::for_server(&given, &known, version).unwrap();
                assert_eq!(applied.settings, given, "{name} on {version}");
                assert!(
                    applied.notes.is_empty(),
                    "{name} on {version}: {:?}",
                    applied.notes
                );
            }
        }
        let seed = Profile::load("rw-exceeds-buffers").unwrap();
        assert_eq!(seed.benchmark.scale, Some(1000));
        assert_eq!(seed.benchmark.duration, Some(1800));
        assert_eq!(seed.benchmark.clients, Some(Clients::One(128)));
    }

    #[test]
    fn unknown_bundled_name_lists_the_known_ones() {
        let err = Profile::load("smokey").unwrap_err().to_string();
        assert!(
            err.contains("smoke") && err.contains("select-only"),
            "{err}"
        );
    }

    #[test]
    fn bad_builtin_value_names_the_choices() {
        let err = Profile::parse(
            "[benchmark]\nbuiltin = \"select_only\"\n",
            Path::new("x.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("select-only"), "{err}");
    }

    #[test]
    fn clients_of_the_wrong_type_say_what_is_accepted() {
        let err = Profile::parse("[benchmark]\nclients = \"8\"\n", Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a client count (clients = 8) or a list of them"),
            "{err}"
        );
        assert!(
            !err.contains("untagged") && !err.contains("variant"),
            "{err}"
        );
    }

    #[test]
    fn settings_custom_commands_would_ignore_are_refused() {
        let bench = "[benchmark]\ncommand = \"b\"\n";
        let refused = [
            (
                "[build]\ncommand = \"make\"\n".to_string(),
                "[benchmark] command is not",
            ),
            (
                format!("{bench}[[build.fixups]]\npatch = \"x.patch\"\ncommits = [\"abc\"]\n"),
                "patch PostgreSQL builds only",
            ),
            (
                format!("{bench}duration = 0\n"),
                "[benchmark] duration is pgbench's",
            ),
            (
                format!("{bench}warmup-runs = 1000000\n"),
                "remove warmup-runs",
            ),
            (
                format!("{bench}extra-args = [\"-n\"]\n"),
                "extra-args is pgbench's",
            ),
            (
                format!("{bench}[build]\njobs = 4\n"),
                "[build] jobs is for the PostgreSQL",
            ),
            (
                format!("{bench}[server.settings]\nfsync = false\n"),
                "[server] settings",
            ),
            (format!("{bench}timeout = 0\n"), "[benchmark] timeout = 0"),
            ("[build]\ntimeout = 0\n".to_string(), "[build] timeout = 0"),
            (
                "[benchmark]\ncommand = \"  \"\n".to_string(),
                "[benchmark] command is empty",
            ),
            (
                format!("{bench}[build]\ncommand = \"\"\n"),
                "[build] command is empty",
            ),
        ];
        for (text, says) in refused {
            let err = Profile::parse(&text, Path::new("p.toml")).unwrap_err();
            assert!(matches!(err, ProfileError::Invalid { .. }), "{text}: {err}");
            let err = err.to_string();
            assert!(
                err.contains(says) && err.contains("p.toml"),
                "{text}: {err}"
            );
        }
        let fine = format!("[build]\ncommand = \"make\"\ntimeout = 60\n{bench}clients = 4\n");
        Profile::parse(&fine, Path::new("p.toml")).unwrap();
    }

    #[test]
    fn weighted_scripts_and_setup_are_anchored_to_the_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.toml");
        std::fs::write(
            &path,
            "[benchmark]\nsetup = \"schema.sql\"\nscripts = [\"a.sql@9\", \"b.sql@1\"]\n",
        )
        .unwrap();
        for file in ["schema.sql", "a.sql", "b.sql"] {
            std::fs::write(dir.path().join(file), "SELECT 1;").unwrap();
        }
        let p = Profile::load(path.to_str().unwrap()).unwrap();
        let o = p.benchmark.pgbench_options(1);
        assert_eq!(o.setup_sql.as_deref(), Some(&b"SELECT 1;"[..]));
        assert_eq!(p.benchmark.file_digests.len(), 3);
        assert_eq!(o.builtin, None);
        assert_eq!(o.setup, Some(dir.path().join("schema.sql")));
        assert_eq!(o.scripts.len(), 2);
        assert_eq!(o.scripts[0].path, dir.path().join("a.sql"));
        assert_eq!(o.scripts[0].weight, Some(9));
        o.validate().unwrap();
    }

    #[test]
    fn scripts_exclude_the_other_workloads() {
        let both = "[benchmark]\nscript = \"a.sql\"\nscripts = [\"b.sql@2\"]\n";
        let err = Profile::parse(both, Path::new("x.toml")).unwrap_err();
        assert!(err.to_string().contains("keep one workload"), "{err}");
        let bad = "[benchmark]\nscripts = [\"b.sql@0\"]\n";
        let err = Profile::parse(bad, Path::new("x.toml")).unwrap_err();
        assert!(err.to_string().contains("FILE@WEIGHT"), "{err}");
    }

    #[test]
    fn profiles_without_the_new_keys_serialize_as_before() {
        let p = Profile::parse("[benchmark]\nscript = \"a.sql\"\n", Path::new("x.toml")).unwrap();
        let text = toml::to_string(&p).unwrap();
        assert!(
            !text.contains("scripts") && !text.contains("setup"),
            "{text}"
        );
    }

    #[test]
    fn bad_threshold_is_rejected() {
        let err = Profile::parse("[hunt]\nthreshold = 0\n", Path::new("x.toml")).unwrap_err();
        assert!(err.to_string().contains("threshold"));
    }

    proptest::proptest! {
        /// Any text, a half-saved profile's or a stranger's, is read
        /// without panic; what is accepted passes the checks again.
        #[test]
        fn any_text_reads_without_panic(text in "(?s).{0,300}") {
            if let Ok(p) = Profile::parse(&text, Path::new("x.toml")) {
                proptest::prop_assert!(p.validate(Path::new("x.toml")).is_ok());
            }
        }

        /// A bundled profile cut anywhere is read without panic.
        #[test]
        fn cut_profiles_read_without_panic(which in 0..BUNDLED.len(), at in 0usize..4000) {
            let text = BUNDLED[which].1;
            let mut cut = at.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let _ = Profile::parse(&text[..cut], Path::new("x.toml"));
        }
    }
}
