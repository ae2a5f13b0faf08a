//! Checking a culprit before it is reported, and deciding what to do
//! when a check or a range does not hold up.
//!
//! The search only proposes; a culprit is reported when it and its parent,
//! measured side by side, differ by the threshold. The same runs, set
//! against the recent runs of the range's ends, tell whether the culprit
//! explains the whole drop or another step waits on either side, and a
//! failed check tells which of the two commits was misjudged.

use super::evidence::blocks;
use super::{Hunt, HuntError, Measured, Range, Spans};
use crate::core::bisect::Outcome;
use crate::core::decide::{self, Comparison, Verdict};
use crate::core::stats;
use crate::model::Prepared;
use crate::report::findings::{Culprit, HostFigures, Judgement, RunSample, UnresolvedRange};

/// The most commits a range may hold for [`Hunt::narrow`] to check them
/// pair by pair; a longer one is reported as a range.
const MAX_NARROWED_PAIRS: usize = 4;

/// What the latest runs of a range's ends say of its drop.
#[derive(Debug)]
pub(super) enum RangeState {
    Holds,
    /// Too weak to go on with unchecked, not weak enough to give up on.
    InDoubt(Comparison),
    /// Ruled out.
    Lost(Comparison),
}

/// The result of a side-by-side check.
pub(super) struct Check {
    pub(super) side_by_side: Comparison,
    /// The range's good end against the last good-like commit, when checked.
    before: Option<Comparison>,
    /// The first bad-like commit against the range's bad end, when checked.
    after: Option<Comparison>,
    /// The runs of the pair the check counts: those of earlier checks of
    /// the same pair, and its own.
    pub(super) spans: Spans,
}

impl Hunt<'_> {
    /// What a failed side-by-side check says about its two commits: when
    /// their runs in the check sit, together, at the good level of the
    /// range, the bad-like one was misjudged, and the other way round;
    /// otherwise both are judged again. Range ends are left alone.
    pub(super) fn after_failed_check(
        &mut self,
        last_good: usize,
        first_bad: usize,
        range: Range,
        spans: &Spans,
    ) -> Vec<(usize, Option<Outcome>)> {
        let mut both = self.evidence.samples_in(last_good, spans);
        both.extend(self.evidence.samples_in(first_bad, spans));
        let end_runs = |pos: usize| self.evidence.recent_runs(pos, self.cfg.reference_window);
        let d = self.per_look();
        let at_good = decide::compare_blocked(&blocks(&end_runs(range.lo), &both), &d, d.threshold);
        let at_bad = decide::compare_blocked(&blocks(&both, &end_runs(range.hi)), &d, d.threshold);
        // The pair belongs with the end it is not clearly apart from, when
        // it is clearly apart from the other one.
        use Verdict::{Regressed, Unchanged, Unclear};
        let settle = match (at_good.verdict, at_bad.verdict) {
            (Unchanged, Unclear | Regressed) | (Unclear, Regressed) => {
                Some((first_bad, Outcome::Good))
            }
            (Unclear | Regressed, Unchanged) | (Regressed, Unclear) => {
                Some((last_good, Outcome::Bad))
            }
            _ => None,
        };
        let mut changes = Vec::new();
        for pos in [last_good, first_bad] {
            if pos <= range.lo || pos >= range.hi {
                continue;
            }
            match settle {
                Some((p, outcome)) if p == pos => {
                    let judgement = match outcome {
                        Outcome::Good => Judgement::GoodLike,
                        _ => Judgement::BadLike,
                    };
                    let commit = self.commits[pos].short().to_string();
                    self.set_judgement(pos, judgement, &commit);
                    changes.push((pos, Some(outcome)));
                }
                Some(_) => {}
                None => {
                    self.state[pos].judgement = None;
                    changes.push((pos, None));
                }
            }
        }
        changes
    }

    /// Narrows a drop the search could pin only to several commits (unsure
    /// ones in between) the way a hacker does by hand: each commit side by
    /// side with its parent, from the bad end down, while the pairs show
    /// no drop. Returns the pair that shows it with its check; `None` when
    /// a pair stays unclear, a commit cannot be measured, or no pair shows
    /// the drop (then the range itself is checked and reported).
    pub(super) fn narrow(
        &mut self,
        last_good: usize,
        first_bad: usize,
        range: Range,
    ) -> anyhow::Result<Option<(usize, usize, Check)>> {
        let measurable = |s: &Self, pos: usize| {
            !matches!(
                s.state[pos].judgement,
                Some(Judgement::Unbuildable | Judgement::RunsFailed)
            )
        };
        let pairs = first_bad - last_good;
        if pairs > MAX_NARROWED_PAIRS {
            return Ok(None);
        }
        // Each pair is a chance to blame the wrong commit: together they
        // spend what one check would (Bonferroni).
        let outer = self.alpha_share;
        self.alpha_share = outer / pairs as f64;
        let mut found = None;
        for bad in (last_good + 1..=first_bad).rev() {
            let good = bad - 1;
            if !measurable(self, good) || !measurable(self, bad) {
                break;
            }
            let check = match self.verify(good, bad, range) {
                Ok(check) => check,
                Err(e) => {
                    self.alpha_share = outer;
                    return Err(e);
                }
            };
            match check.side_by_side.verdict {
                Verdict::Unchanged => continue,
                Verdict::Regressed => found = Some((good, bad, check)),
                Verdict::Unclear => {}
            }
            break;
        }
        self.alpha_share = outer;
        Ok(found)
    }

    /// Whether the drop across `range` still holds in the runs of its ends
    /// made since (reference runs keep coming). Asked before every step.
    /// A drop is gone when those runs rule it out; it is in doubt when
    /// they measure less than half of it, or when commits in a row came
    /// out unsure (which is what a range without a drop looks like), and
    /// a doubt is settled by measuring the ends side by side (see
    /// [`Hunt::settle_doubt`]): on noisy machines a few reference runs
    /// alone measure a real -12% step as anything from -25% to +10%.
    pub(super) fn range_holds(&self, range: Range, unsure_in_a_row: u32) -> RangeState {
        // While the machine drifts, only runs of the two ends made over
        // the same stretch of time can be set against each other: the
        // ends' runs since the later of their windows' starts, which are
        // fewer, so half a window of them settles it.
        let drifting = self.evidence.drifting();
        let window = self.cfg.reference_window;
        let since = if drifting {
            [range.lo, range.hi]
                .iter()
                .filter_map(|&pos| self.evidence.last_runs(pos, window).first().map(|r| r.run))
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let runs = |pos: usize| -> Vec<RunSample> {
            let mut runs = self.evidence.last_runs(pos, window);
            runs.retain(|r| r.run >= since);
            runs
        };
        let (lo, hi) = (runs(range.lo), runs(range.hi));
        let (d, threshold) = (&self.decision(), self.cfg.decision.threshold);
        let cmp = if drifting {
            decide::compare_paired(&self.evidence.pairs(&lo, &hi), d, threshold)
        } else {
            decide::compare_blocked(&blocks(&lo, &hi), d, threshold)
        };
        let small = cmp.change.drop_smaller_than(threshold / 2.0);
        let settled = cmp.n_base.min(cmp.n_new) >= window / if drifting { 2 } else { 1 };
        // Unsure commits in a row end the range only when its ends do not
        // still measure a drop of the threshold's size: one pair made side
        // by side at -40% is too few runs to settle anything, but it is no
        // sign that the drop has gone.
        let below_threshold = cmp.change.drop_smaller_than(threshold);
        if cmp.verdict == Verdict::Unchanged {
            RangeState::Lost(cmp)
        } else if (small && settled)
            || (unsure_in_a_row >= 3 && cmp.verdict != Verdict::Regressed && below_threshold)
        {
            RangeState::InDoubt(cmp)
        } else {
            RangeState::Holds
        }
    }

    /// Measures `lo` and `hi` in turn, from run `since` on, until their
    /// comparison settles or reaches the run cap. An endpoint that can no
    /// longer be measured ends the hunt; another commit that cannot leaves
    /// the comparison unclear.
    pub(super) fn side_by_side(
        &mut self,
        lo: usize,
        hi: usize,
        since: u64,
    ) -> anyhow::Result<Comparison> {
        let threshold = self.cfg.decision.threshold;
        loop {
            for pos in [lo, hi] {
                if let Measured::Unmeasurable(reason) = self.measure(pos)? {
                    if pos == 0 || pos == self.bad() {
                        return Err(HuntError::EndpointUnmeasurable {
                            which: if pos == 0 { "good" } else { "bad" },
                            commit: self.commits[pos].id.clone(),
                            reason,
                        }
                        .into());
                    }
                    let cmp = self.compare_positions(lo, hi, &Spans::since(since), threshold);
                    return Ok(Comparison {
                        verdict: Verdict::Unclear,
                        ..cmp
                    });
                }
            }
            let cmp = self.compare_positions(lo, hi, &Spans::since(since), threshold);
            let runs = cmp.n_base.min(cmp.n_new);
            // "No regression" ends the hunt for good: it waits for two more
            // runs a side than a drop does, so that a good endpoint whose
            // first runs all landed in a slow mode cannot end it.
            let settled = match cmp.verdict {
                Verdict::Regressed => true,
                Verdict::Unchanged => runs >= self.cfg.decision.min_runs + 2,
                Verdict::Unclear => false,
            };
            let cap = self.evidence.runs_since(lo, since).len() >= self.cfg.decision.max_runs;
            if settled || cap {
                return Ok(cmp);
            }
        }
    }

    /// Measures the ends of a range whose drop is in doubt side by side,
    /// until their comparison settles or reaches the run cap. `Some` with
    /// the comparison when the drop is gone or stays unsettled below the
    /// threshold; `None` when the range is still worth searching.
    pub(super) fn settle_doubt(&mut self, range: Range) -> anyhow::Result<Option<Comparison>> {
        self.phase(&format!(
            "measuring {} and {} again, side by side",
            self.commits[range.lo].short(),
            self.commits[range.hi].short()
        ));
        let cmp = self.side_by_side(range.lo, range.hi, self.seq + 1)?;
        let holds = self.drop_stands(&cmp);
        self.note(format!(
            "{} to {} measured again side by side: {}{}",
            self.commits[range.lo].short(),
            self.commits[range.hi].short(),
            cmp.change,
            if holds { "; searching on" } else { "" }
        ));
        Ok((!holds).then_some(cmp))
    }

    /// Notes a range whose drop did not hold up. When it is the whole
    /// range and neither the later runs nor a side-by-side measurement
    /// (`side_by_side`) settled that the drop is gone, the endpoints are
    /// measured again side by side, which tells "no regression" from
    /// "inconclusive".
    pub(super) fn drop_not_held(
        &mut self,
        range: Range,
        cmp: Comparison,
        side_by_side: bool,
    ) -> anyhow::Result<()> {
        self.note(format!(
            "{} to {}: the drop did not hold up in later runs ({}); this part is not searched further",
            self.commits[range.lo].short(),
            self.commits[range.hi].short(),
            cmp.change
        ));
        if range.lo == 0 && range.hi == self.bad() {
            let cmp = if cmp.verdict == Verdict::Unchanged || side_by_side {
                cmp
            } else {
                self.phase("measuring the endpoints again, side by side");
                let bad = self.bad();
                let again = self.side_by_side(0, bad, self.seq + 1)?;
                self.note(format!(
                    "endpoints measured again side by side: {}",
                    again.change
                ));
                again
            };
            self.endpoints_gone = Some(cmp);
        }
        Ok(())
    }

    pub(super) fn give_up(
        &mut self,
        range: Range,
        last_good: usize,
        first_bad: usize,
        cmp: Comparison,
    ) {
        let suspects = self.commits[last_good + 1..=first_bad]
            .iter()
            .map(|c| c.id.clone())
            .collect();
        self.unresolved.push(UnresolvedRange {
            last_good: self.commits[last_good].clone(),
            first_bad: self.commits[first_bad].clone(),
            suspects,
            reason: format!(
                "the drop after {} could not be pinned to one commit: side-by-side checks kept disagreeing with the search",
                self.commits[range.lo].short()
            ),
            comparison: Some(cmp),
        });
    }

    /// Records a confirmed culprit (or culprit range) and returns the part
    /// of the drop it leaves unexplained.
    pub(super) fn confirmed(
        &mut self,
        last_good: usize,
        first_bad: usize,
        range: Range,
        check: Check,
    ) -> anyhow::Result<Vec<Range>> {
        let cmp = check.side_by_side;
        if first_bad == last_good + 1 {
            let before_runs = self.evidence.samples_in(last_good, &check.spans);
            let after_runs = self.evidence.samples_in(first_bad, &check.spans);
            let tps = |runs: &[RunSample]| runs.iter().map(|r| r.tps).collect::<Vec<f64>>();
            let before = stats::median(&tps(&before_runs));
            let after = stats::median(&tps(&after_runs));
            let c = &self.commits[first_bad];
            self.culprits.push(Culprit {
                commit: c.id.clone(),
                subject: c.subject.clone(),
                author: c.author.clone(),
                date: c.date.clone(),
                parent: self.commits[last_good].id.clone(),
                before_tps: before,
                after_tps: after,
                change: cmp.change,
                p_value: cmp.p_value,
                method: cmp.method,
                runs_before: cmp.n_base,
                runs_after: cmp.n_new,
                per_host: HostFigures::of(&before_runs, &after_runs),
                // Filled from the journal by the session (a hunt on counts).
                functions: Vec::new(),
            });
            self.note(format!(
                "first bad commit: {} {}",
                self.commits[first_bad].short(),
                self.cfg.measure.change_text(&cmp.change)
            ));
        } else {
            let reason = self.why_not_narrowed(last_good, first_bad);
            self.leave_unresolved((last_good, first_bad), reason, Some(cmp));
        }
        let mut rest = Vec::new();
        let parts = [
            (check.before, range.lo, last_good),
            (check.after, first_bad, range.hi),
        ];
        // A drop the culprit leaves unexplained, with no further step seen
        // on either side, is looked for side by side.
        let unexplained = if parts.iter().flat_map(|p| p.0).any(|c| self.drop_stands(&c)) {
            None
        } else {
            self.unexplained(range, &cmp)
        };
        for (cmp, lo, hi) in parts {
            let Some(mut cmp) = cmp else { continue };
            if let Some(part) = unexplained.filter(|_| cmp.verdict != Verdict::Regressed) {
                cmp = self.settle_rest((lo, hi), (range, first_bad), part)?;
            }
            match cmp.verdict {
                Verdict::Regressed => rest.push(Range { lo, hi }),
                Verdict::Unchanged => {}
                Verdict::Unclear
                    if cmp
                        .change
                        .drop_smaller_than(self.cfg.decision.threshold / 2.0) => {}
                Verdict::Unclear => {
                    // As large as the threshold but not settled at the run
                    // cap: hunted all the same, since a culprit there must
                    // pass its own side-by-side check, and a drop that is
                    // not there stops the search of that part after a few
                    // runs.
                    let hunt = self.drop_stands(&cmp);
                    self.note(format!(
                        "{} to {}: a further {} {}",
                        self.commits[lo].short(),
                        self.commits[hi].short(),
                        cmp.change,
                        if hunt {
                            "is not settled; hunting it"
                        } else {
                            "could not be confirmed or ruled out"
                        }
                    ));
                    if hunt {
                        rest.push(Range { lo, hi });
                    }
                }
            }
        }
        Ok(rest)
    }

    /// Whether a comparison leaves a drop worth hunting: settled, or as
    /// large as the threshold though not settled at the run cap.
    fn drop_stands(&self, cmp: &Comparison) -> bool {
        cmp.verdict == Verdict::Regressed
            || (cmp.verdict == Verdict::Unclear
                && cmp.change.drop_at_least(self.cfg.decision.threshold))
    }

    /// The part of the drop across `range` that a culprit's change `cmp`
    /// leaves unexplained, in percent, when it is at least the threshold
    /// even at the largest drop the culprit's interval allows. Both figures
    /// come from runs made side by side (the range's ends with each other,
    /// the culprit with its parent), so their ratio holds even when the
    /// machine's speed has moved since the ends were measured. The
    /// culprit's estimate rests on a few runs (4 a side: about 2% of
    /// spread on 3% noise), so its point estimate alone would leave a
    /// threshold's worth unexplained in one hunt of a hundred with one
    /// step, and looking for that rest side by side costs up to twice the
    /// run cap.
    pub(super) fn unexplained(&self, range: Range, cmp: &Comparison) -> Option<f64> {
        let threshold = self.cfg.decision.threshold;
        let whole = self.compare_positions(range.lo, range.hi, &Spans::since(0), threshold);
        let culprit = cmp.change.low_pct.min(cmp.change.pct).max(-99.0);
        let rest = 100.0 * ((1.0 + whole.change.pct / 100.0) / (1.0 + culprit / 100.0) - 1.0);
        (rest <= -100.0 * threshold).then_some(rest)
    }

    /// Measures `lo` and `hi` side by side when the culprit leaves
    /// `unexplained` percent of its range's drop but the check's runs, set
    /// against the range end's older runs, found no further step: runs
    /// minutes apart disagree on a machine whose speed moves.
    fn settle_rest(
        &mut self,
        (lo, hi): (usize, usize),
        (range, culprit): (Range, usize),
        unexplained: f64,
    ) -> anyhow::Result<Comparison> {
        let [a, b, lo_id, hi_id, culprit] =
            [range.lo, range.hi, lo, hi, culprit].map(|pos| self.commits[pos].short().to_string());
        let whole = format!("{a} to {b}");
        self.note(format!(
            "{unexplained:+.1}% of the drop from {whole} is left once {culprit} is counted, even \
             at the largest drop its interval allows; measuring {lo_id} and {hi_id} side by \
             side for a further drop"
        ));
        let cmp = self.side_by_side(lo, hi, self.seq + 1)?;
        let outcome = match cmp.verdict {
            Verdict::Regressed => "a further drop; hunting it".to_string(),
            Verdict::Unchanged => {
                format!("no further drop: {culprit} explains the drop from {whole}")
            }
            Verdict::Unclear => "not settled".to_string(),
        };
        self.note(format!(
            "{lo_id} to {hi_id}: {} side by side: {outcome}",
            cmp.change
        ));
        Ok(cmp)
    }

    /// Why the commits strictly between `last_good` and `first_bad` left
    /// the drop unpinned, one commit at a time.
    fn why_not_narrowed(&self, last_good: usize, first_bad: usize) -> String {
        let each: Vec<String> = (last_good + 1..first_bad)
            .map(|pos| {
                let (c, s) = (self.commits[pos].short(), &self.state[pos]);
                match &s.prepared {
                    Some(Prepared::Unbuildable { .. }) => format!("{c} does not build"),
                    _ if s.failures >= self.cfg.max_run_failures => {
                        format!("{c}'s runs failed")
                    }
                    _ => format!(
                        "{c} was still unsure after {} runs",
                        self.evidence.runs(pos).len()
                    ),
                }
            })
            .collect();
        format!(
            "the commits in between could not be told good or bad: {}",
            each.join("; ")
        )
    }

    /// Side-by-side check of `good` and `bad`; the same runs, set against
    /// the recent runs of the range's ends, show whether the rest of the
    /// drop lies on either side.
    pub(super) fn verify(
        &mut self,
        good: usize,
        bad: usize,
        range: Range,
    ) -> anyhow::Result<Check> {
        self.phase(&format!(
            "checking {} against {} side by side",
            self.commits[bad].short(),
            self.commits[good].short()
        ));
        let since = self.seq + 1;
        let earlier = self.checked.get(&(good, bad)).cloned().unwrap_or_default();
        // Counts do not move with the clock (`exact`): the pair's runs
        // from the search are as good as the check's, whose runs then only
        // add to them. A run of tps is set only against runs made beside
        // it, and one that put a commit in the check was picked for it.
        let spans = if self.cfg.decision.exact {
            Spans::since(0)
        } else {
            Spans::after(earlier, since)
        };
        let check = self.measure_pair(good, bad, range, spans);
        if self.seq >= since {
            self.checked
                .entry((good, bad))
                .or_default()
                .push((since, self.seq));
        }
        check
    }

    /// Measures `good` and `bad` in turn until their comparison over
    /// `spans` settles (and, when it shows the drop, the rest of the drop
    /// on either side) or this check reaches the run cap.
    fn measure_pair(
        &mut self,
        good: usize,
        bad: usize,
        range: Range,
        spans: Spans,
    ) -> anyhow::Result<Check> {
        let since = spans.start();
        let hunt_rest = !self.cfg.first_only;
        let before_end = (hunt_rest && good != range.lo).then_some(range.lo);
        let after_end = (hunt_rest && bad != range.hi).then_some(range.hi);
        let d = self.cfg.decision;
        // While the machine drifts, the ends' levels are measured beside
        // the pair, or the rest of the drop is judged on stale runs.
        let mut order = vec![good, bad];
        if self.evidence.drifting() {
            order.extend(before_end.into_iter().chain(after_end));
        }
        let first_order = order.clone();
        loop {
            for &pos in &order {
                if let Measured::Unmeasurable(_) = self.measure(pos)? {
                    let cmp = self.compare_positions(good, bad, &spans, d.threshold);
                    return Ok(Check {
                        side_by_side: Comparison {
                            verdict: Verdict::Unclear,
                            ..cmp
                        },
                        before: None,
                        after: None,
                        spans,
                    });
                }
            }
            let check = Check {
                side_by_side: self.compare_positions(good, bad, &spans, d.threshold),
                before: before_end.map(|lo| self.compare_end(lo, good, since, true)),
                after: after_end.map(|hi| self.compare_end(hi, bad, since, false)),
                spans: spans.clone(),
            };
            if self.evidence.runs_since(bad, since).len() >= d.max_runs {
                return Ok(check);
            }
            match check.side_by_side.verdict {
                Verdict::Unclear => {}
                Verdict::Unchanged => return Ok(check),
                Verdict::Regressed => {
                    // The culprit stands; what is left of the drop is
                    // settled too before the hunt moves on, measuring the
                    // range end beside it, or a second step would be
                    // dropped on too few runs.
                    let open_ends: Vec<usize> = [(check.before, range.lo), (check.after, range.hi)]
                        .into_iter()
                        .filter(|(cmp, _)| cmp.is_some_and(|c| self.rest_is_open(&c)))
                        .map(|(_, end)| end)
                        .collect();
                    if open_ends.is_empty() {
                        return Ok(check);
                    }
                    order = first_order.clone();
                    order.extend(open_ends.into_iter().filter(|e| !first_order.contains(e)));
                }
            }
        }
    }

    /// True when a check of the rest of a drop is not settled but its
    /// estimate says a further step is likely.
    pub(super) fn rest_is_open(&self, cmp: &Comparison) -> bool {
        cmp.verdict == Verdict::Unclear
            && cmp.change.drop_at_least(self.cfg.decision.threshold / 2.0)
    }

    /// Compares a range end with a commit beside it: the end's recent
    /// runs (its endpoint and reference runs, and any made during the
    /// check) against the commit's runs in the check. `end_first` says
    /// which is the base of the comparison. While the machine drifts and
    /// the end was measured beside the commit, the runs are compared pair
    /// by pair.
    pub(super) fn compare_end(
        &self,
        end: usize,
        inner: usize,
        since: u64,
        end_first: bool,
    ) -> Comparison {
        let d = self.per_look();
        if self.evidence.drifting() {
            let (base, new) = if end_first {
                (end, inner)
            } else {
                (inner, end)
            };
            let pairs = self.evidence.pairs_since(base, new, since);
            if pairs.len() >= d.min_runs {
                return decide::compare_paired(&pairs, &d, d.threshold);
            }
        }
        let end_runs = self.evidence.recent_runs(end, self.cfg.reference_window);
        let inner_runs = self.evidence.samples_since(inner, since);
        let (base, new) = if end_first {
            (end_runs, inner_runs)
        } else {
            (inner_runs, end_runs)
        };
        decide::compare_blocked(&blocks(&base, &new), &d, self.cfg.decision.threshold)
    }
}
