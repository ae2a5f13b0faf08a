use super::*;
use crate::testing::{counted_outcome, run_event};

/// Counts its runs; each run is a count of 1,000 instructions.
#[derive(Default)]
struct Counter {
    runs: usize,
}

impl Lab for Counter {
    fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: true })
    }
    fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
        self.runs += 1;
        Ok(counted_outcome(1_000.0, vec![]))
    }
    fn totals(&self) -> LabTotals {
        LabTotals {
            runs: self.runs as u64,
            ..LabTotals::default()
        }
    }
    fn describe(&self) -> String {
        "counter".into()
    }
}

fn counted(n: u64, commit: &str, per_transaction: f64) -> Event {
    Event::run_here(
        n,
        &Commit::bare(commit),
        1,
        &counted_outcome(per_transaction, vec![]),
    )
}

fn spec(run: u64) -> RunSpec {
    RunSpec {
        clients: 1,
        run,
        seconds: None,
    }
}

fn figure(outcome: &RunOutcome) -> f64 {
    match outcome {
        RunOutcome::Measured(m) => m.instructions.as_ref().unwrap().per_transaction,
        RunOutcome::Failed { reason } => panic!("failed: {reason}"),
    }
}

#[test]
fn the_endpoints_runs_are_served_first_in_order_then_the_lab_runs() {
    let (good, bad, other) = (Commit::bare("g"), Commit::bare("b"), Commit::bare("x"));
    let events = vec![
        counted(1, "g", 10.0),
        counted(2, "b", 20.0),
        counted(3, "g", 11.0),
        counted(4, "x", 99.0),
        Event::run_here(
            5,
            &good,
            1,
            &RunOutcome::Failed {
                reason: "crashed".into(),
            },
        ),
    ];
    let pool = Pool::from_events(&events, &[&good, &bad]);
    assert_eq!(
        pool.len(),
        3,
        "the failed run and the other commit's are left out"
    );
    let mut lab = Counter::default();
    let mut reusing = Reusing::new(&mut lab, pool);
    let got: Vec<f64> = [&good, &good, &bad, &good, &other]
        .iter()
        .enumerate()
        .map(|(i, c)| figure(&reusing.run(c, spec(i as u64 + 1)).unwrap()))
        .collect();
    assert_eq!(got, [10.0, 11.0, 20.0, 1_000.0, 1_000.0]);
    assert_eq!(reusing.served(), 3);
    assert_eq!(
        reusing.totals().runs,
        2,
        "served runs are not the lab's work"
    );
}

#[test]
fn a_run_of_another_length_is_made_not_served() {
    let good = Commit::bare("g");
    let pool = Pool::from_events(&[counted(1, "g", 10.0)], &[&good]);
    let mut lab = Counter::default();
    let mut reusing = Reusing::new(&mut lab, pool);
    let longer = RunSpec {
        seconds: Some(30),
        ..spec(1)
    };
    assert_eq!(figure(&reusing.run(&good, longer).unwrap()), 1_000.0);
    assert_eq!(figure(&reusing.run(&good, spec(2)).unwrap()), 10.0);
}

#[test]
fn runs_a_resumed_hunt_journaled_are_not_served_again() {
    let (good, bad) = (Commit::bare("g"), Commit::bare("b"));
    let choice = vec![
        counted(1, "g", 10.0),
        counted(2, "b", 20.0),
        counted(3, "g", 11.0),
        counted(4, "b", 21.0),
    ];
    // The hunt took the good end's two and one of the bad end's, then
    // made runs of its own before it was stopped.
    let hunt = vec![
        counted(1, "g", 10.0),
        counted(2, "g", 11.0),
        counted(3, "b", 20.0),
        counted(4, "g", 12.0),
        run_event(5, "m", 1, 1.0),
    ];
    let made = Pool::from_events(&choice, &[&good, &bad]);
    assert_eq!(made.taken(&hunt), 3);
    let pool = made.without_journaled(&hunt);
    assert_eq!(pool.len(), 1);
    let mut lab = Counter::default();
    let mut reusing = Reusing::new(&mut lab, pool);
    assert_eq!(figure(&reusing.run(&bad, spec(6)).unwrap()), 21.0);
    assert_eq!(figure(&reusing.run(&good, spec(7)).unwrap()), 1_000.0);
    assert!(Pool::default().is_empty());
}

/// Two hosts, each run named by its host.
#[derive(Default)]
struct TwoHosts {
    rounds: usize,
}

impl Lab for TwoHosts {
    fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
        Ok(Prepared::Ready { cached: true })
    }
    fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
        panic!("a lab of hosts makes its runs in rounds")
    }
    fn hosts(&self) -> Vec<String> {
        vec!["h1".into(), "h2".into()]
    }
    fn run_on(&mut self, _: RunSpec, runs: &[super::Planned]) -> anyhow::Result<Vec<HostRun>> {
        self.rounds += 1;
        Ok(runs
            .iter()
            .map(|p| HostRun {
                host: Some(format!("h{}", p.host + 1)),
                outcome: counted_outcome(1_000.0, vec![]),
            })
            .collect())
    }
    fn totals(&self) -> LabTotals {
        LabTotals::default()
    }
    fn describe(&self) -> String {
        "two hosts".into()
    }
}

#[test]
fn a_lab_of_hosts_keeps_its_hosts_and_its_rounds() {
    let mut lab = TwoHosts::default();
    let mut reusing = Reusing::new(&mut lab, Pool::default());
    assert_eq!(reusing.hosts(), ["h1", "h2"]);
    let round = reusing.run_round(&Commit::bare("g"), spec(1)).unwrap();
    let hosts: Vec<_> = round.iter().map(|r| r.host.clone()).collect();
    assert_eq!(hosts, [Some("h1".to_string()), Some("h2".to_string())]);
    assert_eq!(lab.rounds, 1);
}
