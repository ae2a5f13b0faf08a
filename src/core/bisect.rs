//! The search as a step/record state machine.
//!
//! Finding the first slow commit is a bisection, but the answers come from
//! noisy benchmarks that take minutes: a commit may fail to build, a verdict
//! may be unsure, and a verdict may later turn out wrong and be retracted.
//! Keeping the search pure, with the caller owning the loop (ask
//! [`Bisection::next_step`], measure, [`Bisection::record`]), makes every one
//! of those cases testable without building or benchmarking anything.
//!
//! Positions run from 0 to `n`: position 0 is the good endpoint (known
//! [`Outcome::Good`]), position `n` the bad endpoint (known [`Outcome::Bad`]).
//! The candidates are positions `1..=n`; with the candidate list from
//! `Repo::candidates` (oldest first, bad last) position `i` is
//! `candidates[i - 1]`.
//!
//! The window is `(g, b)`: `b` is the lowest Bad position and `g` the highest
//! Good position below `b`. Answers above `b` that contradict it are ignored.
//! The next position to measure is the untested, non-skipped one closest to the
//! middle of the window (the lower one on a tie), so skipped commits are worked
//! around from the middle outwards rather than stepped past one by one.

use thiserror::Error;

/// A verdict on one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Behaves like the good endpoint.
    Good,
    /// Behaves like the bad endpoint.
    Bad,
    /// Cannot be judged: unbuildable, or the measurements were unsure.
    Skip,
}

/// What the search wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Measure this position and [`Bisection::record`] the outcome.
    Measure(usize),
    /// The search is over.
    Done(Conclusion),
}

/// Where the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    /// This position is bad and the one before it is good.
    FirstBad(usize),
    /// The first bad position is in `(last_good, first_bad]`; every position
    /// strictly between was skipped, so the search cannot narrow it further.
    Range { last_good: usize, first_bad: usize },
}

/// A verdict the search cannot take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BisectError {
    /// A search needs at least one candidate.
    #[error(
        "there is nothing to search: the bad commit must come after the good one \
         (give a --good commit older than --bad)"
    )]
    Empty,
    /// The position is outside `0..=n`.
    #[error("position {pos} is outside the search (positions 0 to {n}); this is a bug in pgbisect")]
    OutOfRange { pos: usize, n: usize },
    /// The endpoints are known by definition and cannot be recorded.
    #[error(
        "position {pos} is an endpoint of the search (good is 0, bad is {n}) and cannot be \
         re-judged; this is a bug in pgbisect"
    )]
    Endpoint { pos: usize, n: usize },
}

/// The state of one bisection over positions `0..=n`.
#[derive(Debug, Clone)]
pub struct Bisection {
    /// Verdicts by position; the endpoints are always set.
    outcomes: Vec<Option<Outcome>>,
}

impl Bisection {
    /// A search over `n` candidates (positions `1..=n`, `n` being the bad
    /// endpoint). `n` must be at least 1.
    pub fn new(n: usize) -> Result<Self, BisectError> {
        if n == 0 {
            return Err(BisectError::Empty);
        }
        let mut outcomes = vec![None; n + 1];
        outcomes[0] = Some(Outcome::Good);
        outcomes[n] = Some(Outcome::Bad);
        Ok(Bisection { outcomes })
    }

    /// The number of candidates, which is also the bad endpoint's position.
    pub fn len(&self) -> usize {
        self.outcomes.len() - 1
    }

    /// Always false: a search has at least one candidate.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// What to do next: measure a position, or stop with a conclusion.
    pub fn next_step(&self) -> Step {
        let (good, bad) = self.window();
        match self.closest_to_middle(good, bad) {
            Some(pos) => Step::Measure(pos),
            None if bad == good + 1 => Step::Done(Conclusion::FirstBad(bad)),
            None => Step::Done(Conclusion::Range {
                last_good: good,
                first_bad: bad,
            }),
        }
    }

    /// Records the verdict on `pos`, replacing any earlier one.
    pub fn record(&mut self, pos: usize, outcome: Outcome) -> Result<(), BisectError> {
        let slot = self.candidate_slot(pos)?;
        *slot = Some(outcome);
        Ok(())
    }

    /// Retracts the verdict on `pos` so the search may measure it again.
    /// The endpoints and positions outside the search are left alone.
    pub fn forget(&mut self, pos: usize) {
        if let Ok(slot) = self.candidate_slot(pos) {
            *slot = None;
        }
    }

    /// The verdict recorded for `pos`, if any (the endpoints always have one).
    pub fn outcome(&self, pos: usize) -> Option<Outcome> {
        self.outcomes.get(pos).copied().flatten()
    }

    /// Untested, non-skipped positions left inside the window.
    pub fn remaining(&self) -> usize {
        let (good, bad) = self.window();
        self.untested_between(good, bad).count()
    }

    /// Measurements still needed if every answer is Good or Bad:
    /// `ceil(log2(remaining + 1))`.
    pub fn estimated_steps_left(&self) -> u32 {
        let candidates = self.remaining() + 1;
        // ceil(log2(x)) for x >= 1 is the bit width of x - 1.
        usize::BITS - (candidates - 1).leading_zeros()
    }

    /// The window `(g, b)`: the lowest Bad position and the highest Good one
    /// below it.
    fn window(&self) -> (usize, usize) {
        let n = self.len();
        let bad = self
            .outcomes
            .iter()
            .position(|o| *o == Some(Outcome::Bad))
            .unwrap_or(n);
        let good = self.outcomes[..bad]
            .iter()
            .rposition(|o| *o == Some(Outcome::Good))
            .unwrap_or(0);
        (good, bad)
    }

    fn untested_between(&self, good: usize, bad: usize) -> impl Iterator<Item = usize> + '_ {
        (good + 1..bad).filter(|&pos| self.outcomes[pos].is_none())
    }

    /// The untested position closest to the middle of `(good, bad)`; on a tie
    /// the lower one.
    fn closest_to_middle(&self, good: usize, bad: usize) -> Option<usize> {
        let twice_middle = good + bad;
        self.untested_between(good, bad)
            .min_by_key(|&pos| (2 * pos).abs_diff(twice_middle))
    }

    fn candidate_slot(&mut self, pos: usize) -> Result<&mut Option<Outcome>, BisectError> {
        let n = self.len();
        if pos > n {
            return Err(BisectError::OutOfRange { pos, n });
        }
        if pos == 0 || pos == n {
            return Err(BisectError::Endpoint { pos, n });
        }
        Ok(&mut self.outcomes[pos])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// Runs a search to the end with `answer` as the oracle; returns the
    /// positions measured in order and the conclusion.
    fn run(
        bisection: &mut Bisection,
        mut answer: impl FnMut(usize) -> Outcome,
    ) -> (Vec<usize>, Conclusion) {
        let mut visited = Vec::new();
        loop {
            match bisection.next_step() {
                Step::Measure(pos) => {
                    assert!(visited.len() <= bisection.len(), "search does not end");
                    visited.push(pos);
                    bisection.record(pos, answer(pos)).unwrap();
                }
                Step::Done(conclusion) => return (visited, conclusion),
            }
        }
    }

    fn truthful(first_bad: usize) -> impl Fn(usize) -> Outcome {
        move |pos| {
            if pos >= first_bad {
                Outcome::Bad
            } else {
                Outcome::Good
            }
        }
    }

    fn search(n: usize, answer: impl FnMut(usize) -> Outcome) -> (Vec<usize>, Conclusion) {
        run(&mut Bisection::new(n).unwrap(), answer)
    }

    fn ceil_log2(n: usize) -> usize {
        (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
    }

    #[test]
    fn one_candidate_needs_no_measurement() {
        let b = Bisection::new(1).unwrap();
        assert_eq!(b.next_step(), Step::Done(Conclusion::FirstBad(1)));
        assert_eq!(b.remaining(), 0);
        assert_eq!(b.estimated_steps_left(), 0);
    }

    #[test]
    fn zero_candidates_is_an_error() {
        assert_eq!(Bisection::new(0).unwrap_err(), BisectError::Empty);
    }

    #[test]
    fn exact_sequences_with_truthful_answers() {
        assert_eq!(search(2, truthful(1)), (vec![1], Conclusion::FirstBad(1)));
        assert_eq!(search(2, truthful(2)), (vec![1], Conclusion::FirstBad(2)));
        // Middle of (0, 3) is 1.5: the lower neighbour goes first.
        assert_eq!(
            search(3, truthful(3)),
            (vec![1, 2], Conclusion::FirstBad(3))
        );
        assert_eq!(search(3, truthful(1)), (vec![1], Conclusion::FirstBad(1)));
        assert_eq!(
            search(8, truthful(3)),
            (vec![4, 2, 3], Conclusion::FirstBad(3))
        );
        assert_eq!(
            search(8, truthful(8)),
            (vec![4, 6, 7], Conclusion::FirstBad(8))
        );
        assert_eq!(
            search(8, truthful(1)),
            (vec![4, 2, 1], Conclusion::FirstBad(1))
        );
        assert_eq!(
            search(10, truthful(7)),
            (vec![5, 7, 6], Conclusion::FirstBad(7))
        );
    }

    #[test]
    fn skips_are_probed_around_from_the_middle() {
        let skipped = [3, 4, 5];
        let answer = |pos: usize| {
            if skipped.contains(&pos) {
                Outcome::Skip
            } else {
                truthful(5)(pos)
            }
        };
        // Middle 4 skipped; 3 and 5 tie, 3 first; then 5; then 2 and 6.
        let (visited, conclusion) = search(8, answer);
        assert_eq!(visited, vec![4, 3, 5, 2, 6]);
        assert_eq!(
            conclusion,
            Conclusion::Range {
                last_good: 2,
                first_bad: 6
            }
        );
    }

    #[test]
    fn all_skipped_ends_with_the_whole_range() {
        let (visited, conclusion) = search(5, |_| Outcome::Skip);
        assert_eq!(visited, vec![2, 3, 1, 4]);
        assert_eq!(
            conclusion,
            Conclusion::Range {
                last_good: 0,
                first_bad: 5
            }
        );
    }

    #[test]
    fn contradicting_good_above_the_lowest_bad_is_ignored() {
        let mut b = Bisection::new(8).unwrap();
        b.record(4, Outcome::Bad).unwrap();
        b.record(6, Outcome::Good).unwrap();
        assert_eq!(b.next_step(), Step::Measure(2));
        assert_eq!(b.remaining(), 3);
        assert_eq!(b.estimated_steps_left(), 2);
    }

    #[test]
    fn forget_lets_a_position_be_measured_again() {
        let mut b = Bisection::new(8).unwrap();
        b.record(4, Outcome::Good).unwrap();
        assert_eq!(b.next_step(), Step::Measure(6));
        b.forget(4);
        assert_eq!(b.outcome(4), None);
        assert_eq!(b.next_step(), Step::Measure(4));
        b.record(4, Outcome::Bad).unwrap();
        b.record(4, Outcome::Good).unwrap();
        assert_eq!(b.outcome(4), Some(Outcome::Good));
    }

    #[test]
    fn endpoints_cannot_be_recorded_or_forgotten() {
        let mut b = Bisection::new(4).unwrap();
        assert_eq!(
            b.record(0, Outcome::Bad),
            Err(BisectError::Endpoint { pos: 0, n: 4 })
        );
        assert_eq!(
            b.record(4, Outcome::Good),
            Err(BisectError::Endpoint { pos: 4, n: 4 })
        );
        assert_eq!(
            b.record(5, Outcome::Good),
            Err(BisectError::OutOfRange { pos: 5, n: 4 })
        );
        b.forget(0);
        b.forget(4);
        b.forget(9);
        assert_eq!(b.outcome(0), Some(Outcome::Good));
        assert_eq!(b.outcome(4), Some(Outcome::Bad));
        assert_eq!(b.outcome(9), None);
    }

    #[test]
    fn estimated_steps_follow_log2() {
        for (n, steps) in [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (9, 4), (1024, 10)] {
            assert_eq!(
                Bisection::new(n).unwrap().estimated_steps_left(),
                steps,
                "n = {n}"
            );
        }
    }

    /// Per-position answers: 0 truthful, 1 skip, 2 lie.
    fn noisy(first_bad: usize, kinds: Vec<u8>) -> impl Fn(usize) -> Outcome {
        move |pos| match kinds[pos % kinds.len()] {
            1 => Outcome::Skip,
            2 if pos >= first_bad => Outcome::Good,
            2 => Outcome::Bad,
            _ => truthful(first_bad)(pos),
        }
    }

    fn assert_consistent(b: &Bisection, conclusion: Conclusion) {
        let (good, bad) = match conclusion {
            Conclusion::FirstBad(bad) => (bad - 1, bad),
            Conclusion::Range {
                last_good,
                first_bad,
            } => (last_good, first_bad),
        };
        assert_eq!(b.outcome(good), Some(Outcome::Good));
        assert_eq!(b.outcome(bad), Some(Outcome::Bad));
        assert!((good + 1..bad).all(|pos| b.outcome(pos) == Some(Outcome::Skip)));
    }

    proptest! {
        #[test]
        fn truthful_answers_find_the_first_bad_in_log_steps(
            (n, first_bad) in (1usize..500).prop_flat_map(|n| (Just(n), 1..=n))
        ) {
            let (visited, conclusion) = search(n, truthful(first_bad));
            prop_assert_eq!(conclusion, Conclusion::FirstBad(first_bad));
            prop_assert!(visited.len() <= ceil_log2(n) + 1);
        }

        #[test]
        fn skips_give_the_first_bad_or_a_range_around_it(
            (n, first_bad) in (1usize..500).prop_flat_map(|n| (Just(n), 1..=n)),
            kinds in prop::collection::vec(0u8..2, 1..40),
        ) {
            let (visited, conclusion) = search(n, noisy(first_bad, kinds));
            prop_assert!(visited.len() < n.max(2));
            match conclusion {
                Conclusion::FirstBad(bad) => prop_assert_eq!(bad, first_bad),
                Conclusion::Range { last_good, first_bad: bad } => {
                    prop_assert!(last_good < first_bad && first_bad <= bad);
                    prop_assert!(bad > last_good + 1);
                }
            }
        }

        #[test]
        fn any_answers_end_within_n_steps_visiting_each_position_once(
            (n, first_bad) in (1usize..500).prop_flat_map(|n| (Just(n), 1..=n)),
            kinds in prop::collection::vec(0u8..3, 1..40),
        ) {
            let mut b = Bisection::new(n).unwrap();
            let (visited, conclusion) = run(&mut b, noisy(first_bad, kinds));
            prop_assert!(visited.len() < n.max(2));
            let distinct: HashSet<usize> = visited.iter().copied().collect();
            prop_assert_eq!(distinct.len(), visited.len());
            prop_assert!(visited.iter().all(|&pos| pos > 0 && pos < n));
            assert_consistent(&b, conclusion);
        }

        #[test]
        fn forgetting_the_lies_and_asking_again_finds_the_truth(
            (n, first_bad) in (1usize..500).prop_flat_map(|n| (Just(n), 1..=n)),
            kinds in prop::collection::vec(0u8..3, 1..40),
        ) {
            let mut b = Bisection::new(n).unwrap();
            let answer = noisy(first_bad, kinds);
            let (visited, _) = run(&mut b, &answer);
            let truth = truthful(first_bad);
            for &pos in &visited {
                if answer(pos) != truth(pos) {
                    b.forget(pos);
                }
            }
            let (again, conclusion) = run(&mut b, &truth);
            prop_assert_eq!(conclusion, Conclusion::FirstBad(first_bad));
            let first: HashSet<usize> = visited.iter().copied().collect();
            prop_assert!(again.iter().all(|pos| !first.contains(pos) || truth(*pos) != answer(*pos)));
        }
    }
}
