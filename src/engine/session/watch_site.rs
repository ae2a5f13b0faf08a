//! `--html DIR`: the watcher's results written as a static site, from the
//! work dir's database alone (the pages are made by
//! [`crate::report::watch::site`]), with the hunt report of every change that
//! has one copied in beside them.
//!
//! The reports are read only from the folder derived from the work dir
//! and the change's id, its levels checked, and without following links:
//! `watch publish` often runs as root, and a report link planted in the
//! work dir must not copy a file of root's into a site others read.

use super::watch::stored;
use crate::report::watch::site::{self, SiteInput};
use crate::workspace::WorkDir;
use anyhow::Context;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where, in the work dir, the hunt of change `id` writes its report
/// (`report.txt`, and `report.json` beside it).
pub fn hunt_dir(work: &WorkDir, id: i64) -> PathBuf {
    crate::engine::watch::hunt::folder_of(&work.root().join(super::watch::HUNTS), id)
}

/// What [`publish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The site's index page.
    pub index: PathBuf,
    /// Pages written, the index among them.
    pub pages: usize,
    /// Hunt reports copied in.
    pub hunts: usize,
}

/// Writes the site of `branch` (default: the one the work dir holds) to
/// `dir`; points link to `commit_url` (`{sha}` the commit's id) when
/// given.
pub fn publish(
    work: &WorkDir,
    store: Option<&crate::store::place::StoreAt>,
    branch: Option<&str>,
    dir: &Path,
    commit_url: Option<&str>,
) -> anyhow::Result<Published> {
    let (mut store, branch) = stored(work, store, branch)?;
    let nights = store.nights(&branch)?;
    let runs = store.runs(&branch)?;
    let changes = store.changes(&branch)?;
    let marks = store.marks(&branch)?;
    crate::folders::create_dir(&dir.join("hunts"))
        .with_context(|| format!("cannot create {}", dir.join("hunts").display()))?;
    let mut hunted = BTreeSet::new();
    for change in &changes {
        let from = hunt_dir(work, change.id);
        if !from.exists() {
            continue;
        }
        crate::folders::check_dir(&from)
            .map_err(|e| crate::workspace::refusal(e, "the hunt's folder"))?;
        let (text, json) = site::hunt_report(change.id);
        if copy(&from.join("report.txt"), &dir.join(text))? {
            hunted.insert(change.id);
            copy(&from.join("report.json"), &dir.join(json))?;
        }
    }
    let pages = site::pages(&SiteInput {
        branch: &branch,
        nights: &nights,
        runs: &runs,
        changes: &changes,
        marks: &marks,
        hunted: &hunted,
        commit_url,
    });
    for page in &pages {
        crate::files::write_output_file(&dir.join(&page.path), &page.text)?;
    }
    Ok(Published {
        index: dir.join("index.html"),
        pages: pages.len(),
        hunts: hunted.len(),
    })
}

/// Copies the plain file `from` (never through a link) to `to` when
/// there is one; whether there was.
fn copy(from: &Path, to: &Path) -> anyhow::Result<bool> {
    let body = match crate::files::read_own(from) {
        Ok(Some(body)) => body,
        Ok(None) => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", from.display())),
    };
    crate::files::write_output(to, body)
        .with_context(|| format!("cannot write {}", to.display()))?;
    Ok(true)
}
