//! Counting with valgrind's cachegrind, on any machine.
//!
//! The postmaster runs under `valgrind --tool=cachegrind --cache-sim=no
//! --trace-children=yes`: every process it forks is counted too, and each
//! writes its counts when it ends, to a file named by its process id. With
//! the cache simulation off, cachegrind counts only the instructions
//! executed in user space (`Ir`), about 15 times slower than the server's
//! own speed: a counted run is made of fixed transaction counts, not of
//! seconds.

use super::{Counter, Launcher};
use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Counts with cachegrind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cachegrind {
    valgrind: PathBuf,
    name: String,
}

/// valgrind could not be run.
#[derive(Debug, thiserror::Error)]
#[error(
    "instruction counts need valgrind's cachegrind, and `{program} --version` failed: {detail}\n\
     hint: install it (`apt-get install valgrind`, or scripts/setup.sh), or measure time with \
     --measure tps"
)]
pub struct Unavailable {
    program: String,
    detail: String,
}

impl Cachegrind {
    /// The valgrind on `PATH`, as it names its version.
    pub fn find() -> Result<Cachegrind, Unavailable> {
        Cachegrind::at(Path::new("valgrind"))
    }

    /// The valgrind at `program`.
    pub fn at(program: &Path) -> Result<Cachegrind, Unavailable> {
        let failed = |detail: String| Unavailable {
            program: program.display().to_string(),
            detail,
        };
        let out = duct::cmd(program.as_os_str(), ["--version"])
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .map_err(|e| failed(e.to_string()))?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !version.starts_with("valgrind") {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(failed(format!("it printed {version:?} {said:?}")));
        }
        Ok(Cachegrind {
            valgrind: program.to_path_buf(),
            name: format!("cachegrind ({version})"),
        })
    }
}

impl Counter for Cachegrind {
    fn name(&self) -> &str {
        &self.name
    }

    fn launcher(
        &self,
        postgres: &Path,
        dir: &Path,
        server_uid: Option<u32>,
    ) -> io::Result<Launcher> {
        let counts = dir.join("counts");
        crate::folders::create_dir_for(&counts, server_uid)?;
        // Counts of an earlier server in this folder are not this one's.
        for entry in std::fs::read_dir(&counts)? {
            let path = entry?.path();
            if pid_of(&path).is_some() {
                std::fs::remove_file(&path)?;
            }
        }
        if let Some(uid) = server_uid {
            std::os::unix::fs::chown(&counts, Some(uid), None)?;
        }
        let program = dir.join("postgres-counted");
        let script = format!(
            "#!/bin/sh\n# Starts the server counted by cachegrind (pgbisect --measure instructions).\n\
             exec {} --tool=cachegrind --cache-sim=no --trace-children=yes -q \
             --cachegrind-out-file={} {} \"$@\"\n",
            crate::proc::shell_quote(&self.valgrind.display().to_string()),
            crate::proc::shell_quote(&counts.join("cg.%p").display().to_string()),
            crate::proc::shell_quote(&postgres.display().to_string()),
        );
        crate::files::write(&program, script)?;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))?;
        Ok(Launcher { program, counts })
    }

    fn functions(&self, launcher: &Launcher, pids: &[u32]) -> io::Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for pid in pids {
            let path = launcher.counts.join(format!("cg.{pid}"));
            add_functions(&std::fs::read_to_string(&path)?, &mut out);
        }
        Ok(out)
    }

    fn ended(&self, launcher: &Launcher) -> io::Result<BTreeMap<u32, u64>> {
        let mut out = BTreeMap::new();
        for entry in std::fs::read_dir(&launcher.counts)? {
            let path = entry?.path();
            let Some(pid) = pid_of(&path) else { continue };
            // A process still ending has not written its summary yet.
            if let Some(n) = summary(&std::fs::read_to_string(&path)?) {
                out.insert(pid, n);
            }
        }
        Ok(out)
    }
}

/// Adds the instructions of each function of a cachegrind output file
/// (`fn=NAME`, then `LINE COUNT` lines) to `out`.
fn add_functions(text: &str, out: &mut BTreeMap<String, u64>) {
    let mut current: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name);
        } else if let (Some(name), Some(first)) = (current, line.bytes().next())
            && first.is_ascii_digit()
        {
            let count = line
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse::<u64>().ok());
            if let Some(n) = count {
                *out.entry(name.to_string()).or_default() += n;
            }
        }
    }
}

/// The process id a counts file is named for (`cg.<pid>`).
fn pid_of(path: &Path) -> Option<u32> {
    path.file_name()?
        .to_str()?
        .strip_prefix("cg.")?
        .parse()
        .ok()
}

/// The instructions a cachegrind output file counts: its `summary:` line,
/// when its first event is `Ir`.
pub fn summary(text: &str) -> Option<u64> {
    let events = text.lines().find_map(|l| l.strip_prefix("events:"))?;
    if events.split_whitespace().next() != Some("Ir") {
        return None;
    }
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("summary:"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "desc: I1 cache:         32768 B, 64 B, 8-way associative\n\
        cmd: /usr/lib/postgresql/15/bin/postgres -D /var/tmp/x/data -p 5499\n\
        events: Ir\n\
        fl=???\n\
        fn=0x0000000000001080\n\
        0 4\n\
        summary: 51170308\n";

    #[test]
    fn each_function_sums_its_lines() {
        let text =
            "events: Ir\nfl=a.c\nfn=f\n1 4\n2 6\nfl=b.c\nfn=g\n7 1\nfn=f\n9 10\nsummary: 21\n";
        let mut got = BTreeMap::new();
        add_functions(text, &mut got);
        add_functions("fn=g\n3 2\n", &mut got);
        assert_eq!(got, BTreeMap::from([("f".into(), 20), ("g".into(), 3)]));
    }

    #[test]
    fn the_summary_is_the_count_of_instructions() {
        assert_eq!(summary(OUTPUT), Some(51_170_308));
    }

    #[test]
    fn a_file_still_being_written_counts_nothing() {
        let cut = OUTPUT.split("summary").next().unwrap();
        assert_eq!(summary(cut), None);
        assert_eq!(summary(""), None);
    }

    #[test]
    fn counts_of_another_event_are_not_instructions() {
        let other = OUTPUT.replace("events: Ir", "events: Dr");
        assert_eq!(summary(&other), None);
    }

    #[test]
    fn files_are_named_for_their_process() {
        assert_eq!(pid_of(Path::new("/x/cg.10201")), Some(10201));
        assert_eq!(pid_of(Path::new("/x/cg.out")), None);
        assert_eq!(pid_of(Path::new("/x/other")), None);
    }

    #[test]
    fn without_valgrind_the_error_says_what_to_install() {
        let err = Cachegrind::at(Path::new("/nonexistent/valgrind")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("apt-get install valgrind"), "{text}");
        assert!(text.contains("--measure tps"), "{text}");
    }

    #[test]
    fn the_launcher_runs_postgres_under_cachegrind_and_clears_old_counts() {
        let cg = match Cachegrind::find() {
            Ok(cg) => cg,
            Err(e) if std::env::var_os("CI").is_none() => {
                crate::testing::skipped(&format!("needs valgrind: {e}"));
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let dir = tempfile::tempdir().unwrap();
        let counts = dir.path().join("counts");
        std::fs::create_dir(&counts).unwrap();
        std::fs::write(counts.join("cg.1"), OUTPUT).unwrap();
        let l = cg
            .launcher(Path::new("/usr/bin/pg stuff"), dir.path(), None)
            .unwrap();
        assert!(
            cg.name().starts_with("cachegrind (valgrind-"),
            "{}",
            cg.name()
        );
        assert_eq!(cg.ended(&l).unwrap(), BTreeMap::new());
        let script = std::fs::read_to_string(&l.program).unwrap();
        assert!(script.contains("--tool=cachegrind --cache-sim=no --trace-children=yes"));
        assert!(script.contains("'/usr/bin/pg stuff' \"$@\""), "{script}");
        std::fs::write(counts.join("cg.7"), OUTPUT).unwrap();
        assert_eq!(cg.ended(&l).unwrap(), BTreeMap::from([(7, 51_170_308)]));
    }
}
