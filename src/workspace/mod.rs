//! The work dir: every path pgbisect keeps there, and who may use it.
//!
//! A work dir outlives any one run of pgbisect: a hunt killed at night is
//! resumed in the morning, `report` renders a hunt of last week, `judge`
//! measures against a hunt's journal. So the names of its folders and
//! files are an on-disk format, and they are all written here, once:
//!
//! ```text
//! <work dir>/
//!   lock                     one pgbisect at a time (Lock)
//!   checkout/                the private git work tree
//!   build/ installs/ logs/   the labs' builds (LabDirs)
//!   templates/ data/ servers/
//!   hunts/<name>/            one folder per hunt (HuntDir)
//!     journal.jsonl command.json profile.json
//!     result.json report.txt report.md chart.svg
//!     why-<culprit>.json     the why-runs of each culprit
//!     runs/ judge-runs/
//!   compare/<name>/          one folder per comparison
//! ```

mod lock;
mod plan_key;

pub use lock::{Busy, Holder, Lock, holder_of};
pub use plan_key::{PlanFlags, PlanKey};

use crate::error::UsageError;
use crate::folders::{absolute, create_dir, unsafe_level};
use crate::lab::LabDirs;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A hunt's journal: every build and run, in order.
const JOURNAL_FILE: &str = "journal.jsonl";
/// A hunt's result, as JSON.
pub const RESULT_FILE: &str = "result.json";
/// The plan a hunt was resolved to (earlier releases: its flags), for `resume`.
pub const COMMAND_FILE: &str = "command.json";
/// The hunt's resolved profile, for `judge`.
pub const PROFILE_FILE: &str = "profile.json";

/// A work dir: checkouts, builds, logs and the results of hunts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct WorkDir {
    root: PathBuf,
}

impl WorkDir {
    /// The work dir at `root`, as given.
    pub fn at(root: impl Into<PathBuf>) -> WorkDir {
        WorkDir { root: root.into() }
    }

    /// The work dir given by `--work-dir`, or the default one of `repo`
    /// (default: the current directory), made absolute: builds and
    /// benchmarks run in the checkout, where a relative path would name
    /// another folder.
    pub fn given_or_default(work_dir: Option<&Path>, repo: Option<&Path>) -> anyhow::Result<Self> {
        let root = match work_dir {
            Some(w) => w.to_path_buf(),
            None => default_for_repo(repo.unwrap_or(Path::new(".")))?,
        };
        let root = absolute(&root)
            .with_context(|| format!("cannot make the work dir {} absolute", root.display()))?;
        Ok(WorkDir::at(root))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the work dir (and its parents) if needed, each level
    /// checked (see [`create_dir`]), and takes its lock.
    pub fn create_and_lock(&self) -> anyhow::Result<Lock> {
        create_dir(&self.root).map_err(|e| self.refused(e))?;
        Lock::acquire(&self.root)
    }

    fn refused(&self, err: std::io::Error) -> anyhow::Error {
        refusal(err, &format!("the work dir {}", self.root.display()))
    }

    /// The private git work tree commits are checked out in.
    pub fn checkout(&self) -> PathBuf {
        self.root.join("checkout")
    }

    /// Objects of commits made in the private work tree (patches applied).
    pub fn private_objects(&self) -> PathBuf {
        self.checkout().join(".git/objects")
    }

    /// Where the labs keep builds, installs, logs, data and servers.
    pub fn lab_dirs(&self) -> LabDirs {
        LabDirs::under(&self.root)
    }

    /// The folder of every hunt.
    fn hunts(&self) -> PathBuf {
        self.root.join("hunts")
    }

    /// The folder of the hunt named `name`.
    pub fn hunt(&self, name: &str) -> HuntDir {
        HuntDir {
            name: name.to_string(),
            dir: self.hunts().join(name),
        }
    }

    /// The folder of a hunt with this plan: the one named from its key, or
    /// the newest one an earlier release made for the same plan, when only
    /// that exists (so its journal resumes).
    pub fn hunt_for(&self, key: &PlanKey) -> anyhow::Result<HuntDir> {
        let current = self.hunt(&key.folder_name());
        if current.dir.exists() {
            return Ok(current);
        }
        Ok(self
            .journals()?
            .into_iter()
            .find(|h| key.matches_saved(h))
            .unwrap_or(current))
    }

    /// The folder of a comparison, made if needed: it and `compare/`
    /// must be real folders, not links out of the work dir.
    pub fn comparison(&self, name: &str) -> anyhow::Result<PathBuf> {
        let all = self.root.join("compare");
        let dir = all.join(name);
        for folder in [&all, &dir] {
            crate::folders::create_dir(folder)
                .with_context(|| format!("cannot create {}", folder.display()))?;
        }
        Ok(dir)
    }

    /// Every hunt whose folder holds `file` (e.g. [`RESULT_FILE`]), newest
    /// (by that file's time) first.
    pub fn past_hunts(&self, file: &str) -> anyhow::Result<Vec<PastHunt>> {
        let hunts = self.hunts();
        let entries = match std::fs::read_dir(&hunts) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot list {}", hunts.display())),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", hunts.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let hunt = self.hunt(&name);
            let Ok(meta) = std::fs::metadata(hunt.dir.join(file)) else {
                continue;
            };
            found.push(PastHunt {
                written: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                hunt,
            });
        }
        found.sort_by(|a, b| {
            b.written
                .cmp(&a.written)
                .then(a.hunt.name.cmp(&b.hunt.name))
        });
        Ok(found)
    }

    /// The hunt named `name`, or the newest one, among those holding `file`.
    pub fn choose_hunt(&self, name: Option<&str>, file: &str) -> anyhow::Result<HuntDir> {
        let hunts = self.past_hunts(file)?;
        let looked = self.hunts().join("*").join(file);
        match name {
            None => hunts.into_iter().next().map(|h| h.hunt).ok_or_else(|| {
                UsageError(format!(
                    "no hunt in {} (looked for {})\n\
                     hint: run a hunt first (pgbisect --good REV --bad REV), or pass the \
                     --work-dir or --repo it used",
                    self.root.display(),
                    looked.display()
                ))
                .into()
            }),
            Some(name) => {
                let known: Vec<String> = hunts.iter().map(|h| h.hunt.name.clone()).collect();
                hunts
                    .into_iter()
                    .map(|h| h.hunt)
                    .find(|h| h.name == name)
                    .ok_or_else(|| {
                        UsageError(format!(
                            "no hunt named `{name}` with a {file} in {}; known: {}",
                            self.hunts().display(),
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ))
                        .into()
                    })
            }
        }
    }

    /// The journals of every hunt, newest first.
    pub fn journals(&self) -> anyhow::Result<Vec<HuntDir>> {
        Ok(self
            .past_hunts(JOURNAL_FILE)?
            .into_iter()
            .map(|h| h.hunt)
            .collect())
    }

    /// Where the folder of every hunt is, for messages.
    pub fn hunts_display(&self) -> String {
        self.hunts().display().to_string()
    }
}

/// An error creating `what` (a folder pgbisect writes under): a usage
/// error when one of its levels is not safe to write under (the user
/// fixes that), else the error with what was being done.
pub fn refusal(err: std::io::Error, what: &str) -> anyhow::Error {
    match unsafe_level(&err) {
        Some(level) => UsageError(format!("{what}: {level}")).into(),
        None => anyhow::Error::new(err).context(format!("cannot create {what}")),
    }
}

/// A past hunt's folder and when the file it was looked up by was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastHunt {
    pub hunt: HuntDir,
    pub written: SystemTime,
}

/// One hunt's folder and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuntDir {
    /// The folder's name under `hunts/`.
    pub name: String,
    dir: PathBuf,
}

impl HuntDir {
    /// A hunt folder at a path of its own (tests, or a folder given whole).
    pub fn at(dir: impl Into<PathBuf>) -> HuntDir {
        let dir = dir.into();
        let name = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        HuntDir { name, dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the hunt's folder, every level checked (see [`create_dir`]).
    pub fn create(&self) -> anyhow::Result<()> {
        create_dir(&self.dir)
            .map_err(|e| refusal(e, &format!("the hunt's folder {}", self.dir.display())))
    }

    pub fn journal(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }

    pub fn result(&self) -> PathBuf {
        self.dir.join(RESULT_FILE)
    }

    pub fn command(&self) -> PathBuf {
        self.dir.join(COMMAND_FILE)
    }

    pub fn profile(&self) -> PathBuf {
        self.dir.join(PROFILE_FILE)
    }

    pub fn report_text(&self) -> PathBuf {
        self.dir.join("report.txt")
    }

    pub fn report_markdown(&self) -> PathBuf {
        self.dir.join("report.md")
    }

    pub fn chart(&self) -> PathBuf {
        self.dir.join("chart.svg")
    }

    /// Outputs of the hunt's own runs.
    pub fn runs(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// Outputs of the runs measuring the release given as `--good`
    /// against where it left master, before the search.
    pub fn release_check_runs(&self) -> PathBuf {
        self.dir.join("release-check")
    }

    /// The journal of those runs, apart from the hunt's.
    pub fn release_check_journal(&self) -> PathBuf {
        self.dir.join("release-check.jsonl")
    }

    /// Outputs of the runs that choose the measure (`--measure auto`).
    pub fn measure_choice_runs(&self) -> PathBuf {
        self.dir.join("measure-choice")
    }

    /// The journals of those runs, timed and counted, apart from the
    /// hunt's; kept in the folder of the hunt on tps, which the choice
    /// precedes.
    pub fn measure_choice_journals(&self) -> (PathBuf, PathBuf) {
        (
            self.dir.join("measure-choice-tps.jsonl"),
            self.dir.join("measure-choice-counts.jsonl"),
        )
    }

    /// What the why-runs of a culprit found (named by its full SHA), kept
    /// apart from the journal: never evidence, not made again on resume.
    pub fn why(&self, culprit: &str) -> PathBuf {
        self.dir.join(format!("why-{culprit}.json"))
    }

    /// The CPU profiles of a culprit's why-runs and their comparison
    /// (folded stacks, table, differential flame graph).
    pub fn why_profile(&self, culprit: &str) -> PathBuf {
        self.dir.join(format!("why-{culprit}-profile"))
    }

    /// Outputs of `judge`'s runs against this hunt.
    pub fn judge_runs(&self) -> PathBuf {
        self.dir.join("judge-runs")
    }
}

/// `$XDG_CACHE_HOME/pgbisect/<repository name>`; as root without
/// `XDG_CACHE_HOME`, `/var/tmp/pgbisect/<name>`, because root's home is
/// closed to the unprivileged user that runs the servers.
fn default_for_repo(repo_dir: &Path) -> anyhow::Result<PathBuf> {
    let home_cache = || std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"));
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            if crate::server::is_root() {
                Some(PathBuf::from("/var/tmp"))
            } else {
                home_cache()
            }
        })
        .ok_or_else(|| {
            UsageError("neither XDG_CACHE_HOME nor HOME is set: pass --work-dir DIR".into())
        })?;
    let abs = std::fs::canonicalize(repo_dir)
        .with_context(|| format!("cannot find the repository {}", repo_dir.display()))?;
    let name = abs
        .file_name()
        .map_or_else(|| "repo".to_string(), |n| n.to_string_lossy().into_owned());
    Ok(cache.join("pgbisect").join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunt_with(work: &WorkDir, name: &str, file: &str, mtime_secs: u64) {
        let hunt = work.hunt(name);
        hunt.create().unwrap();
        let file = std::fs::File::create(hunt.dir().join(file)).unwrap();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(mtime_secs);
        file.set_modified(at).unwrap();
    }

    #[test]
    fn newest_first_and_folders_without_the_file_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let work = WorkDir::at(tmp.path());
        assert!(work.past_hunts(RESULT_FILE).unwrap().is_empty());
        hunt_with(&work, "old", RESULT_FILE, 1_000_000);
        hunt_with(&work, "new", RESULT_FILE, 2_000_000);
        hunt_with(&work, "running", JOURNAL_FILE, 3_000_000);
        let names = |file| -> Vec<String> {
            let hunts = work.past_hunts(file).unwrap();
            hunts.into_iter().map(|h| h.hunt.name).collect()
        };
        assert_eq!(names(RESULT_FILE), ["new", "old"]);
        assert_eq!(names(JOURNAL_FILE), ["running"]);
        assert_eq!(work.choose_hunt(None, RESULT_FILE).unwrap().name, "new");
        let old = work.choose_hunt(Some("old"), RESULT_FILE).unwrap();
        assert_eq!(old.result(), tmp.path().join("hunts/old/result.json"));
    }

    #[test]
    fn missing_hunts_are_usage_errors_that_say_where() {
        let tmp = tempfile::tempdir().unwrap();
        let work = WorkDir::at(tmp.path());
        let err = work.choose_hunt(None, RESULT_FILE).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert!(err.to_string().contains("hunts/*/result.json"), "{err}");
        assert!(err.to_string().contains("hint: run a hunt first"), "{err}");
        hunt_with(&work, "a", RESULT_FILE, 1);
        let err = work.choose_hunt(Some("b"), RESULT_FILE).unwrap_err();
        assert!(err.to_string().contains("known: a"), "{err}");
    }

    #[test]
    fn a_relative_work_dir_is_made_absolute_once() {
        let cwd = std::env::current_dir().unwrap();
        let work = WorkDir::given_or_default(Some(Path::new("../w/./x")), None).unwrap();
        assert_eq!(work.root(), cwd.parent().unwrap().join("w/x"));
        assert!(work.lab_dirs().installs.is_absolute());
    }

    #[test]
    fn a_work_dir_that_is_a_file_or_open_to_others_is_a_usage_error() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("w");
        std::fs::write(&file, "").unwrap();
        let err = WorkDir::at(&file).create_and_lock().unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err}");
        assert!(err.to_string().contains("is not a folder"), "{err}");
        assert!(!err.to_string().contains("os error"), "{err}");
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = WorkDir::at(&open).create_and_lock().unwrap_err();
        assert!(err.to_string().contains("writable by other users"), "{err}");
        let hunt = WorkDir::at(open.join("w")).hunt("h");
        let err = hunt.create().unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err}");
        assert!(!open.join("w").exists());
    }
}
