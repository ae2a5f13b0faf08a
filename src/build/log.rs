//! The build log of one commit, the commands run into it, and what a
//! failed build's output says: whether the commit is broken (a skip) or the
//! machine is (an error that stops the hunt).

use super::BuildError;
use crate::proc::{self, Finished, Stop};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How many error lines a failure reason quotes.
const QUOTED_ERRORS: usize = 3;
/// How many lines of the tail a failure reason quotes when no line says `error:`.
const QUOTED_TAIL: usize = 8;

/// `<work_dir>/logs/build-<commit>-<key>.log`: configure, make and install output.
pub(crate) struct BuildLog {
    path: PathBuf,
    file: File,
    /// When the build must be over; every command gets what is left.
    deadline: Instant,
    /// The build's whole allowance, for messages.
    limit: Duration,
    /// Set when a command was stopped at the deadline.
    timed_out: bool,
    /// Stops the build's commands (not its clean-up) once set: a build
    /// nobody waits for any more.
    cancel: Option<Arc<AtomicBool>>,
}

/// How long taking a patch out again may take.
const CLEAN_UP_LIMIT: Duration = Duration::from_secs(300);

impl BuildLog {
    /// Starts a fresh log (an earlier build of the same commit is
    /// replaced) for a build that may take `limit`.
    pub(crate) fn create(path: &Path, limit: Duration) -> Result<BuildLog, BuildError> {
        let file =
            crate::files::create(path).map_err(BuildError::io("create the build log", path))?;
        Ok(BuildLog {
            path: path.to_path_buf(),
            file,
            deadline: Instant::now() + limit,
            limit,
            timed_out: false,
            cancel: None,
        })
    }

    /// The log of a build whose commands also stop once `cancel` is set
    /// ([`proc::run_command_or`]); its clean-up still runs.
    pub(crate) fn cancelled_by(mut self, cancel: Option<Arc<AtomicBool>>) -> BuildLog {
        self.cancel = cancel;
        self
    }

    /// True once a command ran past the build's deadline: nothing more is
    /// worth trying for this commit.
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a line of our own, marked so it stands out from make's output.
    pub(crate) fn note(&mut self, line: &str) -> Result<(), BuildError> {
        writeln!(self.file, "pgbisect: {line}").map_err(BuildError::io("write", &self.path))
    }

    /// Where the next output will go; pass it to [`BuildLog::text_since`].
    pub(crate) fn position(&mut self) -> Result<u64, BuildError> {
        self.file
            .seek(SeekFrom::End(0))
            .map_err(BuildError::io("seek in", &self.path))
    }

    /// The log text written since `offset` (lossy UTF-8).
    pub(crate) fn text_since(&self, offset: u64) -> Result<String, BuildError> {
        let mut file = File::open(&self.path).map_err(BuildError::io("read", &self.path))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(BuildError::io("seek in", &self.path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(BuildError::io("read", &self.path))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Runs `command` with its output appended to the log, within what is
    /// left of the build's time. `Ok(false)` when it failed or ran past the
    /// deadline; `Err` when it could not start, was interrupted, or its
    /// output shows trouble with the machine rather than with the commit.
    pub(crate) fn run(&mut self, command: &mut Command) -> Result<bool, BuildError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        self.run_until(command, left, Stop::OnFirstSignal)
    }

    /// [`BuildLog::run`] for clean-up that must happen also after a first
    /// signal (taking a patch out), with a deadline of its own.
    pub(crate) fn run_to_end(&mut self, command: &mut Command) -> Result<bool, BuildError> {
        self.run_until(command, CLEAN_UP_LIMIT, Stop::OnSecondSignal)
    }

    fn run_until(
        &mut self,
        command: &mut Command,
        limit: Duration,
        stop: Stop,
    ) -> Result<bool, BuildError> {
        let line = command_line(command);
        self.note(&format!("$ {line}"))?;
        let start = self.position()?;
        let out = self
            .file
            .try_clone()
            .map_err(BuildError::io("reopen", &self.path))?;
        let err = self
            .file
            .try_clone()
            .map_err(BuildError::io("reopen", &self.path))?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        let cancel = self
            .cancel
            .as_deref()
            .filter(|_| stop == Stop::OnFirstSignal);
        let status = match proc::run_command_or(command, limit, stop, cancel) {
            Ok(Finished::Exited(status)) => status,
            Ok(Finished::Interrupted) => return Err(BuildError::Interrupted { command: line }),
            Ok(Finished::TimedOut(_)) => {
                self.timed_out = true;
                self.note(&format!(
                    "error: stopped `{line}`: the build ran past its deadline of {} s \
                     (`timeout` in [build] of the profile gives more)",
                    self.limit.as_secs()
                ))?;
                return Ok(false);
            }
            Err(e) => return Err(spawn_error(command, &line, e)),
        };
        if status.success() {
            return Ok(true);
        }
        if interrupted(&status) {
            return Err(BuildError::Interrupted { command: line });
        }
        let text = self.text_since(start)?;
        match environment_trouble(&text, &line, &self.path) {
            Some(BuildError::MissingTool { tool, .. }) if super::find_on_path(&tool).is_some() => {
                // Installed, yet "missing": the commit's configure turned it
                // down (old version tests misread today's versions). That is
                // the commit's trouble, a skip, not the machine's.
                self.note(&rejected_tool(&tool, super::find_on_path(&tool)))?;
                self.note(&format!("command failed ({status}): {line}"))?;
                Ok(false)
            }
            Some(trouble) => Err(trouble),
            None => {
                self.note(&format!("command failed ({status}): {line}"))?;
                Ok(false)
            }
        }
    }
}

/// A command as a user would type it (arguments with spaces quoted).
pub(crate) fn command_line(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains([' ', '\'', '"', '$']) {
            format!("'{}'", a.replace('\'', "'\\''"))
        } else {
            a.into_owned()
        }
    }));
    let dir = command
        .get_current_dir()
        .map(|d| format!(" (in {})", d.display()))
        .unwrap_or_default();
    format!("{}{dir}", words.join(" "))
}

fn spawn_error(command: &Command, line: &str, e: std::io::Error) -> BuildError {
    let tool = command.get_program().to_string_lossy().into_owned();
    if e.kind() == std::io::ErrorKind::NotFound {
        BuildError::MissingTool {
            tool: tool.clone(),
            command: line.to_string(),
            hint: format!("install `{tool}` (scripts/setup.sh installs the build tools)"),
        }
    } else {
        BuildError::Spawn {
            command: line.to_string(),
            source: e,
        }
    }
}

fn interrupted(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    matches!(
        status.signal(),
        Some(libc::SIGINT | libc::SIGTERM | libc::SIGHUP)
    )
}

/// The log line (quoted by [`failure_reason`]) for a tool that is
/// installed but was not accepted by the commit's build.
fn rejected_tool(tool: &str, found: Option<PathBuf>) -> String {
    let path = found.map_or_else(|| tool.to_string(), |p| p.display().to_string());
    format!(
        "error: {tool} is installed ({path}) but this commit's configure did not accept it \
         (an old version test?); name it in the profile: [build] configure = [\"{}={path}\"]",
        tool.to_uppercase()
    )
}

/// Free bytes under which a failed build is taken for one the disk
/// stopped: its output may not even have reached the log.
const NEARLY_FULL: u64 = 8 << 20;

/// A failed build's output, or the file systems it wrote to (the log's
/// first), that say the disk was full: an error of the machine, not of
/// the commit, so the commit is built again once there is room.
pub(crate) fn disk_full(text: &str, wrote_to: &[&Path]) -> Option<BuildError> {
    let path = wrote_to.first()?.to_path_buf();
    if text.contains("No space left on device") || text.contains("Disk quota exceeded") {
        return Some(BuildError::DiskFull {
            path,
            detail: last_lines(text, QUOTED_TAIL),
        });
    }
    let (at, free) = wrote_to
        .iter()
        .filter_map(|p| Some((p, free_bytes(p)?)))
        .min_by_key(|(_, free)| *free)?;
    (free < NEARLY_FULL).then(|| BuildError::DiskFull {
        path: at.to_path_buf(),
        detail: format!(
            "{free} bytes are free on the file system of {} (the build's output may be \
             missing from its log)",
            at.display()
        ),
    })
}

/// Bytes an unprivileged user may still write on the file system of
/// `path` (or of its nearest existing parent).
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `stat` is written by statvfs only.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Output that means the machine, not the commit, is at fault.
pub(crate) fn environment_trouble(text: &str, command: &str, log: &Path) -> Option<BuildError> {
    if let Some(full) = disk_full(text, &[log]) {
        return Some(full);
    }
    if text.contains("no acceptable C compiler found") {
        return Some(BuildError::MissingTool {
            tool: "a C compiler".into(),
            command: command.to_string(),
            hint: "install gcc (the build-essential package)".into(),
        });
    }
    for tool in ["bison", "flex", "perl"] {
        let missing = format!("'{tool}' is missing on your system");
        let missing_old = format!("`{tool}' is missing on your system");
        let not_found = format!("{tool}: command not found");
        if text.contains(&missing) || text.contains(&missing_old) || text.contains(&not_found) {
            return Some(BuildError::MissingTool {
                tool: tool.into(),
                command: command.to_string(),
                hint: format!("install {tool}: building PostgreSQL from git needs it"),
            });
        }
    }
    None
}

/// Why a build failed, for a report: the first compiler or configure error
/// lines (the first is the cause, later ones are often consequences), else
/// the tail of the output; always naming the log.
pub(crate) fn failure_reason(text: &str, log: &Path) -> String {
    // Paths relative to the build tree (ccache's base directory makes them
    // so) read better without their leading `../`s.
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error:") || l.starts_with("ERROR:"))
        .map(|l| l.trim_start_matches("../"))
        .collect();
    let quoted = if errors.is_empty() {
        last_lines(text, QUOTED_TAIL)
    } else {
        let mut shown: Vec<&str> = Vec::new();
        for line in &errors {
            if !shown.contains(line) && shown.len() < QUOTED_ERRORS {
                shown.push(line);
            }
        }
        let mut distinct = errors.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let more = distinct.len().saturating_sub(shown.len());
        let mut quoted = shown.join("\n");
        if more > 0 {
            let lines = if more == 1 { "line" } else { "lines" };
            quoted.push_str(&format!("\n({more} more error {lines})"));
        }
        quoted
    };
    format!("build failed (log: {}):\n{quoted}", log.display())
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_quotes_first_errors_and_names_the_log() {
        let text = "cc -c a.c\n\
                    a.c:3:1: error: expected ';' before '}' token\n\
                    a.c:9:1: error: unknown type name 'foo'\n\
                    ../../a.c:9:1: error: unknown type name 'foo'\n\
                    make: *** [a.o] Error 1\n\
                    b.c:1:1: error: x\n\
                    b.c:2:1: error: y\n";
        let reason = failure_reason(text, Path::new("/w/logs/build-abc.log"));
        assert!(reason.contains("/w/logs/build-abc.log"), "{reason}");
        assert!(reason.contains("a.c:3:1: error: expected ';'"), "{reason}");
        assert!(reason.contains("b.c:1:1: error: x"), "{reason}");
        assert!(!reason.contains("b.c:2:1"), "{reason}");
        assert!(reason.contains("(1 more error line)"), "{reason}");
    }

    #[test]
    fn reason_falls_back_to_the_tail() {
        let text = (1..=20).map(|i| format!("line {i}\n")).collect::<String>();
        let reason = failure_reason(&text, Path::new("l"));
        assert!(reason.contains("line 20") && reason.contains("line 13"));
        assert!(!reason.contains("line 12\n"), "{reason}");
    }

    #[test]
    fn machine_trouble_is_told_apart() {
        let log = Path::new("l");
        let full = environment_trouble("x.o: No space left on device\n", "make", log);
        assert!(matches!(full, Some(BuildError::DiskFull { .. })));
        let bison = environment_trouble(
            "ERROR: `bison' is missing on your system. It is needed to create",
            "make",
            log,
        );
        assert!(matches!(bison, Some(BuildError::MissingTool { tool, .. }) if tool == "bison"));
        assert!(environment_trouble("a.c:1: error: oops", "make", log).is_none());
        assert!(matches!(
            disk_full("cp: write error: Disk quota exceeded\n", &[log]),
            Some(BuildError::DiskFull { .. })
        ));
        assert!(disk_full("", &[]).is_none());
    }

    #[test]
    fn an_installed_tool_turned_down_is_the_commit_s_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log");
        let mut log = BuildLog::create(&path, Duration::from_secs(60)).unwrap();
        // perl is installed wherever PostgreSQL builds: a build that says it
        // is missing turned it down.
        assert!(super::super::find_on_path("perl").is_some());
        let mut says_missing = Command::new("sh");
        says_missing.args([
            "-c",
            "echo \"ERROR: 'perl' is missing on your system\"; exit 1",
        ]);
        assert!(
            !log.run(&mut says_missing).unwrap(),
            "a failure, not an error"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let reason = failure_reason(&text, &path);
        assert!(reason.contains("error: perl is installed ("), "{reason}");
        assert!(reason.contains("configure = [\"PERL="), "{reason}");
        let line = rejected_tool("flex", Some(PathBuf::from("/usr/bin/flex")));
        assert!(line.contains("[\"FLEX=/usr/bin/flex\"]"), "{line}");
    }

    #[test]
    fn a_build_past_its_deadline_fails_and_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log");
        let mut log = BuildLog::create(&path, Duration::from_millis(300)).unwrap();
        let mut slow = Command::new("sh");
        slow.args(["-c", "echo compiling; sleep 30"]);
        let started = Instant::now();
        assert!(!log.run(&mut slow).unwrap(), "a failure, not an error");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(log.timed_out());
        let text = std::fs::read_to_string(&path).unwrap();
        let reason = failure_reason(&text, &path);
        assert!(reason.contains("ran past its deadline of 0 s"), "{reason}");
        // Clean-up still runs, with a deadline of its own.
        let mut undo = Command::new("sh");
        undo.args(["-c", "echo undone"]);
        assert!(log.run_to_end(&mut undo).unwrap());
        assert!(std::fs::read_to_string(&path).unwrap().contains("undone"));
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let mut c = Command::new("configure");
        c.arg("CC=ccache gcc").arg("--enable-depend");
        assert_eq!(
            command_line(&c),
            "configure 'CC=ccache gcc' --enable-depend"
        );
    }
}
