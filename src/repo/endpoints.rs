//! From the names given for `--good` and `--bad` to the commits a hunt
//! measures, and why.
//!
//! Names are git's first: a SHA, a branch, a tag, `master`, `HEAD~3`.
//! Only a name git does not know is read as a release (see
//! [`super::release`]), so `9.5` finds `REL9_5_0`. A release tag sits on
//! its stable branch, off master's line, so `--good REL9_5_0 --bad master`
//! names two commits neither of which comes before the other: the hunt
//! then starts where the release's line left master's (their merge-base),
//! since only the commits of master's line lie between that point and
//! `--bad`. Every step is recorded in words for the progress output and
//! the report.

use super::release::ReleaseName;
use super::{Repo, RepoError};
use crate::model::Commit;
use crate::report::findings::EndpointResolution;

/// A tag or branch a release name was read as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseRef {
    pub is_tag: bool,
    /// Its short name: `REL9_5_0`, `REL_16_STABLE`, `origin/REL_16_STABLE`.
    pub name: String,
    /// Why this one, when an earlier choice was missing: `there is no tag
    /// REL_16_0`.
    pub fallback: Option<String>,
}

/// A name given on the command line, and the commit it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub given: String,
    pub commit: Commit,
    /// The release ref a short name was read as; `None` when git knew the
    /// name itself.
    pub release: Option<ReleaseRef>,
}

impl Resolved {
    /// `REL9_5 -> tag REL9_5_0 (301c2273)`, when the name was read as a
    /// release; `None` when git knew it.
    pub fn reading(&self) -> Option<String> {
        let r = self.release.as_ref()?;
        let kind = if r.is_tag { "tag" } else { "branch" };
        let fallback = r
            .fallback
            .as_ref()
            .map_or_else(String::new, |f| format!(": {f}"));
        Some(format!(
            "{} -> {kind} {} ({}){fallback}",
            self.given,
            r.name,
            self.commit.short()
        ))
    }

    /// The name as given, with the ref a release name was read as:
    /// `9.5 (tag REL9_5_0)`, or just `master`.
    pub fn label(&self) -> String {
        match &self.release {
            Some(r) => format!(
                "{} ({} {})",
                self.given,
                if r.is_tag { "tag" } else { "branch" },
                r.name
            ),
            None => self.given.clone(),
        }
    }

    /// The stable branch a release name or tag belongs to, e.g.
    /// `REL9_5_STABLE` for `REL9_5_0` or `9.5`.
    fn stable_branch(&self) -> Option<String> {
        let name = self.name();
        let name = name.rsplit('/').next().unwrap_or(name);
        Some(ReleaseName::parse(name)?.major().stable_branch())
    }

    /// The name the line of history of this end goes by in messages:
    /// `master`, or `None` for a SHA.
    fn line_owner(&self) -> Option<&str> {
        let hex = self.given.len() >= 7 && self.given.bytes().all(|b| b.is_ascii_hexdigit());
        (!hex).then_some(self.given.as_str())
    }

    /// The name of the ref a release name was read as, else the name
    /// given: `REL9_5_0` for `9.5`.
    pub fn name(&self) -> &str {
        self.release.as_ref().map_or(&self.given, |r| &r.name)
    }
}

/// The two ends of a hunt: what was given, and where the hunt starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub good: Resolved,
    pub bad: Resolved,
    /// The good end the hunt measures: `good`'s commit, or, when that is
    /// off `bad`'s line of history, the commit where its line left.
    pub start: Commit,
    /// The stable branch `good` was found on, when it was moved and is on
    /// one.
    pub good_branch: Option<String>,
}

impl Endpoints {
    /// Whether the hunt starts elsewhere than at the given good commit.
    pub fn moved(&self) -> bool {
        self.start.id != self.good.commit.id
    }

    /// Why the good end is the commit it is, step by step; empty when git
    /// named it directly and the hunt starts there.
    pub fn good_reasons(&self) -> Vec<String> {
        let mut reasons: Vec<String> = self.good.reading().into_iter().collect();
        if self.moved() {
            let named = self.good.name();
            let line = match self.bad.line_owner() {
                Some(owner) => format!("{owner}'s line"),
                None => "the line of --bad".to_string(),
            };
            let on = match &self.good_branch {
                Some(branch) => format!("{named} is on {branch}, off {line}"),
                None => format!("{named} ({}) is off {line}", self.good.commit.short()),
            };
            reasons.push(format!(
                "{on}: hunting from {}, where it left {}",
                self.start.short(),
                self.bad_line()
            ));
        }
        reasons
    }

    /// What the good end's line left: `master`, or `that line` when
    /// `--bad` was given as a SHA.
    pub fn bad_line(&self) -> String {
        self.bad.line_owner().unwrap_or("that line").to_string()
    }

    /// Why the bad end is the commit it is; empty when git named it.
    pub fn bad_reasons(&self) -> Vec<String> {
        self.bad.reading().into_iter().collect()
    }

    /// The record of both ends, for the progress output and the report.
    pub fn records(&self) -> Vec<EndpointResolution> {
        let record =
            |endpoint: &str, given: &Resolved, measured: &Commit, reasons| EndpointResolution {
                endpoint: endpoint.to_string(),
                given: given.given.clone(),
                resolved: given.commit.id.clone(),
                measured: measured.id.clone(),
                reasons,
            };
        vec![
            record("good", &self.good, &self.start, self.good_reasons()),
            record("bad", &self.bad, &self.bad.commit, self.bad_reasons()),
        ]
    }
}

impl Repo {
    /// Resolves a name as git does, or else as a release name (`9.5`,
    /// `REL_16`, `16.2`, `REL9_5_STABLE`...). An unknown name keeps git's
    /// error, with similar names.
    pub fn resolve_name(&self, rev: &str) -> Result<Resolved, RepoError> {
        let release = match (self.find_commit(rev), ReleaseName::parse(rev)) {
            (Ok(commit), _) => {
                return Ok(Resolved {
                    given: rev.to_string(),
                    commit: super::describe(&commit),
                    release: None,
                });
            }
            // libgit2 reads `16` as the start of a SHA, which many
            // objects share: a release form may still name it.
            (
                Err(RepoError::UnknownRevision { .. } | RepoError::AmbiguousRevision { .. }),
                Some(release),
            ) => release,
            (Err(e), _) => return Err(e),
        };
        let mut missing = Vec::new();
        for (is_tag, name) in release.candidates() {
            let found = if is_tag {
                self.tag_commit(&name).map(|c| (name.clone(), c))
            } else {
                self.branch_commit(&name)
            };
            if let Some((short_name, commit)) = found {
                return Ok(Resolved {
                    given: rev.to_string(),
                    commit: super::describe(&commit),
                    release: Some(ReleaseRef {
                        is_tag,
                        name: short_name,
                        fallback: (!missing.is_empty())
                            .then(|| format!("there is no {}", missing.join(" or "))),
                    }),
                });
            }
            missing.push(format!("{} {name}", if is_tag { "tag" } else { "branch" }));
        }
        Err(self.unknown_release(rev, &release, &missing))
    }

    /// Resolves both ends of a hunt and finds where it starts: at `good`
    /// when it comes before `bad`, else where `good`'s line left `bad`'s.
    /// Fails when they are one commit, when `good` comes after `bad`, or
    /// when they share no history.
    pub fn endpoints(&self, good: &str, bad: &str) -> Result<Endpoints, RepoError> {
        let good = self.resolve_name(good)?;
        let bad = self.resolve_name(bad)?;
        let start = self.line_start(&good.commit, &bad.commit)?;
        let good_branch = if start.id == good.commit.id {
            None
        } else {
            good.stable_branch()
                .filter(|b| self.branch_holds(b, &good.commit))
        };
        Ok(Endpoints {
            good,
            bad,
            start,
            good_branch,
        })
    }

    /// `good` when it is an ancestor of `bad`, else their merge-base (the
    /// last commit of `bad`'s line that `good` builds on).
    pub fn line_start(&self, good: &Commit, bad: &Commit) -> Result<Commit, RepoError> {
        let good_id = self.find_commit(&good.id)?.id();
        let bad_id = self.find_commit(&bad.id)?.id();
        let on_line = self.comes_before(good_id, bad_id)?;
        if on_line {
            return Ok(good.clone());
        }
        let base = self.git.merge_base(good_id, bad_id).ok();
        match base {
            Some(base) if base != bad_id => {
                let commit = self
                    .git
                    .find_commit(base)
                    .map_err(RepoError::git(format!("reading commit {base}")))?;
                Ok(super::describe(&commit))
            }
            _ => Err(RepoError::NotAncestor {
                good: good_id.to_string(),
                bad: bad_id.to_string(),
                merge_base: base.map(|o| o.to_string()),
                shallow: self.git.is_shallow(),
            }),
        }
    }

    /// The commit a tag points to, through annotated tags.
    fn tag_commit(&self, name: &str) -> Option<git2::Commit<'_>> {
        let reference = self.git.find_reference(&format!("refs/tags/{name}")).ok()?;
        reference.peel_to_commit().ok()
    }

    /// A branch's short name and tip: the local branch, else `origin`'s,
    /// else the first other remote's that has it (a fresh clone of
    /// PostgreSQL has its stable branches only as `origin/REL_16_STABLE`).
    fn branch_commit(&self, name: &str) -> Option<(String, git2::Commit<'_>)> {
        let local = format!("refs/heads/{name}");
        let origin = format!("refs/remotes/origin/{name}");
        let mut remotes: Vec<String> = self
            .git
            .references_glob(&format!("refs/remotes/*/{name}"))
            .ok()?
            .flatten()
            .filter_map(|r| r.name().ok().map(str::to_string))
            .collect();
        remotes.sort();
        [local, origin].into_iter().chain(remotes).find_map(|full| {
            let reference = self.git.find_reference(&full).ok()?;
            let short = reference.shorthand().ok()?.to_string();
            Some((short, reference.peel_to_commit().ok()?))
        })
    }

    /// Whether the branch `name` (local or remote-tracking) holds `commit`.
    fn branch_holds(&self, name: &str, commit: &Commit) -> bool {
        let (Some((_, tip)), Ok(id)) = (self.branch_commit(name), git2::Oid::from_str(&commit.id))
        else {
            return false;
        };
        tip.id() == id || self.git.graph_descendant_of(tip.id(), id).unwrap_or(false)
    }

    /// The error for a release name none of whose refs exist.
    fn unknown_release(&self, rev: &str, release: &ReleaseName, missing: &[String]) -> RepoError {
        let wanted: Vec<(bool, String)> = release.candidates();
        let names = self.ref_names();
        let mut similar = Vec::new();
        for (_, name) in &wanted {
            for s in super::similar_names(name, &names) {
                if !similar.contains(&s) {
                    similar.push(s);
                }
            }
        }
        similar.truncate(super::MAX_SUGGESTIONS);
        let looked = format!(
            "read as PostgreSQL {}, it names {}, which this repository does not have",
            release.major().version(),
            missing.join(" or ")
        );
        let hint = if similar.is_empty() {
            format!("{looked}; {}", self.unknown_revision_hint(rev))
        } else {
            format!("{looked}; similar names: {}", similar.join(", "))
        };
        RepoError::UnknownRevision {
            rev: rev.to_string(),
            repo: self.location.clone(),
            hint,
        }
    }
}
