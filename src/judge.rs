//! One commit judged against a hunt's endpoints.
//!
//! `git bisect run` wants a program that says good, bad or skip for the
//! checked-out commit. A hunt's journal already holds many runs of the good
//! and the bad endpoint; a commit is measured until the same sequential test
//! the hunt uses puts it near one of those levels, and the answer is given
//! as the exit code `git bisect run` understands.

use crate::app::{UsageError, default_work_dir, make_lab, resolve_plan};
use crate::cli::JudgeArgs;
use crate::decide::{Class, DecisionConfig, Reference, classify};
use crate::journal::{Event, Journal};
use crate::lab::{Prepared, RunOutcome, RunSpec};
use crate::stats;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code: the commit performs like the good endpoint.
pub const EXIT_GOOD: u8 = 0;
/// Exit code: the commit performs like the bad endpoint.
pub const EXIT_BAD: u8 = 1;
/// Exit code: no verdict (unsure within the run cap, unbuildable): `git bisect skip`.
pub const EXIT_SKIP: u8 = 125;
/// Exit code: an error; above 127 so `git bisect run` stops.
pub const EXIT_ABORT: u8 = 128;

/// The hunt's resolved profile, kept in its folder for judge.
pub const PROFILE_FILE: &str = "profile.json";

/// Examples for `pgbisect judge --help`.
pub const AFTER_HELP: &str = "\
Examples:
  After a hunt, let git bisect drive, judging each commit against the
  hunt's good and bad runs (--json FILE keeps each verdict):
    pgbisect --good REL_16_0 --bad master --clients 64 --max-runs 8
    git bisect start master REL_16_0
    git bisect run pgbisect judge HEAD --clients 64

  The commit is measured with the hunt's profile (kept in the hunt's
  folder) unless --profile is given.

  Judge one commit against a given hunt:
    pgbisect judge 1a2b3c4 --good REL_16_0 --bad master --work-dir /var/tmp/pg

Exit codes (as git bisect run reads them):
  0    good-like: at the good endpoint's level
  1    bad-like: at the bad endpoint's level
  125  unsure within --max-runs, or the commit cannot be built or run (skip)
  128  error (no hunt found, bad flags, a failed tool): stops git bisect";

/// A hunt's endpoints and their runs, read from its journal.
#[derive(Debug, Clone, PartialEq)]
pub struct HuntRuns {
    pub good: String,
    pub bad: String,
    pub clients: Option<u32>,
    pub good_tps: Vec<f64>,
    pub bad_tps: Vec<f64>,
    /// Highest run number in the journal.
    pub last_run: u64,
}

impl HuntRuns {
    /// The endpoints of the journal's last start, with their measured runs.
    /// `None` without a start event.
    pub fn from_events(events: &[Event]) -> Option<HuntRuns> {
        let (good, bad) = events.iter().rev().find_map(|e| match e {
            Event::Start { good, bad, .. } => Some((good.clone(), bad.clone())),
            _ => None,
        })?;
        let mut runs = HuntRuns {
            good,
            bad,
            clients: None,
            good_tps: vec![],
            bad_tps: vec![],
            last_run: 0,
        };
        for event in events {
            let Event::Run {
                run,
                commit,
                clients,
                outcome,
            } = event
            else {
                continue;
            };
            runs.last_run = runs.last_run.max(*run);
            let RunOutcome::Measured(m) = outcome else {
                continue;
            };
            if !(m.tps.is_finite() && m.tps > 0.0) {
                continue;
            }
            if *commit == runs.good {
                runs.good_tps.push(m.tps);
                runs.clients.get_or_insert(*clients);
            } else if *commit == runs.bad {
                runs.bad_tps.push(m.tps);
            }
        }
        Some(runs)
    }

    /// The two levels to judge between (trimmed mean of log TPS each) and
    /// the pooled noise; `None` with fewer than two runs of an endpoint.
    pub fn reference(&self) -> Option<Reference> {
        if self.good_tps.len() < 2 || self.bad_tps.len() < 2 {
            return None;
        }
        let sigma = stats::robust_log_sigma(&[&self.good_tps, &self.bad_tps])
            .map_or(0.05, |n| n.cautious_sigma())
            .max(0.002);
        Some(Reference {
            good_log_level: log_level(&self.good_tps),
            good_runs: self.good_tps.len(),
            bad_log_level: log_level(&self.bad_tps),
            bad_runs: self.bad_tps.len(),
            log_sigma: sigma,
        })
    }
}

/// Mean log throughput, without the extremes when there are five or more.
fn log_level(tps: &[f64]) -> f64 {
    let mut logs: Vec<f64> = tps.iter().map(|v| v.ln()).collect();
    logs.sort_by(f64::total_cmp);
    if logs.len() >= 5 {
        logs = logs[1..logs.len() - 1].to_vec();
    }
    logs.iter().sum::<f64>() / logs.len().max(1) as f64
}

/// The hunts' journals under `work_dir`, newest first.
fn journals(work_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(work_dir.join("hunts")) else {
        return vec![];
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path().join("journal.jsonl"))
        .filter_map(|p| {
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((modified, p))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

/// `pgbisect judge`: the verdict as an exit code; errors stop `git bisect`.
pub fn command(args: &JudgeArgs) -> ExitCode {
    match judge(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("pgbisect judge: error: {err:#}");
            ExitCode::from(EXIT_ABORT)
        }
    }
}

fn judge(args: &JudgeArgs) -> anyhow::Result<u8> {
    let mut run = args.run.clone();
    let repo_dir = run.lab.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = crate::repo::Repo::open(&repo_dir)?;
    let commit = repo.resolve(&args.commit)?;
    let want = |rev: &Option<String>| -> anyhow::Result<Option<String>> {
        Ok(match rev {
            Some(r) => Some(repo.resolve(r)?.id),
            None => None,
        })
    };
    let (want_good, want_bad) = (want(&run.good)?, want(&run.bad)?);
    let work_dir = match &run.lab.work_dir {
        Some(w) => w.clone(),
        None => default_work_dir(&repo_dir)?,
    };
    let (journal_path, hunt) = find_hunt(&work_dir, &want_good, &want_bad, run.clients)?;
    let reference = hunt.reference().ok_or_else(|| {
        UsageError(format!(
            "the hunt in {} has fewer than two runs of an endpoint: let it run longer",
            journal_path.display()
        ))
    })?;
    run.good = Some(hunt.good.clone());
    run.bad = Some(hunt.bad.clone());
    run.lab.work_dir = Some(work_dir.clone());
    run.clients = run.clients.or(hunt.clients);
    let hunt_dir = journal_path.parent().unwrap_or(&work_dir).to_path_buf();
    let mut plan = resolve_plan(&run)?;
    if run.lab.profile.is_none() {
        use_saved_profile(&mut plan, &run, &hunt_dir.join(PROFILE_FILE))?;
    }
    let _lock = crate::workdir::Lock::acquire(&work_dir)?;
    let mut lab = make_lab(&plan, &run.lab, &hunt_dir.join("judge-runs"))?;
    if let Prepared::Unbuildable { reason, .. } = lab.prepare(&commit)? {
        eprintln!("{}: cannot be built: {reason}", commit.short());
        return Ok(EXIT_SKIP);
    }
    let cfg: DecisionConfig = plan.config.decision;
    let run_json = args.run.json.as_deref();
    let mut tps = Vec::new();
    for run in (hunt.last_run + 1..).take(cfg.max_runs) {
        lab.prepare(&commit)?;
        let spec = RunSpec {
            clients: plan.config.clients,
            run,
        };
        match lab.run(&commit, spec)? {
            RunOutcome::Measured(m) if m.tps.is_finite() && m.tps > 0.0 => tps.push(m.tps),
            RunOutcome::Measured(_) => {}
            RunOutcome::Failed { reason } => {
                eprintln!("{}: a run failed: {reason}", commit.short());
                return Ok(EXIT_SKIP);
            }
        }
        let verdict = classify(&tps, &reference, &cfg);
        let (code, word) = match verdict.class {
            Class::GoodLike => (EXIT_GOOD, "good-like"),
            Class::BadLike => (EXIT_BAD, "bad-like"),
            Class::Unclear => continue,
        };
        report(&commit.id, word, &tps, &hunt, run_json)?;
        return Ok(code);
    }
    report(&commit.id, "unsure", &tps, &hunt, run_json)?;
    Ok(EXIT_SKIP)
}

/// Measures with the profile the hunt used, when it was kept: its build
/// and benchmark, and its decision settings unless given as flags.
fn use_saved_profile(
    plan: &mut crate::app::Plan,
    run: &crate::cli::RunArgs,
    path: &Path,
) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let profile: crate::profile::Profile = serde_json::from_str(&text)
        .with_context(|| format!("cannot read the hunt's profile {}", path.display()))?;
    let decision = &mut plan.config.decision;
    if let (None, Some(t)) = (run.threshold, profile.hunt.threshold) {
        decision.threshold = t / 100.0;
    }
    if let (None, Some(m)) = (run.max_runs, profile.hunt.max_runs) {
        decision.max_runs = m.max(decision.min_runs);
    }
    plan.profile = profile;
    Ok(())
}

/// The newest hunt in `work_dir` with these endpoints and clients (each
/// when given), and its journal.
fn find_hunt(
    work_dir: &Path,
    want_good: &Option<String>,
    want_bad: &Option<String>,
    clients: Option<u32>,
) -> anyhow::Result<(PathBuf, HuntRuns)> {
    let matches = |w: &Option<String>, id: &str| w.as_deref().is_none_or(|w| w == id);
    for path in journals(work_dir) {
        let Some(hunt) = HuntRuns::from_events(&Journal::load(&path)?) else {
            continue;
        };
        let same_clients = clients.is_none() || hunt.clients == clients;
        if matches(want_good, &hunt.good) && matches(want_bad, &hunt.bad) && same_clients {
            return Ok((path, hunt));
        }
    }
    let filtered = want_good.is_some() || want_bad.is_some() || clients.is_some();
    Err(UsageError(format!(
        "no hunt{} in {}: run a hunt first (pgbisect --good A --bad B ...)",
        if filtered {
            " with these --good/--bad/--clients"
        } else {
            ""
        },
        work_dir.join("hunts").display()
    ))
    .into())
}

/// Prints the verdict, and writes it as JSON when asked.
fn report(
    commit: &str,
    word: &str,
    tps: &[f64],
    hunt: &HuntRuns,
    json: Option<&Path>,
) -> anyhow::Result<()> {
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        stats::median(&v)
    };
    let (own, good, bad) = (median(tps), median(&hunt.good_tps), median(&hunt.bad_tps));
    println!(
        "{commit} {word}: median {own:.1} tps over {} runs (good {good:.1}, bad {bad:.1})",
        tps.len()
    );
    if let Some(path) = json {
        let body = serde_json::json!({
            "commit": commit,
            "verdict": word,
            "tps": tps,
            "median_tps": own,
            "good": { "commit": hunt.good, "median_tps": good, "runs": hunt.good_tps.len() },
            "bad": { "commit": hunt.bad, "median_tps": bad, "runs": hunt.bad_tps.len() },
        });
        std::fs::write(path, body.to_string())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::Measurement;

    fn run(n: u64, commit: &str, tps: f64) -> Event {
        Event::Run {
            run: n,
            commit: commit.into(),
            clients: 8,
            outcome: RunOutcome::Measured(Measurement {
                tps,
                latency_ms: None,
                failed_transactions: None,
                output: None,
            }),
        }
    }

    fn events() -> Vec<Event> {
        let mut e = vec![Event::Start {
            good: "g".into(),
            bad: "b".into(),
            plan: String::new(),
            at: String::new(),
        }];
        for i in 0..4 {
            e.push(run(2 * i + 1, "g", 1000.0 + i as f64 * 5.0));
            e.push(run(2 * i + 2, "b", 800.0 + i as f64 * 4.0));
        }
        e.push(run(9, "x", 950.0));
        e
    }

    #[test]
    fn reads_the_endpoints_runs() {
        let hunt = HuntRuns::from_events(&events()).unwrap();
        assert_eq!(hunt.good_tps.len(), 4);
        assert_eq!(hunt.bad_tps.len(), 4);
        assert_eq!(hunt.clients, Some(8));
        assert_eq!(hunt.last_run, 9);
        assert!(HuntRuns::from_events(&events()[1..]).is_none());
    }

    #[test]
    fn classifies_against_the_hunts_levels() {
        let reference = HuntRuns::from_events(&events())
            .unwrap()
            .reference()
            .unwrap();
        let cfg = DecisionConfig::default();
        assert_eq!(
            classify(&[1001.0, 1004.0, 998.0], &reference, &cfg).class,
            Class::GoodLike
        );
        assert_eq!(
            classify(&[801.0, 805.0, 799.0], &reference, &cfg).class,
            Class::BadLike
        );
    }

    #[test]
    fn too_few_endpoint_runs_give_no_reference() {
        let hunt = HuntRuns::from_events(&events()[..3]).unwrap();
        assert!(hunt.reference().is_none());
    }
}
