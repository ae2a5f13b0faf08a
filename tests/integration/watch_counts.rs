//! The watcher's count series: a step of instructions a transaction
//! measured night by night beside the reference, confirmed side by side
//! on counts, and shown by the real binary's site and export as a change
//! of instructions a transaction (lower is better); a watch on tps keeps
//! its series' names, and a profile that cannot count is refused.
//!
//! The nights are the engine's over the simulated lab, which counts (a
//! counted run needs PostgreSQL built from source and valgrind, which
//! `tests/integration/counts.rs` checks on their own); the store they
//! leave is read by `pgbisect watch publish` and `watch export`.

use crate::common;

use common::watch::{dated_history, replay};
use common::*;
use pgbisect::engine::watch::{ProfileLab, WatchConfig, WatchMeasures, watch_night};
use pgbisect::lab::sim::{History, NoiseModel, SimLab};
use pgbisect::store::sqlite::SqliteStore;
use pgbisect::store::{ChangeStatus, Store};
use std::path::Path;

const DAY: i64 = 86_400;

/// Nights of days 14 to 35 over three commits a day, what instructions
/// buy 1% lower from commit `step` on (about 1% more instructions a
/// transaction; within the 1% noise of tps), a count series beside the
/// tps one; the store left in `work`.
fn nights_with_a_count_step(work: &Path, step: usize) {
    let history = History {
        len: 3 * 40,
        steps: vec![(step, 0.99)],
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    let line = history.landing_every(DAY / 3);
    let lab = SimLab::new(history, NoiseModel::Gaussian { cv: 0.01 }, 5)
        .counting(NoiseModel::Gaussian { cv: 0.002 });
    let mut labs = vec![ProfileLab {
        name: "sim".into(),
        clients: vec![1],
        lab: Box::new(lab),
        placements: vec![],
        measures: WatchMeasures::Both.measures(),
    }];
    std::fs::create_dir_all(work).unwrap();
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let cfg = WatchConfig {
        backfill: 10,
        ..WatchConfig::new("master")
    };
    for day in 14..=35 {
        watch_night(
            &mut store,
            &mut labs,
            &line,
            (day + 1) * DAY - 1,
            &cfg,
            &mut |_| {},
        )
        .unwrap();
    }
    let changes = store.changes("master").unwrap();
    let confirmed: Vec<_> = changes
        .iter()
        .filter(|c| c.status == ChangeStatus::Confirmed)
        .collect();
    assert_eq!(confirmed.len(), 1, "{changes:?}");
    assert_eq!(confirmed[0].series, "sim/c1/instructions", "{changes:?}");
    // Kept as what instructions buy: a drop, as a drop of tps is.
    assert!(confirmed[0].pct < -0.5, "{confirmed:?}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_count_step_is_confirmed_and_shown_as_more_instructions_a_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    nights_with_a_count_step(&work, 3 * 25 + 1);
    let site = tmp.path().join("site");
    let out = bin()
        .args(["watch", "publish", "--html"])
        .arg(&site)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let index = read(&site.join("index.html"));
    assert!(index.contains("sim/c1/instructions"), "{index}");
    assert!(
        index.contains("<td class=\"measure\">instructions a transaction</td>"),
        "{index}"
    );
    assert!(index.contains("<td class=\"measure\">tps</td>"), "{index}");
    // The change: a step up of instructions a transaction, a slowdown.
    let counted = read(&site.join("series-sim-c1-instructions.html"));
    assert!(counted.contains("lower is better"), "{counted}");
    assert!(
        counted.contains("instructions a transaction over the reference"),
        "{counted}"
    );
    let feed = read(&site.join("changes.atom"));
    let title = feed
        .split("<title>")
        .find(|t| t.starts_with("sim/c1/instructions"))
        .unwrap_or_else(|| panic!("no entry of the count series: {feed}"));
    assert!(
        title.starts_with("sim/c1/instructions +1.")
            && title.contains("instructions a transaction"),
        "{title}"
    );
    let page = std::fs::read_dir(&site)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| read(&e.path()))
        .find(|t| t.contains("<table id=\"change\">"))
        .expect("a change page");
    assert!(
        page.contains("<th>measure</th><td>instructions a transaction</td>"),
        "{page}"
    );
    assert!(page.contains("<th>change</th><td>+1."), "{page}");
    // The tps series beside it is the tps series it always was.
    let tps = read(&site.join("series-sim-c1.html"));
    assert!(tps.contains("median throughput"), "{tps}");
    // Exported for Otava in instructions a transaction.
    let csv = tmp.path().join("watch.csv");
    let export = bin()
        .args(["watch", "export", "--csv"])
        .arg(&csv)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(export.status.code(), Some(0), "{export:?}");
    let header = read(&csv).lines().next().unwrap_or_default().to_string();
    assert!(
        header.ends_with(
            ",sim/c1.ratio,sim/c1.tps,sim/c1.reference_tps,sim/c1/instructions.ratio,\
             sim/c1/instructions.instructions,sim/c1/instructions.reference_instructions,reference"
        ),
        "{header}"
    );
}

#[test]
fn a_watch_on_tps_keeps_its_series_and_a_profile_that_cannot_count_is_refused() {
    let (repo, _) = dated_history(&levels_with_drop_at(8, 5));
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let args = replay(&profile, "2024-01-01..2024-01-08");
    let out = pgbisect_sub("watch", repo.path(), &work, &args);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let series: std::collections::BTreeSet<String> = store
        .runs("main")
        .unwrap()
        .into_iter()
        .map(|r| r.series)
        .collect();
    assert_eq!(series.into_iter().collect::<Vec<_>>(), ["profile/c8"]);
    drop(store);
    // Counting needs pgbench and a server started here: a custom
    // benchmark command is refused before anything is measured.
    let mut counting = args.clone();
    counting.extend(["--measure", "both"]);
    let refused = pgbisect_sub("watch", repo.path(), &work, &counting);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("cannot count instructions"), "{said}");
    let bad = pgbisect_sub("watch", repo.path(), &work, &["--measure", "auto"]);
    let said = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(said.contains("`both`"), "{said}");
}
