//! Where the first drop of a range is, from every run: probabilistic
//! bisection.
//!
//! The candidate-by-candidate search ([`crate::core::bisect`]) judges each
//! commit afresh and forgets a run once its commit is judged. Every run of
//! a commit inside the range is, however, evidence about where the drop
//! is: a run of commit `m` at the bad level says the drop is at or before
//! `m`, one at the good level that it is after. [`PositionSearch`] keeps
//! the posterior over the first bad position (uniform at first), computed
//! from every run the hunt has of the range's commits, and asks for the
//! next run where it splits the mass in half; it stops when one position,
//! or one stretch of commits that cannot be measured, holds all but a
//! small share of the mass. It only proposes: the hunt checks every answer
//! side by side with its parent before it is reported.
//!
//! The likelihood of a run is set against the range ends' levels measured
//! near it in time, in units of the run-to-run noise:
//!
//! * good-like (the drop is after the commit): normal around the good level;
//! * bad-like (the drop is at or before it): normal around the bad level,
//!   or, with a smaller weight, around any level between the bad one and
//!   a threshold below the good one, so that a commit between two steps
//!   (in a range with more than one) counts as bad-like, as it must for
//!   the first step to be found;
//! * either way, a small share of wild runs spread over the levels and
//!   ten noise widths beyond them, so that one run in a slow mode or an
//!   outlier moves the posterior by a bounded amount and never decides on
//!   its own. On a quiet machine, whose levels lie many noise widths
//!   apart, the spread covers the whole span between them: were it ten
//!   widths on each side whatever the span, a run of a commit between two
//!   steps, far from both levels, would read nearly as likely wild as
//!   bad-like, and the search would crawl (a two-step hunt over 2,200
//!   commits at 0.01% noise made half as many runs again as at 2%).
//!
//! Positions are relative to the range, as in [`crate::core::bisect`]:
//! 0 is its good end, `n` its bad end, and the first bad position `k` is
//! one of `1..=n`. Nothing here measures anything; the caller owns the loop
//! (ask [`PositionSearch::next_step`], measure, pass every run to
//! [`PositionSearch::update`]).

use crate::core::bisect::{BisectError, Conclusion, Step};
use statrs::distribution::{ContinuousCDF, Normal};

/// How the hunt looks for the first drop in a range.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Search {
    /// Every run is evidence about where the drop is: a posterior over
    /// its position, the next run at its median (probabilistic bisection).
    #[default]
    Posterior,
    /// Candidate by candidate: each judged against the range's two levels
    /// with a sequential test, then the window halved.
    Bisect,
}

impl Search {
    pub fn is_bisect(&self) -> bool {
        *self == Search::Bisect
    }
}

/// Knobs of the search; defaults are what a hunt uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosteriorConfig {
    /// Mass allowed outside the answer when the search stops. The answer
    /// is checked side by side before it is believed, so the search need
    /// not be sure: a tenth left outside costs, now and then, a check that
    /// fails and sends the search on with the check's runs as evidence.
    pub epsilon: f64,
    /// Share of runs assumed wild (far from every level).
    pub wild: f64,
    /// Of a bad-like commit, the weight of the bad level itself; the rest
    /// is spread between the bad level and a threshold below the good one.
    pub at_bad_level: f64,
}

impl Default for PosteriorConfig {
    fn default() -> Self {
        PosteriorConfig {
            epsilon: 0.1,
            wild: 0.05,
            at_bad_level: 0.8,
        }
    }
}

/// One run of a commit strictly inside the range, with the levels of the
/// range's ends near it in time (all log throughput).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Relative position, `1..n`.
    pub pos: usize,
    pub log_tps: f64,
    pub good_level: f64,
    pub bad_level: f64,
}

/// How a run's likelihood is read: the noise and the smallest drop that
/// counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Run-to-run spread of log throughput.
    pub sigma: f64,
    /// The threshold as a drop in log throughput.
    pub log_threshold: f64,
    /// Whether the machine's speed holds still (no wander seen). While it
    /// wanders, a run far from both levels may be the machine, not the
    /// commit: wild runs are then spread over ten noise widths on each
    /// side of the levels only, which keeps such a run weak evidence.
    pub steady: bool,
}

/// The posterior search over one range of `n` candidates.
#[derive(Debug, Clone)]
pub struct PositionSearch {
    cfg: PosteriorConfig,
    /// Per position `0..=n`: whether it can be measured (the ends can).
    measurable: Vec<bool>,
    /// Per position `0..=n`: runs seen (index 0 and `n` unused).
    runs: Vec<usize>,
    /// Posterior of the first bad position; index 0 is always 0.
    posterior: Vec<f64>,
}

impl PositionSearch {
    /// A search over positions `1..=n` (`n` the bad end), uniform at first.
    pub fn new(n: usize, cfg: PosteriorConfig) -> Result<Self, BisectError> {
        if n == 0 {
            return Err(BisectError::Empty);
        }
        let mut posterior = vec![1.0 / n as f64; n + 1];
        posterior[0] = 0.0;
        Ok(PositionSearch {
            cfg,
            measurable: vec![true; n + 1],
            runs: vec![0; n + 1],
            posterior,
        })
    }

    /// The number of candidates, which is also the bad end's position.
    pub fn len(&self) -> usize {
        self.measurable.len() - 1
    }

    /// Always false: a search has at least one candidate.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Marks `pos` as one that cannot be measured (it does not build, or
    /// its runs fail): the drop can then only be placed on either side of
    /// it. The ends and positions outside the range are left alone.
    pub fn unmeasurable(&mut self, pos: usize) {
        if pos > 0 && pos < self.len() {
            self.measurable[pos] = false;
        }
    }

    /// The posterior of the first bad position, `0..=n` (index 0 is 0).
    pub fn posterior(&self) -> &[f64] {
        &self.posterior
    }

    /// Recomputes the posterior from every run of the range's commits:
    /// from scratch, so a level that moved since (new reference runs)
    /// re-reads the old runs too. Runs outside `1..n` are ignored.
    pub fn update(&mut self, runs: &[Observation], noise: Noise) {
        let n = self.len();
        // Per position: the log-likelihood of its runs if the drop is at
        // or before it, and if it is after it.
        let mut bad_like = vec![0.0; n + 1];
        let mut good_like = vec![0.0; n + 1];
        self.runs = vec![0; n + 1];
        for o in runs.iter().filter(|o| o.pos > 0 && o.pos < n) {
            let (g, b) = self.log_likelihoods(o, noise);
            good_like[o.pos] += g;
            bad_like[o.pos] += b;
            self.runs[o.pos] += 1;
        }
        // log L(k) = sum of bad-like at m >= k, of good-like at m < k.
        let mut log_l = vec![f64::NEG_INFINITY; n + 1];
        let mut bad_from_k: f64 = bad_like.iter().sum();
        let mut good_below_k = 0.0;
        for k in 1..=n {
            bad_from_k -= bad_like[k - 1];
            good_below_k += good_like[k - 1];
            log_l[k] = bad_from_k + good_below_k;
        }
        let max = log_l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut post: Vec<f64> = log_l.iter().map(|l| (l - max).exp()).collect();
        post[0] = 0.0;
        let sum: f64 = post.iter().sum();
        post.iter_mut().for_each(|p| *p /= sum);
        self.posterior = post;
    }

    /// The log-likelihoods of one run being good-like and bad-like.
    fn log_likelihoods(&self, o: &Observation, noise: Noise) -> (f64, f64) {
        let sigma = noise.sigma.max(1e-6);
        let z = |level: f64| (o.log_tps - level) / sigma;
        let phi = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let wild = self.cfg.wild / wild_span(o, noise, sigma);
        let good = (1.0 - self.cfg.wild) * phi(z(o.good_level)) + wild;
        // Levels of a commit that dropped by at least the threshold but
        // less than the whole range: uniform between the bad level and a
        // threshold below the good one, seen through the noise.
        let top = o.good_level - noise.log_threshold;
        let between = if top > o.bad_level {
            let width = (top - o.bad_level) / sigma;
            let std = Normal::standard();
            (std.cdf(-z(top)) - std.cdf(-z(o.bad_level))).abs() / width
        } else {
            phi(z(o.bad_level))
        };
        let w = self.cfg.at_bad_level;
        let bad = (1.0 - self.cfg.wild) * (w * phi(z(o.bad_level)) + (1.0 - w) * between) + wild;
        (good.ln(), bad.ln())
    }

    /// The mass on `k <= m`: that commit `m` is bad-like.
    pub fn bad_like(&self, m: usize) -> f64 {
        self.posterior[..=m.min(self.len())].iter().sum()
    }

    /// Where the answer is when the search stops: the stretch `(g, b]`
    /// between two measurable positions (consecutive ones unless those
    /// between cannot be measured) holding the most mass, and that mass.
    pub fn best_block(&self) -> ((usize, usize), f64) {
        let n = self.len();
        let mut best = ((0, n), f64::NEG_INFINITY);
        let mut last = 0;
        let mut mass = 0.0;
        for pos in 1..=n {
            mass += self.posterior[pos];
            if self.measurable[pos] {
                if mass > best.1 {
                    best = ((last, pos), mass);
                }
                last = pos;
                mass = 0.0;
            }
        }
        best
    }

    /// What to do next: stop when one stretch holds all but `epsilon` of
    /// the mass, otherwise measure the measurable commit whose "bad-like"
    /// mass is nearest one half (of two as near, the one with fewer runs:
    /// near the end, the answer and its parent take turns).
    pub fn next_step(&self) -> Step {
        let ((g, b), mass) = self.best_block();
        if mass >= 1.0 - self.cfg.epsilon {
            return Step::Done(conclusion(g, b));
        }
        let n = self.len();
        let mut cumulative = 0.0;
        let mut best: Option<(f64, usize)> = None;
        for m in 1..n {
            cumulative += self.posterior[m];
            if !self.measurable[m] {
                continue;
            }
            let score = (cumulative - 0.5).abs() + 1e-3 * self.runs[m] as f64;
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, m));
            }
        }
        match best {
            Some((_, m)) => Step::Measure(m),
            None => Step::Done(conclusion(g, b)),
        }
    }

    /// The commits of a round shared among `k` candidates (a k-ary
    /// search): for each quantile `j/(k+1)`, `j = 1..=k`, the measurable
    /// commit whose "bad-like" mass is nearest it (of two as near, the one
    /// with fewer runs). Two quantiles may fall on one commit, which then
    /// takes their share of the hosts: near the end, the answer and its
    /// parent. With `k = 1`, the commit [`PositionSearch::next_step`]
    /// measures. Empty when nothing is left to measure.
    pub fn candidates(&self, k: usize) -> Vec<usize> {
        let k = k.max(1);
        let n = self.len();
        let mut cumulative = Vec::with_capacity(n);
        let mut sum = 0.0;
        for m in 1..n {
            sum += self.posterior[m];
            if self.measurable[m] {
                cumulative.push((m, sum));
            }
        }
        (1..=k)
            .filter_map(|j| {
                let q = j as f64 / (k + 1) as f64;
                let score = |&(m, c): &(usize, f64)| (c - q).abs() + 1e-3 * self.runs[m] as f64;
                cumulative
                    .iter()
                    .min_by(|a, b| score(a).total_cmp(&score(b)))
                    .map(|&(m, _)| m)
            })
            .collect()
    }

    /// The shortest stretch `(last_good, first_bad]` of positions holding
    /// at least `mass` of the posterior, from its quantiles: what a search
    /// that cannot go on may still say.
    pub fn credible(&self, mass: f64) -> (usize, usize) {
        let n = self.len();
        let tail = (1.0 - mass).max(0.0) / 2.0;
        let mut cumulative = 0.0;
        let (mut first, mut last) = (None, n);
        for k in 1..=n {
            cumulative += self.posterior[k];
            if first.is_none() && cumulative > tail {
                first = Some(k);
            }
            if cumulative >= 1.0 - tail {
                last = k;
                break;
            }
        }
        let first = first.unwrap_or(1);
        (first - 1, last.max(first))
    }

    /// Measurements still needed with one clear run each: log2 of the
    /// positions the posterior still spreads over.
    pub fn estimated_steps_left(&self) -> u32 {
        self.estimated_rounds_left(1)
    }

    /// Rounds still needed when each splits the posterior among `k`
    /// candidates, one clear run each: log base `k + 1` of the positions
    /// it still spreads over.
    pub fn estimated_rounds_left(&self, k: usize) -> u32 {
        let (g, b) = self.credible(0.99);
        let halvings = usize::BITS - (b - g).saturating_sub(1).leading_zeros();
        let per_round = ((k.max(1) + 1) as f64).log2();
        (f64::from(halvings) / per_round).ceil() as u32
    }

    /// How many positions the posterior still spreads over (99% of it).
    pub fn remaining(&self) -> usize {
        let (g, b) = self.credible(0.99);
        b - g
    }
}

/// The width, in noise widths, over which a wild run may land: ten on
/// each side, and on a steady machine the span between the two levels too.
fn wild_span(o: &Observation, noise: Noise, sigma: f64) -> f64 {
    let between = if noise.steady {
        ((o.good_level - o.bad_level) / sigma).max(0.0)
    } else {
        0.0
    };
    20.0 + between
}

fn conclusion(g: usize, b: usize) -> Conclusion {
    if b == g + 1 {
        Conclusion::FirstBad(b)
    } else {
        Conclusion::Range {
            last_good: g,
            first_bad: b,
        }
    }
}

#[cfg(test)]
mod tests;
