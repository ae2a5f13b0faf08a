//! Fixups: patches applied to the checkout before building the commits
//! they are meant for (old commits that newer compilers or C libraries
//! break), and taken out again afterwards.
//!
//! Patches are applied with `git apply`, which changes all files or none.
//! While patches are in the checkout, a note in the build directory lists
//! them, so a run interrupted in between takes them out before building
//! again.

use super::log::BuildLog;
use super::{BuildError, Fixup};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Patches in a checkout right now.
#[derive(Debug, Serialize, Deserialize)]
struct AppliedNote {
    src: PathBuf,
    patches: Vec<PathBuf>,
}

/// The fixups whose `commits` or `range` take in `commit`, in profile order.
///
/// `commits` entries match as SHA prefixes; `range = "A..B"` holds the
/// commits reachable from B and not from A (as in `git log A..B`), resolved
/// in the repository of `src`.
pub(crate) fn applicable(
    fixups: &[Fixup],
    commit: &str,
    src: &Path,
) -> Result<Vec<PathBuf>, BuildError> {
    let mut chosen = Vec::new();
    let mut repo: Option<Repository> = None;
    for fixup in fixups {
        let by_list = fixup
            .commits
            .iter()
            .any(|c| !c.is_empty() && commit.starts_with(c.as_str()));
        let by_range = match &fixup.range {
            Some(range) if !by_list => {
                if repo.is_none() {
                    repo = Some(open_repo(src, fixup)?);
                }
                match &repo {
                    Some(r) => in_range(r, range, commit, fixup)?,
                    None => false,
                }
            }
            _ => false,
        };
        if by_list || by_range {
            chosen.push(fixup.patch.clone());
        }
    }
    Ok(chosen)
}

fn open_repo(src: &Path, fixup: &Fixup) -> Result<Repository, BuildError> {
    Repository::open(src).map_err(|e| BuildError::Fixup {
        patch: fixup.patch.clone(),
        message: format!(
            "its range needs the git history, but {} is not a git checkout ({})",
            src.display(),
            e.message()
        ),
    })
}

fn in_range(
    repo: &Repository,
    range: &str,
    commit: &str,
    fixup: &Fixup,
) -> Result<bool, BuildError> {
    let bad = |message: String| BuildError::Fixup {
        patch: fixup.patch.clone(),
        message,
    };
    let (from, to) = range
        .split_once("..")
        .ok_or_else(|| bad(format!("range `{range}` is not of the form A..B")))?;
    let resolve = |rev: &str| -> Result<Oid, BuildError> {
        repo.revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map(|c| c.id())
            .map_err(|e| {
                bad(format!(
                    "cannot resolve `{rev}` of range `{range}`: {}",
                    e.message()
                ))
            })
    };
    let (from, to, id) = (resolve(from)?, resolve(to)?, resolve(commit)?);
    let reaches = |tip: Oid| -> Result<bool, BuildError> {
        if tip == id {
            return Ok(true);
        }
        repo.graph_descendant_of(tip, id)
            .map_err(|e| bad(format!("cannot walk the history: {}", e.message())))
    };
    Ok(reaches(to)? && !reaches(from)?)
}

/// Applies `patches` to `src` (all or, on failure, none of them).
/// `Ok(Some(reason))` when a patch does not apply to this commit.
pub(crate) fn apply(
    patches: &[PathBuf],
    src: &Path,
    note_path: &Path,
    log: &mut BuildLog,
) -> Result<Option<String>, BuildError> {
    if patches.is_empty() {
        return Ok(None);
    }
    let mut applied: Vec<PathBuf> = Vec::new();
    for patch in patches {
        let patch = patch
            .canonicalize()
            .map_err(BuildError::io("find the fixup patch", patch))?;
        write_note(note_path, src, &applied, Some(&patch))?;
        log.note(&format!("applying fixup {}", patch.display()))?;
        if !log.run(&mut git_apply(src, &patch, false))? {
            revert(&applied, src, note_path, log)?;
            return Ok(Some(format!(
                "fixup {} does not apply to this commit (log: {})",
                patch.display(),
                log.path().display()
            )));
        }
        applied.push(patch);
    }
    write_note(note_path, src, &applied, None)?;
    Ok(None)
}

/// Takes `patches` out again, last first, and forgets the note.
pub(crate) fn revert(
    patches: &[PathBuf],
    src: &Path,
    note_path: &Path,
    log: &mut BuildLog,
) -> Result<(), BuildError> {
    for patch in patches.iter().rev() {
        log.note(&format!("taking out fixup {}", patch.display()))?;
        if !log.run_to_end(&mut git_apply(src, patch, true))? {
            return Err(BuildError::Fixup {
                patch: patch.clone(),
                message: format!(
                    "cannot take it out of {} again (log: {}); check out the commit afresh",
                    src.display(),
                    log.path().display()
                ),
            });
        }
    }
    match fs::remove_file(note_path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BuildError::io("remove", note_path)(e)),
    }
}

/// Takes out patches an interrupted run left in a checkout. Patches that
/// no longer reverse-apply (the checkout moved on) are left alone.
pub(crate) fn recover(note_path: &Path, log: &mut BuildLog) -> Result<(), BuildError> {
    let Ok(text) = fs::read_to_string(note_path) else {
        return Ok(());
    };
    if let Ok(note) = serde_json::from_str::<AppliedNote>(&text) {
        for patch in note.patches.iter().rev() {
            log.note(&format!(
                "an earlier run left fixup {} in {}; taking it out",
                patch.display(),
                note.src.display()
            ))?;
            log.run_to_end(&mut git_apply(&note.src, patch, true))?;
        }
    }
    fs::remove_file(note_path).map_err(BuildError::io("remove", note_path))
}

fn write_note(
    note_path: &Path,
    src: &Path,
    applied: &[PathBuf],
    pending: Option<&Path>,
) -> Result<(), BuildError> {
    let mut patches = applied.to_vec();
    patches.extend(pending.map(Path::to_path_buf));
    let note = AppliedNote {
        src: src.to_path_buf(),
        patches,
    };
    let text = serde_json::to_string(&note).unwrap_or_default();
    crate::files::write(note_path, text).map_err(BuildError::io("write", note_path))
}

fn git_apply(src: &Path, patch: &Path, reverse: bool) -> Command {
    let mut command = Command::new("git");
    // Outside a checkout of its own, `src` must not be taken for a
    // subdirectory of some enclosing repository (paths would then be read
    // relative to that repository's root).
    if let Some(parent) = src.parent() {
        command.env("GIT_CEILING_DIRECTORIES", parent);
    }
    command
        .current_dir(src)
        .arg("apply")
        .arg("--whitespace=nowarn");
    if reverse {
        command.arg("-R");
    }
    command.arg(patch);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_commits_match_by_prefix_without_git() {
        let fixups = vec![
            Fixup {
                patch: "a.patch".into(),
                commits: vec!["72a98a63".into()],
                range: None,
            },
            Fixup {
                patch: "b.patch".into(),
                commits: vec!["ffff".into()],
                range: None,
            },
        ];
        let tmp = tempfile::tempdir().unwrap();
        let got = applicable(&fixups, "72a98a639c4bd7ef", tmp.path()).unwrap();
        assert_eq!(got, vec![PathBuf::from("a.patch")]);
    }

    #[test]
    fn patches_go_in_and_out_again() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("a.c"), "one\n").unwrap();
        let patch = tmp.path().join("fix.patch");
        fs::write(&patch, "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-one\n+two\n").unwrap();
        let note = tmp.path().join("note.json");
        let mut log =
            BuildLog::create(&tmp.path().join("log"), std::time::Duration::from_secs(600)).unwrap();
        let patches = vec![patch.clone()];

        assert_eq!(apply(&patches, &src, &note, &mut log).unwrap(), None);
        assert_eq!(fs::read_to_string(src.join("a.c")).unwrap(), "two\n");
        assert!(note.is_file());
        revert(&patches, &src, &note, &mut log).unwrap();
        assert_eq!(fs::read_to_string(src.join("a.c")).unwrap(), "one\n");
        assert!(!note.exists());

        // Left in by an interrupted run: taken out before the next build.
        apply(&patches, &src, &note, &mut log).unwrap();
        recover(&note, &mut log).unwrap();
        assert_eq!(fs::read_to_string(src.join("a.c")).unwrap(), "one\n");
        assert!(!note.exists());

        fs::write(src.join("a.c"), "other\n").unwrap();
        let reason = apply(&patches, &src, &note, &mut log).unwrap().unwrap();
        assert!(reason.contains("does not apply"), "{reason}");
        assert_eq!(fs::read_to_string(src.join("a.c")).unwrap(), "other\n");
    }

    #[test]
    fn a_range_outside_git_is_a_clear_error() {
        let fixups = vec![Fixup {
            patch: "a.patch".into(),
            commits: vec![],
            range: Some("a..b".into()),
        }];
        let tmp = tempfile::tempdir().unwrap();
        let err = applicable(&fixups, "abc", tmp.path()).unwrap_err();
        assert!(err.to_string().contains("not a git checkout"), "{err}");
    }
}
