//! Choosing how long each benchmark run lasts, from the noise.
//!
//! A profile's `duration` is a guess. Longer runs average more of the
//! within-run noise away, but some noise does not shrink with the length
//! (where the scheduler put the processes, the data's place in memory,
//! a checkpoint or autovacuum that lands in one run and not another), and
//! every run also pays a fixed cost: the warm-up and the set-up. A hunt
//! that runs 30-minute runs when 5-minute ones tell the same thing spends
//! the night on six times the machine time.
//!
//! The model: the variance of a run's log-throughput at length `L` is
//! `a / L + b` (white within-run noise plus a floor that no length
//! removes), and a run of length `L` costs `L + overhead` seconds. A
//! commit is judged when its runs place it on one side of the midpoint
//! between the endpoints' levels: with a drop `d` (in log), that takes
//! about `(z * sd(L) / (d / 2))^2` runs, and never fewer than the
//! decision's minimum. So the machine time per judgement is
//! `max(min_runs, z^2 (a / L + b) / (d / 2)^2) * (L + overhead)`; with
//! the minimum ignored it is proportional to `(a / L + b) * (L +
//! overhead)`, and the minimum is why shorter runs often win: when the
//! drop is large against the noise, a run's length buys precision the
//! decision does not need. Pilot runs at the endpoints at two lengths give
//! `a`, `b` and `d`; the length with the least cost among the candidates
//! wins.
//!
//! Two checks keep a shorter length from changing what is measured: the
//! drop between the endpoints must be the same at both lengths (a run too
//! short to hold a checkpoint can hide a write regression), and the level
//! must not move by more than the noise and 5% (short runs measuring
//! another regime). Either keeps the profile's length. So does a saving
//! under a quarter, since two or three pilot runs estimate a variance
//! only roughly.

/// One pilot run: which endpoint (`false` good, `true` bad), its length
/// in seconds and its throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PilotRun {
    pub bad_end: bool,
    pub seconds: u32,
    pub tps: f64,
}

/// The fitted noise model: variance of ln(tps) is `within / L + floor`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseFit {
    pub within: f64,
    pub floor: f64,
    /// Seconds each run costs besides its measured length.
    pub overhead: f64,
}

/// One-sided z of the decision's 1% error rate.
const Z: f64 = 2.33;

impl NoiseFit {
    /// Runs a judgement takes with runs of `seconds` when the drop is
    /// `drop` (in log), at least `min_runs`.
    pub fn runs_needed(&self, seconds: u32, drop: f64, min_runs: usize) -> f64 {
        let var = self.within / f64::from(seconds) + self.floor;
        let half = (drop.abs() / 2.0).max(f64::EPSILON);
        (Z * Z * var / (half * half)).max(min_runs as f64)
    }

    /// Machine time of a judgement with runs of `seconds`, in seconds.
    pub fn cost(&self, seconds: u32, drop: f64, min_runs: usize) -> f64 {
        self.runs_needed(seconds, drop, min_runs) * (f64::from(seconds) + self.overhead)
    }

    /// The standard deviation of ln(tps), as a percentage, at `seconds`.
    pub fn cv_pct(&self, seconds: u32) -> f64 {
        100.0 * (self.within / f64::from(seconds) + self.floor).sqrt()
    }
}

/// The length chosen and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub seconds: u32,
    pub fit: Option<NoiseFit>,
    pub reason: String,
}

/// A shorter length must save at least this share of machine time: the
/// pilot estimates the noise only roughly.
const MIN_SAVING: f64 = 0.15;

/// The level may move this much between lengths (besides the noise).
const MAX_LEVEL_SHIFT: f64 = 0.05;

/// Picks the run length among `candidates` (seconds; the profile's length
/// is the longest) from `pilot` runs made at the shortest and the longest
/// of them, given each run's `overhead` in seconds and the hunt's
/// `threshold` (a fraction, such as 0.05) and fewest runs a side
/// (`min_runs`).
pub fn choose(
    pilot: &[PilotRun],
    candidates: &[u32],
    overhead: f64,
    (threshold, min_runs): (f64, usize),
) -> Choice {
    let (Some(&short), Some(&long)) = (candidates.iter().min(), candidates.iter().max()) else {
        return keep(0, None, "no run length to choose from".into());
    };
    let groups = [(false, short), (true, short), (false, long), (true, long)].map(|(bad, len)| {
        let logs: Vec<f64> = pilot
            .iter()
            .filter(|r| r.bad_end == bad && r.seconds == len && r.tps > 0.0)
            .map(|r| r.tps.ln())
            .collect();
        Group::of(&logs)
    });
    let [good_s, bad_s, good_l, bad_l] = groups;
    if short == long || groups.iter().any(|g| g.n < 2) {
        return keep(
            long,
            None,
            "too few pilot runs to compare run lengths".into(),
        );
    }
    let v_short = pooled(&good_s, &bad_s);
    let v_long = pooled(&good_l, &bad_l);
    let within = ((v_short - v_long) / (1.0 / f64::from(short) - 1.0 / f64::from(long))).max(0.0);
    let floor = (v_long - within / f64::from(long)).max(0.0);
    let fit = NoiseFit {
        within,
        floor,
        overhead: overhead.max(0.0),
    };
    let drop_short = bad_s.mean - good_s.mean;
    let drop_long = bad_l.mean - good_l.mean;
    let se_drops = (v_short * (1.0 / good_s.nf() + 1.0 / bad_s.nf())
        + v_long * (1.0 / good_l.nf() + 1.0 / bad_l.nf()))
    .sqrt();
    if (drop_short - drop_long).abs() > (2.5 * se_drops).max(threshold / 2.0) {
        let reason = format!(
            "runs of {short} s measured a change of {:+.1}% between the endpoints, runs of \
             {long} s {:+.1}%: shorter runs do not see the same drop",
            pct(drop_short),
            pct(drop_long)
        );
        return keep(long, Some(fit), reason);
    }
    let level_shift = ((good_s.mean + bad_s.mean) - (good_l.mean + bad_l.mean)) / 2.0;
    let se_level = (se_drops / 2.0).max(f64::EPSILON);
    if level_shift.abs() > (2.5 * se_level).max(MAX_LEVEL_SHIFT) {
        let reason = format!(
            "runs of {short} s measured {:+.1}% against runs of {long} s at both endpoints: \
             shorter runs measure another regime (a checkpoint, caches still warming)",
            pct(level_shift)
        );
        return keep(long, Some(fit), reason);
    }
    // The drop to tell apart: as measured, and never under the threshold.
    let drop = drop_long.abs().max(-(1.0 - threshold).ln());
    let cost = |len: u32| fit.cost(len, drop, min_runs);
    let best = candidates
        .iter()
        .copied()
        .min_by(|x, y| cost(*x).total_cmp(&cost(*y)))
        .unwrap_or(long);
    let saving = 1.0 - cost(best) / cost(long);
    if best == long || saving.is_nan() || saving < MIN_SAVING {
        let reason = format!(
            "CV {:.1}% at {short} s, {:.1}% at {long} s against a drop of {:.1}%: shorter \
             runs would need so many more that they would not save {:.0}% of the machine time",
            fit.cv_pct(short),
            fit.cv_pct(long),
            -pct(-drop),
            100.0 * MIN_SAVING
        );
        return keep(long, Some(fit), reason);
    }
    let reason = format!(
        "CV {:.1}% at {short} s, {:.1}% at {long} s against a drop of {:.1}%, {:.0} s of \
         warm-up and set-up a run: runs of {best} s judge a commit in about {:.0} runs instead \
         of {:.0}, in {:.0}% less machine time",
        fit.cv_pct(short),
        fit.cv_pct(long),
        -pct(-drop),
        fit.overhead,
        fit.runs_needed(best, drop, min_runs).ceil(),
        fit.runs_needed(long, drop, min_runs).ceil(),
        100.0 * saving
    );
    Choice {
        seconds: best,
        fit: Some(fit),
        reason,
    }
}

/// The lengths a hunt chooses among for a profile length of `seconds`:
/// a quarter, a half and the whole, none under `min` seconds.
pub fn candidates(seconds: u32, min: u32) -> Vec<u32> {
    let mut lengths: Vec<u32> = [seconds / 4, seconds / 2, seconds]
        .into_iter()
        .filter(|&l| l >= min || l == seconds)
        .collect();
    lengths.dedup();
    lengths
}

fn keep(seconds: u32, fit: Option<NoiseFit>, reason: String) -> Choice {
    Choice {
        seconds,
        fit,
        reason,
    }
}

fn pct(log_change: f64) -> f64 {
    100.0 * log_change.exp_m1()
}

/// Mean and variance of one group of ln(tps).
#[derive(Debug, Clone, Copy)]
struct Group {
    n: usize,
    mean: f64,
    var: f64,
}

impl Group {
    fn of(logs: &[f64]) -> Group {
        let n = logs.len();
        if n == 0 {
            return Group {
                n,
                mean: 0.0,
                var: 0.0,
            };
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = if n < 2 {
            0.0
        } else {
            logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        };
        Group { n, mean, var }
    }

    fn nf(&self) -> f64 {
        self.n.max(1) as f64
    }
}

/// The variance of two groups pooled by their degrees of freedom.
fn pooled(a: &Group, b: &Group) -> f64 {
    let dof = (a.n + b.n).saturating_sub(2).max(1) as f64;
    (a.var * (a.n.saturating_sub(1)) as f64 + b.var * (b.n.saturating_sub(1)) as f64) / dof
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pilot runs whose ln(tps) at each endpoint and length deviate from
    /// the level by the given offsets (scaled to `sd(L)`).
    fn pilot(
        good: f64,
        bad: f64,
        sd: impl Fn(u32) -> f64,
        lengths: &[u32],
        level: impl Fn(u32) -> f64,
    ) -> Vec<PilotRun> {
        let offsets = [-1.0, 0.0, 1.0];
        let mut runs = Vec::new();
        for &len in lengths {
            for (bad_end, base) in [(false, good), (true, bad)] {
                for o in offsets {
                    let tps = (base.ln() + level(len) + o * sd(len)).exp();
                    runs.push(PilotRun {
                        bad_end,
                        seconds: len,
                        tps,
                    });
                }
            }
        }
        runs
    }

    #[test]
    fn noise_that_no_length_removes_makes_short_runs_cheaper() {
        // The same 3% at every length: a quarter of the length buys the
        // same precision.
        let runs = pilot(1000.0, 900.0, |_| 0.03, &[300, 1200], |_| 0.0);
        let choice = choose(&runs, &candidates(1200, 5), 20.0, (0.05, 4));
        assert_eq!(choice.seconds, 300, "{choice:?}");
        assert!(
            choice.reason.contains("less machine time"),
            "{}",
            choice.reason
        );
        let fit = choice.fit.unwrap();
        assert!(
            fit.within < 1e-9 && (fit.floor - 0.0009).abs() < 1e-6,
            "{fit:?}"
        );
    }

    #[test]
    fn noise_that_averages_away_keeps_the_profiles_length() {
        // Variance proportional to 1/L: four times the length, half the
        // deviation; with a fixed overhead, longer runs are cheaper.
        // Noise large against the 10% drop: 16% at 300 s, 8% at 1200 s.
        let sd = |l: u32| 0.16 * (300.0 / f64::from(l)).sqrt();
        let runs = pilot(1000.0, 900.0, sd, &[300, 1200], |_| 0.0);
        let choice = choose(&runs, &candidates(1200, 5), 60.0, (0.05, 4));
        assert_eq!(choice.seconds, 1200, "{choice:?}");
        assert!(
            choice.reason.contains("would not save"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn a_drop_that_short_runs_do_not_see_keeps_the_profiles_length() {
        let mut runs = pilot(1000.0, 1000.0, |_| 0.01, &[300], |_| 0.0);
        runs.extend(pilot(1000.0, 850.0, |_| 0.01, &[1200], |_| 0.0));
        let choice = choose(&runs, &candidates(1200, 5), 20.0, (0.05, 4));
        assert_eq!(choice.seconds, 1200);
        assert!(
            choice.reason.contains("do not see the same drop"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn short_runs_at_another_level_keep_the_profiles_length() {
        // No checkpoint in a 5-minute run: 12% faster at both ends.
        let level = |l: u32| if l < 1200 { 0.12 } else { 0.0 };
        let runs = pilot(1000.0, 900.0, |_| 0.01, &[300, 1200], level);
        let choice = choose(&runs, &candidates(1200, 5), 20.0, (0.05, 4));
        assert_eq!(choice.seconds, 1200);
        assert!(
            choice.reason.contains("another regime"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn too_few_pilot_runs_keep_the_profiles_length() {
        let runs = pilot(1000.0, 900.0, |_| 0.03, &[300, 1200], |_| 0.0);
        let choice = choose(&runs[..4], &candidates(1200, 5), 20.0, (0.05, 4));
        assert_eq!(choice.seconds, 1200);
        assert!(choice.fit.is_none());
        assert_eq!(choose(&[], &[], 0.0, (0.05, 4)).seconds, 0);
    }

    #[test]
    fn candidates_are_a_quarter_a_half_and_the_whole() {
        assert_eq!(candidates(1800, 5), [450, 900, 1800]);
        assert_eq!(candidates(20, 5), [5, 10, 20]);
        assert_eq!(candidates(12, 5), [6, 12]);
        assert_eq!(candidates(5, 5), [5]);
    }

    proptest! {
        #[test]
        fn the_choice_is_a_candidate_and_the_fit_a_variance(
            tps in proptest::collection::vec(100.0f64..10_000.0, 12),
            overhead in 0.0f64..600.0,
        ) {
            let lengths = [300u32, 300, 300, 1200, 1200, 1200];
            let runs: Vec<PilotRun> = tps
                .iter()
                .enumerate()
                .map(|(i, &tps)| PilotRun { bad_end: i % 2 == 1, seconds: lengths[i / 2], tps })
                .collect();
            let cands = candidates(1200, 5);
            let choice = choose(&runs, &cands, overhead, (0.05, 4));
            prop_assert!(cands.contains(&choice.seconds));
            if let Some(fit) = choice.fit {
                prop_assert!(fit.within >= 0.0 && fit.floor >= 0.0);
                for drop in [0.05, 0.2] {
                    prop_assert!(fit.runs_needed(1200, drop, 4) >= 4.0);
                }
            }
        }
    }
}
