//! Command-line definitions: raw arguments only, no behaviour.
//!
//! The bare form `pgbisect --good A --bad B` is a hunt; other work is a
//! subcommand. Everything a hunt needs can also come from a profile; flags
//! given here override it.

pub use crate::report::Format as ReportFormat;
use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Exit code: a hunt found at least one culprit (or a command succeeded).
pub const EXIT_CULPRIT_FOUND: u8 = 0;
/// Exit code: the bad commit is not slower than the good one by the threshold.
pub const EXIT_NO_REGRESSION: u8 = 1;
/// Exit code: bad flags or arguments (also clap's own usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the measurements did not support a verdict.
pub const EXIT_INCONCLUSIVE: u8 = 3;
/// Exit code: an error in the environment or a failed process.
pub const EXIT_RUNTIME_ERROR: u8 = 4;

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
    #[command(after_help = crate::compare::AFTER_HELP)]
    Compare(CompareArgs),
    /// Judge one commit against a hunt's good and bad runs (for `git bisect run`).
    #[command(after_help = crate::judge::AFTER_HELP)]
    Judge(JudgeArgs),
}

/// Where and what to hunt. Saved with each hunt, so `resume` can run it
/// again as it was given.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunArgs {
    /// A commit, tag or branch that is fast.
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// A later commit, tag or branch that is slower.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub lab: LabArgs,
    /// pgbench clients for the hunt (one count: a hunt decides on one).
    #[arg(long, value_name = "N", value_parser = one_client_count)]
    pub clients: Option<u32>,
    /// Smallest drop worth hunting, in percent.
    #[arg(long, value_name = "PCT")]
    pub threshold: Option<f64>,
    /// Most runs of one commit before it is judged unsure.
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,
    /// Stop after the first culprit instead of finding every step.
    #[arg(long)]
    pub first_only: bool,
    /// Write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Shell command run when the hunt ends, also on failure; it gets
    /// PGBISECT_OUTCOME, PGBISECT_EXIT_CODE, PGBISECT_RESULT,
    /// PGBISECT_REPORT, PGBISECT_REASON and PGBISECT_CULPRITS.
    #[arg(long, value_name = "CMD")]
    pub notify_cmd: Option<String>,
    /// Mail the result (or the failure) to this address; repeatable.
    #[arg(long, value_name = "ADDR")]
    pub mail_to: Vec<String>,
    /// SMTP relay for --mail-to, without TLS or login
    /// (default: the local /usr/sbin/sendmail).
    #[arg(long, value_name = "HOST:PORT")]
    pub smtp: Option<String>,
    /// Sender of the mail (default: pgbisect@<hostname>).
    #[arg(long, value_name = "ADDR")]
    pub mail_from: Option<String>,
    /// What to print at the end: text (72 columns, for the mailing list),
    /// markdown or json.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// Which past hunt a command is about.
#[derive(Debug, Args, Clone)]
pub struct HuntLocation {
    /// The hunt's work dir (default: the one a hunt in --repo uses).
    #[arg(long, value_name = "DIR", conflicts_with = "repo")]
    pub work_dir: Option<PathBuf>,
    /// The repository the hunt ran in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Which hunt: a folder name under <work dir>/hunts (default: the
    /// newest).
    #[arg(long, value_name = "NAME")]
    pub hunt: Option<String>,
}

/// `pgbisect resume`.
#[derive(Debug, Args, Clone)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub at: HuntLocation,
}

/// `pgbisect report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    #[command(flatten)]
    pub at: HuntLocation,
    /// How to render the result.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Write the report to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the hunt's SVG chart (TPS of every tested commit in
    /// history order, culprits marked) to this file.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// The email's sender, e.g. "Jane Doe <jane@example.org>".
    #[arg(long, value_name = "ADDR", requires = "to")]
    pub from: Option<String>,
    /// The email's recipient, e.g. pgsql-hackers@lists.postgresql.org.
    #[arg(long, value_name = "ADDR", requires = "from")]
    pub to: Option<String>,
}

/// `pgbisect compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The base commit, tag or branch (A).
    #[arg(value_name = "A")]
    pub a: String,
    /// The commit to set against A (B); not with --patch.
    #[arg(
        value_name = "B",
        required_unless_present = "patch",
        conflicts_with = "patch"
    )]
    pub b: Option<String>,
    /// Compare A against A with this patch applied.
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// pgbench client counts, one table row each.
    #[arg(
        long,
        value_name = "N,N,...",
        value_delimiter = ',',
        default_value = "1,8,16,32,64,128"
    )]
    pub clients: Vec<u32>,
    /// Runs of each side per client count.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: usize,
    /// Smallest drop called a regression, in percent.
    #[arg(long, value_name = "PCT")]
    pub threshold: Option<f64>,
    /// Write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the SVG chart to this file.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    #[command(flatten)]
    pub lab: LabArgs,
}

/// Where and with what to measure: shared by hunts, `compare` and `judge`.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LabArgs {
    /// The git repository (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Where checkouts, builds, logs and results go
    /// (default: $XDG_CACHE_HOME/pgbisect/<repository>).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Workload profile: a bundled name or a .toml file.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Unprivileged user that runs PostgreSQL when pgbisect runs as root
    /// (default: postgres).
    #[arg(long, value_name = "USER")]
    pub run_as: Option<String>,
    /// Which pgbench drives the load: good (the good endpoint's, or A's in
    /// compare; the default), candidate (each commit's own) or fixed:PATH.
    #[arg(long, value_name = "WHICH")]
    pub pgbench: Option<String>,
    /// PostgreSQL installs kept in the build cache (least recently used
    /// go first).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub cache_size: usize,
}

/// `pgbisect judge`.
#[derive(Debug, Args, Clone)]
pub struct JudgeArgs {
    /// The commit to judge (e.g. HEAD under `git bisect run`).
    #[arg(value_name = "COMMIT")]
    pub commit: String,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pgbisect simulate`.
#[derive(Debug, Args, Clone)]
pub struct SimulateArgs {
    /// Hunts per scenario.
    #[arg(long, default_value_t = 200)]
    pub trials: usize,
    /// Seed of the random histories and noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the scenarios whose name contains this text.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Commits per simulated history.
    #[arg(long)]
    pub commits: Option<usize>,
    /// Smallest drop worth hunting, in percent.
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `--clients` of a hunt: one positive count; a list gets a pointer to
/// `compare`, which measures several.
fn one_client_count(text: &str) -> Result<u32, String> {
    if text.contains(',') {
        return Err(format!(
            "a hunt decides on one client count, e.g. --clients 128; to measure {text} \
             side by side, use `pgbisect compare A B --clients {text}`"
        ));
    }
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "`{text}` is not a client count: give a number of at least 1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
    fn bare_form_is_a_hunt() {
        let cli =
            Cli::try_parse_from(["pgbisect", "--good", "A", "--bad", "B", "--clients", "128"])
                .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.good.as_deref(), Some("A"));
        assert_eq!(cli.run.clients, Some(128));
    }
}
