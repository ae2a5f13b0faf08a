//! `--measure auto`: which measure a hunt decides on, chosen from its
//! endpoints measured both ways.
//!
//! Instruction counts repeat to about 0.2% where tps moves 3-6%, so a hunt
//! on counts settles a commit in a run or two where one on tps needs many.
//! But counts see only the instructions the server executes in user
//! space: a slowdown made of waiting (a lock, I/O, a sleep, the scheduler
//! at 128 clients) or of the kernel's work shows in tps and not in counts.
//! So both endpoints are measured both ways, interleaved, until the two
//! comparisons say which kind of slowdown this is ([`pick`]):
//!
//! - the counts rose by at least the threshold, and tps dropped by no more
//!   than that rise explains (the intervals meet, or tps is not yet
//!   clear): the hunt runs on counts;
//! - tps dropped by at least the threshold and the counts surely moved
//!   less, or tps dropped by clearly more than the counts explain (its
//!   whole interval below theirs): the hunt runs on tps;
//! - the counts rose but tps surely held: tps, which is what users feel;
//! - neither shows a slowdown of the threshold: counts, which say so in
//!   the fewest runs.
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
/// counts; `None` while more runs may tell. `at_cap`: no more runs will
/// be made, so an answer is given whatever is still unclear.
pub fn pick(tps: &Comparison, counts: &Comparison, at_cap: bool) -> Option<Picked> {
    use Verdict::{Regressed, Unchanged, Unclear};
    let t = tps.change;
    let c = counts.change;
    let counted = Measure::Instructions.change_text(&c);
    let more_than_counts_explain = t.high_pct < c.low_pct;
    let picked = |measure: Measure, why: String| Some(Picked { measure, why });
    match (counts.verdict, tps.verdict) {
        (Regressed, Regressed | Unclear) if more_than_counts_explain => picked(
            Measure::Tps,
            format!(
                "tps fell {t}, by more than the counts' rise ({counted}) explains: most of \
                 the slowdown is waiting, the kernel's work or contention, which counts \
                 miss; the hunt runs on tps"
            ),
        )
        .filter(|_| tps.verdict == Regressed || at_cap),
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
                "the counts rose {counted}, and tps ({t}) cannot tell a change of that size \
                 from its noise: the hunt runs on instruction counts"
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
        pick(&tps, &counts, false).map(|p| p.measure)
    }

    #[test]
    fn counts_that_explain_the_drop_of_tps_decide() {
        // A 6% rise of instructions, tps down 5% with a wide interval.
        let counts = cmp(Verdict::Regressed, (-5.7, -5.8, -5.6));
        let tps = cmp(Verdict::Regressed, (-5.0, -9.0, -1.5));
        let p = pick(&tps, &counts, false).unwrap();
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
        let p = pick(&tps, &counts, false).unwrap();
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
        assert_eq!(
            pick(&tps, &counts, true).map(|p| p.measure),
            Some(Measure::Tps)
        );
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
                pick(&unclear, &counts, true).map(|p| p.measure),
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
        ) {
            let at_cap = pick(&tps, &counts, true);
            prop_assert!(at_cap.is_some());
            if tps.verdict == Verdict::Regressed && counts.verdict == Verdict::Unchanged {
                prop_assert_eq!(at_cap.unwrap().measure, Measure::Tps);
            }
            if let Some(early) = pick(&tps, &counts, false) {
                prop_assert_eq!(Some(early), pick(&tps, &counts, true));
            }
        }
    }
}
