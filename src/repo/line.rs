//! A branch's line: its first parents, with when each landed, for the
//! watcher, which measures what landed on the branch night by night.

use super::{Repo, RepoError, describe};
use crate::model::Commit;

/// A commit of a branch's line and when it landed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub commit: Commit,
    /// Committer time, seconds since the epoch: on a branch that only
    /// moves forward, when the commit reached it.
    pub committed: i64,
}

impl Repo {
    /// The first-parent line of `rev` (a branch), oldest first, at most
    /// `limit` commits back from its tip.
    pub fn first_parents(&self, rev: &str, limit: usize) -> Result<Vec<Landed>, RepoError> {
        let mut current = self.find_commit(rev)?;
        let mut line = Vec::new();
        loop {
            line.push(Landed {
                commit: describe(&current),
                committed: current.committer().when().seconds(),
            });
            if line.len() >= limit {
                break;
            }
            let Ok(parent) = current.parent_id(0) else {
                break;
            };
            current = self
                .git
                .find_commit(parent)
                .map_err(RepoError::git(format!("reading commit {parent}")))?;
        }
        line.reverse();
        Ok(line)
    }
}
