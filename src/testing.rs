//! Helpers for the unit tests.

use std::path::Path;

/// Writes an executable script at `path`.
///
/// The file is written by a child process, never through a descriptor of
/// this one: a test thread that forks while another holds a script open
/// for writing passes the descriptor on, and executing the script then
/// fails with "Text file busy" until that child has exec'd.
pub fn write_script(path: &Path, text: &str) {
    let staged = path.with_extension("staged");
    std::fs::write(&staged, text).unwrap();
    let status = std::process::Command::new("install")
        .arg("-m")
        .arg("755")
        .arg(&staged)
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "install {} failed", path.display());
}

/// `name = value` pairs as the owned settings the server modules take.
pub fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// A journal event of one measured run.
pub fn run_event(n: u64, commit: &str, clients: u32, tps: f64) -> crate::journal::Event {
    crate::journal::Event::Run {
        run: n,
        commit: commit.into(),
        clients,
        seconds: None,
        outcome: crate::model::RunOutcome::tps_only(tps),
        host: None,
    }
}

/// Says that the running test checked nothing here, and why: a
/// `skipped: <test>: <why>` line on stderr, and the same line appended to
/// the file `$PGBISECT_TEST_SKIPS` names, where `scripts/test.sh` counts
/// them (the test runner keeps a passing test's stderr to itself).
pub fn skipped(why: &str) {
    let thread = std::thread::current();
    let line = format!("skipped: {}: {why}\n", thread.name().unwrap_or("test"));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    if let Some(path) = std::env::var_os("PGBISECT_TEST_SKIPS") {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path);
        if let Ok(mut file) = file {
            let _ = std::io::Write::write_all(&mut file, line.as_bytes());
        }
    }
}

/// A counted run's outcome: `per_transaction` instructions a transaction
/// (by cachegrind, over a short and a long window), spent in `functions`,
/// at a tps slowed by the counter.
pub fn counted_outcome(
    per_transaction: f64,
    functions: Vec<crate::core::counts::FunctionCount>,
) -> crate::model::RunOutcome {
    use crate::core::counts::{Counted, Window};
    use crate::model::{Measurement, RunOutcome};
    let window = |transactions, instructions| Window {
        transactions,
        instructions,
        processes: 1,
    };
    let RunOutcome::Measured(timed) = RunOutcome::tps_only(3.0) else {
        unreachable!("tps_only measures")
    };
    RunOutcome::Measured(Measurement {
        instructions: Some(Counted {
            per_transaction,
            counter: "cachegrind (valgrind-3.19.0)".into(),
            short: window(200, 8_000_000),
            long: window(1200, 48_000_000),
            functions,
        }),
        ..timed
    })
}
