//! Searching one range for its first drop, with the hunt's search, and
//! what happens to the answer: it is checked side by side before it is
//! believed, and a check that fails sends the search on. Both searches
//! (candidate by candidate, or the posterior over the drop's position)
//! share these checks, and the question asked before every step of
//! whether the range's drop still holds.

use super::check::RangeState;
use super::{Hunt, MAX_DOUBTS, Range, Search};
use crate::core::bisect::{Bisection, Conclusion, Outcome, Step};
use crate::core::decide::Verdict;
use crate::core::posterior::{PositionSearch, PosteriorConfig};
use crate::progress::ProgressEvent;
use crate::report::findings::Judgement;

/// The side-by-side checks that refused a range's answers. A search that
/// keeps being refused ends after [`super::HuntConfig::max_verify_failures`];
/// but refusals that each move the answer the same way, every pair wholly
/// below (or above) the one refused before it, are a search walking to a
/// drop that single runs misjudged (a run of commits read on the wrong side
/// of it on a noisy machine). Those steps are not counted as failures, up to
/// one a commit of the range, so the walk reaches the commit it was heading
/// for.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    /// Refusals that did not move on from the one before.
    failures: u32,
    /// Refusals that moved on, in the same direction as the walk so far.
    steps: u32,
    last: Option<(usize, usize)>,
    /// Whether the walk goes down the history (`Some(true)`) or up.
    down: Option<bool>,
}

impl Refusals {
    /// Records that the pair `(last_good, first_bad)` was refused; returns
    /// whether the search has had enough refusals for a range of `len`
    /// commits.
    pub(super) fn record(&mut self, pair: (usize, usize), max_failures: u32, len: usize) -> bool {
        let step = self.last.and_then(|(good, bad)| {
            let down = if pair.1 <= good {
                true
            } else if pair.0 >= bad {
                false
            } else {
                return None;
            };
            (self.down.is_none() || self.down == Some(down)).then_some(down)
        });
        match step {
            Some(down) if (self.steps as usize) < len => {
                self.steps += 1;
                self.down = Some(down);
            }
            _ => {
                self.failures += 1;
                self.down = None;
            }
        }
        self.last = Some(pair);
        self.failures >= max_failures
    }

    /// Every refusal so far, steps included: each was a look at the data.
    pub(super) fn total(&self) -> u32 {
        self.failures + self.steps
    }
}

/// What became of a search's answer once it was checked.
pub(super) enum Settled {
    /// Confirmed (or given up): the parts of the drop left to hunt.
    Done(Vec<Range>),
    /// Not confirmed: what the check's runs say of the two commits.
    Again(Vec<(usize, Option<Outcome>)>),
}

impl Hunt<'_> {
    /// Searches one range with the hunt's search; returns the parts left
    /// to hunt.
    pub(super) fn search_range(&mut self, range: Range) -> anyhow::Result<Vec<Range>> {
        let k = self.candidates_a_round();
        let at_once = match self.cfg.search {
            Search::Posterior if k > 1 => format!(", up to {k} at once over the hosts"),
            _ => String::new(),
        };
        self.phase(&format!(
            "searching {} commits after {}{at_once}",
            range.hi - range.lo,
            self.commits[range.lo].short()
        ));
        match self.cfg.search {
            Search::Bisect => self.bisect_range(range),
            Search::Posterior => self.posterior_range(range),
        }
    }

    /// Bisects one range candidate by candidate; returns the parts left
    /// to hunt.
    fn bisect_range(&mut self, range: Range) -> anyhow::Result<Vec<Range>> {
        let mut bisection = Bisection::new(range.hi - range.lo)?;
        let mut refusals = Refusals::default();
        let mut unsure_in_a_row = 0;
        let mut doubts = 0;
        loop {
            let steps_left = bisection.estimated_steps_left();
            self.search_progress(bisection.remaining(), steps_left);
            if self.range_lost(range, &mut unsure_in_a_row, &mut doubts)? {
                return Ok(Vec::new());
            }
            match bisection.next_step() {
                Step::Measure(p) => {
                    let outcome = self.judge(range.lo + p, range)?;
                    let unsure = self.state[range.lo + p].judgement == Some(Judgement::Unsure);
                    unsure_in_a_row = if unsure { unsure_in_a_row + 1 } else { 0 };
                    bisection.record(p, outcome)?;
                }
                Step::Done(conclusion) => {
                    let ends = Self::ends_of(range, conclusion);
                    match self.settle(ends, range, &mut refusals)? {
                        Settled::Done(rest) => return Ok(rest),
                        Settled::Again(changes) => {
                            for (pos, outcome) in changes {
                                match outcome {
                                    Some(o) => bisection.record(pos - range.lo, o)?,
                                    None => bisection.forget(pos - range.lo),
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The commit the search of `range` measures first, before any of its
    /// inner commits has a run: what a lab may build ahead.
    pub(super) fn first_candidate(&self, range: Range) -> Option<usize> {
        let n = range.hi - range.lo;
        let step = match self.cfg.search {
            Search::Bisect => Bisection::new(n).ok()?.next_step(),
            Search::Posterior => PositionSearch::new(n, PosteriorConfig::default())
                .ok()?
                .next_step(),
        };
        match step {
            Step::Measure(p) => Some(range.lo + p),
            Step::Done(_) => None,
        }
    }

    pub(super) fn search_progress(&mut self, remaining: usize, steps_left: u32) {
        self.progress.event(&ProgressEvent::Search {
            remaining,
            steps_left,
            timing: self.search_timing(steps_left),
        });
    }

    /// Asked before every step: whether the range's drop is gone (then
    /// noted, and the range is not searched further). A doubt is settled
    /// by measuring the ends side by side, at most [`MAX_DOUBTS`] times
    /// (which starts the count of unsure commits in a row again).
    pub(super) fn range_lost(
        &mut self,
        range: Range,
        unsure_in_a_row: &mut u32,
        doubts: &mut u32,
    ) -> anyhow::Result<bool> {
        // The posterior search asks after every new run of the ends, so
        // more often than the other: a drop its later runs rule out is
        // first measured again side by side, as a doubt is.
        let confirm_loss = self.cfg.search == Search::Posterior && *doubts < MAX_DOUBTS;
        let lost = match self.range_holds(range, *unsure_in_a_row) {
            RangeState::Holds => None,
            RangeState::Lost(_) if confirm_loss => {
                *doubts += 1;
                self.settle_doubt(range)?.map(|cmp| (cmp, true))
            }
            RangeState::Lost(cmp) => Some((cmp, false)),
            RangeState::InDoubt(cmp) if *doubts >= MAX_DOUBTS => Some((cmp, false)),
            RangeState::InDoubt(_) => {
                *doubts += 1;
                *unsure_in_a_row = 0;
                self.settle_doubt(range)?.map(|cmp| (cmp, true))
            }
        };
        match lost {
            Some((cmp, side_by_side)) => {
                self.drop_not_held(range, cmp, side_by_side)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// A search's conclusion as history positions `(last_good, first_bad)`.
    pub(super) fn ends_of(range: Range, conclusion: Conclusion) -> (usize, usize) {
        match conclusion {
            Conclusion::FirstBad(b) => (range.lo + b - 1, range.lo + b),
            Conclusion::Range {
                last_good,
                first_bad,
            } => (range.lo + last_good, range.lo + first_bad),
        }
    }

    /// Checks what a search proposed, `(last_good, first_bad)`, side by
    /// side (pair by pair when unsure commits lie between): a confirmed
    /// answer is recorded and the rest of the drop returned; a failed
    /// check sends the search back, with what its runs say of the two
    /// commits, until the search has had enough refusals ([`Refusals`]).
    pub(super) fn settle(
        &mut self,
        (last_good, first_bad): (usize, usize),
        range: Range,
        refusals: &mut Refusals,
    ) -> anyhow::Result<Settled> {
        if first_bad > last_good + 1
            && let Some((good, bad, check)) = self.narrow(last_good, first_bad, range)?
        {
            return self.confirmed(good, bad, range, check).map(Settled::Done);
        }
        let check = self.verify(last_good, first_bad, range)?;
        if check.side_by_side.verdict == Verdict::Regressed {
            return self
                .confirmed(last_good, first_bad, range, check)
                .map(Settled::Done);
        }
        let enough = refusals.record(
            (last_good, first_bad),
            self.cfg.max_verify_failures,
            range.hi - range.lo,
        );
        self.note(format!(
            "{} was not confirmed side by side with {} ({:+.1}%); searching again",
            self.commits[first_bad].short(),
            self.commits[last_good].short(),
            check.side_by_side.change.pct
        ));
        let whole = last_good == range.lo && first_bad == range.hi;
        if enough || whole {
            // Checks that keep refusing what the search proposes may mean
            // there is no drop left to find: the range's ends, side by
            // side, tell that from a drop that cannot be pinned.
            let gone = if whole {
                None
            } else {
                self.settle_doubt(range)?
            };
            if let Some(gone) = gone {
                self.drop_not_held(range, gone, true)?;
            } else {
                self.give_up(range, last_good, first_bad, check.side_by_side);
            }
            return Ok(Settled::Done(Vec::new()));
        }
        Ok(Settled::Again(self.after_failed_check(
            last_good,
            first_bad,
            range,
            &check.spans,
        )))
    }
}
