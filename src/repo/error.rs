//! What can go wrong reading the user's repository, each with what to do next.

use std::io;
use std::path::PathBuf;
use thiserror::Error;

/// A failure reading the user's repository or keeping the private work tree.
#[derive(Debug, Error)]
pub enum RepoError {
    /// No git repository at or above the given path.
    #[error(
        "{} is not inside a git repository; pass --repo PATH to a PostgreSQL clone",
        path.display()
    )]
    NotARepository { path: PathBuf },

    /// git refuses repositories owned by another user ("dubious ownership").
    #[error(
        "the git repository at {} belongs to another user and git refuses to read it ({detail}); \
         run pgbisect as the repository's owner, or trust it with \
         `git config --global --add safe.directory {}`",
        path.display(),
        path.display()
    )]
    NotOwned { path: PathBuf, detail: String },

    /// The revision names nothing in the repository.
    #[error("unknown revision '{rev}' in {}: no tag, branch or commit has that name; {hint}", repo.display())]
    UnknownRevision {
        rev: String,
        repo: PathBuf,
        /// Similar names, or how to fetch what is missing.
        hint: String,
    },

    /// The branch to watch names nothing in the repository.
    #[error(
        "--branch {name}: {} has no branch of that name; {known}\nhint: {hint}",
        repo.display()
    )]
    UnknownBranch {
        name: String,
        repo: PathBuf,
        /// The local branches there are, a handful of them.
        known: String,
        /// The closest name, or how to get the branch.
        hint: String,
    },

    /// A short SHA that several objects start with.
    #[error(
        "revision '{rev}' is ambiguous: several objects start with it; give more digits of the SHA, or check the \
     spelling if it is meant as a tag or branch name"
    )]
    AmbiguousRevision { rev: String },

    /// A name that is a tag and a branch of different commits.
    #[error(
        "revision '{rev}' is ambiguous: it names {}; git would take the tag with a \
         warning\nhint: say which you mean: {choices}",
        refs.join(" and ")
    )]
    AmbiguousName {
        rev: String,
        refs: Vec<String>,
        choices: String,
    },

    /// The work dir's checkout was made for another repository.
    #[error(
        "the work dir's checkout {} was made for another repository (or for commits since \
         removed from this one): its commit {head} is not in {}\nhint: give each repository a work dir of its own (--work-dir), or remove {} \
         to start this one afresh",
        path.display(),
        repo.display(),
        path.display()
    )]
    ForeignWorkTree {
        path: PathBuf,
        head: String,
        repo: PathBuf,
    },

    /// The revision names a tree or a blob.
    #[error("revision '{rev}' names a {kind}, not a commit; give a tag, a branch or a commit SHA")]
    NotACommit { rev: String, kind: String },

    /// `--good` and `--bad` are the same commit.
    #[error(
        "--good and --bad are the same commit {id}: there is nothing between them to search; \
         give an older --good or a later --bad"
    )]
    SameCommit { id: String },

    /// `good` is not an ancestor of `bad`.
    #[error("{}", not_ancestor_message(good, bad, merge_base.as_deref(), *shallow))]
    NotAncestor {
        good: String,
        bad: String,
        /// Their best common ancestor, when they have one.
        merge_base: Option<String>,
        /// The repository is a shallow clone: its history may stop
        /// before the two meet.
        shallow: bool,
    },

    /// The work directory is the user's own checkout, which pgbisect never touches.
    #[error(
        "the work tree {} is a checkout of the repository being searched; pgbisect needs a \
         private directory for its checkouts: give a work directory outside the repository's \
         own checkouts",
        path.display()
    )]
    WorkTreeIsUserCheckout { path: PathBuf },

    /// A git operation failed for a reason outside pgbisect's control.
    #[error(
        "git failed while {action}: {source}; check that the repository is readable and intact \
         (`git fsck`), and that the disk is not full"
    )]
    Git {
        action: String,
        #[source]
        source: git2::Error,
    },

    /// A file system operation on the work tree failed.
    #[error(
        "cannot {action} {}: {source}; check the permissions and free space of the work directory",
        path.display()
    )]
    Io {
        action: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl RepoError {
    /// Whether the error is in what the user asked for (a revision, a
    /// path), rather than in the environment (a failing disk, a full one).
    pub fn is_usage(&self) -> bool {
        !matches!(self, RepoError::Git { .. } | RepoError::Io { .. })
    }

    /// A [`RepoError::Git`] saying what was being done.
    pub(crate) fn git(action: impl Into<String>) -> impl FnOnce(git2::Error) -> RepoError {
        let action = action.into();
        move |source| RepoError::Git { action, source }
    }

    /// A [`RepoError::Io`] saying what was being done to which path.
    pub(crate) fn io(
        action: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> RepoError {
        let (action, path) = (action.into(), path.into());
        move |source| RepoError::Io {
            action,
            path,
            source,
        }
    }
}

fn not_ancestor_message(good: &str, bad: &str, merge_base: Option<&str>, shallow: bool) -> String {
    let message = not_ancestor_reason(good, bad, merge_base);
    if shallow && merge_base.is_none() {
        format!(
            "{message}\nhint: the repository is a shallow clone, whose history stops before \
             the two meet: run `git fetch --unshallow` (or clone without --depth) and try again"
        )
    } else {
        message
    }
}

fn not_ancestor_reason(good: &str, bad: &str, merge_base: Option<&str>) -> String {
    let intro = format!(
        "--good {good} is not an ancestor of --bad {bad}: a hunt searches the commits that lead \
         from the good commit to the bad one"
    );
    match merge_base {
        Some(base) if base == bad => format!(
            "{intro}, but --bad is the older of the two. If you are hunting an improvement \
             (the later commit got faster), swap --good and --bad"
        ),
        Some(base) => format!(
            "{intro}, but they are on different lines of history. To search the history of \
             --bad, use their merge-base {base} as --good; if you are hunting an improvement, \
             swap --good and --bad"
        ),
        None => format!(
            "{intro}, but they share no history at all; check that both name commits of the \
             same PostgreSQL repository"
        ),
    }
}
