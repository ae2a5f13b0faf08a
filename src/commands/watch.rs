//! `pgbisect watch`: measure what landed on a branch tonight beside a
//! fixed reference, find where a series moved and confirm it side by side;
//! `watch --replay` runs past nights on their own clock; `watch export`
//! writes the series as CSV. The work is the engine's
//! ([`crate::engine::session::watch`]).

use super::output::{check_writable_file, check_writable_folder};
use super::plan::choices;
use super::run_args::NotifyArgs;
use super::values;
use super::watch_place::{Place, Thresholds, lab_args, profiles, store_at};
use crate::engine::session::resolved::TimeLimit;
use crate::engine::session::watch::{self as session, WatchAsk};
use crate::engine::session::watch_site::{self, SiteLinks};
use crate::engine::watch::owed::Owed;
use crate::engine::watch::{WatchConfig, WatchMeasures, Watched, pick};
use crate::error::{
    EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION, EXIT_RUNTIME_ERROR, UsageError,
};
use crate::lab::open::LabChoices;
use crate::report::watch::night;
use crate::report::watch::site::links::SiteUrl;
use crate::store::ChangeStatus;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// `pgbisect watch`.
#[derive(Debug, Args, Clone)]
pub struct WatchArgs {
    #[command(subcommand)]
    pub action: Option<WatchAction>,
    #[command(flatten)]
    pub place: Place,
    /// Workload profile, a bundled name or a .toml file; repeat for several.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Vec<String>,
    /// pgbench client counts, a series each (default: the profile's, else 1).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', value_parser = values::count)]
    pub clients: Vec<u32>,
    /// tps, instructions (a transaction's, counted by cachegrind: a count
    /// series, profile/cN/instructions) or both (default: the profile's
    /// measure, auto being both; else tps).
    #[arg(long, value_name = "WHAT", value_parser = WatchMeasures::parse)]
    pub measure: Option<WatchMeasures>,
    #[command(flatten)]
    pub thresholds: Thresholds,
    /// Most commits measured a night, the tip among them.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = values::count_usize)]
    pub per_night: usize,
    /// Days a first night backfills, one commit a day.
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub backfill: usize,
    /// Pairs of runs (commit and reference) per commit and series.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = values::count)]
    pub rounds: u32,
    /// At most this many pairs where a series' pairs scattered over the
    /// last nights, enough that a 5% step stands out in one night
    /// (--rounds: never more).
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = values::count)]
    pub max_rounds: u32,
    /// Log this share of each run's transactions (above 0, at most 1; e.g.
    /// 0.01) and keep their 50th, 95th and 99th percentile latency with
    /// the run (pgbench 10 or later).
    #[arg(long, value_name = "SHARE", value_parser = share)]
    pub percentiles: Option<f64>,
    /// End within this much wall time (e.g. 6h); the next start goes on.
    #[arg(long, value_name = "DURATION", conflicts_with = "deadline",
          value_parser = values::time_budget)]
    pub time_budget: Option<String>,
    /// End by this local time of day (HH:MM); the next start goes on.
    #[arg(long, value_name = "HH:MM", value_parser = values::clock_time)]
    pub deadline: Option<String>,
    /// Run past nights SINCE..UNTIL (YYYY-MM-DD..YYYY-MM-DD, UTC) on their
    /// own clock: the commits landed by each night's date.
    #[arg(long, value_name = "SINCE..UNTIL", value_parser = values::replay_range)]
    pub replay: Option<String>,
    /// With --replay: a night every N days.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "replay",
          value_parser = every)]
    pub every: u32,
    /// Measure tonight's commits and every later night's beside this
    /// commit (a sha, tag or branch); earlier points keep their reference
    /// (default: the last night's; a first night: its first commit).
    #[arg(long, value_name = "REV")]
    pub reference: Option<String>,
    /// Mail a digest of what moved every DAYS days (0: never).
    #[arg(long, value_name = "DAYS", default_value_t = 7)]
    pub digest_every: u32,
    /// After the night, write the results as a static site into DIR.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    /// With --html: a commit's web page, {sha} standing for its id.
    #[arg(long, value_name = "URL", requires = "html", value_parser = values::commit_url)]
    pub commit_url: Option<String>,
    /// Where the site is served (e.g. https://perf.example.org/pgbisect/):
    /// mails link a change's page and its hunt report's there.
    #[arg(long, value_name = "URL", value_parser = values::site_url)]
    pub site_url: Option<SiteUrl>,
    /// Who is told of each change hunted to its commit, and of the digest.
    #[command(flatten)]
    pub tell: NotifyArgs,
    /// With --mail-to: send each finding to its culprit's author as well
    /// (Cc: the author's address from the commit).
    #[arg(long, requires = "mail_to", help_heading = super::args::OUTPUT_HEADING)]
    pub cc_author: bool,
}

/// What else `watch` does.
#[derive(Debug, Subcommand, Clone)]
pub enum WatchAction {
    /// Write the series as CSV in the layout Apache Otava reads.
    Export(Box<ExportArgs>),
    /// Write the results as a static site (HTML, inline SVG charts).
    Publish(Box<PublishArgs>),
    /// Mark a change by its number: intended (meant) or wrong (not real).
    Mark(Box<super::watch_triage::MarkArgs>),
    /// Hunt a change again by its number, as the watch hunts it.
    Hunt(Box<super::watch_triage::HuntArgs>),
}

/// `pgbisect watch publish`.
#[derive(Debug, Args, Clone)]
pub struct PublishArgs {
    /// The folder to write the site into (index.html first).
    #[arg(long, value_name = "DIR")]
    pub html: PathBuf,
    /// A commit's web page, {sha} standing for its id, e.g.
    /// https://git.postgresql.org/gitweb/?p=postgresql.git;a=commit;h={sha}
    #[arg(long, value_name = "URL", value_parser = values::commit_url)]
    pub commit_url: Option<String>,
    /// Where the site is served: the feed's links are absolute with it.
    #[arg(long, value_name = "URL", value_parser = values::site_url)]
    pub site_url: Option<SiteUrl>,
    #[command(flatten)]
    pub place: Place,
}

/// `pgbisect watch export`.
#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// The CSV file to write.
    #[arg(long, value_name = "FILE")]
    pub csv: PathBuf,
    #[command(flatten)]
    pub place: Place,
}

/// Examples and exit codes for `pgbisect watch --help`.
pub const AFTER_HELP: &str = "\
Examples:
  Every night from cron, done by 07:00, in a PostgreSQL clone kept fetched;
  each confirmed drop is hunted to its commit and mailed once:
    pgbisect watch --repo ~/src/postgres --clients 1,64 --deadline 07:00 \
      --mail-to perf@example.org

  Replay last spring, a night every 2 days, no backfill:
    pgbisect watch --replay 2024-03-01..2024-05-31 --every 2 --backfill 0

  The series for Apache Otava:
    pgbisect watch export --csv watch.csv

  A team's machines keeping their results in one PostgreSQL database (the
  password in PGPASSWORD or ~/.pgpass, not on the command line):
    pgbisect watch --store postgres://watcher@db.example.org/perf --deadline 07:00

  A drop that was meant, marked by its number on the site (#7); hunted again:
    pgbisect watch mark 7 intended --why 'the cost of the new WAL format'
    pgbisect watch hunt 7 --profile select-only

  The results as a static site, points linked to gitweb:
    pgbisect watch publish --html site \\
      --commit-url 'https://git.postgresql.org/gitweb/?p=postgresql.git;a=commit;h={sha}'

Exit codes:
  0  a change was confirmed tonight (measured again side by side), or a
     finding told
  1  no change confirmed
  2  usage error
  3  the night (or a hunt) stopped at its deadline, or a change is not yet
     confirmed (the next start goes on)
  4  runtime error, or a finding or digest owed: not delivered (refused
     by the relay, sendmail or --notify-cmd); the next start sends it, once";

/// `pgbisect watch`: flags in, the night's summary out.
pub(super) fn command(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    match &args.action {
        Some(WatchAction::Export(e)) => {
            check_writable_file(&e.csv, "--csv")?;
            let work = lab_args(&e.place).work_dir()?;
            let store = store_at(&e.place)?;
            let n = session::export(&work, store.as_ref(), e.place.branch.as_deref(), &e.csv)?;
            eprintln!("{n} points written to {}", e.csv.display());
            return Ok(ExitCode::SUCCESS);
        }
        Some(WatchAction::Publish(p)) => {
            publish(&p.place, &p.html, links(&p.commit_url, &p.site_url))?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(WatchAction::Mark(m)) => return super::watch_triage::mark(m),
        Some(WatchAction::Hunt(h)) => return super::watch_triage::hunt(h),
        None => {}
    }
    if let Some(dir) = &args.html {
        check_writable_folder(dir, "--html")?;
    }
    let tell = &args.tell;
    super::preflight::check_telling(
        &tell.mail_to,
        tell.smtp.as_deref(),
        tell.notify_cmd.as_deref(),
    )?;
    let ask = ask(args)?;
    let done = session::run(ask, &mut |line| {
        eprintln!("{}", crate::shown::visible_line(line));
    })?;
    print!("{}", crate::shown::visible(&night::text(&done.shown())));
    if let Some(dir) = &args.html {
        publish(&args.place, dir, links(&args.commit_url, &args.site_url))?;
    }
    if !done.owed.is_empty() {
        return Ok(ExitCode::from(owed(&done.owed)));
    }
    Ok(ExitCode::from(exit_code(&done)))
}

/// How the site links out, from `--commit-url` and `--site-url`.
fn links<'a>(commit: &'a Option<String>, site: &'a Option<SiteUrl>) -> SiteLinks<'a> {
    SiteLinks {
        commit: commit.as_deref(),
        site: site.as_ref(),
    }
}

/// Writes the site of the work dir's results to `dir`.
fn publish(place: &Place, dir: &std::path::Path, links: SiteLinks) -> anyhow::Result<()> {
    check_writable_folder(dir, "--html")?;
    let work = lab_args(place).work_dir()?;
    let store = store_at(place)?;
    let done = watch_site::publish(&work, store.as_ref(), place.branch.as_deref(), dir, links)?;
    eprintln!(
        "{} page(s) and {} hunt report(s) written: {}",
        done.pages,
        done.hunts,
        done.index.display()
    );
    Ok(())
}

/// Says which messages are owed (and why the last try failed, when this
/// start tried), and that the next start sends them; the exit code that
/// tells cron's reader to look.
fn owed(owed: &[Owed]) -> u8 {
    for o in owed {
        let line = match &o.why {
            Some(why) => format!("not delivered: {}: {why}", o.what),
            None => format!("owed: {} (not told yet)", o.what),
        };
        eprintln!("pgbisect: error: {}", crate::shown::visible_line(&line));
    }
    eprintln!(
        "hint: {} message(s) stay owed and the next start sends them, each once; check \
         the relay (--smtp), the local sendmail or the --notify-cmd before then",
        owed.len()
    );
    EXIT_RUNTIME_ERROR
}

/// 0: a change confirmed, or a finding told, tonight; 1: none; 3: a night
/// stopped at its deadline or a change left unconfirmed (the next start
/// goes on).
fn exit_code(done: &Watched) -> u8 {
    let status = |s| done.changes.iter().any(|c| c.status == s);
    let told = done.hunts.iter().any(|h| h.hunt.mailed.is_some());
    if status(ChangeStatus::Confirmed) || told {
        EXIT_CULPRIT_FOUND
    } else if done.stopped.is_some() || status(ChangeStatus::Candidate) {
        EXIT_INCONCLUSIVE
    } else {
        EXIT_NO_REGRESSION
    }
}

/// The watcher's plan from the flags, checked first.
fn ask(args: &WatchArgs) -> anyhow::Result<WatchAsk> {
    let lab = lab_args(&args.place);
    let mut config = WatchConfig::new(args.place.branch.as_deref().unwrap_or("master"));
    (config.per_night, config.backfill, config.rounds) =
        (args.per_night, args.backfill, args.rounds);
    config.max_rounds = args.max_rounds.max(args.rounds);
    args.thresholds.apply(&mut config);
    config.digest_every = args.digest_every;
    config.reference = args.reference.clone();
    config.site_url = args.site_url.clone();
    config.reported_by = reported_by(&args.tell);
    config.budget = super::hunt::budget(&TimeLimit {
        budget: args.time_budget.clone(),
        deadline: args.deadline.clone(),
    })?;
    let replay = match &args.replay {
        Some(text) => {
            Some(pick::parse_range(text).map_err(|e| UsageError(format!("--replay: {e}")))?)
        }
        None => None,
    };
    Ok(WatchAsk {
        repo_dir: lab.repo_dir(),
        work: lab.work_dir()?,
        store: store_at(&args.place)?,
        branch: args.place.branch.clone(),
        profiles: profiles(&args.profile, (&args.clients, args.measure), &lab)?,
        choices: LabChoices {
            percentiles: args.percentiles,
            ..choices(&lab)
        },
        config,
        replay: replay.map(|(since, until)| (since, until, args.every)),
        notifier: args.tell.notifier()?,
        cc_author: args.cc_author,
        why_runs: Some(crate::engine::why::DEFAULT_RUNS),
    })
}

/// Who a finding's `Reported-by:` trailer credits: the watcher, by the
/// address its mail comes from.
fn reported_by(tell: &NotifyArgs) -> String {
    let from = tell.mail_from.clone();
    format!(
        "pgbisect watch <{}>",
        from.unwrap_or_else(crate::notify::default_sender)
    )
}

/// `--every`: the days between two replayed nights, at least 1.
fn every(text: &str) -> Result<u32, String> {
    values::count(text).map_err(|_| {
        format!(
            "`{text}` is not a number of days: --every N replays a night every N days, \
             at least 1 (e.g. --every 7 for a night a week)"
        )
    })
}

/// A share of transactions: above 0, at most 1.
fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is not a share of transactions above 0 and at most 1 (e.g. 0.01)"
        )),
    }
}
