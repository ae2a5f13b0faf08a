//! `pgbisect judge COMMIT`: one commit against a hunt's endpoints, answered
//! with the exit code `git bisect run` reads.

use super::args::TargetArgs;
use super::hosts::HostArgs;
use super::lab::make_lab_on;
use super::output::write_output_file;
use super::plan::{Plan, resolve_plan};
use crate::core::stats;
use crate::engine::judge::{HuntRuns, Judgement, Verdict, judge, on_host};
use crate::error::UsageError;
use crate::journal::Journal;
use crate::profile::Profile;
use crate::repo::Repo;
use crate::workspace::{COMMAND_FILE, HuntDir, WorkDir};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `pgbisect judge`.
#[derive(Debug, Args, Clone)]
pub struct JudgeArgs {
    /// The commit to judge (e.g. HEAD under `git bisect run`).
    #[arg(value_name = "COMMIT")]
    pub commit: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Write the verdict as JSON to this file.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Where to measure (default: where the hunt measured): each run is
    /// judged against its own host's levels.
    #[command(flatten)]
    pub on: super::hosts::HostArgs,
}

/// Hides from `judge --help` the flags it shares with a hunt that only
/// a search reads: a judgement measures one commit, it searches nothing.
pub fn hide_hunt_only(arg: clap::Arg) -> clap::Arg {
    let hunt_only = ["search", "candidates", "run_length"];
    if hunt_only.contains(&arg.get_id().as_str()) {
        arg.hide(true)
    } else {
        arg
    }
}

/// Exit code: the commit performs like the good endpoint.
pub const EXIT_GOOD: u8 = 0;
/// Exit code: the commit performs like the bad endpoint.
pub const EXIT_BAD: u8 = 1;
/// Exit code: no verdict (unsure within the run cap, unbuildable): `git bisect skip`.
pub const EXIT_SKIP: u8 = 125;
/// Exit code: an error; above 127 so `git bisect run` stops.
pub const EXIT_ABORT: u8 = 128;

/// Examples for `pgbisect judge --help`.
pub const AFTER_HELP: &str = "\
Examples:
  After a hunt, let git bisect drive, judging each commit against the
  hunt's good and bad runs (--json FILE keeps each verdict):
    pgbisect --good REL_16_0 --bad master --clients 64 --max-runs 8
    git bisect start master REL_16_0
    git bisect run pgbisect judge HEAD --clients 64

  The commit is measured with the hunt's profile (kept in the hunt's
  folder) unless --profile is given, and where the hunt measured (its
  --hosts or --slurm, or its profile's [hosts]) unless --hosts or --slurm
  is given: each run is judged against its own host's levels.

  Judge one commit against a given hunt:
    pgbisect judge 1a2b3c4 --good REL_16_0 --bad master --work-dir /var/tmp/pg

Exit codes (as git bisect run reads them):
  0    good-like: at the good endpoint's level
  1    bad-like: at the bad endpoint's level
  125  unsure within --max-runs, or the commit cannot be built or run (skip)
  128  error (no hunt found, bad flags, a failed tool): stops git bisect";

/// `pgbisect judge`: the verdict as an exit code; errors stop `git bisect`.
pub(super) fn command(args: &JudgeArgs) -> ExitCode {
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("pgbisect judge: error: {err:#}");
            ExitCode::from(EXIT_ABORT)
        }
    }
}

fn run(args: &JudgeArgs) -> anyhow::Result<u8> {
    let mut target = args.target.clone();
    if target.lab.repo.is_none() && target.lab.work_dir.is_some() {
        // The commit is one of the hunt's repository, wherever judge runs.
        target.lab.repo = hunts_repo(&target.lab.work_dir()?);
    }
    let repo = Repo::open(&target.lab.repo_dir())?;
    let commit = repo.resolve(&args.commit)?;
    // The hunt's good end is where a release off --bad's line left it.
    let (want_good, want_bad) = match (&target.good, &target.bad) {
        (Some(good), Some(bad)) => {
            let ends = repo.endpoints(good, bad)?;
            (Some(ends.start.id), Some(ends.bad.commit.id))
        }
        (good, bad) => {
            let want = |rev: &Option<String>| -> anyhow::Result<Option<String>> {
                Ok(match rev {
                    Some(r) => Some(repo.resolve(r)?.id),
                    None => None,
                })
            };
            (want(good)?, want(bad)?)
        }
    };
    let work = target.lab.work_dir()?;
    let (hunt_dir, hunt) = find_hunt(&work, &want_good, &want_bad, target.clients)?;
    let references = hunt.references();
    if references.is_empty() {
        return Err(UsageError(format!(
            "the hunt in {} has fewer than two runs of an endpoint: let it run longer",
            hunt_dir.dir().display()
        ))
        .into());
    }
    target.good = Some(hunt.good.clone());
    target.bad = Some(hunt.bad.clone());
    target.lab.work_dir = Some(work.root().to_path_buf());
    target.clients = target.clients.or(hunt.clients);
    let mut plan = resolve_plan(&target, false)?;
    if target.lab.profile.is_none() {
        use_saved_profile(&mut plan, &target, &hunt_dir.profile())?;
    }
    let _lock = work.create_and_lock()?;
    crate::proc::install_signal_handlers().context("cannot install the signal handlers")?;
    let held = super::hosts::take(
        &hosts_of(args, &hunt_dir),
        &plan.profile,
        (&work, &hunt_dir.name, "judgement"),
        crate::progress::for_stderr().as_mut(),
    )?;
    let mut lab = make_lab_on(
        &plan,
        (&target.lab, &crate::machine::steady::Watch::default()),
        &hunt_dir.judge_runs(),
        held.as_ref().map(|h| (h, "judge-")),
    )?;
    check_hosts(&lab.hosts(), &references)?;
    let cfg = plan.config.decision;
    let judged = judge(
        lab.as_mut(),
        &commit,
        &references,
        &cfg,
        (plan.config.clients, hunt.last_run, hunt.seconds),
    )?;
    let (code, word) = match &judged.verdict {
        Verdict::GoodLike => (EXIT_GOOD, "good-like"),
        Verdict::BadLike => (EXIT_BAD, "bad-like"),
        Verdict::Unsure => (EXIT_SKIP, "unsure"),
        Verdict::Unbuildable(reason) => {
            eprintln!("{}: cannot be built: {reason}", commit.short());
            return Ok(EXIT_SKIP);
        }
        Verdict::RunFailed(reason) => {
            eprintln!("{}: a run failed: {reason}", commit.short());
            return Ok(EXIT_SKIP);
        }
    };
    let measured_on = held.as_ref().map(|h| h.describe());
    let said = Said {
        commit: &commit.id,
        word,
        judged: &judged,
        measured_on: measured_on.as_deref(),
    };
    report(&said, &hunt, args.json.as_deref())?;
    Ok(code)
}

/// The hosts to measure on: those given, or else those the hunt was
/// started with (its profile's `[hosts]` is read with the profile).
fn hosts_of(args: &JudgeArgs, hunt_dir: &HuntDir) -> HostArgs {
    if !args.on.hosts.is_empty() || args.on.slurm {
        return args.on.clone();
    }
    super::run_args::load(hunt_dir).map_or_else(|_| HostArgs::default(), |run| run.on)
}

/// Each run is judged against its own host's levels: the hosts that
/// measure now must be among those the hunt measured on.
fn check_hosts(
    hosts: &[String],
    references: &[(Option<String>, crate::core::decide::Reference)],
) -> anyhow::Result<()> {
    let now: Vec<Option<String>> = if hosts.is_empty() {
        vec![None]
    } else {
        hosts.iter().cloned().map(Some).collect()
    };
    if now.iter().any(|h| references.iter().any(|(r, _)| r == h)) {
        return Ok(());
    }
    let name = |h: &Option<String>| h.clone().unwrap_or_else(|| "this machine".into());
    let names =
        |hs: &mut dyn Iterator<Item = &Option<String>>| hs.map(name).collect::<Vec<_>>().join(", ");
    let then = names(&mut references.iter().map(|(h, _)| h));
    Err(UsageError(format!(
        "the hunt's endpoints were measured on {then}, and a run is judged only against \
         its own host's levels: judge on {} measures where the hunt has none\n\
         hint: measure where the hunt did ({})",
        names(&mut now.iter()),
        if references.iter().any(|(h, _)| h.is_none()) {
            "this machine: drop --hosts/--slurm".to_string()
        } else {
            format!(
                "--hosts {}, or --slurm with the same nodes",
                then.replace(", ", ",")
            )
        }
    ))
    .into())
}

/// The repository the newest hunt in `work` ran in, as it saved it.
fn hunts_repo(work: &WorkDir) -> Option<PathBuf> {
    let hunt = work.choose_hunt(None, COMMAND_FILE).ok()?;
    super::run_args::load(&hunt).ok()?.target.lab.repo
}

/// Measures with the profile the hunt used, when it was kept: its build
/// and benchmark, and its decision settings unless given as flags.
fn use_saved_profile(plan: &mut Plan, target: &TargetArgs, path: &Path) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let profile: Profile = serde_json::from_str(&text)
        .with_context(|| format!("cannot read the hunt's profile {}", path.display()))?;
    let decision = &mut plan.config.decision;
    if let (None, Some(t)) = (target.threshold, profile.hunt.threshold) {
        decision.threshold = t / 100.0;
    }
    if let (None, Some(m)) = (target.max_runs, profile.hunt.max_runs) {
        decision.max_runs = m.max(decision.min_runs);
    }
    plan.profile = profile;
    Ok(())
}

/// The newest hunt in `work` with these endpoints and clients (each when
/// given), and its endpoints' runs.
fn find_hunt(
    work: &WorkDir,
    want_good: &Option<String>,
    want_bad: &Option<String>,
    clients: Option<u32>,
) -> anyhow::Result<(HuntDir, HuntRuns)> {
    let matches = |w: &Option<String>, id: &str| w.as_deref().is_none_or(|w| w == id);
    for hunt_dir in work.journals()? {
        let Some(hunt) = HuntRuns::from_events(&Journal::load(&hunt_dir.journal())?) else {
            continue;
        };
        let same_clients = clients.is_none() || hunt.clients == clients;
        if matches(want_good, &hunt.good) && matches(want_bad, &hunt.bad) && same_clients {
            return Ok((hunt_dir, hunt));
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
        work.hunts_display()
    ))
    .into())
}

/// What judge says of a commit.
struct Said<'a> {
    commit: &'a str,
    word: &'a str,
    judged: &'a Judgement,
    /// The hosts that measured, when not this machine.
    measured_on: Option<&'a str>,
}

/// `median 995.2 tps over 3 runs (good 1001.0, bad 805.6)`.
fn levels(median: f64, runs: usize, (good, bad): (f64, f64)) -> String {
    let s = if runs == 1 { "" } else { "s" };
    format!("median {median:.1} tps over {runs} run{s} (good {good:.1}, bad {bad:.1})")
}

/// Prints the verdict, with each host's medians when several measured,
/// and writes it as JSON when asked.
fn report(said: &Said, hunt: &HuntRuns, json: Option<&Path>) -> anyhow::Result<()> {
    let median = |v: &[f64]| stats::median(v);
    let tps = &said.judged.tps;
    let (own, good, bad) = (median(tps), median(&hunt.good_tps), median(&hunt.bad_tps));
    println!(
        "{} {}: {}",
        said.commit,
        said.word,
        levels(own, tps.len(), (good, bad))
    );
    let mut hosts: Vec<Option<String>> = Vec::new();
    for h in &said.judged.hosts {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    let per_host: Vec<serde_json::Value> = hosts
        .iter()
        .filter_map(|h| Some((h.as_ref()?, h)))
        .map(|(name, h)| {
            let runs = on_host(tps, &said.judged.hosts, h);
            let (good, bad) = hunt.on_host(h);
            let (own, good, bad) = (median(&runs), median(&good), median(&bad));
            println!("  on {name}: {}", levels(own, runs.len(), (good, bad)));
            serde_json::json!({
                "host": name, "median_tps": own, "runs": runs.len(),
                "good_median_tps": good, "bad_median_tps": bad,
            })
        })
        .collect();
    if let Some(on) = said.measured_on {
        println!("measured on {on}");
    }
    if let Some(path) = json {
        let mut body = serde_json::json!({
            "commit": said.commit,
            "verdict": said.word,
            "tps": tps,
            "median_tps": own,
            "good": { "commit": hunt.good, "median_tps": good, "runs": hunt.good_tps.len() },
            "bad": { "commit": hunt.bad, "median_tps": bad, "runs": hunt.bad_tps.len() },
        });
        if let Some(on) = said.measured_on {
            body["measured_on"] = on.into();
            body["hosts"] = per_host.into();
        }
        write_output_file(path, &body.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::Reference;

    fn reference() -> Reference {
        Reference {
            good_log_level: 7.0,
            good_runs: 3,
            bad_log_level: 6.8,
            bad_runs: 3,
            log_sigma: 0.01,
        }
    }

    #[test]
    fn runs_are_made_only_where_the_hunt_has_levels() {
        let on = |names: &[&str]| -> Vec<(Option<String>, Reference)> {
            names
                .iter()
                .map(|n| (Some(n.to_string()), reference()))
                .collect()
        };
        let hunt_hosts = on(&["a", "b"]);
        check_hosts(&["b".into(), "c".into()], &hunt_hosts).unwrap();
        let err = check_hosts(&[], &hunt_hosts).unwrap_err().to_string();
        assert!(err.contains("measured on a, b"), "{err}");
        assert!(err.contains("--hosts a,b"), "{err}");
        let here = vec![(None, reference())];
        check_hosts(&[], &here).unwrap();
        let err = check_hosts(&["a".into()], &here).unwrap_err().to_string();
        assert!(err.contains("drop --hosts/--slurm"), "{err}");
    }
}
