//! Measuring: a commit prepared once, then measured in rounds.
//!
//! A round is one run on every host the lab measures on, made at once
//! ([`crate::lab::Lab::run_round`]); on this machine alone it is one run.
//! Every run of a round is its own run: its own number, its host, its
//! journal line, its place in the evidence. So with N hosts each decision
//! gathers its runs N times faster, and because the hunt alternates the
//! commits it compares, each host measures both sides in turn. A host
//! whose run failed has made a failed run, journaled and noted; it counts
//! against the commit (which is skipped after a few) only when no host
//! of its round measured it, as a commit that cannot run fails on all.

use super::{Hunt, HuntError, Measured};
use crate::core::counts::Measure;
use crate::journal::Event;
use crate::lab::{HostRun, Planned, RunSpec};
use crate::model::{Commit, Measurement, Prepared, RunOutcome};
use crate::progress::ProgressEvent;
use crate::report::findings::RunSample;
use std::time::Instant;

/// What a round made of one position: its result, and its usable runs.
type RoundResult = (Measured, Vec<RunSample>);

impl Hunt<'_> {
    /// Prepares (once) and measures `pos` for one round at the hunt's run
    /// length, journaling both; the runs are evidence.
    pub(super) fn measure(&mut self, pos: usize) -> anyhow::Result<Measured> {
        Ok(self.measure_at(pos, self.run_seconds, true)?.0)
    }

    /// Prepares (once) and measures `pos` for one round of `seconds`
    /// (`None`: the profile's length), journaling both; the runs are
    /// evidence when `evidence` is set. Returns the usable runs it made.
    pub(super) fn measure_at(
        &mut self,
        pos: usize,
        seconds: Option<u32>,
        evidence: bool,
    ) -> anyhow::Result<(Measured, Vec<RunSample>)> {
        if self.interrupted() {
            return Err(HuntError::Interrupted.into());
        }
        if let Some(unmeasurable) = self.prepare(pos)? {
            return Ok((unmeasurable, Vec::new()));
        }
        let every_host = vec![pos; self.failing_hosts.len()];
        let mut made = self.round(&every_host, seconds, evidence)?;
        Ok(made.remove(0).1)
    }

    /// Prepares (once) each of `positions` and measures those that can be
    /// in one round shared among them: the hosts take them in turn (a
    /// position given twice gets two hosts), those whose last run failed
    /// only repeating one a working host measures. The runs are
    /// evidence. A position none of whose runs gave a result is measured
    /// again on every host before it is held against the commit, as its
    /// host may be the trouble. Returns what became of each distinct
    /// position.
    pub(super) fn measure_shared(
        &mut self,
        positions: &[usize],
    ) -> anyhow::Result<Vec<(usize, Measured)>> {
        if self.interrupted() {
            return Err(HuntError::Interrupted.into());
        }
        let mut ended = Vec::new();
        for pos in distinct(positions) {
            if let Some(unmeasurable) = self.prepare(pos)? {
                ended.push((pos, unmeasurable));
            }
        }
        let ready: Vec<usize> = positions
            .iter()
            .copied()
            .filter(|p| !ended.iter().any(|(q, _)| q == p))
            .collect();
        if !ready.is_empty() {
            let assign = shared_round(&ready, &self.failing_hosts);
            for (pos, (measured, _)) in self.round(&assign, self.run_seconds, true)? {
                let measured = match measured {
                    Measured::Failed => self.measure(pos)?,
                    other => other,
                };
                ended.push((pos, measured));
            }
        }
        Ok(ended)
    }

    /// One round of prepared positions, host `i` measuring `assign[i]`;
    /// each run journaled and, when `evidence` is set, kept as evidence.
    /// Returns each distinct position with its result and usable runs. A
    /// position without a usable run counts against its commit only when
    /// every host measured it: a commit that cannot run fails on all.
    fn round(
        &mut self,
        assign: &[usize],
        seconds: Option<u32>,
        evidence: bool,
    ) -> anyhow::Result<Vec<(usize, RoundResult)>> {
        self.check_budget(self.costs.per_round())?;
        let spec = RunSpec {
            clients: self.cfg.clients,
            run: self.seq + 1,
            seconds,
        };
        let commits: Vec<Commit> = assign.iter().map(|&p| self.commits[p].clone()).collect();
        let planned: Vec<Planned> = (0..assign.len())
            .map(|host| Planned {
                commit: &commits[host],
                host,
                run: spec.run + host as u64,
            })
            .collect();
        let started = Instant::now();
        let round = match self.lab.run_on(spec, &planned) {
            Err(_) if self.interrupted() => return Err(HuntError::Interrupted.into()),
            other => other?,
        };
        anyhow::ensure!(
            round.len() == planned.len(),
            "the lab made {} runs of the {} asked for",
            round.len(),
            planned.len()
        );
        self.costs.rounds += 1;
        self.costs.round_seconds += started.elapsed().as_secs_f64();
        let stopping = self.interrupted();
        let positions = distinct(assign);
        let mut samples: Vec<Vec<RunSample>> = vec![Vec::new(); positions.len()];
        for (host, (run, host_run)) in (spec.run..).zip(round).enumerate() {
            self.seq = run;
            if stopping && !matches!(host_run.outcome, RunOutcome::Measured(_)) {
                // A run that failed while pgbisect was stopping may have
                // been cut short: not a result. One that gave a number
                // finished, and is journaled and kept rather than
                // measured again.
                continue;
            }
            let pos = assign[host];
            let sample = self.take_run(pos, run, seconds, host_run, evidence)?;
            if let Some(failing) = self.failing_hosts.get_mut(host) {
                *failing = sample.is_none();
            }
            let at = positions.iter().position(|p| *p == pos).unwrap_or(0);
            samples[at].extend(sample);
        }
        if stopping || self.interrupted() {
            return Err(HuntError::Interrupted.into());
        }
        let alone = positions.len() == 1;
        Ok(positions
            .into_iter()
            .zip(samples)
            .map(|(pos, samples)| {
                let measured = if !samples.is_empty() {
                    Measured::Ok
                } else {
                    if alone {
                        self.state[pos].failures += 1;
                    }
                    Measured::Failed
                };
                (pos, (measured, samples))
            })
            .collect())
    }

    /// Prepares `pos` when it has not been; `Some` when it cannot be
    /// measured (it does not build, or its runs failed too often).
    fn prepare(&mut self, pos: usize) -> anyhow::Result<Option<Measured>> {
        let commit = self.commits[pos].clone();
        if self.state[pos].prepared.is_none() {
            self.check_budget(self.costs.per_build() + self.costs.per_round())?;
            self.progress.event(&ProgressEvent::Preparing {
                commit: commit.short().to_string(),
            });
            let started = Instant::now();
            let prepared = match self.lab.prepare(&commit) {
                Err(_) if self.interrupted() => return Err(HuntError::Interrupted.into()),
                other => other?,
            };
            if self.interrupted() && !matches!(prepared, Prepared::Ready { .. }) {
                // A build cut short by the interrupt is not a result; one
                // that finished is journaled below and kept.
                return Err(HuntError::Interrupted.into());
            }
            if !matches!(prepared, Prepared::Ready { cached: true }) {
                self.costs.builds += 1;
                self.costs.build_seconds += started.elapsed().as_secs_f64();
            }
            self.journal_new(&Event::Prepared {
                commit: commit.id.clone(),
                prepared: prepared.clone(),
            })?;
            self.state[pos].prepared = Some(prepared);
            if self.interrupted() {
                return Err(HuntError::Interrupted.into());
            }
            self.build_ahead_of(pos);
        }
        if let Some(Prepared::Unbuildable { reason, .. }) = &self.state[pos].prepared {
            return Ok(Some(Measured::Unmeasurable(reason.clone())));
        }
        if self.state[pos].failures >= self.cfg.max_run_failures {
            let reason = self.state[pos].last_failure.clone().unwrap_or_default();
            return Ok(Some(Measured::Unmeasurable(reason)));
        }
        Ok(None)
    }

    /// On counts, which do not move with a busy CPU, has the lab build
    /// the commit wanted after `pos` (just prepared) while `pos` is
    /// counted: the bad end after the good one, then the search's first
    /// commit while the ends are counted (known before their runs are:
    /// the search starts in the middle). A hunt on tps builds nothing
    /// beside its runs.
    fn build_ahead_of(&mut self, pos: usize) {
        let ready = matches!(self.state[pos].prepared, Some(Prepared::Ready { .. }));
        if !self.cfg.decision.exact || !ready {
            return;
        }
        let bad = self.bad();
        let next = match pos {
            0 => Some(bad),
            p if p == bad => self.first_candidate(super::Range { lo: 0, hi: bad }),
            _ => None,
        };
        if let Some(next) = next.filter(|&n| self.state[n].prepared.is_none()) {
            let commit = self.commits[next].clone();
            if self.lab.prepare_ahead(&commit) {
                let text = crate::lab::preparing_ahead(&commit);
                self.progress.event(&ProgressEvent::Note(text));
            }
        }
    }

    /// Journals one run of a round and counts it: evidence when usable
    /// (and `evidence` is set), a failure of `pos` when not.
    fn take_run(
        &mut self,
        pos: usize,
        run: u64,
        seconds: Option<u32>,
        HostRun { host, outcome }: HostRun,
        evidence: bool,
    ) -> anyhow::Result<Option<RunSample>> {
        let commit = self.commits[pos].clone();
        self.journal_new(&Event::Run {
            run,
            commit: commit.id.clone(),
            clients: self.cfg.clients,
            seconds,
            outcome: outcome.clone(),
            host: host.clone(),
        })?;
        let measure = self.cfg.measure;
        let sample = match outcome {
            RunOutcome::Measured(m) => match m.figure(measure) {
                Some(figure) => Some(RunSample {
                    run,
                    tps: figure,
                    host: host.clone(),
                }),
                None => {
                    self.run_failed(pos, &host, unusable(&m, measure));
                    None
                }
            },
            RunOutcome::Failed { reason } => {
                self.run_failed(pos, &host, reason);
                None
            }
        };
        if let (Some(s), true) = (&sample, evidence) {
            self.evidence.record(pos, s.clone());
        }
        let shown = sample.as_ref().map(|s| s.tps);
        let (tps, instructions) = match measure {
            Measure::Tps => (shown, None),
            Measure::Instructions => (None, shown.map(|figure| 1e9 / figure)),
        };
        self.progress.event(&ProgressEvent::Run {
            run,
            commit: commit.short().to_string(),
            tps,
            instructions,
        });
        Ok(sample)
    }

    /// Notes a run of `pos` that gave no usable result; the round counts
    /// it against `pos` when no run of the round gave one.
    fn run_failed(&mut self, pos: usize, host: &Option<String>, reason: String) {
        let short = self.commits[pos].short().to_string();
        let on = host
            .as_ref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        self.note(format!("run {} of {short}{on} failed: {reason}", self.seq));
        self.state[pos].last_failure = Some(reason);
    }
}

/// Why a run that completed gave nothing to decide on by `measure`.
fn unusable(m: &Measurement, measure: Measure) -> String {
    match (measure, &m.instructions) {
        (Measure::Tps, _) => format!("it measured {} tps", m.tps),
        (Measure::Instructions, None) => "it gave no count of instructions".to_string(),
        (Measure::Instructions, Some(c)) => format!(
            "it counted {} instructions a transaction",
            c.per_transaction
        ),
    }
}

/// `positions` without repeats, in the order of their first appearance.
fn distinct(positions: &[usize]) -> Vec<usize> {
    let mut seen = Vec::with_capacity(positions.len());
    for &p in positions {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen
}

/// Which position each host measures in a round shared among `positions`
/// (repeats allowed), given which hosts failed their last run: the working
/// hosts take the positions in turn, as many as they can cover; the
/// failing ones repeat positions a working host measures, so that no
/// commit rests on a host in trouble. With no working host, all take
/// their turns.
pub(super) fn shared_round(positions: &[usize], failing: &[bool]) -> Vec<usize> {
    let working = failing.iter().filter(|f| !**f).count();
    if working == 0 {
        return (0..failing.len())
            .map(|i| positions[i % positions.len()])
            .collect();
    }
    let covered: Vec<usize> = if working < positions.len() {
        distinct(positions).into_iter().take(working).collect()
    } else {
        positions.to_vec()
    };
    let (mut next_working, mut next_failing) = (0, 0);
    failing
        .iter()
        .map(|&f| {
            let turn = if f {
                &mut next_failing
            } else {
                &mut next_working
            };
            let pos = covered[*turn % covered.len()];
            *turn += 1;
            pos
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_hosts_take_the_candidates_in_turn_and_failing_ones_repeat() {
        assert_eq!(shared_round(&[3, 7], &[false; 4]), [3, 7, 3, 7]);
        assert_eq!(shared_round(&[3, 7, 9], &[false, true, false]), [3, 3, 7]);
        assert_eq!(
            shared_round(&[3, 3, 7, 9], &[false, false, true, true]),
            [3, 7, 3, 7]
        );
        assert_eq!(shared_round(&[3, 7], &[true, true]), [3, 7]);
        assert_eq!(shared_round(&[5], &[false, true, false]), [5, 5, 5]);
    }
}
