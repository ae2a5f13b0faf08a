//! The why-runs: a culprit and its parent measured side by side once more,
//! with instruments, after the verdict.
//!
//! The verdict's runs are kept as they were decided on; these runs are
//! made through [`Lab::instrumented_run`], never journaled as runs of the
//! hunt and never counted as evidence. They alternate parent, culprit,
//! parent, culprit at each client count of the sweep (the profile's, else
//! 1 to the machine's CPU count in doublings, as seed 000's table), so
//! that a swing of the machine falls on both. What they say is summed up
//! by [`crate::core::why`].

use crate::core::why::{Instrumented, Why, WhyRuns};
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, Prepared};
use crate::progress::{Progress, ProgressEvent};
use std::time::Instant;

/// Runs per side and client count when not told otherwise.
pub const DEFAULT_RUNS: usize = 3;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhyPlan {
    /// Client counts, fewest first.
    pub clients: Vec<u32>,
    /// Runs per side and client count.
    pub runs: usize,
    /// The count the verdict was made at: its statements are compared.
    pub main_clients: u32,
    /// Run number of the first run (names its files).
    pub first_run: u64,
}

/// The client counts of the sweep: the profile's when it lists several,
/// else 1 to `cpus` in doublings; the hunt's own count is always in.
pub fn sweep(profile_clients: &[u32], cpus: u32, main: u32) -> Vec<u32> {
    let mut counts: Vec<u32> = if profile_clients.len() > 1 {
        profile_clients.to_vec()
    } else {
        std::iter::successors(Some(1u32), |c| c.checked_mul(2))
            .take_while(|&c| c <= cpus.max(1))
            .collect()
    };
    counts.push(main.max(1));
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// Measures `parent` and `culprit` by `plan`; `fits(seconds)` says
/// whether a run of about that many seconds still fits the time budget
/// (the runs stop, with a note, when it does not).
pub fn measure(
    lab: &mut dyn Lab,
    parent: &Commit,
    culprit: &Commit,
    plan: &WhyPlan,
    fits: &mut dyn FnMut(f64) -> bool,
    progress: &mut dyn Progress,
) -> anyhow::Result<Why> {
    let started = Instant::now();
    let mut runs = WhyRuns::default();
    for commit in [parent, culprit] {
        if let Prepared::Unbuildable { reason, .. } = lab.prepare(commit)? {
            runs.failures
                .push(format!("{} cannot be built: {reason}", commit.short()));
            return Ok(runs.summarize(&culprit.id, &parent.id, plan.main_clients, 0.0));
        }
    }
    let mut n = 0u64;
    let mut per_run: Option<f64> = None;
    'sweep: for &clients in &plan.clients {
        for _ in 0..plan.runs {
            for (side, commit) in [(0, parent), (1, culprit)] {
                if !fits(per_run.unwrap_or(0.0)) {
                    runs.failures
                        .push(format!("the time budget ended the why-runs after {n} runs"));
                    break 'sweep;
                }
                // The profile's run length: the why-runs are not priced
                // against a decision, so the hunt's chosen length does
                // not apply.
                let spec = RunSpec {
                    clients,
                    run: plan.first_run + n,
                    seconds: None,
                };
                n += 1;
                let one = Instant::now();
                let outcome = lab.instrumented_run(commit, spec)?;
                let took = one.elapsed().as_secs_f64();
                per_run = Some(per_run.map_or(took, |p| p.max(took)));
                match outcome {
                    Instrumented::Measured(run) => {
                        progress.event(&ProgressEvent::Run {
                            run: spec.run,
                            commit: commit.short().to_string(),
                            tps: Some(run.tps),
                            instructions: None,
                        });
                        if side == 0 {
                            runs.before.push(run);
                        } else {
                            runs.after.push(run);
                        }
                    }
                    Instrumented::Failed(reason) => runs.failures.push(format!(
                        "a run of {} at {clients} clients failed: {reason}",
                        commit.short()
                    )),
                    Instrumented::Unsupported(reason) => {
                        runs.failures.push(reason);
                        break 'sweep;
                    }
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(runs.summarize(&culprit.id, &parent.id, plan.main_clients, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::why::{InstrumentedRun, WaitEvents, WaitFinding};
    use crate::model::{LabTotals, RunOutcome};
    use crate::progress::Silent;

    /// A lab whose culprit runs 10% slower and waits more on a lock;
    /// `unsupported` makes it a lab without instruments.
    struct Fake {
        calls: Vec<(String, u32, u64)>,
        unsupported: bool,
    }

    impl Lab for Fake {
        fn prepare(&mut self, _: &Commit) -> anyhow::Result<Prepared> {
            Ok(Prepared::Ready { cached: true })
        }
        fn run(&mut self, _: &Commit, _: RunSpec) -> anyhow::Result<RunOutcome> {
            panic!("why-runs are never plain runs")
        }
        fn instrumented_run(
            &mut self,
            commit: &Commit,
            spec: RunSpec,
        ) -> anyhow::Result<Instrumented> {
            self.calls.push((commit.id.clone(), spec.clients, spec.run));
            if self.unsupported {
                return Ok(Instrumented::Unsupported("no instruments".into()));
            }
            let slow = commit.id == "culprit";
            let lock = if slow { 30 } else { 10 };
            Ok(Instrumented::Measured(InstrumentedRun {
                clients: spec.clients,
                tps: if slow { 900.0 } else { 1000.0 } * f64::from(spec.clients)
                    + spec.run as f64 % 3.0,
                statements: vec![],
                latency: None,
                waits: WaitEvents::Sampled(
                    [
                        ("CPU".to_string(), 100 - lock),
                        ("Lock:tuple".to_string(), lock),
                    ]
                    .into(),
                ),
                output: None,
                profile: None,
            }))
        }
        fn totals(&self) -> LabTotals {
            LabTotals::default()
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    fn plan() -> WhyPlan {
        WhyPlan {
            clients: vec![1, 2],
            runs: 2,
            main_clients: 1,
            first_run: 100,
        }
    }

    #[test]
    fn sweeps_double_up_to_the_cpus_or_follow_the_profile() {
        assert_eq!(sweep(&[], 2, 1), vec![1, 2]);
        assert_eq!(sweep(&[1], 8, 1), vec![1, 2, 4, 8]);
        assert_eq!(sweep(&[], 6, 16), vec![1, 2, 4, 16]);
        assert_eq!(sweep(&[64, 1, 4], 2, 4), vec![1, 4, 64]);
    }

    #[test]
    fn sides_alternate_at_each_client_count() {
        let mut lab = Fake {
            calls: vec![],
            unsupported: false,
        };
        let (p, c) = (Commit::bare("parent"), Commit::bare("culprit"));
        let why = measure(&mut lab, &p, &c, &plan(), &mut |_| true, &mut Silent).unwrap();
        let order: Vec<(&str, u32)> = lab.calls.iter().map(|(c, n, _)| (c.as_str(), *n)).collect();
        assert_eq!(
            order,
            [
                ("parent", 1),
                ("culprit", 1),
                ("parent", 1),
                ("culprit", 1),
                ("parent", 2),
                ("culprit", 2),
                ("parent", 2),
                ("culprit", 2)
            ]
        );
        assert_eq!(lab.calls.first().map(|c| c.2), Some(100));
        assert_eq!(why.points.len(), 2);
        assert!(
            why.points
                .iter()
                .all(|p| (p.tps_change_pct + 10.0).abs() < 0.5)
        );
        match &why.waits {
            WaitFinding::Sampled { shares, .. } => {
                assert!(
                    shares
                        .iter()
                        .any(|s| s.event == "Lock:tuple" && s.after_pct == 30.0)
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(why.runs, 8);
    }

    #[test]
    fn a_lab_without_instruments_and_the_budget_stop_the_runs_with_a_note() {
        let mut lab = Fake {
            calls: vec![],
            unsupported: true,
        };
        let (p, c) = (Commit::bare("parent"), Commit::bare("culprit"));
        let why = measure(&mut lab, &p, &c, &plan(), &mut |_| true, &mut Silent).unwrap();
        assert_eq!(lab.calls.len(), 1);
        assert!(why.points.is_empty());
        assert_eq!(why.notes, vec!["no instruments".to_string()]);

        let mut lab = Fake {
            calls: vec![],
            unsupported: false,
        };
        let mut left = 3;
        let mut fits = |_: f64| {
            left -= 1;
            left >= 0
        };
        let why = measure(&mut lab, &p, &c, &plan(), &mut fits, &mut Silent).unwrap();
        assert_eq!(lab.calls.len(), 3);
        assert!(why.notes[0].contains("time budget"), "{:?}", why.notes);
    }
}
