//! `--hosts` and `--slurm`: which machines a hunt (or `compare`, or
//! `judge`) measures on. They are taken by [`crate::lab::held`].

use crate::lab::held::HostsWanted;
use clap::Args;
use serde::{Deserialize, Serialize};

/// Where a hunt measures when not on this machine.
#[derive(Debug, Args, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
#[command(next_help_heading = super::args::LAB_HEADING)]
pub struct HostArgs {
    /// Measure on these hosts over ssh (names your ssh config knows,
    /// comma-separated), one run on each at a time (default: the
    /// profile's [hosts] ssh).
    #[arg(
        long,
        value_name = "HOST,...",
        value_delimiter = ',',
        conflicts_with = "slurm"
    )]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Measure on Slurm nodes: the profile's [hosts] nodes, partition and
    /// constraint, one exclusive job a run.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub slurm: bool,
}

impl HostArgs {
    /// The hosts these flags ask for.
    pub fn wanted(&self) -> HostsWanted {
        HostsWanted {
            hosts: self.hosts.clone(),
            slurm: self.slurm,
        }
    }
}
