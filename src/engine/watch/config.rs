//! What the watcher is given: each profile's lab, and how it measures
//! and decides. Apart from the nightly loop in the folder's face, so that
//! every step of a night (measure, detect, drift, hunt, digest) reads
//! these without reaching back up to the loop that calls it.

use crate::core::change_points::ChangeOptions;
use crate::core::counts::{INSTRUCTIONS_SAYS, Measure, MeasureChoice, TPS_SAYS};
use crate::core::decide::DecisionConfig;
use crate::engine::hunt::budget::Budget;
use crate::lab::Lab;
use crate::report::watch::site::links::SiteUrl;
use crate::store::measured_series_key;

/// One profile's lab, the client counts it is measured at and the
/// measures of its series.
pub struct ProfileLab {
    /// The profile's name, as series are keyed.
    pub name: String,
    pub clients: Vec<u32>,
    pub lab: Box<dyn Lab>,
    /// Where the server and pgbench run at each client count, as stored
    /// with the runs; empty when the lab does not place them.
    pub placements: Vec<(u32, String)>,
    /// What its series measure, tps first: a series a client count and
    /// measure ([`measured_series_key`]). With instructions the lab
    /// counts: its [`Lab::counted_run`] answers.
    pub measures: Vec<Measure>,
}

/// One series a profile's lab measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub clients: u32,
    pub measure: Measure,
    /// Its name in the store.
    pub key: String,
}

impl ProfileLab {
    /// Its series, client count by client count, each on every measure.
    pub fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for &clients in &self.clients {
            for &measure in &self.measures {
                out.push(Series {
                    clients,
                    measure,
                    key: measured_series_key(&self.name, clients, measure),
                });
            }
        }
        out
    }
}

/// What the watcher measures a profile's series on (`watch --measure`,
/// or the profile's `measure`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WatchMeasures {
    /// Timed runs: tps series only, as before counts.
    #[default]
    Tps,
    /// Counted runs only: a count series for each client count.
    Instructions,
    /// Both: a count series beside each tps series.
    Both,
}

impl WatchMeasures {
    /// Parses `tps`, `instructions` or `both`.
    pub fn parse(text: &str) -> Result<WatchMeasures, String> {
        match text {
            "tps" => Ok(WatchMeasures::Tps),
            "instructions" => Ok(WatchMeasures::Instructions),
            "both" => Ok(WatchMeasures::Both),
            other => Err(format!(
                "`{other}` is not what the watcher measures: give {TPS_SAYS}, \
                 {INSTRUCTIONS_SAYS} or `both` (a count series beside each tps series)"
            )),
        }
    }

    /// What a profile's `measure` asks of the watcher: `auto`, which a
    /// hunt decides at its endpoints, is both series here (the watcher
    /// has no endpoints to decide at; a change on either is hunted on its
    /// own measure).
    pub fn of_profile(choice: MeasureChoice) -> WatchMeasures {
        match choice {
            MeasureChoice::Tps => WatchMeasures::Tps,
            MeasureChoice::Instructions => WatchMeasures::Instructions,
            MeasureChoice::Auto => WatchMeasures::Both,
        }
    }

    /// The measures of the series, tps first.
    pub fn measures(self) -> Vec<Measure> {
        match self {
            WatchMeasures::Tps => vec![Measure::Tps],
            WatchMeasures::Instructions => vec![Measure::Instructions],
            WatchMeasures::Both => vec![Measure::Tps, Measure::Instructions],
        }
    }

    /// Whether runs are counted.
    pub fn counts(self) -> bool {
        self != WatchMeasures::Tps
    }
}

/// How the watcher measures and decides.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub branch: String,
    /// Most commits measured a night (the tip among them).
    pub per_night: usize,
    /// Days a first night backfills, one commit a day.
    pub backfill: usize,
    /// Pairs of runs (the commit's and the reference's) per commit, series
    /// and night: at least.
    pub rounds: u32,
    /// At most: a series whose pairs scattered over the last nights gets
    /// more pairs, up to this (`rounds`).
    pub max_rounds: u32,
    /// Runs a side when a change is measured again side by side.
    pub confirm_runs: usize,
    /// Nights the change-point test reads, back from tonight.
    pub window: usize,
    pub detect: ChangeOptions,
    /// The side-by-side decision (the one `compare` makes), on tps.
    pub decision: DecisionConfig,
    /// The least rise a count series confirms, as the fraction that what
    /// instructions buy falls by ([`COUNTS_THRESHOLD`]).
    pub counts_threshold: f64,
    /// When the night must end.
    pub budget: Option<Budget>,
    /// The machine's facts, as JSON, stored with every run.
    pub machine: Option<String>,
    /// Days a digest covers (the `digest` module); 0: no digest.
    pub digest_every: u32,
    /// The commit the nights begun from now on are measured beside (its
    /// full SHA, once the session resolved `--reference`); `None`: the
    /// last night's, and on the first night the first commit it measures.
    pub reference: Option<String>,
    /// Where the `--html` site is served: a finding's mail and the digest
    /// link a change's page and its hunt report's there.
    pub site_url: Option<SiteUrl>,
    /// Who a finding's `Reported-by:` trailer credits: the watcher, with
    /// the address its mail comes from.
    pub reported_by: String,
}

/// The least rise of instructions a transaction a count series confirms,
/// as the fraction that what they buy falls by (0.5%): counted runs
/// repeat to 0.1-0.3% (BENCHMARKS), so a 1% step measured again reads
/// past it from three runs a side, where tps needs its 3% to stay clear
/// of its noise.
pub const COUNTS_THRESHOLD: f64 = 0.005;

/// The detector's setting: the looser one of the study behind it
/// (`examples/study_watch.rs`, BENCHMARKS.md "Change points over nightly
/// series"): the points read one by one, a level at least three points
/// long, significance 0.01. Alone it finds a 5% step within 2 nights
/// (median; 3 at the 90th percentile) at about 5.5 false alarms in 100
/// nights per series; the side-by-side confirmation of every candidate
/// (`detect`) is what keeps those from reaching anyone.
pub fn looser_detector() -> ChangeOptions {
    ChangeOptions {
        min_segment: 3,
        significance: 0.01,
        permutations: 199,
        ..ChangeOptions::default()
    }
}

impl WatchConfig {
    /// The side-by-side decision on `measure` (a hunt's on that measure
    /// too): counts with their own noise floor and fewer runs
    /// ([`Measure::decision`]), and their own threshold
    /// (`counts_threshold`), as counts repeat to a fraction of a percent.
    pub fn decision_on(&self, measure: Measure) -> DecisionConfig {
        match measure {
            Measure::Tps => self.decision,
            Measure::Instructions => measure.decision(DecisionConfig {
                threshold: self.counts_threshold,
                ..self.decision
            }),
        }
    }

    /// The defaults for `branch`.
    pub fn new(branch: &str) -> WatchConfig {
        WatchConfig {
            branch: branch.to_string(),
            per_night: 3,
            backfill: 30,
            rounds: 3,
            max_rounds: 3,
            confirm_runs: 5,
            window: 60,
            detect: looser_detector(),
            decision: DecisionConfig {
                // A 5% step measured again must read as at least 3% lower
                // to be confirmed: the decision's threshold is on the
                // estimate, which scatters around the step.
                threshold: 0.03,
                ..DecisionConfig::default()
            },
            counts_threshold: COUNTS_THRESHOLD,
            budget: None,
            machine: None,
            digest_every: 7,
            reference: None,
            site_url: None,
            reported_by: "pgbisect watch".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_asking_auto_is_watched_on_both_measures() {
        let of = WatchMeasures::of_profile;
        assert_eq!(of(MeasureChoice::Tps), WatchMeasures::Tps);
        assert_eq!(of(MeasureChoice::Instructions), WatchMeasures::Instructions);
        assert_eq!(of(MeasureChoice::Auto), WatchMeasures::Both);
        assert_eq!(
            WatchMeasures::Both.measures(),
            [Measure::Tps, Measure::Instructions]
        );
        assert!(!WatchMeasures::Tps.counts());
        assert!(WatchMeasures::parse("auto").unwrap_err().contains("`both`"));
        assert_eq!(WatchMeasures::parse("both"), Ok(WatchMeasures::Both));
    }

    #[test]
    fn counts_are_decided_with_their_own_noise_and_fewer_runs() {
        let cfg = WatchConfig::new("master");
        let counts = cfg.decision_on(Measure::Instructions);
        assert!(counts.exact && counts.min_runs <= cfg.decision.min_runs);
        assert_eq!(counts.threshold, COUNTS_THRESHOLD);
        assert_eq!(cfg.decision_on(Measure::Tps), cfg.decision);
    }

    #[test]
    fn each_measure_confirms_at_its_own_threshold() {
        let mut cfg = WatchConfig::new("master");
        (cfg.decision.threshold, cfg.counts_threshold) = (0.08, 0.002);
        assert_eq!(cfg.decision_on(Measure::Tps).threshold, 0.08);
        assert_eq!(cfg.decision_on(Measure::Instructions).threshold, 0.002);
    }
}
