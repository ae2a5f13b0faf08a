//! Tests of the comparison: its schedule, statistics and tables.

use super::*;
use crate::model::{LabTotals, Measurement};

/// A lab whose commits have fixed levels; records the run order.
struct FakeLab {
    levels: Vec<(String, f64)>,
    order: Vec<(String, u32)>,
    broken: Option<String>,
    /// Whether it builds ahead ([`Lab::prepare_ahead`]), and what it was
    /// asked to.
    builds_ahead: bool,
    ahead: Vec<String>,
}

impl Lab for FakeLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        if self.broken.as_deref() == Some(commit.id.as_str()) {
            return Ok(Prepared::Unbuildable {
                reason: "does not compile".into(),
                log: None,
            });
        }
        Ok(Prepared::Ready { cached: true })
    }

    fn prepare_ahead(&mut self, commit: &Commit) -> bool {
        self.ahead.push(commit.id.clone());
        self.builds_ahead
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        self.order.push((commit.id.clone(), spec.clients));
        let level = self
            .levels
            .iter()
            .find(|(id, _)| *id == commit.id)
            .map_or(1.0, |(_, l)| *l);
        // Deterministic noise of about 1%.
        let wobble = 1.0 + 0.01 * (((spec.run * 7919) % 11) as f64 - 5.0) / 5.0;
        Ok(RunOutcome::Measured(Measurement {
            instructions: None,
            tps: level * spec.clients as f64 * wobble,
            latency_ms: None,
            failed_transactions: None,
            percentiles: None,
            output: None,
        }))
    }

    /// Counts of `40_000 * 100 / level` instructions a transaction,
    /// 0.1% apart from run to run.
    fn counted_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let RunOutcome::Measured(mut m) = self.run(commit, spec)? else {
            unreachable!("the fake's runs all measure")
        };
        let level = self
            .levels
            .iter()
            .find(|(id, _)| *id == commit.id)
            .map_or(1.0, |(_, l)| *l);
        let wobble = 1.0 + 0.002 * (((spec.run * 37) % 17) as f64 / 17.0 - 0.5);
        let window = |n: u64| crate::core::counts::Window {
            transactions: n,
            instructions: n * 1000,
            processes: 2,
        };
        m.instructions = Some(crate::core::counts::Counted {
            per_transaction: 40_000.0 * 100.0 / level * wobble,
            counter: "fake".into(),
            short: window(200),
            long: window(1200),
            functions: vec![crate::core::counts::FunctionCount {
                name: "ExecInterpExpr".into(),
                per_transaction: 40_000.0 * 10.0 / level,
            }],
        });
        Ok(RunOutcome::Measured(m))
    }

    fn totals(&self) -> LabTotals {
        LabTotals::default()
    }

    fn describe(&self) -> String {
        "fake".into()
    }
}

#[test]
fn counted_runs_show_instructions_and_a_rise_of_them_is_slower() {
    // B costs 2% more instructions a transaction: under the noise of
    // tps, not of counts.
    let mut lab = lab(100.0 / 1.02);
    let cfg = DecisionConfig {
        threshold: 0.01,
        ..DecisionConfig::default()
    };
    let (a, b) = (Commit::bare("a"), Commit::bare("b"));
    let rows = measure(
        &mut lab,
        [(&a, "A"), (&b, "B")],
        (&[1], 4, Measure::Instructions),
        &cfg,
        &mut |_| {},
    )
    .unwrap();
    let row = &rows[0];
    assert!(row.a_tps.is_empty() && row.b_tps.is_empty(), "{row:?}");
    assert_eq!((row.a_instructions.len(), row.b_instructions.len()), (4, 4));
    let c = row.comparison.expect("a comparison");
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    let report = CompareReport {
        a: a.clone(),
        b: b.clone(),
        a_label: "a".into(),
        b_label: "b".into(),
        threshold: cfg.threshold,
        measurement: "fake".into(),
        measure: Measure::Instructions,
        measured_on: None,
        rows,
        why: None,
        both_ways: None,
    };
    let text = table(&report);
    assert!(text.contains("A instr/tx"), "{text}");
    assert!(text.contains("  4/4 "), "{text}");
    let rise = instructions_change_pct(c.change.pct);
    assert!((1.8..2.2).contains(&rise), "{rise}");
    assert!(text.contains(&format!("{rise:+.2}%")), "{text}");
    assert!(text.contains("SLOWER"), "{text}");
    assert!(text.contains("B costs at least 1.0% more"), "{text}");
    assert!(
        text.contains("where the instructions went, 1 client(s)"),
        "{text}"
    );
    assert!(text.contains("ExecInterpExpr"), "{text}");
}

fn lab(b_level: f64) -> FakeLab {
    FakeLab {
        levels: vec![("a".into(), 100.0), ("b".into(), b_level)],
        order: vec![],
        broken: None,
        builds_ahead: false,
        ahead: vec![],
    }
}

#[test]
fn schedule_interleaves_sides_per_client_count() {
    let s = schedule(&[1, 8], 2);
    let sides: Vec<SideId> = s.iter().map(|x| x.side).collect();
    use SideId::{A, B};
    assert_eq!(sides, [A, B, A, B, A, B, A, B]);
    assert_eq!(s.iter().filter(|x| x.clients == 8).count(), 4);
    assert_eq!(s[0].clients, 1);
}

#[test]
fn a_ten_percent_drop_is_slower_in_every_row() {
    let mut lab = lab(90.0);
    let (a, b) = (Commit::bare("a"), Commit::bare("b"));
    let cfg = DecisionConfig::default();
    let rows = measure(
        &mut lab,
        [(&a, "A"), (&b, "B")],
        (&[1, 16], 6, Measure::Tps),
        &cfg,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(lab.order.len(), 24);
    assert_eq!(lab.order[0].0, "a");
    assert_eq!(lab.order[1].0, "b");
    for row in &rows {
        let c = row.comparison.unwrap();
        assert_eq!(c.verdict, Verdict::Regressed, "{row:?}");
        assert!((c.change.pct + 10.0).abs() < 2.0, "{:?}", c.change);
        assert!(c.change.low_pct < c.change.pct && c.change.pct < c.change.high_pct);
    }
    let report = CompareReport {
        a,
        b,
        a_label: "master".into(),
        b_label: "patched".into(),
        threshold: cfg.threshold,
        measurement: "fake".into(),
        measure: Measure::Tps,
        measured_on: None,
        rows,
        why: None,
        both_ways: None,
    };
    let text = table(&report);
    assert_eq!(text.matches("SLOWER").count(), 3, "{text}");
    assert!(text.contains("-10."), "{text}");
    assert_eq!(chart_series(&report)[1].points.len(), 2);
}

#[test]
fn the_same_build_is_not_called_slower() {
    let mut lab = lab(100.0);
    let (a, b) = (Commit::bare("a"), Commit::bare("b"));
    let cfg = DecisionConfig::default();
    let rows = measure(
        &mut lab,
        [(&a, "A"), (&b, "B")],
        (&[4], 6, Measure::Tps),
        &cfg,
        &mut |_| {},
    )
    .unwrap();
    let c = rows[0].comparison.unwrap();
    assert_ne!(c.verdict, Verdict::Regressed);
    assert!(c.change.pct.abs() < 2.0);
}

#[test]
fn hosts_of_different_speeds_are_compared_host_by_host() {
    use crate::lab::sim::hosts::{HostModel, HostsLab};
    use crate::lab::sim::{History, NoiseModel};
    let hosts =
        [(0.75, 1.0), (1.25, 0.6)].map(|(speed, noise_scale)| HostModel { speed, noise_scale });
    let cfg = DecisionConfig::default();
    for (steps, regressed) in [(vec![(1, 0.9)], true), (vec![], false)] {
        let history = History {
            len: 1,
            steps,
            unbuildable: Default::default(),
            base_tps: 1000.0,
        };
        let noise = NoiseModel::Gaussian { cv: 0.01 };
        let mut lab = HostsLab::new(&history, &noise, &hosts, 4);
        let ids = history.commits();
        let sides = [(&ids[0], "A"), (&ids[1], "B")];
        let rows = measure(&mut lab, sides, (&[8], 6, Measure::Tps), &cfg, &mut |_| {}).unwrap();
        let row = &rows[0];
        assert_eq!((row.a_tps.len(), row.a_hosts.len()), (6, 6));
        assert_eq!(lab.rounds, 6);
        let c = row.comparison.unwrap();
        assert_eq!(c.verdict == Verdict::Regressed, regressed, "{c:?}");
        let expected = if regressed { -10.0 } else { 0.0 };
        assert!((c.change.pct - expected).abs() < 2.0, "{c:?}");
        assert!(c.change.high_pct - c.change.low_pct < 6.0, "{c:?}");
    }
}

#[test]
fn an_unbuildable_side_is_an_error_naming_it() {
    let mut lab = lab(100.0);
    lab.broken = Some("b".into());
    let (a, b) = (Commit::bare("a"), Commit::bare("b"));
    let err = measure(
        &mut lab,
        [(&a, "A"), (&b, "patched")],
        (&[4], 3, Measure::Tps),
        &DecisionConfig::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("patched"), "{err}");
    assert!(lab.order.is_empty() && lab.ahead.is_empty());
}

#[test]
fn on_counts_b_builds_beside_a_s_first_run_and_is_refused_when_its_own_is_due() {
    let mut lab = lab(100.0);
    lab.builds_ahead = true;
    lab.broken = Some("b".into());
    let (a, b) = (Commit::bare("a"), Commit::bare("b"));
    let mut notes = Vec::new();
    let err = measure(
        &mut lab,
        [(&a, "A"), (&b, "patched")],
        (&[1], 3, Measure::Instructions),
        &DecisionConfig::default(),
        &mut |n| notes.push(n.to_string()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("patched"), "{err}");
    assert_eq!(lab.ahead, ["b"]);
    assert_eq!(lab.order, [("a".to_string(), 1)]);
    assert!(
        notes[0].contains("preparing b beside the counted runs"),
        "{notes:?}"
    );
}

#[test]
fn a_row_without_results_says_no_data() {
    let mut row = Row {
        a_tps: vec![100.0],
        b_failed: 3,
        ..Row::new(2)
    };
    row.analyse(&DecisionConfig::default());
    assert!(row.comparison.is_none());
    let report = CompareReport {
        a: Commit::bare("a"),
        b: Commit::bare("b"),
        a_label: String::new(),
        b_label: String::new(),
        threshold: 0.05,
        measurement: String::new(),
        measure: Measure::Tps,
        measured_on: None,
        rows: vec![row],
        why: None,
        both_ways: None,
    };
    assert!(table(&report).contains("no data"));
    assert_eq!(report.sides_without_results(), vec![(2, "B")]);
    let mut both = report.clone();
    both.rows[0].a_tps.clear();
    assert_eq!(both.sides_without_results(), vec![(2, "A"), (2, "B")]);
    both.rows[0].a_tps = vec![1.0];
    both.rows[0].b_tps = vec![1.0];
    assert!(both.sides_without_results().is_empty());
}
