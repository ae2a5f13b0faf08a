//! Sampling a running server's wait events, for the why-runs.
//!
//! `pg_stat_activity` tells what each backend waits on at this instant
//! (`wait_event_type`, `wait_event`, since 9.6). One `psql` repeats the
//! query with `\watch` every tenth of a second while pgbench runs, each
//! time in a transaction of its own (a long transaction would hold back
//! vacuum and change what a write workload measures); the counts of
//! `Type:Event` over all samples say where the client backends spent
//! their time. A backend at work without a wait event counts as `CPU`.
//! psql is stopped with SIGINT, which ends `\watch` and lets it flush
//! its output and exit.

use super::{RunningServer, ServerError, registry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often `pg_stat_activity` is read.
pub const SAMPLE_INTERVAL: &str = "0.1";

/// The first version with wait events in `pg_stat_activity`.
const FIRST_WITH_WAIT_EVENTS: u32 = 90600;
/// The first version with `backend_type` (background processes listed).
const FIRST_WITH_BACKEND_TYPE: u32 = 100000;

/// A running sampler; [`WaitSampler::finish`] stops it and counts.
pub struct WaitSampler {
    handle: duct::Handle,
    out: PathBuf,
}

/// Why a server cannot be sampled, or the sampler started.
pub enum Sampling {
    Started(Box<WaitSampler>),
    Unavailable(String),
}

/// One sample row per client backend: `Type:Event`, `CPU`, or the state.
fn query(version: u32) -> String {
    let client = if version >= FIRST_WITH_BACKEND_TYPE {
        " AND backend_type = 'client backend'"
    } else {
        ""
    };
    format!(
        "SELECT CASE WHEN wait_event IS NOT NULL THEN wait_event_type || ':' || wait_event \
         WHEN state = 'active' THEN 'CPU' ELSE coalesce(state, 'unknown') END \
         FROM pg_stat_activity WHERE pid <> pg_backend_pid() \
         AND datname = current_database(){client} \\watch {SAMPLE_INTERVAL}\n"
    )
}

impl RunningServer {
    /// Starts sampling the wait events of this server's client backends
    /// into `out`; a server before 9.6 has none to sample.
    pub fn sample_wait_events(&self, out: &Path) -> Result<Sampling, ServerError> {
        let version: u32 = self
            .psql("SHOW server_version_num")?
            .trim()
            .parse()
            .unwrap_or(0);
        if version < FIRST_WITH_WAIT_EVENTS {
            return Ok(Sampling::Unavailable(format!(
                "servers before 9.6 have no wait events (this one is {})",
                if version == 0 {
                    "of an unknown version".to_string()
                } else {
                    format!("{}.{}", version / 10000, (version / 100) % 100)
                }
            )));
        }
        let mut args: Vec<String> = ["-X", "-A", "-t", "-q"].map(String::from).to_vec();
        args.extend(self.conn("postgres").host_args());
        args.extend(["-d".to_string(), "postgres".to_string()]);
        let handle = self
            .run_as()
            .command(&self.server.bin.join("psql"), &args)
            .stdin_bytes(query(version))
            // Inner first: stderr joins stdout, and both go to `out`.
            .stderr_to_stdout()
            .stdout_path(out)
            .unchecked()
            .start()
            .map_err(|e| ServerError::io("cannot start psql to sample wait events", e))?;
        Ok(Sampling::Started(Box::new(WaitSampler {
            handle,
            out: out.to_path_buf(),
        })))
    }
}

impl WaitSampler {
    /// Stops the sampler and counts its samples by event.
    pub fn finish(self) -> Result<BTreeMap<String, u64>, ServerError> {
        for pid in self.handle.pids() {
            registry::send(pid, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.handle.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) | Err(_) => {
                    let _ = self.handle.kill();
                    break;
                }
            }
        }
        let text = std::fs::read_to_string(&self.out)
            .map_err(|e| ServerError::io(format!("cannot read {}", self.out.display()), e))?;
        Ok(count(&text))
    }
}

/// Counts sample rows; psql's own messages (a title, an error) are not
/// samples.
pub fn count(text: &str) -> BTreeMap<String, u64> {
    let is_sample = |line: &str| {
        let event = line.split_once(':').is_some_and(|(t, e)| {
            !e.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric()) && !e.contains(' ')
        });
        line == "CPU" || line.starts_with("idle") || (event && !line.starts_with("psql"))
    };
    let mut counts = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| is_sample(l)) {
        *counts.entry(line.to_string()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_samples_not_messages() {
        let text = "CPU\nClient:ClientRead\n\nCPU\nLWLock:WALWrite\nidle in transaction\n\
                    psql:<stdin>:1: FATAL:  terminating connection\nTue Dec  1 (every 0.1s)\n";
        let c = count(text);
        assert_eq!(c.get("CPU"), Some(&2));
        assert_eq!(c.get("Client:ClientRead"), Some(&1));
        assert_eq!(c.get("LWLock:WALWrite"), Some(&1));
        assert_eq!(c.get("idle in transaction"), Some(&1));
        assert_eq!(c.len(), 4, "{c:?}");
    }

    #[test]
    fn the_query_lists_client_backends_where_it_can() {
        assert!(query(150004).contains("backend_type = 'client backend'"));
        assert!(!query(90624).contains("backend_type"));
        assert!(query(90624).ends_with("\\watch 0.1\n"));
    }
}
