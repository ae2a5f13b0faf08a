//! Where a series of nightly measurements changed level: E-Divisive means.
//!
//! A hunt starts from two commits a person already compared. Watching
//! master starts from a series (one figure a night, in commit order) and
//! has to find where it moved on its own, without a person's guess of
//! where to look and without crying wolf on a noisy night. This is the
//! method Apache Otava (formerly Hunter) and MongoDB's performance CI use:
//! E-Divisive means (Matteson and James, 2014, with alpha = 1), a
//! divergence between the two sides of every possible split, the best
//! split kept only if fewer than `significance` of random reorderings of
//! the same values split as well (a permutation test), then the same
//! again inside each side.
//!
//! Why this and not a t-test over windows: the statistic compares whole
//! distributions through absolute differences, so one wild night moves
//! it by its distance, not by its square, and no normality is assumed;
//! the permutation test makes the false-alarm rate the significance
//! level whatever the noise looks like. The reorderings are drawn from a
//! seeded generator, so the same series gives the same answer every
//! night it is read again.
//!
//! Pure: no clock, no files; property tests below.

use crate::core::stats::median;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// How hard to look, and how sure to be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeOptions {
    /// Fewest points on either side of a change: a level needs this many
    /// nights before it counts as one.
    pub min_segment: usize,
    /// Largest permutation p-value that still makes a change.
    pub significance: f64,
    /// Random reorderings per test; at least `1 / significance` of them
    /// for the smallest p-value to be reachable.
    pub permutations: usize,
    /// Seed of the reorderings.
    pub seed: u64,
}

impl Default for ChangeOptions {
    fn default() -> Self {
        ChangeOptions {
            min_segment: 5,
            significance: 0.01,
            permutations: 199,
            seed: 0x7067_6269_7365_6374,
        }
    }
}

/// One change: the series is at one level before `index` and another from
/// `index` on.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangePoint {
    /// The first point of the new level.
    pub index: usize,
    /// The permutation test's p-value for this split within its segment.
    pub p_value: f64,
    /// Median of the segment before the change (up to the previous change).
    pub before: f64,
    /// Median of the segment after the change (up to the next change).
    pub after: f64,
}

impl ChangePoint {
    /// `after` relative to `before`: -0.05 is a 5% drop.
    pub fn relative(&self) -> f64 {
        if self.before == 0.0 {
            return 0.0;
        }
        self.after / self.before - 1.0
    }
}

/// Every significant change in `series`, in order of index.
pub fn change_points(series: &[f64], options: &ChangeOptions) -> Vec<ChangePoint> {
    let groups: Vec<&[f64]> = series.chunks(1).collect();
    change_points_by_group(&groups, options)
}

/// Changes between groups of points measured together (the commits one
/// night measured): a change falls only between two groups, each side
/// holds at least `min_segment` groups, and the permutation test reorders
/// whole groups. A night whose points all read low together (a slow spell
/// the reference did not share) is then one odd night, not `k` odd points
/// that look like a level of their own. A change's `index` is the first
/// group of the new level.
pub fn change_points_by_group(groups: &[&[f64]], options: &ChangeOptions) -> Vec<ChangePoint> {
    let min = options.min_segment.max(1);
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut segments = vec![(0, groups.len())];
    loop {
        // The best split over all segments still open, as in the paper's
        // hierarchical procedure: the strongest change is tested first.
        let best = segments
            .iter()
            .enumerate()
            .filter_map(|(at, &(start, end))| {
                best_group_split(&groups[start..end], min).map(|(g, q)| (at, start + g, q))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let Some((at, index, q)) = best else { break };
        let (start, end) = segments[at];
        let p = permutation_p(&groups[start..end], min, q, options, &mut rng);
        if p > options.significance {
            break;
        }
        found.push((index, p));
        segments.splice(at..=at, [(start, index), (index, end)]);
    }
    found.sort_by_key(|&(index, _)| index);
    with_levels(groups, &found)
}

/// The medians on each side of each change, between its neighbours.
fn with_levels(groups: &[&[f64]], found: &[(usize, f64)]) -> Vec<ChangePoint> {
    let mut bounds = vec![0];
    bounds.extend(found.iter().map(|&(index, _)| index));
    bounds.push(groups.len());
    found
        .iter()
        .enumerate()
        .map(|(k, &(index, p_value))| ChangePoint {
            index,
            p_value,
            before: median(&groups[bounds[k]..index].concat()),
            after: median(&groups[index..bounds[k + 2]].concat()),
        })
        .collect()
}

/// The split of `xs` with the largest divergence, each side at least `min`
/// long: `(tau, q)` where `xs[..tau]` and `xs[tau..]` are the sides.
pub fn best_split(xs: &[f64], min: usize) -> Option<(usize, f64)> {
    let taus: Vec<usize> = (min.max(2)..=xs.len().saturating_sub(min.max(2))).collect();
    best_of(xs, &taus).map(|(k, q)| (taus[k], q))
}

/// The best split between groups, each side at least `min` groups: `(g, q)`
/// with `groups[..g]` and `groups[g..]` the sides.
fn best_group_split(groups: &[&[f64]], min: usize) -> Option<(usize, f64)> {
    let xs = groups.concat();
    let mut taus = Vec::new();
    let mut splits = Vec::new();
    let mut tau = 0;
    for (g, group) in groups
        .iter()
        .enumerate()
        .take(groups.len().saturating_sub(min))
    {
        tau += group.len();
        // Each side needs two points for its within-sum to mean anything.
        if g + 1 >= min && tau >= 2 && xs.len() - tau >= 2 {
            taus.push(tau);
            splits.push(g + 1);
        }
    }
    best_of(&xs, &taus).map(|(k, q)| (splits[k], q))
}

/// The largest divergence among the splits `taus` (ascending, each side at
/// least two points): `(k, q)` for `taus[k]`.
///
/// `q(tau) = tau (n - tau) / n * (2 B / (tau (n - tau)) - W_L / C(tau, 2) -
/// W_R / C(n - tau, 2))`, with B the sum of |x_i - x_j| across the split
/// and W_L, W_R the sums within each side: all of them kept as running
/// sums, so every split of n points costs O(n^2) together.
fn best_of(xs: &[f64], taus: &[usize]) -> Option<(usize, f64)> {
    let n = xs.len();
    let first = *taus.first()?;
    let total: f64 = pair_sum(xs);
    // Sums within the left side (first tau points) and the right side.
    let mut left = pair_sum(&xs[..first]);
    let mut right = pair_sum(&xs[first..]);
    let mut at = first;
    let mut best: Option<(usize, f64)> = None;
    for (k, &tau) in taus.iter().enumerate() {
        while at < tau {
            // Point `at` moves from the right side to the left.
            let x = xs[at];
            left += xs[..at].iter().map(|y| (x - y).abs()).sum::<f64>();
            right -= xs[at + 1..].iter().map(|y| (x - y).abs()).sum::<f64>();
            at += 1;
        }
        let between = total - left - right;
        let (l, r) = (tau as f64, (n - tau) as f64);
        let q = l * r / n as f64
            * (2.0 * between / (l * r)
                - left / (l * (l - 1.0) / 2.0)
                - right / (r * (r - 1.0) / 2.0));
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((k, q));
        }
    }
    best
}

/// Sum of |x_i - x_k| over all pairs i < k.
fn pair_sum(xs: &[f64]) -> f64 {
    // Sorted, each point is the larger of `i` pairs and the smaller of the
    // rest: O(n log n) instead of O(n^2).
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, x)| x * (2.0 * i as f64 - n + 1.0))
        .sum()
}

/// Share of reorderings of the groups whose best split diverges at least
/// `q`, counting the observed order as one of them (so never 0). Stops as
/// soon as the share can no longer fall to the significance level: the
/// p-value of a split that is not a change is then only a lower bound, and
/// the nightly check of a flat series costs a few reorderings, not all.
fn permutation_p(
    groups: &[&[f64]],
    min: usize,
    q: f64,
    options: &ChangeOptions,
    rng: &mut StdRng,
) -> f64 {
    let total = (options.permutations + 1) as f64;
    let mut shuffled = groups.to_vec();
    let mut as_large = 0usize;
    for _ in 0..options.permutations {
        shuffled.shuffle(rng);
        if best_group_split(&shuffled, min).is_some_and(|(_, qs)| qs >= q) {
            as_large += 1;
            if (as_large + 1) as f64 / total > options.significance {
                break;
            }
        }
    }
    (as_large + 1) as f64 / total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::distr::Distribution;

    fn noisy(levels: &[(usize, f64)], noise: f64, seed: u64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let normal = statrs::distribution::Normal::new(0.0, noise).expect("valid normal");
        levels
            .iter()
            .flat_map(|&(count, level)| std::iter::repeat_n(level, count))
            .map(|level| level * (1.0 + normal.sample(&mut rng)))
            .collect()
    }

    fn brute_force(xs: &[f64], min: usize) -> Option<(usize, f64)> {
        let n = xs.len();
        let sum = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .flat_map(|x| b.iter().map(move |y| (x - y).abs()))
                .sum()
        };
        (min..=n.checked_sub(min)?)
            .map(|tau| {
                let (a, b) = xs.split_at(tau);
                let (l, r) = (tau as f64, (n - tau) as f64);
                let within = |s: &[f64], k: f64| sum(s, s) / 2.0 / (k * (k - 1.0) / 2.0);
                let q =
                    l * r / n as f64 * (2.0 * sum(a, b) / (l * r) - within(a, l) - within(b, r));
                (tau, q)
            })
            .fold(None, |best: Option<(usize, f64)>, (tau, q)| match best {
                Some((_, b)) if b >= q => best,
                _ => Some((tau, q)),
            })
    }

    #[test]
    fn a_flat_series_has_no_change() {
        let series = noisy(&[(60, 1000.0)], 0.02, 1);
        assert_eq!(change_points(&series, &ChangeOptions::default()), vec![]);
    }

    #[test]
    fn a_five_percent_step_is_found_where_it_landed() {
        let series = noisy(&[(30, 1000.0), (30, 950.0)], 0.01, 2);
        let found = change_points(&series, &ChangeOptions::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 30);
        assert!((found[0].relative() + 0.05).abs() < 0.01, "{found:?}");
    }

    #[test]
    fn two_steps_are_both_found() {
        let series = noisy(&[(20, 1000.0), (20, 900.0), (20, 1000.0)], 0.01, 3);
        let found = change_points(&series, &ChangeOptions::default());
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![20, 40], "{found:?}");
        assert!(found[0].relative() < -0.08 && found[1].relative() > 0.08);
    }

    #[test]
    fn one_wild_night_is_not_a_change() {
        let mut series = noisy(&[(60, 1000.0)], 0.01, 4);
        series[31] = 300.0;
        assert_eq!(change_points(&series, &ChangeOptions::default()), vec![]);
    }

    fn by_night(points: &[f64], per_night: usize) -> Vec<&[f64]> {
        points.chunks(per_night).collect()
    }

    #[test]
    fn a_last_night_that_read_low_throughout_is_not_a_change() {
        let mut points = noisy(&[(60, 1000.0)], 0.01, 5);
        for p in &mut points[57..60] {
            *p *= 0.88;
        }
        let options = ChangeOptions {
            min_segment: 2,
            ..Default::default()
        };
        assert_eq!(
            change_points_by_group(&by_night(&points, 3), &options),
            vec![]
        );
        // Read point by point, the same night is a new level.
        let alone = ChangeOptions {
            min_segment: 3,
            ..Default::default()
        };
        assert_ne!(change_points(&points, &alone), vec![]);
    }

    #[test]
    fn a_step_between_nights_is_found_at_its_night() {
        let points = noisy(&[(30, 1000.0), (30, 950.0)], 0.01, 6);
        let options = ChangeOptions {
            min_segment: 2,
            ..Default::default()
        };
        let found = change_points_by_group(&by_night(&points, 3), &options);
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), vec![10]);
    }

    #[test]
    fn too_short_a_series_says_nothing() {
        assert_eq!(change_points(&[], &ChangeOptions::default()), vec![]);
        assert_eq!(
            change_points(&[1.0, 2.0, 3.0], &ChangeOptions::default()),
            vec![]
        );
        assert_eq!(best_split(&[1.0; 9], 5), None);
    }

    #[test]
    fn pair_sum_is_the_sum_over_pairs() {
        let xs: [f64; 4] = [3.0, -1.0, 4.0, 1.5];
        let direct: f64 = (0..4)
            .flat_map(|i| (i + 1..4).map(move |k| (i, k)))
            .map(|(i, k)| (xs[i] - xs[k]).abs())
            .sum();
        assert!((pair_sum(&xs) - direct).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn the_running_sums_agree_with_the_definition(
            xs in prop::collection::vec(-1000.0f64..1000.0, 4..40),
            min in 2usize..6,
        ) {
            let fast = best_split(&xs, min);
            let slow = brute_force(&xs, min);
            match (fast, slow) {
                (None, None) => {}
                (Some((_, qf)), Some((_, qs))) => {
                    prop_assert!((qf - qs).abs() <= 1e-6 * qs.abs().max(1.0), "{qf} vs {qs}");
                }
                other => prop_assert!(false, "{other:?}"),
            }
        }

        #[test]
        fn changes_are_ordered_inside_and_at_least_a_segment_apart(
            xs in prop::collection::vec(0.0f64..100.0, 0..50),
            min in 2usize..6,
        ) {
            let options = ChangeOptions { min_segment: min, permutations: 49, ..Default::default() };
            let found = change_points(&xs, &options);
            let mut last = 0;
            for change in &found {
                prop_assert!(change.index >= last + min);
                prop_assert!(change.p_value > 0.0 && change.p_value <= options.significance);
                last = change.index;
            }
            prop_assert!(found.is_empty() || xs.len() - last >= min);
        }

        #[test]
        fn doubling_every_value_moves_no_change(
            xs in prop::collection::vec(0.0f64..100.0, 10..40),
        ) {
            let options = ChangeOptions { permutations: 49, significance: 0.1, ..Default::default() };
            let doubled: Vec<f64> = xs.iter().map(|x| x * 2.0).collect();
            let at = |s: &[f64]| change_points(s, &options).iter().map(|c| c.index).collect::<Vec<_>>();
            prop_assert_eq!(at(&xs), at(&doubled));
        }
    }
}
