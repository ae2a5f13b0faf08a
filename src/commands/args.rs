//! Flags that several commands share: where and with what to measure, and
//! which past hunt a command is about.

use crate::profile::RunLength;
use crate::report::Format;
use crate::workspace::WorkDir;
use clap::Args;
use clap::builder::PossibleValue;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Help heading of the flags that say where and with what to measure.
pub const LAB_HEADING: &str = "Where and with what to measure";
/// Help heading of the endpoints and the client count.
pub const TARGET_HEADING: &str = "What to hunt";
/// Help heading of the flags that bound a hunt's decisions.
pub const DECIDE_HEADING: &str = "How to decide";
/// Help heading of a hunt's time limits.
pub const TIME_HEADING: &str = "Time";
/// Help heading of what a hunt writes and whom it tells.
pub const OUTPUT_HEADING: &str = "Output and notification";
/// Help heading of the runs made after a culprit is found.
pub const WHY_HEADING: &str = "Why-runs";

/// Where and with what to measure: shared by hunts, `compare` and `judge`.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
#[command(next_help_heading = LAB_HEADING)]
pub struct LabArgs {
    /// The git repository (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Where checkouts, builds, logs and results go (default:
    /// $XDG_CACHE_HOME/pgbisect/<repository>; without XDG_CACHE_HOME,
    /// /var/tmp/pgbisect/<repository> as root, else
    /// ~/.cache/pgbisect/<repository>).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Workload profile: a bundled name or a .toml file (default: pgbench's
    /// built-in select-only, prepared, at scale 10, 10-second runs; see `pgbisect
    /// profiles`).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Unprivileged user that runs PostgreSQL when pgbisect runs as root
    /// (default: postgres; not with a custom-command profile).
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
    #[arg(long, value_name = "NAME", value_parser = super::values::plain_name)]
    pub hunt: Option<String>,
}

impl LabArgs {
    /// The repository given, or the current directory.
    pub fn repo_dir(&self) -> PathBuf {
        self.repo.clone().unwrap_or_else(|| PathBuf::from("."))
    }

    /// The work dir given, or the default one of the repository.
    pub fn work_dir(&self) -> anyhow::Result<WorkDir> {
        WorkDir::given_or_default(self.work_dir.as_deref(), Some(&self.repo_dir()))
    }
}

impl HuntLocation {
    /// The work dir given, or the default one of the repository given.
    pub fn work_dir(&self) -> anyhow::Result<WorkDir> {
        WorkDir::given_or_default(self.work_dir.as_deref(), self.repo.as_deref())
    }
}

/// What a hunt decides on, shared by a hunt and `judge`: the endpoints,
/// the lab, the client count and the decision's bounds.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
#[command(next_help_heading = TARGET_HEADING)]
pub struct TargetArgs {
    /// A commit, tag or branch that is fast, or a release: REL9_5_0, 9.5,
    /// 16, 16.2, REL_16_STABLE (see "Endpoints" in `pgbisect --help`).
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// A later commit, tag or branch that is slower, or a release.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub lab: LabArgs,
    /// pgbench clients for the hunt (one count: a hunt decides on one).
    #[arg(long, value_name = "N", value_parser = one_client_count, allow_hyphen_values = true,
          help_heading = TARGET_HEADING)]
    pub clients: Option<u32>,
    /// Smallest drop worth hunting, in percent: 5 or 5% (default: the
    /// profile's `threshold`, else 5).
    #[arg(long, value_name = "PCT", value_parser = percent, allow_hyphen_values = true,
          help_heading = DECIDE_HEADING)]
    pub threshold: Option<f64>,
    /// Most runs of one commit before it is judged unsure (default: the
    /// profile's `max-runs`, else 20).
    #[arg(long, value_name = "N", help_heading = DECIDE_HEADING)]
    pub max_runs: Option<usize>,
    /// How a hunt searches a range: `posterior`, every run as evidence
    /// about where the drop is, or `bisect`, candidate by candidate
    /// (default: the profile's `search`, else posterior).
    #[arg(long, value_enum, value_name = "HOW", help_heading = DECIDE_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::engine::hunt::Search>,
    /// Over several hosts, how many commits the posterior search measures
    /// at once, each host taking one in turn (default: the hosts, at most
    /// 4; 1: every host on the same commit).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..),
          help_heading = DECIDE_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<u32>,
    /// How long each run lasts: `fixed`, the profile's duration, or
    /// `auto`, chosen from the noise at the endpoints with the profile's
    /// duration the longest (default: the profile's `run-length`, else
    /// fixed).
    #[arg(long, value_enum, value_name = "HOW", help_heading = DECIDE_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_length: Option<RunLength>,
    /// What decides: `tps`; `instructions`, the instructions a
    /// transaction costs, counted by cachegrind (repeat to 0.1-0.3% where
    /// tps moves 3-15%; blind to waiting); or `auto`, both measured at the
    /// endpoints and the one that sees the slowdown kept (default: the
    /// profile's `measure`, else tps).
    #[arg(long, value_name = "tps|instructions|auto",
          value_parser = crate::core::counts::MeasureChoice::parse, help_heading = DECIDE_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<crate::core::counts::MeasureChoice>,
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

    #[test]
    fn percentages_are_read_with_or_without_the_sign() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("5%"), Ok(5.0));
        assert_eq!(percent(" 2.5 % "), Ok(2.5));
        assert!(
            percent("-5")
                .unwrap_err()
                .contains("positive percentage, e.g. 5")
        );
        for bad in ["0", "100", "150%", "five", "%", ""] {
            assert!(percent(bad).unwrap_err().contains("5 or 5%"), "{bad}");
        }
    }

    #[test]
    fn a_negative_client_count_is_named_as_such() {
        assert!(
            one_client_count("-4")
                .unwrap_err()
                .contains("not a client count")
        );
    }
}

/// `--threshold`: a percentage as people write it, `5` or `5%`, more than
/// 0 and less than 100 (a drop of 100% is a server that does nothing).
pub fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim_end();
    match number.parse::<f64>() {
        Ok(pct) if pct > 0.0 && pct < 100.0 => Ok(pct),
        Ok(pct) if pct < 0.0 => Err(format!(
            "`{text}`: a drop is given as a positive percentage, e.g. {}",
            -pct
        )),
        _ => Err(format!(
            "`{text}` is not a percentage between 0 and 100: write it as 5 or 5%"
        )),
    }
}

/// `--format`: a report format as the command line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReportFormat(pub Format);

impl clap::ValueEnum for ReportFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ReportFormat(Format::Text),
            ReportFormat(Format::Markdown),
            ReportFormat(Format::Json),
            ReportFormat(Format::Email),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            Format::Text => PossibleValue::new("text")
                .help("Plain text for the mailing list, at most 72 columns"),
            Format::Markdown => {
                PossibleValue::new("markdown").help("GitHub-flavoured markdown with tables")
            }
            Format::Json => PossibleValue::new("json").help("The result as data"),
            Format::Email => PossibleValue::new("email")
                .help("An RFC 5322 message with the text as body, from git's user.name and user.email unless --from"),
        })
    }
}

/// `--format` of a hunt: what it prints at the end. An email is made from
/// a finished hunt by `pgbisect report --format email` (or sent by the
/// hunt itself with `--mail-to`), so a hunt does not offer it; `email` is
/// still read, hidden, so that the hunt can say where to get one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HuntFormat(pub Format);

impl clap::ValueEnum for HuntFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            HuntFormat(Format::Text),
            HuntFormat(Format::Markdown),
            HuntFormat(Format::Json),
            HuntFormat(Format::Email),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = ReportFormat(self.0).to_possible_value()?;
        Some(if self.0 == Format::Email {
            value.hide(true)
        } else {
            value
        })
    }
}
