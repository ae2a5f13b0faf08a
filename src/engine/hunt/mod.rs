//! The one driver loop of a hunt.
//!
//! It asks [`crate::core::bisect`] which commit to look at, asks [`crate::core::decide`]
//! whether the runs so far settle it, makes one more run through the
//! [`Lab`] when they do not, and journals every result at once. The order of
//! work is deterministic given the results, so a journal replays a hunt.
//!
//! The plan, in order:
//! 1. Good and bad endpoints, interleaved, until the drop is confirmed or
//!    ruled out (never blame a commit for a drop that does not reproduce).
//! 2. Bisection of the range: each candidate is judged against the good
//!    level measured close to it in time (reference runs are interleaved).
//! 3. Each culprit is measured side by side with its parent (and with the
//!    bad end, to see whether the whole drop is explained); a failed check
//!    sends the search back instead of reporting. A drop the search pins
//!    only to a few commits (unsure ones between) is narrowed pair by pair.
//! 4. What the culprit does not explain is hunted again, until every step
//!    of a multi-step drop is found (unless `first_only`).

use crate::core::bisect::Outcome;
use crate::core::decide::{self, Class, Comparison, DecisionConfig, Reference, Verdict};
pub use crate::core::hunt_config::HuntConfig;
pub use crate::core::posterior::Search;
use crate::core::stats;
use crate::journal::spent::{Spent, own_cpu_seconds};
use crate::journal::{Event, Journal};
use crate::lab::Lab;
use crate::model::{Commit, LabTotals, Prepared};
use crate::progress::{Progress, ProgressEvent, Timing};
use crate::report::findings::{
    Culprit, HuntOutcome, HuntReport, Judgement, TestedCommit, Totals, UnresolvedRange,
};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub mod budget;
mod check;
#[cfg(test)]
mod counts_tests;
mod evidence;
#[cfg(test)]
mod hosts_tests;
mod look;
pub mod posterior;
#[cfg(test)]
mod refusal_tests;
mod rounds;
mod run_length;
mod search;
mod tested;
#[cfg(test)]
mod tests;

use budget::{Budget, Costs};
use evidence::{Evidence, Spans};
pub use look::endpoint_check;
use search::{Refusals, Settled};

/// How many times a range's ends are measured side by side to settle a
/// doubt about its drop before a further doubt ends its search.
const MAX_DOUBTS: u32 = 2;

/// Errors that stop a hunt (environment trouble is `anyhow` from the lab).
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    #[error(
        "the {which} endpoint {commit} cannot be measured: {reason}\nhint: {}",
        endpoint_hint(which, reason)
    )]
    EndpointUnmeasurable {
        which: &'static str,
        commit: String,
        reason: String,
    },
    #[error(
        "interrupted; everything measured so far is in the journal: rerun the same command to resume"
    )]
    Interrupted,
    /// The next build or run would end after the time budget.
    #[error("the time budget ran out")]
    OutOfTime,
}

/// What to do about an endpoint that cannot be measured: fix a custom
/// benchmark command that prints no result (another commit would not
/// help), else pick another commit.
fn endpoint_hint(which: &str, reason: &str) -> String {
    if reason.contains(crate::lab::command::NO_RESULT) {
        "make the profile's [benchmark] command print a line `tps = N` for every run (try it \
         by hand in a checkout of the commit), then rerun"
            .to_string()
    } else {
        format!("pick a nearby commit that builds and runs as --{which}")
    }
}

#[derive(Debug, Default)]
struct CommitState {
    prepared: Option<Prepared>,
    failures: u32,
    last_failure: Option<String>,
    judgement: Option<Judgement>,
    /// The last sure judgement told (by a search or a check), so that a
    /// commit going unsure and back, or judged again the same way by the
    /// posterior after a check, is not told again.
    told: Option<Judgement>,
}

enum Measured {
    Ok,
    Failed,
    Unmeasurable(String),
}

/// A part of the history still to be searched: the first drop after `lo`
/// (the good-level reference) up to `hi` (known bad-like).
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: usize,
    hi: usize,
}

/// A running hunt. Build it with [`Hunt::new`], then call [`Hunt::run`].
pub struct Hunt<'a> {
    cfg: HuntConfig,
    lab: &'a mut dyn Lab,
    journal: Option<&'a mut Journal>,
    progress: &'a mut dyn Progress,
    interrupt: Option<Arc<AtomicBool>>,
    /// Position 0 is the good endpoint, the last position the bad one.
    commits: Vec<Commit>,
    state: Vec<CommitState>,
    /// Every run so far, by position.
    evidence: Evidence,
    seq: u64,
    culprits: Vec<Culprit>,
    unresolved: Vec<UnresolvedRange>,
    notes: Vec<String>,
    /// Set when the endpoints' drop vanished in later runs.
    endpoints_gone: Option<Comparison>,
    /// The share of the error rate a check may spend: below 1 while
    /// several checks test one drop (see [`Hunt::narrow`]).
    alpha_share: f64,
    started: std::time::Instant,
    /// What earlier processes of this hunt spent, and how many there were.
    earlier: (Spent, u64),
    /// When the hunt must end, if it must.
    budget: Option<Budget>,
    /// What builds and runs cost this process, to foresee the next ones.
    costs: Costs,
    /// The run length chosen from the noise; `None`: the profile's.
    run_seconds: Option<u32>,
    /// Hosts whose last run gave no result, in [`Lab::hosts`] order: a
    /// round shared among several commits gives them none of their own.
    failing_hosts: Vec<bool>,
    /// The runs (first, last) of each side-by-side check of a pair of
    /// positions, (good, bad): a pair checked again counts them all.
    checked: HashMap<(usize, usize), Vec<(u64, u64)>>,
}

impl<'a> Hunt<'a> {
    /// `commits[0]` is the good endpoint; the rest are the candidates,
    /// oldest first, with the bad endpoint last.
    pub fn new(
        cfg: HuntConfig,
        commits: Vec<Commit>,
        lab: &'a mut dyn Lab,
        progress: &'a mut dyn Progress,
    ) -> Self {
        let state = commits.iter().map(|_| CommitState::default()).collect();
        let hosts = lab.hosts().len();
        Hunt {
            // The runs' spread is the measure's own: counts repeat to
            // tenths of a percent, and a floor keeps runs that agree to a
            // millionth from reading as no noise at all.
            cfg: HuntConfig {
                decision: cfg.measure.decision(cfg.decision),
                ..cfg
            },
            lab,
            journal: None,
            progress,
            interrupt: None,
            evidence: Evidence::new(commits.len()).with_hosts(hosts),
            commits,
            state,
            seq: 0,
            culprits: Vec::new(),
            unresolved: Vec::new(),
            notes: Vec::new(),
            endpoints_gone: None,
            alpha_share: 1.0,
            started: std::time::Instant::now(),
            earlier: (Spent::default(), 0),
            budget: None,
            costs: Costs {
                hosts: u32::try_from(hosts).unwrap_or(u32::MAX),
                ..Costs::default()
            },
            run_seconds: None,
            failing_hosts: vec![false; hosts.max(1)],
            checked: HashMap::new(),
        }
    }

    /// Counts what earlier processes of a resumed hunt spent (see
    /// [`crate::journal::spent::spent_before`]) in the report's totals.
    pub fn with_earlier(mut self, spent: Spent, processes: u64) -> Self {
        self.earlier = (spent, processes);
        self
    }

    /// Counts builds made before this process's own (by an earlier process
    /// of the hunt, or by the release check) in what the next build is
    /// expected to cost: under a time budget the first build of the search
    /// is then weighed too, instead of started blind.
    pub fn with_known_builds(mut self, totals: &LabTotals) -> Self {
        self.costs.builds = self
            .costs
            .builds
            .saturating_add(u32::try_from(totals.builds).unwrap_or(u32::MAX));
        self.costs.build_seconds += totals.build_seconds;
        self
    }

    /// Journal every result to `journal`.
    pub fn with_journal(mut self, journal: &'a mut Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// End before `budget`'s deadline with what was found by then.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Stop cleanly between runs when `flag` is set (Ctrl-C, SIGTERM).
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = Some(flag);
        self
    }

    fn bad(&self) -> usize {
        self.commits.len() - 1
    }

    /// Runs the whole hunt and returns what it found.
    pub fn run(mut self) -> anyhow::Result<HuntReport> {
        anyhow::ensure!(
            self.commits.len() >= 2,
            "a hunt needs a good and a bad commit"
        );
        let endpoints = match self.choose_run_length().and_then(|()| {
            self.phase("measuring the endpoints, interleaved");
            self.endpoints()
        }) {
            Err(e) if out_of_time(&e) => {
                self.note(format!(
                    "{OUT_OF_TIME_AT_ENDPOINTS}: rerun the same command to go on from the journal"
                ));
                let threshold = self.cfg.decision.threshold;
                let cmp = self.compare_positions(0, self.bad(), &Spans::since(0), threshold);
                return self.finish(HuntOutcome::Inconclusive, cmp);
            }
            other => other?,
        };
        if let (Verdict::Regressed, Some(budget)) = (endpoints.verdict, self.budget) {
            let plan = budget.plan(budget.now(), self.bad() - 1, &self.costs);
            self.note(plan);
        }
        let outcome = match endpoints.verdict {
            Verdict::Unchanged => HuntOutcome::NoRegression,
            Verdict::Unclear if self.under_half_the_threshold(&endpoints) => {
                self.note(format!(
                    "the bad end measured {:+.1}% against the good end in {} + {} runs, \
                     less than half the {}% threshold, so no commit is blamed; the noise \
                     leaves a drop of up to {:.1}% possible: quiet the machine or raise \
                     --max-runs to rule it out",
                    endpoints.change.pct,
                    endpoints.n_base,
                    endpoints.n_new,
                    self.cfg.decision.threshold * 100.0,
                    -endpoints.change.low_pct
                ));
                HuntOutcome::NoRegression
            }
            Verdict::Unclear => HuntOutcome::Inconclusive,
            Verdict::Regressed => {
                self.search_all()?;
                match &self.endpoints_gone {
                    _ if !self.culprits.is_empty() => HuntOutcome::CulpritFound,
                    Some(cmp) if cmp.verdict == Verdict::Unchanged => HuntOutcome::NoRegression,
                    _ => HuntOutcome::Inconclusive,
                }
            }
        };
        self.finish(outcome, endpoints)
    }

    fn finish(mut self, outcome: HuntOutcome, endpoints: Comparison) -> anyhow::Result<HuntReport> {
        self.journal_event(&Event::Finish {
            outcome: outcome.as_str().to_string(),
            at: crate::time::now_rfc3339(),
        })?;
        Ok(self.report(outcome, endpoints))
    }

    fn endpoints(&mut self) -> anyhow::Result<Comparison> {
        let cmp = self.side_by_side(0, self.bad(), 0)?;
        self.note_endpoints(&cmp);
        Ok(cmp)
    }

    /// Whether endpoints (left unclear at the run cap) measured a drop
    /// smaller than half the threshold: the regression hunted for did not
    /// reproduce, so no commit may be blamed, however wide the interval
    /// the noise left. A drop between half and the whole threshold stays
    /// inconclusive: on bimodal noise such a reading comes from a real step
    /// about as often as from none.
    fn under_half_the_threshold(&self, cmp: &Comparison) -> bool {
        cmp.change
            .drop_smaller_than(self.cfg.decision.threshold / 2.0)
    }

    fn note_endpoints(&mut self, cmp: &Comparison) {
        self.state[0].judgement = Some(Judgement::GoodEndpoint);
        let bad = self.bad();
        self.state[bad].judgement = Some(Judgement::BadEndpoint);
        let text = format!(
            "endpoints: {} ({})",
            self.cfg.measure.change_text(&cmp.change),
            match cmp.verdict {
                Verdict::Regressed => "regression confirmed",
                Verdict::Unchanged => "no regression of the threshold's size",
                Verdict::Unclear if self.under_half_the_threshold(cmp) => {
                    "at the run cap, under half the threshold: no regression reproduced"
                }
                Verdict::Unclear => "unclear at the run cap",
            }
        );
        self.progress.event(&ProgressEvent::Note(text));
    }

    fn search_all(&mut self) -> anyhow::Result<()> {
        let mut queue = VecDeque::from([Range {
            lo: 0,
            hi: self.bad(),
        }]);
        while let Some(range) = queue.pop_front() {
            let rest = match self.search_range(range) {
                Err(e) if out_of_time(&e) => {
                    for range in [range].into_iter().chain(queue.drain(..)) {
                        self.out_of_time_in(range);
                    }
                    break;
                }
                other => other?,
            };
            if self.cfg.first_only && !self.culprits.is_empty() {
                break;
            }
            queue.extend(rest);
        }
        self.culprits.sort_by_key(|c| {
            self.commits
                .iter()
                .position(|x| x.id == c.commit)
                .unwrap_or(usize::MAX)
        });
        Ok(())
    }

    /// Judges one candidate between the range's two levels.
    fn judge(&mut self, pos: usize, range: Range) -> anyhow::Result<Outcome> {
        let commit = self.commits[pos].short().to_string();
        loop {
            let verdict = decide::classify_hosts(&self.host_runs(pos, range), &self.cfg.decision);
            let (outcome, judgement) = match verdict.class {
                Class::GoodLike => (Some(Outcome::Good), Judgement::GoodLike),
                Class::BadLike => (Some(Outcome::Bad), Judgement::BadLike),
                Class::Unclear if self.evidence.runs(pos).len() >= self.cfg.decision.max_runs => {
                    (Some(Outcome::Skip), Judgement::Unsure)
                }
                Class::Unclear => (None, Judgement::Unsure),
            };
            if let Some(outcome) = outcome {
                self.set_judgement(pos, judgement, &commit);
                return Ok(outcome);
            }
            self.refresh_reference(range)?;
            match self.measure(pos)? {
                Measured::Ok | Measured::Failed => {}
                Measured::Unmeasurable(_) => {
                    let j =
                        if matches!(self.state[pos].prepared, Some(Prepared::Unbuildable { .. })) {
                            Judgement::Unbuildable
                        } else {
                            Judgement::RunsFailed
                        };
                    self.set_judgement(pos, j, &commit);
                    return Ok(Outcome::Skip);
                }
            }
        }
    }

    fn set_judgement(&mut self, pos: usize, judgement: Judgement, commit: &str) {
        self.state[pos].judgement = Some(judgement);
        // Said once: the posterior search does not say it again.
        self.state[pos].told = Some(judgement);
        let text = serde_json::to_value(judgement)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        self.progress.event(&ProgressEvent::Judged {
            commit: commit.to_string(),
            judgement: text,
        });
    }

    /// Makes a reference run of the range's end measured longest ago, when
    /// the ends' latest run is old.
    fn refresh_reference(&mut self, range: Range) -> anyhow::Result<()> {
        let last = |pos: usize| self.evidence.last_run(pos);
        let (lo_last, hi_last) = (last(range.lo), last(range.hi));
        if self.seq.saturating_sub(lo_last.max(hi_last)) < self.reference_every() {
            return Ok(());
        }
        let pos = if lo_last <= hi_last {
            range.lo
        } else {
            range.hi
        };
        if let Measured::Unmeasurable(reason) = self.measure(pos)? {
            anyhow::bail!(
                "the reference commit {} can no longer be measured: {reason}",
                self.commits[pos].id
            );
        }
        Ok(())
    }

    /// The runs of `pos` on each host, with that host's levels of the
    /// range's ends.
    fn host_runs(&self, pos: usize, range: Range) -> Vec<(Vec<f64>, Reference)> {
        self.evidence
            .hosts_of(pos)
            .into_iter()
            .map(|host| {
                let runs = self.evidence.runs(pos).iter();
                let tps = runs.filter(|r| r.host == host).map(|r| r.tps).collect();
                (tps, self.reference(range, &host))
            })
            .collect()
    }

    /// The levels of the range's two ends near the current time on `host`.
    fn reference(&self, range: Range, host: &Option<String>) -> Reference {
        let window = self.cfg.reference_window;
        let (good_log_level, good_runs) = self.evidence.recent_level(range.lo, window, host);
        let (bad_log_level, bad_runs) = self.evidence.recent_level(range.hi, window, host);
        Reference {
            good_log_level,
            good_runs,
            bad_log_level,
            bad_runs,
            log_sigma: self.evidence.noise_sigma(),
        }
    }

    /// How many runs apart reference rounds are: every other round while
    /// the machine drifts, so that a candidate is set against levels
    /// measured beside it in time (a round is one run a host).
    fn reference_every(&self) -> u64 {
        let rounds = if self.evidence.drifting() {
            2
        } else {
            self.cfg.reference_every
        };
        rounds * self.evidence.width()
    }

    /// Compares the runs of two commits in `spans`, at the level of one
    /// look of a check ([`look::compare_in`], [`Hunt::per_look`]).
    fn compare_positions(
        &self,
        base: usize,
        new: usize,
        spans: &Spans,
        threshold: f64,
    ) -> Comparison {
        look::compare_in(
            &self.evidence,
            (base, new),
            spans,
            &self.per_look(),
            threshold,
        )
    }

    /// The hunt's decision knobs, with the noise measured so far as the
    /// floor of every comparison's spread ([`look::floored`]).
    fn decision(&self) -> DecisionConfig {
        look::floored(self.cfg.decision, self.evidence.noise())
    }

    /// The decision knobs for one look of a check
    /// ([`look::look_decision`]), spending the check's share of the error
    /// rate.
    fn per_look(&self) -> DecisionConfig {
        look::look_decision(
            self.cfg.decision,
            self.evidence.noise(),
            self.alpha_share,
            self.cfg.search,
        )
    }

    /// What `steps_left` steps are expected to cost from the builds and
    /// runs so far, and the time left before the budget's deadline.
    fn search_timing(&self, steps_left: u32) -> Timing {
        Timing {
            expected: (self.costs.rounds > 0)
                .then(|| self.costs.per_step() * f64::from(steps_left)),
            deadline_left: self.budget.map(|b| b.left(b.now())),
        }
    }

    /// Fails with [`HuntError::OutOfTime`] when work expected to take
    /// `seconds` would end after the budget's deadline.
    fn check_budget(&self, seconds: f64) -> anyhow::Result<()> {
        match self.budget {
            Some(b) if !b.fits(b.now(), seconds) => Err(HuntError::OutOfTime.into()),
            _ => Ok(()),
        }
    }

    /// Reports what the search knew of `range` when the time ran out: the
    /// last commit judged good-like and the first judged bad-like in it.
    fn out_of_time_in(&mut self, range: Range) {
        let judged = |pos: usize| self.state[pos].judgement;
        let last_good = (range.lo..range.hi)
            .rev()
            .find(|&p| {
                matches!(
                    judged(p),
                    Some(Judgement::GoodLike | Judgement::GoodEndpoint)
                )
            })
            .unwrap_or(range.lo);
        let first_bad = (last_good + 1..=range.hi)
            .find(|&p| matches!(judged(p), Some(Judgement::BadLike | Judgement::BadEndpoint)))
            .unwrap_or(range.hi);
        let mut reason = OUT_OF_TIME_IN_RANGE.to_string();
        if (last_good, first_bad) != (range.lo, range.hi) {
            // Judgements are the search's proposals; only a side-by-side
            // check confirms one, and a run or two may still mislead them.
            reason += &format!(
                ": the search's runs so far put the drop here, unchecked side by side, so it \
                 may still lie elsewhere in {}..{}",
                self.commits[range.lo].short(),
                self.commits[range.hi].short()
            );
        }
        reason += "; rerun the same command to narrow and check it (the journal keeps every run)";
        self.leave_unresolved((last_good, first_bad), reason, None);
    }

    /// Reports the drop as somewhere after `last_good` up to `first_bad`.
    fn leave_unresolved(
        &mut self,
        (last_good, first_bad): (usize, usize),
        reason: String,
        comparison: Option<Comparison>,
    ) {
        self.unresolved.push(UnresolvedRange {
            last_good: self.commits[last_good].clone(),
            first_bad: self.commits[first_bad].clone(),
            suspects: self.commits[last_good + 1..=first_bad]
                .iter()
                .map(|c| c.id.clone())
                .collect(),
            reason,
            comparison,
        });
    }

    fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
    }

    fn journal_event(&mut self, event: &Event) -> anyhow::Result<bool> {
        match self.journal.as_mut() {
            Some(j) => j.append(event),
            None => Ok(false),
        }
    }

    /// Journals a build or run and, when it is new work (not a replay),
    /// what this process has spent so far.
    fn journal_new(&mut self, event: &Event) -> anyhow::Result<()> {
        if self.journal_event(event)? {
            let spent = self.spent_here();
            self.journal_event(&Event::Spent { spent })?;
        }
        Ok(())
    }

    /// What this process has spent on the hunt so far.
    fn spent_here(&self) -> Spent {
        Spent {
            lab: self.lab.totals(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            cpu_seconds: own_cpu_seconds(),
        }
    }

    fn phase(&mut self, text: &str) {
        self.progress.event(&ProgressEvent::Phase(text.to_string()));
    }

    fn note(&mut self, text: String) {
        self.progress.event(&ProgressEvent::Note(text.clone()));
        self.notes.push(text);
    }

    fn report(self, outcome: HuntOutcome, endpoints: Comparison) -> HuntReport {
        let (earlier, processes) = self.earlier;
        let spent = earlier.plus(self.spent_here());
        let tested = self
            .state
            .iter()
            .enumerate()
            .filter(|(_, s)| s.prepared.is_some())
            .map(|(pos, s)| TestedCommit {
                commit: self.commits[pos].clone(),
                position: pos,
                judgement: s.judgement.unwrap_or(Judgement::Unsure),
                samples: self.evidence.runs(pos).to_vec(),
                summary: stats::Sample::new(self.evidence.tps(pos))
                    .ok()
                    .map(|x| x.summary()),
                note: match &s.prepared {
                    Some(Prepared::Unbuildable { reason, .. }) => Some(reason.clone()),
                    _ => s.last_failure.clone(),
                },
            })
            .collect();
        let tested = tested::with_confirmed(tested, &self.culprits, &self.commits);
        let measured = self.evidence.total_runs();
        HuntReport {
            outcome,
            good: self.commits[0].clone(),
            bad: self.commits[self.commits.len() - 1].clone(),
            candidates: self.commits.len() - 1,
            threshold: self.cfg.decision.threshold,
            clients: self.cfg.clients,
            measurement: self.lab.describe(),
            endpoints,
            culprits: self.culprits,
            unresolved: self.unresolved,
            notes: self.notes,
            tested,
            totals: Totals::from_spent(spent, measured, processes + 1),
            // What the hunt was set up with is known where it was set up:
            // the session's runner fills it in, for every hunt alike.
            machine: None,
            profile_name: String::new(),
            profile_toml: String::new(),
            server_settings: Vec::new(),
            configure_flags: Vec::new(),
            resolution: Vec::new(),
            release_check: None,
            measure_chosen: None,
            made: None,
            why: Vec::new(),
            measure: self.cfg.measure,
        }
    }
}

/// How a report says the time ran out before the endpoints were settled.
const OUT_OF_TIME_AT_ENDPOINTS: &str = "the time budget ran out before the endpoints were settled";
/// How a report says the time ran out in a range it searched.
const OUT_OF_TIME_IN_RANGE: &str = "the time budget ran out while this range was searched";

/// Whether the hunt that wrote `report` stopped at its time budget with
/// work left (the endpoints, or a range, unsettled): run again with its
/// journal, it goes on from there.
pub fn ran_out_of_time(report: &HuntReport) -> bool {
    report
        .notes
        .iter()
        .any(|n| n.starts_with(OUT_OF_TIME_AT_ENDPOINTS))
        || report
            .unresolved
            .iter()
            .any(|u| u.reason.starts_with(OUT_OF_TIME_IN_RANGE))
}

/// Whether `err` is the hunt running out of its time budget.
fn out_of_time(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<HuntError>(), Some(HuntError::OutOfTime))
}
