//! A hunt's flags, resolved into the hunt's plan; and what `resume`,
//! `judge` and `report` read back from the hunt's folder (`command.json`):
//! that plan, or the flags an earlier release saved there.

use super::args::{
    DECIDE_HEADING, HuntFormat, OUTPUT_HEADING, TIME_HEADING, TargetArgs, WHY_HEADING,
};
use super::hosts::HostArgs;
use super::plan::{load_profile_with_text, resolve_plan_with};
use crate::core::posterior::Search;
use crate::engine::session::resolved::{HuntPlan, LAYOUT, Outputs, TimeLimit};
use crate::workspace::{HuntDir, PlanFlags};
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where and what to hunt. Earlier releases saved these flags with each
/// hunt (`command.json`); this one saves the plan they resolve to, and
/// still reads theirs (see the tests below): a renamed field here must
/// keep reading those files.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub target: TargetArgs,
    /// Stop after the first culprit instead of finding every step.
    #[arg(long, help_heading = DECIDE_HEADING)]
    pub first_only: bool,
    /// End within this much wall time (e.g. 8h, 90m, 1h30m) with what was
    /// found by then; rerunning the same command goes on from there.
    #[arg(long, value_name = "DURATION", conflicts_with = "deadline", help_heading = TIME_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
    /// End by this local time of day (HH:MM, e.g. 07:00: the next such
    /// time) with what was found by then.
    #[arg(long, value_name = "HH:MM", help_heading = TIME_HEADING)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// Write the result as JSON to this file (also when the hunt fails).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT_HEADING)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub tell: NotifyArgs,
    /// What to print at the end: text (72 columns, for the mailing list),
    /// markdown or json.
    #[arg(long, value_enum, default_value_t, help_heading = OUTPUT_HEADING)]
    pub format: HuntFormat,
    /// Do not measure each culprit against its parent again with
    /// instruments (client sweep, statement latencies, wait events).
    #[arg(long, help_heading = WHY_HEADING)]
    pub no_why: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub why: super::why::WhyArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub on: super::hosts::HostArgs,
}

/// Who is told how a hunt ended (`pgbisect watch`: of each finding).
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NotifyArgs {
    /// Shell command run when the hunt ends, also on failure; it gets
    /// PGBISECT_OUTCOME, PGBISECT_EXIT_CODE, PGBISECT_RESULT,
    /// PGBISECT_REPORT, PGBISECT_REASON and PGBISECT_CULPRITS.
    #[arg(long, value_name = "CMD", help_heading = OUTPUT_HEADING)]
    pub notify_cmd: Option<String>,
    /// Mail the result (or the failure) to this address; repeatable.
    #[arg(long, value_name = "ADDR", help_heading = OUTPUT_HEADING)]
    pub mail_to: Vec<String>,
    /// SMTP relay for --mail-to, without TLS or login
    /// (default: the local /usr/sbin/sendmail).
    #[arg(long, value_name = "HOST:PORT", help_heading = OUTPUT_HEADING)]
    pub smtp: Option<String>,
    /// Sender of the mail (default: pgbisect@<hostname>).
    #[arg(long, value_name = "ADDR", help_heading = OUTPUT_HEADING)]
    pub mail_from: Option<String>,
}

impl NotifyArgs {
    /// Whom these flags tell, and how; a usage error when they do not fit.
    pub(super) fn notifier(&self) -> anyhow::Result<crate::notify::Notifier> {
        crate::notify::Notifier::from_flags(
            self.notify_cmd.as_deref(),
            &self.mail_to,
            self.smtp.as_deref(),
            self.mail_from.as_deref(),
        )
        .map_err(|e| crate::error::UsageError(e).into())
    }
}

impl RunArgs {
    /// The hunt these flags ask for, resolved once: the endpoints, the
    /// profile and this machine decide everything it runs with.
    pub(super) fn resolve(&self) -> anyhow::Result<HuntPlan> {
        let t = &self.target;
        let (profile, profile_toml) = load_profile_with_text(&t.lab)?;
        let plan = resolve_plan_with(t, self.first_only, profile)?;
        Ok(HuntPlan {
            layout: LAYOUT,
            given: (
                t.good.clone().unwrap_or_default(),
                t.bad.clone().unwrap_or_default(),
            ),
            flags: PlanFlags {
                threshold: t.threshold,
                max_runs: t.max_runs,
                first_only: self.first_only,
            },
            hosts: self.on.wanted(),
            time: self.time(),
            why_runs: (!self.no_why).then_some(self.why.why_runs),
            profile_name: t.lab.profile.clone(),
            profile_toml,
            again: self.again(&short(&plan.good), &short(&plan.bad)),
            outputs: self.outputs(),
            plan,
        })
    }

    /// `--time-budget` and `--deadline`.
    pub(super) fn time(&self) -> TimeLimit {
        TimeLimit {
            budget: self.time_budget.clone(),
            deadline: self.deadline.clone(),
        }
    }

    /// Where the result goes and who is told.
    pub(super) fn outputs(&self) -> Outputs {
        Outputs {
            json: self.json.clone(),
            format: self.format.0,
            notify_cmd: self.tell.notify_cmd.clone(),
            mail_to: self.tell.mail_to.clone(),
            smtp: self.tell.smtp.clone(),
            mail_from: self.tell.mail_from.clone(),
        }
    }

    /// The command line that hunts `good..bad` (SHAs: a branch name moves
    /// on) again as these flags did: the workload, the client count, the
    /// decisions, the search, the budget and the hosts; not where files go,
    /// who runs the server or who is told.
    pub(super) fn again(&self, good: &str, bad: &str) -> Vec<String> {
        let mut out: Vec<String> = ["pgbisect", "--good", good, "--bad", bad]
            .map(String::from)
            .to_vec();
        for (name, value) in self.valued_flags() {
            if let Some(v) = value {
                out.extend([format!("--{name}"), v]);
            }
        }
        for (on, name) in [
            (self.first_only, "--first-only"),
            (self.no_why, "--no-why"),
            (self.on.slurm, "--slurm"),
        ] {
            if on {
                out.push(name.to_string());
            }
        }
        out
    }

    /// The flags with a value that change what a hunt measures, and their
    /// values as given (`None`: not given, or the default).
    fn valued_flags(&self) -> [(&'static str, Option<String>); 13] {
        let t = &self.target;
        let named = |v: Option<clap::builder::PossibleValue>| v.map(|p| p.get_name().to_string());
        [
            ("profile", t.lab.profile.clone()),
            ("pgbench", t.lab.pgbench.clone()),
            ("clients", t.clients.map(|c| c.to_string())),
            ("threshold", t.threshold.map(|p| format!("{p}%"))),
            ("max-runs", t.max_runs.map(|n| n.to_string())),
            (
                "search",
                t.search
                    .and_then(|s| named(clap::ValueEnum::to_possible_value(&s))),
            ),
            ("candidates", t.candidates.map(|k| k.to_string())),
            ("measure", t.measure.map(|m| m.name().to_string())),
            (
                "run-length",
                t.run_length
                    .and_then(|r| named(clap::ValueEnum::to_possible_value(&r))),
            ),
            ("time-budget", self.time_budget.clone()),
            ("deadline", self.deadline.clone()),
            (
                "hosts",
                (!self.on.hosts.is_empty()).then(|| self.on.hosts.join(",")),
            ),
            (
                "why-runs",
                (self.why.why_runs != crate::engine::why::DEFAULT_RUNS)
                    .then(|| self.why.why_runs.to_string()),
            ),
        ]
    }
}

/// A commit as the command to hunt again names it.
fn short(commit: &crate::model::Commit) -> String {
    commit.id.chars().take(12).collect()
}

/// What a hunt's `command.json` holds: its resolved plan, or the flags an
/// earlier release saved.
#[derive(Debug)]
pub(super) enum Saved {
    Plan(Box<HuntPlan>),
    Flags(Box<RunArgs>),
}

impl Saved {
    /// `--good` and `--bad` as given.
    pub(super) fn endpoints(&self) -> (&str, &str) {
        match self {
            Saved::Plan(p) => (&p.given.0, &p.given.1),
            Saved::Flags(f) => (
                f.target.good.as_deref().unwrap_or("?"),
                f.target.bad.as_deref().unwrap_or("?"),
            ),
        }
    }

    /// The repository the hunt ran in, as saved (absolute).
    pub(super) fn repo(&self) -> Option<PathBuf> {
        match self {
            Saved::Plan(p) => Some(p.plan.repo_dir.clone()),
            Saved::Flags(f) => f.target.lab.repo.clone(),
        }
    }

    /// The hosts the hunt was started with.
    pub(super) fn hosts(&self) -> HostArgs {
        match self {
            Saved::Plan(p) => HostArgs {
                hosts: p.hosts.hosts.clone(),
                slurm: p.hosts.slurm,
            },
            Saved::Flags(f) => f.on.clone(),
        }
    }
}

/// What `hunt` saved: its plan, or an earlier release's flags.
pub(super) fn load(hunt: &HuntDir) -> anyhow::Result<Saved> {
    let path = hunt.command();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    match HuntPlan::read(&text, &path) {
        Some(plan) => Ok(Saved::Plan(Box::new(plan?))),
        None => earlier_flags(&text, &path).map(|f| Saved::Flags(Box::new(f))),
    }
}

/// The flags an earlier release saved as `command.json` (at `path`).
fn earlier_flags(text: &str, path: &Path) -> anyhow::Result<RunArgs> {
    let mut run: RunArgs = serde_json::from_str(text).with_context(|| {
        format!(
            "{} is not a saved pgbisect hunt (its JSON does not match)",
            path.display()
        )
    })?;
    anyhow::ensure!(
        run.target.good.is_some() && run.target.bad.is_some(),
        "{} is not a saved pgbisect hunt: it names no --good and --bad",
        path.display()
    );
    // Hunts save the search they use; one saved without it was begun
    // before there was a choice, with the candidate-by-candidate search.
    if run.target.search.is_none() {
        run.target.search = Some(Search::Bisect);
    }
    // Likewise a hunt saved without the commits a round measures was
    // begun when every host measured the same one.
    if run.target.candidates.is_none() {
        run.target.candidates = Some(1);
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of an earlier release's `command.json`.
    fn flags_in(fixture: &str) -> RunArgs {
        let dir = tempfile::tempdir().unwrap();
        let hunt = HuntDir::at(dir.path());
        std::fs::write(hunt.command(), fixture).unwrap();
        match load(&hunt).unwrap() {
            Saved::Flags(run) => *run,
            Saved::Plan(plan) => panic!("read as a plan: {plan:?}"),
        }
    }

    /// `command.json` as the release before the resolved plan wrote it
    /// (made by that release's `pgbisect --good good --bad bad --profile
    /// profile.toml --clients 4 --threshold 7 --max-runs 12 --time-budget 2h
    /// --json out.json --format markdown`): its hunts must still resume.
    #[test]
    fn a_command_saved_by_the_release_before_the_plan_still_loads() {
        let back = flags_in(include_str!("../../tests/fixtures/command-0.2.json"));
        assert_eq!(back.target.good.as_deref(), Some("good"));
        assert_eq!(back.target.bad.as_deref(), Some("bad"));
        assert_eq!(back.target.search, Some(Search::Posterior));
        assert_eq!(back.target.candidates, Some(1));
        assert_eq!(back.target.clients, Some(4));
        assert_eq!(back.target.threshold, Some(7.0));
        assert_eq!(back.target.max_runs, Some(12));
        assert_eq!(
            back.target.lab.profile.as_deref(),
            Some("/tmp/fx/profile.toml")
        );
        assert_eq!(back.time_budget.as_deref(), Some("2h"));
        assert_eq!(back.json.as_deref(), Some(Path::new("out.json")));
        assert_eq!(back.why.why_runs, 3);
        assert_eq!(back.format.0, crate::report::Format::Markdown);
    }

    /// `command.json` as release 0.1 wrote it: a renamed or moved
    /// flag must still read it, or `resume` fails on every older hunt.
    #[test]
    fn a_command_saved_by_the_previous_release_still_loads() {
        let back = flags_in(include_str!("../../tests/fixtures/command-0.1.json"));
        assert_eq!(back.target.good.as_deref(), Some("v1"));
        assert_eq!(back.target.bad.as_deref(), Some("v2"));
        // Begun before the posterior search: it goes on as it began.
        assert_eq!(back.target.search, Some(Search::Bisect));
        assert_eq!(back.target.candidates, Some(1));
        assert_eq!(back.target.clients, Some(4));
        assert_eq!(back.target.max_runs, Some(12));
        assert_eq!(
            back.target.lab.work_dir.as_deref(),
            Some(Path::new("/var/tmp/w"))
        );
        assert_eq!(back.tell.mail_to, ["perf@example.org"]);
        assert_eq!(back.format.0, crate::report::Format::Markdown);
    }

    #[test]
    fn the_command_again_keeps_what_shapes_the_hunt_and_nothing_else() {
        let mut args = RunArgs::default();
        args.target.good = Some("REL9_5_0".into());
        args.target.bad = Some("master".into());
        args.target.lab.profile = Some("ro-128.toml".into());
        args.target.lab.work_dir = Some("/var/tmp/w".into());
        args.target.clients = Some(128);
        args.target.threshold = Some(2.5);
        args.target.search = Some(Search::Bisect);
        args.time_budget = Some("8h".into());
        args.json = Some("/tmp/r.json".into());
        args.tell.mail_to = vec!["perf@example.org".into()];
        args.first_only = true;
        assert_eq!(
            args.again("006a283a3c39", "60bbffae1c7e"),
            [
                "pgbisect",
                "--good",
                "006a283a3c39",
                "--bad",
                "60bbffae1c7e",
                "--profile",
                "ro-128.toml",
                "--clients",
                "128",
                "--threshold",
                "2.5%",
                "--search",
                "bisect",
                "--time-budget",
                "8h",
                "--first-only",
            ]
        );
        let plain = RunArgs::default().again("a", "b");
        assert_eq!(plain, ["pgbisect", "--good", "a", "--bad", "b"]);
    }

    proptest::proptest! {
        /// Whatever is left in `command.json` (cut by a full disk, edited
        /// by hand), reading it never panics, and what is accepted names
        /// the hunt's endpoints.
        #[test]
        fn any_saved_command_reads_without_panic(
            text in "(?s).{0,200}",
            cut in 0usize..2000,
            junk in "[{}\\[\\]\":,a-z0-9 ]{0,20}",
        ) {
            let dir = tempfile::tempdir().unwrap();
            let hunt = HuntDir::at(dir.path());
            let saved = include_str!("../../tests/fixtures/command-0.1.json");
            let mut cut = cut.min(saved.len());
            while !saved.is_char_boundary(cut) {
                cut -= 1;
            }
            for body in [text, format!("{}{junk}", &saved[..cut]), "{}".to_string()] {
                std::fs::write(hunt.command(), &body).unwrap();
                if let Ok(Saved::Flags(run)) = load(&hunt) {
                    proptest::prop_assert!(run.target.good.is_some() && run.target.bad.is_some());
                }
            }
        }
    }
}
