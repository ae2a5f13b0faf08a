//! What a command starts once its flags are resolved: a hunt's session,
//! a comparison, a judgement, the why-runs. Each entry point takes a
//! resolved [`Plan`] (or its own few values) and gives back what the
//! command renders; it takes the work dir's lock, the hosts and the lab,
//! and writes the files of the work dir.

pub mod compare;
pub mod hunt;
pub mod judge;
mod outline;
pub mod watch;
pub mod why;

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

/// What a hunt (or a comparison, or a judgement against a hunt)
/// measures, resolved once from the flags and the profile: nothing below
/// decides it again.
#[derive(Debug, Clone)]
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
}

impl Plan {
    /// What the lab is opened with.
    pub fn lab_spec(&self) -> LabSpec {
        LabSpec {
            profile: self.profile.clone(),
            clients: self.config.clients,
            repo_dir: self.repo_dir.clone(),
            dirs: self.work.lab_dirs(),
            checkout: self.work.checkout(),
            private_objects: self.work.private_objects(),
            good: self.good.id.clone(),
            bad: self.bad.id.clone(),
            choices: self.choices.clone(),
            setups: self.setups.clone(),
        }
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
