use super::*;

fn run(clients: u32, tps: f64, stmt_ms: f64, p99: f64, waits: &[(&str, u64)]) -> InstrumentedRun {
    InstrumentedRun {
        clients,
        tps,
        statements: vec![
            StatementLatency {
                statement: "\\set aid random(1, 100000 * :scale)".into(),
                ms: 0.002,
            },
            StatementLatency {
                statement: "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;".into(),
                ms: stmt_ms,
            },
        ],
        latency: Some(Percentiles {
            p50_ms: p99 / 2.0,
            p95_ms: p99 * 0.9,
            p99_ms: p99,
            transactions: 1000,
        }),
        waits: WaitEvents::Sampled(waits.iter().map(|(k, v)| (k.to_string(), *v)).collect()),
        output: None,
        profile: None,
    }
}

#[test]
fn percentiles_by_nearest_rank() {
    let p = Percentiles::of_micros((1..=100).map(|i| i * 1000).collect()).unwrap();
    assert_eq!((p.p50_ms, p.p95_ms, p.p99_ms), (50.0, 95.0, 99.0));
    assert_eq!(p.transactions, 100);
    assert_eq!(Percentiles::of_micros(vec![]), None);
    let one = Percentiles::of_micros(vec![1500]).unwrap();
    assert_eq!((one.p50_ms, one.p99_ms), (1.5, 1.5));
}

#[test]
fn a_culprit_slower_per_statement_shows_at_every_client_count() {
    let mut runs = WhyRuns::default();
    for c in [1, 2] {
        for i in 0..3 {
            let wobble = i as f64;
            runs.before.push(run(
                c,
                1000.0 + wobble,
                0.050,
                0.2,
                &[("CPU", 50), ("Client:ClientRead", 50)],
            ));
            runs.after.push(run(
                c,
                900.0 + wobble,
                0.060,
                0.3,
                &[("CPU", 70), ("Client:ClientRead", 30)],
            ));
        }
    }
    let why = runs.summarize("c", "p", 2, 12.0);
    assert_eq!(why.points.len(), 2);
    for p in &why.points {
        assert!((p.tps_change_pct - -10.0).abs() < 0.2, "{p:?}");
        assert!((p.p99_change_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!((p.p50_change_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(!p.spread_changed_more);
    }
    assert_eq!(why.statements_clients, 2);
    assert_eq!(why.statements.len(), 2);
    assert!((why.statements[1].change_pct - 20.0).abs() < 1e-6);
    match &why.waits {
        WaitFinding::Sampled {
            shares,
            samples_before,
            ..
        } => {
            assert_eq!(*samples_before, 600);
            assert_eq!(shares.len(), 2);
            assert!(
                shares
                    .iter()
                    .any(|s| s.event == "CPU" && s.after_pct == 70.0)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(why.notes.is_empty(), "{:?}", why.notes);
    assert_eq!(why.runs, 12);
}

#[test]
fn noisier_but_hardly_slower_is_flagged() {
    let mut runs = WhyRuns::default();
    for tps in [1000.0, 1001.0, 999.0] {
        runs.before.push(run(1, tps, 0.05, 0.2, &[("CPU", 1)]));
    }
    for tps in [1000.0, 800.0, 1150.0] {
        runs.after.push(run(1, tps, 0.05, 0.2, &[("CPU", 1)]));
    }
    let why = runs.summarize("c", "p", 1, 1.0);
    assert!(why.points[0].spread_changed_more, "{:?}", why.points[0]);
    assert!(
        why.notes.iter().any(|n| n.contains("spread")),
        "{:?}",
        why.notes
    );
}

#[test]
fn a_server_without_wait_events_says_so() {
    let mut runs = WhyRuns::default();
    let mut old = run(1, 1000.0, 0.05, 0.2, &[]);
    old.waits = WaitEvents::Unavailable("servers before 9.6 have no wait events".into());
    runs.before.push(old.clone());
    runs.after.push(old);
    let why = runs.summarize("c", "p", 1, 1.0);
    assert_eq!(
        why.waits,
        WaitFinding::Unavailable("servers before 9.6 have no wait events".into())
    );
}

#[test]
fn small_moves_of_a_wait_share_are_left_out() {
    let before = [run(
        1,
        1.0,
        0.1,
        0.1,
        &[("CPU", 990), ("LWLock:WALWrite", 10)],
    )];
    let after = [run(
        1,
        1.0,
        0.1,
        0.1,
        &[("CPU", 985), ("LWLock:WALWrite", 15)],
    )];
    match waits(&before, &after) {
        WaitFinding::Sampled { shares, .. } => assert!(shares.is_empty(), "{shares:?}"),
        other => panic!("{other:?}"),
    }
}
