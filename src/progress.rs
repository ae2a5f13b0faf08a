//! Telling the user what the hunt is doing.
//!
//! On a terminal the user wants bars and an ETA; from cron, one timestamped
//! line per event; in tests, nothing. The hunt reports through
//! [`Progress`] and does not know which it is talking to.

use std::io::Write;

/// Something worth telling while a hunt runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgressEvent {
    /// A new phase began (endpoints, bisection of a range, verification).
    Phase(String),
    /// A commit is being built or taken from the cache.
    Preparing { commit: String },
    /// One run finished.
    Run {
        run: u64,
        commit: String,
        tps: Option<f64>,
        /// The instructions a transaction counted, when the run was
        /// counted: its tps is then that of a server slowed by the
        /// counter, not shown.
        instructions: Option<f64>,
    },
    /// A commit was judged.
    Judged { commit: String, judgement: String },
    /// The search's state: commits left in the window, steps left, and
    /// what they are expected to cost against the deadline.
    Search {
        remaining: usize,
        steps_left: u32,
        timing: Timing,
    },
    /// A remark worth a line of its own.
    Note(String),
}

/// The time the search's steps left are expected to take, beside the
/// time left before a `--time-budget` or `--deadline`, so that an
/// overnight hunt's log says at every step whether the answer will be
/// there by morning.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Seconds the steps left are expected to take, from what builds and
    /// runs have cost so far (`None` before any was measured).
    pub expected: Option<f64>,
    /// Seconds to the deadline, when the hunt has one.
    pub deadline_left: Option<f64>,
}

impl Timing {
    /// `, about 40m00s, 6h12m to the deadline` (the parts known).
    fn describe(&self) -> String {
        let secs = |s: f64| short_duration(std::time::Duration::from_secs_f64(s.max(0.0)));
        match (self.expected, self.deadline_left) {
            (Some(e), Some(l)) if e > l => {
                format!(
                    ", about {}, more than the {} to the deadline",
                    secs(e),
                    secs(l)
                )
            }
            (Some(e), Some(l)) => format!(", about {}, {} to the deadline", secs(e), secs(l)),
            (Some(e), None) => format!(", about {}", secs(e)),
            (None, Some(l)) => format!(", {} to the deadline", secs(l)),
            (None, None) => String::new(),
        }
    }
}

/// Receives progress events.
pub trait Progress {
    fn event(&mut self, event: &ProgressEvent);
}

/// Says nothing: for tests and for callers that report elsewhere.
pub struct Silent;

impl Progress for Silent {
    fn event(&mut self, _event: &ProgressEvent) {}
}

/// One timestamped line per event on standard error, for cron and logs.
pub struct LogLines {
    pub started: std::time::Instant,
}

impl LogLines {
    pub fn new() -> Self {
        LogLines {
            started: std::time::Instant::now(),
        }
    }
}

impl Default for LogLines {
    fn default() -> Self {
        Self::new()
    }
}

/// The text of one event, shared by every reporter that prints lines:
/// one line, with a commit subject's control characters written out.
pub fn describe(event: &ProgressEvent) -> String {
    crate::shown::visible_line(&event_text(event)).into_owned()
}

fn event_text(event: &ProgressEvent) -> String {
    match event {
        ProgressEvent::Phase(p) => format!("== {p}"),
        ProgressEvent::Preparing { commit } => format!("preparing {commit}"),
        ProgressEvent::Run {
            run,
            commit,
            tps,
            instructions,
        } => match (instructions, tps) {
            (Some(n), _) => format!("run {run}: {commit} {n:.0} instructions a transaction"),
            (None, Some(t)) => format!("run {run}: {commit} {t:.1} tps"),
            (None, None) => format!("run {run}: {commit} failed"),
        },
        ProgressEvent::Judged { commit, judgement } => format!("{commit} is {judgement}"),
        ProgressEvent::Search {
            remaining,
            steps_left,
            timing,
        } => format!(
            "{remaining} commits left, about {steps_left} steps{}",
            timing.describe()
        ),
        ProgressEvent::Note(n) => n.clone(),
    }
}

impl Progress for LogLines {
    fn event(&mut self, event: &ProgressEvent) {
        let secs = self.started.elapsed().as_secs();
        let stamp = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
        let _ = writeln!(std::io::stderr(), "[{stamp}] {}", describe(event));
    }
}

/// Bars on a terminal when stderr is one, otherwise [`LogLines`] (cron,
/// redirected output).
pub fn for_stderr() -> Box<dyn Progress> {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        Box::new(Bars::new(indicatif::ProgressDrawTarget::stderr()))
    } else {
        Box::new(LogLines::new())
    }
}

/// What the bars show, kept apart from drawing so it can be checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BarState {
    /// The current phase.
    pub phase: String,
    /// What is being done right now (a build, the last run).
    pub activity: String,
    /// Commits still in the search window.
    pub remaining: Option<usize>,
    /// Estimated search steps left.
    pub steps_left: Option<u32>,
    /// Commits judged in this phase.
    pub phase_steps: u64,
    /// Commits judged in the whole hunt.
    pub steps_done: u64,
    /// Benchmark runs so far.
    pub runs: u64,
    /// The search's expected time and deadline, as of `timing_at`.
    pub timing: Timing,
    /// The bars' elapsed time when `timing` came: the ETA and the
    /// deadline are counted down from it between search events.
    pub timing_at: Option<std::time::Duration>,
}

impl BarState {
    /// Takes in one event; returns the line to print above the bars, if
    /// the event deserves one.
    pub fn apply(&mut self, event: &ProgressEvent) -> Option<String> {
        self.apply_at(event, None)
    }

    /// [`BarState::apply`], with the bars' elapsed time when the event
    /// came (to count the deadline down between events).
    pub fn apply_at(
        &mut self,
        event: &ProgressEvent,
        elapsed: Option<std::time::Duration>,
    ) -> Option<String> {
        match event {
            ProgressEvent::Phase(p) => {
                self.phase = p.clone();
                self.phase_steps = 0;
                self.steps_left = None;
                self.remaining = None;
                return Some(describe(event));
            }
            ProgressEvent::Preparing { .. } => self.activity = describe(event),
            ProgressEvent::Run { .. } => {
                self.runs += 1;
                self.activity = describe(event);
            }
            ProgressEvent::Judged { .. } => {
                self.phase_steps += 1;
                self.steps_done += 1;
                return Some(describe(event));
            }
            ProgressEvent::Search {
                remaining,
                steps_left,
                timing,
            } => {
                self.remaining = Some(*remaining);
                self.steps_left = Some(*steps_left);
                self.timing = *timing;
                self.timing_at = elapsed;
            }
            ProgressEvent::Note(_) => return Some(describe(event)),
        }
        None
    }

    /// Time left: what the hunt expects the steps left to cost (from the
    /// builds and runs so far), else the steps left at the average time
    /// of a step so far.
    pub fn eta(&self, elapsed: std::time::Duration) -> Option<std::time::Duration> {
        let left = self.steps_left?;
        if let Some(expected) = self.timing.expected {
            let since = elapsed.saturating_sub(self.timing_at.unwrap_or(elapsed));
            return Some(std::time::Duration::from_secs_f64(
                (expected - since.as_secs_f64()).max(0.0),
            ));
        }
        if self.steps_done == 0 {
            return None;
        }
        let per_step = elapsed.as_secs_f64() / self.steps_done as f64;
        Some(std::time::Duration::from_secs_f64(
            per_step * f64::from(left),
        ))
    }

    /// `12 commits left, ~4 steps, 37 runs, ETA 40m` (parts known so far).
    pub fn status(&self, elapsed: std::time::Duration) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.remaining {
            parts.push(format!("{r} commits left"));
        }
        if let Some(s) = self.steps_left {
            parts.push(format!("~{s} steps"));
        }
        parts.push(format!("{} runs", self.runs));
        match self.eta(elapsed) {
            Some(eta) => parts.push(format!("ETA {}", short_duration(eta))),
            None => parts.push("ETA unknown".to_string()),
        }
        if let Some(left) = self.deadline_left(elapsed) {
            parts.push(format!("deadline in {}", short_duration(left)));
        }
        parts.join(", ")
    }

    /// Time to the deadline now, counted down from the last search event.
    pub fn deadline_left(&self, elapsed: std::time::Duration) -> Option<std::time::Duration> {
        let left = self.timing.deadline_left?;
        let since = elapsed.saturating_sub(self.timing_at.unwrap_or(elapsed));
        Some(std::time::Duration::from_secs_f64(
            (left - since.as_secs_f64()).max(0.0),
        ))
    }
}

/// `45s`, `12m05s`, `3h07m`.
pub fn short_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

/// Two bars on a terminal: the steps of the search with the runs and the
/// ETA, and below it the phase and what is being done right now; notes
/// scroll above them.
pub struct Bars {
    multi: indicatif::MultiProgress,
    phase: indicatif::ProgressBar,
    activity: indicatif::ProgressBar,
    state: BarState,
    started: std::time::Instant,
}

impl Bars {
    /// Draws on `target` (`ProgressDrawTarget::stderr()`; hidden in tests).
    pub fn new(target: indicatif::ProgressDrawTarget) -> Self {
        use indicatif::{ProgressBar, ProgressStyle};
        let multi = indicatif::MultiProgress::with_draw_target(target);
        let phase = multi.add(ProgressBar::new(0));
        if let Ok(style) = ProgressStyle::with_template(
            "[{bar:20}] {pos}/{len} steps, {elapsed} elapsed, {wide_msg}",
        ) {
            phase.set_style(style.progress_chars("=> "));
        }
        let activity = multi.add(ProgressBar::new_spinner());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix:.bold}: {wide_msg}") {
            activity.set_style(style);
        }
        activity.enable_steady_tick(std::time::Duration::from_millis(200));
        Bars {
            multi,
            phase,
            activity,
            state: BarState::default(),
            started: std::time::Instant::now(),
        }
    }

    /// What the bars show now.
    pub fn state(&self) -> &BarState {
        &self.state
    }
}

impl Progress for Bars {
    fn event(&mut self, event: &ProgressEvent) {
        if let Some(line) = self.state.apply_at(event, Some(self.started.elapsed())) {
            let _ = self.multi.println(line);
        }
        let s = &self.state;
        self.activity.set_prefix(s.phase.clone());
        self.phase
            .set_length(s.phase_steps + u64::from(s.steps_left.unwrap_or(0)));
        self.phase.set_position(s.phase_steps);
        self.phase.set_message(s.status(self.started.elapsed()));
        self.activity.set_message(s.activity.clone());
    }
}

impl Drop for Bars {
    /// Leaves the terminal clean for the report printed after the hunt.
    fn drop(&mut self) {
        self.activity.finish_and_clear();
        self.phase.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn eta_is_steps_left_times_the_average_step() {
        let mut s = BarState::default();
        assert_eq!(s.eta(Duration::from_secs(100)), None);
        s.apply(&ProgressEvent::Search {
            remaining: 40,
            steps_left: 6,
            timing: Timing::default(),
        });
        assert_eq!(s.eta(Duration::from_secs(100)), None, "no step done yet");
        for c in ["a", "b"] {
            s.apply(&ProgressEvent::Judged {
                commit: c.into(),
                judgement: "good-like".into(),
            });
        }
        assert_eq!(
            s.eta(Duration::from_secs(100)),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            s.status(Duration::from_secs(100)),
            "40 commits left, ~6 steps, 0 runs, ETA 5m00s"
        );
    }

    #[test]
    fn the_search_line_says_the_expected_time_against_the_deadline() {
        let line = |expected, deadline_left| {
            describe(&ProgressEvent::Search {
                remaining: 12,
                steps_left: 4,
                timing: Timing {
                    expected,
                    deadline_left,
                },
            })
        };
        assert_eq!(line(None, None), "12 commits left, about 4 steps");
        assert_eq!(
            line(Some(2400.0), None),
            "12 commits left, about 4 steps, about 40m00s"
        );
        assert_eq!(
            line(Some(2400.0), Some(6.0 * 3600.0)),
            "12 commits left, about 4 steps, about 40m00s, 6h00m to the deadline"
        );
        assert_eq!(
            line(Some(7200.0), Some(1800.0)),
            "12 commits left, about 4 steps, about 2h00m, more than the 30m00s to the deadline"
        );
        assert_eq!(
            line(None, Some(90.0)),
            "12 commits left, about 4 steps, 1m30s to the deadline"
        );
    }

    #[test]
    fn the_bars_count_the_expected_time_and_the_deadline_down() {
        let mut s = BarState::default();
        let search = ProgressEvent::Search {
            remaining: 40,
            steps_left: 6,
            timing: Timing {
                expected: Some(600.0),
                deadline_left: Some(3600.0),
            },
        };
        s.apply_at(&search, Some(Duration::from_secs(100)));
        assert_eq!(
            s.status(Duration::from_secs(160)),
            "40 commits left, ~6 steps, 0 runs, ETA 9m00s, deadline in 59m00s"
        );
        assert_eq!(
            s.deadline_left(Duration::from_secs(9000)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn status_before_any_search() {
        let mut s = BarState::default();
        let line = s.apply(&ProgressEvent::Phase("endpoints".into()));
        assert_eq!(line.as_deref(), Some("== endpoints"));
        s.apply(&ProgressEvent::Run {
            run: 1,
            commit: "abcd1234".into(),
            tps: Some(1234.5),
            instructions: None,
        });
        assert_eq!(s.activity, "run 1: abcd1234 1234.5 tps");
        assert_eq!(s.status(Duration::from_secs(5)), "1 runs, ETA unknown");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(short_duration(Duration::from_secs(45)), "45s");
        assert_eq!(short_duration(Duration::from_secs(725)), "12m05s");
        assert_eq!(
            short_duration(Duration::from_secs(3 * 3600 + 7 * 60)),
            "3h07m"
        );
    }

    #[test]
    fn bars_follow_a_whole_hunt_on_a_hidden_target() {
        use crate::engine::hunt::{Hunt, HuntConfig};
        use crate::lab::sim::{History, NoiseModel, SimLab};
        use crate::report::findings::Judgement::{BadEndpoint, GoodEndpoint};
        let history = History {
            len: 30,
            steps: vec![(21, 0.8)],
            unbuildable: [4].into(),
            base_tps: 500.0,
        };
        let mut lab = SimLab::new(history.clone(), NoiseModel::Gaussian { cv: 0.01 }, 3);
        let mut bars = Bars::new(indicatif::ProgressDrawTarget::hidden());
        // One judgement a candidate, as the candidate-by-candidate search
        // gives them (the posterior search judges a commit when it is sure
        // of its side, and may leave some unsure without a word).
        let config = HuntConfig {
            search: crate::engine::hunt::Search::Bisect,
            ..HuntConfig::default()
        };
        let report = Hunt::new(config, history.commits(), &mut lab, &mut bars)
            .run()
            .unwrap();
        let state = bars.state().clone();
        assert_eq!(state.runs, report.totals.runs);
        let judged = report
            .tested
            .iter()
            .filter(|t| !matches!(t.judgement, GoodEndpoint | BadEndpoint))
            .count();
        assert_eq!(state.steps_done as usize, judged, "{state:?}");
        assert!(!state.phase.is_empty());
        assert!(
            bars.phase
                .message()
                .contains(&format!("{} runs", state.runs))
        );
        assert_eq!(bars.phase.position(), state.phase_steps);
        assert!(bars.activity.message().starts_with("run "), "{state:?}");
    }
}
