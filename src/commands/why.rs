//! The why-runs after a hunt's culprits, and in `compare --why`: what to
//! sweep, how many runs, within the time budget, kept in the hunt's
//! folder so a resumed hunt does not make them again.

use super::hunt::write_file;
use crate::core::why::Why;
use crate::engine::hunt::budget::Budget;
use crate::engine::why::{self, WhyPlan};
use crate::lab::Lab;
use crate::model::Commit;
use crate::progress::{Progress, ProgressEvent};
use crate::report::findings::HuntReport;
use crate::workspace::HuntDir;
use clap::Args;
use serde::{Deserialize, Serialize};

/// Flags of the why-runs.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WhyArgs {
    /// Runs per side and client count of the why-runs (the culprit and
    /// its parent measured again with instruments).
    #[arg(long, value_name = "N", default_value_t = why::DEFAULT_RUNS,
          value_parser = at_least_two)]
    #[serde(default = "default_runs")]
    pub why_runs: usize,
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

/// The machine's CPUs, for the default client sweep.
fn cpus() -> u32 {
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok())
        .unwrap_or(1)
}

/// The why-runs of every culprit of `report`, each kept in the hunt's
/// folder (and read from there when a resumed hunt already made them).
pub(super) fn after_hunt(
    lab: &mut dyn Lab,
    report: &HuntReport,
    hunt: &HuntDir,
    (profile_clients, runs): (&[u32], usize),
    budget: Option<Budget>,
    progress: &mut dyn Progress,
) -> anyhow::Result<Vec<Why>> {
    let mut found = Vec::new();
    for (i, culprit) in report.culprits.iter().enumerate() {
        let path = hunt.why(&culprit.commit);
        if let Some(done) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Why>(&t).ok())
        {
            found.push(done);
            continue;
        }
        let plan = WhyPlan {
            clients: why::sweep(profile_clients, cpus(), report.clients),
            runs,
            main_clients: report.clients,
            first_run: (i as u64 + 1) * 10_000,
        };
        progress.event(&ProgressEvent::Phase(format!(
            "why: {} against its parent at {} clients, {} runs a side each",
            &culprit.commit[..culprit.commit.len().min(8)],
            list(&plan.clients),
            plan.runs
        )));
        let mut fits = |seconds: f64| budget.is_none_or(|b| b.fits(b.now(), seconds));
        let found_now = why::measure(
            lab,
            &Commit::bare(culprit.parent.clone()),
            &Commit::bare(culprit.commit.clone()),
            &plan,
            &mut fits,
            progress,
        )?;
        let body = serde_json::to_string_pretty(&found_now)?;
        write_file(&path, &body)?;
        found.push(found_now);
    }
    Ok(found)
}

/// `1, 2, 4`.
pub(super) fn list(clients: &[u32]) -> String {
    clients
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
