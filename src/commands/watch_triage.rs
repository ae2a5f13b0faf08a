//! `pgbisect watch mark CHANGE intended|wrong --why TEXT` and `pgbisect
//! watch hunt CHANGE`: a person's triage of the watcher's changes, each
//! named by its number as the site and the digest show it (`#N`). The
//! work is the session's ([`crate::engine::session::watch_triage`]).

use super::watch_place::{Place, Thresholds, lab_args, profiles, store_at};
use super::{run_args::NotifyArgs, values};
use crate::engine::session::resolved::TimeLimit;
use crate::engine::session::watch::WatchAsk;
use crate::engine::session::watch_triage::{self as session, Marked};
use crate::engine::watch::WatchConfig;
use crate::engine::watch::WatchMeasures;
use crate::engine::watch::rehunt::Rehunted;
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION, UsageError};
use crate::model::short_sha;
use crate::store::{ChangeRow, Mark};
use clap::Args;
use std::process::ExitCode;

/// `pgbisect watch mark`.
#[derive(Debug, Args, Clone)]
pub struct MarkArgs {
    /// The change's number, as the site and the digest show it (#N).
    #[arg(value_name = "CHANGE", value_parser = change_number)]
    pub change: i64,
    /// intended: a real change that was meant (a feature's cost); wrong:
    /// not a real change (the machine, the benchmark).
    #[arg(value_name = "intended|wrong", value_parser = mark_word)]
    pub mark: Mark,
    /// Why, in a few words; the site shows it beside the mark.
    #[arg(long, value_name = "TEXT")]
    pub why: Option<String>,
    #[command(flatten)]
    pub place: Place,
}

/// `pgbisect watch hunt`.
#[derive(Debug, Args, Clone)]
pub struct HuntArgs {
    /// The change's number, as the site and the digest show it (#N).
    #[arg(value_name = "CHANGE", value_parser = change_number)]
    pub change: i64,
    /// The workload profile the watch measures the change's series with,
    /// a bundled name or a .toml file; repeat as for the watch.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Vec<String>,
    #[command(flatten)]
    pub thresholds: Thresholds,
    /// End within this much wall time (e.g. 2h); the watcher's next start
    /// goes on with the hunt.
    #[arg(long, value_name = "DURATION", conflicts_with = "deadline",
          value_parser = values::time_budget)]
    pub time_budget: Option<String>,
    /// End by this local time of day (HH:MM); the watcher's next start
    /// goes on with the hunt.
    #[arg(long, value_name = "HH:MM", value_parser = values::clock_time)]
    pub deadline: Option<String>,
    #[command(flatten)]
    pub place: Place,
}

/// `pgbisect watch mark`: keeps the mark, says what it replaced.
pub(super) fn mark(args: &MarkArgs) -> anyhow::Result<ExitCode> {
    let Some(why) = &args.why else {
        return Err(UsageError(
            "watch mark: say why with --why TEXT (e.g. --why 'the cost of the new WAL format, \
             accepted in review'); the site shows it beside the mark"
                .into(),
        )
        .into());
    };
    let work = lab_args(&args.place).work_dir()?;
    let store = store_at(&args.place)?;
    let place = (&work, store.as_ref(), args.place.branch.as_deref());
    let done = session::mark(place, args.change, args.mark, why)?;
    print!("{}", crate::shown::visible(&marked(&done)));
    Ok(ExitCode::SUCCESS)
}

/// What `watch mark` says it did.
fn marked(done: &Marked) -> String {
    let mut out = format!(
        "change #{} ({}) marked {}: {}\n",
        done.change.id,
        describe(&done.change),
        done.mark.mark.as_str(),
        done.mark.why
    );
    if let Some(before) = &done.replaced {
        out.push_str(&format!(
            "it was marked {} on {} ({}); that mark is replaced\n",
            before.mark.as_str(),
            crate::time::date_from_unix(before.marked),
            before.why
        ));
    }
    out
}

/// `select-only/c64 -12.3% between 0d1e2f3a..4b5c6d7e`, or
/// `select-only/c1/instructions +1.2% instructions a transaction between ..`.
fn describe(c: &ChangeRow) -> String {
    format!(
        "{} {} between {}..{}",
        c.series,
        crate::report::watch::measured::size(c).short(),
        short_sha(&c.before),
        short_sha(&c.after)
    )
}

/// `pgbisect watch hunt`: the hunt's outcome, and its exit code as a
/// hunt's (0 culprit found, 1 no regression, 3 inconclusive or stopped).
pub(super) fn hunt(args: &HuntArgs) -> anyhow::Result<ExitCode> {
    let lab = lab_args(&args.place);
    let mut config = WatchConfig::new(args.place.branch.as_deref().unwrap_or("master"));
    args.thresholds.apply(&mut config);
    config.budget = super::hunt::budget(&TimeLimit {
        budget: args.time_budget.clone(),
        deadline: args.deadline.clone(),
    })?;
    let ask = WatchAsk {
        repo_dir: lab.repo_dir(),
        work: lab.work_dir()?,
        store: store_at(&args.place)?,
        branch: args.place.branch.clone(),
        // The change's own series says what it is hunted on.
        profiles: profiles(&args.profile, (&[], Some(WatchMeasures::Tps)), &lab)?,
        choices: super::plan::choices(&lab),
        config,
        replay: None,
        notifier: NotifyArgs::default().notifier()?,
        cc_author: false,
        why_runs: Some(crate::engine::why::DEFAULT_RUNS),
    };
    let done = session::hunt_again(ask, args.change, &mut |line| {
        eprintln!("{}", crate::shown::visible_line(line));
    })?;
    print!("{}", crate::shown::visible(&rehunted(&done)));
    Ok(ExitCode::from(match done.hunted.hunt.outcome.as_deref() {
        Some("culprit-found") => EXIT_CULPRIT_FOUND,
        Some("no-regression") => EXIT_NO_REGRESSION,
        _ => EXIT_INCONCLUSIVE,
    }))
}

/// What `watch hunt` says it did.
fn rehunted(done: &Rehunted) -> String {
    let h = &done.hunted;
    let state = match (&h.hunt.outcome, &h.hunt.culprit) {
        (None, _) => "stopped; the watcher's next start goes on with it".to_string(),
        (Some(_), Some(culprit)) => format!("culprit {culprit}"),
        (Some(outcome), None) => outcome.clone(),
    };
    let mut out = format!(
        "change #{} ({}) hunted again: {state}\n",
        h.change.id,
        describe(&h.change)
    );
    if h.hunt.report.is_some() {
        let report = crate::workspace::HuntDir::at(&h.folder).report_text();
        out.push_str(&format!("  report: {}\n", report.display()));
    }
    if let Some(earlier) = &done.earlier {
        out.push_str(&format!("  the hunt before it: {}\n", earlier.display()));
    }
    if let Some(reason) = &done.stopped {
        out.push_str(&format!("  stopped: {reason}\n"));
    }
    out
}

/// A change's number: `3`, or `#3` as the site shows it.
fn change_number(text: &str) -> Result<i64, String> {
    match text.trim().trim_start_matches('#').parse::<i64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "`{text}` is not a change's number: give it as the site and the digest show it, \
             e.g. 3 (or #3)"
        )),
    }
}

/// `intended` or `wrong`.
fn mark_word(text: &str) -> Result<Mark, String> {
    Mark::parse(text.trim()).ok_or_else(|| {
        format!(
            "`{text}` is not a mark: give intended (a real change that was meant, e.g. a \
             feature's cost) or wrong (not a real change)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_named_by_its_number_with_or_without_its_hash() {
        assert_eq!(change_number("3"), Ok(3));
        assert_eq!(change_number("#12"), Ok(12));
        for bad in ["0", "-1", "three", "#"] {
            let err = change_number(bad).unwrap_err();
            assert!(err.contains("e.g. 3"), "{bad}: {err}");
        }
        assert_eq!(mark_word("wrong"), Ok(Mark::Wrong));
        assert!(mark_word("meant").unwrap_err().contains("intended"));
    }
}
