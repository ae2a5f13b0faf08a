//! A night's runs: every commit of the night with every profile and
//! client count, each run paired with a run of the reference commit, the
//! two in turn (reference, commit; then commit, reference) so that a
//! machine slowing down during the night slows both alike.
//!
//! Every run is stored as soon as it is made, under its key (night,
//! commit, series, round, role); what is stored is not run again, so a
//! night killed half way goes on where it stopped.

use super::config::{ProfileLab, Series, WatchConfig};
use super::rounds;
use crate::core::counts::Measure;
use crate::lab::RunSpec;
use crate::model::{Commit, Prepared, RunOutcome, short_sha};
use crate::report::watch::digest::error_line;
use crate::store::{Night, NightStatus, Role, RunRow, Store, measured_series_key};
use std::collections::{BTreeMap, HashSet};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What measuring a night did.
#[derive(Debug, Default)]
pub struct Made {
    pub runs: usize,
    /// Why it stopped before its end (the deadline).
    pub stopped: Option<String>,
}

/// One run to make: whose, in which series, which round and role.
struct Slot<'a> {
    commit: &'a str,
    profile: usize,
    clients: u32,
    measure: Measure,
    round: u32,
    role: Role,
}

impl Slot<'_> {
    fn series(&self, labs: &[ProfileLab]) -> String {
        measured_series_key(&labs[self.profile].name, self.clients, self.measure)
    }
}

/// Makes the runs of `night` not yet stored, and marks it done, or
/// stopped when the deadline comes first.
pub fn night(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    night: &Night,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Made> {
    let runs = store.runs(&night.branch)?;
    let pairs = pairs_tonight(&runs, night.id, labs, cfg, note);
    let stored: HashSet<(String, String, u32, Role)> = runs
        .into_iter()
        .filter(|r| r.night == night.id)
        .map(|r| (r.commit, r.series, r.round, r.role))
        .collect();
    note(&format!(
        "night of {} on {}: {} commit(s), reference {}",
        crate::time::rfc3339_from_unix(night.clock),
        night.branch,
        night.commits.len(),
        short_sha(&night.reference)
    ));
    let mut made = Made::default();
    let mut unbuildable: HashSet<(usize, String)> = HashSet::new();
    let mut broken: BTreeMap<String, String> = BTreeMap::new();
    let mut spent = (0usize, 0.0f64);
    for slot in slots(night, labs, &pairs) {
        let key = (
            slot.commit.to_string(),
            slot.series(labs),
            slot.round,
            slot.role,
        );
        if stored.contains(&key) || unbuildable.contains(&(slot.profile, slot.commit.into())) {
            continue;
        }
        if let Some(reason) = past_deadline(cfg, spent) {
            store.finish_night(night.id, NightStatus::Stopped, Some(&reason))?;
            note(&format!("stopped: {reason}"));
            made.stopped = Some(reason);
            return Ok(made);
        }
        crate::proc::check_interrupt()?;
        let began = Instant::now();
        let lab = labs[slot.profile].lab.as_mut();
        let commit = Commit::bare(slot.commit);
        if let Prepared::Unbuildable { reason, .. } = lab.prepare(&commit)? {
            note(&format!(
                "{} does not build: {reason}",
                short_sha(slot.commit)
            ));
            if slot.commit == night.reference {
                let why = format!("the reference {} does not build: {reason}", night.reference);
                store.finish_night(night.id, NightStatus::Failed, Some(&why))?;
                anyhow::bail!(why);
            }
            unbuildable.insert((slot.profile, slot.commit.to_string()));
            broken
                .entry(slot.commit.to_string())
                .or_insert_with(|| error_line(&reason).to_string());
            continue;
        }
        let spec = RunSpec {
            clients: slot.clients,
            run: run_number(night.id, &slot),
            seconds: None,
        };
        // The run's own duration is stored; the budget counts the build too.
        let started = Instant::now();
        let outcome = match slot.measure {
            Measure::Tps => lab.run(&commit, spec)?,
            Measure::Instructions => lab.counted_run(&commit, spec)?,
        };
        crate::proc::check_interrupt()?;
        let seconds = started.elapsed().as_secs_f64();
        let row = run_row(night, &labs[slot.profile], &slot, outcome, seconds, cfg);
        note(&run_line(&row));
        if store.add_run(&row)? {
            made.runs += 1;
        }
        spent = (spent.0 + 1, spent.1 + began.elapsed().as_secs_f64());
    }
    // A build broken on the branch is news, kept with the night: each
    // commit with its build's first error line.
    let broken: Vec<String> = broken
        .iter()
        .map(|(c, why)| match why.as_str() {
            "" => short_sha(c).to_string(),
            _ => format!("{} ({why})", short_sha(c)),
        })
        .collect();
    let reason = (!broken.is_empty()).then(|| format!("does not build: {}", broken.join(", ")));
    store.finish_night(night.id, NightStatus::Done, reason.as_deref())?;
    Ok(made)
}

/// The pairs each series' commits get tonight, by series: `--rounds`,
/// or more where the series' pairs scattered over the last nights (see
/// [`rounds`]), said when more.
fn pairs_tonight(
    runs: &[RunRow],
    night: i64,
    labs: &[ProfileLab],
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> BTreeMap<String, u32> {
    let spreads = rounds::spreads(runs, night);
    let mut out = BTreeMap::new();
    for lab in labs {
        for Series { key: series, .. } in lab.series() {
            let spread = spreads.get(&series).copied();
            let pairs = rounds::pairs_for(spread, cfg.rounds, cfg.max_rounds);
            if let (Some(s), true) = (spread, pairs > cfg.rounds) {
                note(&format!(
                    "{series}: {pairs} pairs a commit tonight (its pairs scattered by {:.1}% \
                     over the last nights)",
                    100.0 * s.sigma
                ));
            }
            out.insert(series, pairs);
        }
    }
    out
}

/// The runs of a night, in the order they are made: per profile and
/// client count, per commit, its series' pairs, the reference first in
/// even rounds and second in odd ones. Rounds are counted over the whole
/// night, so a reference run's key names its pair.
fn slots<'a>(
    night: &'a Night,
    labs: &[ProfileLab],
    pairs: &BTreeMap<String, u32>,
) -> Vec<Slot<'a>> {
    let mut out = Vec::new();
    for (profile, lab) in labs.iter().enumerate() {
        for Series {
            clients,
            measure,
            key,
        } in lab.series()
        {
            let rounds = pairs.get(&key).copied().unwrap_or(1);
            let mut round = 0;
            for commit in &night.commits {
                for r in 0..rounds {
                    let pair = [
                        (night.reference.as_str(), Role::Reference),
                        (commit.id.as_str(), Role::Candidate),
                    ];
                    let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
                    for k in order {
                        let (commit, role) = pair[k];
                        out.push(Slot {
                            commit,
                            profile,
                            clients,
                            measure,
                            round,
                            role,
                        });
                    }
                    round += 1;
                }
            }
        }
    }
    out
}

/// A run number unique within the watcher's nights (labs name output
/// files and seed fakes with it); a counted run's apart from the timed
/// runs of its night, series and round.
fn run_number(night: i64, slot: &Slot) -> u64 {
    let role = u64::from(slot.role == Role::Candidate);
    let counted = u64::from(slot.measure == Measure::Instructions);
    (night.max(0) as u64) * 1_000_000
        + (slot.profile as u64) * 100_000
        + u64::from(slot.clients % 100) * 1_000
        + counted * 500
        + u64::from(slot.round) * 2
        + role
}

/// Why no run fits before the deadline any more, if so: the next one is
/// expected to cost what the night's runs cost on average.
fn past_deadline(cfg: &WatchConfig, (runs, seconds): (usize, f64)) -> Option<String> {
    let per_run = if runs == 0 {
        0.0
    } else {
        seconds / runs as f64
    };
    short_of_time(cfg, per_run, "a run")
}

/// Why `what`, expected to take `seconds`, no longer fits before the
/// deadline, if so.
pub(super) fn short_of_time(cfg: &WatchConfig, seconds: f64, what: &str) -> Option<String> {
    let budget = cfg.budget?;
    let left = budget
        .deadline
        .duration_since((budget.clock)())
        .map_or(0.0, |d| d.as_secs_f64());
    (left <= seconds).then(|| {
        format!(
            "the deadline leaves {left:.0}s, {what} takes about {seconds:.0}s; \
             the next start goes on from here"
        )
    })
}

fn run_row(
    night: &Night,
    lab: &ProfileLab,
    slot: &Slot,
    outcome: RunOutcome,
    seconds: f64,
    cfg: &WatchConfig,
) -> RunRow {
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
        - seconds as i64;
    // A count series keeps what instructions buy; a counted run's
    // latencies are valgrind's, not the server's, and are left out.
    let (tps, latency, percentiles, failed) = match (outcome, slot.measure) {
        (RunOutcome::Measured(m), measure) if m.figure(measure).is_some() => match measure {
            Measure::Tps => (Some(m.tps), m.latency_ms, m.percentiles, None),
            Measure::Instructions => (m.figure(measure), None, None, None),
        },
        (RunOutcome::Measured(m), Measure::Tps) => {
            (None, None, None, Some(format!("unusable tps {}", m.tps)))
        }
        (RunOutcome::Measured(_), Measure::Instructions) => {
            (None, None, None, Some("no instruction count".into()))
        }
        (RunOutcome::Failed { reason }, _) => (None, None, None, Some(reason)),
    };
    let placement = lab
        .placements
        .iter()
        .find(|(c, _)| *c == slot.clients)
        .map(|(_, p)| p.clone());
    RunRow {
        night: night.id,
        commit: slot.commit.to_string(),
        series: measured_series_key(&lab.name, slot.clients, slot.measure),
        profile: lab.name.clone(),
        clients: slot.clients,
        host: None,
        role: slot.role,
        round: slot.round,
        tps,
        latency_avg_ms: latency,
        latency_p50_ms: percentiles.as_ref().map(|p| p.p50_ms),
        latency_p95_ms: percentiles.as_ref().map(|p| p.p95_ms),
        latency_p99_ms: percentiles.as_ref().map(|p| p.p99_ms),
        failed,
        started,
        seconds,
        placement,
        machine: cfg.machine.clone(),
    }
}

fn run_line(row: &RunRow) -> String {
    let what = match (row.tps, &row.failed) {
        (Some(value), _) => crate::report::watch::measured::value_text(&row.series, value),
        (None, Some(reason)) => format!("failed: {reason}"),
        (None, None) => "no result".into(),
    };
    format!(
        "  {} {} {} round {}: {what}",
        row.series,
        row.role.as_str(),
        short_sha(&row.commit),
        row.round
    )
}
