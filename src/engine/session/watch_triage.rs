//! A person's triage of the watcher's changes, by their number (`#N` on
//! the site and in the digest): `watch mark` keeps whether a change was
//! meant or is not real ([`crate::store::marks`]); `watch hunt` hunts a
//! change again as the watcher hunts it ([`crate::engine::watch::rehunt`]).

use super::watch::{
    HUNTS, LINE_LIMIT, WatchAsk, branch, hunter_and_labs, machine_name, now, store_at, stored,
};
use super::watch_hunts::Aftercare;
use crate::core::counts::Measure;
use crate::engine::watch;
use crate::engine::watch::WatchMeasures;
use crate::engine::watch::hunt::Hunting;
use crate::engine::watch::rehunt::{self, Rehunted};
use crate::error::UsageError;
use crate::repo::Repo;
use crate::store::place::StoreAt;
use crate::store::{ChangeMark, ChangeRow, Mark, Store, measured_series_key, series_measure};
use crate::workspace::WorkDir;

/// What marking a change did.
#[derive(Debug, Clone, PartialEq)]
pub struct Marked {
    pub change: ChangeRow,
    pub mark: ChangeMark,
    /// The mark it had before, now replaced.
    pub replaced: Option<ChangeMark>,
}

/// Marks change `id` of `branch` (default: the one the results hold)
/// `mark`, for `why`; an unknown number, or an empty why, is a usage
/// error saying what to give.
pub fn mark(
    (work, store, branch): (&WorkDir, Option<&StoreAt>, Option<&str>),
    id: i64,
    mark: Mark,
    why: &str,
) -> anyhow::Result<Marked> {
    // One line, as the site and the digest show it.
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    if why.is_empty() {
        return Err(UsageError(
            "--why: say why, in a few words the site shows beside the mark (e.g. --why 'the \
             cost of the new WAL format, accepted in review')"
                .into(),
        )
        .into());
    }
    let (mut store, branch) = stored(work, store, branch)?;
    let change = change_of(store.as_mut(), &branch, id)?;
    let replaced = store.marks(&branch)?.into_iter().find(|m| m.change == id);
    let mark = ChangeMark {
        change: id,
        mark,
        why,
        marked: now(),
    };
    store.save_mark(&mark)?;
    Ok(Marked {
        change,
        mark,
        replaced,
    })
}

/// Change `id` of `branch`; a number the results do not hold is a usage
/// error listing the ones they do.
fn change_of(store: &mut dyn Store, branch: &str, id: i64) -> anyhow::Result<ChangeRow> {
    let changes = store.changes(branch)?;
    if let Some(c) = changes.iter().find(|c| c.id == id) {
        return Ok(c.clone());
    }
    let known: Vec<String> = changes.iter().map(|c| format!("#{}", c.id)).collect();
    let known = match known.len() {
        0 => format!("the watch of {branch} has found no change yet"),
        n if n > 20 => format!("its changes are {} .. {}", known[0], known[n - 1]),
        _ => format!("its changes are {}", known.join(", ")),
    };
    Err(UsageError(format!(
        "no change #{id} in the results of {branch}: {known}; give a change's number as the \
         site's and the digest's lists show it (or --branch for another branch)"
    ))
    .into())
}

/// Hunts change `id` again, with the profiles, budget and store `ask`
/// gives (the watch's own), telling `note` as it goes.
pub fn hunt_again(
    mut ask: WatchAsk,
    id: i64,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Rehunted> {
    let repo = Repo::open(&ask.repo_dir)?;
    let branch = branch(&repo, ask.branch.as_deref())?;
    ask.config.branch = branch.clone();
    let line = repo.first_parents(&branch, LINE_LIMIT)?;
    let _lock = ask.work.create_and_lock()?;
    let at = store_at(&ask.work, ask.store.as_ref());
    if !at.may_hold_results() {
        return Err(UsageError(format!(
            "no watch results in {}: run `pgbisect watch` first",
            ask.work.root().display()
        ))
        .into());
    }
    let mut store = at.open_watcher(&machine_name())?;
    let change = change_of(store.as_mut(), &branch, id)?;
    if let Some(why) = rehunt::not_huntable(&change) {
        return Err(UsageError(format!(
            "change #{id} ({}) is not hunted: {why}",
            change.series
        ))
        .into());
    }
    keep_its_profile(&mut ask, &change)?;
    let clock = line.last().map_or(0, |l| l.committed);
    let reference = watch::reference_for(store.as_mut(), &line, clock, &ask.config)?;
    let (hunter, mut labs) = hunter_and_labs(&ask, &line, reference)?;
    // Nobody is told from here: a finding never mailed is mailed by the
    // watcher's next start, one mailed is not mailed again.
    let mut follow = Aftercare {
        hunter,
        notifier: ask.notifier,
        cc_author: false,
        unsent: Vec::new(),
    };
    let mut hunting = Hunting {
        dir: ask.work.root().join(HUNTS),
        follow: &mut follow,
    };
    let cfg = &ask.config;
    rehunt::hunt_again(
        store.as_mut(),
        &mut labs,
        (&line, cfg),
        &mut hunting,
        &change,
        note,
    )
}

/// Keeps of `ask`'s profiles the one that measures `change`'s series,
/// at the series' client count and on its measure alone; none that does
/// is a usage error saying which `--profile` to give.
fn keep_its_profile(ask: &mut WatchAsk, change: &ChangeRow) -> anyhow::Result<()> {
    let measure = series_measure(&change.series);
    let measures = |name: &str| {
        let count = change.series.strip_prefix(name)?.strip_prefix("/c")?;
        let count = count.split('/').next()?;
        count
            .parse::<u32>()
            .ok()
            .filter(|&c| measured_series_key(name, c, measure) == change.series)
    };
    let found = ask
        .profiles
        .iter()
        .position(|p| measures(&p.name).is_some());
    let Some(k) = found else {
        let given: Vec<&str> = ask.profiles.iter().map(|p| p.name.as_str()).collect();
        return Err(UsageError(format!(
            "change #{} is of the series {}, which no profile given measures ({}): give the \
             --profile the watch measures it with",
            change.id,
            change.series,
            given.join(", ")
        ))
        .into());
    };
    let mut profile = ask.profiles.swap_remove(k);
    profile.clients = measures(&profile.name).into_iter().collect();
    if measure == Measure::Instructions && profile.profile.is_custom() {
        return Err(crate::lab::cannot_count());
    }
    profile.measures = match measure {
        Measure::Tps => WatchMeasures::Tps,
        Measure::Instructions => WatchMeasures::Instructions,
    };
    ask.profiles = vec![profile];
    Ok(())
}
