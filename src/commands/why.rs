//! The flags of the why-runs (after a hunt's culprits, and in `compare
//! --why`); the runs are made by [`crate::engine::session::why`].

use crate::engine::why;
use clap::Args;
use serde::{Deserialize, Serialize};

/// Flags of the why-runs.
#[derive(Debug, Args, Clone, Serialize, Deserialize)]
#[serde(default)]
#[command(next_help_heading = super::args::WHY_HEADING)]
pub struct WhyArgs {
    /// Runs per side and client count of the why-runs (the culprit and
    /// its parent measured again with instruments).
    #[arg(long, value_name = "N", default_value_t = why::DEFAULT_RUNS,
          value_parser = at_least_two)]
    #[serde(default = "default_runs")]
    pub why_runs: usize,
}

impl Default for WhyArgs {
    fn default() -> Self {
        WhyArgs {
            why_runs: why::DEFAULT_RUNS,
        }
    }
}

/// `--why-runs`: a spread needs two runs a side.
fn at_least_two(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(format!(
            "`{text}`: give at least 2 runs a side, e.g. --why-runs 3 (the spread needs two)"
        )),
    }
}

fn default_runs() -> usize {
    why::DEFAULT_RUNS
}
