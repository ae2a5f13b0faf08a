//! A CPU profile of a real PostgreSQL server under pgbench, recorded with
//! Linux `perf` (`PGBISECT_TEST_PG_BIN`, default Debian's PostgreSQL 15;
//! as root the server runs as user `postgres`). Debian's binaries keep no
//! frame pointers, so the stacks are unwound from DWARF tables.

mod common;

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

    let run_secs = 5;
    let plan = Plan {
        call_graph: CallGraph::Dwarf,
        frequency: 99,
        ..Plan::within(Duration::from_secs(run_secs.into()))
    };
    let args = bench::run_args(&options, 1, run_secs, &server.conn("postgres"));
    let out = work.path().join("pgbench.txt");
    let (profile, tps) = perf::record_during(
        std::sync::Arc::new(PerfSampler::default()),
        server.pid(),
        &plan,
        &work.path().join("perf"),
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
    server.stop().unwrap();
    assert!(tps.unwrap() > 0.0);
    let folded = match profile.unwrap() {
        Ok(folded) => folded,
        Err(why @ Unavailable::NotPermitted { .. }) => {
            let what = format!("leave to profile ({why})");
            common::require(
                None::<()>,
                &what,
                "run as root, or lower kernel.perf_event_paranoid",
            );
            return;
        }
        Err(why) => panic!("{why}"),
    };
    eprintln!(
        "{} samples; PostgresMain: {}, ExecutorStart: {}",
        folded.samples(),
        folded.has_function("PostgresMain"),
        folded.has_function("ExecutorStart")
    );
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
