//! Private PostgreSQL servers and data templates.
//!
//! Every measurement runs against a server of its own: a fresh copy of a
//! data template, started on a private Unix socket with no TCP listener, so
//! that nothing else on the machine talks to it and nothing it leaves
//! behind changes the next measurement. Servers stop when their handle is
//! dropped (error paths included), and each running server is recorded in
//! a registry in the work directory, so that a later run can stop servers
//! that a killed run left behind.

mod config;
mod limits;
mod pgbench;
mod registry;
mod run_as;
pub mod settings;
mod template;
pub mod waits;

pub use config::{apply_settings, describe_config, server_version};
pub use limits::{
    CONNECTION_MARGIN, LimitError, SystemLimits, check_limits, for_workload, open_files_needed,
    raise_open_files, with_max_connections,
};
pub use pgbench::{BenchError, run_pgbench, time_limit};
pub use registry::{process_start_time, reap_leftovers, stop_server_in};
pub use run_as::{DEFAULT_USER, RunAs, is_root, lookup_user};
pub use template::{
    DataTemplate, TemplateSpec, digest, fresh_copy, setup_digest, shares_blocks, sibling,
};

use crate::bench::{Conn, tail_lines};
use crate::placement::Pin;
use crate::proc::{self, Ended, Stop};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `pg_ctl start` waits for a server to accept connections
/// (`-t`); pg_ctl itself is stopped [`PG_CTL_MARGIN`] later.
const START_WAIT: Duration = Duration::from_secs(120);

/// What pg_ctl gets beyond its own `-t` before it is stopped.
const PG_CTL_MARGIN: Duration = Duration::from_secs(30);

/// Lines of a server log kept in errors.
pub const LOG_TAIL_LINES: usize = 30;

/// The longest Unix socket path the kernel takes, less a margin.
const MAX_SOCKET_PATH: usize = 100;

/// Trouble with a server or the programs around it.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "PostgreSQL refuses to run as root, and user `{name}` (which it would run as) does not exist: \
         create it (`useradd --system --create-home {name}`) or name another user with `--run-as USER`"
    )]
    NoSuchUser { name: String },
    #[error(
        "user `{name}` is root, and PostgreSQL refuses to run as root: name an unprivileged user with `--run-as USER`"
    )]
    RootUser { name: String },
    #[error(
        "{who} cannot reach {}: {} is not searchable by it; `chmod o+x` that directory or choose a work \
         directory elsewhere (for example under /var/tmp)",
        path.display(), blocked_at.display()
    )]
    Unreachable {
        path: PathBuf,
        blocked_at: PathBuf,
        who: String,
    },
    #[error(
        "the setup SQL {} failed on this commit's server (psql, ON_ERROR_STOP); its last lines:\n{tail}",
        path.display()
    )]
    SetupFailed { path: PathBuf, tail: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}); last lines of its output:\n{tail}")]
    Command {
        command: String,
        status: String,
        tail: String,
    },
    #[error("`{command}` did not finish within {seconds} s and was stopped")]
    TimedOut { command: String, seconds: u64 },
    #[error("interrupted while running `{command}`")]
    Interrupted { command: String },
    #[error(
        "`{command}` could not be started: {source}; check that the PostgreSQL binaries are installed there"
    )]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(
        "PostgreSQL {version} has no setting `{name}` (a server with an unknown setting does not start): \
         remove it from the profile or use it only with versions that have it"
    )]
    UnknownSetting { name: String, version: String },
    #[error("{0}")]
    Setting(#[from] settings::SettingError),
    #[error("the server in {} did not start (`{command}`: {detail}); last lines of its log {}:\n{log_tail}", data_dir.display(), log.display())]
    StartFailed {
        data_dir: PathBuf,
        command: String,
        detail: String,
        log: PathBuf,
        log_tail: String,
    },
    #[error("the server in {} did not stop, even after SIGKILL of pid {pid}", data_dir.display())]
    StopFailed { data_dir: PathBuf, pid: u32 },
    #[error(
        "socket directory {} is too long for a Unix socket path (at most {MAX_SOCKET_PATH} bytes): \
         use a shorter work or temporary directory",
        path.display()
    )]
    SocketPathTooLong { path: PathBuf },
    #[error("{}: {detail}", path.display())]
    BadDataDir { path: PathBuf, detail: String },
    #[error(
        "refusing {}: {detail}\nPostgreSQL's user gets only files and folders of pgbisect's own, \
         every level above them pgbisect's too\nhint: remove or put back what another user \
         planted or changed there, then rerun",
        path.display()
    )]
    Refused { path: PathBuf, detail: String },
}

impl ServerError {
    /// Whether the error ends the hunt, not only the run: the machine's
    /// trouble (a disk, a folder that cannot be made) or a path another
    /// user tampered with, which no later run would find otherwise.
    pub fn ends_the_hunt(&self) -> bool {
        matches!(self, ServerError::Io { .. } | ServerError::Refused { .. })
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        ServerError::Io {
            what: what.into(),
            source,
        }
    }
}

/// A program with its arguments, kept for running and for messages.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// CPUs and memory node the program (and what it forks) runs on.
    pub pin: Pin,
    /// How long it may take before it is stopped.
    pub limit: Duration,
    /// Whether the first signal stops it (the work of a run) or only a
    /// second one (stopping a server).
    pub stop: Stop,
    /// What it reads on its standard input (nothing when None).
    pub input: Option<Vec<u8>>,
}

/// How long a PostgreSQL program may run when its caller says nothing
/// more precise (initdb, psql, `postgres --describe-config`).
pub const COMMAND_LIMIT: Duration = Duration::from_secs(600);

/// How long work proportional to the data may take (`pgbench -i`, copying
/// a data directory): ten minutes, plus six seconds per unit of scale
/// (about 15 MB).
pub fn data_limit(scale: u32) -> Duration {
    COMMAND_LIMIT + Duration::from_secs(6 * u64::from(scale))
}

impl Invocation {
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Invocation {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            pin: Pin::none(),
            limit: COMMAND_LIMIT,
            stop: Stop::OnFirstSignal,
            input: None,
        }
    }

    /// The same invocation, given `input` on its standard input: text
    /// the program's user need not be able to read from a file.
    pub fn reading(mut self, input: Vec<u8>) -> Self {
        self.input = Some(input);
        self
    }

    /// The same invocation, stopped after `limit`.
    pub fn within(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// The same invocation, run to its end after a first signal (clean-up).
    pub fn past_a_first_signal(mut self) -> Self {
        self.stop = Stop::OnSecondSignal;
        self
    }

    /// The same invocation, run on `pin`'s CPUs and memory node.
    pub fn pinned(mut self, pin: &Pin) -> Self {
        self.pin = pin.clone();
        self
    }

    /// The command line as a user would type it.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|word| crate::proc::shell_quote(&word.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs to the end (within its limit), capturing stdout and stderr.
    pub fn output(&self, run_as: &RunAs) -> Result<std::process::Output, ServerError> {
        let mut expr = self
            .pin
            .apply(run_as.command(&self.program, self.args.clone()))
            .stdout_capture()
            .stderr_capture();
        if let Some(input) = &self.input {
            expr = expr.stdin_bytes(input.clone());
        }
        let ended =
            proc::run_until(expr, self.limit, self.stop).map_err(|source| ServerError::Spawn {
                command: self.display(),
                source,
            })?;
        match ended {
            Ended::Exited(output) => Ok(output),
            Ended::TimedOut(limit) => Err(ServerError::TimedOut {
                command: self.display(),
                seconds: limit.as_secs(),
            }),
            Ended::Interrupted => Err(ServerError::Interrupted {
                command: self.display(),
            }),
        }
    }

    /// Runs to the end and fails unless it exits 0; returns stdout and stderr.
    pub fn run(&self, run_as: &RunAs) -> Result<String, ServerError> {
        let output = self.output(run_as)?;
        let text = combined_output(&output);
        if output.status.success() {
            Ok(text)
        } else {
            Err(ServerError::Command {
                command: self.display(),
                status: output.status.to_string(),
                tail: tail_lines(&text, LOG_TAIL_LINES),
            })
        }
    }
}

/// stdout followed by stderr, as text.
pub(crate) fn combined_output(output: &std::process::Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

/// A private directory for server sockets: short (Unix socket paths are
/// limited), under the system temporary directory, open only to the user
/// the server runs as; removed when dropped. The folder handed to that
/// user (`s`) sits in one of ours: in `/tmp` the owner of a folder may
/// rename it and put a link in its place, which a later hand-over would
/// follow.
#[derive(Debug)]
pub struct SocketDir {
    dir: tempfile::TempDir,
    sockets: PathBuf,
}

impl SocketDir {
    pub fn create(run_as: &RunAs) -> Result<SocketDir, ServerError> {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir();
        let base = if base.as_os_str().len() > 40 {
            PathBuf::from("/tmp")
        } else {
            base
        };
        let dir = tempfile::Builder::new()
            .prefix("pgbisect-sock-")
            .permissions(std::fs::Permissions::from_mode(0o755))
            .tempdir_in(&base)
            .map_err(|e| {
                ServerError::io(
                    format!("cannot create a socket directory in {}", base.display()),
                    e,
                )
            })?;
        let sockets = dir.path().join("s");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&sockets)
            .map_err(|e| ServerError::io(format!("cannot create {}", sockets.display()), e))?;
        run_as.hand_over(&sockets)?;
        run_as.check_reachable(&sockets)?;
        Ok(SocketDir { dir, sockets })
    }

    pub fn path(&self) -> &Path {
        &self.sockets
    }

    /// The folder of ours the sockets' folder is in.
    pub fn outer(&self) -> &Path {
        self.dir.path()
    }
}

/// A port whose socket name is free in `socket_dir`. With no TCP listener
/// the port only names the socket file, so any unused one will do.
pub fn pick_port(socket_dir: &Path) -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(7919);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = 20000 + (seed.wrapping_add(n) % 40000) as u16;
        let socket = socket_dir.join(format!(".s.PGSQL.{port}"));
        let lock = socket_dir.join(format!(".s.PGSQL.{port}.lock"));
        if !socket.exists() && !lock.exists() {
            return port;
        }
    }
}

/// How to start one private server.
#[derive(Debug, Clone)]
pub struct Server {
    /// Directory holding `postgres`, `pg_ctl` and `psql`.
    pub bin: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
    pub socket_dir: PathBuf,
    /// `-c name=value` settings.
    pub settings: Vec<(String, String)>,
    pub log: PathBuf,
    pub run_as: RunAs,
    /// Where running servers are recorded (`<work>/servers`), if anywhere.
    pub registry_dir: Option<PathBuf>,
    /// CPUs and memory node of the postmaster, inherited by its backends.
    pub pin: Pin,
    /// The program `pg_ctl -p` starts in place of `bin/postgres`: the
    /// server counted ([`crate::counts::Launcher`]); `None`: `postgres`.
    pub launcher: Option<PathBuf>,
}

impl Server {
    /// Starts the server and waits until it accepts connections.
    pub fn start(mut self) -> Result<RunningServer, ServerError> {
        self.absolutize()?;
        let socket = self.socket_dir.join(format!(".s.PGSQL.{}", self.port));
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(ServerError::SocketPathTooLong {
                path: self.socket_dir.clone(),
            });
        }
        self.prepare_dirs()?;
        let start = self.pg_ctl_start();
        if let Err(err) = start.run(&self.run_as) {
            return Err(self.start_failed(&start, err));
        }
        let Some(pid) = registry::postmaster_pid(&self.data_dir) else {
            let detail = "no postmaster.pid after start".to_string();
            return Err(self.start_failed(
                &start,
                ServerError::io(detail, std::io::ErrorKind::NotFound.into()),
            ));
        };
        let registered = match &self.registry_dir {
            Some(dir) => Some(registry::register(dir, &self, pid)?),
            None => None,
        };
        proc::stop_at_forced_exit(pid);
        Ok(RunningServer {
            server: self,
            pid,
            registered,
            stopped: false,
        })
    }

    fn absolutize(&mut self) -> Result<(), ServerError> {
        for path in [
            &mut self.bin,
            &mut self.data_dir,
            &mut self.socket_dir,
            &mut self.log,
        ] {
            *path = std::path::absolute(&*path)
                .map_err(|e| ServerError::io(format!("cannot resolve {}", path.display()), e))?;
        }
        Ok(())
    }

    /// Socket directory and log file handed to the server's user.
    fn prepare_dirs(&self) -> Result<(), ServerError> {
        if !self.data_dir.join("PG_VERSION").is_file() {
            let detail = "not a PostgreSQL data directory (no PG_VERSION)".to_string();
            return Err(ServerError::BadDataDir {
                path: self.data_dir.clone(),
                detail,
            });
        }
        if let Some(pid) =
            registry::postmaster_pid(&self.data_dir).filter(|pid| registry::is_alive(*pid))
        {
            let detail = format!("a server (pid {pid}) already runs in it");
            return Err(ServerError::BadDataDir {
                path: self.data_dir.clone(),
                detail,
            });
        }
        // Every level down to the data directory is ours, the last one
        // the server's: nobody else can swap it for one of theirs.
        crate::folders::check_dir_for(&self.data_dir, self.run_as.uid()).map_err(|e| {
            ServerError::Refused {
                path: self.data_dir.clone(),
                detail: e.to_string(),
            }
        })?;
        self.run_as.check_reachable(&self.data_dir)?;
        crate::folders::create_dir_for(&self.socket_dir, self.run_as.uid()).map_err(|e| {
            ServerError::io(format!("cannot create {}", self.socket_dir.display()), e)
        })?;
        self.run_as.hand_over(&self.socket_dir)?;
        // The log's folder may be one handed to the server's user (a data
        // template's folder keeps its server's log).
        if let Some(parent) = self.log.parent() {
            crate::folders::create_dir_for(parent, self.run_as.uid())
                .map_err(|e| ServerError::io(format!("cannot create {}", parent.display()), e))?;
        }
        let log = open_log(&self.log)?;
        self.run_as.hand_over_open(&self.log, &log)?;
        self.run_as.check_reachable(&self.log)
    }

    /// `pg_ctl -w -D DATA -l LOG -o "-p PORT -k SOCKETS -c listen_addresses= -c n=v..." start`.
    fn pg_ctl_start(&self) -> Invocation {
        let mut options = vec![
            "-p".to_string(),
            self.port.to_string(),
            "-k".to_string(),
            self.socket_dir.display().to_string(),
            "-c".to_string(),
            "listen_addresses=".to_string(),
        ];
        for (name, value) in &self.settings {
            options.push("-c".to_string());
            options.push(format!("{name}={value}"));
        }
        // pg_ctl hands -o to a shell.
        let options: Vec<String> = options
            .iter()
            .map(|word| crate::proc::shell_quote(word))
            .collect();
        let wait = START_WAIT.as_secs().to_string();
        let mut args: Vec<OsString> = vec!["-w".into(), "-t".into(), wait.into(), "-D".into()];
        args.push(self.data_dir.clone().into());
        if let Some(program) = &self.launcher {
            args.extend(["-p".into(), program.clone().into()]);
        }
        args.extend([
            "-l".into(),
            self.log.clone().into(),
            "-o".into(),
            options.join(" ").into(),
        ]);
        args.push("start".into());
        Invocation::new(self.bin.join("pg_ctl"), args)
            .pinned(&self.pin)
            .within(START_WAIT + PG_CTL_MARGIN)
    }

    fn start_failed(&self, start: &Invocation, err: ServerError) -> ServerError {
        let log_tail = std::fs::read_to_string(&self.log).unwrap_or_default();
        // A server that came up halfway must not be left behind.
        if let Some(pid) =
            registry::postmaster_pid(&self.data_dir).filter(|pid| registry::is_alive(*pid))
        {
            registry::kill_hard(pid);
        }
        ServerError::StartFailed {
            data_dir: self.data_dir.clone(),
            command: start.display(),
            detail: err.to_string(),
            log: self.log.clone(),
            log_tail: tail_lines(&log_tail, LOG_TAIL_LINES),
        }
    }
}

/// A started server; stops it when dropped.
#[derive(Debug)]
pub struct RunningServer {
    server: Server,
    pid: u32,
    registered: Option<PathBuf>,
    stopped: bool,
}

impl RunningServer {
    /// The postmaster's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    pub fn data_dir(&self) -> &Path {
        &self.server.data_dir
    }

    pub fn log_path(&self) -> &Path {
        &self.server.log
    }

    pub fn run_as(&self) -> &RunAs {
        &self.server.run_as
    }

    /// Where clients connect, for database `dbname`.
    pub fn conn(&self, dbname: &str) -> Conn {
        Conn {
            socket_dir: self.server.socket_dir.clone(),
            port: self.server.port,
            dbname: dbname.to_string(),
        }
    }

    /// True while the postmaster runs.
    pub fn is_alive(&self) -> bool {
        !self.stopped && registry::is_alive(self.pid)
    }

    /// Runs one SQL command with psql from the server's bin directory, as
    /// the server's user, in database `postgres`; returns its unaligned output.
    pub fn psql(&self, sql: &str) -> Result<String, ServerError> {
        let mut args: Vec<String> = ["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"]
            .map(String::from)
            .to_vec();
        args.extend(self.conn("postgres").host_args());
        args.extend([
            "-d".to_string(),
            "postgres".to_string(),
            "-c".to_string(),
            sql.to_string(),
        ]);
        let psql = Invocation::new(self.server.bin.join("psql"), args);
        let output = psql.output(&self.server.run_as)?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
        }
        Err(ServerError::Command {
            command: psql.display(),
            status: output.status.to_string(),
            tail: tail_lines(&combined_output(&output), LOG_TAIL_LINES),
        })
    }

    /// The server log's size now, to look only at what a run adds to it.
    pub fn log_len(&self) -> u64 {
        std::fs::metadata(&self.server.log)
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// The last lines of the server log.
    pub fn log_tail(&self) -> String {
        tail_lines(&read_lossy(&self.server.log, 0), LOG_TAIL_LINES)
    }

    /// Why the server must be taken as crashed since the log was
    /// `log_len` long, if it must: the postmaster is gone (waiting up to
    /// `grace` for a dying one to finish exiting), or the log reports a
    /// backend killed by a signal or a PANIC.
    pub fn crash_since(&self, log_len: u64, grace: Duration) -> Option<String> {
        if wait_until(grace, || !registry::is_alive(self.pid)) {
            return Some(format!("the postmaster (pid {}) is gone", self.pid));
        }
        let added = read_lossy(&self.server.log, log_len);
        added
            .lines()
            .find(|line| line.contains("terminated by signal") || line.contains("PANIC:"))
            .map(|line| format!("the server log says: {}", line.trim()))
    }

    /// Stops the server: fast shutdown, then immediate, then SIGKILL.
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.stop_now()
    }

    fn stop_now(&mut self) -> Result<(), ServerError> {
        if self.stopped {
            return Ok(());
        }
        // After a second signal, no time for a fast shutdown.
        let hurry = proc::hurry_flag().load(std::sync::atomic::Ordering::SeqCst);
        let modes: &[(&str, u64)] = if hurry {
            &[("immediate", 5)]
        } else {
            &[("fast", 60), ("immediate", 20)]
        };
        for &(mode, seconds) in modes {
            if !registry::is_alive(self.pid) {
                break;
            }
            let mut args: Vec<OsString> = vec![
                "stop".into(),
                "-D".into(),
                self.server.data_dir.clone().into(),
            ];
            args.extend(["-m", mode, "-w", "-t"].map(OsString::from));
            args.push(seconds.to_string().into());
            // Failure shows as a postmaster still alive below.
            let _ = Invocation::new(self.server.bin.join("pg_ctl"), args)
                .within(Duration::from_secs(seconds) + PG_CTL_MARGIN)
                .past_a_first_signal()
                .output(&self.server.run_as);
        }
        if registry::is_alive(self.pid) && !registry::kill_hard(self.pid) {
            return Err(ServerError::StopFailed {
                data_dir: self.server.data_dir.clone(),
                pid: self.pid,
            });
        }
        // After a crash or SIGKILL the pid file and shared memory remain.
        registry::remove_orphaned_shmem(&self.server.data_dir);
        self.stopped = true;
        proc::stopped(self.pid);
        if let Some(entry) = self.registered.take() {
            let _ = std::fs::remove_file(entry);
        }
        Ok(())
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Err(err) = self.stop_now() {
            eprintln!("pgbisect: warning: {err}");
        }
    }
}

/// Opens (creating it) the server log at `path` to append to, without
/// following a link there.
fn open_log(path: &Path) -> Result<std::fs::File, ServerError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            ServerError::io(
                format!("cannot create the server log {}", path.display()),
                crate::files::explain(path, e),
            )
        })
}

/// The text of `path` from byte `offset` on (empty when unreadable).
pub(crate) fn read_lossy(path: &Path, offset: u64) -> String {
    let Ok(bytes) = std::fs::read(path) else {
        return String::new();
    };
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Waits until `done` holds or `timeout` passes; true when it held.
pub(crate) fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_ports_avoid_used_socket_names() {
        let dir = tempfile::tempdir().unwrap();
        let first = pick_port(dir.path());
        std::fs::write(dir.path().join(format!(".s.PGSQL.{first}")), "").unwrap();
        for _ in 0..100 {
            assert_ne!(pick_port(dir.path()), first);
        }
    }
}
