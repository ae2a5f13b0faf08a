//! What a hunt found, as data.
//!
//! One serializable structure is the single source for every report: the
//! JSON written with `--json`, the text for the mailing list and the charts
//! all render it, so they can never disagree.

use crate::core::decide::{Change, Comparison, Method};
use crate::journal::spent::Spent;
use crate::model::Commit;
use serde::{Deserialize, Serialize};

/// How a hunt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HuntOutcome {
    /// At least one commit was confirmed to cause a drop.
    CulpritFound,
    /// The bad endpoint is not slower than the good one by the threshold.
    NoRegression,
    /// The data did not support a verdict.
    Inconclusive,
}

impl HuntOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            HuntOutcome::CulpritFound => "culprit-found",
            HuntOutcome::NoRegression => "no-regression",
            HuntOutcome::Inconclusive => "inconclusive",
        }
    }
}

/// A commit confirmed, side by side with its parent, to cause a drop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// Full SHA.
    pub commit: String,
    pub subject: String,
    pub author: String,
    pub date: String,
    /// Full SHA of the last good-like commit before it (its first parent).
    pub parent: String,
    /// Median throughput of the parent in the side-by-side runs.
    pub before_tps: f64,
    /// Median throughput of the culprit in the side-by-side runs.
    pub after_tps: f64,
    /// Change from parent to culprit with its confidence interval.
    pub change: Change,
    pub p_value: f64,
    pub method: Method,
    /// Side-by-side runs of the parent and of the culprit.
    pub runs_before: usize,
    pub runs_after: usize,
    /// Each host's medians of the side-by-side runs, when they were made
    /// on several hosts (the medians above are then over all of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_host: Vec<HostFigures>,
    /// In a hunt on counts: the functions whose instructions a
    /// transaction moved most from the parent to the culprit, from the
    /// functions cachegrind counted in their runs (A the parent, B the
    /// culprit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<crate::core::counts::FunctionChange>,
}

/// One host's part of a comparison made on several hosts: each side's
/// median there and the runs it rests on, so that a reader sees each
/// machine's own numbers next to the comparison that combines them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFigures {
    pub host: String,
    /// Median throughput of the base side's runs on the host (`None`:
    /// no run of it there).
    pub before_tps: Option<f64>,
    pub after_tps: Option<f64>,
    pub runs_before: usize,
    pub runs_after: usize,
}

impl HostFigures {
    /// Each host's figures, in the order of the hosts' first runs; none
    /// when the runs were made on one machine, whose figures are the
    /// whole comparison's.
    pub fn of(base: &[RunSample], new: &[RunSample]) -> Vec<HostFigures> {
        let both: Vec<RunSample> = base.iter().chain(new).cloned().collect();
        let hosts = RunSample::hosts(&both);
        if hosts.len() < 2 {
            return Vec::new();
        }
        let median = |v: &[f64]| (!v.is_empty()).then(|| crate::core::stats::median(v));
        hosts
            .iter()
            .zip(RunSample::blocks(base, new))
            .map(|(host, (before, after))| HostFigures {
                host: host.clone().unwrap_or_else(|| "this machine".into()),
                before_tps: median(&before),
                after_tps: median(&after),
                runs_before: before.len(),
                runs_after: after.len(),
            })
            .collect()
    }

    /// The change of the medians on this host, in percent; `None`
    /// without both sides.
    pub fn change_pct(&self) -> Option<f64> {
        match (self.before_tps, self.after_tps) {
            (Some(b), Some(a)) if b > 0.0 => Some((a / b - 1.0) * 100.0),
            _ => None,
        }
    }

    /// `1000.0 -> 800.0 (-20.0%), 3 + 3 runs`.
    pub fn describe(&self) -> String {
        let tps = |m: Option<f64>| m.map_or_else(|| "-".to_string(), |m| format!("{m:.1}"));
        let change = self
            .change_pct()
            .map_or_else(String::new, |pct| format!(" ({pct:+.1}%)"));
        format!(
            "{} -> {}{change}, {} + {} runs",
            tps(self.before_tps),
            tps(self.after_tps),
            self.runs_before,
            self.runs_after
        )
    }
}

/// A drop pinned to a range of commits but not to one commit, because the
/// commits inside could not be measured or judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnresolvedRange {
    /// Last commit judged good-like.
    pub last_good: Commit,
    /// First commit judged bad-like.
    pub first_bad: Commit,
    /// Every commit that may be the culprit, oldest first.
    pub suspects: Vec<String>,
    pub reason: String,
    /// Side-by-side comparison of the two ends, when made.
    pub comparison: Option<Comparison>,
}

/// How a tested commit was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Judgement {
    /// One of the hunt's endpoints.
    GoodEndpoint,
    BadEndpoint,
    GoodLike,
    BadLike,
    /// Measured, but the runs allowed no decision within the cap.
    Unsure,
    /// Could not be built.
    Unbuildable,
    /// Built, but its runs failed.
    RunsFailed,
}

/// One benchmark run of a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSample {
    /// Run number within the hunt (its position in time).
    pub run: u64,
    pub tps: f64,
    /// The host that made it, when the hunt measured on several; absent
    /// for this machine alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl RunSample {
    /// The hosts of `runs`, in the order of their first run.
    pub fn hosts(runs: &[RunSample]) -> Vec<Option<String>> {
        let mut hosts: Vec<Option<String>> = Vec::new();
        for r in runs {
            if !hosts.contains(&r.host) {
                hosts.push(r.host.clone());
            }
        }
        hosts
    }

    /// Two sides' runs grouped by host, for
    /// [`crate::core::decide::compare_blocked`]: one block a host, in the
    /// order the hosts first appear; one host gives one block of all the
    /// runs, in their order.
    pub fn blocks(base: &[RunSample], new: &[RunSample]) -> Vec<crate::core::decide::Block> {
        let both: Vec<RunSample> = base.iter().chain(new).cloned().collect();
        let tps_on = |runs: &[RunSample], host: &Option<String>| -> Vec<f64> {
            runs.iter()
                .filter(|r| r.host == *host)
                .map(|r| r.tps)
                .collect()
        };
        RunSample::hosts(&both)
            .iter()
            .map(|host| (tps_on(base, host), tps_on(new, host)))
            .collect()
    }
}

/// Every commit the hunt touched, with all its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestedCommit {
    pub commit: Commit,
    /// Position in the candidate list: 0 is the good endpoint.
    pub position: usize,
    pub judgement: Judgement,
    pub samples: Vec<RunSample>,
    pub summary: Option<crate::core::stats::Summary>,
    /// Why it was skipped, when it was.
    pub note: Option<String>,
}

/// Counts for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Builds really made (cache hits not counted).
    pub builds: u64,
    /// Benchmark runs really made, warm-ups included.
    pub runs: u64,
    pub warmup_runs: u64,
    /// Runs whose result the decisions used.
    pub measured_runs: u64,
    pub build_seconds: f64,
    pub bench_seconds: f64,
    pub wall_seconds: f64,
    /// CPU time of pgbisect itself (not of the builds, servers or pgbench
    /// it started), to show its own overhead.
    #[serde(default)]
    pub cpu_seconds: f64,
    /// How many times pgbisect was started on the hunt: more than one when
    /// it was resumed. The times above add up every start's part, without
    /// the time between them.
    #[serde(default)]
    pub processes: u64,
    #[serde(flatten)]
    pub setup: crate::model::SetupTotals,
}

impl Totals {
    /// Adds work done outside the hunt's own lab (the release check before
    /// it): `lab`'s builds and runs, every run measured, and `wall` seconds.
    pub fn add_work(&mut self, lab: &crate::model::LabTotals, wall: f64) {
        self.builds += lab.builds;
        self.build_seconds += lab.build_seconds;
        self.runs += lab.runs;
        self.warmup_runs += lab.warmup_runs;
        self.measured_runs += lab.runs.saturating_sub(lab.warmup_runs);
        self.bench_seconds += lab.bench_seconds;
        self.wall_seconds += wall;
        self.setup.templates += lab.setup.templates;
        self.setup.template_seconds += lab.setup.template_seconds;
        self.setup.setups += lab.setup.setups;
        self.setup.setup_seconds += lab.setup.setup_seconds;
    }

    /// The totals of a hunt that cost `spent` in `processes` processes.
    pub fn from_spent(spent: Spent, measured_runs: u64, processes: u64) -> Totals {
        let lab = spent.lab;
        Totals {
            builds: lab.builds,
            runs: lab.runs,
            warmup_runs: lab.warmup_runs,
            measured_runs,
            build_seconds: lab.build_seconds,
            bench_seconds: lab.bench_seconds,
            wall_seconds: spent.wall_seconds,
            cpu_seconds: spent.cpu_seconds,
            processes,
            setup: lab.setup,
        }
    }
}

/// How a name given for an endpoint became the commit the hunt measured:
/// `REL9_5` is the tag `REL9_5_0`, which is off master's line, so the
/// hunt starts where it left master.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointResolution {
    /// `good` or `bad`.
    pub endpoint: String,
    /// The name as given: `REL9_5`, `master`, a SHA.
    pub given: String,
    /// Full SHA the name resolved to.
    pub resolved: String,
    /// Full SHA the hunt measured as this end: `resolved`, or where its
    /// line left the other end's.
    pub measured: String,
    /// Why, step by step; empty when git named the commit directly and
    /// the hunt measured it.
    pub reasons: Vec<String>,
}

impl EndpointResolution {
    /// One line for the progress output: `--good REL9_5: a05dc4d7 (REL9_5
    /// -> tag REL9_5_0 (301c2273); ...)`, or `--bad master: f20c4278`.
    pub fn line(&self) -> String {
        let measured = &self.measured[..self.measured.len().min(8)];
        let head = format!("--{} {}: {measured}", self.endpoint, self.given);
        if self.reasons.is_empty() {
            head
        } else {
            format!("{head} ({})", self.reasons.join("; "))
        }
    }
}

/// What measuring a release against where it left master's line found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseFinding {
    /// The release is faster than where it left master by at least the
    /// threshold: the drop from it, or part of it, came from commits on
    /// its stable branch, not from master.
    ReleaseFaster,
    /// The release is slower than where it left master by at least the
    /// threshold: its stable branch lost speed that master's line did not.
    ReleaseSlower,
    /// Any difference is, with confidence, smaller than the threshold.
    Same,
    /// Not settled at the run cap.
    Unclear,
    /// The release could not be built or run.
    Unmeasured,
}

/// `--measure auto`: the measure the endpoints chose, why, and the
/// endpoints' comparisons on each (absent where that measure made no
/// usable runs); counts compared as the transactions a billion
/// instructions buy, so that a drop is slower on both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureChosen {
    pub measure: crate::core::counts::Measure,
    pub why: String,
    pub tps: Option<Comparison>,
    pub counts: Option<Comparison>,
    /// How many of the runs made choosing were taken by the hunt as its
    /// first runs of the endpoints (not made again).
    #[serde(default)]
    pub reused: usize,
}

/// A release tag off master's line measured, before the search, against
/// the commit where its line left master (the hunt's good end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseCheck {
    /// The name given for `--good`.
    pub given: String,
    pub release: Commit,
    /// Where the release's line left master's.
    pub merge_base: Commit,
    /// The stable branch the release is on, when known.
    pub branch: Option<String>,
    /// What it left: `master`, or `that line` when `--bad` was a SHA.
    #[serde(default)]
    pub left: String,
    pub finding: ReleaseFinding,
    /// The merge-base against the release (negative: the merge-base is
    /// slower); absent when the release could not be measured.
    pub comparison: Option<Comparison>,
    /// Why the release could not be measured.
    pub reason: Option<String>,
}

/// The whole result of a hunt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HuntReport {
    pub outcome: HuntOutcome,
    pub good: Commit,
    pub bad: Commit,
    /// Commits in the range, good excluded, bad included.
    pub candidates: usize,
    /// Smallest drop reported, as a fraction.
    pub threshold: f64,
    pub clients: u32,
    /// What measured: the pgbench command line or the profile's commands.
    pub measurement: String,
    /// What decided: tps, or the instructions a transaction costs. With
    /// instructions, the levels of `endpoints`, `culprits` and `tested`
    /// are the transactions a billion instructions buy (the figure the
    /// engine decides on); [`crate::report::counted::Units`] shows them
    /// as instructions.
    #[serde(default, skip_serializing_if = "crate::core::counts::Measure::is_tps")]
    pub measure: crate::core::counts::Measure,
    /// Good endpoint against bad endpoint, interleaved.
    pub endpoints: Comparison,
    pub culprits: Vec<Culprit>,
    pub unresolved: Vec<UnresolvedRange>,
    /// Plain-language remarks: unexplained parts of the drop, skips.
    pub notes: Vec<String>,
    /// History order (oldest first).
    pub tested: Vec<TestedCommit>,
    pub totals: Totals,
    /// The machine the hunt ran on (absent in results of older versions).
    #[serde(default)]
    pub machine: Option<crate::machine::Machine>,
    /// The profile's name (a bundled name, a file path, or `default`).
    #[serde(default)]
    pub profile_name: String,
    /// The profile's TOML exactly as used; empty for the defaults.
    #[serde(default)]
    pub profile_toml: String,
    /// Server settings given to every server, `name = value`, in order.
    #[serde(default)]
    pub server_settings: Vec<(String, String)>,
    /// The user's extra `configure` arguments and `CFLAGS`, as used, then
    /// the compatibility steps some of the tested commits were built with
    /// (`+ FLEX=... (old trees: N of M commits)`).
    #[serde(default)]
    pub configure_flags: Vec<String>,
    /// How `--good` and `--bad` became the commits measured (absent in
    /// results of older versions).
    #[serde(default)]
    pub resolution: Vec<EndpointResolution>,
    /// The given release against where it left master, when the good end
    /// was moved there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_check: Option<ReleaseCheck>,
    /// The measure chosen at the endpoints, when the hunt was asked to
    /// choose (`--measure auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure_chosen: Option<MeasureChosen>,
    /// What the why-runs after each culprit found, by culprit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<crate::core::why::Why>,
    /// Which pgbisect made the result, when, and the command that hunts
    /// the same range again (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<Provenance>,
}

/// Which pgbisect made a result, when, and how to make it again: what a
/// reader of the report needs to trust it and to repeat it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// pgbisect's version.
    pub version: String,
    /// When the hunt ended (RFC 3339, UTC).
    pub finished: String,
    /// The command line, one argument an element, that hunts the same
    /// range with the same workload and decisions.
    pub command: Vec<String>,
}

impl Provenance {
    /// This pgbisect, now, with `command`.
    pub fn now(command: Vec<String>) -> Provenance {
        Provenance {
            version: env!("CARGO_PKG_VERSION").to_string(),
            finished: crate::time::now_rfc3339(),
            command,
        }
    }
}

impl HuntReport {
    /// The why-runs of `culprit`, when made.
    pub fn why_of(&self, culprit: &str) -> Option<&crate::core::why::Why> {
        self.why.iter().find(|w| w.commit == culprit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(tps_on: &[(f64, Option<&str>)]) -> Vec<RunSample> {
        tps_on
            .iter()
            .enumerate()
            .map(|(i, (tps, host))| RunSample {
                run: i as u64 + 1,
                tps: *tps,
                host: host.map(str::to_string),
            })
            .collect()
    }

    #[test]
    fn each_hosts_figures_are_its_own_runs_medians() {
        let (a, b) = (Some("a"), Some("b"));
        let base = runs(&[(100.0, a), (200.0, b), (102.0, a), (198.0, b), (101.0, a)]);
        let new = runs(&[(90.0, a), (180.0, b), (91.0, a)]);
        let figures = HostFigures::of(&base, &new);
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].host, "a");
        assert_eq!(figures[0].before_tps, Some(101.0));
        assert_eq!(figures[0].after_tps, Some(90.5));
        assert_eq!((figures[0].runs_before, figures[0].runs_after), (3, 2));
        assert_eq!(figures[1].describe(), "199.0 -> 180.0 (-9.5%), 2 + 1 runs");
        let only_base = runs(&[(100.0, a), (200.0, b)]);
        let one_side = HostFigures::of(&only_base, &runs(&[(90.0, a)]));
        assert_eq!(one_side[1].describe(), "200.0 -> -, 1 + 0 runs");
    }

    #[test]
    fn one_machine_has_no_figures_of_its_own() {
        let here = runs(&[(100.0, None), (101.0, None)]);
        assert!(HostFigures::of(&here, &here).is_empty());
        let one_host = runs(&[(100.0, Some("a"))]);
        assert!(HostFigures::of(&one_host, &one_host).is_empty());
    }
}
