//! `pgbisect judge COMMIT`: one commit against a hunt's endpoints, answered
//! with the exit code `git bisect run` reads.

use super::args::TargetArgs;
use super::hosts::HostArgs;
use super::output::write_output_file;
use super::plan::{load_profile, resolve_plan_judged};
use crate::core::counts::Measure;
use crate::core::stats;
use crate::engine::judge::{HuntRuns, Judgement, Verdict, on_host};
use crate::engine::session::judge;
use crate::model::Commit;
use crate::repo::Repo;
use crate::workspace::{COMMAND_FILE, HuntDir, WorkDir};
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
    if let Some(path) = &args.json {
        super::output::check_writable_file(path, "--json")?;
    }
    let repo = Repo::open(&target.lab.repo_dir())?;
    let commit = repo.resolve(&args.commit)?;
    let (want_good, want_bad) = wanted_ends(&repo, &target)?;
    let work = target.lab.work_dir()?;
    let (hunt_dir, hunt) = judge::hunt_to_judge(&work, (&want_good, &want_bad), target.clients)?;
    target.good = Some(hunt.good.clone());
    target.bad = Some(hunt.bad.clone());
    target.lab.work_dir = Some(work.root().to_path_buf());
    let profile = load_profile(&target.lab)?;
    let mut plan = resolve_plan_judged(&target, (false, hunt.clients), profile)?;
    if target.lab.profile.is_none() {
        let flags = (target.threshold, target.max_runs);
        judge::use_saved_profile(&mut plan, flags, &hunt_dir.profile())?;
    }
    let hosts = hosts_of(args, &hunt_dir).wanted();
    let judged = judge::run(&plan, &commit, (&hunt_dir, &hunt), &hosts)?;
    let Some((code, word)) = verdict(&judged.judgement, &commit) else {
        return Ok(EXIT_SKIP);
    };
    let said = Said {
        commit: &commit.id,
        word,
        judged: &judged.judgement,
        measured_on: judged.measured_on.as_deref(),
    };
    report(&said, &hunt, args.json.as_deref())?;
    Ok(code)
}

/// The hunt's endpoints to judge against, each when given: the good end
/// is where a release off --bad's line left it.
fn wanted_ends(
    repo: &Repo,
    target: &TargetArgs,
) -> anyhow::Result<(Option<String>, Option<String>)> {
    if let (Some(good), Some(bad)) = (&target.good, &target.bad) {
        let ends = repo.endpoints(good, bad)?;
        return Ok((Some(ends.start.id), Some(ends.bad.commit.id)));
    }
    let want = |rev: &Option<String>| -> anyhow::Result<Option<String>> {
        Ok(match rev {
            Some(r) => Some(repo.resolve(r)?.id),
            None => None,
        })
    };
    Ok((want(&target.good)?, want(&target.bad)?))
}

/// The exit code and word of a verdict; `None` (a skip, said on stderr)
/// when the commit could not be built or run.
fn verdict(judged: &Judgement, commit: &Commit) -> Option<(u8, &'static str)> {
    match &judged.verdict {
        Verdict::GoodLike => Some((EXIT_GOOD, "good-like")),
        Verdict::BadLike => Some((EXIT_BAD, "bad-like")),
        Verdict::Unsure => Some((EXIT_SKIP, "unsure")),
        Verdict::Unbuildable(reason) => {
            eprintln!("{}: cannot be built: {reason}", commit.short());
            None
        }
        Verdict::RunFailed(reason) => {
            eprintln!("{}: a run failed: {reason}", commit.short());
            None
        }
    }
}

/// The hosts to measure on: those given, or else those the hunt was
/// started with (its profile's `[hosts]` is read with the profile).
fn hosts_of(args: &JudgeArgs, hunt_dir: &HuntDir) -> HostArgs {
    if !args.on.hosts.is_empty() || args.on.slurm {
        return args.on.clone();
    }
    super::run_args::load(hunt_dir).map_or_else(|_| HostArgs::default(), |saved| saved.hosts())
}

/// The repository the newest hunt in `work` ran in, as it saved it.
fn hunts_repo(work: &WorkDir) -> Option<PathBuf> {
    let hunt = work.choose_hunt(None, COMMAND_FILE).ok()?;
    super::run_args::load(&hunt).ok()?.repo()
}

/// What judge says of a commit.
struct Said<'a> {
    commit: &'a str,
    word: &'a str,
    judged: &'a Judgement,
    /// The hosts that measured, when not this machine.
    measured_on: Option<&'a str>,
}

/// `median 995.2 tps over 3 runs (good 1001.0, bad 805.6)`; counted,
/// `median 38316919 instructions a transaction over 1 run (good
/// 36137002, bad 38316919)`.
fn levels(measure: Measure, median: f64, runs: usize, (good, bad): (f64, f64)) -> String {
    let s = if runs == 1 { "" } else { "s" };
    match measure {
        Measure::Tps => {
            format!("median {median:.1} tps over {runs} run{s} (good {good:.1}, bad {bad:.1})")
        }
        Measure::Instructions => {
            let count = |figure: f64| (1e9 / figure).round();
            format!(
                "median {:.0} instructions a transaction over {runs} run{s} (good {:.0}, bad {:.0})",
                count(median),
                count(good),
                count(bad)
            )
        }
    }
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
        levels(hunt.measure, own, tps.len(), (good, bad))
    );
    if let Some(counter) = &hunt.counter {
        println!("instructions counted by {counter}, as the hunt's were");
    }
    let per_host = per_host(said, hunt);
    if let Some(on) = said.measured_on {
        println!("measured on {on}");
    }
    if let Some(path) = json {
        let body = json_body(said, hunt, [own, good, bad], per_host);
        write_output_file(path, &body.to_string())?;
    }
    Ok(())
}

/// The verdict as JSON: the runs and medians (`[own, good, bad]`), the
/// counter when the hunt counted, each host's when several measured.
fn json_body(
    said: &Said,
    hunt: &HuntRuns,
    [own, good, bad]: [f64; 3],
    per_host: Vec<serde_json::Value>,
) -> serde_json::Value {
    let tps = &said.judged.tps;
    let mut body = serde_json::json!({
        "commit": said.commit,
        "verdict": said.word,
        "tps": tps,
        "median_tps": own,
        "good": { "commit": hunt.good, "median_tps": good, "runs": hunt.good_tps.len() },
        "bad": { "commit": hunt.bad, "median_tps": bad, "runs": hunt.bad_tps.len() },
    });
    if let Some(counter) = &hunt.counter {
        // The figures above are the transactions a billion
        // instructions buy, as decided on.
        body["measure"] = "instructions".into();
        body["counter"] = counter.as_str().into();
        body["instructions"] = tps.iter().map(|f| 1e9 / f).collect::<Vec<_>>().into();
    }
    if let Some(on) = said.measured_on {
        body["measured_on"] = on.into();
        body["hosts"] = per_host.into();
    }
    body
}

/// Each host's medians, printed, and as JSON.
fn per_host(said: &Said, hunt: &HuntRuns) -> Vec<serde_json::Value> {
    let median = |v: &[f64]| stats::median(v);
    let tps = &said.judged.tps;
    let mut hosts: Vec<Option<String>> = Vec::new();
    for h in &said.judged.hosts {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    hosts
        .iter()
        .filter_map(|h| Some((h.as_ref()?, h)))
        .map(|(name, h)| {
            let runs = on_host(tps, &said.judged.hosts, h);
            let (good, bad) = hunt.on_host(h);
            let (own, good, bad) = (median(&runs), median(&good), median(&bad));
            println!(
                "  on {name}: {}",
                levels(hunt.measure, own, runs.len(), (good, bad))
            );
            serde_json::json!({
                "host": name, "median_tps": own, "runs": runs.len(),
                "good_median_tps": good, "bad_median_tps": bad,
            })
        })
        .collect()
}
