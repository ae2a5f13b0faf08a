use super::*;
use proptest::prelude::*;

const GOOD: f64 = 0.0;
const BAD: f64 = -0.105;
const NOISE: Noise = Noise {
    sigma: 0.03,
    log_threshold: 0.0513,
    steady: true,
};

fn run(pos: usize, log_tps: f64) -> Observation {
    Observation {
        pos,
        log_tps,
        good_level: GOOD,
        bad_level: BAD,
    }
}

/// Runs the search to the end with runs exactly at the levels of a
/// history whose first bad position is `k` (and, with `mid`, a second
/// step: positions from `k` up to `mid` halfway down). Returns the
/// positions measured and the conclusion.
fn search_clean(
    n: usize,
    k: usize,
    mid: Option<usize>,
    skip: &[usize],
) -> (Vec<usize>, Conclusion) {
    search_clean_with(n, k, mid, skip, NOISE)
}

/// [`search_clean`] reading the runs with `noise`.
fn search_clean_with(
    n: usize,
    k: usize,
    mid: Option<usize>,
    skip: &[usize],
    noise: Noise,
) -> (Vec<usize>, Conclusion) {
    let mut s = PositionSearch::new(n, PosteriorConfig::default()).unwrap();
    for &p in skip {
        s.unmeasurable(p);
    }
    let mut runs = Vec::new();
    let mut visited = Vec::new();
    loop {
        match s.next_step() {
            Step::Measure(m) => {
                assert!(visited.len() < 40 * (n + 1), "the search does not end");
                assert!(!skip.contains(&m), "measured unmeasurable {m}");
                visited.push(m);
                let level = match mid {
                    _ if m < k => GOOD,
                    Some(second) if m < second => BAD / 2.0,
                    _ => BAD,
                };
                runs.push(run(m, level));
                s.update(&runs, noise);
            }
            Step::Done(c) => return (visited, c),
        }
    }
}

#[test]
fn uniform_at_first_and_the_first_run_splits_it() {
    let s = PositionSearch::new(10, PosteriorConfig::default()).unwrap();
    assert!((s.posterior().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert_eq!(s.posterior()[0], 0.0);
    assert_eq!(s.next_step(), Step::Measure(5));
    assert_eq!(s.remaining(), 10);
    assert_eq!(s.estimated_steps_left(), 4);
    assert_eq!(
        PositionSearch::new(0, PosteriorConfig::default()).unwrap_err(),
        BisectError::Empty
    );
}

#[test]
fn one_candidate_needs_no_run() {
    let s = PositionSearch::new(1, PosteriorConfig::default()).unwrap();
    assert_eq!(s.next_step(), Step::Done(Conclusion::FirstBad(1)));
}

#[test]
fn clean_runs_find_the_step_in_about_a_bisection() {
    for (n, k) in [(400, 1), (400, 400), (400, 137), (9, 5), (2, 1), (2, 2)] {
        let (visited, c) = search_clean(n, k, None, &[]);
        assert_eq!(c, Conclusion::FirstBad(k), "n {n} k {k}: {visited:?}");
        let bits = (usize::BITS - n.leading_zeros()) as usize;
        assert!(visited.len() <= bits + 3, "n {n} k {k}: {visited:?}");
    }
}

#[test]
fn a_commit_between_two_steps_is_bad_like() {
    // Steps at 120 and 300: 120..300 are halfway down. The first step is
    // the answer.
    let (_, c) = search_clean(400, 120, Some(300), &[]);
    assert_eq!(c, Conclusion::FirstBad(120));
    // Two 10% steps in a range: its bad end is 20% down, and one run of a
    // commit between the steps (10% down) says bad-like, not "unclear".
    let mut s = PositionSearch::new(10, PosteriorConfig::default()).unwrap();
    let between = Observation {
        bad_level: 2.0 * BAD,
        ..run(5, BAD)
    };
    s.update(&[between], NOISE);
    assert!(s.bad_like(5) > 0.9, "{:?}", s.posterior());
}

#[test]
fn on_a_quiet_machine_a_commit_between_two_steps_is_strong_evidence() {
    // 0.2% noise, levels 10.5% apart, a commit halfway down: each of its
    // runs is some 26 noise widths from both levels. The search still
    // finds the first step in about a bisection, not a crawl.
    let quiet = Noise {
        sigma: 0.002,
        ..NOISE
    };
    for (n, k, mid) in [(400, 120, 300), (2200, 1815, 2144), (2200, 45, 714)] {
        let (visited, c) = search_clean_with(n, k, Some(mid), &[], quiet);
        assert_eq!(c, Conclusion::FirstBad(k), "{visited:?}");
        let bits = (usize::BITS - n.leading_zeros()) as usize;
        assert!(visited.len() <= bits + 3, "n {n} k {k}: {visited:?}");
    }
    // While the machine wanders, such a run stays weaker evidence.
    let between = Observation {
        bad_level: 2.0 * BAD,
        ..run(5, BAD)
    };
    let bad_like = |noise: Noise| {
        let mut s = PositionSearch::new(10, PosteriorConfig::default()).unwrap();
        s.update(&[between], noise);
        s.bad_like(5)
    };
    let wandering = Noise {
        steady: false,
        ..quiet
    };
    assert!(
        bad_like(quiet) > bad_like(wandering),
        "{}",
        bad_like(wandering)
    );
}

#[test]
fn unmeasurable_commits_leave_a_range_around_them() {
    let (visited, c) = search_clean(20, 8, None, &[6, 7, 8]);
    assert_eq!(
        c,
        Conclusion::Range {
            last_good: 5,
            first_bad: 9
        },
        "{visited:?}"
    );
    // Nothing measurable inside: the whole range.
    let (visited, c) = search_clean(3, 2, None, &[1, 2]);
    assert!(visited.is_empty());
    assert_eq!(
        c,
        Conclusion::Range {
            last_good: 0,
            first_bad: 3
        }
    );
}

#[test]
fn one_wild_run_does_not_decide() {
    let mut s = PositionSearch::new(10, PosteriorConfig::default()).unwrap();
    // Far below both levels: wild, nearly no evidence.
    s.update(&[run(5, -0.6)], NOISE);
    let p = s.bad_like(5);
    assert!((0.3..0.7).contains(&p), "{p}");
    // One clean bad-like run is strong but not final.
    s.update(&[run(5, BAD)], NOISE);
    assert!(s.bad_like(5) > 0.95 && matches!(s.next_step(), Step::Measure(_)));
}

#[test]
fn credible_stretch_holds_the_mass() {
    let mut s = PositionSearch::new(100, PosteriorConfig::default()).unwrap();
    s.update(&[run(40, GOOD), run(60, BAD)], NOISE);
    let (g, b) = s.credible(0.95);
    assert!(g < 40 && b > 40 && b <= 61, "({g}, {b})");
    let mass: f64 = s.posterior()[g + 1..=b].iter().sum();
    assert!(mass >= 0.95 - 1e-9, "{mass}");
}

fn observations(n: usize) -> impl Strategy<Value = Vec<Observation>> {
    prop::collection::vec((1..n, -0.4f64..0.2), 0..30).prop_map(|v| {
        v.into_iter()
            .map(|(pos, log_tps)| run(pos, log_tps))
            .collect()
    })
}

proptest! {
    #[test]
    fn the_posterior_is_a_distribution_and_its_cdf_rises(
        obs in observations(30),
        sigma in 0.002f64..0.2,
    ) {
        let mut s = PositionSearch::new(30, PosteriorConfig::default()).unwrap();
        s.update(&obs, Noise { sigma, ..NOISE });
        let p = s.posterior();
        prop_assert_eq!(p[0], 0.0);
        prop_assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0));
        prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        for m in 1..30 {
            prop_assert!(s.bad_like(m) <= s.bad_like(m + 1) + 1e-12);
        }
    }

    #[test]
    fn a_bad_level_run_moves_mass_to_at_or_before_it(
        obs in observations(30),
        m in 1usize..30,
    ) {
        let mut s = PositionSearch::new(30, PosteriorConfig::default()).unwrap();
        s.update(&obs, NOISE);
        let before = s.bad_like(m);
        let mut more = obs.clone();
        more.push(run(m, BAD));
        s.update(&more, NOISE);
        prop_assert!(s.bad_like(m) >= before - 1e-12);
        more.push(run(m, GOOD));
        more.push(run(m, GOOD));
        let mut t = PositionSearch::new(30, PosteriorConfig::default()).unwrap();
        t.update(&more, NOISE);
        prop_assert!(t.bad_like(m) <= s.bad_like(m) + 1e-12);
    }

    #[test]
    fn the_next_run_is_inside_and_measurable(
        obs in observations(25),
        skip in prop::collection::btree_set(1usize..25, 0..10),
    ) {
        let mut s = PositionSearch::new(25, PosteriorConfig::default()).unwrap();
        for &p in &skip {
            s.unmeasurable(p);
        }
        s.update(&obs, NOISE);
        match s.next_step() {
            Step::Measure(m) => prop_assert!(m > 0 && m < 25 && !skip.contains(&m)),
            Step::Done(Conclusion::FirstBad(b)) => {
                prop_assert!((1..=25).contains(&b) && (b == 25 || !skip.contains(&b)));
            }
            Step::Done(Conclusion::Range { last_good, first_bad }) => {
                prop_assert!(last_good < first_bad && first_bad <= 25);
                prop_assert!((last_good + 1..first_bad).all(|p| skip.contains(&p)));
            }
        }
    }

    #[test]
    fn clean_runs_always_find_the_step(n in 1usize..120, k_frac in 0.0f64..1.0) {
        let k = 1 + ((n - 1) as f64 * k_frac) as usize;
        let (visited, c) = search_clean(n, k, None, &[]);
        prop_assert_eq!(c, Conclusion::FirstBad(k));
        let bits = (usize::BITS - n.leading_zeros()) as usize;
        prop_assert!(visited.len() <= bits + 3, "{:?}", visited);
    }

    #[test]
    fn a_round_of_candidates_is_inside_measurable_and_in_order(
        obs in observations(25),
        skip in prop::collection::btree_set(1usize..25, 0..10),
        k in 1usize..9,
    ) {
        let mut s = PositionSearch::new(25, PosteriorConfig::default()).unwrap();
        for &p in &skip {
            s.unmeasurable(p);
        }
        s.update(&obs, NOISE);
        let round = s.candidates(k);
        prop_assert!(round.len() == k || (round.is_empty() && skip.len() == 24));
        prop_assert!(round.iter().all(|m| *m > 0 && *m < 25 && !skip.contains(m)));
        prop_assert!(round.windows(2).all(|w| w[0] <= w[1]), "{:?}", round);
        if let Step::Measure(m) = s.next_step() {
            prop_assert_eq!(s.candidates(1), vec![m]);
        }
    }

    #[test]
    fn clean_rounds_of_candidates_find_the_step_in_fewer_rounds(
        n in 2usize..400,
        k_frac in 0.0f64..1.0,
        k in 2usize..5,
    ) {
        let first_bad = 1 + ((n - 1) as f64 * k_frac) as usize;
        let (rounds, c) = search_clean_rounds(n, first_bad, k);
        prop_assert_eq!(c, Conclusion::FirstBad(first_bad));
        let bits = f64::from(usize::BITS - n.leading_zeros());
        let per_round = ((k + 1) as f64).log2();
        prop_assert!(rounds as f64 <= (bits / per_round).ceil() + 3.0, "{} rounds", rounds);
    }
}

/// Runs the search in rounds of `k` candidates with runs exactly at the
/// levels of a history whose first bad position is `first_bad`; returns
/// the rounds made and the conclusion.
fn search_clean_rounds(n: usize, first_bad: usize, k: usize) -> (usize, Conclusion) {
    let mut s = PositionSearch::new(n, PosteriorConfig::default()).unwrap();
    let mut runs = Vec::new();
    for rounds in 0.. {
        assert!(rounds < 40 * (n + 1), "the search does not end");
        if let Step::Done(c) = s.next_step() {
            return (rounds, c);
        }
        for m in s.candidates(k) {
            runs.push(run(m, if m < first_bad { GOOD } else { BAD }));
        }
        s.update(&runs, NOISE);
    }
    unreachable!("the rounds are not counted to the end")
}

#[test]
fn a_round_of_three_splits_a_uniform_posterior_in_quarters() {
    let s = PositionSearch::new(100, PosteriorConfig::default()).unwrap();
    assert_eq!(s.candidates(3), [25, 50, 75]);
    assert_eq!(s.estimated_rounds_left(3), 4);
    assert_eq!(s.estimated_rounds_left(1), s.estimated_steps_left());
}
