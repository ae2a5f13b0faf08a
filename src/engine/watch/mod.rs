//! Watching a branch night by night: measure what landed, beside a fixed
//! reference; find where a series moved; confirm each change by measuring
//! the commits on both sides of it again, side by side.
//!
//! A night at a clock (now, or the replay's) picks its commits
//! ([`pick`]), measures each with every profile and client count, each
//! run of a commit paired with a run of the reference commit chosen on
//! the first night ([`measure`]), and keeps every run in the [`Store`] as
//! it is made: a night killed half way is taken up again by the next
//! start, and no run is made or stored twice. Then each series is read
//! for change points and every new candidate is confirmed or dismissed
//! ([`detect`]). A confirmed drop is then hunted to its commit and the
//! finding told once ([`hunt`]), when the caller asks for hunts. Once a
//! period (a week) the caller has its digest told ([`digest`]).
//!
//! Like the other engines this knows nothing of flags or work dirs: the
//! labs (one per profile), the store and the branch's line are given.

mod config;
pub mod detect;
pub mod digest;
pub mod drift;
pub mod hunt;
#[cfg(test)]
mod hunt_tests;
pub mod measure;
pub mod owed;
pub mod pick;
pub mod rehunt;
pub mod rounds;
mod since;
#[cfg(test)]
mod tests;

use crate::repo::Landed;
use crate::report::watch::night;
use crate::store::points::Point;
use crate::store::{ChangeRow, NewNight, Night, NightCommit, NightStatus, Store};
use pick::DAY;

pub use config::{
    COUNTS_THRESHOLD, ProfileLab, Series, WatchConfig, WatchMeasures, looser_detector,
};

/// What one start of the watcher did.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    /// The nights run (taken up again, backfilled, tonight's), in order.
    pub nights: Vec<Night>,
    /// The points those nights made.
    pub measured: Vec<Point>,
    /// Each series' last points, after tonight.
    pub last_points: Vec<Point>,
    /// Changes found or measured again tonight.
    pub changes: Vec<ChangeRow>,
    /// Why the night stopped before its end (its deadline).
    pub stopped: Option<String>,
    /// Runs made tonight (none stored twice).
    pub runs: usize,
    /// The hunts of confirmed changes taken up or begun tonight.
    pub hunts: Vec<hunt::Hunted>,
    /// The messages (findings, digests) not told by the end of this
    /// start: the next start sends them.
    pub owed: Vec<owed::Owed>,
}

impl Watched {
    /// What the night's text tells of ([`night::text`]): each hunt with
    /// its text report's path once written.
    pub fn shown(&self) -> night::Start<'_> {
        let hunts = self.hunts.iter().map(|h| night::Hunt {
            change: &h.change,
            hunt: &h.hunt,
            report: h
                .hunt
                .report
                .as_ref()
                .map(|_| crate::workspace::HuntDir::at(&h.folder).report_text()),
        });
        night::Start {
            nights: &self.nights,
            measured: &self.measured,
            last_points: &self.last_points,
            changes: &self.changes,
            hunts: hunts.collect(),
            stopped: self.stopped.as_deref(),
        }
    }
}

/// One night at `clock` over `line` (the branch's first parents, oldest
/// first): open nights first taken up again, a first night's backfill,
/// tonight's commits, then the change points and their confirmation. A
/// night already done at this clock is not run again.
pub fn watch_night(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    line: &[Landed],
    clock: i64,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Watched> {
    watch_night_hunting(store, labs, (line, clock), cfg, None, note)
}

/// [`watch_night`], with the hunts of confirmed drops when `hunting` is
/// given: a hunt begun on an earlier night goes on first, before anything
/// new is measured; the changes confirmed tonight are hunted last.
pub fn watch_night_hunting(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    (line, clock): (&[Landed], i64),
    cfg: &WatchConfig,
    mut hunting: Option<&mut hunt::Hunting>,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Watched> {
    let mut out = Watched::default();
    if let Some(h) = hunting.as_deref_mut() {
        let earlier = hunt::hunt_changes(store, labs, line, cfg, (h, true), note)?;
        out.hunts = earlier.hunted;
        if let Some(reason) = earlier.stopped {
            out.stopped = Some(reason);
            return Ok(out);
        }
    }
    let nights = store.nights(&cfg.branch)?;
    let mut todo: Vec<Night> = nights
        .iter()
        .filter(|n| n.status.is_open())
        .cloned()
        .collect();
    if nights.iter().all(|n| n.clock != clock) {
        todo.extend(plan_nights(store, &nights, line, clock, cfg)?);
    }
    for night in todo {
        let made = measure::night(store, labs, &night, cfg, note)?;
        out.runs += made.runs;
        out.nights.push(night.clone());
        if let Some(reason) = made.stopped {
            out.stopped = Some(reason);
            break;
        }
    }
    // Read once: confirming a change measures again but stores no run,
    // and a hunt keeps its runs in its own journal.
    let all_nights = store.nights(&cfg.branch)?;
    let runs = store.runs(&cfg.branch)?;
    if out.stopped.is_none() {
        let window = detect::Window::of(&all_nights, &runs, cfg);
        out.changes = detect::changes_in(store, labs, window, cfg, note)?;
        out.changes
            .extend(drift::changes(store, labs, window, cfg, note)?);
    }
    if let (Some(h), None) = (hunting, &out.stopped) {
        let now = hunt::hunt_changes(store, labs, line, cfg, (h, false), note)?;
        for done in now.hunted {
            out.hunts.retain(|e| e.change.id != done.change.id);
            out.hunts.push(done);
        }
        out.stopped = now.stopped;
    }
    let points = crate::store::points::points(&all_nights, &runs, None);
    let ran: Vec<i64> = out.nights.iter().map(|n| n.id).collect();
    out.measured = points
        .iter()
        .filter(|p| ran.contains(&p.night))
        .cloned()
        .collect();
    out.last_points = last_points(&points, 5);
    Ok(out)
}

/// The nights `replay` runs: from `since` to `until` (seconds), every
/// `every` days, each at the end of its day.
pub fn replay_clocks(since: i64, until: i64, every: u32) -> Vec<i64> {
    let step = i64::from(every.max(1)) * DAY;
    let first = since.div_euclid(DAY) * DAY + DAY - 1;
    (0..)
        .map(|k| first + k * step)
        .take_while(|&c| c < until.div_euclid(DAY) * DAY + DAY)
        .collect()
}

/// Each series' last `n` points.
fn last_points(points: &[Point], n: usize) -> Vec<Point> {
    let mut series: Vec<&str> = points.iter().map(|p| p.series.as_str()).collect();
    series.sort();
    series.dedup();
    series
        .into_iter()
        .flat_map(|s| {
            let of: Vec<&Point> = points.iter().filter(|p| p.series == s).collect();
            of[of.len().saturating_sub(n)..]
                .iter()
                .map(|p| (*p).clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The nights to begin at `clock`: a first night's backfill, then
/// tonight's (idle, and finished at once, when nothing landed since).
fn plan_nights(
    store: &mut dyn Store,
    nights: &[Night],
    line: &[Landed],
    clock: i64,
    cfg: &WatchConfig,
) -> anyhow::Result<Vec<Night>> {
    let mut planned: Vec<(i64, Vec<&Landed>)> = Vec::new();
    let last_tip = nights.iter().rev().find(|n| !n.commits.is_empty());
    if last_tip.is_none() {
        for (at, tip) in pick::backfill(line, clock, cfg.backfill) {
            planned.push((at, vec![tip]));
        }
    }
    let previous = planned
        .last()
        .map(|(_, c)| c[0].commit.id.as_str())
        .or(last_tip.map(|n| n.tip.as_str()));
    planned.push((clock, pick::tonight(line, clock, previous, cfg.per_night)));
    // A reference moved is kept by the nights after it.
    let reference = match cfg
        .reference
        .as_ref()
        .or(nights.last().map(|n| &n.reference))
    {
        Some(r) => r.clone(),
        None => match planned.iter().flat_map(|(_, c)| c.first()).next() {
            Some(first) => first.commit.id.clone(),
            None => anyhow::bail!(
                "nothing has landed on {} by {}: no commit to measure",
                cfg.branch,
                crate::time::rfc3339_from_unix(clock)
            ),
        },
    };
    let mut begun = Vec::new();
    for (at, commits) in planned {
        let night = store.begin_night(&NewNight {
            clock: at,
            branch: cfg.branch.clone(),
            tip: commits.last().map_or_else(
                || previous.unwrap_or_default().to_string(),
                |l| l.commit.id.clone(),
            ),
            reference: reference.clone(),
            commits: commits.iter().map(|l| night_commit(l)).collect(),
        })?;
        if night.commits.is_empty() {
            store.finish_night(night.id, NightStatus::Idle, Some("nothing landed since"))?;
            continue;
        }
        begun.push(night);
    }
    Ok(begun)
}

fn night_commit(landed: &Landed) -> NightCommit {
    NightCommit {
        id: landed.commit.id.clone(),
        subject: landed.commit.subject.clone(),
        committed: landed.committed,
    }
}

/// The reference commit of the watch of `cfg.branch`: the one asked for,
/// else the last night's, or the one a first night at `clock` would choose (what the labs need to
/// know before they open, e.g. whose pgbench drives the runs).
pub fn reference_for(
    store: &mut dyn Store,
    line: &[Landed],
    clock: i64,
    cfg: &WatchConfig,
) -> anyhow::Result<Option<String>> {
    if let Some(r) = &cfg.reference {
        return Ok(Some(r.clone()));
    }
    if let Some(n) = store.nights(&cfg.branch)?.last() {
        return Ok(Some(n.reference.clone()));
    }
    let first = pick::backfill(line, clock, cfg.backfill)
        .first()
        .map(|(_, l)| l.commit.id.clone())
        .or_else(|| {
            pick::landed_by(line, clock)
                .last()
                .map(|l| l.commit.id.clone())
        });
    Ok(first)
}
