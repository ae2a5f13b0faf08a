//! The hunt of a confirmed change, and its finding told once.
//!
//! A change confirmed side by side lies between the last commit measured
//! before it and the first measured after it; the commits landed between
//! those two are hunted with the series' lab and client count, by the
//! caller's [`Follow::hunt`] (the session runs it as it runs a person's
//! hunt, so the reports are alike), its runs journaled in the change's
//! own folder, `change-<id>` under the hunts' folder. The store
//! keeps where each hunt stands ([`ChangeHunt`]): a hunt stopped at the
//! night's deadline, or killed, is taken up again by the next start from
//! its journal, before anything new is measured; an ended one is never
//! hunted again. Once it ends, its reports are written beside its journal
//! (`report.txt`, `report.json`) and the finding is told, mailed
//! ([`Follow::mail`]) then given to the command ([`Follow::command`]),
//! each way recorded as soon as it is taken, so that neither is taken
//! twice.
//!
//! Nothing read back from the store names a place to write or read: the
//! store may be shared with other machines, or a file another user could
//! change, and the watcher runs as root. A change's folder is always
//! `change-<id>` under the hunts' folder of this work dir ([`folder_of`]);
//! the store keeps only that name (a path an older pgbisect stored is
//! ignored), so a work dir moved elsewhere goes on where it is now. The
//! folder's levels are checked before anything is written or read in it,
//! and its reports are read without following links.
//!
//! The runs the nights stored are not the hunt's evidence: each was made
//! on its own night, beside the reference, while the hunt decides from
//! runs of the commits it compares made close together in time; what the
//! hunt reuses is the builds (the lab's cache is the watcher's).

use super::config::{ProfileLab, Series, WatchConfig};
use crate::core::counts::Measure;
use crate::engine::hunt::budget::Budget;
use crate::engine::hunt::{HuntConfig, ran_out_of_time};
use crate::files::write_file;
use crate::lab::Lab;
use crate::lab::counting::Counting;
use crate::model::{Commit, short_sha};
use crate::progress::{Progress, ProgressEvent};
use crate::repo::Landed;
use crate::report::findings::HuntReport;
use crate::report::watch::finding;
use crate::report::watch::site::links as site_links;
use crate::store::points::Point;
use crate::store::{ChangeHunt, ChangeKind, ChangeRow, ChangeStatus, NOT_ON_THE_LINE, Store};
use crate::workspace::HuntDir;
use anyhow::Context;
use std::path::PathBuf;

/// What the engine leaves to its caller around a hunt.
pub trait Follow {
    /// Runs the hunt `asked` describes in `lab`, or goes on with it from
    /// its journal: its report, complete (the why-runs of its culprits,
    /// the setup, the command that hunts it again) and written into its
    /// folder.
    fn hunt(
        &mut self,
        asked: &ChangeAsk,
        lab: &mut dyn Lab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<HuntReport>;

    /// Mails `finding`: the Message-ID it went out under, `None` when no
    /// mail is to be sent; an error: it was not (the next start tries
    /// again).
    fn mail(&mut self, finding: &Finding) -> anyhow::Result<Option<String>>;

    /// Runs the command that is told of `finding` (`--notify-cmd`):
    /// `Ok(false)` when there is none; an error: it failed (the next
    /// start runs it again).
    fn command(&mut self, finding: &Finding) -> anyhow::Result<bool>;
}

/// The hunt of a confirmed change, as the watcher asks for it.
pub struct ChangeAsk<'a> {
    pub change: &'a ChangeRow,
    /// The series' profile, as its lab is named.
    pub profile: &'a str,
    /// The commits from the last one measured before the change to the
    /// first one after it, both in, oldest first.
    pub commits: Vec<Commit>,
    pub config: HuntConfig,
    /// Its journal, runs and reports: `change-<id>` ([`folder_of`]).
    pub folder: &'a HuntDir,
    pub budget: Option<Budget>,
}

impl ChangeAsk<'_> {
    /// The name the hunt's journal carries: a hunt on counts says so, so
    /// that its journal is never taken up by a hunt on tps, nor the
    /// other way round.
    pub fn journal_name(&self) -> String {
        match self.config.measure {
            Measure::Tps => format!("watch-change-{}", self.change.id),
            Measure::Instructions => format!("watch-change-{}-instructions", self.change.id),
        }
    }
}

/// A hunted change, ready to be told.
pub struct Finding<'a> {
    pub change: &'a ChangeRow,
    pub report: &'a HuntReport,
    /// The hunt's folder, with `report.txt` and `report.json`.
    pub hunt: &'a HuntDir,
    pub subject: String,
    pub body: String,
    /// Names the message the same way however often it is sent.
    pub message_id_part: String,
}

/// Where the hunts go and who follows them up.
pub struct Hunting<'a> {
    /// The hunts' folder: `change-<id>` in it for each change.
    pub dir: PathBuf,
    pub follow: &'a mut dyn Follow,
}

/// A change's hunt as it stands after this start.
#[derive(Debug, Clone, PartialEq)]
pub struct Hunted {
    pub change: ChangeRow,
    pub hunt: ChangeHunt,
    /// Its folder ([`folder_of`]).
    pub folder: PathBuf,
}

/// The name a change's hunt folder has under the hunts' folder, as the
/// store keeps it.
pub fn folder_name(change: i64) -> String {
    format!("change-{change}")
}

/// The folder of the hunt of `change`: derived from the hunts' folder and
/// the change's id, never read from the store.
pub fn folder_of(hunts: &std::path::Path, change: i64) -> PathBuf {
    hunts.join(folder_name(change))
}

/// The hunt's text report as the store keeps it: relative to the hunts'
/// folder.
fn stored_report(change: i64) -> String {
    format!("{}/{REPORT_TEXT}", folder_name(change))
}

/// The text report's name in a hunt's folder.
const REPORT_TEXT: &str = "report.txt";

/// What the hunts of one start did.
#[derive(Debug, Clone, Default)]
pub struct Hunts {
    pub hunted: Vec<Hunted>,
    /// Why a hunt stopped before its end (the night's deadline).
    pub stopped: Option<String>,
}

/// Every confirmed drop of a series still measured: its hunt taken up
/// again (or, unless `begun_only`, begun), and once ended its finding
/// told; the hunts this start moved on are returned. Hunts go in the
/// order their changes were found; one stopped by the deadline stops the
/// rest.
pub fn hunt_changes(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    line: &[Landed],
    cfg: &WatchConfig,
    (hunting, begun_only): (&mut Hunting, bool),
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Hunts> {
    let mut out = Hunts::default();
    let known = store.hunts(&cfg.branch)?;
    for change in store.changes(&cfg.branch)? {
        crate::proc::check_interrupt()?;
        let Some((profile, series)) = super::detect::lab_of(labs, &change.series) else {
            continue;
        };
        // A drift is told, not hunted: its loss is spread over many
        // commits, none of which need be over the hunt's threshold.
        let drop = change.status == ChangeStatus::Confirmed
            && change.pct < 0.0
            && change.kind == ChangeKind::Step;
        let mut hunt = match known.iter().find(|h| h.change == change.id) {
            Some(h) => h.clone(),
            None if drop && !begun_only => {
                let begun = ChangeHunt::begun(change.id, &folder_name(change.id));
                store.save_hunt(&begun)?;
                begun
            }
            None => continue,
        };
        let path = folder_of(&hunting.dir, change.id);
        let folder = HuntDir::at(&path);
        let before = hunt.clone();
        if hunt.outcome.is_none() {
            let lab = &mut labs[profile];
            let asked = (lab, &series, &folder);
            match hunt_one(asked, &change, line, cfg, hunting.follow, note)? {
                Ended::Stopped(reason) => {
                    out.hunted.push(Hunted {
                        change,
                        hunt,
                        folder: path,
                    });
                    out.stopped = Some(reason);
                    break;
                }
                ended => ended.record(&mut hunt),
            }
            store.save_hunt(&hunt)?;
        }
        if hunt.mailed.is_none() && hunt.report.is_some() {
            tell(
                store,
                &change,
                &mut hunt,
                &folder,
                cfg,
                hunting.follow,
                note,
            )?;
        }
        // Only what this start did: an ended, told hunt is not news.
        if hunt != before {
            out.hunted.push(Hunted {
                change,
                hunt,
                folder: path,
            });
        }
    }
    Ok(out)
}

/// How a hunt of this start ended.
pub(super) enum Ended {
    Report(Box<HuntReport>),
    /// At the deadline, with work left for the next start.
    Stopped(String),
    /// Its commits are no longer on the line.
    Off,
}

impl Ended {
    /// Keeps in `hunt` what an ended hunt came to (nothing when stopped).
    pub(super) fn record(&self, hunt: &mut ChangeHunt) {
        match self {
            Ended::Stopped(_) => {}
            Ended::Off => hunt.outcome = Some(NOT_ON_THE_LINE.into()),
            Ended::Report(report) => {
                hunt.outcome = Some(report.outcome.as_str().to_string());
                hunt.culprit = report.culprits.first().map(|c| c.commit.clone());
                hunt.report = Some(stored_report(hunt.change));
            }
        }
    }
}

/// Hunts `change` (or goes on with its hunt) in `lab` at its series'
/// client count and on its measure (counted runs, decided as counts, for
/// a count series), its journal, runs and reports in `folder`; the JSON
/// report is also kept under the name the store's readers know
/// ([`report_json`]).
pub(super) fn hunt_one(
    (lab, series, folder): (&mut ProfileLab, &Series, &HuntDir),
    change: &ChangeRow,
    line: &[Landed],
    cfg: &WatchConfig,
    follow: &mut dyn Follow,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Ended> {
    let Some(commits) = range_of(line, change) else {
        note(&format!(
            "{}: the change's commits are no longer on {}: not hunted",
            change.series, cfg.branch
        ));
        return Ok(Ended::Off);
    };
    folder.create()?;
    note(&format!(
        "{}: hunting the {} commits after {} up to {} at {} clients on {}",
        change.series,
        commits.len() - 1,
        short_sha(&change.before),
        short_sha(&change.after),
        series.clients,
        series.measure
    ));
    let asked = ChangeAsk {
        change,
        profile: &lab.name,
        commits,
        config: HuntConfig {
            clients: series.clients,
            decision: cfg.decision_on(series.measure),
            measure: series.measure,
            ..HuntConfig::default()
        },
        folder,
        budget: cfg.budget,
    };
    let since = super::since::Since::new(lab.lab.as_mut());
    let progress = &mut Noted(&mut *note);
    // A hunt asks its lab for runs: on counts, each of them counted.
    let report = match series.measure {
        Measure::Tps => follow.hunt(&asked, &mut { since }, progress)?,
        Measure::Instructions => follow.hunt(&asked, &mut Counting(since), progress)?,
    };
    if ran_out_of_time(&report) {
        return Ok(Ended::Stopped(format!(
            "the hunt of {} stopped at the deadline; the next start goes on",
            change.series
        )));
    }
    write_file(&report_json(folder), &crate::report::json(&report)?)?;
    note(&format!(
        "{}: the hunt ended: {}{}",
        change.series,
        report.outcome.as_str(),
        report
            .culprits
            .iter()
            .map(|c| format!(" {} {}", short_sha(&c.commit), c.subject))
            .collect::<String>()
    ));
    Ok(Ended::Report(Box::new(report)))
}

/// The hunt's JSON report, beside its text one.
pub fn report_json(folder: &HuntDir) -> PathBuf {
    folder.dir().join("report.json")
}

/// Tells of an ended hunt's finding, and records it as told.
fn tell(
    store: &mut dyn Store,
    change: &ChangeRow,
    hunt: &mut ChangeHunt,
    folder: &HuntDir,
    cfg: &WatchConfig,
    follow: &mut dyn Follow,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    crate::folders::check_dir(folder.dir())
        .map_err(|e| crate::workspace::refusal(e, "the hunt's folder"))?;
    let read = |path: PathBuf| {
        crate::files::read_own(&path)
            .with_context(|| format!("cannot read {}", path.display()))
            .map(|body| body.and_then(|b| String::from_utf8(b).ok()))
    };
    let (Some(text), Some(json)) = (read(folder.report_text())?, read(report_json(folder))?) else {
        note(&format!(
            "{}: the hunt's reports are missing from {}: not mailed",
            change.series,
            folder.dir().display()
        ));
        return Ok(());
    };
    let report: HuntReport = serde_json::from_str(&json)?;
    let points = series_points(store, cfg, &change.series)?;
    // With the site's address, its pages; else the report's path here.
    let (page, path) = match &cfg.site_url {
        Some(site) => {
            let (page, hunt) = site_links::of_change(site, change.id, true);
            (Some(page), hunt.unwrap_or_default())
        }
        None => (None, folder.report_text().to_string_lossy().into_owned()),
    };
    let body = finding::body(change, &report, &points, (&text, &path), &cfg.reported_by);
    let body = match page {
        Some(page) => finding::with_page(&body, &page),
        None => body,
    };
    let found = Finding {
        change,
        report: &report,
        hunt: folder,
        subject: finding::subject(change, &report),
        body,
        message_id_part: finding::message_id_part(change),
    };
    // Each way is recorded once it is taken, the mail before the command
    // runs: a command that fails does not send the mail again.
    let mut told = hunt.message_id.is_some();
    if !told {
        match follow.mail(&found) {
            Ok(Some(id)) => {
                hunt.message_id = Some(id);
                store.save_hunt(hunt)?;
                told = true;
            }
            Ok(None) => {}
            Err(e) => {
                note(&not_told(change, &e));
                return Ok(());
            }
        }
    }
    match follow.command(&found) {
        Ok(ran) if ran || told => {
            hunt.mailed = Some(now());
            store.save_hunt(hunt)?;
            note(&format!("{}: the finding was told", change.series));
        }
        Ok(_) => {}
        Err(e) => note(&not_told(change, &e)),
    }
    Ok(())
}

fn not_told(change: &ChangeRow, e: &anyhow::Error) -> String {
    format!(
        "{}: the finding was not told ({e:#}); the next start tries again",
        change.series
    )
}

/// The stored points of `series`.
fn series_points(
    store: &mut dyn Store,
    cfg: &WatchConfig,
    series: &str,
) -> anyhow::Result<Vec<Point>> {
    let nights = store.nights(&cfg.branch)?;
    let runs = store.runs(&cfg.branch)?;
    Ok(crate::store::points::points(&nights, &runs, Some(series)))
}

/// The commits of `line` from `change.before` to `change.after`, both
/// ends in; `None` when they are not on it in that order.
fn range_of(line: &[Landed], change: &ChangeRow) -> Option<Vec<Commit>> {
    let at = |id: &str| line.iter().position(|l| l.commit.id == id);
    let (from, to) = (at(&change.before)?, at(&change.after)?);
    (from < to).then(|| line[from..=to].iter().map(|l| l.commit.clone()).collect())
}

/// The hunt's progress as the watcher's lines.
struct Noted<'a, 'b>(&'a mut (dyn FnMut(&str) + 'b));

impl Progress for Noted<'_, '_> {
    fn event(&mut self, event: &ProgressEvent) {
        if !matches!(
            event,
            ProgressEvent::Run { .. } | ProgressEvent::Search { .. }
        ) {
            (self.0)(&format!("  {}", crate::progress::describe(event)));
        }
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
