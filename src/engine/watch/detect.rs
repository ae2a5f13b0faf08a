//! After a night: where each series moved, and whether it really did.
//!
//! The change-point test ([`crate::core::change_points`]) reads each
//! series' points of the last nights with the looser setting
//! ([`super::looser_detector`]): quick to see a step, and so now and then
//! fooled by noise. Every change it finds that is new (no change of the
//! series, of any status, already covers those commits) is a candidate,
//! and the last commit before it and the first after it are measured
//! again, side by side, the runs alternating, with the decision `compare`
//! makes ([`crate::engine::compare::measure`]). Confirmed or dismissed,
//! it is stored, and never raised again; a confirmed one also covers a
//! split found a point either way of it, a dismissed one only its own
//! commits (a split read from too few points after a step can land a
//! point early, and the step itself must still be raised later).

use super::config::{ProfileLab, Series, WatchConfig};
use crate::core::change_points::{ChangeOptions, change_points_by_group};
use crate::core::decide::{Comparison, DecisionConfig, Verdict};
use crate::engine::compare::{self, Row};
use crate::model::{Commit, short_sha};
use crate::report::watch::measured;
use crate::store::points::{Point, points};
use crate::store::{ChangeKind, ChangeRow, ChangeStatus, Night, RunRow, Store};

/// What the tests of a night read: the nights of the window (the last
/// `cfg.window`) and every run. The side-by-side runs are not stored, so
/// a night reads these once, after its runs, for both tests and for its
/// points; only the changes are read again as the tests add to them.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    pub recent: &'a [Night],
    pub runs: &'a [RunRow],
}

impl<'a> Window<'a> {
    /// The window of `nights` (every night of the branch, oldest first):
    /// the last `cfg.window` of them measured beside the last night's
    /// reference. A point is a ratio to its night's reference, so the
    /// points of nights before the reference moved (`--reference`) are on
    /// another scale, and a step there is the move, not a change.
    pub fn of(nights: &'a [Night], runs: &'a [RunRow], cfg: &WatchConfig) -> Window<'a> {
        let recent = &nights[nights.len().saturating_sub(cfg.window)..];
        let current = recent.last().map(|n| n.reference.as_str());
        let moved = recent
            .iter()
            .rposition(|n| Some(n.reference.as_str()) != current)
            .map_or(0, |k| k + 1);
        Window {
            recent: &recent[moved..],
            runs,
        }
    }
}

/// Finds new changes in every series, confirms or dismisses each (and
/// any left a candidate by an earlier night); returns them. Reads the
/// window from the store: see [`changes_in`].
pub fn changes(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<ChangeRow>> {
    let (nights, runs) = (store.nights(&cfg.branch)?, store.runs(&cfg.branch)?);
    changes_in(store, labs, Window::of(&nights, &runs, cfg), cfg, note)
}

/// [`changes`] over `window`, read by the caller.
pub fn changes_in(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    Window { recent, runs }: Window,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<ChangeRow>> {
    // Read once: what one series adds below never covers another's.
    let known = store.changes(&cfg.branch)?;
    let mut found = Vec::new();
    for (profile, lab) in labs.iter().enumerate() {
        for series in lab.series() {
            let pts = points(recent, runs, Some(&series.key));
            for mut change in candidates(&pts, &series.key, &known, &cfg.detect) {
                change.id = store.add_change(&change)?;
                let next = neighbours(&pts, &change);
                found.push((profile, series.clone(), change, next));
            }
        }
    }
    // Candidates an earlier night could not settle are measured too.
    for change in store.changes(&cfg.branch)? {
        let open = change.status == ChangeStatus::Candidate;
        if let Some((profile, series)) = lab_of(labs, &change.series)
            && open
            && !found.iter().any(|f| f.2.id == change.id)
        {
            found.push((profile, series, change, vec![]));
        }
    }
    let mut out = Vec::new();
    for (profile, series, change, next) in found {
        let lab = &mut labs[profile];
        let settled = settle(store, (lab, &series), change, runs, cfg, note)?;
        let dismissed = settled.status == ChangeStatus::Dismissed;
        out.push(settled);
        if !dismissed {
            continue;
        }
        // A split read a point off the step: the step may lie beside it.
        for mut other in next {
            let known = store.changes(&cfg.branch)?;
            if known.iter().any(|k| {
                k.series == other.series && k.before == other.before && k.after == other.after
            }) {
                continue;
            }
            other.id = store.add_change(&other)?;
            let settled = settle(store, (lab, &series), other, runs, cfg, note)?;
            let confirmed = settled.status == ChangeStatus::Confirmed;
            out.push(settled);
            if confirmed {
                break;
            }
        }
    }
    Ok(out)
}

/// The pairs of measured commits beside `change`'s: the one before it and
/// the one after it, as candidates of their own.
fn neighbours(pts: &[Point], change: &ChangeRow) -> Vec<ChangeRow> {
    let Some(i) = pts.iter().position(|p| p.commit == change.after) else {
        return vec![];
    };
    [(i.checked_sub(2), i.checked_sub(1)), (Some(i), Some(i + 1))]
        .into_iter()
        .filter_map(|(b, a)| Some((pts.get(b?)?, pts.get(a?)?)))
        .filter(|(b, a)| b.commit != a.commit)
        .map(|(b, a)| ChangeRow {
            before: b.commit.clone(),
            after: a.commit.clone(),
            ..change.clone()
        })
        .collect()
}

/// Measures `change` again side by side, when that fits before the
/// deadline, and stores what it came to.
pub(super) fn settle(
    store: &mut dyn Store,
    (lab, series): (&mut ProfileLab, &Series),
    mut change: ChangeRow,
    runs: &[RunRow],
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<ChangeRow> {
    note(&format!(
        "{}: a change of {} between {} and {} (p = {:.3}); measuring both again side by side",
        change.series,
        measured::size(&change).short(),
        short_sha(&change.before),
        short_sha(&change.after),
        change.p_value
    ));
    let per_run = mean_seconds(runs, &change.series);
    let needed = per_run * 2.0 * cfg.confirm_runs as f64;
    match super::measure::short_of_time(cfg, needed, "measuring it again") {
        Some(reason) => note(&format!("  left a candidate: {reason}")),
        None => {
            confirm(lab, series, &mut change, cfg, note)?;
            store.update_change(&change)?;
        }
    }
    Ok(change)
}

/// The mean duration of the stored runs of `series` (0 without any).
fn mean_seconds(runs: &[RunRow], series: &str) -> f64 {
    let of: Vec<f64> = runs
        .iter()
        .filter(|r| r.series == series)
        .map(|r| r.seconds)
        .collect();
    if of.is_empty() {
        0.0
    } else {
        of.iter().sum::<f64>() / of.len() as f64
    }
}

/// The new changes in `pts` of `series`: each change point whose commits
/// no stored change of the series already covers.
pub fn candidates(
    pts: &[Point],
    series: &str,
    known: &[ChangeRow],
    options: &ChangeOptions,
) -> Vec<ChangeRow> {
    let values: Vec<f64> = pts.iter().map(|p| p.ratio).collect();
    let groups: Vec<&[f64]> = values.chunks(1).collect();
    let at = |commit: &str| pts.iter().position(|p| p.commit == commit);
    change_points_by_group(&groups, options)
        .into_iter()
        .filter_map(|cp| {
            let (before, after) = (&pts[cp.index - 1], &pts[cp.index]);
            let covered = known.iter().filter(|k| k.series == series).any(|k| {
                let same = k.before == before.commit && k.after == after.commit;
                match (k.status, at(&k.before), at(&k.after)) {
                    // A dismissed change covers its own commits only: the
                    // split read too early, a point off, is not the step.
                    (ChangeStatus::Dismissed, _, _) => same,
                    // A change found again a point either way is the same one.
                    (_, Some(kb), Some(ka)) => cp.index - 1 <= ka && kb <= cp.index,
                    _ => same,
                }
            });
            (before.commit != after.commit && !covered).then(|| ChangeRow {
                id: 0,
                series: series.to_string(),
                before: before.commit.clone(),
                after: after.commit.clone(),
                pct: cp.relative() * 100.0,
                low_pct: None,
                high_pct: None,
                status: ChangeStatus::Candidate,
                first_night: after.night,
                p_value: cp.p_value,
                kind: ChangeKind::Step,
            })
        })
        .collect()
}

/// The lab of a series, and the series as it measures it, when still
/// measured.
pub(super) fn lab_of(labs: &[ProfileLab], series: &str) -> Option<(usize, Series)> {
    labs.iter().enumerate().find_map(|(k, lab)| {
        lab.series()
            .into_iter()
            .find(|s| s.key == series)
            .map(|s| (k, s))
    })
}

/// Measures the commits on both sides of `change` again, side by side:
/// confirmed when the later one is slower by the decision's threshold
/// with confidence, or faster with its whole interval above it;
/// dismissed when the interval rules out such a drop (unchanged). An
/// unclear reading gets `confirm_runs` more runs a side, up to the
/// decision's most runs, and is dismissed there. Left a candidate when a
/// side gave no result, or when more runs no longer fit the deadline.
fn confirm(
    lab: &mut ProfileLab,
    series: &Series,
    change: &mut ChangeRow,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let (before, after) = (Commit::bare(&change.before), Commit::bare(&change.after));
    // While a candidate, its size is the series' levels.
    let gain = change.pct > 0.0;
    // Counts are decided as counts: their own noise floor, fewer runs.
    let decision = cfg.decision_on(series.measure);
    let mut row: Option<Row> = None;
    loop {
        let rows = compare::measure(
            lab.lab.as_mut(),
            [(&before, "before"), (&after, "after")],
            (&[series.clients], cfg.confirm_runs, series.measure),
            &decision,
            &mut |line| note(&format!("  {line}")),
        )?;
        let Some(more) = rows.into_iter().next() else {
            break;
        };
        let merged = merge(row.take(), more, &decision);
        let runs = runs_a_side(&merged);
        let unclear = merged
            .comparison
            .is_some_and(|c| decided(&c, &decision, gain).is_none());
        row = Some(merged);
        if !unclear || runs >= decision.max_runs {
            break;
        }
        let per_run = lab_seconds(lab);
        let needed = per_run * 2.0 * cfg.confirm_runs as f64;
        if let Some(reason) = super::measure::short_of_time(cfg, needed, "more runs") {
            note(&format!(
                "  unclear after {runs} runs a side; left a candidate: {reason}"
            ));
            return Ok(());
        }
        note(&format!("  unclear after {runs} runs a side: more runs"));
    }
    let Some(c) = row.and_then(|r| r.comparison) else {
        note("  a side gave no result: the change stays a candidate");
        return Ok(());
    };
    change.status = decided(&c, &decision, gain).unwrap_or(ChangeStatus::Dismissed);
    change.pct = c.change.pct;
    change.low_pct = Some(c.change.low_pct);
    change.high_pct = Some(c.change.high_pct);
    note(&format!(
        "  {}: {} side by side",
        change.status.as_str(),
        series.measure.change_text(&c.change)
    ));
    Ok(())
}

/// What a side-by-side comparison decides: confirmed (slower, or faster
/// with its whole interval above 0 and the estimate past the threshold),
/// dismissed (unchanged), or `None` (unclear). A candidate that `gain`s
/// is read the other way up: dismissed when its whole interval is below
/// the threshold, unclear while the interval reaches past it (a drop
/// ruled out is not yet a gain ruled out).
fn decided(c: &Comparison, decision: &DecisionConfig, gain: bool) -> Option<ChangeStatus> {
    let threshold = decision.threshold * 100.0;
    let faster = c.change.low_pct > 0.0 && c.change.pct >= threshold;
    match c.verdict {
        _ if faster => Some(ChangeStatus::Confirmed),
        _ if gain && c.change.high_pct >= threshold => None,
        _ if gain => Some(ChangeStatus::Dismissed),
        Verdict::Regressed => Some(ChangeStatus::Confirmed),
        Verdict::Unchanged => Some(ChangeStatus::Dismissed),
        Verdict::Unclear => None,
    }
}

/// `more` runs added to those of `so_far`, read again.
fn merge(so_far: Option<Row>, more: Row, decision: &DecisionConfig) -> Row {
    let Some(mut row) = so_far else {
        return more;
    };
    row.a_tps.extend(more.a_tps);
    row.b_tps.extend(more.b_tps);
    row.a_instructions.extend(more.a_instructions);
    row.b_instructions.extend(more.b_instructions);
    row.a_functions.extend(more.a_functions);
    row.b_functions.extend(more.b_functions);
    row.a_hosts.extend(more.a_hosts);
    row.b_hosts.extend(more.b_hosts);
    row.a_failed += more.a_failed;
    row.b_failed += more.b_failed;
    row.analyse(decision);
    row
}

/// The runs of the side with fewer, timed or counted.
fn runs_a_side(row: &Row) -> usize {
    let a = row.a_tps.len().max(row.a_instructions.len());
    let b = row.b_tps.len().max(row.b_instructions.len());
    a.min(b)
}

/// What a run of the lab has cost so far, on average (0 before any).
fn lab_seconds(lab: &ProfileLab) -> f64 {
    let t = lab.lab.totals();
    if t.runs == 0 {
        0.0
    } else {
        t.bench_seconds / t.runs as f64
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use crate::store::NightStatus;

    fn night(id: i64, reference: &str) -> Night {
        Night {
            id,
            clock: id * 86_400,
            branch: "master".into(),
            tip: format!("t{id}"),
            status: NightStatus::Done,
            reason: None,
            reference: reference.into(),
            commits: vec![],
        }
    }

    #[test]
    fn the_window_holds_the_nights_since_the_reference_last_moved() {
        let cfg = WatchConfig::new("master");
        let ids = |w: Window| w.recent.iter().map(|n| n.id).collect::<Vec<_>>();
        let same: Vec<Night> = (1..=4).map(|k| night(k, "a")).collect();
        assert_eq!(ids(Window::of(&same, &[], &cfg)), [1, 2, 3, 4]);
        let moved = [night(1, "a"), night(2, "b"), night(3, "a"), night(4, "a")];
        assert_eq!(ids(Window::of(&moved, &[], &cfg)), [3, 4]);
        let mut short = cfg.clone();
        short.window = 1;
        assert_eq!(ids(Window::of(&moved, &[], &short)), [4]);
        assert!(ids(Window::of(&[], &[], &cfg)).is_empty());
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    #[test]
    fn more_counted_runs_are_kept_and_counted_as_runs() {
        let cfg = WatchConfig::new("master");
        let counted = |n: usize, per: f64| Row {
            a_instructions: vec![44_000.0; n],
            b_instructions: vec![per; n],
            ..Row::new(1)
        };
        let decision = cfg.decision_on(crate::core::counts::Measure::Instructions);
        let merged = merge(Some(counted(3, 44_440.0)), counted(3, 44_450.0), &decision);
        assert_eq!(runs_a_side(&merged), 6);
        assert!(merged.comparison.is_some());
        // Timed runs count alike.
        let timed = Row {
            a_tps: vec![1.0; 4],
            b_tps: vec![1.0; 5],
            ..Row::new(1)
        };
        assert_eq!(runs_a_side(&timed), 4);
    }
}
