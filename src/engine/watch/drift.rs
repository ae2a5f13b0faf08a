//! Small steps that add up: a series that loses half a percent a night
//! for weeks never shows a change point the side-by-side runs confirm
//! (the commits on either side of any one night differ by half a
//! percent), yet after twenty nights it is ten percent slower.
//!
//! So beside the change points ([`super::detect`]) each series' level of
//! some nights ago is set against its level now: the points of its first
//! [`DriftOptions::nights`] nights since its last change (or since the
//! window's start) against those of its last nights. When the two differ
//! by at least the decision's threshold and a Mann-Whitney test says so
//! at [`DriftOptions::significance`], the last commit of then and the
//! newest commit of now are a drift candidate, measured again side by
//! side as any candidate is, and stored as a change of its own kind
//! ([`ChangeKind::Drift`]). A drift confirmed moves the level of "then"
//! past it, so the same loss is never reported twice; a step or drift
//! already known covers every split inside it, so the change points do
//! not raise it again either.

use super::config::{ProfileLab, WatchConfig};
use super::detect::{Window, settle};
use crate::core::counts::Measure;
use crate::core::stats::{Alternative, mann_whitney_u, median};
use crate::store::points::{Point, points};
use crate::store::{ChangeKind, ChangeRow, ChangeStatus, Store};

/// How the drift test reads a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriftOptions {
    /// Nights in each of the two groups, then and now.
    pub nights: usize,
    /// Fewest points in each group: a watch of one commit a night reads
    /// more nights.
    pub min_points: usize,
    /// Smallest relative difference of the two groups' medians.
    pub min_change: f64,
    /// Largest p-value of the Mann-Whitney test between the groups.
    pub significance: f64,
}

impl DriftOptions {
    /// The setting the watcher uses on `measure`: groups of 5 nights
    /// (and at least 8 points), a difference of the side-by-side
    /// decision's threshold on that measure, p <= 0.01; the side-by-side
    /// runs keep the false ones from anyone.
    pub fn for_watch(cfg: &WatchConfig, measure: Measure) -> DriftOptions {
        DriftOptions {
            nights: 5,
            min_points: 8,
            min_change: cfg.decision_on(measure).threshold,
            significance: 0.01,
        }
    }
}

/// Finds a drift candidate in every series of `window` (read by the
/// caller) and measures it side by side; returns the drifts settled (or
/// left candidates) tonight. The changes are read here, after the change
/// points added theirs.
pub fn changes(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    window: Window,
    cfg: &WatchConfig,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<ChangeRow>> {
    let Window { recent, runs } = window;
    let known = store.changes(&cfg.branch)?;
    let mut out = Vec::new();
    for lab in labs.iter_mut() {
        for series in lab.series() {
            let options = DriftOptions::for_watch(cfg, series.measure);
            let pts = points(recent, runs, Some(&series.key));
            let Some(mut drift) = candidate(&pts, &series.key, &known, &options) else {
                continue;
            };
            note(&format!(
                "{}: the level drifted {} over {} nights",
                series.key,
                crate::report::watch::measured::size(&drift).short(),
                nights_between(&pts, &drift)
            ));
            drift.id = store.add_change(&drift)?;
            out.push(settle(store, (lab, &series), drift, runs, cfg, note)?);
        }
    }
    Ok(out)
}

/// Nights from the drift's first commit to its last.
fn nights_between(pts: &[Point], drift: &ChangeRow) -> usize {
    let at = |c: &str| pts.iter().position(|p| p.commit == c);
    match (at(&drift.before), at(&drift.after)) {
        (Some(b), Some(a)) => {
            let mut n: Vec<i64> = pts[b..=a].iter().map(|p| p.night).collect();
            n.dedup();
            n.len().saturating_sub(1)
        }
        _ => 0,
    }
}

/// The drift in `pts` (one series, in order) since its last change, if
/// the level of its first nights and of its last differ enough; `None`
/// too when the same pair of commits was raised before.
pub fn candidate(
    pts: &[Point],
    series: &str,
    known: &[ChangeRow],
    options: &DriftOptions,
) -> Option<ChangeRow> {
    let of_series: Vec<&ChangeRow> = known.iter().filter(|k| k.series == series).collect();
    let start = since_last_change(pts, &of_series);
    let pts = &pts[start..];
    let (then, now) = groups(pts, options)?;
    let ratios = |g: &[Point]| g.iter().map(|p| p.ratio).collect::<Vec<f64>>();
    let (a, b) = (ratios(then), ratios(now));
    let (ma, mb) = (median(&a), median(&b));
    if !(ma > 0.0 && mb.is_finite()) {
        return None;
    }
    let relative = mb / ma - 1.0;
    let p = mann_whitney_u(&a, &b, Alternative::TwoSided).p_value;
    if relative.abs() < options.min_change || p > options.significance {
        return None;
    }
    let (before, after) = (then.last()?, now.last()?);
    let raised = of_series
        .iter()
        .any(|k| k.before == before.commit && k.after == after.commit);
    (!raised && before.commit != after.commit).then(|| ChangeRow {
        id: 0,
        series: series.to_string(),
        before: before.commit.clone(),
        after: after.commit.clone(),
        pct: relative * 100.0,
        low_pct: None,
        high_pct: None,
        status: ChangeStatus::Candidate,
        first_night: after.night,
        p_value: p,
        kind: ChangeKind::Drift,
    })
}

/// Where the level of now began: the first point of the newest change
/// not dismissed (a step's or a drift's later commit), else 0.
fn since_last_change(pts: &[Point], known: &[&ChangeRow]) -> usize {
    known
        .iter()
        .filter(|k| k.status != ChangeStatus::Dismissed)
        .filter_map(|k| pts.iter().rposition(|p| p.commit == k.after))
        .max()
        .unwrap_or(0)
}

/// The points of the first nights and of the last, each group at least
/// `nights` nights and `min_points` points, the two apart.
fn groups<'a>(pts: &'a [Point], options: &DriftOptions) -> Option<(&'a [Point], &'a [Point])> {
    let head = group_len(pts.iter(), options)?;
    let tail = group_len(pts.iter().rev(), options)?;
    (head + tail <= pts.len()).then(|| (&pts[..head], &pts[pts.len() - tail..]))
}

/// How many points from the start of `pts` make a group.
fn group_len<'a>(pts: impl Iterator<Item = &'a Point>, options: &DriftOptions) -> Option<usize> {
    let (mut nights, mut last, mut len) = (0, None, 0);
    for p in pts {
        if last != Some(p.night) {
            if nights >= options.nights.max(1) && len >= options.min_points {
                return Some(len);
            }
            nights += 1;
            last = Some(p.night);
        }
        len += 1;
    }
    (nights >= options.nights.max(1) && len >= options.min_points).then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points of one series: `per_night` commits a night, the level of
    /// each night from `level`, with a small fixed wobble.
    fn series(nights: usize, per_night: usize, level: impl Fn(usize) -> f64) -> Vec<Point> {
        let wobble = [0.0, 0.006, -0.004, 0.003, -0.007, 0.002];
        (0..nights * per_night)
            .map(|k| {
                let night = k / per_night;
                let ratio = level(night) * (1.0 + wobble[k % wobble.len()]);
                Point {
                    night: night as i64 + 1,
                    clock: 0,
                    commit: format!("c{k}"),
                    subject: String::new(),
                    committed: 0,
                    series: "sim/c8".into(),
                    tps: ratio * 1000.0,
                    reference_tps: 1000.0,
                    ratio,
                    latency_ms: None,
                }
            })
            .collect()
    }

    fn options() -> DriftOptions {
        DriftOptions {
            nights: 5,
            min_points: 8,
            min_change: 0.03,
            significance: 0.01,
        }
    }

    fn drift(from: usize, nights: usize, loss: f64) -> impl Fn(usize) -> f64 {
        move |n| (1.0 - loss).powi(n.saturating_sub(from).min(nights) as i32)
    }

    fn known(before: &str, after: &str, status: ChangeStatus) -> ChangeRow {
        ChangeRow {
            id: 1,
            series: "sim/c8".into(),
            before: before.into(),
            after: after.into(),
            pct: -5.0,
            low_pct: None,
            high_pct: None,
            status,
            first_night: 1,
            p_value: 0.01,
            kind: ChangeKind::Step,
        }
    }

    #[test]
    fn a_flat_series_has_no_drift() {
        let pts = series(40, 3, |_| 1.0);
        assert_eq!(candidate(&pts, "sim/c8", &[], &options()), None);
    }

    #[test]
    fn half_a_percent_a_night_is_a_drift_from_then_to_now() {
        // Drifting from night 10 for 20 nights: 9.5% in all.
        let pts = series(40, 3, drift(10, 20, 0.005));
        let found = candidate(&pts, "sim/c8", &[], &options()).expect("a drift");
        assert_eq!(found.kind, ChangeKind::Drift);
        assert_eq!(found.status, ChangeStatus::Candidate);
        // The last commit of the first five nights, the newest commit.
        assert_eq!(
            (found.before.as_str(), found.after.as_str()),
            ("c14", "c119")
        );
        assert!((found.pct + 9.5).abs() < 0.5, "{}", found.pct);
        assert!(found.p_value <= 0.01);
    }

    #[test]
    fn a_drift_too_small_so_far_is_not_one_yet() {
        // Four nights of 0.5%: 2%, under the 3% a drift needs.
        let pts = series(30, 3, drift(20, 4, 0.005));
        assert_eq!(candidate(&pts, "sim/c8", &[], &options()), None);
    }

    #[test]
    fn a_gain_drifts_too() {
        let pts = series(30, 3, |n| 1.0 + 0.005 * n as f64);
        let found = candidate(&pts, "sim/c8", &[], &options()).expect("a drift");
        assert!(found.pct > 3.0, "{}", found.pct);
    }

    #[test]
    fn the_level_after_a_change_is_where_a_drift_is_read_from() {
        // A drift of 20 nights, already reported up to commit c89: what
        // is left after it (6 nights of 0.5%) is too small to report.
        let pts = series(40, 3, drift(10, 20, 0.005));
        let reported = known("c14", "c89", ChangeStatus::Reported);
        assert_eq!(candidate(&pts, "sim/c8", &[reported], &options()), None);
        // A dismissed change does not move it.
        let dismissed = known("c14", "c89", ChangeStatus::Dismissed);
        assert!(candidate(&pts, "sim/c8", &[dismissed], &options()).is_some());
    }

    #[test]
    fn the_same_pair_is_not_raised_twice() {
        let pts = series(40, 3, drift(10, 20, 0.005));
        let once = candidate(&pts, "sim/c8", &[], &options()).unwrap();
        let dismissed = ChangeRow {
            status: ChangeStatus::Dismissed,
            ..once.clone()
        };
        assert_eq!(candidate(&pts, "sim/c8", &[dismissed], &options()), None);
        // Another series' change is no cover.
        let other = ChangeRow {
            series: "sim/c1".into(),
            ..once
        };
        assert!(candidate(&pts, "sim/c8", &[other], &options()).is_some());
    }

    #[test]
    fn one_commit_a_night_reads_more_nights_a_group() {
        let pts = series(40, 1, drift(10, 20, 0.005));
        let found = candidate(&pts, "sim/c8", &[], &options()).expect("a drift");
        // Eight points make the first group: nights 1 to 8.
        assert_eq!(found.before, "c7");
        // Too few nights for two groups of eight: nothing.
        assert_eq!(candidate(&pts[..15], "sim/c8", &[], &options()), None);
    }

    /// The whole loop over the simulated lab: three commits a day, the
    /// first of each day from day 30 to day 49 half a percent slower.
    #[test]
    fn a_drift_over_simulated_nights_is_confirmed_once_as_a_drift() {
        use crate::engine::watch::{WatchConfig, watch_night};
        use crate::lab::sim::{History, NoiseModel, SimLab};
        use crate::store::sqlite::SqliteStore;
        const DAY: i64 = 86_400;
        let history = History {
            len: 3 * 80,
            steps: (30..50).map(|d| (3 * d + 1, 0.995)).collect(),
            unbuildable: Default::default(),
            base_tps: 1000.0,
        };
        let line = history.landing_every(DAY / 3);
        let noise = NoiseModel::Gaussian { cv: 0.01 };
        let mut labs = vec![ProfileLab {
            name: "sim".into(),
            clients: vec![8],
            lab: Box::new(SimLab::new(history, noise, 5)),
            placements: vec![],
            measures: vec![crate::core::counts::Measure::Tps],
        }];
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
        let cfg = WatchConfig {
            backfill: 10,
            ..WatchConfig::new("master")
        };
        for day in 20..75 {
            let clock = (day + 1) * DAY - 1;
            watch_night(&mut store, &mut labs, &line, clock, &cfg, &mut |_| {}).unwrap();
        }
        let pos = |id: &str| crate::lab::sim::sim_pos(id).unwrap();
        let confirmed: Vec<ChangeRow> = store
            .changes("master")
            .unwrap()
            .into_iter()
            .filter(|c| c.status == ChangeStatus::Confirmed)
            .collect();
        assert!(!confirmed.is_empty(), "no drift confirmed");
        for c in &confirmed {
            // Each confirmed change lies over the drift, none twice.
            assert!(
                pos(&c.before) < 3 * 49 + 1 && pos(&c.after) > 3 * 30,
                "{c:?}"
            );
        }
        assert!(
            confirmed.iter().any(|c| c.kind == ChangeKind::Drift),
            "{confirmed:?}"
        );
        for (k, a) in confirmed.iter().enumerate() {
            for b in &confirmed[k + 1..] {
                assert!(pos(&a.after) <= pos(&b.before), "{a:?} and {b:?} overlap");
            }
        }
    }
}
