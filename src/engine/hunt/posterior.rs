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

use super::{Hunt, Measured, Range, Refusals, Settled};
use crate::core::bisect::Step;
use crate::core::posterior::{Noise, Observation, PositionSearch, PosteriorConfig};
use crate::model::Prepared;
use crate::report::findings::Judgement;

/// The commits a round over several hosts measures at once by default:
/// with 4 hosts, 4 candidates a round took 9.4 rounds where one took 13.2;
/// with 8 hosts, 4 were as fast as 8 (7.0 and 6.3 rounds) for fewer
/// builds (BENCHMARKS.md, "One candidate a round, or k").
pub const CANDIDATES_A_ROUND: usize = 4;

/// How sure the posterior must be of a commit's side for the report to
/// call it good-like or bad-like.
const JUDGED: f64 = 0.99;

impl Hunt<'_> {
    /// Searches `range` with the posterior over its first bad position;
    /// returns the parts of the drop left to hunt.
    pub(super) fn posterior_range(&mut self, range: Range) -> anyhow::Result<Vec<Range>> {
        let n = range.hi - range.lo;
        let mut search = PositionSearch::new(n, PosteriorConfig::default())?;
        let mut refusals = Refusals::default();
        let (mut doubts, mut unsure) = (0, 0);
        // The cap counts the search's own runs: a refused check's runs
        // (up to 20 a side each) would otherwise use it up after a few
        // refusals that walk to the drop.
        let mut started = self.evidence.total_runs();
        let cap = self.posterior_cap(n);
        // The ends' runs when their drop was last asked about: it is asked
        // again only when they have new ones, as often as the other search
        // asks it (a look per candidate), not after every run.
        let mut ends_seen = None;
        let candidates = self.candidates_a_round();
        loop {
            self.update_posterior(range, &mut search);
            self.search_progress(search.remaining(), search.estimated_rounds_left(candidates));
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
                    let measured = if candidates > 1 {
                        let round = search.candidates(candidates);
                        let round: Vec<usize> = round.into_iter().map(|q| range.lo + q).collect();
                        self.measure_shared(&round)?
                    } else {
                        vec![(range.lo + p, self.measure(range.lo + p)?)]
                    };
                    for (pos, m) in measured {
                        if let Measured::Unmeasurable(_) = m {
                            self.unmeasurable(pos);
                        }
                    }
                }
                Step::Done(conclusion) => {
                    let ends = Self::ends_of(range, conclusion);
                    // Each check is a chance to blame the wrong commit:
                    // after failed ones, the next spends less of the error
                    // rate, so the range's checks together spend about
                    // what one does.
                    self.alpha_share = 1.0 / f64::from(refusals.total() + 1);
                    let before = self.evidence.total_runs();
                    let settled = self.settle(ends, range, &mut refusals);
                    started += self.evidence.total_runs() - before;
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

    /// Notes that `pos` cannot be measured (it does not build, or its runs
    /// failed too often): the search leaves it out from the next update.
    fn unmeasurable(&mut self, pos: usize) {
        let j = match self.state[pos].prepared {
            Some(Prepared::Unbuildable { .. }) => Judgement::Unbuildable,
            _ => Judgement::RunsFailed,
        };
        let commit = self.commits[pos].short().to_string();
        self.set_judgement(pos, j, &commit);
    }

    /// How many commits a round of the search measures at once
    /// ([`candidates_a_round`]).
    pub(super) fn candidates_a_round(&self) -> usize {
        candidates_a_round(self.lab.hosts().len(), self.cfg.candidates)
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
            steady: !self.evidence.drifting(),
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
        // The posterior reads runs as independent around steady levels;
        // while the machine's speed wanders they are neither, and its
        // stretch may miss the drop.
        let wandered = if self.evidence.drifting() {
            "; the machine's speed wandered during the runs, so the drop may also lie just \
             outside them"
        } else {
            ""
        };
        let reason = format!(
            "after {cap} runs the noise left the drop spread over these commits (99% of the \
             posterior){wandered}; rerun with a quieter machine or a larger --max-runs to \
             narrow it"
        );
        self.leave_unresolved((range.lo + g, range.lo + b), reason, None);
    }
}

/// How many commits a round of the posterior search measures at once over
/// `hosts` hosts (0 or 1: this machine alone, one): `asked`, by default the
/// hosts up to [`CANDIDATES_A_ROUND`], never more than the hosts.
pub fn candidates_a_round(hosts: usize, asked: Option<u32>) -> usize {
    if hosts <= 1 {
        return 1;
    }
    let asked = asked.map_or(CANDIDATES_A_ROUND, |k| k as usize);
    asked.clamp(1, hosts)
}
