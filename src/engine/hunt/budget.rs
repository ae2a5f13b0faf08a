//! A hunt's time budget: the morning deadline of an overnight hunt.
//!
//! Before each build and each run the hunt asks whether it still fits:
//! what a build and a run have cost so far says what the next one will.
//! When it does not fit, the hunt stops with what it found (culprits
//! confirmed so far, the range the search had narrowed the rest to), and
//! the journal lets a second night go on where the first one stopped.
//! After the endpoints, the plan is said up front: how long the search is
//! expected to take and how narrow an answer the budget buys.

use std::time::{Duration, SystemTime};

/// Runs a bisection step costs on average (the candidate's own runs and
/// the reference runs of the range's ends), as `simulate` measures it on
/// one-step histories: about 43 runs for 400 commits, whose search takes
/// about 9 steps besides the endpoints and the check.
pub const RUNS_PER_STEP: f64 = 4.0;

/// Runs the endpoints and a culprit's check take, about.
pub const RUNS_OUTSIDE_STEPS: f64 = 20.0;

/// When the hunt must end, and the clock it is read on.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub deadline: SystemTime,
    /// The time now: the system clock, or a fake one in tests.
    pub clock: fn() -> SystemTime,
}

/// What a build and a run have cost so far (wall time, seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Costs {
    pub builds: u32,
    pub build_seconds: f64,
    /// Rounds made: one run on every host at once (one run on this
    /// machine alone).
    pub rounds: u32,
    pub round_seconds: f64,
    /// Runs a round makes: the lab's hosts (0 or 1: this machine alone).
    pub hosts: u32,
}

impl Costs {
    /// The expected cost of one more build (0 before any was measured:
    /// the first ones are always allowed).
    pub fn per_build(&self) -> f64 {
        if self.builds == 0 {
            0.0
        } else {
            self.build_seconds / f64::from(self.builds)
        }
    }

    /// The expected cost of one step of the search: a build and
    /// [`RUNS_PER_STEP`] runs, in rounds over the hosts.
    pub fn per_step(&self) -> f64 {
        self.per_build() + self.rounds_for(RUNS_PER_STEP) * self.per_round()
    }

    /// Rounds that make `runs` runs.
    pub fn rounds_for(&self, runs: f64) -> f64 {
        (runs / f64::from(self.hosts.max(1))).ceil()
    }

    /// The expected cost of one more round.
    pub fn per_round(&self) -> f64 {
        if self.rounds == 0 {
            0.0
        } else {
            self.round_seconds / f64::from(self.rounds)
        }
    }
}

impl Budget {
    /// A budget ending at `deadline` on the system clock.
    pub fn until(deadline: SystemTime) -> Budget {
        Budget {
            deadline,
            clock: SystemTime::now,
        }
    }

    /// The time now, on the budget's clock.
    pub fn now(&self) -> SystemTime {
        (self.clock)()
    }

    /// Seconds left at `now` (0 when past the deadline).
    pub fn left(&self, now: SystemTime) -> f64 {
        self.deadline
            .duration_since(now)
            .map_or(0.0, |d| d.as_secs_f64())
    }

    /// Whether work expected to take `seconds` ends before the deadline;
    /// once the deadline has passed, nothing does, not even work whose
    /// cost is not known yet (0 seconds).
    pub fn fits(&self, now: SystemTime, seconds: f64) -> bool {
        let left = self.left(now);
        left > 0.0 && seconds <= left
    }

    /// The plan for searching `candidates` commits, said after the
    /// endpoints: the expected time, and what the budget buys when that
    /// is more than is left.
    pub fn plan(&self, now: SystemTime, candidates: usize, costs: &Costs) -> String {
        let step = costs.per_step();
        let steps = steps_to_one(candidates);
        let outside = costs.rounds_for(RUNS_OUTSIDE_STEPS) * costs.per_round();
        let expected = f64::from(steps) * step + outside;
        let left = self.left(now);
        let rounds = match costs.hosts {
            0 | 1 => String::new(),
            n => format!(
                " in {} rounds on {n} hosts",
                costs.rounds_for(RUNS_PER_STEP)
            ),
        };
        let head = format!(
            "time budget: {} left; one step of the search costs about {} (a build and {} \
             runs{rounds}); {} steps to one commit: about {}",
            human(left),
            human(step),
            RUNS_PER_STEP,
            steps,
            human(expected)
        );
        if expected <= left {
            return format!("{head}, which fits");
        }
        let affordable = ((left - outside) / step.max(1.0)).floor().max(0.0) as u32;
        let width = range_after(candidates, affordable);
        format!(
            "{head}, more than is left: expect a range of about {width} commits by the \
             deadline (rerun the same command later to narrow it; nothing is measured twice)"
        )
    }
}

/// Bisection steps that narrow `candidates` commits to one.
pub fn steps_to_one(candidates: usize) -> u32 {
    let mut steps = 0;
    let mut n = candidates.max(1);
    while n > 1 {
        n = n.div_ceil(2);
        steps += 1;
    }
    steps
}

/// Commits left possible after `steps` bisection steps over `candidates`.
pub fn range_after(candidates: usize, steps: u32) -> usize {
    let mut n = candidates.max(1);
    for _ in 0..steps {
        if n <= 1 {
            break;
        }
        n = n.div_ceil(2);
    }
    n
}

/// `8h`, `90m`, `1h30m` or `3600s` as a time budget: read as
/// [`crate::time::parse_duration`] reads it, more than zero, and with a
/// unit: a budget is a night, and `--time-budget 8` meaning eight seconds
/// would end a hunt before its first build, so a bare number is refused
/// with the readings it may have meant.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bare = text.trim();
    if !bare.is_empty() && bare.parse::<f64>().is_ok() {
        return Err(format!(
            "`{text}` has no unit: write {bare}h, {bare}m or {bare}s"
        ));
    }
    crate::time::parse_duration(text)
        .ok()
        .filter(|seconds| *seconds > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a duration: write it as 8h, 90m, 1h30m or 3600s"))
}

/// A length of time as people write it: `45 s`, `12 min`, `3.5 h`.
pub fn human(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_people_write_them() {
        assert_eq!(parse_duration("8h"), Ok(Duration::from_secs(8 * 3600)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("3600s"), Ok(Duration::from_secs(3600)));
        assert_eq!(
            parse_duration("8"),
            Err("`8` has no unit: write 8h, 8m or 8s".to_string())
        );
        for bad in ["", "h", "8x", "1h30", "0h", "-1h"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("8h, 90m"), "{bad}: {err}");
        }
    }

    #[test]
    fn bisection_steps_and_what_is_left_after_some() {
        assert_eq!(steps_to_one(1), 0);
        assert_eq!(steps_to_one(2), 1);
        assert_eq!(steps_to_one(2200), 12);
        assert_eq!(steps_to_one(26_000), 15);
        assert_eq!(range_after(2200, 0), 2200);
        assert_eq!(range_after(2200, 7), 18);
        assert_eq!(range_after(2200, 20), 1);
    }

    /// A moment, and costs of 180 s a build and 60 s a round on `hosts`.
    fn measured(hosts: u32) -> (SystemTime, Costs) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let costs = Costs {
            builds: 2,
            build_seconds: 360.0,
            rounds: 10,
            round_seconds: 600.0,
            hosts,
        };
        (now, costs)
    }

    #[test]
    fn the_plan_says_whether_the_search_fits_and_what_it_buys_if_not() {
        let (now, costs) = measured(1);
        // A step: 180 s + 4 x 60 s = 420 s; 12 steps for 2,200 commits.
        let roomy = Budget::until(now + Duration::from_secs(8 * 3600));
        let plan = roomy.plan(now, 2200, &costs);
        assert!(plan.contains("12 steps"), "{plan}");
        assert!(plan.ends_with("which fits"), "{plan}");
        let tight = Budget::until(now + Duration::from_secs(3600));
        // (3600 - 20 x 60) / 420 = 5 steps: 2200 -> 69 commits.
        let plan = tight.plan(now, 2200, &costs);
        assert!(plan.contains("a range of about 69 commits"), "{plan}");
        assert!(tight.fits(now, 3600.0) && !tight.fits(now, 3601.0));
        assert_eq!(tight.left(now + Duration::from_secs(7200)), 0.0);
        assert!(!tight.fits(now + Duration::from_secs(3600), 0.0));
    }

    #[test]
    fn with_hosts_a_step_takes_fewer_rounds() {
        let (now, costs) = measured(3);
        // A step: 180 s + 2 rounds x 60 s = 300 s; outside the steps 7
        // rounds.
        assert_eq!(costs.per_step(), 300.0);
        let tight = Budget::until(now + Duration::from_secs(3600));
        // (3600 - 7 x 60) / 300 = 10 steps: 2200 -> 3 commits.
        let plan = tight.plan(now, 2200, &costs);
        assert!(
            plan.contains("(a build and 4 runs in 2 rounds on 3 hosts)"),
            "{plan}"
        );
        assert!(plan.contains("a range of about 3 commits"), "{plan}");
    }

    #[test]
    fn costs_are_averages_and_nothing_measured_costs_nothing() {
        let c = Costs::default();
        assert_eq!((c.per_build(), c.per_round()), (0.0, 0.0));
        let c = Costs {
            builds: 4,
            build_seconds: 100.0,
            rounds: 5,
            round_seconds: 50.0,
            hosts: 0,
        };
        assert_eq!((c.per_build(), c.per_round()), (25.0, 10.0));
        assert_eq!(human(45.0), "45 s");
        assert_eq!(human(720.0), "12 min");
        assert_eq!(human(3.5 * 3600.0), "3.5 h");
    }
}
