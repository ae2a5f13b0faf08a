//! The watcher's session: the work dir's lock and its results database,
//! the branch's line, a lab per profile; then tonight's night, or the
//! nights of a replay on their own clock, each confirmed drop hunted in
//! `watch-hunts/` and its finding told ([`super::watch_hunts`]).

use super::watch_hunts::{Aftercare, Hunter, ProfileSetup};
use crate::core::counts::Measure;
use crate::engine::watch::digest::Tell;
use crate::engine::watch::hunt::Hunting;
use crate::engine::watch::{self, ProfileLab, WatchConfig, WatchMeasures, Watched, owed};
use crate::error::UsageError;
use crate::lab::open::{LabChoices, LabSpec};
use crate::machine::steady::Watch;
use crate::notify::Notifier;
use crate::profile::Profile;
use crate::repo::{Landed, Repo};
use crate::report::watch::digest::Digest;
use crate::store::Store;
use crate::store::place::StoreAt;
use crate::workspace::WorkDir;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Most commits of the branch's line read back from its tip.
pub(super) const LINE_LIMIT: usize = 1_000_000;

/// A profile to watch, named as its series are.
pub struct WatchedProfile {
    pub name: String,
    /// `--profile` as it was given (`None`: the default profile), for the
    /// command that hunts a change again.
    pub given: Option<String>,
    pub profile: Profile,
    /// The TOML it was read from, for the hunts' reports.
    pub toml: String,
    pub clients: Vec<u32>,
    /// What its series measure.
    pub measures: WatchMeasures,
}

/// What the watcher is asked.
pub struct WatchAsk {
    pub repo_dir: PathBuf,
    pub work: WorkDir,
    /// Where the results are kept; `None`: `watch.sqlite` in the work dir.
    pub store: Option<StoreAt>,
    /// `None`: master, or main when there is no master.
    pub branch: Option<String>,
    pub profiles: Vec<WatchedProfile>,
    pub choices: LabChoices,
    pub config: WatchConfig,
    /// `(since, until, every N days)`: nights on their own clock.
    pub replay: Option<(i64, i64, u32)>,
    /// Who is told of each hunted change.
    pub notifier: Notifier,
    /// Each finding mailed to its culprit's author too.
    pub cc_author: bool,
    /// Runs a side of the why-runs after a hunt; `None`: none.
    pub why_runs: Option<usize>,
}

/// The folder of the hunts of confirmed changes, in the work dir:
/// `change-<id>/` in it for each (its journal, `report.txt`,
/// `report.json`).
pub const HUNTS: &str = "watch-hunts";

/// The folder of the digests, in the work dir: `<period's last day>.txt`.
pub const DIGESTS: &str = "digests";

/// Each digest kept as a file and mailed as a finding is.
struct Digests<'a> {
    notifier: &'a Notifier,
    dir: PathBuf,
    /// Each digest mailed that was not, and why.
    unsent: Vec<(String, String)>,
}

impl Tell for Digests<'_> {
    fn digest(&mut self, digest: &Digest) -> anyhow::Result<Option<String>> {
        let path = self.dir.join(&digest.file_name);
        crate::folders::create_dir(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        crate::files::write_file(&path, &digest.kept)?;
        let told = self
            .notifier
            .mail_only((&digest.subject, &digest.body), &digest.message_id_part);
        if let Err(e) = &told {
            let period = digest.file_name.trim_end_matches(".txt");
            self.unsent.push((owed::digest(period), format!("{e:#}")));
        }
        told
    }
}

/// Runs tonight's night (or the replay's nights), telling `note` as it goes.
pub fn run(mut ask: WatchAsk, note: &mut dyn FnMut(&str)) -> anyhow::Result<Watched> {
    let repo = Repo::open(&ask.repo_dir)?;
    let branch = branch(&repo, ask.branch.as_deref())?;
    ask.config.branch = branch.clone();
    ask.config.machine = Some(machine_facts());
    let line = repo.first_parents(&branch, LINE_LIMIT)?;
    if let Some(rev) = ask.config.reference.take() {
        ask.config.reference = Some(reference_commit(&repo, &rev)?);
    }
    let clocks = match ask.replay {
        Some(range) => replay_clocks(&line, &branch, range, note)?,
        None => vec![now()],
    };
    let Some(&first) = clocks.first() else {
        return Err(UsageError("--replay: the range holds no day".into()).into());
    };
    let _lock = ask.work.create_and_lock()?;
    let at = store_at(&ask.work, ask.store.as_ref());
    let mut store = at.open_watcher(&machine_name())?;
    say_if_moved(store.as_mut(), &ask.config, note)?;
    let reference = watch::reference_for(store.as_mut(), &line, first, &ask.config)?;
    let (hunter, mut labs) = hunter_and_labs(&ask, &line, reference)?;
    let mut follow = Aftercare {
        hunter,
        notifier: ask.notifier,
        cc_author: ask.cc_author,
        unsent: Vec::new(),
    };
    let mut all = Watched::default();
    let mut tried = Vec::new();
    for clock in clocks {
        // A replay walks thousands of nights, most of them idle: a signal
        // stops it between two as it stops a night between two runs.
        crate::proc::check_interrupt()?;
        let mut hunting = Hunting {
            dir: ask.work.root().join(HUNTS),
            follow: &mut follow,
        };
        let w = watch::watch_night_hunting(
            store.as_mut(),
            &mut labs,
            (&line, clock),
            &ask.config,
            Some(&mut hunting),
            note,
        )?;
        let mut digests = Digests {
            notifier: &follow.notifier,
            dir: ask.work.root().join(DIGESTS),
            unsent: Vec::new(),
        };
        let period = (&ask.config, clock);
        watch::digest::after_night(store.as_mut(), &line, period, &mut digests, note)?;
        tried.append(&mut digests.unsent);
        tried.append(&mut follow.unsent);
        all.nights.extend(w.nights);
        all.measured.extend(w.measured);
        all.changes.extend(w.changes);
        for h in w.hunts {
            all.hunts.retain(|e| e.change.id != h.change.id);
            all.hunts.push(h);
        }
        all.runs += w.runs;
        all.last_points = w.last_points;
        if w.stopped.is_some() {
            all.stopped = w.stopped;
            break;
        }
    }
    let telling = follow.notifier.tells_anyone();
    all.owed = owed::owed(store.as_mut(), &branch, telling, &tried)?;
    Ok(all)
}

/// The labs of `ask`'s profiles, opened beside `reference`, and what
/// their hunts run with; from here a signal stops the work between two
/// runs.
pub(super) fn hunter_and_labs(
    ask: &WatchAsk,
    line: &[Landed],
    reference: Option<String>,
) -> anyhow::Result<(Hunter, Vec<ProfileLab>)> {
    let profiles = profile_setups(ask, line, reference)?;
    let labs = open_labs(ask, &profiles)?;
    crate::proc::install_signal_handlers().context("cannot install the signal handlers")?;
    let hunter = Hunter {
        profiles,
        why_runs: ask.why_runs,
        work: ask.work.clone(),
        watch: Watch::default(),
    };
    Ok((hunter, labs))
}

/// The full SHA of `--reference REV`; a REV the repository does not
/// hold is a usage error.
fn reference_commit(repo: &Repo, rev: &str) -> anyhow::Result<String> {
    repo.resolve(rev).map(|c| c.id).map_err(|e| {
        UsageError(format!(
            "--reference: {e}; give a commit, tag or branch of the repository"
        ))
        .into()
    })
}

/// Says when `cfg.reference` moves the reference the nights so far were
/// measured beside: the points from now on are ratios to the new one.
fn say_if_moved(
    store: &mut dyn Store,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let Some(to) = &cfg.reference else {
        return Ok(());
    };
    let last = store.nights(&cfg.branch)?.pop();
    if let Some(from) = last.map(|n| n.reference).filter(|from| from != to) {
        note(&format!(
            "the reference moves from {} to {}: the nights from now on are measured beside \
             it, the points before it keep their reference, and changes are looked for among \
             the points of one reference",
            crate::model::short_sha(&from),
            crate::model::short_sha(to)
        ));
    }
    Ok(())
}

/// The nights of the replay `(since, until, every)`; one asked to start
/// before the branch's first commit starts on the day that commit landed,
/// said in a note, and one that ends before it is refused.
fn replay_clocks(
    line: &[Landed],
    branch: &str,
    (since, until, every): (i64, i64, u32),
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<i64>> {
    let start = watch::pick::replay_start(line, since).unwrap_or(since);
    if start != since {
        let first = crate::time::date_from_unix(start);
        let asked = crate::time::date_from_unix(since);
        if start > until {
            return Err(UsageError(format!(
                "--replay: the first commit of {branch} landed on {first}, after the whole \
                 range ({asked} to {}): give a range that ends on {first} or later",
                crate::time::date_from_unix(until)
            ))
            .into());
        }
        note(&format!(
            "--replay: nothing had landed on {branch} by {asked}; the replay starts on \
             {first}, the day its first commit landed"
        ));
    }
    Ok(watch::replay_clocks(start, until, every))
}

/// Writes the series of `branch` in the work dir's results (or those of
/// `store`) as Otava's CSV to `path`; the number of points.
pub fn export(
    work: &WorkDir,
    store: Option<&StoreAt>,
    branch: Option<&str>,
    path: &Path,
) -> anyhow::Result<usize> {
    let (mut store, branch) = stored(work, store, branch)?;
    let nights = store.nights(&branch)?;
    let runs = store.runs(&branch)?;
    let points = crate::store::points::points(&nights, &runs, None);
    crate::files::write_output_file(path, &crate::store::otava::csv(&points, &nights, &branch))?;
    Ok(points.len())
}

/// The results database (`store`, else the work dir's), and the branch
/// given or the one it holds nights of (master, else main); a work dir
/// without one is refused.
pub(super) fn stored(
    work: &WorkDir,
    store: Option<&StoreAt>,
    branch: Option<&str>,
) -> anyhow::Result<(Box<dyn Store>, String)> {
    let at = store_at(work, store);
    if !at.may_hold_results() {
        return Err(UsageError(format!(
            "no watch results in {}: run `pgbisect watch` first",
            work.root().display()
        ))
        .into());
    }
    let mut store = at.open(&machine_name())?;
    let branch = match branch {
        Some(b) => b.to_string(),
        None => ["master", "main"]
            .into_iter()
            .find(|b| store.nights(b).is_ok_and(|n| !n.is_empty()))
            .unwrap_or("master")
            .to_string(),
    };
    Ok((store, branch))
}

/// The store given, else `watch.sqlite` in the work dir.
pub(super) fn store_at(work: &WorkDir, given: Option<&StoreAt>) -> StoreAt {
    given
        .cloned()
        .unwrap_or_else(|| StoreAt::in_work_dir(work.root()))
}

/// The name this machine's nights are kept under in a shared database:
/// its host name.
pub(super) fn machine_name() -> String {
    crate::hosts::this_hostname()
}

/// The branch given, or master, or main when there is no master.
pub(super) fn branch(repo: &Repo, given: Option<&str>) -> anyhow::Result<String> {
    if let Some(b) = given {
        repo.resolve_branch(b)?;
        return Ok(b.to_string());
    }
    ["master", "main"]
        .into_iter()
        .find(|b| repo.resolve(b).is_ok())
        .map(str::to_string)
        .ok_or_else(|| {
            UsageError("the repository has neither master nor main: give --branch NAME".into())
                .into()
        })
}

/// Each profile as its lab opens and its hunts are set up: the builds
/// share the work dir's cache (the hunts' too); a profile whose series
/// count has its lab count, by the counter found here.
fn profile_setups(
    ask: &WatchAsk,
    line: &[Landed],
    reference: Option<String>,
) -> anyhow::Result<Vec<ProfileSetup>> {
    let tip = line.last().map(|l| l.commit.id.clone()).unwrap_or_default();
    let counter = match ask.profiles.iter().any(|p| p.measures.counts()) {
        true => Some(counter_here()?),
        false => None,
    };
    let setups = ask
        .profiles
        .iter()
        .map(|p| {
            let choices = match p.measures.counts() {
                true => LabChoices {
                    measure: Measure::Instructions,
                    counter: counter.clone(),
                    ..ask.choices.clone()
                },
                false => ask.choices.clone(),
            };
            let spec = LabSpec {
                profile: p.profile.clone(),
                clients: p.clients[0],
                repo_dir: ask.repo_dir.clone(),
                dirs: ask.work.lab_dirs(),
                checkout: ask.work.checkout(),
                private_objects: ask.work.private_objects(),
                good: reference.clone().unwrap_or_else(|| tip.clone()),
                bad: tip.clone(),
                choices,
                // A hunt's why-runs sweep other client counts too.
                setups: super::decide_setups(&p.profile, &watched_clients(p)),
            };
            ProfileSetup {
                name: p.name.clone(),
                given: p.given.clone(),
                toml: p.toml.clone(),
                spec,
            }
        })
        .collect();
    Ok(setups)
}

/// The instruction counter of this machine, as it names itself; none is
/// a usage error saying what to install.
fn counter_here() -> anyhow::Result<String> {
    let found =
        crate::counts::cachegrind::Cachegrind::find().map_err(|e| UsageError(e.to_string()))?;
    Ok(crate::counts::Counter::name(&found).to_string())
}

/// The client counts a profile's runs are made at: its series', and the
/// why-runs' sweep of the hunts started from them.
fn watched_clients(p: &WatchedProfile) -> Vec<u32> {
    let mut all: Vec<u32> = p
        .clients
        .iter()
        .flat_map(|&c| super::hunt_clients(&p.profile, c))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// A lab per profile, opened from its spec.
fn open_labs(ask: &WatchAsk, setups: &[ProfileSetup]) -> anyhow::Result<Vec<ProfileLab>> {
    let checker = Watch::default();
    let runs_dir = ask.work.root().join("watch").join("runs");
    crate::folders::create_dir(&runs_dir)
        .with_context(|| format!("cannot create {}", runs_dir.display()))?;
    ask.profiles
        .iter()
        .zip(setups)
        .map(|(p, setup)| {
            let spec = &setup.spec;
            // A lab that counts times its runs too: a night asks it for
            // either, series by series.
            let lab = match p.measures.counts() {
                true => crate::lab::open::open_timed_and_counted(spec, &checker, &runs_dir)?,
                false => crate::lab::open::open(spec, &checker, &runs_dir, None)?,
            };
            Ok(ProfileLab {
                name: p.name.clone(),
                clients: p.clients.clone(),
                lab,
                placements: placements(&p.profile, &spec.setups),
                measures: p.measures.measures(),
            })
        })
        .collect()
}

/// Where the server and pgbench run at each client count, for a
/// PostgreSQL profile (a custom benchmark command places nothing).
fn placements(profile: &Profile, setups: &crate::lab::pg::setup::Setups) -> Vec<(u32, String)> {
    if profile.benchmark.command.is_some() {
        return Vec::new();
    }
    setups
        .runs
        .iter()
        .map(|s| {
            let said = match &s.placement {
                Ok(p) => p.describe(),
                Err(why) => why.clone(),
            };
            (s.clients, said)
        })
        .collect()
}

/// This machine's facts, stored with every run: its name, CPUs and kernel.
fn machine_facts() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .ok()
    };
    serde_json::json!({
        "host": read("/proc/sys/kernel/hostname"),
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "kernel": read("/proc/sys/kernel/osrelease"),
    })
    .to_string()
}

pub(super) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_at_2_clients_has_setups_for_its_why_runs_at_1_too() {
        let p = WatchedProfile {
            name: "smoke".into(),
            given: None,
            profile: Profile::default(),
            toml: String::new(),
            clients: vec![2],
            measures: WatchMeasures::Tps,
        };
        let all = watched_clients(&p);
        assert!(all.contains(&1) && all.contains(&2), "{all:?}");
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
    }
}
