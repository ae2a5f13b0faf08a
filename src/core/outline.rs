//! A hunt's plan, said before its first build: the phases, the builds
//! and runs each takes, and the time they need against the budget.
//!
//! Builds are not timed until one is made, so the expected time counts
//! the runs alone, at their least and at their most, and says so: a
//! budget that the runs alone overfill is said to be short up front, not
//! found out at the deadline.

/// What the plan is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct Outline {
    /// The release given as `--good`, its merge-base with the bad end and
    /// what it left, when the release is checked against that point.
    pub release: Option<(String, String, String)>,
    /// The good and bad ends the search runs between.
    pub good: String,
    pub bad: String,
    /// Commits strictly between the ends.
    pub candidates: usize,
    /// Steps to narrow them to one, and runs a step makes on average.
    pub steps: u32,
    pub runs_per_step: f64,
    /// Runs of one commit before a verdict, at least and at most.
    pub min_runs: usize,
    pub max_runs: usize,
    /// How long a run takes, when known from the profile.
    pub run_seconds: Option<f64>,
    /// Seconds left in the time budget, and the release check's share.
    pub budget: Option<(f64, f64)>,
}

impl Outline {
    /// The plan's lines, the first naming the phases.
    pub fn lines(&self, human: fn(f64) -> String) -> Vec<String> {
        let mut lines = Vec::new();
        let (mut builds, mut least, mut most) = (0usize, 0usize, 0usize);
        let mut phase = 1;
        if let Some((given, base, left)) = &self.release {
            let within = self.budget.map_or_else(String::new, |(_, share)| {
                format!(", within {} of the time budget", human(share))
            });
            lines.push(format!(
                "plan: {phase}. {given} against {base}, where it left {left}: 2 builds, \
                 2 x {} to 2 x {} runs{within}",
                self.min_runs, self.max_runs
            ));
            phase += 1;
            builds += 2;
            least += 2 * self.min_runs;
            most += 2 * self.max_runs;
        }
        let end_builds = if self.release.is_some() { 1 } else { 2 };
        lines.push(format!(
            "plan: {phase}. the endpoints {} and {}: {end_builds} build{}, 2 x {} to 2 x {} \
             runs",
            self.good,
            self.bad,
            if end_builds == 1 { "" } else { "s" },
            self.min_runs,
            self.max_runs
        ));
        builds += end_builds;
        least += 2 * self.min_runs;
        most += 2 * self.max_runs;
        let search_runs = (f64::from(self.steps) * self.runs_per_step).ceil() as usize;
        let each = if self.runs_per_step == 1.0 {
            "a run".to_string()
        } else {
            format!("{} runs", self.runs_per_step)
        };
        lines.push(format!(
            "plan: {}. if the bad end is slower, the search over {} commits: about {} steps of \
             a build and {each} each, then each culprit checked against its parent",
            phase + 1,
            self.candidates,
            self.steps,
        ));
        builds += self.steps as usize;
        most += search_runs;
        lines.push(self.expected(builds, (least, most), human));
        lines
    }

    /// The builds and runs in all, and their time against the budget.
    fn expected(
        &self,
        builds: usize,
        (least, most): (usize, usize),
        human: fn(f64) -> String,
    ) -> String {
        let head = format!("plan: about {builds} builds and {least} to {most} runs");
        let Some(run) = self.run_seconds else {
            return format!("{head}; a run's length is known after the first");
        };
        let (low, high) = (least as f64 * run, most as f64 * run);
        let timed = format!(
            "{head}; a run takes about {}, so the runs alone take {} to {}, builds besides",
            human(run),
            human(low),
            human(high)
        );
        match self.budget {
            None => timed,
            Some((left, _)) if low > left => format!(
                "{timed}: more than the {} budget, which ends the hunt before the search \
                 narrows anything; give a longer --time-budget",
                human(left)
            ),
            Some((left, _)) if high > left => format!(
                "{timed}: the {} budget may end the search with a range of commits, not \
                 one; rerunning the same command goes on from there",
                human(left)
            ),
            Some((left, _)) => format!("{timed}: within the {} budget", human(left)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> String {
        format!("{s:.0}s")
    }

    fn headline() -> Outline {
        Outline {
            release: Some(("REL9_5_0".into(), "8a6b5c4".into(), "master".into())),
            good: "8a6b5c4".into(),
            bad: "master".into(),
            candidates: 1000,
            steps: 10,
            runs_per_step: 4.0,
            min_runs: 4,
            max_runs: 20,
            run_seconds: Some(22.0),
            budget: Some((900.0, 225.0)),
        }
    }

    #[test]
    fn a_release_hunt_says_its_three_phases_and_the_check_s_share() {
        let lines = headline().lines(secs);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[0].contains("1. REL9_5_0 against 8a6b5c4, where it left master"));
        assert!(
            lines[0].contains("within 225s of the time budget"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("2. the endpoints 8a6b5c4 and master: 1 build,"));
        assert!(lines[2].contains("3. if the bad end is slower, the search over 1000 commits"));
        // 2 + 1 + 10 builds; 8 + 8 runs at least, 40 + 40 + 40 at most.
        assert!(
            lines[3].contains("about 13 builds and 16 to 120 runs"),
            "{}",
            lines[3]
        );
        assert!(lines[3].contains("352s to 2640s"), "{}", lines[3]);
        assert!(
            lines[3].contains("may end the search with a range"),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn a_budget_the_runs_alone_overfill_is_said_up_front() {
        let short = Outline {
            budget: Some((300.0, 75.0)),
            ..headline()
        };
        let last = short.lines(secs).pop().unwrap();
        assert!(last.contains("more than the 300s budget"), "{last}");
        let roomy = Outline {
            budget: Some((10_000.0, 2500.0)),
            ..headline()
        };
        assert!(
            roomy
                .lines(secs)
                .pop()
                .unwrap()
                .ends_with("within the 10000s budget")
        );
    }

    #[test]
    fn without_a_release_or_a_known_run_length_the_plan_says_so() {
        let plain = Outline {
            release: None,
            run_seconds: None,
            budget: None,
            ..headline()
        };
        let lines = plain.lines(secs);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("plan: 1. the endpoints 8a6b5c4 and master: 2 builds"));
        assert!(
            lines[2].ends_with("a run's length is known after the first"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn a_hunt_on_counts_says_a_run_a_step() {
        let counted = Outline {
            release: None,
            candidates: 30,
            steps: 5,
            runs_per_step: 1.0,
            min_runs: 3,
            run_seconds: Some(10.0),
            budget: None,
            ..headline()
        };
        let lines = counted.lines(secs);
        assert!(
            lines[0].ends_with("2 builds, 2 x 3 to 2 x 20 runs"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("about 5 steps of a build and a run each"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("plan: about 7 builds and 6 to 45 runs; a run takes about 10s"),
            "{}",
            lines[2]
        );
    }
}
