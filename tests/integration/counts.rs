//! Counted runs of a real PostgreSQL 15 server (Debian's binaries) under
//! valgrind's cachegrind: the instructions a select-only transaction costs
//! come out alike run after run, where tps would not.
//!
//! Needs the PostgreSQL binaries (`PGBISECT_TEST_PG_BIN`, default
//! Debian's) and valgrind (scripts/setup.sh installs both); without them
//! the test says it is skipped, and fails under CI.

use crate::common;

use common::pg::{select_only_s1, server_work_dir, template_spec};
use pgbisect::bench::{PgbenchOptions, QueryMode, WeightedScript};
use pgbisect::core::counts::Lengths;
use pgbisect::counts::Counter;
use pgbisect::counts::cachegrind::Cachegrind;
use pgbisect::lab::RunSpec;
use pgbisect::lab::pg::runs::{RealMachinery, RunJob, Runs, fits};
use pgbisect::model::RunOutcome;
use pgbisect::placement::Pin;
use pgbisect::server::{RunAs, Server, SocketDir, pick_port};

#[test]
fn counted_runs_of_one_server_agree_to_a_fraction_of_a_percent() {
    let Some((counts, short)) = counted_three_times(select_only_s1()) else {
        return;
    };
    eprintln!("instructions a transaction, three counted runs: {counts:?}");
    // A transaction under a millisecond (a few on a busy machine) gets
    // runs of hundreds to thousands, about 2 s, so that its backend's
    // first second (statistics flushed at most once a second) is not all
    // that is counted; it is not cut short for the first warm-up run's
    // start-up costs either.
    assert!(short >= 200, "select-only fitted to short runs of {short}");
    // A select-only transaction of PostgreSQL 15 costs about 44K
    // instructions in its backend (DESIGN).
    for n in &counts {
        assert!((10_000.0..200_000.0).contains(n), "{counts:?}");
    }
    assert!(spread(&counts) < 0.01, "counts spread over 1%: {counts:?}");
}

/// A weighted mix of a cheap script and one a hundred times dearer: how
/// many of each a run draws moves its instructions a transaction by tens
/// of percent, unless every run draws the same ones (`--random-seed`).
#[test]
fn a_weighted_mix_of_scripts_counts_alike_run_after_run() {
    let scripts = tempfile::tempdir().unwrap();
    let script = |name: &str, sql: &str, weight: u32| {
        let path = scripts.path().join(name);
        std::fs::write(&path, sql).unwrap();
        WeightedScript {
            path,
            weight: Some(weight),
        }
    };
    let options = PgbenchOptions {
        scripts: vec![
            script("cheap.sql", "SELECT 1;\n", 3),
            script(
                "dear.sql",
                "\\set n random(4000, 4000)\nSELECT count(*) FROM generate_series(1, :n) g WHERE g % 7 = 3;\n",
                1,
            ),
        ],
        mode: QueryMode::Prepared,
        scale: 1,
        ..Default::default()
    };
    let Some((counts, _)) = counted_three_times(options) else {
        return;
    };
    eprintln!("instructions a transaction of the mix, three counted runs: {counts:?}");
    assert!(spread(&counts) < 0.01, "counts spread over 1%: {counts:?}");
}

/// (max - min) / max.
fn spread(counts: &[f64]) -> f64 {
    let (min, max) = counts
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &n| (lo.min(n), hi.max(n)));
    (max - min) / max
}

/// Three counted runs of `options` on one PostgreSQL 15 server's data,
/// each checked as a counted run; their instructions a transaction and
/// the short run's transactions (the same in all three), or `None` when
/// the binaries or valgrind are missing (said so).
fn counted_three_times(options: PgbenchOptions) -> Option<(Vec<f64>, u64)> {
    let bin = common::pg_bin()?;
    let counter = common::require(
        Cachegrind::find().ok(),
        "valgrind",
        "scripts/setup.sh installs it",
    )?;
    let work = server_work_dir();
    let run_as = RunAs::resolve(None).unwrap();
    let sockets = SocketDir::create(&run_as).unwrap();
    let spec = template_spec(&bin, work.path(), "t", options.clone(), &run_as);
    // The third run is a later lab's: it takes the fit the first kept.
    let fits_file = work.path().join(fits::FILE);
    let lab =
        || Runs::new(Box::new(RealMachinery), options.clone()).keeping_fits(fits_file.clone());
    let mut runs = lab();
    let counted_dir = work.path().join("counted");
    std::fs::create_dir(&counted_dir).unwrap();
    let lengths = Lengths {
        warmup: 100,
        short: 100,
        long: 600,
    };
    let mut counts = Vec::new();
    let mut shorts = Vec::new();
    for run in 1..=3 {
        if run == 3 {
            assert!(
                fits_file.is_file(),
                "no fit kept in {}",
                fits_file.display()
            );
            runs = lab();
        }
        let launcher = counter
            .launcher(&bin.join("postgres"), &counted_dir, run_as.uid())
            .unwrap();
        let job = RunJob {
            template: &spec,
            server: Server {
                bin: bin.clone(),
                data_dir: work.path().join("data"),
                port: pick_port(sockets.path()),
                socket_dir: sockets.path().to_path_buf(),
                settings: vec![("autovacuum".into(), "off".into())],
                log: work.path().join(format!("server-{run}.log")),
                run_as: run_as.clone(),
                registry_dir: Some(work.path().join("servers")),
                pin: Pin::none(),
                launcher: Some(launcher.program.clone()),
            },
            pgbench: bin.join("pgbench"),
            pgbench_pin: Pin::none(),
            spec: RunSpec {
                clients: 1,
                run,
                seconds: None,
            },
            out: work.path().join(format!("run-{run}")),
            transaction_log: None,
            sampled_log: None,
        };
        let outcome = runs.count(job, &counter, &launcher, lengths).unwrap();
        let RunOutcome::Measured(m) = outcome else {
            panic!("run {run} gave no count: {outcome:?}");
        };
        let c = m.instructions.expect("a counted run's count");
        assert_eq!(c.counter, counter.name());
        assert!(c.long.transactions > c.short.transactions, "{c:?}");
        assert_eq!(c.short.processes, c.long.processes, "{c:?}");
        assert!(c.short.processes >= 1, "{c:?}");
        counts.push(c.per_transaction);
        shorts.push(c.short.transactions);
    }
    assert!(
        shorts.windows(2).all(|w| w[0] == w[1]),
        "short runs of {shorts:?} transactions"
    );
    Some((counts, shorts[0]))
}
