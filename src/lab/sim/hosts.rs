//! Several simulated hosts measuring one history at once.
//!
//! Identical machines are not identical: each runs a few percent faster
//! or slower than the others and has noise of its own. [`HostsLab`]
//! models that with one [`SimLab`] a host (its own random draws and noise
//! level) and a speed factor a host, and makes a round of runs, one on
//! every host, as a lab of real hosts does ([`Lab::run_round`]). It counts
//! rounds, so that `simulate --hosts N` can say what the hunt would take
//! when the runs of a round are made in parallel.

use super::{History, NoiseModel, SimLab};
use crate::lab::{HostRun, Lab, Planned, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};

/// One simulated host: its speed against the history's levels and its
/// noise against the scenario's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostModel {
    pub speed: f64,
    pub noise_scale: f64,
}

impl HostModel {
    /// `n` hosts whose speeds are spread evenly over `1 ± offset` and
    /// whose noise over `1 ± noise` times the scenario's.
    pub fn spread(n: usize, offset: f64, noise: f64) -> Vec<HostModel> {
        let at = |i: usize| {
            if n <= 1 {
                0.0
            } else {
                2.0 * i as f64 / (n - 1) as f64 - 1.0
            }
        };
        (0..n)
            .map(|i| HostModel {
                speed: 1.0 + offset * at(i),
                noise_scale: 1.0 + noise * at(n - 1 - i),
            })
            .collect()
    }
}

impl NoiseModel {
    /// The same noise with its spread times `factor`.
    pub fn scaled(&self, factor: f64) -> NoiseModel {
        let mut m = self.clone();
        match &mut m {
            NoiseModel::Gaussian { cv }
            | NoiseModel::Outliers { cv, .. }
            | NoiseModel::Bimodal { cv, .. }
            | NoiseModel::HeavyTail { cv, .. }
            | NoiseModel::Drift { cv, .. } => *cv *= factor,
            NoiseModel::Empirical {
                residuals,
                bandwidth,
                ..
            } => {
                residuals.iter_mut().for_each(|r| *r *= factor);
                *bandwidth *= factor;
            }
        }
        m
    }
}

/// A lab of several simulated hosts.
pub struct HostsLab {
    labs: Vec<SimLab>,
    speeds: Vec<f64>,
    names: Vec<String>,
    totals: LabTotals,
    /// Rounds made so far (a run on some hosts only counts as one).
    pub rounds: u64,
    /// `(host, k)`: that host's every k-th run fails.
    pub failing: Option<(usize, u64)>,
    made: Vec<u64>,
}

impl HostsLab {
    pub fn new(history: &History, noise: &NoiseModel, hosts: &[HostModel], seed: u64) -> Self {
        let labs = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let seed = seed.wrapping_mul(31).wrapping_add(i as u64);
                SimLab::new(history.clone(), noise.scaled(h.noise_scale), seed)
            })
            .collect();
        HostsLab {
            labs,
            speeds: hosts.iter().map(|h| h.speed).collect(),
            names: (1..=hosts.len()).map(|i| format!("host-{i}")).collect(),
            totals: LabTotals::default(),
            rounds: 0,
            failing: None,
            made: vec![0; hosts.len()],
        }
    }

    /// Runs made on each host, in [`Lab::hosts`] order.
    pub fn made(&self) -> &[u64] {
        &self.made
    }

    fn run_on_host(&mut self, i: usize, commit: &Commit, spec: RunSpec) -> anyhow::Result<HostRun> {
        self.made[i] += 1;
        self.totals.runs += 1;
        let host = Some(self.names[i].clone());
        if self
            .failing
            .is_some_and(|(h, k)| h == i && self.made[i].is_multiple_of(k))
        {
            let reason = "the host did not answer".to_string();
            let outcome = RunOutcome::Failed { reason };
            return Ok(HostRun { host, outcome });
        }
        let outcome = match self.labs[i].run(commit, spec)? {
            RunOutcome::Measured(m) => RunOutcome::tps_only(m.tps * self.speeds[i]),
            failed => failed,
        };
        Ok(HostRun { host, outcome })
    }
}

impl Lab for HostsLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let prepared = self.labs[0].prepare(commit)?;
        if matches!(prepared, Prepared::Ready { .. }) {
            self.totals.builds += 1;
        }
        Ok(prepared)
    }

    /// A single run is made on the first host.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        Ok(self.run_on_host(0, commit, spec)?.outcome)
    }

    fn hosts(&self) -> Vec<String> {
        self.names.clone()
    }

    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        self.rounds += 1;
        runs.iter()
            .map(|p| self.run_on_host(p.host, p.commit, RunSpec { run: p.run, ..spec }))
            .collect()
    }

    fn totals(&self) -> LabTotals {
        self.totals
    }

    fn describe(&self) -> String {
        format!(
            "simulated history of {} commits on {} hosts",
            self.labs.first().map_or(0, |l| l.history.len),
            self.labs.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_spread_around_the_scenario() {
        let h = HostModel::spread(3, 0.03, 0.2);
        assert_eq!(h.len(), 3);
        assert!((h[0].speed - 0.97).abs() < 1e-12 && (h[2].speed - 1.03).abs() < 1e-12);
        assert!((h[1].speed - 1.0).abs() < 1e-12);
        assert!((h[0].noise_scale - 1.2).abs() < 1e-12);
        assert_eq!(
            HostModel::spread(1, 0.03, 0.2),
            [HostModel {
                speed: 1.0,
                noise_scale: 1.0
            }]
        );
        let noise = NoiseModel::Gaussian { cv: 0.02 }.scaled(1.5);
        assert_eq!(noise, NoiseModel::Gaussian { cv: 0.03 });
    }

    #[test]
    fn a_round_is_a_run_on_every_host_at_its_speed() {
        let history = History {
            len: 4,
            steps: vec![],
            unbuildable: Default::default(),
            base_tps: 1000.0,
        };
        let hosts = [0.8, 1.25].map(|speed| HostModel {
            speed,
            noise_scale: 0.0,
        });
        let mut lab = HostsLab::new(&history, &NoiseModel::Gaussian { cv: 0.02 }, &hosts, 1);
        let commit = &history.commits()[1];
        let spec = RunSpec {
            clients: 1,
            run: 1,
            seconds: None,
        };
        let round = lab.run_round(commit, spec).unwrap();
        let tps: Vec<f64> = round
            .iter()
            .map(|r| match &r.outcome {
                RunOutcome::Measured(m) => m.tps,
                RunOutcome::Failed { .. } => 0.0,
            })
            .collect();
        assert_eq!(tps, [800.0, 1250.0]);
        assert_eq!(round[1].host.as_deref(), Some("host-2"));
        let some = lab
            .run_on(
                spec,
                &[Planned {
                    commit,
                    host: 1,
                    run: 2,
                }],
            )
            .unwrap();
        assert_eq!(some.len(), 1);
        assert_eq!((lab.rounds, lab.made()), (2, &[1, 2][..]));
    }
}
