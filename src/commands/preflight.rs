//! Every check a hunt can make before its first build, in one place.
//!
//! A hunt runs for hours, often unattended: a mistake that shows only at
//! its end (a `--json` path nobody can write, no `sendmail` to mail the
//! result, a user that does not exist, more clients than the machine can
//! hold) costs a night. Each is checked here, once, before anything is
//! built, and is a usage error (exit 2) that says what to change.

use super::output::check_writable_file;
use crate::engine::session::resolved::{HuntPlan, Outputs};
use crate::error::UsageError;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the local mail system takes messages when no `--smtp` is given.
const SENDMAIL: &str = "/usr/sbin/sendmail";

/// How long the SMTP relay may take to accept a connection.
const RELAY_TIMEOUT: Duration = Duration::from_secs(10);

/// PostgreSQL's `MAX_BACKENDS` (2^18 - 1, since 9.6): `max_connections`
/// and every worker together.
const MAX_BACKENDS: u64 = 0x3FFFF;

/// Backends a server has besides the clients: pgbisect's own connections
/// and reserved ones (10), autovacuum (3 + 1), background workers (8),
/// WAL senders (10).
const OTHER_BACKENDS: u64 = 32;

/// The least memory one connection takes: a server process's own memory
/// after connecting, and its share of the lock table.
const BYTES_PER_CONNECTION: u64 = 2 << 20;

/// Processes a hunt has besides the server's backends: the postmaster's
/// helpers, pgbench, pgbisect, and room for the rest of the machine.
const OTHER_PROCESSES: u64 = 200;

/// That `--json` can be written: checked first, as every later refusal is
/// written there too.
pub(super) fn check_json(out: &Outputs) -> anyhow::Result<()> {
    match &out.json {
        Some(path) => check_writable_file(path, "--json"),
        None => Ok(()),
    }
}

/// Runs every other check on the resolved hunt; the first that fails is
/// the error.
pub(super) fn check(hunt: &HuntPlan) -> anyhow::Result<()> {
    let (out, plan) = (&hunt.outputs, &hunt.plan);
    check_telling(&out.mail_to, out.smtp.as_deref(), out.notify_cmd.as_deref())?;
    let (profile, run_as) = (&plan.profile, plan.choices.run_as.as_deref());
    super::plan::check_run_as(run_as, profile)?;
    if profile.is_custom() {
        return refuse_run_as(run_as);
    }
    let wanted = &hunt.hosts;
    let on_hosts = !wanted.hosts.is_empty() || wanted.slurm || !profile.hosts.is_unset();
    check_default_user(run_as, on_hosts)?;
    let clients = plan.config.clients;
    check_clients(clients, &Limits::server_only())?;
    if !on_hosts {
        check_clients(clients, &Limits::of_this_machine())?;
        let options = profile.benchmark.pgbench_options(clients);
        let max_connections = plan.setups.at(clients)?.max_connections;
        crate::lab::pg::check_machine(&options, clients, max_connections)
            .map_err(|e| UsageError(format!("--clients {clients}: {e:#}")))?;
    }
    Ok(())
}

/// That whoever is to be told can be: `--mail-to` has a way out, the
/// `--notify-cmd` program is there. A hunt checks it before its first
/// build, the watcher before its night: what it finds is told hours
/// later, when nobody is there to fix the way out.
pub(super) fn check_telling(
    mail_to: &[String],
    smtp: Option<&str>,
    notify_cmd: Option<&str>,
) -> anyhow::Result<()> {
    if !mail_to.is_empty() {
        check_mail(smtp)?;
    }
    match notify_cmd {
        Some(cmd) => check_notify_command(cmd),
        None => Ok(()),
    }
}

/// `--run-as` names who runs PostgreSQL; a custom command runs as it is.
fn refuse_run_as(run_as: Option<&str>) -> anyhow::Result<()> {
    if let Some(user) = run_as {
        return Err(UsageError(format!(
            "--run-as {user}: the profile runs its own [benchmark] command, which pgbisect \
             runs as the current user; --run-as is for the PostgreSQL servers pgbisect \
             starts: leave it out (switch user in the command itself, e.g. \
             `runuser -u {user} -- ./bench`)"
        ))
        .into());
    }
    Ok(())
}

/// As root with no user named, PostgreSQL runs as `postgres`, which must
/// exist on this machine.
fn check_default_user(run_as: Option<&str>, on_hosts: bool) -> anyhow::Result<()> {
    if on_hosts || run_as.is_some() || !crate::server::is_root() {
        return Ok(());
    }
    crate::server::RunAs::resolve(None).map_err(|e| {
        UsageError(format!(
            "{e}; PostgreSQL refuses to run as root, so pgbisect runs it as `{}`: create \
             that user (`useradd --system --create-home postgres`) or name another with \
             --run-as USER",
            crate::server::DEFAULT_USER
        ))
    })?;
    Ok(())
}

/// `--mail-to` needs a way out: the local sendmail, or the `--smtp` relay
/// answering now.
fn check_mail(smtp: Option<&str>) -> anyhow::Result<()> {
    let problem = match smtp {
        None => missing_program(Path::new(SENDMAIL)).map(|why| {
            format!(
                "--mail-to: mail goes out through {SENDMAIL}, which {why}: install a \
                 mail transfer agent (e.g. `apt-get install msmtp-mta`), or name a relay \
                 with --smtp HOST:PORT"
            )
        }),
        Some(addr) => {
            let relay = crate::notify::mail::Smtp::parse(addr).map_err(UsageError)?;
            relay_unreachable(&relay.host, relay.port, RELAY_TIMEOUT).map(|why| {
                format!(
                    "--smtp {addr}: {why}; what is mailed hours from now would be lost: \
                     start the relay, or give another --smtp HOST:PORT"
                )
            })
        }
    };
    match problem {
        Some(text) => Err(UsageError(text).into()),
        None => Ok(()),
    }
}

/// Why `path` cannot be run, or `None` when it can.
fn missing_program(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(_) => Some("does not exist".into()),
        Ok(m) if !m.is_file() => Some("is not a file".into()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Some("is not executable".into()),
        Ok(_) => None,
    }
}

/// Why the relay at `host:port` does not take a connection, or `None`.
fn relay_unreachable(host: &str, port: u16, timeout: Duration) -> Option<String> {
    let addresses = match (host, port).to_socket_addrs() {
        Ok(a) => a.collect::<Vec<_>>(),
        Err(e) => return Some(format!("cannot resolve {host}: {e}")),
    };
    let mut last = format!("{host} has no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(_) => return None,
            Err(e) => last = format!("no SMTP relay answers at {address}: {e}"),
        }
    }
    Some(last)
}

/// Shell words that run without a program of their own.
const SHELL_BUILTINS: &[&str] = &[
    ".", ":", "cd", "echo", "eval", "exec", "exit", "export", "printf", "set", "test", "true",
    "false", "if", "for", "while", "case", "until", "{", "(", "!", "[",
];

/// `--notify-cmd` runs through `sh -c`: when it starts with a plain
/// program name, that program must be found now, not after the hunt.
fn check_notify_command(cmd: &str) -> anyhow::Result<()> {
    let Some(program) = cmd.split_whitespace().next() else {
        return Err(UsageError("--notify-cmd is empty: give a shell command".into()).into());
    };
    let plain = program
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._+-".contains(c));
    if !plain || SHELL_BUILTINS.contains(&program) {
        // Shell syntax (a variable, a quote, an assignment): sh reads it.
        return Ok(());
    }
    let found = if program.contains('/') {
        missing_program(Path::new(program)).map(|why| format!("{program} {why}"))
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        let runnable = dirs
            .iter()
            .any(|d| missing_program(&d.join(program)).is_none());
        (!runnable).then(|| format!("`{program}` is not found in PATH"))
    };
    match found {
        Some(why) => Err(UsageError(format!(
            "--notify-cmd: {why}: the command would fail when it is run; give a \
             program that exists (its full path, when cron's PATH is short)"
        ))
        .into()),
        None => Ok(()),
    }
}

/// What bounds the clients of a run: the server's and the machine's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Limits {
    /// Backends a PostgreSQL server takes.
    pub max_backends: Option<u64>,
    /// Memory of the machine, in bytes.
    pub memory: Option<u64>,
    /// Processes the machine and the user may have (the least of
    /// `kernel.pid_max`, `kernel.threads-max` and `ulimit -u`).
    pub processes: Option<(u64, &'static str)>,
}

impl Limits {
    /// The server's own limit, whatever the machine.
    fn server_only() -> Limits {
        Limits {
            max_backends: Some(MAX_BACKENDS),
            ..Limits::default()
        }
    }

    /// This machine's memory and processes.
    fn of_this_machine() -> Limits {
        let read =
            |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| mem_total(&t));
        let processes = [
            read("/proc/sys/kernel/pid_max").map(|n| (n, "kernel.pid_max")),
            read("/proc/sys/kernel/threads-max").map(|n| (n, "kernel.threads-max")),
            user_processes().map(|n| (n, "ulimit -u")),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(n, _)| *n);
        Limits {
            max_backends: None,
            memory,
            processes,
        }
    }
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The soft `ulimit -u` of this process, which the server's user
/// inherits (`None` when unlimited).
fn user_processes() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut limit) };
    (status == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// Refuses `clients` beyond what `limits` allow, naming the limit, the
/// most clients it allows and what to do.
pub(super) fn check_clients(clients: u32, limits: &Limits) -> anyhow::Result<()> {
    let wanted = u64::from(clients);
    let gib = |bytes: u64| bytes as f64 / f64::from(1u32 << 30);
    if let Some(max) = limits.max_backends
        && wanted + OTHER_BACKENDS > max
    {
        return Err(UsageError(format!(
            "--clients {clients}: a PostgreSQL server takes at most {max} backends \
             (max_connections and its workers together), so at most {} clients: give \
             fewer",
            max - OTHER_BACKENDS
        ))
        .into());
    }
    if let Some(memory) = limits.memory
        && wanted * BYTES_PER_CONNECTION > memory
    {
        return Err(UsageError(format!(
            "--clients {clients}: each client is a server process of at least {} MiB, \
             {:.1} GiB in all, and this machine has {:.1} GiB of memory: run at most {} \
             clients here, or measure on larger machines (--hosts)",
            BYTES_PER_CONNECTION >> 20,
            gib(wanted * BYTES_PER_CONNECTION),
            gib(memory),
            memory / BYTES_PER_CONNECTION
        ))
        .into());
    }
    if let Some((max, name)) = limits.processes
        && wanted + OTHER_PROCESSES > max
    {
        return Err(UsageError(format!(
            "--clients {clients}: each client is a server process, and {name} allows {max} \
             processes: run at most {} clients, or raise {name}",
            max.saturating_sub(OTHER_PROCESSES)
        ))
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(memory_gib: u64, processes: u64) -> Limits {
        Limits {
            max_backends: None,
            memory: Some(memory_gib << 30),
            processes: Some((processes, "kernel.pid_max")),
        }
    }

    #[test]
    fn clients_within_the_limits_pass() {
        check_clients(128, &Limits::server_only()).unwrap();
        check_clients(128, &machine(8, 32768)).unwrap();
        check_clients(5000, &Limits::default()).unwrap();
    }

    #[test]
    fn more_clients_than_a_server_takes_are_refused_with_the_most_it_takes() {
        let err = check_clients(300_000, &Limits::server_only()).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert!(err.to_string().contains("at most 262111 clients"), "{err}");
    }

    #[test]
    fn more_clients_than_the_machine_holds_name_the_limit_and_the_most_it_holds() {
        let cases = [
            (100_000, machine(24, 4_194_304), "24.0 GiB of memory", 12288),
            (
                40_000,
                machine(1024, 32768),
                "kernel.pid_max allows 32768",
                32568,
            ),
        ];
        for (clients, limits, limit, most) in cases {
            let err = check_clients(clients, &limits).unwrap_err().to_string();
            assert!(err.contains(limit), "{err}");
            assert!(err.contains(&format!("at most {most} clients")), "{err}");
        }
    }

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24684000 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total(text), Some(24_684_000 * 1024));
        assert_eq!(mem_total("nothing"), None);
    }

    #[test]
    fn a_program_is_missing_unless_it_is_an_executable_file() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(missing_program(&tmp.path().join("no")).is_some());
        assert!(missing_program(tmp.path()).is_some());
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(missing_program(&file).as_deref(), Some("is not executable"));
        assert_eq!(missing_program(Path::new("/bin/sh")), None);
    }

    #[test]
    fn a_notify_command_must_name_a_program_that_exists() {
        check_notify_command("sh -c true").unwrap();
        check_notify_command("echo done >> /tmp/x").unwrap();
        check_notify_command("FOO=1 whatever").unwrap();
        check_notify_command("$HOME/bin/x").unwrap();
        let err = check_notify_command("no-such-program-here --now").unwrap_err();
        assert!(err.to_string().contains("not found in PATH"), "{err}");
        let err = check_notify_command("/no/such/notify").unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn a_relay_that_does_not_answer_is_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(relay_unreachable("127.0.0.1", port, RELAY_TIMEOUT), None);
        drop(listener);
        let why = relay_unreachable("127.0.0.1", port, RELAY_TIMEOUT).unwrap();
        assert!(why.contains("no SMTP relay answers"), "{why}");
    }
}
