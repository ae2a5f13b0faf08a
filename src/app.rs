//! What each command does: the edge where flags, profiles, git and the lab
//! meet. Kept thin: every decision lives in a pure module.

use crate::build::{BuildSettings, BuildSystem, Fixup};
use crate::cli::{self, Cli, Command, LabArgs, ReportFormat, RunArgs, SimulateArgs};
use crate::command_lab::{CommandLab, Commands};
use crate::decide::DecisionConfig;
use crate::findings::{HuntOutcome, HuntReport};
use crate::hunt::{Hunt, HuntConfig};
use crate::journal::{Event, Journal};
use crate::lab::{Commit, Lab};
use crate::machine::Machine;
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::pg_lab::{PgLab, PgLabConfig, PgbenchChoice};
use crate::profile::Profile;
use crate::progress::ProgressEvent;
use crate::replay::ReplayLab;
use crate::repo::{Repo, WorkTree};
use crate::server::{RunAs, install_interrupt_handler};
use crate::workdir::{Lock, fingerprint};
use crate::{report, simulate};
use anyhow::Context;
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A mistake in what the user asked for: exits with [`cli::EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Parses the command line and runs the command.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `git bisect run` reads exit code 2 as "bad": a mistyped judge
        // command must stop the bisection instead.
        Err(e) if e.use_stderr() && std::env::args().nth(1).as_deref() == Some("judge") => {
            let _ = e.print();
            return Ok(ExitCode::from(crate::judge::EXIT_ABORT));
        }
        Err(e) => e.exit(),
    };
    match cli.command {
        None => hunt(&cli.run),
        Some(Command::Run(args)) => hunt(&args),
        Some(Command::Simulate(args)) => simulate_command(&args),
        Some(Command::Profiles) => list_profiles(),
        Some(Command::Report(args)) => crate::results::report_command(&args),
        Some(Command::Resume(args)) => crate::resume::resume_command(&args),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Compare(args)) => crate::compare::command(&args),
        Some(Command::Judge(args)) => Ok(crate::judge::command(&args)),
    }
}

/// `pgbisect completions SHELL`: the script on standard output (a reader
/// that stops early, like `head`, is not an error).
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pgbisect", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write the completion script")
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The exit code for an error that ended a command.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some()
        || err.downcast_ref::<crate::profile::ProfileError>().is_some()
        || err.downcast_ref::<crate::repo::RepoError>().is_some()
        || err.downcast_ref::<crate::workdir::Busy>().is_some()
    {
        cli::EXIT_USAGE
    } else {
        cli::EXIT_RUNTIME_ERROR
    }
}

/// Everything a hunt needs, resolved from flags and the profile.
pub(crate) struct Plan {
    pub(crate) profile: Profile,
    pub(crate) config: HuntConfig,
    pub(crate) good: Commit,
    pub(crate) bad: Commit,
    pub(crate) candidates: Vec<Commit>,
    pub(crate) repo_dir: PathBuf,
    pub(crate) work_dir: PathBuf,
}

/// The profile named by `--profile`, or the default one.
pub(crate) fn load_profile(name: Option<&str>) -> anyhow::Result<Profile> {
    Ok(match name {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    })
}

pub(crate) fn resolve_plan(args: &RunArgs) -> anyhow::Result<Plan> {
    let profile = load_profile(args.lab.profile.as_deref())?;
    let (Some(good), Some(bad)) = (&args.good, &args.bad) else {
        return Err(UsageError(
            "a hunt needs --good REV and --bad REV (a fast and a later, slower commit)\n\
             hint: pgbisect --good REL9_5_0 --bad master --clients 128; see pgbisect --help"
                .into(),
        )
        .into());
    };
    let repo_dir = args.lab.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = Repo::open(&repo_dir)?;
    let good = repo.resolve(good)?;
    let bad = repo.resolve(bad)?;
    let candidates = repo.candidates(&good, &bad)?;
    let threshold_pct = args.threshold.or(profile.hunt.threshold).unwrap_or(5.0);
    if !(threshold_pct > 0.0 && threshold_pct < 100.0) {
        return Err(UsageError(format!(
            "--threshold {threshold_pct}: give a percentage between 0 and 100, e.g. 5"
        ))
        .into());
    }
    let clients = args
        .clients
        .or_else(|| {
            profile
                .benchmark
                .clients
                .as_ref()
                .and_then(|c| c.to_vec().first().copied())
        })
        .unwrap_or(1);
    if clients == 0 {
        return Err(UsageError("--clients must be at least 1".into()).into());
    }
    let mut decision = DecisionConfig {
        threshold: threshold_pct / 100.0,
        ..DecisionConfig::default()
    };
    if let Some(m) = args.max_runs.or(profile.hunt.max_runs) {
        if m < decision.min_runs {
            return Err(UsageError(format!(
                "--max-runs {m}: at least {} runs are needed to decide anything",
                decision.min_runs
            ))
            .into());
        }
        decision.max_runs = m;
    }
    let config = HuntConfig {
        decision,
        clients,
        first_only: args.first_only || profile.hunt.first_only.unwrap_or(false),
        ..HuntConfig::default()
    };
    let work_dir = match &args.lab.work_dir {
        Some(w) => w.clone(),
        None => default_work_dir(&repo_dir)?,
    };
    Ok(Plan {
        profile,
        config,
        good,
        bad,
        candidates,
        repo_dir,
        work_dir,
    })
}

/// `$XDG_CACHE_HOME/pgbisect/<repository name>`; as root without
/// `XDG_CACHE_HOME`, `/var/tmp/pgbisect/<name>`, because root's home is
/// closed to the unprivileged user that runs the servers.
pub(crate) fn default_work_dir(repo_dir: &Path) -> anyhow::Result<PathBuf> {
    let home_cache = || std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"));
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            if crate::server::is_root() {
                Some(PathBuf::from("/var/tmp"))
            } else {
                home_cache()
            }
        })
        .ok_or_else(|| {
            UsageError("neither XDG_CACHE_HOME nor HOME is set: pass --work-dir DIR".into())
        })?;
    let abs = std::fs::canonicalize(repo_dir)
        .with_context(|| format!("cannot find the repository {}", repo_dir.display()))?;
    let name = abs
        .file_name()
        .map_or_else(|| "repo".to_string(), |n| n.to_string_lossy().into_owned());
    Ok(cache.join("pgbisect").join(name))
}

pub(crate) fn make_lab(
    plan: &Plan,
    args: &LabArgs,
    runs_dir: &Path,
) -> anyhow::Result<Box<dyn Lab>> {
    let repo = Repo::open(&plan.repo_dir)?;
    // Commits made in the private work tree (a patch applied) are readable too.
    let private_objects = plan.work_dir.join("checkout/.git/objects");
    if private_objects.is_dir() {
        repo.add_object_source(&private_objects)?;
    }
    if let Some(benchmark) = &plan.profile.benchmark.command {
        let worktree = WorkTree::open_or_create(&repo, &plan.work_dir.join("checkout"))?;
        let commands = Commands {
            build: plan.profile.build.command.clone(),
            benchmark: benchmark.clone(),
        };
        return Ok(Box::new(CommandLab::new(
            commands,
            worktree,
            &plan.work_dir,
            runs_dir,
        )?));
    }
    let profile = &plan.profile;
    let options = profile.benchmark.pgbench_options(plan.config.clients);
    options
        .validate()
        .map_err(|e| UsageError(format!("the profile's [benchmark]: {e}")))?;
    let pgbench = args
        .pgbench
        .as_deref()
        .or(profile.benchmark.pgbench.as_deref())
        .map_or(Ok(PgbenchChoice::Good), PgbenchChoice::parse)
        .map_err(UsageError)?;
    let run_as = RunAs::resolve(args.run_as.as_deref().or(profile.server.run_as.as_deref()))?;
    let cfg = PgLabConfig {
        work_dir: plan.work_dir.clone(),
        runs_dir: runs_dir.to_path_buf(),
        options,
        settings: profile.server.settings_strings(),
        run_as,
        pgbench,
        build: build_settings(profile)?,
        cache_size: args.cache_size.max(2),
        good: plan.good.id.clone(),
    };
    Ok(Box::new(PgLab::new(cfg, repo)?))
}

/// The profile's `[build]` as the builder's settings.
fn build_settings(profile: &Profile) -> anyhow::Result<BuildSettings> {
    let b = &profile.build;
    let system = match b.system.as_deref() {
        None | Some("auto") => BuildSystem::Auto,
        Some("autoconf") => BuildSystem::Autoconf,
        Some("meson") => BuildSystem::Meson,
        Some(other) => {
            return Err(UsageError(format!(
                "[build] system = `{other}`: use `auto`, `autoconf` or `meson`"
            ))
            .into());
        }
    };
    Ok(BuildSettings {
        system,
        configure: b.configure.clone().unwrap_or_default(),
        cflags: b.cflags.clone(),
        meson: b.meson.clone().unwrap_or_default(),
        jobs: b.jobs,
        fixups: b
            .fixups
            .iter()
            .map(|f| Fixup {
                patch: f.patch.clone(),
                commits: f.commits.clone(),
                range: f.range.clone(),
            })
            .collect(),
    })
}

/// A hunt that reached a verdict, and where its result files are.
struct Finished {
    report: HuntReport,
    exit_code: u8,
    hunt_dir: PathBuf,
}

/// Runs the hunt, then tells whoever `--notify-cmd` and `--mail-to` name
/// how it ended, whether it reached a verdict or failed.
/// A hunt, with notifications at its end.
pub(crate) fn hunt(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if args.format == ReportFormat::Email {
        return Err(UsageError(
            "a hunt prints text, markdown or json; for an email, run \
             `pgbisect report --format email --from ADDR --to ADDR` after it"
                .into(),
        )
        .into());
    }
    let notifier = Notifier::from_flags(
        args.notify_cmd.as_deref(),
        &args.mail_to,
        args.smtp.as_deref(),
        args.mail_from.as_deref(),
    )
    .map_err(UsageError)?;
    let mut work_dir = None;
    let result = run_hunt(args, &mut work_dir);
    match &result {
        Ok(done) => notifier.deliver_and_warn(&HuntEnd {
            ending: Ending::Finished(&done.report),
            exit_code: done.exit_code,
            result: Some(done.hunt_dir.join(RESULT_FILE)),
            report: Some(done.hunt_dir.join(REPORT_FILE)),
            work_dir,
        }),
        Err(err) => notifier.deliver_and_warn(&HuntEnd {
            ending: Ending::Failed(&format!("{err:#}")),
            exit_code: exit_code_for(err),
            result: None,
            report: None,
            work_dir,
        }),
    }
    result.map(|done| ExitCode::from(done.exit_code))
}

fn run_hunt(args: &RunArgs, work_dir: &mut Option<PathBuf>) -> anyhow::Result<Finished> {
    let plan = resolve_plan(args)?;
    *work_dir = Some(plan.work_dir.clone());
    std::fs::create_dir_all(&plan.work_dir)
        .with_context(|| format!("cannot create the work dir {}", plan.work_dir.display()))?;
    let _lock = Lock::acquire(&plan.work_dir)?;
    let fingerprint_text = format!("{:?}{:?}", plan.config, plan.profile);
    let hunt_dir = plan.work_dir.join("hunts").join(format!(
        "{}-{}-c{}-{}",
        plan.good.short(),
        plan.bad.short(),
        plan.config.clients,
        &fingerprint(&fingerprint_text)[..8]
    ));
    std::fs::create_dir_all(&hunt_dir)
        .with_context(|| format!("cannot create {}", hunt_dir.display()))?;
    crate::resume::save(&hunt_dir, args, &plan.repo_dir, &plan.work_dir)?;
    // `pgbisect judge` measures with the same profile later.
    let saved_profile = hunt_dir.join(crate::judge::PROFILE_FILE);
    let profile_json =
        serde_json::to_string_pretty(&plan.profile).context("cannot encode the profile")?;
    std::fs::write(&saved_profile, profile_json)
        .with_context(|| format!("cannot write {}", saved_profile.display()))?;
    let journal_path = hunt_dir.join("journal.jsonl");
    let past = Journal::load(&journal_path)?;
    let mut real_lab = make_lab(&plan, &args.lab, &hunt_dir.join("runs"))?;
    let mut lab = ReplayLab::new(real_lab.as_mut(), &past);
    let mut progress = crate::progress::for_stderr();
    if lab.replayable_runs() > 0 {
        progress.event(&ProgressEvent::Note(format!(
            "resuming the hunt in {}: {} runs from its journal are reused",
            hunt_dir.display(),
            lab.replayable_runs()
        )));
    }
    let mut journal = Journal::open(&journal_path)?;
    journal.append(&Event::Start {
        good: plan.good.id.clone(),
        bad: plan.bad.id.clone(),
        plan: fingerprint_text,
        at: crate::hunt::now_rfc3339(),
    })?;
    let interrupt = install_interrupt_handler().context("cannot install the interrupt handler")?;
    let machine = Machine::collect();
    let mut commits = vec![plan.good.clone()];
    commits.extend(plan.candidates.iter().cloned());
    let (earlier, processes) = crate::spent::spent_before(&past);
    let report = Hunt::new(plan.config, commits, &mut lab, progress.as_mut())
        .with_earlier(earlier, processes)
        .with_journal(&mut journal)
        .with_interrupt(interrupt)
        .run()?;
    drop(progress);
    let report = with_setup(report, &plan, args, machine)?;
    write_outputs(&report, &hunt_dir, args.json.as_deref())?;
    print!("{}", report::render(&report, args.format, None)?);
    let exit_code = match report.outcome {
        HuntOutcome::CulpritFound => cli::EXIT_CULPRIT_FOUND,
        HuntOutcome::NoRegression => cli::EXIT_NO_REGRESSION,
        HuntOutcome::Inconclusive => cli::EXIT_INCONCLUSIVE,
    };
    Ok(Finished {
        report,
        exit_code,
        hunt_dir,
    })
}

/// Adds what the hunt was set up with, for its reports.
fn with_setup(
    mut report: HuntReport,
    plan: &Plan,
    args: &RunArgs,
    machine: Machine,
) -> anyhow::Result<HuntReport> {
    report.machine = Some(machine);
    report.profile_name = args.lab.profile.clone().unwrap_or_else(|| "default".into());
    report.profile_toml = args
        .lab
        .profile
        .as_deref()
        .map(profile_text)
        .unwrap_or_default();
    if !plan.profile.is_custom() {
        report.server_settings = plan.profile.server.settings_strings();
        report.configure_flags = crate::build::setup_args(&build_settings(&plan.profile)?);
    }
    Ok(report)
}

/// A profile's TOML as [`Profile::load`] read it: the file, else the
/// bundled text.
fn profile_text(name_or_path: &str) -> String {
    let path = Path::new(name_or_path);
    if path.exists() {
        return std::fs::read_to_string(path).unwrap_or_default();
    }
    crate::profile::BUNDLED
        .iter()
        .find(|(n, _)| *n == name_or_path)
        .map_or_else(String::new, |(_, text)| text.to_string())
}

/// A hunt's result as JSON, in its hunt dir.
const RESULT_FILE: &str = crate::results::RESULT_FILE;
/// A hunt's text report, in its hunt dir.
const REPORT_FILE: &str = "report.txt";

fn write_outputs(report: &HuntReport, hunt_dir: &Path, json: Option<&Path>) -> anyhow::Result<()> {
    let body = report::json(report)?;
    let result = hunt_dir.join(RESULT_FILE);
    std::fs::write(&result, &body).with_context(|| format!("cannot write {}", result.display()))?;
    for (name, text) in [
        (REPORT_FILE, report::text(report)),
        ("report.md", report::markdown(report)),
    ] {
        let path = hunt_dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let chart = hunt_dir.join("chart.svg");
    std::fs::write(&chart, crate::chart::hunt_chart(report))
        .with_context(|| format!("cannot write {}", chart.display()))?;
    if let Some(path) = json {
        std::fs::write(path, &body).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

fn list_profiles() -> anyhow::Result<ExitCode> {
    for (name, _) in crate::profile::BUNDLED {
        let profile = Profile::load(name)?;
        println!("{name:<20} {}", profile.description);
    }
    Ok(ExitCode::SUCCESS)
}

fn simulate_command(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    if args.trials == 0 {
        return Err(UsageError("--trials must be at least 1".into()).into());
    }
    let config = HuntConfig {
        decision: DecisionConfig {
            threshold: args.threshold / 100.0,
            ..DecisionConfig::default()
        },
        ..HuntConfig::default()
    };
    let mut results = Vec::new();
    println!("{}", simulate::table_header());
    for mut scenario in simulate::standard_scenarios() {
        if args
            .scenario
            .as_ref()
            .is_some_and(|s| !scenario.name.contains(s.as_str()))
        {
            continue;
        }
        if let Some(c) = args.commits {
            scenario.commits = c;
        }
        let result = simulate::evaluate(&scenario, args.trials, args.seed, &config)?;
        println!("{}", simulate::table_row(&result));
        results.push(result);
    }
    if results.is_empty() {
        return Err(UsageError("no scenario matches --scenario".into()).into());
    }
    if let Some(path) = &args.json {
        let body = serde_json::to_string_pretty(&results).context("cannot encode the results")?;
        std::fs::write(path, body).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
