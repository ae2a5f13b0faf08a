//! What the watcher's session adds to the hunt of a confirmed change: the
//! change's hunt made a plan like a person's, and run by the same runner
//! ([`super::runner`]), so that its report has what a person's has (the
//! why-runs, the server settings, the configure flags, the command that
//! hunts it again with the profile as it was named); and the finding told
//! with the hunt's notifications (`--notify-cmd`, `--mail-to`).

use super::Plan;
use super::resolved::{HuntPlan, LAYOUT, Outputs, Shaping, TimeLimit};
use super::runner::{HuntRun, WhyFailure};
use crate::core::decide::DecisionConfig;
use crate::engine::hunt::HuntConfig;
use crate::engine::watch::hunt::{ChangeAsk, Finding, Follow, report_json};
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION};
use crate::lab::Lab;
use crate::lab::held::HostsWanted;
use crate::lab::open::LabSpec;
use crate::machine::steady::Watch;
use crate::model::Commit;
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::profile::{Profile, RunLength};
use crate::progress::Progress;
use crate::report::findings::{EndpointResolution, HuntOutcome, HuntReport};
use crate::workspace::{PlanFlags, WorkDir};
use anyhow::Context;

/// A watched profile as its hunts are set up.
pub struct ProfileSetup {
    /// Its series' name.
    pub name: String,
    /// `--profile` as it was given (`None`: the default profile).
    pub given: Option<String>,
    /// The TOML it was read from, for the reports.
    pub toml: String,
    /// What its lab was opened with.
    pub spec: LabSpec,
}

/// What the watcher's hunts are run with.
pub struct Hunter {
    pub profiles: Vec<ProfileSetup>,
    /// Runs a side of the why-runs; `None`: none.
    pub why_runs: Option<usize>,
    pub work: WorkDir,
    pub watch: Watch,
}

impl Hunter {
    /// Runs the hunt of the change `asked` names in `lab`, by the runner
    /// of every hunt.
    pub fn hunt(
        &self,
        asked: &ChangeAsk,
        lab: &mut dyn Lab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<HuntReport> {
        let hunt = self.plan(asked)?;
        let name = asked.journal_name();
        let run = HuntRun {
            hunt: &hunt,
            folder: asked.folder,
            names: &[&name],
            candidates: &asked.commits[1..],
            budget: asked.budget,
            interrupt: None,
            held: None,
            watch: &self.watch,
            release: None,
            measure_chosen: None,
            reuse: Default::default(),
            why_failure: WhyFailure::Noted,
        };
        super::runner::run(run, lab, progress)
    }

    /// The plan of the hunt `asked` names: the lab's profile and setups,
    /// the change's commits, and the flags that make a person's hunt the
    /// same as this one.
    pub fn plan(&self, asked: &ChangeAsk) -> anyhow::Result<HuntPlan> {
        let setup = self
            .profiles
            .iter()
            .find(|p| p.name == asked.profile)
            .with_context(|| format!("no watched profile is named {}", asked.profile))?;
        let (Some(good), Some(bad)) = (asked.commits.first(), asked.commits.last()) else {
            anyhow::bail!("the hunt of change {} has no commits", asked.change.id);
        };
        let spec = &setup.spec;
        let plan = Plan {
            profile: spec.profile.clone(),
            config: asked.config,
            good: good.clone(),
            bad: bad.clone(),
            // The store names both ends by their SHAs.
            resolution: vec![as_measured("good", good), as_measured("bad", bad)],
            release: None,
            repo_dir: spec.repo_dir.clone(),
            work: self.work.clone(),
            choices: spec.choices.clone(),
            setups: spec.setups.clone(),
            // The change's series chose the measure.
            auto_counter: None,
        }
        .deciding_on(asked.config.measure, spec.choices.counter.as_deref());
        let (flags, shaping) = flags_for(&spec.profile, &asked.config);
        Ok(HuntPlan {
            layout: LAYOUT,
            given: (good.id.clone(), bad.id.clone()),
            plan,
            flags,
            hosts: HostsWanted::default(),
            time: TimeLimit::default(),
            why_runs: self.why_runs,
            profile_name: setup.given.clone(),
            profile_toml: setup.toml.clone(),
            shaping,
            outputs: Outputs::default(),
        })
    }
}

/// An end of the hunt, named by its SHA and measured as it is.
fn as_measured(endpoint: &str, commit: &Commit) -> EndpointResolution {
    EndpointResolution {
        endpoint: endpoint.to_string(),
        given: commit.id.clone(),
        resolved: commit.id.clone(),
        measured: commit.id.clone(),
        reasons: vec![],
    }
}

/// The flags that make a hunt with `profile` run as `config` does: the
/// client count, and each decision of `config` the profile would not
/// make by itself (the watcher decides its own threshold).
fn flags_for(profile: &Profile, config: &HuntConfig) -> (PlanFlags, Shaping) {
    let hunt = &profile.hunt;
    let (decision, plain) = (config.decision, DecisionConfig::default());
    let percent = |share: f64| (share * 100.0 * 1e9).round() / 1e9;
    let threshold = percent(decision.threshold);
    let run_length = match config.choose_run_length {
        true => RunLength::Auto,
        false => RunLength::Fixed,
    };
    let profile_length = profile.benchmark.run_length.unwrap_or(RunLength::Fixed);
    let flags = PlanFlags {
        threshold: (hunt.threshold.unwrap_or(percent(plain.threshold)) != threshold)
            .then_some(threshold),
        max_runs: (hunt.max_runs.unwrap_or(plain.max_runs) != decision.max_runs)
            .then_some(decision.max_runs),
        first_only: config.first_only,
    };
    let shaping = Shaping {
        clients: Some(config.clients),
        search: (hunt.search.unwrap_or_default() != config.search).then_some(config.search),
        candidates: config.candidates,
        run_length: (profile_length != run_length).then_some(run_length),
    };
    (flags, shaping)
}

/// The session's side of the watcher's hunts.
pub struct Aftercare {
    pub hunter: Hunter,
    pub notifier: Notifier,
    /// Mail each finding to its culprit's author as well (Cc).
    pub cc_author: bool,
    /// Each finding told tonight that was not, and why (its mail
    /// refused, its command failed).
    pub unsent: Vec<(String, String)>,
}

impl Follow for Aftercare {
    fn hunt(
        &mut self,
        asked: &ChangeAsk,
        lab: &mut dyn Lab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<HuntReport> {
        self.hunter.hunt(asked, lab, progress)
    }

    fn mail(&mut self, finding: &Finding) -> anyhow::Result<Option<String>> {
        let author = (finding.report.culprits.first())
            .filter(|_| self.cc_author)
            .and_then(|c| crate::notify::mail::address_of(&c.author));
        let told = self.notifier.mail_cc(
            (&finding.subject, &finding.body),
            &finding.message_id_part,
            author.as_slice(),
        );
        self.noted(finding, &told);
        told
    }

    fn command(&mut self, finding: &Finding) -> anyhow::Result<bool> {
        let exit_code = match finding.report.outcome {
            HuntOutcome::CulpritFound => EXIT_CULPRIT_FOUND,
            HuntOutcome::NoRegression => EXIT_NO_REGRESSION,
            HuntOutcome::Inconclusive => EXIT_INCONCLUSIVE,
        };
        let end = HuntEnd {
            ending: Ending::Finished(finding.report),
            exit_code,
            result: Some(report_json(finding.hunt)),
            report: Some(finding.hunt.report_text()),
            work_dir: Some(self.hunter.work.root().to_path_buf()),
        };
        let ran = self.notifier.command_only(&end);
        self.noted(finding, &ran);
        ran
    }
}

impl Aftercare {
    /// Keeps why `finding` was not told, when it was not.
    fn noted<T>(&mut self, finding: &Finding, told: &anyhow::Result<T>) {
        if let Err(e) = told {
            let what = crate::engine::watch::owed::finding(finding.change);
            self.unsent.push((what, format!("{e:#}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::hunt::Search;

    fn watcher(clients: u32) -> HuntConfig {
        HuntConfig {
            clients,
            decision: crate::engine::watch::WatchConfig::new("master").decision,
            ..HuntConfig::default()
        }
    }

    #[test]
    fn the_flags_say_what_the_watcher_decided_and_the_profile_would_not() {
        let (flags, shaping) = flags_for(&Profile::default(), &watcher(8));
        assert_eq!(flags.threshold, Some(3.0));
        assert_eq!((flags.max_runs, flags.first_only), (None, false));
        assert_eq!(
            shaping,
            Shaping {
                clients: Some(8),
                ..Shaping::default()
            }
        );
        // A profile that already decides as the watcher did needs no flag;
        // one that decides otherwise is overruled by one.
        let mut profile = Profile::default();
        profile.hunt.threshold = Some(3.0);
        profile.hunt.max_runs = Some(12);
        profile.hunt.search = Some(Search::Bisect);
        profile.benchmark.run_length = Some(RunLength::Auto);
        let (flags, shaping) = flags_for(&profile, &watcher(1));
        assert_eq!((flags.threshold, flags.max_runs), (None, Some(20)));
        assert_eq!(shaping.search, Some(Search::Posterior));
        assert_eq!(shaping.run_length, Some(RunLength::Fixed));
    }
}
