//! A hunt's flags, and their copy in the hunt's folder (`command.json`)
//! that `resume` and `judge` read back.

use super::args::{
    DECIDE_HEADING, HuntFormat, OUTPUT_HEADING, TIME_HEADING, TargetArgs, WHY_HEADING,
};
use super::output::write_file;
use crate::core::posterior::Search;
use crate::workspace::HuntDir;
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where and what to hunt. Saved with each hunt (`command.json`), so
/// `resume` can run it again as it was given: a renamed field here must
/// keep reading the files earlier releases wrote (see the test below).
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

impl RunArgs {
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
    fn valued_flags(&self) -> [(&'static str, Option<String>); 12] {
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

/// Saves `args` into `hunt_dir`, with the repository, work dir and a
/// profile file made absolute, so the hunt can be resumed from anywhere.
pub(super) fn save(
    hunt: &HuntDir,
    args: &RunArgs,
    repo_dir: &Path,
    work_dir: &Path,
) -> anyhow::Result<()> {
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut saved = args.clone();
    let lab = &mut saved.target.lab;
    lab.repo = Some(absolute(repo_dir));
    lab.work_dir = Some(absolute(work_dir));
    lab.profile = args.target.lab.profile.as_ref().map(|p| {
        let path = Path::new(p);
        if path.is_file() {
            absolute(path).to_string_lossy().into_owned()
        } else {
            p.clone()
        }
    });
    let body = serde_json::to_string_pretty(&saved).context("cannot encode the hunt's command")?;
    write_file(&hunt.command(), &body)
}

/// The saved command of `hunt`.
pub(super) fn load(hunt: &HuntDir) -> anyhow::Result<RunArgs> {
    let path = hunt.command();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut run: RunArgs = serde_json::from_str(&text).with_context(|| {
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
    use crate::commands::{LabArgs, TargetArgs};

    #[test]
    fn saved_commands_load_back_with_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let hunt = HuntDir::at(dir.path());
        let profile = dir.path().join("p.toml");
        std::fs::write(&profile, "").unwrap();
        let args = RunArgs {
            target: TargetArgs {
                good: Some("v1".into()),
                bad: Some("v2".into()),
                lab: LabArgs {
                    profile: Some(profile.to_string_lossy().into_owned()),
                    ..LabArgs::default()
                },
                clients: Some(8),
                ..TargetArgs::default()
            },
            first_only: true,
            ..RunArgs::default()
        };
        save(&hunt, &args, dir.path(), dir.path()).unwrap();
        let back = load(&hunt).unwrap();
        assert_eq!(back.target.good.as_deref(), Some("v1"));
        assert_eq!(back.target.clients, Some(8));
        let posterior = RunArgs {
            target: TargetArgs {
                search: Some(Search::Posterior),
                ..args.target.clone()
            },
            ..args.clone()
        };
        save(&hunt, &posterior, dir.path(), dir.path()).unwrap();
        assert_eq!(load(&hunt).unwrap().target.search, Some(Search::Posterior));
        assert!(back.first_only);
        assert!(back.target.lab.repo.unwrap().is_absolute());
        assert!(Path::new(&back.target.lab.profile.unwrap()).is_absolute());
    }

    #[test]
    fn a_bundled_profile_name_stays_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let hunt = HuntDir::at(dir.path());
        let mut args = RunArgs::default();
        args.target.lab.profile = Some("smoke".into());
        args.target.good = Some("v1".into());
        args.target.bad = Some("v2".into());
        save(&hunt, &args, dir.path(), dir.path()).unwrap();
        let back = load(&hunt).unwrap();
        assert_eq!(back.target.lab.profile.as_deref(), Some("smoke"));
    }

    /// `command.json` as the previous release wrote it: a renamed or moved
    /// flag must still read it, or `resume` fails on every older hunt.
    #[test]
    fn a_command_saved_by_the_previous_release_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let hunt = HuntDir::at(dir.path());
        std::fs::write(
            hunt.command(),
            include_str!("../../tests/fixtures/command-0.1.json"),
        )
        .unwrap();
        let back = load(&hunt).unwrap();
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
        assert_eq!(back.mail_to, ["perf@example.org"]);
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
        args.mail_to = vec!["perf@example.org".into()];
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
                if let Ok(run) = load(&hunt) {
                    proptest::prop_assert!(run.target.good.is_some() && run.target.bad.is_some());
                }
            }
        }
    }
}
