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
use crate::journal::Event;
use crate::lab::{HostRun, RunSpec};
use crate::model::{Prepared, RunOutcome};
use crate::progress::ProgressEvent;
use crate::report::findings::RunSample;
use std::time::Instant;

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
        self.check_budget(self.costs.per_round())?;
        let commit = self.commits[pos].clone();
        let spec = RunSpec {
            clients: self.cfg.clients,
            run: self.seq + 1,
            seconds,
        };
        let started = Instant::now();
        let round = match self.lab.run_round(&commit, spec) {
            Err(_) if self.interrupted() => return Err(HuntError::Interrupted.into()),
            other => other?,
        };
        anyhow::ensure!(
            !round.is_empty(),
            "the lab made no run of {}",
            commit.short()
        );
        self.costs.rounds += 1;
        self.costs.round_seconds += started.elapsed().as_secs_f64();
        let stopping = self.interrupted();
        let mut samples = Vec::new();
        for (run, host_run) in (spec.run..).zip(round) {
            self.seq = run;
            if stopping && !matches!(host_run.outcome, RunOutcome::Measured(_)) {
                // A run that failed while pgbisect was stopping may have
                // been cut short: not a result. One that gave a number
                // finished, and is journaled and kept rather than
                // measured again.
                continue;
            }
            samples.extend(self.take_run(pos, run, seconds, host_run, evidence)?);
        }
        if stopping || self.interrupted() {
            return Err(HuntError::Interrupted.into());
        }
        // A commit that cannot run fails on every host; a round in which
        // some host measured it is the other hosts' trouble, noted with
        // each run, not the commit's.
        let result = if samples.is_empty() {
            self.state[pos].failures += 1;
            Measured::Failed
        } else {
            Measured::Ok
        };
        Ok((result, samples))
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
        let sample = match outcome {
            RunOutcome::Measured(m) if m.is_usable() => Some(RunSample {
                run,
                tps: m.tps,
                host: host.clone(),
            }),
            RunOutcome::Measured(m) => {
                self.run_failed(pos, &host, format!("it measured {} tps", m.tps));
                None
            }
            RunOutcome::Failed { reason } => {
                self.run_failed(pos, &host, reason);
                None
            }
        };
        if let (Some(s), true) = (&sample, evidence) {
            self.evidence.record(pos, s.clone());
        }
        self.progress.event(&ProgressEvent::Run {
            run,
            commit: commit.short().to_string(),
            tps: sample.as_ref().map(|s| s.tps),
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
