//! `pgbisect profiles`: the bundled workload profiles and what each is for.

use crate::profile::Profile;
use std::process::ExitCode;

pub(super) fn command() -> anyhow::Result<ExitCode> {
    for (name, _) in crate::profile::BUNDLED {
        let profile = Profile::load(name)?;
        println!("{name:<20} {}", profile.description);
    }
    Ok(ExitCode::SUCCESS)
}
