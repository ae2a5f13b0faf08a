//! Slow spells of the machine: stretches of runs during which whatever
//! runs runs slower (a backup, a neighbour's build, thermal throttling),
//! the commit under test and the reference alike.
//!
//! The noise models of [`super::NoiseModel`] draw every run on its own; a
//! spell is a state of the machine that lasts. [`SpellLab`] wraps any
//! lab and slows each measured run by the spell it falls in: a spell of a
//! whole night slows both sides of every pair the same and the
//! reference's ratio cancels it; a spell of a run or two that begins
//! mid-pair slows one side more than the other, which the ratio does not
//! cancel.

use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// When spells come, how long they last and how slow they make a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowSpells {
    /// Chance that a spell begins at a run, while none is on.
    pub chance: f64,
    /// Fewest and most runs a spell lasts.
    pub runs: (usize, usize),
    /// Least and most a spell slows a run (0.1: 10% fewer tps).
    pub slower: (f64, f64),
}

/// A lab whose machine has slow spells: runs of `inner`, slowed while a
/// spell is on.
pub struct SpellLab {
    inner: Box<dyn Lab>,
    spells: SlowSpells,
    rng: StdRng,
    /// Runs the current spell still lasts (0: none on).
    left: usize,
    /// How much the current spell slows a run.
    slower: f64,
    /// Runs made during a spell.
    slowed: usize,
}

impl SpellLab {
    pub fn new(inner: Box<dyn Lab>, spells: SlowSpells, seed: u64) -> SpellLab {
        SpellLab {
            inner,
            spells,
            rng: StdRng::seed_from_u64(seed),
            left: 0,
            slower: 0.0,
            slowed: 0,
        }
    }

    /// Runs made during a spell so far.
    pub fn slowed(&self) -> usize {
        self.slowed
    }

    /// How much the next run is slowed (0 outside a spell), the spell
    /// moved on by one run.
    fn next_factor(&mut self) -> f64 {
        let s = self.spells;
        if self.left == 0 && s.chance > 0.0 && self.rng.random_bool(s.chance.min(1.0)) {
            let (lo, hi) = (s.runs.0.max(1), s.runs.1.max(s.runs.0.max(1)));
            self.left = self.rng.random_range(lo..=hi);
            self.slower = if s.slower.1 > s.slower.0 {
                self.rng.random_range(s.slower.0..s.slower.1)
            } else {
                s.slower.0
            };
        }
        if self.left == 0 {
            return 0.0;
        }
        self.left -= 1;
        self.slowed += 1;
        self.slower
    }
}

impl Lab for SpellLab {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let slower = self.next_factor();
        Ok(match self.inner.run(commit, spec)? {
            RunOutcome::Measured(mut m) if slower > 0.0 => {
                let kept = (1.0 - slower).max(0.01);
                m.tps *= kept;
                m.latency_ms = m.latency_ms.map(|l| l / kept);
                RunOutcome::Measured(m)
            }
            other => other,
        })
    }

    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn describe(&self) -> String {
        format!("{}, with slow spells", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::sim::{History, NoiseModel, SimLab};
    use std::collections::BTreeSet;

    fn lab(spells: SlowSpells) -> SpellLab {
        let history = History {
            len: 1,
            steps: vec![],
            unbuildable: BTreeSet::new(),
            base_tps: 1000.0,
        };
        let quiet = SimLab::new(history, NoiseModel::Gaussian { cv: 0.0 }, 1);
        SpellLab::new(Box::new(quiet), spells, 7)
    }

    fn tps(lab: &mut SpellLab, n: usize) -> Vec<f64> {
        let commit = Commit::bare(crate::lab::sim::sim_id(0));
        (0..n)
            .map(|k| {
                let spec = RunSpec {
                    clients: 1,
                    run: k as u64,
                    seconds: None,
                };
                match lab.run(&commit, spec).unwrap() {
                    RunOutcome::Measured(m) => m.tps,
                    RunOutcome::Failed { reason } => panic!("{reason}"),
                }
            })
            .collect()
    }

    #[test]
    fn no_spell_leaves_every_run_alone() {
        let mut quiet = lab(SlowSpells {
            chance: 0.0,
            runs: (1, 3),
            slower: (0.1, 0.3),
        });
        assert!(tps(&mut quiet, 100).iter().all(|t| *t == 1000.0));
        assert_eq!(quiet.slowed(), 0);
    }

    #[test]
    fn spells_slow_stretches_of_runs_within_their_bounds() {
        let spells = SlowSpells {
            chance: 0.05,
            runs: (4, 6),
            slower: (0.1, 0.3),
        };
        let mut slow = lab(spells);
        let runs = tps(&mut slow, 2000);
        let slowed: Vec<bool> = runs.iter().map(|t| *t < 1000.0).collect();
        assert!(
            runs.iter()
                .all(|t| *t == 1000.0 || (*t >= 700.0 && *t <= 900.0)),
            "a run outside the spell's bounds"
        );
        assert_eq!(slowed.iter().filter(|s| **s).count(), slow.slowed());
        // Every stretch of slowed runs is made of whole spells of 4-6 runs
        // (two spells can follow each other at once).
        let mut stretch = 0;
        for s in slowed.iter().chain([&false]) {
            if *s {
                stretch += 1;
            } else {
                assert!(stretch == 0 || stretch >= 4, "a stretch of {stretch}");
                stretch = 0;
            }
        }
        // About chance x (mean length) / (1 + chance x mean length) of runs.
        let share = slow.slowed() as f64 / 2000.0;
        assert!(share > 0.12 && share < 0.30, "{share}");
    }

    #[test]
    fn one_spell_slows_a_run_by_one_factor() {
        let mut slow = lab(SlowSpells {
            chance: 1.0,
            runs: (3, 3),
            slower: (0.2, 0.2),
        });
        assert_eq!(tps(&mut slow, 3), vec![800.0; 3]);
    }
}
