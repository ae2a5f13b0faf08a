//! `--html DIR`: the watcher's results written as a static site, from the
//! work dir's database alone (the pages are made by
//! [`crate::report::watch::site`]), with the hunt report of every change that
//! has one copied in beside them and shown on a page of its own, its
//! culprit named on the change's page and in the index.
//!
//! The reports are read only from the folder derived from the work dir
//! and the change's id, its levels checked, and without following links:
//! `watch publish` often runs as root, and a report link planted in the
//! work dir must not copy a file of root's into a site others read.

use super::watch::stored;
use crate::report::findings::HuntReport;
use crate::report::watch::site::links::SiteUrl;
use crate::report::watch::site::{self, NamedCulprit, SiteInput};
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

/// How the site links out: commits to `commit`'s page (`{sha}` the
/// commit's id), the feed to the pages at `site` (where it is served).
#[derive(Debug, Clone, Copy, Default)]
pub struct SiteLinks<'a> {
    pub commit: Option<&'a str>,
    pub site: Option<&'a SiteUrl>,
}

/// A hunt report copied into the site: its text, and the culprit its JSON
/// names.
struct Copied {
    text: String,
    culprit: Option<NamedCulprit>,
}

/// Writes the site of `branch` (default: the one the work dir holds) to
/// `dir`, linked as `links` says.
pub fn publish(
    work: &WorkDir,
    store: Option<&crate::store::place::StoreAt>,
    branch: Option<&str>,
    dir: &Path,
    links: SiteLinks,
) -> anyhow::Result<Published> {
    let (mut store, branch) = stored(work, store, branch)?;
    let nights = store.nights(&branch)?;
    let runs = store.runs(&branch)?;
    let changes = store.changes(&branch)?;
    let marks = store.marks(&branch)?;
    crate::folders::create_dir(&dir.join("hunts"))
        .with_context(|| format!("cannot create {}", dir.join("hunts").display()))?;
    let mut reports = Vec::new();
    for change in &changes {
        if let Some(copied) = copy_report(work, dir, change.id)? {
            reports.push((change.id, copied));
        }
    }
    let hunted: BTreeSet<i64> = reports.iter().map(|(id, _)| *id).collect();
    let culprits: Vec<NamedCulprit> = reports
        .iter()
        .filter_map(|(_, copied)| copied.culprit.clone())
        .collect();
    let input = SiteInput {
        branch: &branch,
        nights: &nights,
        runs: &runs,
        changes: &changes,
        marks: &marks,
        hunted: &hunted,
        commit_url: links.commit,
        culprits: &culprits,
        site_url: links.site,
    };
    let mut pages = site::pages(&input);
    for (id, copied) in &reports {
        pages.push(site::hunt_report_page(&input, *id, &copied.text));
    }
    for page in &pages {
        crate::files::write_output_file(&dir.join(&page.path), &page.text)?;
    }
    Ok(Published {
        index: dir.join("index.html"),
        pages: pages.len(),
        hunts: hunted.len(),
    })
}

/// Copies the hunt report of change `id` from its folder in the work dir
/// into the site, when the hunt has written one.
fn copy_report(work: &WorkDir, dir: &Path, id: i64) -> anyhow::Result<Option<Copied>> {
    let from = hunt_dir(work, id);
    if !from.exists() {
        return Ok(None);
    }
    crate::folders::check_dir(&from)
        .map_err(|e| crate::workspace::refusal(e, "the hunt's folder"))?;
    let (text, json) = site::hunt_report(id);
    let Some(body) = copy(&from.join("report.txt"), &dir.join(text))? else {
        return Ok(None);
    };
    let report = copy(&from.join("report.json"), &dir.join(json))?;
    // A report an older pgbisect wrote, or one cut short, names no culprit
    // here; the site says "none named" rather than fail.
    let culprit = report
        .and_then(|json| serde_json::from_slice::<HuntReport>(&json).ok())
        .and_then(|r| r.culprits.into_iter().next())
        .map(|c| NamedCulprit {
            change: id,
            commit: c.commit,
            subject: c.subject,
            author: c.author,
        });
    Ok(Some(Copied {
        text: String::from_utf8_lossy(&body).into_owned(),
        culprit,
    }))
}

/// Copies the plain file `from` (never through a link) to `to` when
/// there is one; what it held.
fn copy(from: &Path, to: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let body = match crate::files::read_own(from) {
        Ok(Some(body)) => body,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", from.display())),
    };
    crate::files::write_output(to, &body)
        .with_context(|| format!("cannot write {}", to.display()))?;
    Ok(Some(body))
}
