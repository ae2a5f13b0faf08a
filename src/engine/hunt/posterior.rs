//! The posterior search of a range: every run of the range's commits,
//! set against the levels of its ends measured near it in time, is
//! evidence about where the drop is (see [`crate::core::posterior`]).
//!
//! The search only proposes. Its answer goes through the same checks as
//! the candidate-by-candidate search's ([`Hunt::settle`]): each culprit
//! side by side with its parent (pair by pair when commits that cannot be
//! measured lie between), the rest of the drop on either side, and, while
//! the machine wanders, only runs made side by side. A failed check's
//! runs are evidence too, so the posterior moves away from the pair
//! without being told.

use super::{Hunt, Measured, Range, Settled};
use crate::core::bisect::Step;
use crate::core::posterior::{Noise, Observation, PositionSearch, PosteriorConfig};
use crate::model::Prepared;
use crate::report::findings::Judgement;

/// How sure the posterior must be of a commit's side for the report to
/// call it good-like or bad-like.
const JUDGED: f64 = 0.99;

impl Hunt<'_> {
    /// Searches `range` with the posterior over its first bad position;
    /// returns the parts of the drop left to hunt.
    pub(super) fn posterior_range(&mut self, range: Range) -> anyhow::Result<Vec<Range>> {
        let n = range.hi - range.lo;
        let mut search = PositionSearch::new(n, PosteriorConfig::default())?;
        let (mut failures, mut doubts, mut unsure) = (0, 0, 0);
        let started = self.evidence.total_runs();
        let cap = self.posterior_cap(n);
        // The ends' runs when their drop was last asked about: it is asked
        // again only when they have new ones, as often as the other search
        // asks it (a look per candidate), not after every run.
        let mut ends_seen = None;
        loop {
            self.update_posterior(range, &mut search);
            self.search_progress(search.remaining(), search.estimated_steps_left());
            let ends_now = self.evidence.runs(range.lo).len() + self.evidence.runs(range.hi).len();
            if ends_seen != Some(ends_now) {
                ends_seen = Some(ends_now);
                if self.range_lost(range, &mut unsure, &mut doubts)? {
                    return Ok(Vec::new());
                }
            }
            match search.next_step() {
                Step::Measure(p) => {
                    if self.evidence.total_runs() - started >= cap {
                        self.posterior_gives_up(range, &search, cap);
                        return Ok(Vec::new());
                    }
                    self.refresh_reference(range)?;
                    let pos = range.lo + p;
                    if let Measured::Unmeasurable(_) = self.measure(pos)? {
                        let j = match self.state[pos].prepared {
                            Some(Prepared::Unbuildable { .. }) => Judgement::Unbuildable,
                            _ => Judgement::RunsFailed,
                        };
                        let commit = self.commits[pos].short().to_string();
                        self.set_judgement(pos, j, &commit);
                    }
                }
                Step::Done(conclusion) => {
                    let ends = Self::ends_of(range, conclusion);
                    // Each check is a chance to blame the wrong commit:
                    // after failed ones, the next spends less of the error
                    // rate, so the range's checks together spend about
                    // what one does.
                    self.alpha_share = 1.0 / f64::from(failures + 1);
                    let settled = self.settle(ends, range, &mut failures);
                    self.alpha_share = 1.0;
                    match settled? {
                        Settled::Done(rest) => return Ok(rest),
                        // The check's runs are in the evidence: the next
                        // update reads them.
                        Settled::Again(_) => {}
                    }
                }
            }
        }
    }

    /// The most runs a range's search may make (checks included) before
    /// the drop is reported as somewhere in the stretch the posterior
    /// still holds: the run cap of a commit for each halving of the range,
    /// and two more.
    fn posterior_cap(&self, n: usize) -> u64 {
        let halvings = u64::from(usize::BITS - n.leading_zeros());
        self.cfg.decision.max_runs as u64 * (halvings + 2)
    }

    /// Reads every run of the range's inner commits into `search`, and
    /// notes which commits cannot be measured and which the posterior
    /// places surely on one side of the drop.
    fn update_posterior(&mut self, range: Range, search: &mut PositionSearch) {
        let window = self.cfg.reference_window;
        let mut runs = Vec::new();
        for pos in range.lo + 1..range.hi {
            if matches!(
                self.state[pos].judgement,
                Some(Judgement::Unbuildable | Judgement::RunsFailed)
            ) {
                search.unmeasurable(pos - range.lo);
            }
            for r in self.evidence.runs(pos) {
                let (Some(good_level), Some(bad_level)) = (
                    self.evidence.level_near(range.lo, r, window),
                    self.evidence.level_near(range.hi, r, window),
                ) else {
                    continue;
                };
                runs.push(Observation {
                    pos: pos - range.lo,
                    log_tps: r.tps.ln(),
                    good_level,
                    bad_level,
                });
            }
        }
        let noise = Noise {
            sigma: self.evidence.noise_sigma(),
            log_threshold: self.cfg.decision.log_threshold(),
        };
        search.update(&runs, noise);
        for pos in range.lo + 1..range.hi {
            if self.evidence.runs(pos).is_empty()
                || !matches!(
                    self.state[pos].judgement,
                    None | Some(Judgement::GoodLike | Judgement::BadLike | Judgement::Unsure)
                )
            {
                continue;
            }
            let bad = search.bad_like(pos - range.lo);
            let judgement = if bad >= JUDGED {
                Judgement::BadLike
            } else if bad <= 1.0 - JUDGED {
                Judgement::GoodLike
            } else {
                Judgement::Unsure
            };
            if judgement == Judgement::Unsure || self.state[pos].told == Some(judgement) {
                self.state[pos].judgement = Some(judgement);
            } else {
                let commit = self.commits[pos].short().to_string();
                self.set_judgement(pos, judgement, &commit);
            }
        }
    }

    /// Reports the drop as somewhere in the stretch holding 99% of the
    /// posterior when the search reached its cap.
    fn posterior_gives_up(&mut self, range: Range, search: &PositionSearch, cap: u64) {
        let (g, b) = search.credible(0.99);
        let reason = format!(
            "after {cap} runs the noise left the drop spread over these commits (99% of the \
             posterior); rerun with a quieter machine or a larger --max-runs to narrow it"
        );
        self.leave_unresolved((range.lo + g, range.lo + b), reason, None);
    }
}
