//! What settings a server build knows.
//!
//! A hunt spans years of PostgreSQL, and settings come and go between
//! versions; a server given a setting it does not know refuses to start.
//! Reading the names a build knows from `postgres --describe-config`
//! lets each setting be given in the form that server takes, and turns a
//! name no version knows into an error that names the setting and the
//! version.

use super::settings::{Applied, SettingError};
use super::{Invocation, RunAs, ServerError};
use std::collections::BTreeSet;
use std::path::Path;

/// The names (lower case) of the settings `BIN/postgres` knows.
pub fn describe_config(bin: &Path, run_as: &RunAs) -> Result<BTreeSet<String>, ServerError> {
    let describe = Invocation::new(bin.join("postgres"), ["--describe-config"]);
    let output = describe.output(run_as)?;
    if !output.status.success() {
        return Err(ServerError::Command {
            command: describe.display(),
            status: output.status.to_string(),
            tail: crate::bench::tail_lines(&super::combined_output(&output), super::LOG_TAIL_LINES),
        });
    }
    Ok(parse_describe_config(&String::from_utf8_lossy(
        &output.stdout,
    )))
}

/// Setting names from `--describe-config` output: the first tab-separated
/// field of each line.
pub fn parse_describe_config(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.split('\t').next())
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// The version `BIN/postgres --version` reports, e.g. `15.18`.
pub fn server_version(bin: &Path, run_as: &RunAs) -> Result<String, ServerError> {
    let text = Invocation::new(bin.join("postgres"), ["--version"]).run(run_as)?;
    Ok(parse_version(&text))
}

/// `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)` -> `15.18`.
fn parse_version(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.split_once("(PostgreSQL)") {
        Some((_, rest)) => rest.split_whitespace().next().unwrap_or(rest).to_string(),
        None => line.to_string(),
    }
}

/// The profile's `settings` as `BIN/postgres` takes them: names it does
/// not know are given under their other name of its version (with the
/// value converted) or left out, with notes (see
/// [`super::settings::for_server`]). A name no version knows is an
/// [`ServerError::UnknownSetting`] naming this server's version.
pub fn apply_settings(
    bin: &Path,
    run_as: &RunAs,
    settings: &[(String, String)],
) -> Result<Applied, ServerError> {
    if settings.iter().all(|(name, _)| name.contains('.')) {
        return Ok(Applied {
            settings: settings.to_vec(),
            notes: Vec::new(),
        });
    }
    let known = describe_config(bin, run_as)?;
    let version = server_version(bin, run_as).unwrap_or_else(|_| bin.display().to_string());
    super::settings::for_server(settings, &known, &version).map_err(|err| match err {
        SettingError::Unknown { name, .. } => ServerError::UnknownSetting { name, version },
        other => ServerError::Setting(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_first_field_in_lower_case() {
        let text = "archive_command\tsighup\tWrite-Ahead Log / Archiving\tSTRING\t\t\t\tSets...\n\
                    DateStyle\tuser\tClient Connection Defaults\tSTRING\t\t\t\tSets...\n";
        let names = parse_describe_config(text);
        assert!(names.contains("archive_command") && names.contains("datestyle"));
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn versions_from_version_lines() {
        assert_eq!(
            parse_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n"),
            "15.18"
        );
        assert_eq!(parse_version("postgres (PostgreSQL) 9.6rc1\n"), "9.6rc1");
        assert_eq!(parse_version("odd"), "odd");
    }
}
