//! A CPU profile of a real PostgreSQL server under pgbench, recorded with
//! Linux `perf` (`PGBISECT_TEST_PG_BIN`, default Debian's PostgreSQL 15;
//! as root the server runs as user `postgres`). Debian's binaries keep no
//! frame pointers, so the stacks are unwound from DWARF tables.

use crate::common;

use pgbisect::bench;
use pgbisect::perf::{self, CallGraph, PerfSampler, Plan, Unavailable};
use pgbisect::placement::Pin;
use pgbisect::server::{RunAs, SocketDir, time_limit};
use std::time::Duration;

#[test]
fn a_server_under_pgbench_is_profiled_down_to_the_executor() {
    let Some(bin) = common::pg_bin() else { return };
    let work = common::pg::reachable_temp_dir("/tmp", "pgbisect-perf-");
    let run_as = RunAs::resolve(None).unwrap();
    let options = common::pg::select_only_s1();
    let sockets = SocketDir::create(&run_as).unwrap();
    let server = common::pg::started_s1(&bin, work.path(), "pg-s1", &sockets, &run_as);

    // The server gets as much CPU as the machine spares: on a machine
    // busy with other tests a 5-second window may hold too few samples,
    // so a thin profile is recorded again over a longer window.
    let mut folded = None;
    for run_secs in [5, 10, 20] {
        let Some(profiled) = profile_for(&bin, &server, &options, work.path(), run_secs) else {
            server.stop().unwrap();
            return;
        };
        eprintln!(
            "{run_secs} s: {} samples; PostgresMain: {}, ExecutorStart: {}",
            profiled.samples(),
            profiled.has_function("PostgresMain"),
            profiled.has_function("ExecutorStart")
        );
        let enough = profiled.samples() >= 20;
        folded = Some(profiled);
        if enough {
            break;
        }
    }
    server.stop().unwrap();
    let folded = folded.expect("a profile");
    assert!(folded.samples() >= 20, "{} samples", folded.samples());
    assert!(
        folded.has_function("PostgresMain") || folded.has_function("ExecutorStart"),
        "no PostgreSQL frames in:\n{}",
        folded.to_text()
    );
    // Against itself a profile moves nothing.
    let same = perf::ProfileDiff::between(&folded, &folded);
    assert!(same.risers(3).is_empty() && same.fallers(3).is_empty());
    let written = perf::write_comparison(&work.path().join("why"), &folded, &folded, "t").unwrap();
    assert!(
        std::fs::read_to_string(&written.svg)
            .unwrap()
            .contains("PostgresMain")
    );
}

/// The server's CPU profile over `run_secs` of a one-client pgbench run,
/// or `None` when this machine does not let it be profiled (see
/// [`common::require`]).
fn profile_for(
    bin: &std::path::Path,
    server: &pgbisect::server::RunningServer,
    options: &bench::PgbenchOptions,
    work: &std::path::Path,
    run_secs: u32,
) -> Option<perf::Folded> {
    let plan = Plan {
        call_graph: CallGraph::Dwarf,
        frequency: 99,
        ..Plan::within(Duration::from_secs(run_secs.into()))
    };
    let args = bench::run_args(options, 1, run_secs, &server.conn("postgres"));
    let out = work.join("pgbench.txt");
    let (profile, tps) = perf::record_during(
        std::sync::Arc::new(PerfSampler::default()),
        server.pid(),
        &plan,
        &work.join("perf"),
        || {
            server
                .run_pgbench(
                    &bin.join("pgbench"),
                    &args,
                    &Pin::none(),
                    &out,
                    time_limit(run_secs),
                )
                .map(|r| r.tps)
        },
    );
    assert!(tps.unwrap() > 0.0);
    match profile.unwrap() {
        Ok(folded) => Some(folded),
        Err(why @ Unavailable::NotPermitted { .. }) => {
            let what = format!("leave to profile ({why})");
            common::require(
                None::<()>,
                &what,
                "run as root, or lower kernel.perf_event_paranoid",
            );
            None
        }
        Err(why) => panic!("{why}"),
    }
}
