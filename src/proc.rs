//! Waiting for a child process with a deadline, and stopping it whole;
//! what one and two signals do.
//!
//! An unattended hunt must not hang on a build, a benchmark or a
//! notification command that never ends, and Ctrl-C or SIGTERM must stop
//! it within seconds whatever it waits for. Every command pgbisect starts
//! runs here: in a process group of its own (so `sh -c 'make ...'` and
//! everything it starts can be stopped together, and a Ctrl-C in the
//! terminal reaches pgbisect alone, which then stops the rest in order),
//! polled rather than waited on, and on its deadline or on the interrupt
//! its whole group gets SIGTERM, then SIGKILL after a grace period.
//!
//! The first SIGINT, SIGTERM or SIGHUP sets the interrupt flag: the work in
//! flight is stopped, servers are shut down, the lock is released, and the
//! command ends with what the journal holds. Clean-up itself (stopping a
//! server, taking a patch out again, telling the user) runs with
//! [`Stop::OnSecondSignal`], so the first signal does not cut it short. A
//! second signal hurries: every group still running gets SIGKILL at once,
//! and when the clean-up has not ended a few seconds later, the process
//! ends by itself, after stopping what it started and removing its lock.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a stopped group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(50);

/// How long clean-up may go on after a second signal before the process
/// ends by itself.
const HURRY: Duration = Duration::from_secs(5);

/// The exit code of a process ended by a second signal (128 + SIGINT, as
/// shells report it).
pub const EXIT_FORCED: i32 = 130;

/// The flag the first signal sets (see [`install_signal_handlers`]): every
/// wait with [`Stop::OnFirstSignal`] watches it.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

/// The flag a second signal sets: clean-up stops waiting too.
pub fn hurry_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

/// The hunt was asked to stop (Ctrl-C, SIGTERM) while a command ran.
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted; everything measured so far is in the journal: rerun the same command to resume"
)]
pub struct Interrupted;

/// `Err(Interrupted)` once the first signal came: for loops over runs.
pub fn check_interrupt() -> Result<(), Interrupted> {
    if interrupt_flag().load(Ordering::SeqCst) {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// Which signal stops a command before its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The first: the work of a hunt (builds, runs, data templates).
    OnFirstSignal,
    /// Only a second: clean-up that must still happen after the first
    /// (stopping a server, taking a patch out, telling the user).
    OnSecondSignal,
}

impl Stop {
    fn flag(self) -> Arc<AtomicBool> {
        match self {
            Stop::OnFirstSignal => interrupt_flag(),
            Stop::OnSecondSignal => hurry_flag(),
        }
    }
}

/// How a command ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself; its output (and status) as captured.
    Exited(Output),
    /// It ran past its deadline and was stopped.
    TimedOut(Duration),
    /// pgbisect was asked to stop, and the command with it.
    Interrupted,
}

/// How a [`std::process::Command`] run by [`run_command`] ended.
#[derive(Debug)]
pub enum Finished {
    /// It exited by itself, with this status.
    Exited(ExitStatus),
    /// It ran past its deadline and was stopped.
    TimedOut(Duration),
    /// pgbisect was asked to stop, and the command with it.
    Interrupted,
}

/// Runs `expr` (its output captured as the caller set up) in a process
/// group of its own, for at most `limit`, stopped by the first signal.
pub fn run(expr: duct::Expression, limit: Duration) -> io::Result<Ended> {
    run_until(expr, limit, Stop::OnFirstSignal)
}

/// [`run`] stopped only by a second signal: for what must still happen
/// after the first, such as telling the user that the hunt was stopped.
pub fn run_to_deadline(expr: duct::Expression, limit: Duration) -> io::Result<Ended> {
    run_until(expr, limit, Stop::OnSecondSignal)
}

/// [`run`], stopped early by the signal `stop` names. Nothing is started
/// once that signal came.
pub fn run_until(expr: duct::Expression, limit: Duration, stop: Stop) -> io::Result<Ended> {
    run_watching(expr, limit, &stop.flag())
}

fn run_watching(expr: duct::Expression, limit: Duration, flag: &AtomicBool) -> io::Result<Ended> {
    if flag.load(Ordering::SeqCst) {
        return Ok(Ended::Interrupted);
    }
    let mut handle = expr
        .before_spawn(|cmd| {
            cmd.process_group(0);
            Ok(())
        })
        .unchecked()
        .start()?;
    let pids = handle.pids();
    let stopped = || flag.load(Ordering::SeqCst);
    Ok(match supervise(&mut handle, pids, limit, &stopped)? {
        Outcome::Exited => Ended::Exited(handle.wait()?.clone()),
        Outcome::TimedOut => Ended::TimedOut(limit),
        Outcome::Interrupted => Ended::Interrupted,
    })
}

/// Runs `command` (its input and output as the caller set them) like
/// [`run_until`]: its own process group, at most `limit`, stopped by the
/// signal `stop` names.
pub fn run_command(
    command: &mut std::process::Command,
    limit: Duration,
    stop: Stop,
) -> io::Result<Finished> {
    run_command_or(command, limit, stop, None)
}

/// [`run_command`], stopped as well once `cancel` is set: by whoever
/// started the work it is part of and no longer wants it (a build made
/// ahead for a hunt that ended). It ends as an interrupted command does.
pub fn run_command_or(
    command: &mut std::process::Command,
    limit: Duration,
    stop: Stop,
    cancel: Option<&AtomicBool>,
) -> io::Result<Finished> {
    let flag = stop.flag();
    let stopped =
        || flag.load(Ordering::SeqCst) || cancel.is_some_and(|c| c.load(Ordering::SeqCst));
    if stopped() {
        return Ok(Finished::Interrupted);
    }
    let mut child = command.process_group(0).spawn()?;
    let pids = vec![child.id()];
    Ok(match supervise(&mut child, pids, limit, &stopped)? {
        // The status try_wait saw, kept by the child.
        Outcome::Exited => Finished::Exited(child.wait()?),
        Outcome::TimedOut => Finished::TimedOut(limit),
        Outcome::Interrupted => Finished::Interrupted,
    })
}

/// A started command, as [`supervise`] sees it.
trait Running {
    /// True once it exited (and was reaped).
    fn done(&mut self) -> io::Result<bool>;
    /// Waits for it after it was stopped.
    fn reap(&mut self);
}

impl Running for duct::Handle {
    fn done(&mut self) -> io::Result<bool> {
        Ok(self.try_wait()?.is_some())
    }

    fn reap(&mut self) {
        self.wait().ok();
    }
}

impl Running for std::process::Child {
    fn done(&mut self) -> io::Result<bool> {
        Ok(self.try_wait()?.is_some())
    }

    fn reap(&mut self) {
        self.wait().ok();
    }
}

/// Watches `child` (whose processes are `pids`, each leading its group)
/// until it exits, `limit` passes or `stopped` says so; a stopped child is
/// reaped, as is one whose watching failed (after SIGKILL).
fn supervise(
    child: &mut dyn Running,
    pids: Vec<u32>,
    limit: Duration,
    stopped: &dyn Fn() -> bool,
) -> io::Result<Outcome> {
    let watched = Watched::new(pids);
    let waited = watched.wait(limit, stopped, || child.done());
    match &waited {
        Ok(Outcome::Exited) => {}
        Ok(_) => child.reap(),
        Err(_) => {
            watched.kill(libc::SIGKILL);
            child.reap();
        }
    }
    waited
}

enum Outcome {
    Exited,
    TimedOut,
    Interrupted,
}

/// The process groups of a running command, known to the signal handler
/// while they run (a second signal kills them at once).
struct Watched {
    groups: Vec<libc::pid_t>,
}

impl Watched {
    fn new(pids: Vec<u32>) -> Watched {
        let groups: Vec<libc::pid_t> = pids
            .into_iter()
            .filter_map(|p| libc::pid_t::try_from(p).ok())
            .filter(|p| *p > 0)
            .collect();
        if let Ok(mut live) = live_groups().lock() {
            live.extend(&groups);
        }
        Watched { groups }
    }

    /// Polls `done` until the command ends, its deadline passes or
    /// `stopped` says so; in the last two cases its groups get SIGTERM, then SIGKILL
    /// after [`GRACE`] (at once after a second signal).
    fn wait(
        &self,
        limit: Duration,
        stopped: &dyn Fn() -> bool,
        mut done: impl FnMut() -> io::Result<bool>,
    ) -> io::Result<Outcome> {
        let started = Instant::now();
        loop {
            if done()? {
                return Ok(Outcome::Exited);
            }
            let interrupted = stopped();
            if interrupted || started.elapsed() >= limit {
                self.kill(libc::SIGTERM);
                let deadline = Instant::now() + GRACE;
                while !done()? {
                    if Instant::now() >= deadline || hurry_flag().load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(POLL);
                }
                // Whatever in the group outlived its leader (a compiler
                // deaf to SIGTERM under a make that obeyed) goes too.
                self.kill(libc::SIGKILL);
                return Ok(if interrupted {
                    Outcome::Interrupted
                } else {
                    Outcome::TimedOut
                });
            }
            std::thread::sleep(POLL);
        }
    }

    fn kill(&self, signal: libc::c_int) {
        kill_groups(&self.groups, signal);
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // A group is not killed after its command exited by itself: `pg_ctl
        // start` leaves the postmaster in its group (before PostgreSQL 12).
        if let Ok(mut live) = live_groups().lock() {
            live.retain(|g| !self.groups.contains(g));
        }
    }
}

fn kill_groups(groups: &[libc::pid_t], signal: libc::c_int) {
    for &group in groups {
        // SAFETY: killpg only sends a signal; the group was made for this
        // child (process_group(0)), so no other process is in it.
        unsafe {
            libc::killpg(group, signal);
        }
    }
}

fn live_groups() -> &'static Mutex<Vec<libc::pid_t>> {
    static LIVE: OnceLock<Mutex<Vec<libc::pid_t>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Vec::new()))
}

/// What pgbisect must not leave behind should it end without unwinding
/// (a second signal whose clean-up took too long): files it made (the
/// work dir's lock) and servers it started.
#[derive(Default)]
struct Leftovers {
    files: Vec<PathBuf>,
    servers: Vec<u32>,
}

fn leftovers() -> &'static Mutex<Leftovers> {
    static LEFT: OnceLock<Mutex<Leftovers>> = OnceLock::new();
    LEFT.get_or_init(|| Mutex::new(Leftovers::default()))
}

/// Removes `path` should the process be ended by a second signal.
pub fn remove_at_forced_exit(path: PathBuf) {
    if let Ok(mut left) = leftovers().lock() {
        left.files.push(path);
    }
}

/// Undoes [`remove_at_forced_exit`] (the file is gone by other means).
pub fn keep_at_forced_exit(path: &std::path::Path) {
    if let Ok(mut left) = leftovers().lock() {
        left.files.retain(|f| f != path);
    }
}

/// Stops the server whose postmaster is `pid` (immediate shutdown) should
/// the process be ended by a second signal.
pub fn stop_at_forced_exit(pid: u32) {
    if let Ok(mut left) = leftovers().lock() {
        left.servers.push(pid);
    }
}

/// Undoes [`stop_at_forced_exit`] (the server was stopped).
pub fn stopped(pid: u32) {
    if let Ok(mut left) = leftovers().lock() {
        left.servers.retain(|p| *p != pid);
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP stop pgbisect in order (see the module
/// documentation) instead of ending it on the spot; returns the interrupt
/// flag. Installed once; later calls return the same flag.
pub fn install_signal_handlers() -> io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static INSTALLED: Mutex<bool> = Mutex::new(false);
    let mut installed = INSTALLED
        .lock()
        .map_err(|_| io::Error::other("the signal handlers' lock is poisoned"))?;
    if !*installed {
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        std::thread::Builder::new()
            .name("pgbisect-signals".into())
            .spawn(move || {
                for (seen, _) in signals.forever().enumerate() {
                    on_signal(seen + 1);
                }
            })?;
        *installed = true;
    }
    Ok(interrupt_flag())
}

/// The `seen`th signal: the first interrupts, the second hurries and ends
/// the process [`HURRY`] later if it is still running, a third ends it now.
fn on_signal(seen: usize) {
    match seen {
        1 => {
            interrupt_flag().store(true, Ordering::SeqCst);
            eprintln!(
                "pgbisect: stopping: the command in flight is stopped and servers are shut \
                 down; what was measured stays in the journal (a second signal stops at once)"
            );
        }
        2 => {
            interrupt_flag().store(true, Ordering::SeqCst);
            hurry_flag().store(true, Ordering::SeqCst);
            kill_live_groups();
            eprintln!("pgbisect: stopping at once");
            let _ = std::thread::Builder::new()
                .name("pgbisect-hurry".into())
                .spawn(|| {
                    std::thread::sleep(HURRY);
                    forced_exit();
                });
        }
        _ => forced_exit(),
    }
}

fn kill_live_groups() {
    let groups = live_groups().lock().map(|g| g.clone()).unwrap_or_default();
    kill_groups(&groups, libc::SIGKILL);
}

/// Ends the process without unwinding: kills what it started, stops its
/// servers, removes its lock; the journal is whole up to its last line (a
/// line torn here is cut off by the next start).
fn forced_exit() -> ! {
    kill_live_groups();
    let left = leftovers()
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    for &pid in &left.servers {
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            // SAFETY: kill only sends a signal, to a postmaster we started.
            unsafe {
                libc::kill(pid, libc::SIGQUIT);
            }
        }
    }
    for file in &left.files {
        let _ = std::fs::remove_file(file);
    }
    eprintln!(
        "pgbisect: stopped by a second signal; the journal keeps what was measured: rerun the \
         same command to resume"
    );
    std::process::exit(EXIT_FORCED)
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The process holding an flock on `file` (another open file of it),
/// from `/proc/locks`.
///
/// The kernel writes `/proc/locks` a page at a time: a line can slip past
/// a reader while other processes take and drop locks, so it is read
/// again before nobody is named.
pub fn flock_pid(file: &std::fs::File) -> Option<u32> {
    let ino = std::os::unix::fs::MetadataExt::ino(&file.metadata().ok()?);
    (0..5).find_map(|_| flock_holder(&std::fs::read_to_string("/proc/locks").ok()?, ino))
}

/// The pid holding an flock on the file whose inode is `ino`, from the
/// text of `/proc/locks` (`1: FLOCK ADVISORY WRITE PID MAJ:MIN:INO 0 EOF`).
pub fn flock_holder(locks: &str, ino: u64) -> Option<u32> {
    locks.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (kind, pid, id) = (words.get(1)?, words.get(4)?, words.get(5)?);
        let held_ino: u64 = id.rsplit(':').next()?.parse().ok()?;
        (*kind == "FLOCK" && held_ino == ino)
            .then(|| pid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("-p"), "-p");
        assert_eq!(shell_quote("listen_addresses="), "listen_addresses=");
        assert_eq!(shell_quote("work_mem=4 MB"), "'work_mem=4 MB'");
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn a_command_that_ends_gives_its_output() {
        let expr = duct::cmd!("sh", "-c", "echo tps = 5; exit 3").stdout_capture();
        let Ended::Exited(out) = run(expr, Duration::from_secs(30)).unwrap() else {
            panic!("not exited")
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), "tps = 5\n");
        assert_eq!(out.status.code(), Some(3));
    }

    fn set_after(flag: &Arc<AtomicBool>, after: Duration) {
        let setter = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            setter.store(true, Ordering::SeqCst);
        });
    }

    #[test]
    fn a_command_is_stopped_within_moments_of_an_interrupt() {
        let flag = Arc::new(AtomicBool::new(false));
        set_after(&flag, Duration::from_millis(200));
        let started = Instant::now();
        let expr = duct::cmd!("sleep", "60").stdout_capture();
        let ended = run_watching(expr, Duration::from_secs(60), &flag).unwrap();
        assert!(matches!(ended, Ended::Interrupted), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // Once stopped, nothing more is started.
        let expr = duct::cmd!("sh", "-c", "exit 0");
        let ended = run_watching(expr, Duration::from_secs(60), &flag).unwrap();
        assert!(matches!(ended, Ended::Interrupted), "{ended:?}");
    }

    #[test]
    fn a_command_is_stopped_by_its_own_cancel_flag_and_not_started_after_it() {
        let cancel = Arc::new(AtomicBool::new(false));
        set_after(&cancel, Duration::from_millis(200));
        let started = Instant::now();
        let run = |program: &str, args: &[&str]| {
            let mut command = std::process::Command::new(program);
            command.args(args);
            run_command_or(
                &mut command,
                Duration::from_secs(60),
                Stop::OnFirstSignal,
                Some(&cancel),
            )
        };
        let ended = run("sleep", &["60"]);
        assert!(matches!(ended, Ok(Finished::Interrupted)), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let ended = run("true", &[]);
        assert!(matches!(ended, Ok(Finished::Interrupted)), "{ended:?}");
    }

    /// SIGTERM ignored by the child: SIGKILL after the grace period.
    #[test]
    fn a_command_deaf_to_sigterm_is_killed_after_the_grace_period() {
        let flag = Arc::new(AtomicBool::new(false));
        set_after(&flag, Duration::from_millis(200));
        let started = Instant::now();
        let expr = duct::cmd!("sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60");
        let ended = run_watching(expr, Duration::from_secs(60), &flag).unwrap();
        assert!(matches!(ended, Ended::Interrupted), "{ended:?}");
        let took = started.elapsed();
        assert!(
            took >= GRACE && took < GRACE + Duration::from_secs(10),
            "{took:?}"
        );
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0;
        let zombie =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
        exists && !zombie
    }

    fn read_pid(path: &std::path::Path) -> i32 {
        let waited = Instant::now();
        loop {
            if let Some(pid) = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            assert!(waited.elapsed() < Duration::from_secs(10), "no pid file");
            std::thread::sleep(POLL);
        }
    }

    fn gone_soon(pid: i32) -> bool {
        let waited = Instant::now();
        while alive(pid) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(POLL);
        }
        !alive(pid)
    }

    #[test]
    fn a_command_past_its_deadline_is_stopped_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        // The shell starts a grandchild that would outlive it.
        let script = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let expr = duct::cmd!("sh", "-c", script).stdout_capture();
        let started = Instant::now();
        let ended = run(expr, Duration::from_millis(300)).unwrap();
        assert!(matches!(ended, Ended::TimedOut(_)), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(gone_soon(read_pid(&pid_file)), "the grandchild survived");
    }

    #[test]
    fn a_std_command_gets_a_deadline_and_its_group_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        let log = dir.path().join("log");
        let script = format!(
            "echo building; sleep 60 & echo $! > {}; wait",
            pid_file.display()
        );
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", &script])
            .stdout(std::fs::File::create(&log).unwrap());
        let started = Instant::now();
        let ended = run_command(
            &mut command,
            Duration::from_millis(300),
            Stop::OnFirstSignal,
        );
        assert!(matches!(ended, Ok(Finished::TimedOut(_))), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(gone_soon(read_pid(&pid_file)), "the grandchild survived");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "building\n");

        let mut command = std::process::Command::new("sh");
        command.args(["-c", "exit 7"]);
        let ended = run_command(&mut command, Duration::from_secs(30), Stop::OnSecondSignal);
        let Ok(Finished::Exited(status)) = ended else {
            panic!("{ended:?}")
        };
        assert_eq!(status.code(), Some(7));
        let mut missing = std::process::Command::new("/nonexistent/make");
        let err = run_command(&mut missing, Duration::from_secs(30), Stop::OnFirstSignal);
        assert!(matches!(err, Err(e) if e.kind() == io::ErrorKind::NotFound));
    }

    #[test]
    fn leftovers_are_listed_and_forgotten() {
        let path = PathBuf::from("/nonexistent/pgbisect-test-lock");
        remove_at_forced_exit(path.clone());
        stop_at_forced_exit(4_000_000);
        {
            let left = leftovers().lock().unwrap();
            assert!(left.files.contains(&path) && left.servers.contains(&4_000_000));
        }
        keep_at_forced_exit(&path);
        stopped(4_000_000);
        let left = leftovers().lock().unwrap();
        assert!(!left.files.contains(&path) && !left.servers.contains(&4_000_000));
    }
}
