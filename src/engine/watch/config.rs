//! What the watcher is given: each profile's lab, and how it measures
//! and decides. Apart from the nightly loop in the folder's face, so that
//! every step of a night (measure, detect, drift, hunt, digest) reads
//! these without reaching back up to the loop that calls it.

use crate::core::change_points::ChangeOptions;
use crate::core::decide::DecisionConfig;
use crate::engine::hunt::budget::Budget;
use crate::lab::Lab;
use crate::report::watch::site::links::SiteUrl;

/// One profile's lab and the client counts it is measured at.
pub struct ProfileLab {
    /// The profile's name, as series are keyed.
    pub name: String,
    pub clients: Vec<u32>,
    pub lab: Box<dyn Lab>,
    /// Where the server and pgbench run at each client count, as stored
    /// with the runs; empty when the lab does not place them.
    pub placements: Vec<(u32, String)>,
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
    /// The side-by-side decision (the one `compare` makes).
    pub decision: DecisionConfig,
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
            budget: None,
            machine: None,
            digest_every: 7,
            reference: None,
            site_url: None,
            reported_by: "pgbisect watch".into(),
        }
    }
}
