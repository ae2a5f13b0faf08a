//! `--measure auto`: the endpoints measured both ways before the search,
//! so that the hunt decides on the measure that sees its slowdown
//! ([`crate::core::choose_measure::pick`] says which, and why).
//!
//! Each round makes one timed run and one counted run of each endpoint
//! that its measure still needs (a measure whose comparison is settled
//! makes no more), until [`pick`] answers or the decision's cap on runs
//! is reached. Each measure's runs are compared as the hunt's endpoint
//! check will compare them when it takes them as its first
//! ([`endpoint_check`]: the same decision knobs, at the same level), so
//! the hunt never finds unclear what the choice found clear. The runs of each measure are journaled in a file of their
//! own, so a resumed hunt replays them and picks the same measure without
//! measuring again; a run that fails, or an endpoint that does not build,
//! leaves the choice to tps, and the hunt says what it could not measure.

use crate::core::choose_measure::{Picked, pick};
use crate::core::counts::Measure;
use crate::core::decide::{self, Comparison};
use crate::core::hunt_config::HuntConfig;
use crate::engine::hunt::{HuntError, endpoint_check};
use crate::engine::journaled_run::{self, Made};
use crate::journal::{Event, Journal};
use crate::lab::reuse::Pool;
use crate::lab::{Lab, RunSpec};
use crate::model::{Commit, Prepared, RunOutcome};
use crate::progress::{Progress, ProgressEvent};
use crate::report::findings::MeasureChosen;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The measure chosen, for the report.
pub type Chosen = MeasureChosen;

/// How the choice is made.
pub struct Setup<'a> {
    /// The hunt's settings, whatever its measure: the endpoints are
    /// compared as its endpoint check compares them.
    pub hunt: HuntConfig,
    pub progress: &'a mut dyn Progress,
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// One measure's runs of the two endpoints: those journaled before, the
/// journal new ones go to, and the figures so far (good, bad).
struct Sampled {
    measure: Measure,
    past: HashMap<u64, RunOutcome>,
    journal: Journal,
    run: u64,
    figures: [Vec<f64>; 2],
}

impl Sampled {
    fn open(measure: Measure, path: &Path) -> anyhow::Result<Sampled> {
        let past = Journal::load(path)?
            .into_iter()
            .filter_map(|event| match event {
                Event::Run { run, outcome, .. } => Some((run, outcome)),
                _ => None,
            })
            .collect();
        Ok(Sampled {
            measure,
            past,
            journal: Journal::open(path)?,
            run: 0,
            figures: [Vec::new(), Vec::new()],
        })
    }

    /// The endpoints compared as a hunt of `hunt` on this measure
    /// compares them at its first check.
    fn compare(&self, hunt: &HuntConfig) -> Comparison {
        let on_this = HuntConfig {
            measure: self.measure,
            ..*hunt
        };
        endpoint_check(&on_this, (&self.figures[0], &self.figures[1]))
    }
}

/// Measures `good` and `bad` on tps and on counts with `lab` (its runs
/// timed, its counted runs counted), journaling each measure's runs at
/// `journals` (tps, counts), until the measure to hunt on is chosen.
pub fn choose(
    lab: &mut dyn Lab,
    journals: (&Path, &Path),
    (good, bad): (&Commit, &Commit),
    setup: Setup<'_>,
) -> anyhow::Result<Chosen> {
    let Setup {
        hunt,
        progress,
        interrupt,
    } = setup;
    let (decision, clients) = (hunt.decision, hunt.clients);
    progress.event(&ProgressEvent::Phase(format!(
        "choosing the measure: {} and {} on tps and on instruction counts, interleaved",
        good.short(),
        bad.short()
    )));
    let mut tps = Sampled::open(Measure::Tps, journals.0)?;
    let mut counts = Sampled::open(Measure::Instructions, journals.1)?;
    for commit in [good, bad] {
        progress.event(&ProgressEvent::Preparing {
            commit: commit.short().to_string(),
        });
        if let Prepared::Unbuildable { reason, .. } = lab.prepare(commit)? {
            let why = format!(
                "{} cannot be built ({reason}): the hunt runs on tps",
                commit.short()
            );
            return Ok(unmeasured(why, &tps, &counts, &hunt));
        }
    }
    let stopping = || interrupt.as_ref().is_some_and(|f| f.load(Ordering::SeqCst));
    for round in 1..=decision.max_runs {
        for counted in [false, true] {
            let sampled = if counted { &mut counts } else { &mut tps };
            if round > decision.min_runs
                && sampled.compare(&hunt).verdict != decide::Verdict::Unclear
            {
                continue;
            }
            let failed = one_round(lab, sampled, (good, bad), clients, progress, &stopping)?;
            if let Some(why) = failed {
                return Ok(unmeasured(why, &tps, &counts, &hunt));
            }
        }
        let (t, c) = (tps.compare(&hunt), counts.compare(&hunt));
        let at_cap = round == decision.max_runs;
        // Counts settle on two runs a side; whether they explain the drop
        // of tps is read from tps's own fewest runs, not from fewer.
        let early = !at_cap && round < decision.min_runs && t.verdict == decide::Verdict::Unclear;
        if !early && let Some(picked) = pick(&t, &c, decision.threshold, at_cap) {
            progress.event(&ProgressEvent::Note(format!(
                "measure: {} ({})",
                picked.measure, picked.why
            )));
            return Ok(chosen(picked, Some(t), Some(c)));
        }
    }
    let why = "no runs were made (the cap on runs is 0): the hunt runs on tps".to_string();
    Ok(unmeasured(why, &tps, &counts, &hunt))
}

/// A run of each endpoint on `sampled`'s measure: why the choice goes to
/// tps when one failed, else `None`.
fn one_round(
    lab: &mut dyn Lab,
    sampled: &mut Sampled,
    (good, bad): (&Commit, &Commit),
    clients: u32,
    progress: &mut dyn Progress,
    stopping: &dyn Fn() -> bool,
) -> anyhow::Result<Option<String>> {
    for (side, commit) in [good, bad].into_iter().enumerate() {
        if stopping() {
            return Err(HuntError::Interrupted.into());
        }
        match one_run(lab, sampled, (commit, clients), progress, stopping)? {
            Ok(figure) => sampled.figures[side].push(figure),
            Err(reason) => {
                return Ok(Some(format!(
                    "a {} run of {} failed ({reason}): the hunt runs on tps",
                    sampled.measure,
                    commit.short()
                )));
            }
        }
    }
    Ok(None)
}

/// The next run of `sampled`'s measure of `commit`: from its journal when
/// it holds it, else made and journaled. Its figure, or why it has none.
fn one_run(
    lab: &mut dyn Lab,
    sampled: &mut Sampled,
    (commit, clients): (&Commit, u32),
    progress: &mut dyn Progress,
    stopping: &dyn Fn() -> bool,
) -> anyhow::Result<Result<f64, String>> {
    sampled.run += 1;
    let run = sampled.run;
    let outcome = match sampled.past.get(&run) {
        Some(outcome) => outcome.clone(),
        None => {
            let spec = RunSpec {
                clients,
                run,
                seconds: None,
            };
            let made = match sampled.measure {
                Measure::Tps => Made::Timed,
                Measure::Instructions => Made::Counted,
            };
            journaled_run::make(
                lab,
                (commit, spec, made),
                Some(&mut sampled.journal),
                stopping,
            )?
        }
    };
    let figure = match &outcome {
        RunOutcome::Measured(m) => m
            .figure(sampled.measure)
            .ok_or_else(|| match sampled.measure {
                Measure::Tps => format!("it measured {} tps", m.tps),
                Measure::Instructions => "it gave no count of instructions".to_string(),
            }),
        RunOutcome::Failed { reason } => Err(reason.clone()),
    };
    let shown = figure.as_ref().ok().copied();
    progress.event(&ProgressEvent::Run {
        run,
        commit: commit.short().to_string(),
        tps: shown.filter(|_| sampled.measure.is_tps()),
        instructions: shown.filter(|_| !sampled.measure.is_tps()).map(|f| 1e9 / f),
    });
    Ok(figure)
}

fn chosen(picked: Picked, tps: Option<Comparison>, counts: Option<Comparison>) -> Chosen {
    Chosen {
        measure: picked.measure,
        why: picked.why,
        tps,
        counts,
        reused: 0,
    }
}

/// The runs of the endpoints that choosing `chosen` made on the measure
/// it chose, from their journal among `journals` (tps, counts): the
/// hunt's first runs of them ([`crate::lab::reuse`]).
pub fn reusable(
    chosen: &Chosen,
    journals: (&Path, &Path),
    (good, bad): (&Commit, &Commit),
) -> anyhow::Result<Pool> {
    let journal = match chosen.measure {
        Measure::Tps => journals.0,
        Measure::Instructions => journals.1,
    };
    Ok(Pool::from_events(&Journal::load(journal)?, &[good, bad]))
}

/// Tps, chosen because the endpoints could not be measured both ways.
fn unmeasured(why: String, tps: &Sampled, counts: &Sampled, hunt: &HuntConfig) -> Chosen {
    let usable = |s: &Sampled| (s.figures.iter().all(|f| !f.is_empty())).then(|| s.compare(hunt));
    chosen(
        Picked {
            measure: Measure::Tps,
            why,
        },
        usable(tps),
        usable(counts),
    )
}

#[cfg(test)]
mod tests;
