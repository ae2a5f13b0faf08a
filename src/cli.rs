//! Command-line definitions and dispatch (being written).
use std::process::ExitCode;

/// Exit code for an error in the environment or a failed process.
pub const EXIT_RUNTIME_ERROR: u8 = 4;

pub fn run() -> anyhow::Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
