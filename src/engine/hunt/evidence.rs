//! Every run a hunt has made, and the questions its decisions ask of them.
//!
//! The driver ([`super::Hunt`]) decides what to measure next; these are the
//! read-only queries behind those decisions: the level of a commit near
//! the current time, the run-to-run noise, whether the machine's speed
//! wanders, the runs of two commits made side by side. They depend on the
//! runs alone, so they are tested here with literal runs, without a lab.
//!
//! A hunt over several hosts makes a round of runs at once, one on every
//! host. Hosts differ in speed and noise, so every query that mixes runs
//! asks it of each host's runs alone: a level is a host's level, noise
//! and drift are measured within a host, runs are paired side by side
//! only on one host, and comparisons get the runs grouped by host (see
//! [`crate::core::decide::compare_blocked`]). With one host every query
//! is what it was before there were hosts.

use crate::core::decide::Block;
use crate::core::stats;
use crate::report::findings::RunSample;

/// How many runs a commit's level rests on while the machine drifts.
pub(super) const DRIFT_WINDOW: usize = 3;

/// Rounds more than this many apart are not paired side by side.
pub(super) const PAIR_GAP: u64 = 3;

/// Which runs of a pair a side-by-side comparison counts: those made
/// during earlier checks of the same pair, and every run from `since` on.
/// A pair the search proposes again after its check refused it is judged
/// on all its side-by-side runs, not on a fresh handful that may, by
/// chance, say what the earlier ones did not.
#[derive(Debug, Clone)]
pub(super) struct Spans {
    /// Runs `first..=last` of each earlier check.
    earlier: Vec<(u64, u64)>,
    since: u64,
}

impl Spans {
    /// Every run from `since` on.
    pub(super) fn since(since: u64) -> Spans {
        Spans::after(Vec::new(), since)
    }

    /// The runs of the `earlier` checks, and every run from `since` on.
    pub(super) fn after(earlier: Vec<(u64, u64)>, since: u64) -> Spans {
        Spans { earlier, since }
    }

    /// The first run of the latest span.
    pub(super) fn start(&self) -> u64 {
        self.since
    }

    fn holds(&self, run: u64) -> bool {
        run >= self.since
            || self
                .earlier
                .iter()
                .any(|&(first, last)| (first..=last).contains(&run))
    }
}

/// The runs of every position of the history, in time order.
#[derive(Debug, Clone)]
pub(super) struct Evidence {
    runs: Vec<Vec<RunSample>>,
    /// Runs a round makes: one a host.
    width: u64,
}

impl Evidence {
    /// No runs yet, for `positions` commits, measured one host at a time.
    pub(super) fn new(positions: usize) -> Evidence {
        Evidence {
            runs: vec![Vec::new(); positions],
            width: 1,
        }
    }

    /// Rounds of `hosts` runs (at least one).
    pub(super) fn with_hosts(self, hosts: usize) -> Evidence {
        Evidence {
            width: hosts.max(1) as u64,
            ..self
        }
    }

    /// How many runs a round makes.
    pub(super) fn width(&self) -> u64 {
        self.width
    }

    pub(super) fn record(&mut self, pos: usize, sample: RunSample) {
        self.runs[pos].push(sample);
    }

    /// Every run of `pos`, oldest first.
    pub(super) fn runs(&self, pos: usize) -> &[RunSample] {
        &self.runs[pos]
    }

    /// The hosts that made runs of `pos`, in the order of their first.
    pub(super) fn hosts_of(&self, pos: usize) -> Vec<Option<String>> {
        hosts_in(&self.runs[pos])
    }

    /// How many runs every position has had, in all.
    pub(super) fn total_runs(&self) -> u64 {
        self.runs.iter().map(|r| r.len() as u64).sum()
    }

    /// The number of the last run of `pos` (0 before its first).
    pub(super) fn last_run(&self, pos: usize) -> u64 {
        self.runs[pos].last().map_or(0, |r| r.run)
    }

    /// Robust location of the most recent runs of `pos` on `host` (log
    /// throughput), and how many runs it rests on: the last `window`, or
    /// the last [`DRIFT_WINDOW`] while the machine drifts.
    pub(super) fn recent_level(
        &self,
        pos: usize,
        window: usize,
        host: &Option<String>,
    ) -> (f64, usize) {
        let window = self.window(window);
        let on_host: Vec<&RunSample> = self.runs[pos].iter().filter(|r| r.host == *host).collect();
        let tps: Vec<f64> = on_host[on_host.len().saturating_sub(window)..]
            .iter()
            .map(|r| r.tps)
            .collect();
        (stats::trimmed_log_mean(&tps), tps.len())
    }

    /// Robust location (log throughput) of the `window` runs of `pos`
    /// made on `near`'s host nearest in time to it (the last
    /// [`DRIFT_WINDOW`] while the machine drifts); `None` before its first
    /// run there.
    pub(super) fn level_near(&self, pos: usize, near: &RunSample, window: usize) -> Option<f64> {
        let window = self.window(window);
        let mut close: Vec<&RunSample> = self.runs[pos]
            .iter()
            .filter(|r| r.host == near.host)
            .collect();
        close.sort_by_key(|r| (r.run.abs_diff(near.run), r.run));
        let tps: Vec<f64> = close.iter().take(window).map(|r| r.tps).collect();
        (!tps.is_empty()).then(|| stats::trimmed_log_mean(&tps))
    }

    /// The runs of `pos` that say its level now: the last `window` of
    /// each host, or the last [`DRIFT_WINDOW`] while the machine drifts.
    pub(super) fn recent_runs(&self, pos: usize, window: usize) -> Vec<RunSample> {
        self.last_runs(pos, self.window(window))
    }

    fn window(&self, window: usize) -> usize {
        if self.drifting() {
            DRIFT_WINDOW
        } else {
            window
        }
    }

    /// The last `n` runs of `pos` on each host, in time order.
    pub(super) fn last_runs(&self, pos: usize, n: usize) -> Vec<RunSample> {
        let runs = &self.runs[pos];
        let mut left: Vec<(Option<String>, usize)> = Vec::new();
        let mut kept: Vec<RunSample> = Vec::new();
        for r in runs.iter().rev() {
            let i = match left.iter().position(|(h, _)| *h == r.host) {
                Some(i) => i,
                None => {
                    left.push((r.host.clone(), n));
                    left.len() - 1
                }
            };
            if left[i].1 > 0 {
                left[i].1 -= 1;
                kept.push(r.clone());
            }
        }
        kept.reverse();
        kept
    }

    /// Each host's runs of each commit, in time order: the series noise
    /// and drift are measured on.
    fn series(&self, fewest: usize) -> Vec<Vec<f64>> {
        self.runs
            .iter()
            .flat_map(|runs| {
                hosts_in(runs).into_iter().map(move |host| {
                    runs.iter()
                        .filter(|r| r.host == host)
                        .map(|r| r.tps)
                        .collect::<Vec<f64>>()
                })
            })
            .filter(|s| s.len() >= fewest)
            .collect()
    }

    /// Whether the machine's speed wanders between runs, which a fixed
    /// reference level cannot follow: the runs of each commit measured
    /// often (the range ends above all) on one host, in time order, move
    /// together (pooled von Neumann ratio, 0.1% level). Independent noise
    /// of any shape (outliers, two modes) does not trip it.
    pub(super) fn drifting(&self) -> bool {
        let series: Vec<Vec<f64>> = self
            .series(6)
            .into_iter()
            .map(|s| s.iter().map(|v| v.ln()).collect())
            .collect();
        let refs: Vec<&[f64]> = series.iter().map(Vec::as_slice).collect();
        stats::wanders(&refs, 3.09) == Some(true)
    }

    /// Run-to-run spread of log throughput, pooled over every commit and
    /// host, each host's runs differenced among themselves.
    pub(super) fn noise(&self) -> Option<stats::NoiseEstimate> {
        let groups = self.series(2);
        let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        stats::robust_log_sigma(&refs)
    }

    /// The noise the decisions assume (see [`stats::decision_sigma`]).
    pub(super) fn noise_sigma(&self) -> f64 {
        stats::decision_sigma(self.noise())
    }

    /// The runs of `base` and `new` made since `since`, paired with each
    /// other's neighbours in time on the same host.
    pub(super) fn pairs_since(&self, base: usize, new: usize, since: u64) -> Vec<(f64, f64)> {
        self.pairs_in(base, new, &Spans::since(since))
    }

    /// The runs of `base` and `new` in `spans`, paired side by side.
    pub(super) fn pairs_in(&self, base: usize, new: usize, spans: &Spans) -> Vec<(f64, f64)> {
        self.pairs(&self.samples_in(base, spans), &self.samples_in(new, spans))
    }

    /// Runs of two commits paired with each other's neighbours in time,
    /// host by host: at most [`PAIR_GAP`] rounds apart.
    pub(super) fn pairs(&self, base: &[RunSample], new: &[RunSample]) -> Vec<(f64, f64)> {
        let both: Vec<RunSample> = base.iter().chain(new).cloned().collect();
        hosts_in(&both)
            .into_iter()
            .flat_map(|host| {
                let timed = |runs: &[RunSample]| -> Vec<(u64, f64)> {
                    runs.iter()
                        .filter(|r| r.host == host)
                        .map(|r| (r.run, r.tps))
                        .collect()
                };
                stats::pair_in_time(&timed(base), &timed(new), PAIR_GAP * self.width)
            })
            .collect()
    }

    /// The runs of `pos` made since run `since`.
    pub(super) fn samples_since(&self, pos: usize, since: u64) -> Vec<RunSample> {
        self.samples_in(pos, &Spans::since(since))
    }

    /// The runs of `pos` in `spans`.
    pub(super) fn samples_in(&self, pos: usize, spans: &Spans) -> Vec<RunSample> {
        self.runs[pos]
            .iter()
            .filter(|r| spans.holds(r.run))
            .cloned()
            .collect()
    }

    /// Throughput of the runs of `pos` made since run `since`, all hosts.
    pub(super) fn runs_since(&self, pos: usize, since: u64) -> Vec<f64> {
        self.samples_since(pos, since)
            .iter()
            .map(|r| r.tps)
            .collect()
    }

    /// Throughput of every run of `pos`, all hosts.
    pub(super) fn tps(&self, pos: usize) -> Vec<f64> {
        self.runs_since(pos, 0)
    }
}

/// The hosts of `runs`, in the order of their first run.
fn hosts_in(runs: &[RunSample]) -> Vec<Option<String>> {
    RunSample::hosts(runs)
}

/// Two sides' runs grouped by host (see [`RunSample::blocks`]).
pub(super) fn blocks(base: &[RunSample], new: &[RunSample]) -> Vec<Block> {
    RunSample::blocks(base, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs numbered in the order given: `(position, tps)`.
    fn evidence(positions: usize, runs: &[(usize, f64)]) -> Evidence {
        let mut e = Evidence::new(positions);
        for (i, &(pos, tps)) in runs.iter().enumerate() {
            e.record(
                pos,
                RunSample {
                    run: i as u64 + 1,
                    tps,
                    host: None,
                },
            );
        }
        e
    }

    #[test]
    fn levels_rest_on_the_recent_runs_without_the_extremes() {
        let e = evidence(
            2,
            &[
                (0, 500.0),
                (0, 1000.0),
                (1, 800.0),
                (0, 990.0),
                (0, 5000.0),
                (0, 1010.0),
                (0, 1.0),
            ],
        );
        let (level, runs) = e.recent_level(0, 5, &None);
        assert_eq!(runs, 5);
        // Of 1000, 990, 5000, 1010, 1: the largest and smallest are set aside.
        let expected = (1000f64.ln() + 990f64.ln() + 1010f64.ln()) / 3.0;
        assert!((level - expected).abs() < 1e-12, "{level} vs {expected}");
        let (one, n) = e.recent_level(1, 5, &None);
        assert_eq!((one, n), (800f64.ln(), 1));
        assert_eq!(e.last_run(1), 3);
        assert_eq!(e.last_run(0), 7);
        assert_eq!(e.total_runs(), 7);
    }

    fn sample(run: u64) -> RunSample {
        RunSample {
            run,
            tps: 0.0,
            host: None,
        }
    }

    #[test]
    fn levels_near_a_run_rest_on_the_runs_nearest_in_time() {
        let e = evidence(
            2,
            &[(0, 100.0), (1, 90.0), (0, 200.0), (0, 400.0), (1, 50.0)],
        );
        // Nearest run 4 of position 0: run 4 itself (400), then run 3.
        let near = e.level_near(0, &sample(4), 2).unwrap();
        assert!((near - (200f64.ln() + 400f64.ln()) / 2.0).abs() < 1e-12);
        assert_eq!(e.level_near(0, &sample(1), 1), Some(100f64.ln()));
        assert_eq!(Evidence::new(1).level_near(0, &sample(1), 3), None);
    }

    #[test]
    fn spans_hold_the_runs_of_earlier_checks_and_the_latest_ones() {
        let e = evidence(
            2,
            &[
                (0, 100.0),
                (0, 101.0),
                (0, 102.0),
                (1, 90.0),
                (0, 103.0),
                (0, 104.0),
            ],
        );
        let spans = Spans::after(vec![(2, 3)], 5);
        let runs: Vec<u64> = e.samples_in(0, &spans).iter().map(|r| r.run).collect();
        assert_eq!(runs, [2, 3, 5, 6]);
        assert_eq!(spans.start(), 5);
        assert_eq!(e.samples_in(0, &Spans::since(4)).len(), 2);
        assert_eq!(e.samples_in(1, &spans).len(), 0);
    }

    #[test]
    fn runs_since_and_pairs_made_side_by_side() {
        let e = evidence(
            2,
            &[(0, 100.0), (1, 90.0), (0, 101.0), (1, 91.0), (0, 102.0)],
        );
        assert_eq!(e.runs_since(0, 3), [101.0, 102.0]);
        assert_eq!(e.tps(1), [90.0, 91.0]);
        let pairs = e.pairs_since(0, 1, 0);
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        assert!(pairs.iter().all(|(a, b)| a > b), "{pairs:?}");
    }

    #[test]
    fn a_wandering_machine_is_seen_and_independent_noise_is_not() {
        // One commit measured often while the machine slows down and
        // speeds up again, slowly.
        let wave: Vec<(usize, f64)> = (0..24)
            .map(|i| (0, 1000.0 * (1.0 + 0.1 * (i as f64 / 4.0).sin())))
            .collect();
        assert!(evidence(1, &wave).drifting());
        let steady: Vec<(usize, f64)> = (0..24)
            .map(|i| (0, if i % 2 == 0 { 1000.0 } else { 1020.0 }))
            .collect();
        let e = evidence(1, &steady);
        assert!(!e.drifting());
        // While it drifts, a level rests on the last few runs only.
        assert_eq!(evidence(1, &wave).recent_level(0, 8, &None).1, DRIFT_WINDOW);
        assert_eq!(e.recent_level(0, 8, &None).1, 8);
    }

    #[test]
    fn noise_is_pooled_over_commits_and_has_a_floor_and_a_default() {
        assert_eq!(Evidence::new(2).noise_sigma(), 0.05);
        let e = evidence(
            2,
            &[
                (0, 1000.0),
                (0, 1000.0),
                (1, 900.0),
                (1, 900.0),
                (0, 1000.0),
            ],
        );
        assert_eq!(e.noise_sigma(), 0.002);
        let noisy = evidence(
            2,
            &[
                (0, 1000.0),
                (0, 1100.0),
                (0, 950.0),
                (1, 800.0),
                (1, 880.0),
                (1, 760.0),
            ],
        );
        let sigma = noisy.noise_sigma();
        assert!(sigma > 0.02 && sigma < 0.2, "{sigma}");
    }
}
