//! The plan a hunt says before its first build (see
//! [`crate::core::outline`]), from its resolved plan and budget.

use super::Plan;
use crate::core::counts::{self, Measure};
use crate::core::outline::Outline;
use crate::engine::hunt::budget::{self, Budget};
use crate::engine::release_check;
use crate::progress::{Progress, ProgressEvent};

/// Seconds a PostgreSQL run takes besides pgbench's own: starting the
/// server, checking it, stopping it.
const RUN_OVERHEAD_SECONDS: f64 = 5.0;

/// Says the plan of the hunt in `plan` over `candidates` commits.
pub(super) fn say(
    plan: &Plan,
    candidates: usize,
    budget: Option<Budget>,
    progress: &mut dyn Progress,
) {
    for line in outline(plan, candidates, budget).lines(budget::human) {
        progress.event(&ProgressEvent::Note(line));
    }
}

fn outline(plan: &Plan, candidates: usize, budget: Option<Budget>) -> Outline {
    let measure = plan.config.measure;
    let decision = measure.decision(plan.config.decision);
    let release = plan.release.as_ref().map(|sides| {
        (
            sides.given.clone(),
            sides.merge_base.short().to_string(),
            sides.left.clone(),
        )
    });
    // A count leaves no doubt from one run a commit, and its runs are
    // fitted to last seconds, whatever the profile's.
    let (runs_per_step, counted_seconds) = match measure {
        Measure::Tps => (budget::RUNS_PER_STEP, None),
        Measure::Instructions => (1.0, Some(counts::run_seconds())),
    };
    let run_seconds = (!plan.profile.is_custom()).then(|| {
        let options = plan.profile.benchmark.pgbench_options(plan.config.clients);
        let warmup = options.warmup_secs.unwrap_or(options.duration_secs);
        counted_seconds.unwrap_or(
            f64::from(options.duration_secs)
                + f64::from(options.warmup_runs) * f64::from(warmup)
                + RUN_OVERHEAD_SECONDS,
        )
    });
    Outline {
        release,
        good: plan.good.short().to_string(),
        bad: plan.bad.short().to_string(),
        candidates,
        steps: budget::steps_to_one(candidates),
        runs_per_step,
        min_runs: decision.min_runs,
        max_runs: decision.max_runs,
        run_seconds,
        budget: budget.map(|b| {
            let left = b.left(b.now());
            (left, left * release_check::BUDGET_SHARE)
        }),
    }
}
