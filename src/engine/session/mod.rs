//! What a command starts once its flags are resolved: a hunt's session,
//! a comparison, a judgement, the why-runs. Each entry point takes a
//! resolved [`Plan`] (or its own few values) and gives back what the
//! command renders; it takes the work dir's lock, the hosts and the lab,
//! and writes the files of the work dir.

pub mod compare;
pub mod hunt;
pub mod judge;
mod outline;
pub mod rerun;
pub mod resolved;
mod runner;
pub mod watch;
pub mod watch_hunts;
pub mod watch_site;
pub mod watch_triage;
pub mod why;

use crate::core::counts::Measure;
use crate::engine::hunt::HuntConfig;
use crate::engine::release_check::Sides;
use crate::lab::open::{LabChoices, LabSpec};
use crate::lab::pg::setup::Setups;
use crate::model::Commit;
use crate::placement::Policy;
use crate::profile::Profile;
use crate::report::findings::EndpointResolution;
use crate::workspace::WorkDir;
use std::path::PathBuf;

/// What a hunt (or a judgement against a hunt) measures, resolved once
/// from the flags and the profile: nothing below decides it again. A
/// hunt saves it (see [`resolved::HuntPlan`]) and `resume` reads it back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub profile: Profile,
    pub config: HuntConfig,
    pub good: Commit,
    pub bad: Commit,
    /// How `--good` and `--bad` became `good` and `bad`.
    pub resolution: Vec<EndpointResolution>,
    /// The release given as `--good`, when `good` is where it left the
    /// line of `bad`.
    pub release: Option<Sides>,
    pub repo_dir: PathBuf,
    pub work: WorkDir,
    /// The lab flags.
    pub choices: LabChoices,
    /// The server settings, `max_connections` and placement at each
    /// client count the plan runs at (see [`decide_setups`]).
    pub setups: Setups,
    /// `--measure auto`: the counter the endpoints are counted by while
    /// the measure is chosen ([`crate::engine::choose_measure`]); the
    /// measure in `config` is tps until then, and what was chosen after.
    /// `None`: the measure was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_counter: Option<String>,
}

impl Plan {
    /// This plan deciding on `measure`, counted by `counter` when it
    /// counts (the plan key tells the two apart).
    pub fn deciding_on(&self, measure: Measure, counter: Option<&str>) -> Plan {
        let mut plan = self.clone();
        plan.config.measure = measure;
        plan.choices.measure = measure;
        plan.choices.counter = counter.filter(|_| !measure.is_tps()).map(str::to_string);
        plan
    }

    /// What the lab is opened with.
    pub fn lab_spec(&self) -> LabSpec {
        lab_spec(
            (&self.profile, self.config.clients, &self.setups),
            (&self.repo_dir, &self.work),
            (&self.good, &self.bad),
            &self.choices,
        )
    }
}

#[cfg(test)]
impl Plan {
    /// A plan of `config` with `profile` between two made-up commits, its
    /// files under `dir`.
    pub fn for_tests(profile: Profile, config: HuntConfig, dir: &std::path::Path) -> Plan {
        Plan {
            setups: decide_setups(&profile, &[config.clients]),
            profile,
            config,
            good: Commit::bare("a".repeat(40)),
            bad: Commit::bare("b".repeat(40)),
            resolution: vec![],
            release: None,
            repo_dir: dir.to_path_buf(),
            work: WorkDir::at(dir.join("w")),
            choices: LabChoices::default(),
            auto_counter: None,
        }
    }
}

/// What a lab measuring `clients` (the first of them) between `good` and
/// `bad` is opened with, its files in `work`.
pub fn lab_spec(
    (profile, clients, setups): (&Profile, u32, &Setups),
    (repo_dir, work): (&std::path::Path, &WorkDir),
    (good, bad): (&Commit, &Commit),
    choices: &LabChoices,
) -> LabSpec {
    LabSpec {
        profile: profile.clone(),
        clients,
        repo_dir: repo_dir.to_path_buf(),
        dirs: work.lab_dirs(),
        checkout: work.checkout(),
        private_objects: work.private_objects(),
        good: good.id.clone(),
        bad: bad.id.clone(),
        choices: choices.clone(),
        setups: setups.clone(),
    }
}

/// The one place a plan's server settings, `max_connections` and
/// placement are decided: at each of `clients`, from `profile` on this
/// machine.
pub fn decide_setups(profile: &Profile, clients: &[u32]) -> Setups {
    let policy = Policy::current(&profile.placement);
    Setups::decide(&profile.server.settings_strings(), &policy, clients)
}

/// The client counts a hunt runs at: its own, and its why-runs' sweep.
pub fn hunt_clients(profile: &Profile, clients: u32) -> Vec<u32> {
    let mut all = vec![clients];
    all.extend(why::sweep_of(profile, clients));
    all
}
