//! `--measure auto`: which measure a hunt decides on, chosen from its
//! endpoints measured both ways.
//!
//! Instruction counts repeat to about 0.2% where tps moves 3-6%, so a hunt
//! on counts settles a commit in a run or two where one on tps needs many.
//! But counts see only the instructions the server executes in user
//! space: a slowdown made of waiting (a lock, I/O, a sleep, the scheduler
//! at 128 clients) or of the kernel's work shows in tps and not in counts.
//! So both endpoints are measured both ways, interleaved, until the two
//! comparisons say which kind of slowdown this is ([`pick`]).
//!
//! Both comparisons are the ones the hunt makes of its endpoints, at the
//! level it makes them ([`crate::engine::hunt::endpoint_check`]): a
//! measure chosen on a drop the hunt's own check cannot confirm sends the
//! hunt to its run cap for an inconclusive end. The rule:
//!
//! - the counts rose by at least the threshold, and tps dropped by no more
//!   than that rise explains (the intervals meet, or tps is not clear):
//!   the hunt runs on counts;
//! - tps dropped clearly and the counts surely moved less than the
//!   threshold, or tps dropped clearly by more than the counts explain
//!   (its whole interval below theirs): the hunt runs on tps;
//! - tps dropped by more than the counts explain but stays unclear at the
//!   run cap, while the counts rose by the threshold: counts, which find
//!   the commits behind the rise (a hunt on tps would end inconclusive on
//!   the same runs);
//! - the counts rose but tps surely held: tps, which is what users feel;
//! - neither shows a slowdown of the threshold: counts, which say so in
//!   the fewest runs;
//! - tps stays unclear at the run cap and the counts surely rose by at
//!   least half the threshold but less than all of it, a rise that can
//!   explain what tps saw: counts. The threshold applies to whichever
//!   measure decides, so that hunt ends at its endpoints with no
//!   regression of the threshold's size, in a few runs, and the choice
//!   says which threshold would hunt the rise. A hunt on tps would spend
//!   its run cap and end inconclusive;
//! - tps stays unclear at the run cap and the counts saw no such rise
//!   (a slowdown of waiting may hide in tps's noise): tps, whose hunt
//!   then says it could not tell.
//!
//! Both comparisons are of a figure where higher is better: tps, and the
//! transactions a billion instructions buy
//! ([`super::counts::transactions_per_billion`]), so a rise of
//! instructions is a drop, as a drop of tps is.

use super::counts::Measure;
use super::decide::{Comparison, Verdict};
use serde::{Deserialize, Serialize};

/// The measure picked, and why, in words for the hunt's notes and report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Picked {
    pub measure: Measure,
    pub why: String,
}

/// Which measure decides, from the endpoints compared on tps and on
/// counts as the hunt compares them; `None` while more runs may tell.
/// `threshold`: the smallest drop worth reporting (0.05 = 5%); `at_cap`:
/// no more runs will be made, so an answer is given whatever is still
/// unclear.
pub fn pick(tps: &Comparison, counts: &Comparison, threshold: f64, at_cap: bool) -> Option<Picked> {
    use Verdict::{Regressed, Unchanged, Unclear};
    let t = tps.change;
    let c = counts.change;
    let counted = Measure::Instructions.change_text(&c);
    let more_than_counts_explain = t.high_pct < c.low_pct;
    let picked = |measure: Measure, why: String| Some(Picked { measure, why });
    match (counts.verdict, tps.verdict) {
        (Regressed, Regressed) if more_than_counts_explain => picked(
            Measure::Tps,
            format!(
                "tps fell {t}, by more than the counts' rise ({counted}) explains: most of \
                 the slowdown is waiting, the kernel's work or contention, which counts \
                 miss; the hunt runs on tps"
            ),
        ),
        (Regressed, Unclear) if more_than_counts_explain && !at_cap => None,
        (Regressed, Unclear) if more_than_counts_explain => picked(
            Measure::Instructions,
            format!(
                "tps fell {t}, by more than the counts' rise ({counted}) explains, but the \
                 hunt's check cannot tell its drop from its noise within the run cap: the \
                 hunt runs on instruction counts and finds the commits behind the rise; \
                 the rest of the drop (waiting, the kernel's work) stays unexplained"
            ),
        ),
        (Regressed, Regressed) => picked(
            Measure::Instructions,
            format!(
                "the counts rose {counted}, which explains the drop of tps ({t}): the hunt \
                 runs on instruction counts"
            ),
        ),
        (Regressed, Unclear) => picked(
            Measure::Instructions,
            format!(
                "the counts rose {counted}, and tps ({t}) has not settled on as many runs: \
                 the hunt runs on instruction counts"
            ),
        ),
        (Regressed, Unchanged) => picked(
            Measure::Tps,
            format!(
                "the counts rose {counted} but tps held ({t}): the extra instructions do \
                 not cost this workload time; the hunt runs on tps"
            ),
        ),
        (Unchanged, Regressed) => picked(
            Measure::Tps,
            format!(
                "tps fell {t} while the counts moved {counted}, less than the threshold: \
                 the slowdown is waiting, the kernel's work or contention, which counts \
                 miss; the hunt runs on tps"
            ),
        ),
        (Unchanged, Unchanged) => picked(
            Measure::Instructions,
            format!(
                "neither tps ({t}) nor the counts ({counted}) moved by the threshold: the \
                 hunt runs on instruction counts, which say so in the fewest runs"
            ),
        ),
        (Unchanged, Unclear)
            if at_cap && c.high_pct <= -50.0 * threshold && !more_than_counts_explain =>
        {
            let (pct, under) = (threshold * 100.0, (-c.high_pct * 10.0).floor() / 10.0);
            picked(
                Measure::Instructions,
                format!(
                    "the counts rose {counted}, under the {pct}% threshold, and tps ({t}) \
                     cannot tell its drop from that rise at the hunt's level: the hunt runs \
                     on instruction counts, where the threshold applies, and finds no \
                     regression of its size; give a --threshold under {under:.1}% to hunt \
                     the rise"
                ),
            )
        }
        (Unchanged, Unclear) if at_cap => picked(
            Measure::Tps,
            format!(
                "the counts moved {counted}, less than the threshold, and tps ({t}) stayed \
                 unclear: a slowdown counts miss may hide in its noise; the hunt runs on tps"
            ),
        ),
        (Unclear, _) if at_cap => picked(
            Measure::Tps,
            format!(
                "the counts ({counted}) stayed unclear: the hunt runs on tps ({t}), what \
                 users are told"
            ),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::{Change, Method};
    use proptest::prelude::*;

    fn cmp(verdict: Verdict, (pct, low_pct, high_pct): (f64, f64, f64)) -> Comparison {
        Comparison {
            verdict,
            change: Change {
                pct,
                low_pct,
                high_pct,
                confidence: 0.95,
            },
            p_value: 0.01,
            method: Method::WelchT,
            n_base: 3,
            n_new: 3,
        }
    }

    fn picked(tps: Comparison, counts: Comparison) -> Option<Measure> {
        pick(&tps, &counts, 0.05, false).map(|p| p.measure)
    }

    #[test]
    fn counts_that_explain_the_drop_of_tps_decide() {
        // A 6% rise of instructions, tps down 5% with a wide interval.
        let counts = cmp(Verdict::Regressed, (-5.7, -5.8, -5.6));
        let tps = cmp(Verdict::Regressed, (-5.0, -9.0, -1.5));
        let p = pick(&tps, &counts, 0.05, false).unwrap();
        assert_eq!(p.measure, Measure::Instructions);
        assert!(p.why.contains("+6.04%"), "{}", p.why);
        // tps not clear yet: the counts already tell.
        let tps = cmp(Verdict::Unclear, (-2.0, -6.0, 2.0));
        assert_eq!(picked(tps, counts), Some(Measure::Instructions));
    }

    #[test]
    fn a_drop_the_counts_do_not_see_is_hunted_on_tps() {
        let counts = cmp(Verdict::Unchanged, (-0.1, -0.2, 0.0));
        let tps = cmp(Verdict::Regressed, (-30.0, -35.0, -25.0));
        let p = pick(&tps, &counts, 0.05, false).unwrap();
        assert_eq!(p.measure, Measure::Tps);
        assert!(p.why.contains("waiting"), "{}", p.why);
    }

    #[test]
    fn a_drop_far_larger_than_the_counts_rise_is_hunted_on_tps() {
        let counts = cmp(Verdict::Regressed, (-6.0, -6.1, -5.9));
        let tps = cmp(Verdict::Regressed, (-40.0, -45.0, -35.0));
        assert_eq!(picked(tps, counts), Some(Measure::Tps));
        // While tps is unclear but already below the counts: more runs.
        let tps = cmp(Verdict::Unclear, (-40.0, -80.0, -7.0));
        assert_eq!(picked(tps, counts), None);
        // Still unclear at the cap: a hunt on tps would end inconclusive
        // on these runs; the counts find the commits behind their rise.
        let p = pick(&tps, &counts, 0.05, true).unwrap();
        assert_eq!(p.measure, Measure::Instructions, "{}", p.why);
        assert!(p.why.contains("stays unexplained"), "{}", p.why);
    }

    /// hashagg-small-tlist at a 3% threshold: 2.41% more instructions a
    /// transaction, runs that agree to a millionth; tps -6.1% [-11.8%,
    /// -0.1%] at the comparison's full level, [-11.8%, +0.0%] at the
    /// level of the hunt's endpoint check.
    fn hashagg() -> (Comparison, Comparison, Comparison) {
        let counts = cmp(Verdict::Unchanged, (-2.353, -2.356, -2.350));
        let tps_at_alpha = cmp(Verdict::Regressed, (-6.1, -11.8, -0.1));
        let tps_at_check = cmp(Verdict::Unclear, (-6.1, -11.8, 0.0));
        (counts, tps_at_alpha, tps_at_check)
    }

    #[test]
    fn a_rise_under_the_threshold_that_explains_an_unclear_tps_is_hunted_on_counts() {
        let (counts, _, tps) = hashagg();
        assert_eq!(pick(&tps, &counts, 0.03, false), None, "tps may still tell");
        let p = pick(&tps, &counts, 0.03, true).unwrap();
        assert_eq!(p.measure, Measure::Instructions, "{}", p.why);
        assert!(p.why.contains("+2.41%"), "{}", p.why);
        assert!(p.why.contains("under the 3% threshold"), "{}", p.why);
        assert!(p.why.contains("--threshold under 2.3%"), "{}", p.why);
        // A rise of less than half the threshold explains nothing worth
        // a hunt: a slowdown of waiting may hide in tps's noise.
        let small = cmp(Verdict::Unchanged, (-1.0, -1.01, -0.99));
        let p = pick(&tps, &small, 0.03, true).unwrap();
        assert_eq!(p.measure, Measure::Tps, "{}", p.why);
    }

    #[test]
    fn a_drop_of_tps_clear_at_the_hunts_level_is_hunted_on_tps() {
        // Had the hunt's check seen what the full level saw, tps decides.
        let (counts, tps, _) = hashagg();
        let p = pick(&tps, &counts, 0.03, false).unwrap();
        assert_eq!(p.measure, Measure::Tps, "{}", p.why);
    }

    #[test]
    fn a_sleep_the_counts_do_not_see_is_hunted_on_tps_clear_or_not() {
        let flat = cmp(Verdict::Unchanged, (0.01, -0.02, 0.04));
        let clear = cmp(Verdict::Regressed, (-8.0, -12.0, -4.0));
        assert_eq!(picked(clear, flat), Some(Measure::Tps));
        let unclear = cmp(Verdict::Unclear, (-6.1, -11.8, 0.0));
        assert_eq!(pick(&unclear, &flat, 0.03, false), None);
        let p = pick(&unclear, &flat, 0.03, true).unwrap();
        assert_eq!(p.measure, Measure::Tps, "{}", p.why);
    }

    #[test]
    fn counts_that_rose_where_tps_surely_held_give_tps() {
        let counts = cmp(Verdict::Regressed, (-6.0, -6.1, -5.9));
        let tps = cmp(Verdict::Unchanged, (0.5, -1.0, 2.0));
        assert_eq!(picked(tps, counts), Some(Measure::Tps));
    }

    #[test]
    fn no_drop_either_way_is_told_by_counts() {
        let counts = cmp(Verdict::Unchanged, (0.0, -0.1, 0.1));
        let tps = cmp(Verdict::Unchanged, (1.0, -2.0, 3.0));
        assert_eq!(picked(tps, counts), Some(Measure::Instructions));
    }

    #[test]
    fn unclear_waits_for_runs_then_falls_back_to_tps() {
        let unclear = cmp(Verdict::Unclear, (-2.0, -8.0, 4.0));
        let unchanged = cmp(Verdict::Unchanged, (0.0, -0.1, 0.1));
        assert_eq!(picked(unclear, unclear), None);
        assert_eq!(picked(unclear, unchanged), None);
        for counts in [unclear, unchanged] {
            assert_eq!(
                pick(&unclear, &counts, 0.05, true).map(|p| p.measure),
                Some(Measure::Tps)
            );
        }
    }

    fn verdict() -> impl Strategy<Value = Verdict> {
        prop_oneof![
            Just(Verdict::Regressed),
            Just(Verdict::Unchanged),
            Just(Verdict::Unclear)
        ]
    }

    fn comparison() -> impl Strategy<Value = Comparison> {
        (verdict(), -50.0..10.0f64, 0.0..20.0f64)
            .prop_map(|(v, pct, half)| cmp(v, (pct, pct - half, pct + half)))
    }

    proptest! {
        /// At the cap an answer is always given; a slowdown that tps
        /// confirmed and the counts surely did not is never hunted on counts.
        #[test]
        fn the_cap_always_answers_and_an_unseen_drop_is_never_counted(
            tps in comparison(),
            counts in comparison(),
            threshold in 0.01..0.1f64,
        ) {
            let at_cap = pick(&tps, &counts, threshold, true);
            prop_assert!(at_cap.is_some());
            let measure = at_cap.map(|p| p.measure);
            if tps.verdict == Verdict::Regressed && counts.verdict == Verdict::Unchanged {
                prop_assert_eq!(measure, Some(Measure::Tps));
            }
            // A hunt on tps that its check leaves unclear at the cap is
            // never chosen over counts that saw a rise of the threshold.
            if tps.verdict == Verdict::Unclear && counts.verdict == Verdict::Regressed {
                prop_assert_eq!(measure, Some(Measure::Instructions));
            }
            if let Some(early) = pick(&tps, &counts, threshold, false) {
                prop_assert_eq!(Some(early), pick(&tps, &counts, threshold, true));
            }
        }
    }
}
