//! What the user is told when a command cannot go on, and how it exits.
//!
//! A mistake in what the user asked for ([`UsageError`]) exits with
//! [`EXIT_USAGE`] and says what to do instead; trouble in the environment
//! exits with [`EXIT_RUNTIME_ERROR`]. The codes are part of the interface:
//! cron jobs and scripts read them.

/// Exit code: a hunt found at least one culprit (or a command succeeded).
pub const EXIT_CULPRIT_FOUND: u8 = 0;
/// Exit code: the bad commit is not slower than the good one by the threshold.
pub const EXIT_NO_REGRESSION: u8 = 1;
/// Exit code: bad flags or arguments (also clap's own usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the measurements did not support a verdict.
pub const EXIT_INCONCLUSIVE: u8 = 3;
/// Exit code: an error in the environment or a failed process.
pub const EXIT_RUNTIME_ERROR: u8 = 4;

/// A mistake in what the user asked for: exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
