//! How a hunt is run: its settings, as the engine reads them and as the
//! work dir hashes them into a hunt's folder name (so it sits here, below
//! both).

use crate::core::counts::Measure;
use crate::core::decide::DecisionConfig;
use crate::core::posterior::Search;

/// How a hunt is run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HuntConfig {
    pub decision: DecisionConfig,
    pub clients: u32,
    /// Stop after the first confirmed culprit.
    pub first_only: bool,
    /// A reference run is made when the last one is this many runs old.
    pub reference_every: u64,
    /// How many recent good-level runs the reference level rests on.
    pub reference_window: usize,
    /// Failed culprit checks in one range before giving up on it.
    pub max_verify_failures: u32,
    /// Failed runs of one commit before it is skipped.
    pub max_run_failures: u32,
    /// Choose the run length from the noise at the endpoints (when the
    /// lab can vary it), the profile's length being the longest.
    pub choose_run_length: bool,
    /// How a range is searched. Left out of the plan when it is
    /// [`Search::Bisect`], so hunts begun before there was a choice keep
    /// their folder.
    #[serde(skip_serializing_if = "Search::is_bisect", default = "bisect")]
    pub search: Search,
    /// Commits the posterior search measures at once in a round over
    /// several hosts, each host taking one in turn (a k-ary search);
    /// `None`: the hosts, up to `engine::hunt::posterior::CANDIDATES_A_ROUND`. Not part
    /// of the plan key: it changes which runs are made, not what is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<u32>,
    /// What decides: tps, or the instructions a transaction costs. Left
    /// out of the plan when it is tps, so hunts begun before there was a
    /// choice keep their folder; a hunt on counts is a hunt of its own.
    #[serde(default, skip_serializing_if = "Measure::is_tps")]
    pub measure: Measure,
}

/// The search of a plan that names none: it was saved with the
/// candidate-by-candidate one (see [`HuntConfig::search`]).
fn bisect() -> Search {
    Search::Bisect
}

impl Default for HuntConfig {
    fn default() -> Self {
        HuntConfig {
            decision: DecisionConfig::default(),
            clients: 1,
            first_only: false,
            reference_every: 6,
            reference_window: 8,
            max_verify_failures: 3,
            max_run_failures: 2,
            choose_run_length: false,
            search: Search::default(),
            candidates: None,
            measure: Measure::Tps,
        }
    }
}
