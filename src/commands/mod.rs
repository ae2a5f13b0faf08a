//! The commands: one file each, with its own arguments; this file parses
//! the command line and dispatches.
//!
//! The bare form `pgbisect --good A --bad B` is a hunt; other work is a
//! subcommand. Everything a hunt needs can also come from a profile; flags
//! given here override it. Commands are the edge where flags, profiles, git
//! and the lab meet, and are kept thin: every decision lives below.

mod args;
mod compare;
mod completions;
mod host_run;
mod hosts;
mod hunt;
mod judge;
mod output;
mod plan;
mod preflight;
mod profiles;
mod report;
mod resolve;
mod resume;
mod run_args;
mod simulate;
mod values;
mod watch;
mod watch_place;
mod watch_triage;
mod why;

pub use args::{HuntLocation, LabArgs, TargetArgs};
pub use compare::CompareArgs;
pub use hosts::HostArgs;
pub use judge::JudgeArgs;
pub use report::ReportArgs;
pub use resume::ResumeArgs;
pub use run_args::RunArgs;
pub use simulate::SimulateArgs;
pub use watch::WatchArgs;

use crate::error::{EXIT_RUNTIME_ERROR, EXIT_USAGE, UsageError};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Examples:
  Hunt a drop at 128 clients from a release to master, in a PostgreSQL clone:
    pgbisect --good REL9_5_0 --bad master --clients 128

  Hunt with a custom build and benchmark (any git repository):
    pgbisect --repo ~/src/app --good v1.0 --bad main --profile bench.toml --json out.json

  Hunt unattended (from cron) and mail the result, or the failure:
    pgbisect --good REL_17_0 --bad master --mail-to you@example.org --smtp localhost:25

  Render the newest hunt's result again, as markdown:
    pgbisect report --repo ~/src/postgres --format markdown

  Check how well the method does on simulated noisy histories:
    pgbisect simulate --trials 200

  Set master against master with a patch at several client counts:
    pgbisect compare master --patch fix.patch --clients 1,16,64

  Let git bisect run drive, judged against the last hunt's endpoints:
    git bisect run pgbisect judge HEAD

Endpoints (--good, --bad, and the commits of compare and judge):
  A name git knows is used as it is: a SHA, a branch, a tag, master, HEAD~3.
  Otherwise release names are read as PostgreSQL names its refs:
    9.5, REL9_5, 16, REL_16   the release's first tag (REL9_5_0, REL_16_0);
                              before that tag exists, its stable branch
    9.5.3, 16.2               that minor release's tag (REL9_5_3, REL_16_2)
    REL9_5_STABLE, REL_16_STABLE
                              the stable branch, local or origin/...
  A release tag sits on its stable branch, off master's line: a hunt from it
  to master starts where the release left master (their merge-base), and
  the progress output and the report say so.

Exit codes:
  0  culprit found (or the command succeeded)
  1  no regression: bad is not slower than good by the threshold
  2  usage error
  3  inconclusive: the measurements did not support a verdict
  4  runtime error (a failed build of an endpoint, a crashed tool, a full disk...)";

/// Hunts PostgreSQL performance regressions: builds commits, runs pgbench
/// on each again and again, and names the commits that caused a drop.
#[derive(Debug, Parser)]
#[command(name = "pgbisect", version, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Hunt the commits that made BAD slower than GOOD (the default).
    Run(Box<RunArgs>),
    /// Evaluate the method on simulated histories with known culprits.
    Simulate(SimulateArgs),
    /// List the bundled workload profiles.
    Profiles,
    /// Render the result of a past hunt: text, markdown, JSON or email.
    Report(ReportArgs),
    /// Continue a hunt that was stopped (killed, interrupted, a reboot):
    /// nothing already built or measured is done again.
    Resume(ResumeArgs),
    /// Print a shell completion script, e.g.
    /// `pgbisect completions bash > /etc/bash_completion.d/pgbisect`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Measure A against B (or A against A with a patch) across client counts.
    #[command(after_help = compare::AFTER_HELP)]
    Compare(CompareArgs),
    /// Judge one commit against a hunt's good and bad runs (for `git bisect run`).
    #[command(after_help = judge::AFTER_HELP, mut_args(judge::hide_hunt_only))]
    Judge(JudgeArgs),
    /// Measure what landed on master tonight beside a fixed reference, find
    /// where a series moved and confirm it side by side (from cron).
    #[command(after_help = watch::AFTER_HELP)]
    Watch(WatchArgs),
    /// One run on a host of a hunt coordinated elsewhere (started by the
    /// hunt, through ssh or Slurm).
    #[command(hide = true)]
    HostRun,
}

/// Parses the command line and runs the command.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `git bisect run` reads exit code 2 as "bad": a mistyped judge
        // command must stop the bisection instead.
        Err(e) if e.use_stderr() && std::env::args().nth(1).as_deref() == Some("judge") => {
            let _ = e.print();
            return Ok(ExitCode::from(judge::EXIT_ABORT));
        }
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            let Some(hint) = endpoints_hint(&args) else {
                e.exit()
            };
            let _ = e.print();
            eprintln!("\n{hint}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        Err(e) => e.exit(),
    };
    match cli.command {
        None => hunt::command(&cli.run),
        Some(Command::Run(args)) => hunt::command(&args),
        Some(Command::Simulate(args)) => simulate::command(&args),
        Some(Command::Profiles) => profiles::command(),
        Some(Command::Report(args)) => report::command(&args),
        Some(Command::Resume(args)) => resume::command(&args),
        Some(Command::Completions { shell }) => completions::command(shell),
        Some(Command::Compare(args)) => compare::command(&args),
        Some(Command::Judge(args)) => Ok(judge::command(&args)),
        Some(Command::Watch(args)) => watch::command(&args),
        Some(Command::HostRun) => host_run::command(),
    }
}

/// `pgbisect v1.0 v2.0`, as `git bisect start BAD GOOD` is typed: two
/// revisions where a subcommand was expected. The hint names the flags a
/// hunt takes its endpoints from, in the order git bisect takes them.
fn endpoints_hint(args: &[String]) -> Option<String> {
    let leading = args.iter().take_while(|a| !a.starts_with('-')).count();
    let [first, second, rest @ ..] = args else {
        return None;
    };
    if leading != 2 {
        return None;
    }
    let tail: String = rest.iter().map(|a| format!(" {a}")).collect();
    Some(format!(
        "a hunt takes its endpoints as flags: did you mean \
         `pgbisect --good {first} --bad {second}{tail}`? (git bisect's \
         `start BAD GOOD` order is the other way round: check which one is fast)"
    ))
}

/// The exit code for an error that ended a command.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some()
        || err.downcast_ref::<crate::profile::ProfileError>().is_some()
        || err
            .downcast_ref::<crate::repo::RepoError>()
            .is_some_and(|e| e.is_usage())
        || err.downcast_ref::<crate::workspace::Busy>().is_some()
        || err
            .downcast_ref::<crate::store::StoreError>()
            .is_some_and(|e| matches!(e, crate::store::StoreError::Busy { .. }))
        || err.downcast_ref::<crate::hosts::HostError>().is_some()
        || err
            .downcast_ref::<crate::server::settings::SettingError>()
            .is_some()
        || unsafe_folder(err)
    {
        EXIT_USAGE
    } else {
        EXIT_RUNTIME_ERROR
    }
}

/// Whether `err` comes from a folder pgbisect would write under that is
/// not safe (another user's, open to others, a link): the user fixes that.
fn unsafe_folder(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| crate::folders::unsafe_level(io).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_revisions_without_flags_get_the_flags_named() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let hint = endpoints_hint(&args(&["v1.0", "v2.0", "--clients", "8"])).unwrap();
        assert!(
            hint.contains("`pgbisect --good v1.0 --bad v2.0 --clients 8`"),
            "{hint}"
        );
        assert_eq!(endpoints_hint(&args(&["frobnicate"])), None);
        let err = Cli::try_parse_from(["pgbisect", "v1.0", "v2.0"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidSubcommand);
    }
    use clap::CommandFactory;

    #[test]
    fn a_folder_unsafe_to_write_under_is_a_usage_error_however_deep() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("logs");
        std::fs::write(&file, "").unwrap();
        let io = crate::folders::create_dir(&file.join("x")).unwrap_err();
        let err = anyhow::Error::new(io).context("cannot create the logs");
        assert_eq!(exit_code_for(&err), EXIT_USAGE);
        let other = anyhow::Error::new(std::io::Error::other("disk on fire"));
        assert_eq!(exit_code_for(&other), EXIT_RUNTIME_ERROR);
    }

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_list_of_clients_points_to_compare() {
        let err =
            Cli::try_parse_from(["pgbisect", "--good", "A", "--bad", "B", "--clients", "1,8"])
                .unwrap_err()
                .to_string();
        assert!(err.contains("pgbisect compare"), "{err}");
        assert!(Cli::try_parse_from(["pgbisect", "--clients", "0"]).is_err());
    }

    #[test]
    fn trouble_with_the_disk_is_a_runtime_error_and_a_bad_revision_a_usage_error() {
        let full = std::io::Error::from_raw_os_error(28);
        let io = crate::repo::RepoError::Io {
            action: "check out".into(),
            path: "/w/checkout".into(),
            source: full,
        };
        assert_eq!(exit_code_for(&io.into()), EXIT_RUNTIME_ERROR);
        let rev = crate::repo::RepoError::AmbiguousRevision { rev: "a".into() };
        assert_eq!(exit_code_for(&rev.into()), EXIT_USAGE);
        let full = std::io::Error::from_raw_os_error(28);
        let context = anyhow::Error::new(full).context("cannot write the journal");
        assert_eq!(exit_code_for(&context), EXIT_RUNTIME_ERROR);
    }

    #[test]
    fn bare_form_is_a_hunt() {
        let cli =
            Cli::try_parse_from(["pgbisect", "--good", "A", "--bad", "B", "--clients", "128"])
                .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.target.good.as_deref(), Some("A"));
        assert_eq!(cli.run.target.clients, Some(128));
    }
}
