//! Waiting for a child process with a deadline, and stopping it whole.
//!
//! An unattended hunt must not hang on a build, a benchmark or a
//! notification command that never ends, and Ctrl-C or SIGTERM must stop
//! it within seconds whatever it waits for. A command run here gets a
//! process group of its own (so `sh -c 'make ...'` and everything it
//! starts can be stopped together), is polled rather than waited on, and
//! on its deadline or on the interrupt flag its whole group gets SIGTERM,
//! then SIGKILL after a grace period.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a stopped group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(50);

/// The flag a signal handler sets to stop the hunt (see
/// `server::install_interrupt_handler`): every wait here watches it.
pub fn interrupt_flag() -> Arc<AtomicBool> {
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

/// Runs `expr` (its output captured as the caller set up) in a process
/// group of its own, for at most `limit`.
pub fn run(expr: duct::Expression, limit: Duration) -> io::Result<Ended> {
    run_watching(expr, limit, &interrupt_flag())
}

/// [`run`] without the interrupt: for what must still happen after one,
/// such as telling the user that the hunt was stopped.
pub fn run_to_deadline(expr: duct::Expression, limit: Duration) -> io::Result<Ended> {
    run_watching(expr, limit, &AtomicBool::new(false))
}

/// [`run`], stopped early when `flag` is set.
fn run_watching(expr: duct::Expression, limit: Duration, flag: &AtomicBool) -> io::Result<Ended> {
    let handle = expr
        .before_spawn(|cmd| {
            cmd.process_group(0);
            Ok(())
        })
        .unchecked()
        .start()?;
    let started = Instant::now();
    loop {
        if let Some(output) = handle.try_wait()? {
            return Ok(Ended::Exited(output.clone()));
        }
        let interrupted = flag.load(Ordering::SeqCst);
        if interrupted || started.elapsed() >= limit {
            kill_groups(&handle.pids(), libc::SIGTERM);
            let deadline = Instant::now() + GRACE;
            while handle.try_wait()?.is_none() && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
            if handle.try_wait()?.is_none() {
                kill_groups(&handle.pids(), libc::SIGKILL);
            }
            handle.wait().ok();
            return Ok(if interrupted {
                Ended::Interrupted
            } else {
                Ended::TimedOut(limit)
            });
        }
        std::thread::sleep(POLL);
    }
}

fn kill_groups(pids: &[u32], signal: libc::c_int) {
    for &pid in pids {
        // SAFETY: killpg only sends a signal; the group was made for this
        // child (process_group(0)), so no other process is in it.
        unsafe {
            libc::killpg(pid as libc::pid_t, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_ends_gives_its_output() {
        let expr = duct::cmd!("sh", "-c", "echo tps = 5; exit 3").stdout_capture();
        let Ended::Exited(out) = run(expr, Duration::from_secs(30)).unwrap() else {
            panic!("not exited")
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), "tps = 5\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn a_command_is_stopped_within_moments_of_an_interrupt() {
        let flag = Arc::new(AtomicBool::new(false));
        let setter = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            setter.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let expr = duct::cmd!("sleep", "60").stdout_capture();
        let ended = run_watching(expr, Duration::from_secs(60), &flag).unwrap();
        assert!(matches!(ended, Ended::Interrupted), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
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
        let grandchild: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: signal 0 only checks that the process exists.
        let alive = |pid| unsafe { libc::kill(pid, 0) } == 0;
        let waited = Instant::now();
        while alive(grandchild) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(POLL);
        }
        let zombie = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .is_ok_and(|s| s.contains(") Z "));
        assert!(!alive(grandchild) || zombie, "the grandchild survived");
    }
}
