//! One reused build tree per settings, outside the source tree, so that
//! consecutive commits rebuild only what changed; and the two ways to build
//! PostgreSQL in it (autoconf and make, meson and ninja).
//!
//! The install prefix is fixed at configure time ([`PREFIX`]); every
//! commit is installed with `DESTDIR` into a staging directory and moved
//! into the install cache from there. That works because PostgreSQL finds
//! its library and share directories relative to its binaries, and because
//! the binaries look for `libpq` next to themselves (`$ORIGIN/../lib`)
//! instead of under the prefix.

use super::log::{BuildLog, failure_reason};
use super::{BuildError, BuildSettings};
use crate::server::settings::Major;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The prefix baked in at configure time; it never exists on disk. Having
/// `pgsql` in it keeps the layout flat (`share/`, not `share/postgresql/`).
pub(crate) const PREFIX: &str = "/opt/pgbisect/pgsql";

/// Run-time search path for `libpq`: next to the binaries, wherever the
/// install is moved.
const ORIGIN_RPATH: &str = "-Wl,-rpath,$ORIGIN/../lib";

/// What an install must hold for the benchmark: the server, the programs
/// that create, start and load a cluster, and what initdb reads.
const REQUIRED_FILES: [&str; 7] = [
    "bin/postgres",
    "bin/initdb",
    "bin/pg_ctl",
    "bin/psql",
    "bin/pgbench",
    "share/postgres.bki",
    "lib/plpgsql.so",
];

/// Libraries built first, one directory at a time, so that the later
/// directories (each asking make for them) never build them concurrently.
const LIBRARY_DIRS: [&str; 3] = ["src/port", "src/common", "src/fe_utils"];

/// Directories built and installed for the benchmark, in this order; those
/// a commit does not have are passed over (`contrib/pgbench` before 9.5).
const INSTALLED_DIRS: [&str; 11] = [
    "src/interfaces/libpq",
    "src/backend",
    "src/backend/utils/mb/conversion_procs",
    "src/backend/snowball",
    "src/timezone",
    "src/pl/plpgsql",
    "src/bin/initdb",
    "src/bin/pg_ctl",
    "src/bin/psql",
    "src/bin/pgbench",
    "contrib/pgbench",
];

/// Directories installed only when their Makefile has an `install` rule:
/// since PostgreSQL 17 (commit 6ab2e838) `postgres.bki` is installed from
/// `src/include/catalog`, whose Makefile has no such rule before. Its rule
/// also installs a few server headers into `include/server/catalog`, a
/// directory only a full install creates; it is made beforehand.
const INSTALLED_IF_RULE: [(&str, &str); 1] = [("src/include/catalog", "include/server/catalog")];

/// True when the Makefile `text` defines an `install` target itself.
fn has_install_rule(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("install:"))
}

/// The build system a commit is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum System {
    Autoconf,
    Meson,
}

/// How much to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// Only the directories the benchmark needs, stopping at the first error.
    Targeted,
    /// Everything under `src/`, going on after errors (`make -k`); success
    /// is judged by what got installed. The fallback when `Targeted` fails.
    WholeTree,
}

/// How one attempt ended.
pub(crate) enum Attempt {
    /// The install is staged at this path.
    Staged(PathBuf),
    /// The commit does not build; the reason quotes the log.
    Failed(String),
}

/// Recorded in the build tree after configuring, to know when to configure again.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct TreeState {
    /// The configure (or `meson setup`) command line and its environment.
    command: Vec<String>,
    /// Fingerprint of the build-system input files of the configured commit.
    inputs: String,
    /// The PostgreSQL major version the tree was configured for (`10`,
    /// `9.6`), when the source says; a state written without it reads as
    /// unknown and so differs from any known version.
    #[serde(default)]
    major: Option<String>,
}

/// What to do with an existing build tree for the commit about to be built.
#[derive(Debug, PartialEq, Eq)]
enum Reuse {
    /// Configured for this commit's build system already: build in it.
    AsIs,
    /// Same command and major version, other build-system files: configure
    /// again in place and keep the objects.
    Reconfigure,
    /// Anything else: remove the tree and configure a fresh one.
    Fresh,
}

/// Decides how the tree in `state` serves `wanted`. A tree of another
/// major version is never reused: generated headers moved between versions
/// (`schemapg.h` is a symlink into `src/backend/catalog` before 17, a file
/// of `src/include/catalog` from 17 on, commit 6ab2e838), and the Makefiles
/// of an older version do not replace what a newer one left: a 10devel
/// backend built in a tree last used for 18 compiled against 18's
/// `schemapg.h` and crashed in initdb's bootstrap.
fn reuse(state: Option<&TreeState>, wanted: &TreeState) -> Reuse {
    match state {
        Some(s) if s == wanted => Reuse::AsIs,
        Some(s) if s.command == wanted.command && s.major == wanted.major => Reuse::Reconfigure,
        _ => Reuse::Fresh,
    }
}

const STATE_FILE: &str = ".pgbisect-tree.json";

/// Everything one attempt needs to know.
pub(crate) struct TreeBuild<'a> {
    pub src: &'a Path,
    pub tree: &'a Path,
    pub stage: &'a Path,
    pub settings: &'a BuildSettings,
    /// `configure` arguments of the compatibility steps, after the user's.
    pub compat_configure: &'a [String],
    pub jobs: u32,
    pub ccache: Option<&'a Path>,
    pub system: System,
}

impl TreeBuild<'_> {
    /// Configures when needed, builds, and stages an install.
    pub(crate) fn attempt(
        &self,
        strategy: Strategy,
        log: &mut BuildLog,
    ) -> Result<Attempt, BuildError> {
        let start = log.position()?;
        let failed = |log: &mut BuildLog| -> Result<Attempt, BuildError> {
            let text = log.text_since(start)?;
            Ok(Attempt::Failed(failure_reason(&text, log.path())))
        };
        if !self.configure(log)? {
            return failed(log);
        }
        super::cache::remove_dir_if_present(self.stage)?;
        let built = match self.system {
            System::Autoconf => self.make(strategy, log)?,
            System::Meson => self.ninja(strategy, log)?,
        };
        if !built && strategy == Strategy::Targeted {
            return failed(log);
        }
        let staged = self.stage.join(PREFIX.trim_start_matches('/'));
        let missing: Vec<&str> = REQUIRED_FILES
            .iter()
            .copied()
            .filter(|f| !staged.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            log.note(&format!("the install lacks {}", missing.join(", ")))?;
            return failed(log);
        }
        if !built {
            log.note("parts outside the benchmark failed to build; the install is complete")?;
        }
        Ok(Attempt::Staged(staged))
    }

    /// Runs configure (or `meson setup`) unless the tree is configured with
    /// the same command for the same build-system inputs. `Ok(false)` when
    /// configuring failed.
    fn configure(&self, log: &mut BuildLog) -> Result<bool, BuildError> {
        let mut command = match self.system {
            System::Autoconf => self.configure_command(),
            System::Meson => self.meson_setup_command(),
        };
        let wanted = TreeState {
            command: describe(&command),
            inputs: self.inputs_fingerprint(),
            major: self.source_major(),
        };
        let state_path = self.tree.join(STATE_FILE);
        let state: Option<TreeState> = fs::read_to_string(&state_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        match reuse(state.as_ref(), &wanted) {
            Reuse::AsIs => return Ok(true),
            // Only the commit's build-system files changed: configure again in
            // place, keeping the objects (meson regenerates by itself).
            Reuse::Reconfigure => match self.system {
                System::Autoconf => {
                    log.note("the commit changes the build system: configuring again in place")?;
                }
                System::Meson => {
                    log.note("the commit changes the build system: ninja reconfigures")?;
                    return self.save_state(&state_path, &wanted).map(|()| true);
                }
            },
            Reuse::Fresh => {
                let was = state.as_ref().and_then(|s| s.major.as_deref());
                let why = match (was, wanted.major.as_deref()) {
                    (Some(was), Some(now)) if was != now => {
                        format!(" (it was configured for {was}, this commit is {now})")
                    }
                    _ => String::new(),
                };
                log.note(&format!(
                    "configuring a fresh build tree {}{why}",
                    self.tree.display()
                ))?;
                super::cache::remove_dir_if_present(self.tree)?;
            }
        }
        crate::folders::create_dir(self.tree).map_err(BuildError::io("create", self.tree))?;
        // Without a state, an interrupted configure is redone next time.
        let _ = fs::remove_file(&state_path);
        if !log.run(&mut command)? {
            return Ok(false);
        }
        self.save_state(&state_path, &wanted)?;
        Ok(true)
    }

    fn save_state(&self, path: &Path, state: &TreeState) -> Result<(), BuildError> {
        let text = serde_json::to_string_pretty(state).unwrap_or_default();
        crate::files::write(path, text).map_err(BuildError::io("write", path))
    }

    /// Fingerprint of the files that decide how the commit is configured.
    fn inputs_fingerprint(&self) -> String {
        let files: &[&str] = match self.system {
            System::Autoconf => &["configure"],
            System::Meson => &["meson.build", "meson_options.txt", "meson.options"],
        };
        let mut all = String::new();
        for f in files {
            let bytes = fs::read(self.src.join(f)).unwrap_or_default();
            all.push_str(&crate::core::fingerprint::fingerprint(
                &String::from_utf8_lossy(&bytes),
            ));
        }
        all
    }

    /// The major version the checked-out tree says it is.
    fn source_major(&self) -> Option<String> {
        ["configure.ac", "configure.in", "meson.build"]
            .iter()
            .find_map(|f| {
                let bytes = fs::read(self.src.join(f)).ok()?;
                Major::from_source(&String::from_utf8_lossy(&bytes))
            })
            .map(|m| m.to_string())
    }

    /// `SRC/configure` with the minimal options, run from the build tree.
    fn configure_command(&self) -> Command {
        let mut command = self.command(self.src.join("configure"));
        command.current_dir(self.tree);
        command.args(configure_args(self.settings, self.ccache.is_some()));
        command.args(self.compat_configure);
        command
    }

    fn meson_setup_command(&self) -> Command {
        let mut command = self.command(PathBuf::from("meson"));
        command.arg("setup").args(meson_args(self.settings));
        command.arg(self.tree).arg(self.src);
        let cflags = self
            .settings
            .cflags
            .as_deref()
            .unwrap_or(super::DEFAULT_CFLAGS);
        command.env("CFLAGS", cflags).env("LDFLAGS", ORIGIN_RPATH);
        command
    }

    /// A command with a predictable environment: English messages, no make
    /// flags inherited from a parent make, ccache paths made relative.
    fn command(&self, program: PathBuf) -> Command {
        let mut command = Command::new(program);
        command.env("LC_ALL", "C");
        for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"] {
            command.env_remove(var);
        }
        if let Some(base) = common_ancestor(self.src, self.tree) {
            // Lets ccache reuse objects between build trees of different work dirs.
            command.env("CCACHE_BASEDIR", base);
        }
        command
    }

    fn make_command(&self, dir: &Path, keep_going: bool, install: bool) -> Command {
        let mut command = self.command(PathBuf::from("make"));
        command.arg(format!("-j{}", self.jobs)).arg("-C").arg(dir);
        if keep_going {
            command.arg("-k");
        }
        if install {
            command
                .arg("install")
                .arg(format!("DESTDIR={}", self.stage.display()));
        }
        command
    }

    /// `Ok(true)` when every make step succeeded.
    fn make(&self, strategy: Strategy, log: &mut BuildLog) -> Result<bool, BuildError> {
        let exists = |dir: &&&str| self.src.join(dir).join("Makefile").is_file();
        match strategy {
            Strategy::Targeted => {
                for dir in LIBRARY_DIRS.iter().filter(exists) {
                    if !log.run(&mut self.make_command(&self.tree.join(dir), false, false))? {
                        return Ok(false);
                    }
                }
                let with_rule = |dir: &str| {
                    std::fs::read_to_string(self.src.join(dir).join("Makefile"))
                        .is_ok_and(|t| has_install_rule(&t))
                };
                for (_, stage_dir) in INSTALLED_IF_RULE.iter().filter(|(d, _)| with_rule(d)) {
                    let needed = self
                        .stage
                        .join(PREFIX.trim_start_matches('/'))
                        .join(stage_dir);
                    crate::folders::create_dir(&needed)
                        .map_err(BuildError::io("create", &needed))?;
                }
                let installed = INSTALLED_DIRS.iter().filter(exists).copied().chain(
                    INSTALLED_IF_RULE
                        .iter()
                        .map(|(d, _)| *d)
                        .filter(|d| with_rule(d)),
                );
                for dir in installed {
                    if !log.run(&mut self.make_command(&self.tree.join(dir), false, true))? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Strategy::WholeTree => {
                let src = self.tree.join("src");
                let built = log.run(&mut self.make_command(&src, true, false))?;
                let installed = log.run(&mut self.make_command(&src, true, true))?;
                Ok(built && installed)
            }
        }
    }

    fn ninja(&self, strategy: Strategy, log: &mut BuildLog) -> Result<bool, BuildError> {
        let mut build = self.command(PathBuf::from("ninja"));
        build
            .arg("-C")
            .arg(self.tree)
            .arg(format!("-j{}", self.jobs));
        if strategy == Strategy::WholeTree {
            build.args(["-k", "0"]);
        }
        let built = log.run(&mut build)?;
        let mut install = self.command(PathBuf::from("meson"));
        install
            .args(["install", "--no-rebuild", "-C"])
            .arg(self.tree)
            .arg("--destdir")
            .arg(self.stage);
        let installed = log.run(&mut install)?;
        Ok(built && installed)
    }
}

/// Configure arguments: the fixed prefix, dependency tracking (without it a
/// changed header does not rebuild its users), no optional libraries, the
/// relocatable library path, then the user's arguments, which win because
/// configure takes the last of repeated options.
pub(crate) fn configure_args(settings: &BuildSettings, ccache: bool) -> Vec<String> {
    let cflags = settings.cflags.as_deref().unwrap_or(super::DEFAULT_CFLAGS);
    let mut args: Vec<String> = [
        &format!("--prefix={PREFIX}"),
        "--enable-depend",
        "--without-readline",
        "--without-zlib",
        "--without-icu",
        "--without-openssl",
        "--disable-rpath",
        &format!("CFLAGS={cflags}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Make reads `$$` as `$`; the quotes keep the shell from expanding it.
    let mut ldflags = String::from("-Wl,-rpath,'$$ORIGIN/../lib'");
    let mut compiler = String::from("gcc");
    for arg in &settings.configure {
        if let Some(cc) = arg.strip_prefix("CC=") {
            compiler = cc.to_string();
        } else if let Some(extra) = arg.strip_prefix("LDFLAGS=") {
            ldflags = format!("{ldflags} {extra}");
        } else {
            args.push(arg.clone());
        }
    }
    args.push(format!("LDFLAGS={ldflags}"));
    let wrapped = ccache && !compiler.starts_with("ccache");
    if wrapped {
        args.push(format!("CC=ccache {compiler}"));
    } else if compiler != "gcc" || settings.configure.iter().any(|a| a.starts_with("CC=")) {
        args.push(format!("CC={compiler}"));
    }
    args
}

/// `meson setup` options: the same minimal build as for autoconf; the
/// user's `-Dname=` options replace ours of the same name.
pub(crate) fn meson_args(settings: &BuildSettings) -> Vec<String> {
    let defaults = [
        format!("--prefix={PREFIX}"),
        "--libdir=lib".to_string(),
        "--buildtype=plain".to_string(),
        "--auto-features=disabled".to_string(),
        "-Dssl=none".to_string(),
        "-Drpath=false".to_string(),
    ];
    let option_name = |a: &str| a.split('=').next().unwrap_or(a).to_string();
    let overridden: Vec<String> = settings.meson.iter().map(|a| option_name(a)).collect();
    let mut args: Vec<String> = defaults
        .into_iter()
        .filter(|d| !overridden.contains(&option_name(d)))
        .collect();
    args.extend(settings.meson.iter().cloned());
    args
}

/// The environment and arguments of a command, for the tree state.
fn describe(command: &Command) -> Vec<String> {
    let mut words: Vec<String> = command
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), v?.to_string_lossy())))
        .collect();
    words.push(command.get_program().to_string_lossy().into_owned());
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words
}

/// The deepest directory holding both paths, unless that is `/`.
fn common_ancestor(a: &Path, b: &Path) -> Option<PathBuf> {
    let mut common = PathBuf::new();
    for (x, y) in a.components().zip(b.components()) {
        if x != y {
            break;
        }
        common.push(x);
    }
    (common.components().count() > 1).then_some(common)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_rules_are_found_only_at_the_start_of_a_line() {
        let master =
            "all: bki-stamp\n\ninstall: all installdirs\n\t$(INSTALL_DATA) postgres.bki x\n";
        assert!(has_install_rule(master));
        let pg15 = "all: distprep generated-header-symlinks\n# no install: here\nclean:\n";
        assert!(!has_install_rule(pg15));
    }

    #[test]
    fn configure_defaults_and_overrides() {
        let mut settings = BuildSettings::default();
        let args = configure_args(&settings, true);
        assert!(args.contains(&"--enable-depend".to_string()));
        assert!(args.contains(&"CFLAGS=-O2".to_string()));
        assert!(args.contains(&"CC=ccache gcc".to_string()));
        assert!(args.contains(&"LDFLAGS=-Wl,-rpath,'$$ORIGIN/../lib'".to_string()));
        assert!(
            !configure_args(&settings, false)
                .iter()
                .any(|a| a.starts_with("CC="))
        );

        settings.configure = vec![
            "--with-openssl".into(),
            "CC=clang".into(),
            "LDFLAGS=-L/x".into(),
        ];
        settings.cflags = Some("-O3".into());
        let args = configure_args(&settings, true);
        let openssl = args.iter().position(|a| a == "--with-openssl").unwrap();
        let without = args.iter().position(|a| a == "--without-openssl").unwrap();
        assert!(openssl > without, "user options come last and win");
        assert!(args.contains(&"CC=ccache clang".to_string()));
        assert!(args.contains(&"CFLAGS=-O3".to_string()));
        assert!(args.contains(&"LDFLAGS=-Wl,-rpath,'$$ORIGIN/../lib' -L/x".to_string()));
        assert_eq!(configure_args(&settings, false).last().unwrap(), "CC=clang");
    }

    #[test]
    fn meson_user_options_replace_defaults() {
        let settings = BuildSettings {
            meson: vec!["-Dssl=openssl".into()],
            ..BuildSettings::default()
        };
        let args = meson_args(&settings);
        assert!(args.contains(&"-Dssl=openssl".to_string()));
        assert!(!args.contains(&"-Dssl=none".to_string()));
        assert!(args.contains(&"--auto-features=disabled".to_string()));
    }

    fn state(command: &str, inputs: &str, major: Option<&str>) -> TreeState {
        TreeState {
            command: vec![command.to_string()],
            inputs: inputs.to_string(),
            major: major.map(str::to_string),
        }
    }

    #[test]
    fn a_tree_of_another_major_version_is_configured_fresh() {
        let tree = state("configure", "a", Some("18"));
        assert_eq!(
            reuse(Some(&tree), &state("configure", "a", Some("18"))),
            Reuse::AsIs
        );
        assert_eq!(
            reuse(Some(&tree), &state("configure", "b", Some("18"))),
            Reuse::Reconfigure,
            "a commit of the same version keeps the objects"
        );
        assert_eq!(
            reuse(Some(&tree), &state("configure", "b", Some("10"))),
            Reuse::Fresh
        );
        assert_eq!(
            reuse(Some(&tree), &state("other", "a", Some("18"))),
            Reuse::Fresh
        );
        assert_eq!(
            reuse(None, &state("configure", "a", Some("18"))),
            Reuse::Fresh
        );
        let unknown = state("configure", "a", None);
        assert_eq!(
            reuse(Some(&unknown), &state("configure", "b", None)),
            Reuse::Reconfigure
        );
        assert_eq!(
            reuse(Some(&unknown), &state("configure", "b", Some("10"))),
            Reuse::Fresh
        );
    }

    #[test]
    fn a_state_written_before_versions_were_recorded_reads_as_unknown() {
        let old = r#"{"command":["configure"],"inputs":"a"}"#;
        let parsed: TreeState = serde_json::from_str(old).unwrap();
        assert_eq!(parsed, state("configure", "a", None));
    }

    #[test]
    fn the_major_version_is_read_from_the_checked_out_tree() {
        let src = tempfile::tempdir().unwrap();
        fs::write(
            src.path().join("configure.in"),
            "AC_INIT([PostgreSQL], [10devel], [pgsql-bugs@postgresql.org])\n",
        )
        .unwrap();
        let settings = BuildSettings::default();
        let build = TreeBuild {
            src: src.path(),
            tree: src.path(),
            stage: src.path(),
            settings: &settings,
            compat_configure: &[],
            jobs: 1,
            ccache: None,
            system: System::Autoconf,
        };
        assert_eq!(build.source_major().as_deref(), Some("10"));
        fs::remove_file(src.path().join("configure.in")).unwrap();
        fs::write(
            src.path().join("meson.build"),
            "project('postgresql',\n  version: '18beta1',\n)\n",
        )
        .unwrap();
        assert_eq!(build.source_major().as_deref(), Some("18"));
    }

    #[test]
    fn common_ancestor_is_never_the_root() {
        assert_eq!(
            common_ancestor(Path::new("/w/d/checkout"), Path::new("/w/d/build/x")),
            Some(PathBuf::from("/w/d"))
        );
        assert_eq!(common_ancestor(Path::new("/a/x"), Path::new("/b/y")), None);
    }
}
