//! A private work tree in which candidate commits are checked out and built.
//!
//! It is a repository of its own (`DIR/.git`) that borrows every object from
//! the user's repository through git's alternates mechanism, like
//! `git clone --shared`: creating it copies nothing, even for PostgreSQL's
//! 65,000 commits, it always sees the user's newest commits, and it has its
//! own index and HEAD, so the user's checkout, index, HEAD and list of
//! worktrees are never touched, and nothing is written inside the user's
//! repository (so its ownership never changes either).
//!
//! Moving between commits is incremental: git rewrites only the files that
//! differ, so unchanged files keep their modification times and `make`
//! rebuilds only what changed; files the new commit does not have are
//! removed, and untracked build output is left alone.

use super::{Repo, RepoError};
use git2::build::CheckoutBuilder;
use git2::{ErrorCode, Oid, Repository};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Written into the private git directory while a checkout is under way;
/// holds the commit being checked out, so an interrupted checkout is
/// finished before the next one.
const CHECKOUT_MARKER: &str = "pgbisect-checkout-in-progress";

/// Locks git leaves behind when a process dies in the middle of an update.
const STALE_LOCKS: [&str; 2] = ["index.lock", "HEAD.lock"];

/// A private checkout of the user's repository.
pub struct WorkTree {
    git: Repository,
    dir: PathBuf,
}

impl WorkTree {
    /// Opens the private work tree in `dir`, creating it on first use.
    ///
    /// The caller must hold the work directory's lock: locks and half-done
    /// checkouts left in `dir` by an interrupted run are cleaned up here.
    pub fn open_or_create(repo: &Repo, dir: &Path) -> Result<WorkTree, RepoError> {
        crate::folders::create_dir(dir).map_err(RepoError::io("create", dir))?;
        let dir = dir
            .canonicalize()
            .map_err(RepoError::io("resolve the path of", dir))?;
        let git = open_private(repo, &dir)?;
        let git_dir = git.path().to_path_buf();
        for lock in STALE_LOCKS {
            remove_if_present(&git_dir.join(lock))?;
        }
        configure(&git, &dir)?;
        // Alternates are read when a repository is opened.
        let git = if share_objects(repo, &git_dir)? {
            Repository::open(&dir).map_err(RepoError::git(format!(
                "reopening the work tree {}",
                dir.display()
            )))?
        } else {
            git
        };
        check_head_is_in(&git, repo, &dir)?;
        let work_tree = WorkTree { git, dir };
        work_tree.finish_interrupted_checkout()?;
        Ok(work_tree)
    }

    /// The directory holding the checked-out files.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The commit checked out, if any.
    pub fn head(&self) -> Option<String> {
        let head = self.git.head().ok()?;
        head.target().map(|id| id.to_string())
    }

    /// Makes the work tree match `commit` (a SHA, as in `Commit::id`),
    /// rewriting only files that differ and removing files `commit` does
    /// not have. Local changes to tracked files are overwritten; untracked
    /// files are kept.
    pub fn checkout(&mut self, commit: &str) -> Result<(), RepoError> {
        let id = self.find_commit(commit)?;
        let marker = self.marker_path();
        crate::files::write(&marker, format!("{id}\n")).map_err(RepoError::io("write", &marker))?;
        self.checkout_id(id)?;
        remove_if_present(&marker)
    }

    /// Creates (in this private repository only) the commit `base` with
    /// `patch` (a unified diff, as from `git diff` or `git format-patch`)
    /// applied, so a patched build is measured like any other commit.
    /// Author, committer and dates are `base`'s, so the same patch on the
    /// same base is always the same commit and its build is cached.
    /// `Ok(None)` when the patch does not apply.
    pub fn commit_with_patch(
        &self,
        base: &str,
        patch: &[u8],
        message: &str,
    ) -> Result<Option<String>, RepoError> {
        let action = || format!("applying a patch on {base} in {}", self.dir.display());
        let id = self.find_commit(base)?;
        let parent = self.git.find_commit(id).map_err(RepoError::git(action()))?;
        let Ok(diff) = git2::Diff::from_buffer(patch) else {
            return Ok(None);
        };
        let tree = parent.tree().map_err(RepoError::git(action()))?;
        let Ok(mut index) = self.git.apply_to_tree(&tree, &diff, None) else {
            return Ok(None);
        };
        let new_tree = index
            .write_tree_to(&self.git)
            .and_then(|t| self.git.find_tree(t))
            .map_err(RepoError::git(action()))?;
        let commit = self
            .git
            .commit(
                None,
                &parent.author(),
                &parent.committer(),
                message,
                &new_tree,
                &[&parent],
            )
            .map_err(RepoError::git(action()))?;
        Ok(Some(commit.to_string()))
    }

    fn find_commit(&self, commit: &str) -> Result<Oid, RepoError> {
        let action = || {
            format!(
                "finding commit {commit} for the work tree {} (it must be in the repository \
                 being searched)",
                self.dir.display()
            )
        };
        let object = self
            .git
            .revparse_single(commit)
            .map_err(RepoError::git(action()))?;
        let found = object.peel_to_commit().map_err(RepoError::git(action()))?;
        Ok(found.id())
    }

    fn checkout_id(&self, id: Oid) -> Result<(), RepoError> {
        let action = || format!("checking out {id} in {}", self.dir.display());
        let commit = self.git.find_commit(id).map_err(RepoError::git(action()))?;
        let mut options = CheckoutBuilder::new();
        options.force();
        self.git
            .checkout_tree(commit.as_object(), Some(&mut options))
            .map_err(RepoError::git(action()))?;
        self.git
            .set_head_detached(id)
            .map_err(RepoError::git(action()))
    }

    /// Completes a checkout an interrupted run left half done, so its files
    /// are known to git again (and removed or rewritten by the next one).
    fn finish_interrupted_checkout(&self) -> Result<(), RepoError> {
        let marker = self.marker_path();
        let target = match fs::read_to_string(&marker) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(RepoError::io("read", &marker)(e)),
        };
        if let Ok(id) = Oid::from_str(target.trim()) {
            // A commit no longer in the repository cannot be finished; the
            // next checkout still overwrites every tracked file that differs.
            if self.git.find_commit(id).is_ok() {
                self.checkout_id(id)?;
            }
        }
        remove_if_present(&marker)
    }

    fn marker_path(&self) -> PathBuf {
        self.git.path().join(CHECKOUT_MARKER)
    }
}

/// Opens the private repository in `dir`, or creates it; refuses a `dir`
/// that is a checkout of the user's own repository.
fn open_private(repo: &Repo, dir: &Path) -> Result<Repository, RepoError> {
    match Repository::open(dir) {
        Ok(git) => {
            let same = |a: &Path, b: &Path| a.canonicalize().ok() == b.canonicalize().ok();
            if same(git.commondir(), repo.common_dir()) {
                return Err(RepoError::WorkTreeIsUserCheckout {
                    path: dir.to_path_buf(),
                });
            }
            Ok(git)
        }
        Err(e) if e.code() == ErrorCode::NotFound => Repository::init(dir).map_err(RepoError::git(
            format!("creating the work tree {}", dir.display()),
        )),
        Err(e) => Err(RepoError::git(format!(
            "opening the work tree {}",
            dir.display()
        ))(e)),
    }
}

/// The commit checked out in the private work tree must be one of the
/// user's repository: a work dir made for another repository would fail
/// at the first checkout with libgit2's "cannot be peeled".
fn check_head_is_in(git: &Repository, repo: &Repo, dir: &Path) -> Result<(), RepoError> {
    let Some(head) = git.head().ok().and_then(|h| h.target()) else {
        return Ok(()); // nothing checked out yet
    };
    if git.find_commit(head).is_ok() {
        return Ok(());
    }
    Err(RepoError::ForeignWorkTree {
        path: dir.to_path_buf(),
        head: head.to_string(),
        repo: repo.location().to_path_buf(),
    })
}

/// Settings that keep checked-out files byte-identical to the commits,
/// whatever the user's global git configuration says.
fn configure(git: &Repository, dir: &Path) -> Result<(), RepoError> {
    let action = || format!("configuring the work tree {}", dir.display());
    let mut config = git.config().map_err(RepoError::git(action()))?;
    config
        .set_bool("core.autocrlf", false)
        .map_err(RepoError::git(action()))?;
    config
        .set_bool("core.symlinks", true)
        .map_err(RepoError::git(action()))
}

/// Points the private repository at the user's objects; returns whether the
/// alternates file had to be (re)written.
fn share_objects(repo: &Repo, git_dir: &Path) -> Result<bool, RepoError> {
    let objects = repo.objects_dir();
    let objects = objects.canonicalize().unwrap_or(objects);
    let wanted = format!("{}\n", objects.display());
    let info = git_dir.join("objects").join("info");
    let alternates = info.join("alternates");
    if fs::read_to_string(&alternates).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(false);
    }
    crate::folders::create_dir(&info).map_err(RepoError::io("create", &info))?;
    crate::files::write(&alternates, wanted).map_err(RepoError::io("write", &alternates))?;
    Ok(true)
}

fn remove_if_present(path: &Path) -> Result<(), RepoError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(RepoError::io("remove", path)(e)),
        _ => Ok(()),
    }
}
