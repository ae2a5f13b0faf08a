//! A command's output, read through a pipe and kept within bounds while
//! it is written.
//!
//! A build or a benchmark may print without end (a debug flag left on, a
//! loop). Its output goes to a pipe pgbisect reads, not straight to a
//! file: the file gets the first half of [`files::KEEP_OUTPUT`], the last
//! half is kept in memory and written after the command ends (with a line
//! saying how much was cut between them), so a gigabyte of output never
//! reaches the disk. Past [`OUTPUT_LIMIT`] pgbisect stops reading and
//! closes the pipe, which stops the command (`SIGPIPE`), and says so. A
//! write that fails for lack of space says "disk full" with the path.

use crate::files;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// The most output a command may print before it is stopped.
pub const OUTPUT_LIMIT: u64 = 256 << 20;

/// How long the reader waits for output before it looks whether the
/// command ended.
const POLL_MS: libc::c_int = 100;

/// Output being read from a running command.
pub struct Capture {
    done: Arc<AtomicBool>,
    reader: JoinHandle<io::Result<Captured>>,
}

/// What a command printed, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The kept output (all of it when it was short), as in the file.
    pub text: String,
    /// The command printed more than the limit, and was stopped.
    pub over_limit: Option<u64>,
}

impl Capture {
    /// Makes the file `path` (see [`files::create`]), starting with
    /// `header` (the command line, say), and a pipe whose reading end
    /// fills it, at most `keep` bytes of it on disk; returns the writing
    /// end, for the command's output. Past `limit` bytes the pipe is
    /// closed.
    pub fn start(path: &Path, header: &[u8], keep: u64, limit: u64) -> io::Result<(File, Capture)> {
        let file = files::create(path)?;
        let (read, write) = pipe()?;
        let done = Arc::new(AtomicBool::new(false));
        let mut sink = Sink::new(file, path.to_path_buf(), keep);
        sink.take(header)?;
        let seen = done.clone();
        let reader = std::thread::Builder::new()
            .name("pgbisect-output".into())
            .spawn(move || sink.fill(File::from(read), limit, &seen))?;
        Ok((File::from(write), Capture { done, reader }))
    }

    /// Once the command and all it started ended: reads what is left in
    /// the pipe and writes the kept output.
    pub fn finish(self) -> io::Result<Captured> {
        self.done.store(true, Ordering::SeqCst);
        self.reader
            .join()
            .map_err(|_| io::Error::other("the output reader failed"))?
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, owned from here.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether `fd` has something to read (or its other end closed) within
/// [`POLL_MS`].
fn readable(fd: &File) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call.
    match unsafe { libc::poll(&mut poll, 1, POLL_MS) } {
        n if n < 0 => {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(err)
            }
        }
        n => Ok(n > 0),
    }
}

/// Where the output goes: its head to the file as it comes, its tail to
/// memory.
struct Sink {
    file: File,
    path: PathBuf,
    half: u64,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Sink {
    fn new(file: File, path: PathBuf, keep: u64) -> Sink {
        Sink {
            file,
            path,
            half: keep / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Reads `pipe` until its writers are all gone, or `done` is set and
    /// nothing is left to read, or `limit` bytes came.
    fn fill(mut self, mut pipe: File, limit: u64, done: &AtomicBool) -> io::Result<Captured> {
        let mut buf = vec![0; 64 << 10];
        let mut over_limit = None;
        // Output read after the command ended, from what it left running:
        // read while it comes, but not without end.
        let mut late = 0;
        loop {
            let finished = done.load(Ordering::SeqCst);
            if finished && late > buf.len() * 16 {
                break;
            }
            if !readable(&pipe)? {
                if finished {
                    break;
                }
                continue;
            }
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if finished {
                late += n;
            }
            self.take(&buf[..n])?;
            if self.total > limit {
                over_limit = Some(limit);
                break;
            }
        }
        drop(pipe);
        let text = self.close()?;
        Ok(Captured { text, over_limit })
    }

    fn take(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.total += bytes.len() as u64;
        let room = (self.half as usize).saturating_sub(self.head.len());
        if room > 0 {
            let now = room.min(bytes.len());
            self.file
                .write_all(&bytes[..now])
                .map_err(|e| files::explain(&self.path, e))?;
            self.head.extend_from_slice(&bytes[..now]);
            bytes = &bytes[now..];
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(self.half as usize);
        self.tail.drain(..over);
        Ok(())
    }

    /// Writes the tail (after a line saying what was cut, if anything
    /// was); returns the kept output.
    fn close(mut self) -> io::Result<String> {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let rest = if self.total > kept {
            files::cut_between(&[], self.total - kept, &tail)
        } else {
            tail
        };
        self.file
            .write_all(&rest)
            .map_err(|e| files::explain(&self.path, e))?;
        self.head.extend_from_slice(&rest);
        Ok(String::from_utf8_lossy(&self.head).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(script: &str, keep: u64, limit: u64) -> (Captured, String, Duration) {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out.txt");
        let (write, capture) = Capture::start(&out, b"", keep, limit).unwrap();
        let started = std::time::Instant::now();
        let mut child = std::process::Command::new("sh")
            .args(["-c", script])
            .stdout(write)
            .spawn()
            .unwrap();
        child.wait().unwrap();
        let took = started.elapsed();
        let captured = capture.finish().unwrap();
        (captured, std::fs::read_to_string(&out).unwrap(), took)
    }

    #[test]
    fn short_output_is_kept_whole() {
        let (captured, file, _) = run("echo start; echo 'tps = 5'", 100, 1000);
        assert_eq!(captured.text, "start\ntps = 5\n");
        assert_eq!(file, captured.text);
        assert_eq!(captured.over_limit, None);
    }

    #[test]
    fn long_output_keeps_its_ends_and_never_more_on_disk() {
        let script = "echo start; head -c 10000 /dev/zero | tr '\\0' x; echo; echo 'tps = 5'";
        let (captured, file, _) = run(script, 100, 1 << 20);
        assert!(captured.text.starts_with("start\n"), "{}", captured.text);
        assert!(captured.text.ends_with("tps = 5\n"), "{}", captured.text);
        assert!(
            captured
                .text
                .contains("[... 9915 bytes of output cut by pgbisect ...]"),
            "{}",
            captured.text
        );
        assert_eq!(file, captured.text);
    }

    #[test]
    fn endless_output_is_stopped_at_the_limit() {
        let (captured, file, took) = run("yes", 100, 1 << 20);
        assert_eq!(captured.over_limit, Some(1 << 20));
        assert!(file.len() < 200, "{}", file.len());
        assert!(took < Duration::from_secs(20), "{took:?}");
    }

    #[test]
    fn output_of_a_process_that_outlives_the_command_is_not_waited_for() {
        // The sleep keeps the pipe open; finish reads what came and ends.
        let (captured, _, _) = run("echo 'tps = 5'; sleep 30 &", 100, 1000);
        assert_eq!(captured.text, "tps = 5\n");
    }
}
