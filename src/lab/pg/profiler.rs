//! The CPU profiler of instrumented runs: Linux `perf` sampling the
//! server's processes during the measured run, through [`crate::perf`].
//!
//! Each run's folded stacks go into a file of their own beside the run's
//! output (a result file should not hold megabytes of stacks); the run's
//! profile in the "why" result names that file and its sample count, or
//! says why there is none, so the profiles of a side can be added up and
//! compared once all its runs are made.

use super::ServerProfiler;
use crate::perf::{Plan, Recording, Sampler};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Records every instrumented run's server with `sampler`.
pub struct PerfProfiler {
    sampler: Arc<dyn Sampler>,
    /// Where the folded profiles (and perf's scratch files) go.
    dir: PathBuf,
    recording: Option<Recording>,
    /// Runs recorded so far: numbers the files.
    recorded: u64,
}

impl PerfProfiler {
    pub fn new(sampler: Arc<dyn Sampler>, dir: PathBuf) -> PerfProfiler {
        PerfProfiler {
            sampler,
            dir,
            recording: None,
            recorded: 0,
        }
    }
}

impl ServerProfiler for PerfProfiler {
    fn start(&mut self, postmaster_pid: u32, seconds: u32) -> anyhow::Result<()> {
        let plan = Plan::within(Duration::from_secs(u64::from(seconds)));
        let scratch = self.dir.join("scratch");
        self.recording = Some(Recording::start(
            self.sampler.clone(),
            postmaster_pid,
            plan,
            scratch,
        ));
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<Value> {
        let Some(recording) = self.recording.take() else {
            anyhow::bail!("the profiler was asked for a profile it never started");
        };
        Ok(match recording.finish()? {
            Ok(folded) => {
                self.recorded += 1;
                crate::folders::create_dir(&self.dir)?;
                let path = self.dir.join(format!("profile-{}.folded", self.recorded));
                crate::files::write(&path, folded.to_text())?;
                json!({ "folded": path, "samples": folded.samples() })
            }
            Err(why) => json!({ "unavailable": why.to_string() }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::{Request, Unavailable};

    /// Answers every recording with the same `perf script` text or reason.
    struct Canned(Result<String, Unavailable>);

    impl Sampler for Canned {
        fn record(&self, _: &Request) -> anyhow::Result<Result<String, Unavailable>> {
            Ok(self.0.clone())
        }
    }

    const SCRIPT: &str = "postgres  4242 [000] 1.000000: cpu-clock: \n\
        \t    55d0a1 ExecutorStart+0x12 (/pg/bin/postgres)\n\
        \t    55d0b2 PostgresMain+0x40 (/pg/bin/postgres)\n\n";

    #[test]
    fn each_run_gets_a_folded_file_named_in_its_profile() {
        let dir = tempfile::tempdir().unwrap();
        let sampler = Arc::new(Canned(Ok(SCRIPT.into())));
        let mut profiler = PerfProfiler::new(sampler, dir.path().join("profiles"));
        for n in 1..=2 {
            profiler.start(std::process::id(), 2).unwrap();
            let got = profiler.finish().unwrap();
            assert_eq!(got["samples"], 1);
            let path = PathBuf::from(got["folded"].as_str().unwrap());
            assert!(path.ends_with(format!("profile-{n}.folded")), "{path:?}");
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains("ExecutorStart"), "{text}");
        }
    }

    #[test]
    fn a_profile_that_could_not_be_taken_says_why_and_a_stray_finish_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let sampler = Arc::new(Canned(Err(Unavailable::NoSamples)));
        let mut profiler = PerfProfiler::new(sampler, dir.path().to_path_buf());
        assert!(profiler.finish().is_err());
        profiler.start(1, 3).unwrap();
        let got = profiler.finish().unwrap();
        assert!(
            got["unavailable"].as_str().unwrap().contains("no samples"),
            "{got}"
        );
    }
}
