//! What pgbench tells besides the throughput, for the why-runs: its
//! per-statement latencies (`-r`) and its per-transaction log (`--log`).
//!
//! Both are read from pgbench's own output, in the forms pgbench has
//! printed them since 9.6 (`-r`'s table gained a failures column in 15).

use crate::core::why::{Percentiles, StatementLatency};
use std::path::{Path, PathBuf};

/// Arguments that make a run print per-statement latencies and, given a
/// `log_prefix`, log every transaction under it
/// (`<prefix>.<pid>[.<thread>]`). pgbench before 10 has no
/// `--log-prefix` ([`refused_log_prefix`]): its runs go without the log,
/// and so without latency percentiles.
pub fn args(log_prefix: Option<&Path>) -> Vec<String> {
    let mut args = vec!["-r".to_string()];
    if let Some(prefix) = log_prefix {
        args.push("--log".to_string());
        args.push(format!("--log-prefix={}", prefix.display()));
    }
    args
}

/// Arguments that make a plain run log a `share` of its transactions
/// under `prefix`, for latency percentiles without the cost of a line per
/// transaction.
pub fn sampled_log_args(prefix: &Path, share: f64) -> Vec<String> {
    vec![
        "--log".to_string(),
        format!("--log-prefix={}", prefix.display()),
        format!("--sampling-rate={share}"),
    ]
}

/// Whether a failed run's words say its pgbench does not know
/// `--log-prefix` (added in PostgreSQL 10): getopt's "unrecognized
/// option '--log-prefix=...'".
pub fn refused_log_prefix(failure: &str) -> bool {
    failure.contains("--log-prefix")
        && (failure.contains("unrecognized option") || failure.contains("invalid option"))
}

/// The per-statement latencies of pgbench's `-r` report, in script order:
///
/// ```text
/// statement latencies in milliseconds and failures:
///          0.002           0  \set aid random(1, 100000 * :scale)
///          0.046           0  SELECT abalance FROM pgbench_accounts ...
/// ```
///
/// (before 15 without the failures column). Several scripts give several
/// tables; their statements follow one another.
pub fn statement_latencies(output: &str) -> Vec<StatementLatency> {
    let mut found = Vec::new();
    let mut in_table = false;
    let mut with_failures = false;
    for line in output.lines() {
        let trimmed = line.trim();
        if trimmed.contains("statement latencies in milliseconds") {
            in_table = true;
            with_failures = trimmed.contains("failures");
            continue;
        }
        if !in_table {
            continue;
        }
        let mut words = trimmed.splitn(2, char::is_whitespace);
        let ms = words.next().and_then(|w| w.parse::<f64>().ok());
        let (Some(ms), Some(rest)) = (ms, words.next()) else {
            in_table = false;
            continue;
        };
        let mut rest = rest.trim_start();
        if with_failures {
            rest = rest
                .split_once(char::is_whitespace)
                .map_or("", |(_, text)| text.trim_start());
        }
        found.push(StatementLatency {
            statement: rest.to_string(),
            ms,
        });
    }
    found
}

/// The files pgbench's `--log` wrote for `prefix`: `<prefix>.<pid>` and
/// one `.<n>` more per extra thread.
pub fn log_files(prefix: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(stem)) = (prefix.parent(), prefix.file_name()) else {
        return Vec::new();
    };
    let stem = format!("{}.", stem.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&stem))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

/// Latency percentiles of the transactions in pgbench's logs: each line
/// is `client_id transaction_no time script_no time_epoch time_us [...]`
/// with `time` the latency in microseconds (`skipped` or `failed` lines
/// are not counted). The files are removed once read: a long run at
/// high throughput logs hundreds of megabytes.
pub fn log_percentiles(files: &[PathBuf]) -> std::io::Result<Option<Percentiles>> {
    let mut micros = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path)?;
        micros.extend(
            text.lines()
                .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok()),
        );
        std::fs::remove_file(path)?;
    }
    Ok(Percentiles::of_micros(micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_of_pgbench_15_with_failures() {
        let out = "\
latency average = 0.041 ms
tps = 24000.1 (without initial connection time)
statement latencies in milliseconds and failures:
         0.002           0  \\set aid random(1, 100000 * :scale)
         0.039           0  SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";
        let s = statement_latencies(out);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].statement, "\\set aid random(1, 100000 * :scale)");
        assert_eq!(s[1].ms, 0.039);
        assert_eq!(
            s[1].statement,
            "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"
        );
    }

    #[test]
    fn statements_of_older_pgbench_and_two_scripts() {
        let out = "\
SQL script 1: <builtin: select only>
 - statement latencies in milliseconds:
         0.003  \\set aid random(1, 100000 * :scale)
         0.120  SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SQL script 2: x.sql
 - statement latencies in milliseconds:
         1.500  SELECT pg_sleep(0.001);
";
        let s: Vec<f64> = statement_latencies(out).iter().map(|s| s.ms).collect();
        assert_eq!(s, vec![0.003, 0.120, 1.5]);
        assert!(statement_latencies("tps = 5\n").is_empty());
    }

    #[test]
    fn log_files_of_every_thread_give_percentiles_and_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let prefix = tmp.path().join("why-00001");
        std::fs::write(
            tmp.path().join("why-00001.4242"),
            "0 0 100 0 1700000000 1\n0 1 300 0 1700000000 2\n",
        )
        .unwrap();
        std::fs::write(
            tmp.path().join("why-00001.4242.1"),
            "1 0 200 0 1700000000 3\n1 1 skipped 0 1700000000 4\n",
        )
        .unwrap();
        std::fs::write(tmp.path().join("why-00002.1"), "0 0 9999999 0 1 1\n").unwrap();
        let files = log_files(&prefix);
        assert_eq!(files.len(), 2);
        let p = log_percentiles(&files).unwrap().unwrap();
        assert_eq!(p.transactions, 3);
        assert_eq!((p.p50_ms, p.p99_ms), (0.2, 0.3));
        assert!(log_files(&prefix).is_empty());
    }

    #[test]
    fn arguments_name_the_prefix() {
        assert_eq!(
            args(Some(Path::new("/w/runs/why-1"))),
            vec!["-r", "--log", "--log-prefix=/w/runs/why-1"]
        );
        assert_eq!(args(None), vec!["-r"]);
    }

    #[test]
    fn a_pgbench_before_10_is_told_by_its_refusal_of_the_prefix() {
        // pgbench 9.6's words, through the run's error.
        let refused = "pgbench failed (exit status: 1); last lines of its output:\n\
                       /x/bin/pgbench: unrecognized option '--log-prefix=/w/why-1'\n\
                       Try \"pgbench --help\" for more information.";
        assert!(refused_log_prefix(refused));
        assert!(!refused_log_prefix(
            "pgbench: unrecognized option '--bogus'"
        ));
        assert!(!refused_log_prefix(
            "connection to server failed; --log-prefix=/w"
        ));
    }
}
