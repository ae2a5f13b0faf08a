//! Checks of a fresh install before it is trusted: its server says its
//! version, and its psql gets as far as trying to connect. An old tree
//! built with today's tool chain can install binaries that crash at
//! start; such an install is a failed build, not runs that fail one after
//! the other.

use std::path::Path;
use std::time::Duration;

/// What `bin/postgres --version` says, run from the install's final place.
pub(super) fn postgres_version(prefix: &Path) -> Result<String, String> {
    let postgres = prefix.join("bin/postgres");
    let output = check_output(duct::cmd!(&postgres, "--version"))
        .map_err(|e| format!("cannot run {} --version: {e}", postgres.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() && text.contains("PostgreSQL") {
        Ok(text)
    } else {
        Err(format!(
            "the installed server does not run: {} --version gave {}: {}{}",
            postgres.display(),
            output.status,
            text,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// psql, which sets up every benchmark's data, gets as far as trying to
/// connect: an old tree built with a new compiler can crash before that
/// (see the `fcommon` compatibility step), and such an install is a failed
/// build, not runs that fail one after the other.
pub(super) fn psql_starts(prefix: &Path) -> Result<(), String> {
    use std::os::unix::process::ExitStatusExt;
    let psql = prefix.join("bin/psql");
    let nowhere = std::env::temp_dir().join("pgbisect-no-server-here");
    let mut args: Vec<std::ffi::OsString> = [
        "-X", "-w", "-p", "1", "-d", "postgres", "-c", "SELECT 1", "-h",
    ]
    .map(std::ffi::OsString::from)
    .to_vec();
    args.push(nowhere.into_os_string());
    let output = check_output(duct::cmd(&psql, args))
        .map_err(|e| format!("cannot run {}: {e}", psql.display()))?;
    match output.status.signal() {
        None => Ok(()),
        Some(signal) => Err(format!(
            "the installed psql crashes before connecting (signal {signal}): {} -c 'SELECT 1' \
             died; the tree may need a compiler flag of its day",
            psql.display()
        )),
    }
}

/// How long a check of an install (`postgres --version`, psql starting)
/// may take.
const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// Runs a check of an install, its output captured, within [`CHECK_LIMIT`].
fn check_output(expr: duct::Expression) -> std::io::Result<std::process::Output> {
    let expr = expr.stdout_capture().stderr_capture();
    match crate::proc::run(expr, CHECK_LIMIT)? {
        crate::proc::Ended::Exited(output) => Ok(output),
        crate::proc::Ended::TimedOut(limit) => Err(std::io::Error::other(format!(
            "it did not finish within {} s",
            limit.as_secs()
        ))),
        crate::proc::Ended::Interrupted => Err(std::io::Error::other("interrupted")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_psql_that_crashes_at_start_is_told_apart_from_one_that_cannot_connect() {
        let tmp = tempfile::tempdir().unwrap();
        let psql = tmp.path().join("bin/psql");
        std::fs::create_dir_all(psql.parent().unwrap()).unwrap();
        crate::testing::write_script(&psql, "#!/bin/sh\necho 'could not connect' >&2\nexit 2\n");
        assert_eq!(psql_starts(tmp.path()), Ok(()));
        crate::testing::write_script(&psql, "#!/bin/sh\nkill -SEGV $$\n");
        let err = psql_starts(tmp.path()).unwrap_err();
        assert!(
            err.contains("crashes before connecting (signal 11)"),
            "{err}"
        );
    }
}
