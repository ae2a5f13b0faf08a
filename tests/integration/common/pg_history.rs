//! A history of real PostgreSQL source (`scripts/make-history.sh`) whose
//! commits are built once and shared by every test of a binary that hunts
//! through it: each hunt's work dir starts with the installs, so the hunt
//! measures instead of compiling again what another test compiled
//! (`tests/integration/build.rs` tests the building itself).
//!
//! The history and its build tree live in the target's temp folder,
//! under a file lock, so a later run (or another test binary) finds them
//! made: the same script and source give the same SHAs, and an install is
//! found by its commit and build settings, as a hunt finds it.

use super::{git, pg_source};
use pgbisect::build::{BuildOutcome, BuildSettings, Builder};
use pgbisect::lab::LabDirs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Commits after `good`.
pub const COMMITS: usize = 4;
/// The commit that slows every statement down by about half: three runs
/// at once on one CPU (and the rest of the suite beside them) are noisy.
pub const SLOW: usize = 2;
/// `PGBISECT_SPIN` of that commit.
const SPIN: &str = "80000";

/// The shared history: its repository and the SHA of the slow commit.
#[derive(Debug)]
pub struct BuiltHistory {
    root: PathBuf,
    repo: PathBuf,
    /// The slow commit.
    pub slow: String,
    installs: PathBuf,
}

static SHARED: OnceLock<Option<BuiltHistory>> = OnceLock::new();

/// The history, made and built on first use; `None` (skipped, see
/// [`super::require`]) without the PostgreSQL source.
pub fn built_history() -> Option<&'static BuiltHistory> {
    SHARED.get_or_init(make).as_ref()
}

impl BuiltHistory {
    /// A clone of the history at `dest` (objects shared, no files: instant) and
    /// `work/installs` holding every commit's install.
    ///
    /// The copy is made under the history's lock, shared: a test in another
    /// process that finds the history made still marks each install used
    /// (a file written aside and renamed), and `cp` must not meet that file
    /// half-way.
    pub fn seed(&self, dest: &Path, work: &Path) {
        clone(&self.repo, dest, false);
        std::fs::create_dir_all(work).unwrap();
        let _lock = lock(&self.root, libc::LOCK_SH);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&self.installs)
            .arg(work.join("installs"))
            .status()
            .unwrap();
        assert!(copied.success());
    }
}

/// `git clone --shared`: the clone borrows the repository's objects; with
/// `checkout` false it has no files (a hunt makes its own checkout).
fn clone(repo: &Path, dest: &Path, checkout: bool) {
    let out = Command::new("git")
        .args(["clone", "-q", "--shared"])
        .args((!checkout).then_some("--no-checkout"))
        .arg(repo)
        .arg(dest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn make() -> Option<BuiltHistory> {
    let source = pg_source()?;
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg-history");
    std::fs::create_dir_all(&root).unwrap();
    // Held until made: another test process waits, then finds it made.
    let _lock = lock(&root, libc::LOCK_EX);
    let repo = root.join("repo");
    let work = root.join("work");
    // The checkout where a hunt has it, so that ccache, which sees paths
    // relative to the work dir, finds what earlier hunts compiled.
    let checkout = work.join("checkout");
    let (slow, remade) = history_at(&repo, &source);
    if remade || !checkout.exists() {
        let _ = std::fs::remove_dir_all(&checkout);
        clone(&repo, &checkout, true);
    }
    let mut builder = Builder::new(&LabDirs::under(&work), BuildSettings::default(), 16).unwrap();
    let revs = git(&repo, &["rev-list", "--reverse", "bad"]);
    for sha in revs.lines() {
        git(&checkout, &["checkout", "-q", "--force", sha]);
        match builder.ensure(sha, &checkout).unwrap() {
            BuildOutcome::Installed { .. } => {}
            BuildOutcome::Failed { reason, .. } => panic!("{sha} does not build: {reason}"),
        }
    }
    Some(BuiltHistory {
        root,
        repo,
        slow,
        installs: work.join("installs"),
    })
}

/// The history's lock at `root`, taken as `how` (`LOCK_SH`, `LOCK_EX`) and
/// held until the file returned is dropped.
fn lock(root: &Path, how: libc::c_int) -> std::fs::File {
    let file = std::fs::File::create(root.join("lock")).unwrap();
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), how) }, 0);
    file
}

/// Makes the history at `repo` unless the same script made it from the
/// same source already: the slow commit's SHA, and whether it was made.
fn history_at(repo: &Path, source: &Path) -> (String, bool) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/make-history.sh");
    let mut key = DefaultHasher::new();
    (std::fs::read(&script).unwrap(), source, COMMITS, SLOW, SPIN).hash(&mut key);
    let key = format!("{:016x}", key.finish());
    let made = repo.with_extension("made");
    if let Some(slow) = std::fs::read_to_string(&made)
        .ok()
        .and_then(|t| t.strip_prefix(&format!("{key} ")).map(str::to_string))
    {
        return (slow, false);
    }
    let out = Command::new(&script)
        .arg(repo)
        .args([COMMITS.to_string(), SLOW.to_string(), "999".to_string()])
        .env("PGBISECT_PG_SOURCE", source)
        .env("PGBISECT_SPIN", SPIN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said.lines().find(|l| l.starts_with("slow: ")).unwrap();
    let slow = line.split_whitespace().nth(1).unwrap().to_string();
    std::fs::write(&made, format!("{key} {slow}")).unwrap();
    (slow, true)
}

/// The `smoke` workload with `extra` (a `[hosts]` section, or nothing),
/// its runs shorter (2 s after a 1 s warm-up, scale 1): a slowdown of
/// half shows in runs of 2 s.
pub fn short_smoke_profile(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("pg-hosts.toml");
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("bisect-profiles/smoke.toml");
    let mut text = std::fs::read_to_string(smoke).unwrap();
    for (from, to) in [
        ("duration = 5\n", "duration = 2\n"),
        ("scale = 10\n", "scale = 1\n"),
        ("warmup-duration = 2\n", "warmup-duration = 1\n"),
    ] {
        assert!(text.contains(from), "smoke.toml has no {from}");
        text = text.replace(from, to);
    }
    std::fs::write(&path, format!("{text}\n{extra}")).unwrap();
    path
}
