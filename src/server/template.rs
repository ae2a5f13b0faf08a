//! Data templates: a database initialized once, copied for every run.
//!
//! `pgbench -i` at a useful scale takes far longer than a run, and a
//! database that earlier runs wrote to is not the database the next run
//! should see. So each (version, workload scale) gets one template, built
//! once and checkpointed, and each measurement starts a server on a fresh
//! copy of it (`cp --reflink=auto`: near free on filesystems that share
//! blocks). A template is complete only once its marker file is written; a
//! half-made one (an interrupted build) is removed and made again.

use super::{Invocation, RunAs, Server, ServerError, SocketDir, pick_port};
use crate::bench::{PgbenchOptions, init_args};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file whose presence says a template is complete.
const MARKER: &str = "template-complete.json";

/// What a template is made from.
#[derive(Debug, Clone)]
pub struct TemplateSpec {
    /// Directory with `initdb`, `pg_ctl`, `postgres`, `psql`.
    pub bin: PathBuf,
    /// The pgbench that runs `pgbench -i`.
    pub pgbench: PathBuf,
    /// The template's own directory; its name is the caller's sharing key.
    pub dir: PathBuf,
    /// Gives the scale (and the rest of `pgbench -i`).
    pub options: PgbenchOptions,
    pub run_as: RunAs,
    /// Where the template's server is recorded while it runs.
    pub registry_dir: Option<PathBuf>,
}

/// A complete data template.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataTemplate {
    dir: PathBuf,
    /// `pgbench -i -s`: how long copying it may take grows with it.
    scale: u32,
}

impl DataTemplate {
    /// A template taken to be in `dir`, for fakes of the machinery.
    #[cfg(test)]
    pub(crate) fn at(dir: PathBuf) -> DataTemplate {
        DataTemplate { dir, scale: 1 }
    }

    /// The template for `spec`, built first if it is missing, half-made,
    /// or made for another scale. Returns it and whether it was built now.
    pub fn ensure(spec: &TemplateSpec) -> Result<(DataTemplate, bool), ServerError> {
        let dir = std::path::absolute(&spec.dir)
            .map_err(|e| ServerError::io(format!("cannot resolve {}", spec.dir.display()), e))?;
        let template = DataTemplate {
            dir,
            scale: spec.options.scale,
        };
        let wanted = marker_text(&spec.options);
        if std::fs::read_to_string(template.dir.join(MARKER))
            .ok()
            .as_deref()
            == Some(wanted.as_str())
            && template.entered(&spec.run_as)?
        {
            // Releases before this one kept a copy of the setup SQL there
            // that every user could read.
            let old_copy = template.dir.join("setup.sql");
            if old_copy.exists() {
                std::fs::remove_file(&old_copy).map_err(|e| {
                    ServerError::io(format!("cannot remove {}", old_copy.display()), e)
                })?;
            }
            return Ok((template, false));
        }
        template.build(spec)?;
        let marker = template.dir.join(MARKER);
        crate::files::write(&marker, wanted)
            .map_err(|e| ServerError::io(format!("cannot write {}", marker.display()), e))?;
        Ok((template, true))
    }

    /// Checks a complete template before it is used: every level down to
    /// its folder ours, its data directory the server's. False when it is
    /// to be made again: its folder was handed to the server's user, as
    /// templates were before they kept only their data directory there.
    fn entered(&self, run_as: &RunAs) -> Result<bool, ServerError> {
        let refused = |e: std::io::Error| ServerError::Refused {
            path: self.dir.clone(),
            detail: e.to_string(),
        };
        if let Err(e) = crate::folders::check_dir(&self.dir) {
            let old_layout = matches!(
                crate::folders::unsafe_level(&e),
                Some(crate::folders::Unsafe::Foreign { path, owner, .. })
                    if *path == self.dir && Some(*owner) == run_as.uid()
            );
            return if old_layout {
                Ok(false)
            } else {
                Err(refused(e))
            };
        }
        crate::folders::check_dir_for(&self.data_dir(), run_as.uid()).map_err(refused)?;
        Ok(true)
    }

    /// The template's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The data directory to copy.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// initdb, start, `pgbench -i`, CHECKPOINT, stop; logs in the template dir.
    fn build(&self, spec: &TemplateSpec) -> Result<(), ServerError> {
        let run_as = &spec.run_as;
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| {
                ServerError::io(
                    format!("cannot remove half-made template {}", self.dir.display()),
                    e,
                )
            })?;
        }
        // The template's folder stays ours (its logs and marker are
        // written there as root); only the data directory, made empty
        // here for initdb to fill, is handed to the server's user.
        crate::folders::create_dir(&self.dir)
            .map_err(|e| ServerError::io(format!("cannot create {}", self.dir.display()), e))?;
        let data = self.data_dir();
        crate::folders::create_dir_for(&data, run_as.uid())
            .map_err(|e| ServerError::io(format!("cannot create {}", data.display()), e))?;
        run_as.hand_over(&data)?;
        run_as.check_reachable(&data)?;
        let initdb = Invocation::new(
            spec.bin.join("initdb"),
            [
                "-D".into(),
                self.data_dir().into_os_string(),
                "-A".into(),
                "trust".into(),
                "-E".into(),
                "UTF8".into(),
                "--locale=C".into(),
                // -N (no fsync) is spelled the same from 9.3 to today.
                "-N".into(),
            ],
        );
        let initdb_log = initdb.run(run_as)?;
        write_log(&self.dir.join("initdb.log"), &initdb_log)?;

        let sockets = SocketDir::create(run_as)?;
        let server = Server {
            bin: spec.bin.clone(),
            data_dir: self.data_dir(),
            port: pick_port(sockets.path()),
            socket_dir: sockets.path().to_path_buf(),
            settings: vec![("fsync".to_string(), "off".to_string())],
            log: self.dir.join("server.log"),
            run_as: run_as.clone(),
            registry_dir: spec.registry_dir.clone(),
            pin: crate::placement::Pin::none(),
            launcher: None,
        }
        .start()?;
        let init = Invocation::new(
            &spec.pgbench,
            init_args(&spec.options, &server.conn("postgres")),
        )
        .within(super::data_limit(spec.options.scale));
        let init_log = init.run(run_as)?;
        write_log(&self.dir.join("pgbench-init.log"), &init_log)?;
        if let Some(setup) = &spec.options.setup {
            self.run_setup(spec, &server, setup)?;
        }
        server.psql("CHECKPOINT")?;
        server.stop()
    }
}

impl DataTemplate {
    /// Runs the profile's setup SQL with this commit's own psql, stopping
    /// at the first error; psql's output stays in the template's folder.
    /// psql reads the SQL on its standard input, the text read when the
    /// profile was loaded: no copy is left for other users to read, and
    /// the SQL run is the one the template is named for. SQL this version
    /// refuses makes [`ServerError::SetupFailed`] with psql's words.
    fn run_setup(
        &self,
        spec: &TemplateSpec,
        server: &super::RunningServer,
        setup: &Path,
    ) -> Result<(), ServerError> {
        let Some(sql) = spec.options.setup_sql.clone() else {
            return Err(ServerError::SetupFailed {
                path: setup.to_path_buf(),
                tail: "the setup SQL was not read with the profile".into(),
            });
        };
        let mut args: Vec<OsString> = ["-X", "-q", "-v", "ON_ERROR_STOP=1"]
            .map(OsString::from)
            .to_vec();
        args.extend(
            server
                .conn("postgres")
                .host_args()
                .into_iter()
                .map(OsString::from),
        );
        args.extend(["-d".into(), "postgres".into()]);
        let psql = Invocation::new(spec.bin.join("psql"), args).reading(sql);
        match psql.run(&spec.run_as) {
            Ok(log) => write_log(&self.dir.join("setup.log"), &log),
            Err(ServerError::Command { tail, .. }) => Err(ServerError::SetupFailed {
                path: setup.to_path_buf(),
                tail,
            }),
            Err(other) => Err(other),
        }
    }
}

/// What the marker records: the `pgbench -i` arguments that made it, and
/// a digest of the setup SQL run after it.
fn marker_text(options: &PgbenchOptions) -> String {
    let conn = crate::bench::Conn {
        socket_dir: PathBuf::new(),
        port: 0,
        dbname: String::new(),
    };
    let init = init_args(options, &conn);
    match setup_digest(options) {
        None => serde_json::json!({ "pgbench_init": init }).to_string(),
        Some(digest) => serde_json::json!({ "pgbench_init": init, "setup": digest }).to_string(),
    }
}

/// A digest of the setup SQL's text as it was read with the profile
/// (64-bit FNV-1a, hex); `None` without setup SQL. Templates of different
/// setups get different folders and markers.
pub fn setup_digest(options: &PgbenchOptions) -> Option<String> {
    options.setup.as_ref()?;
    Some(digest(options.setup_sql.as_deref().unwrap_or_default()))
}

/// A digest of `bytes` that stays the same from one build of pgbisect to
/// the next (64-bit FNV-1a, 16 hex digits): names of folders on disk.
pub use crate::core::fingerprint::digest;

fn write_log(path: &Path, text: &str) -> Result<(), ServerError> {
    crate::files::write(path, text)
        .map_err(|e| ServerError::io(format!("cannot write {}", path.display()), e))
}

/// Whether `dir`'s file system makes copies that share blocks
/// (`cp --reflink=always` works there: XFS with reflink=1, btrfs).
pub fn shares_blocks(dir: &Path) -> bool {
    let Ok(probe) = tempfile::tempdir_in(dir) else {
        return false;
    };
    let (from, to) = (probe.path().join("a"), probe.path().join("b"));
    crate::files::write(&from, [0u8; 4096]).is_ok()
        && Invocation::new(
            "cp",
            [
                OsString::from("--reflink=always"),
                from.into_os_string(),
                to.into_os_string(),
            ],
        )
        .run(&RunAs::CurrentUser)
        .is_ok()
}

/// `dest` with `suffix` added to its name: a folder beside it.
pub fn sibling(dest: &Path, suffix: &str) -> PathBuf {
    let mut name = dest.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Removes `dir`, a copy or an earlier copy of a data directory that was
/// being made or removed, if it is there.
fn remove_cut(dir: &Path) -> Result<(), ServerError> {
    if !dir.exists() {
        return Ok(());
    }
    std::fs::remove_dir_all(dir)
        .map_err(|e| ServerError::io(format!("cannot remove {}", dir.display()), e))
}

/// Copies the template's data directory to `dest` (which must not exist,
/// or be an earlier copy: a data directory, removed first) with
/// `cp -a --reflink=auto`, keeping owners and modes. Returns how long it took.
pub fn fresh_copy(template: &DataTemplate, dest: &Path) -> Result<Duration, ServerError> {
    if dest.exists() {
        if !dest.join("PG_VERSION").is_file() {
            let detail = "exists and is not a data directory; refusing to replace it".to_string();
            return Err(ServerError::BadDataDir {
                path: dest.to_path_buf(),
                detail,
            });
        }
        // Renamed away first: a removal cut short leaves no half data
        // directory in its place.
        std::fs::rename(dest, sibling(dest, ".old")).map_err(|e| {
            ServerError::io(
                format!("cannot move the earlier copy {}", dest.display()),
                e,
            )
        })?;
    }
    remove_cut(&sibling(dest, ".old"))?;
    if let Some(parent) = dest.parent() {
        crate::folders::create_dir(parent)
            .map_err(|e| ServerError::io(format!("cannot create {}", parent.display()), e))?;
    }
    // Copied beside it and renamed into place: a copy cut short (its
    // process killed) is never taken for a data directory, and the next
    // copy removes it.
    let part = sibling(dest, ".part");
    remove_cut(&part)?;
    let started = Instant::now();
    let args = [
        OsString::from("-a"),
        "--reflink=auto".into(),
        template.data_dir().into_os_string(),
        part.as_os_str().to_owned(),
    ];
    Invocation::new("cp", args)
        .within(super::data_limit(template.scale))
        .run(&RunAs::CurrentUser)?;
    std::fs::rename(&part, dest)
        .map_err(|e| ServerError::io(format!("cannot rename {}", part.display()), e))?;
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    #[test]
    fn digests_are_fnv1a_and_stable() {
        assert_eq!(super::digest(b""), "cbf29ce484222325");
        assert_eq!(super::digest(b"a"), "af63dc4c8601ec8c");
        assert_ne!(super::digest(b"ab"), super::digest(b"ba"));
    }
}
