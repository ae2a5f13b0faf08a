//! Git: revisions, candidates and a private work tree.
//!
//! A hunt reads the user's PostgreSQL repository to turn `--good` and
//! `--bad` into commits, to list the commits between them, and to read a few
//! headers at any commit; it builds in a private work tree of its own. This
//! module is the only place that talks to git, and it never writes to the
//! user's repository: not its checkout, not its index, not its HEAD.

mod endpoints;
mod error;
mod functions;
mod ident;
mod line;
mod patch;
pub mod release;
mod worktree;

pub use endpoints::{Endpoints, ReleaseRef, Resolved};
pub use error::RepoError;
pub use functions::CodeChange;
pub use ident::sender;
pub use line::Landed;
pub use patch::as_git_diff;
pub use worktree::WorkTree;

use crate::model::Commit;
use crate::shown::visible_line;
use git2::{ErrorCode, ObjectType, Oid, Repository};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How many similar names an unknown-revision error lists.
const MAX_SUGGESTIONS: usize = 5;

/// How many local branches an unknown-branch error lists.
const MAX_BRANCHES_LISTED: usize = 8;

/// The user's git repository, opened read-only in spirit.
pub struct Repo {
    git: Repository,
    /// Where the repository was found, for messages: its checkout, or its
    /// git directory when bare.
    location: PathBuf,
}

impl Repo {
    /// Opens the repository containing `path` (searching upwards, like git).
    pub fn open(path: &Path) -> Result<Repo, RepoError> {
        let git = Repository::discover(path).map_err(|e| match e.code() {
            ErrorCode::NotFound => RepoError::NotARepository {
                path: path.to_path_buf(),
            },
            ErrorCode::Owner => RepoError::NotOwned {
                path: path.to_path_buf(),
                detail: e.message().to_string(),
            },
            _ => RepoError::git(format!("opening the repository at {}", path.display()))(e),
        })?;
        // Rebuilt from components to drop the trailing slash git2 reports.
        let location = git
            .workdir()
            .unwrap_or_else(|| git.path())
            .components()
            .collect();
        Ok(Repo { git, location })
    }

    /// Lets this handle also read the objects kept only in `objects_dir`
    /// (the private work tree's, where commits with a patch applied are
    /// made), in memory only: nothing is written into the repository.
    pub fn add_object_source(&self, objects_dir: &Path) -> Result<(), RepoError> {
        let action = || format!("reading objects from {}", objects_dir.display());
        let path = objects_dir.to_str().ok_or_else(|| {
            RepoError::git(action())(git2::Error::from_str("the path is not UTF-8"))
        })?;
        let odb = self.git.odb().map_err(RepoError::git(action()))?;
        odb.add_disk_alternate(path)
            .map_err(RepoError::git(action()))
    }

    /// Where the repository is: its checkout, or its git directory when bare.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// Resolves a tag (annotated or not), branch, remote branch, full or
    /// short SHA, or an expression such as `HEAD~3` or `master^`; failing
    /// that, a release name such as `9.5` or `REL_16` (see
    /// [`Repo::resolve_name`]).
    pub fn resolve(&self, rev: &str) -> Result<Commit, RepoError> {
        Ok(self.resolve_name(rev)?.commit)
    }

    /// Resolves `name`, the branch to watch (a tag or a commit also
    /// does); one that names nothing is [`RepoError::UnknownBranch`],
    /// which lists the local branches and the closest of them.
    pub fn resolve_branch(&self, name: &str) -> Result<Commit, RepoError> {
        match self.resolve(name) {
            Err(RepoError::UnknownRevision { .. }) => Err(self.unknown_branch(name)),
            found => found,
        }
    }

    fn unknown_branch(&self, name: &str) -> RepoError {
        let branches = self.local_branches();
        let known = match branches.len() {
            0 => "it has no local branch at all".to_string(),
            n if n <= MAX_BRANCHES_LISTED => format!("its branches: {}", branches.join(", ")),
            n => format!(
                "its branches: {} and {} more (`git -C {} branch` lists them)",
                branches[..MAX_BRANCHES_LISTED].join(", "),
                n - MAX_BRANCHES_LISTED,
                self.location.display()
            ),
        };
        let hint = match crate::spelling::closest(name, &branches) {
            Some(close) => format!("did you mean `--branch {close}`?"),
            None => format!(
                "give --branch one of them, or a remote branch as REMOTE/NAME (after \
                 `git -C {} fetch`)",
                self.location.display()
            ),
        };
        RepoError::UnknownBranch {
            name: name.to_string(),
            repo: self.location.clone(),
            known,
            hint,
        }
    }

    /// The names of the local branches, sorted.
    fn local_branches(&self) -> Vec<String> {
        let Ok(branches) = self.git.branches(Some(git2::BranchType::Local)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = branches
            .flatten()
            .filter_map(|(b, _)| b.name().ok().flatten().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// The commits to search between `good` and `bad`: those of
    /// `git rev-list --first-parent good..bad`, oldest first, `bad` last,
    /// `good` excluded. Fails unless `good` is a proper ancestor of `bad`.
    ///
    /// Only first parents are followed, so a merged branch counts as its
    /// merge commit: the commits inside it are never built one by one.
    pub fn candidates(&self, good: &Commit, bad: &Commit) -> Result<Vec<Commit>, RepoError> {
        let good_id = self.find_commit(&good.id)?.id();
        let bad_commit = self.find_commit(&bad.id)?;
        let bad_id = bad_commit.id();
        if !self.comes_before(good_id, bad_id)? {
            return Err(RepoError::NotAncestor {
                good: good_id.to_string(),
                bad: bad_id.to_string(),
                merge_base: self
                    .git
                    .merge_base(good_id, bad_id)
                    .ok()
                    .map(|o| o.to_string()),
                shallow: self.git.is_shallow(),
            });
        }
        let not_in_good = self.reachable_from_only(bad_id, good_id)?;
        let mut chain = vec![describe(&bad_commit)];
        let mut current = bad_commit;
        while let Ok(parent) = current.parent_id(0) {
            if !not_in_good.contains(&parent) {
                break;
            }
            current = self
                .git
                .find_commit(parent)
                .map_err(RepoError::git(format!("reading commit {parent}")))?;
            chain.push(describe(&current));
        }
        chain.reverse();
        Ok(chain)
    }

    /// Whether `good` is a proper ancestor of `bad`; one commit given
    /// twice is an error.
    fn comes_before(&self, good: Oid, bad: Oid) -> Result<bool, RepoError> {
        if good == bad {
            return Err(RepoError::SameCommit {
                id: bad.to_string(),
            });
        }
        self.git
            .graph_descendant_of(bad, good)
            .map_err(RepoError::git(
                "checking that --good is an ancestor of --bad",
            ))
    }

    /// Paths whose content or mode differs between two commits' trees.
    pub fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, RepoError> {
        let old = self.find_commit(from)?.tree();
        let new = self.find_commit(to)?.tree();
        let action = format!("comparing {from} with {to}");
        let (old, new) = (
            old.map_err(RepoError::git(action.clone()))?,
            new.map_err(RepoError::git(action.clone()))?,
        );
        let diff = self
            .git
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(RepoError::git(action))?;
        let mut paths: Vec<PathBuf> = diff
            .deltas()
            .flat_map(|delta| [delta.old_file().path(), delta.new_file().path()])
            .flatten()
            .map(Path::to_path_buf)
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The content of `path` (relative to the repository root) at `commit`,
    /// or `None` when that commit has no such file. Reads git objects only,
    /// so no checkout is needed.
    pub fn read_file(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, RepoError> {
        let action = || format!("reading {path} at {commit}");
        let tree = self
            .find_commit(commit)?
            .tree()
            .map_err(RepoError::git(action()))?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(RepoError::git(action())(e)),
        };
        if entry.kind() != Some(ObjectType::Blob) {
            return Ok(None);
        }
        let object = entry
            .to_object(&self.git)
            .map_err(RepoError::git(action()))?;
        Ok(object.as_blob().map(|blob| blob.content().to_vec()))
    }

    /// The directory holding the repository's objects, shared by linked
    /// worktrees.
    pub(crate) fn objects_dir(&self) -> PathBuf {
        self.git.commondir().join("objects")
    }

    /// The repository's common git directory.
    pub(crate) fn common_dir(&self) -> &Path {
        self.git.commondir()
    }

    fn find_commit(&self, rev: &str) -> Result<git2::Commit<'_>, RepoError> {
        self.check_unambiguous(rev)?;
        let object = match self.git.revparse_single(rev) {
            Ok(object) => object,
            Err(e) => return Err(self.revision_error(rev, e)),
        };
        let kind = object.kind();
        object.peel_to_commit().map_err(|_| RepoError::NotACommit {
            rev: rev.to_string(),
            kind: kind.map_or("non-commit object", |k| k.str()).to_string(),
        })
    }

    /// A name that is both a tag and a branch (or a remote branch) of
    /// different commits is refused: git takes the tag with a warning, and
    /// a hunt between the wrong endpoints costs a night.
    fn check_unambiguous(&self, rev: &str) -> Result<(), RepoError> {
        let found: Vec<(String, git2::Oid)> = ["refs/tags/", "refs/heads/", "refs/remotes/"]
            .iter()
            .filter_map(|space| {
                let name = format!("{space}{rev}");
                let commit = self.git.find_reference(&name).ok()?.peel_to_commit().ok()?;
                Some((name, commit.id()))
            })
            .collect();
        if found.iter().all(|(_, id)| *id == found[0].1) {
            return Ok(());
        }
        Err(RepoError::AmbiguousName {
            rev: rev.to_string(),
            refs: found
                .iter()
                .map(|(name, id)| format!("{name} ({:.8})", id.to_string()))
                .collect(),
            choices: found
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
                .join(" or "),
        })
    }

    fn revision_error(&self, rev: &str, error: git2::Error) -> RepoError {
        match error.code() {
            ErrorCode::Ambiguous => RepoError::AmbiguousRevision {
                rev: rev.to_string(),
            },
            ErrorCode::NotFound | ErrorCode::InvalidSpec => RepoError::UnknownRevision {
                rev: rev.to_string(),
                repo: self.location.clone(),
                hint: self.unknown_revision_hint(rev),
            },
            _ => RepoError::git(format!("resolving revision '{rev}'"))(error),
        }
    }

    /// Similar tag and branch names, or how to get what is missing.
    fn unknown_revision_hint(&self, rev: &str) -> String {
        let names = self.ref_names();
        let similar = similar_names(rev, &names);
        let location = self.location.display();
        let other_trunk = match rev {
            "master" => Some("main"),
            "main" => Some("master"),
            _ => None,
        };
        if let Some(trunk) = other_trunk.filter(|t| names.iter().any(|(_, n)| n == t)) {
            return format!("this repository's main line is `{trunk}`, not `{rev}`");
        }
        if !similar.is_empty() {
            return format!("similar names: {}", similar.join(", "));
        }
        let looks_like_sha = rev.len() >= 4 && rev.chars().all(|c| c.is_ascii_hexdigit());
        if looks_like_sha {
            format!(
                "if it is a commit from another clone, fetch it first (`git -C {location} fetch`)"
            )
        } else if !names.iter().any(|(is_tag, _)| *is_tag) {
            format!(
                "this repository has no tags at all (some mirrors leave them out): run \
                 `git -C {location} fetch --tags` against a clone that has them, or give commit SHAs"
            )
        } else {
            format!(
                "if it is a tag or branch you have not fetched, run `git -C {location} fetch --tags`"
            )
        }
    }

    /// `(is_tag, short name)` of every tag and branch, remote ones included.
    fn ref_names(&self) -> Vec<(bool, String)> {
        let Ok(references) = self.git.references() else {
            return Vec::new();
        };
        references
            .flatten()
            .filter(|r| r.is_tag() || r.is_branch() || r.is_remote())
            .filter(|r| r.symbolic_target_bytes().is_none())
            .filter_map(|r| Some((r.is_tag(), r.shorthand().ok()?.to_string())))
            .collect()
    }

    /// Commits reachable from `tip` but not from `hidden`.
    fn reachable_from_only(&self, tip: Oid, hidden: Oid) -> Result<HashSet<Oid>, RepoError> {
        let action = || format!("listing the commits between {hidden} and {tip}");
        let mut walk = self.git.revwalk().map_err(RepoError::git(action()))?;
        walk.push(tip).map_err(RepoError::git(action()))?;
        walk.hide(hidden).map_err(RepoError::git(action()))?;
        walk.collect::<Result<HashSet<Oid>, _>>()
            .map_err(RepoError::git(action()))
    }
}

/// Names sharing the longest prefix with `rev` (at least three characters,
/// ignoring case), best first.
fn similar_names(rev: &str, names: &[(bool, String)]) -> Vec<String> {
    let wanted = rev.to_ascii_lowercase();
    let minimum = wanted.len().min(3);
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .map(|(_, name)| {
            let common = name
                .to_ascii_lowercase()
                .bytes()
                .zip(wanted.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            (common, name.as_str())
        })
        .filter(|(common, _)| *common >= minimum && minimum > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name.to_string())
        .collect()
}

/// What a report needs to name a commit.
fn describe(commit: &git2::Commit<'_>) -> Commit {
    let author = commit.author();
    // Whoever committed wrote these: read with their control characters
    // written out, so no report, line or mail carries a terminal escape.
    let shown = |bytes: &[u8]| visible_line(&String::from_utf8_lossy(bytes)).into_owned();
    Commit {
        id: commit.id().to_string(),
        subject: commit.summary_bytes().map(shown).unwrap_or_default(),
        author: format!(
            "{} <{}>",
            shown(author.name_bytes()),
            shown(author.email_bytes())
        ),
        date: rfc3339(author.when()),
    }
}

/// A git timestamp as RFC 3339 in its own time zone, e.g.
/// `2016-03-01T17:24:05-05:00`.
fn rfc3339(time: git2::Time) -> String {
    let offset = i64::from(time.offset_minutes());
    let local = time.seconds() + offset * 60;
    let (year, month, day) = civil_from_days(local.div_euclid(86_400));
    let second_of_day = local.rem_euclid(86_400);
    let sign = if offset < 0 { '-' } else { '+' };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60,
        offset.abs() / 60,
        offset.abs() % 60,
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_in_the_author_zone() {
        assert_eq!(rfc3339(git2::Time::new(0, 0)), "1970-01-01T00:00:00+00:00");
        assert_eq!(
            rfc3339(git2::Time::new(1_456_871_045, -300)),
            "2016-03-01T17:24:05-05:00"
        );
        assert_eq!(
            rfc3339(git2::Time::new(951_782_400, 330)),
            "2000-02-29T05:30:00+05:30"
        );
        assert_eq!(rfc3339(git2::Time::new(-1, 0)), "1969-12-31T23:59:59+00:00");
    }

    #[test]
    fn similar_names_prefer_the_longest_shared_prefix() {
        let names: Vec<(bool, String)> = [
            "REL_16_0",
            "REL_16_1",
            "REL_15_4",
            "REL9_6_0",
            "master",
            "origin/master",
        ]
        .iter()
        .map(|n| (true, n.to_string()))
        .collect();
        assert_eq!(
            similar_names("REL_16_9", &names),
            vec!["REL_16_0", "REL_16_1", "REL_15_4", "REL9_6_0"]
        );
        assert_eq!(similar_names("mast", &names), vec!["master"]);
        assert!(similar_names("zzz", &names).is_empty());
        assert!(similar_names("", &names).is_empty());
    }
}
