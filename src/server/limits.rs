//! What a workload needs from the server and from the machine.
//!
//! 128 clients need a server that takes 128 connections (PostgreSQL's
//! default `max_connections` is 100, and each refused client is a
//! "sorry, too many clients already" that ends the run), and a machine
//! that lets 128 connections be made: open files for pgbench's sockets, a
//! listen backlog for connects that arrive together ("Resource temporarily
//! unavailable" on a Unix socket), and System V semaphores for servers
//! before 10. The server's settings follow the workload, with a note; the
//! machine's limits are checked before a run, and a limit that is too low
//! is an error that says which command raises it.

/// Connections kept free above the clients: PostgreSQL reserves 3 for
/// superusers (`superuser_reserved_connections`), and pgbisect's own
/// `psql` and pgbench's setup connection need some too.
pub const CONNECTION_MARGIN: u32 = 10;

/// `max_connections` of every version from 9.5 to today when not set.
const DEFAULT_MAX_CONNECTIONS: u32 = 100;

/// The settings for a run of `clients` clients: `max_connections` raised to
/// `clients + CONNECTION_MARGIN` when it is lower (or not set), with a
/// note saying so. Returns the settings and the `max_connections` the
/// server will have.
pub fn for_workload(
    settings: &[(String, String)],
    clients: u32,
) -> (Vec<(String, String)>, u32, Option<String>) {
    let needed = clients.saturating_add(CONNECTION_MARGIN);
    let (have, from) = match profile_max_connections(settings) {
        None => (DEFAULT_MAX_CONNECTIONS, "the server's default"),
        Some(Ok(n)) => (n, "the profile's"),
        // Not a number: the server will say so.
        Some(Err(_)) => return (settings.to_vec(), DEFAULT_MAX_CONNECTIONS, None),
    };
    if have >= needed {
        return (settings.to_vec(), have, None);
    }
    let raised = with_max_connections(settings, needed);
    let note = format!(
        "max_connections raised from {have} ({from}) to {needed}: {clients} clients \
         plus {CONNECTION_MARGIN} for reserved and pgbisect's own connections"
    );
    (raised, needed, Some(note))
}

/// Where `settings` set `max_connections`, and its value.
fn profile_max_connections(
    settings: &[(String, String)],
) -> Option<Result<u32, std::num::ParseIntError>> {
    settings
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("max_connections"))
        .map(|(_, value)| value.trim().parse::<u32>())
}

/// `settings` with `max_connections` of at least `max` (as
/// [`for_workload`] decided it): a lower value is replaced in place, a
/// missing one added in order when `max` is above the server's default;
/// a value that is not a number is left for the server to refuse.
pub fn with_max_connections(settings: &[(String, String)], max: u32) -> Vec<(String, String)> {
    let position = settings
        .iter()
        .position(|(name, _)| name.eq_ignore_ascii_case("max_connections"));
    let mut raised = settings.to_vec();
    let value = ("max_connections".to_string(), max.to_string());
    match position.map(|i| (i, settings[i].1.trim().parse::<u32>())) {
        Some((i, Ok(n))) if n < max => raised[i] = value,
        None if max > DEFAULT_MAX_CONNECTIONS => {
            raised.push(value);
            raised.sort();
        }
        _ => {}
    }
    raised
}

/// The machine's limits that decide whether many connections can be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SystemLimits {
    /// `net.core.somaxconn`: the longest listen backlog.
    pub somaxconn: Option<u64>,
    /// `ulimit -n`: soft and hard limits on open files.
    pub open_files: Option<(u64, u64)>,
    /// `kernel.sem`: SEMMSL, SEMMNS, SEMOPM, SEMMNI.
    pub semaphores: Option<[u64; 4]>,
}

impl SystemLimits {
    /// Reads the limits of this process and this kernel (None where
    /// unreadable: the check then leaves that limit alone).
    pub fn read() -> SystemLimits {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        SystemLimits {
            somaxconn: read("/proc/sys/net/core/somaxconn").and_then(|t| t.trim().parse().ok()),
            open_files: open_files(),
            semaphores: read("/proc/sys/kernel/sem").and_then(|t| parse_sem(&t)),
        }
    }
}

fn parse_sem(text: &str) -> Option<[u64; 4]> {
    let numbers: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    numbers.try_into().ok()
}

fn open_files() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (status == 0).then_some((limit.rlim_cur, limit.rlim_max))
}

/// Raises this process's soft open-files limit to `wanted` (children,
/// pgbench among them, inherit it) when the hard limit allows.
pub fn raise_open_files(wanted: u64) -> bool {
    let Some((soft, hard)) = open_files() else {
        return false;
    };
    if soft >= wanted {
        return true;
    }
    if hard < wanted {
        return false;
    }
    let limit = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct we pass.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 }
}

/// A machine limit that makes connections fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error(
        "{clients} clients need about {needed} open files in pgbench, but `ulimit -n` is {soft} \
         (hard limit {hard}): raise it (`ulimit -n {needed}` in the shell that starts pgbisect, \
         or `nofile` in /etc/security/limits.conf) or run fewer clients"
    )]
    OpenFiles {
        clients: u32,
        needed: u64,
        soft: u64,
        hard: u64,
    },
    #[error(
        "{threads} pgbench threads connect at once, but the kernel's listen backlog \
         (net.core.somaxconn) is {somaxconn}: connects would fail with \"Resource temporarily \
         unavailable\"; raise it (`sysctl -w net.core.somaxconn={threads}`) or set fewer \
         `threads` in the profile's [benchmark]"
    )]
    Backlog { threads: u32, somaxconn: u64 },
    #[error(
        "a server with max_connections = {max_connections} needs {sets} System V semaphore sets \
         of 17 ({semaphores} semaphores) on PostgreSQL before 10, but kernel.sem allows \
         {semmni} sets and {semmns} semaphores: raise them (`sysctl -w kernel.sem=\"250 {want_semmns} 32 {want_semmni}\"`)"
    )]
    Semaphores {
        max_connections: u32,
        sets: u64,
        semaphores: u64,
        semmni: u64,
        semmns: u64,
        want_semmns: u64,
        want_semmni: u64,
    },
}

/// Open files pgbench needs for `clients` connections, with room for its
/// own files and the libraries'.
pub fn open_files_needed(clients: u32) -> u64 {
    u64::from(clients) + 64
}

/// Checks `limits` for a run of `clients` clients on `threads` pgbench
/// threads against a server with `max_connections`.
pub fn check_limits(
    limits: &SystemLimits,
    clients: u32,
    threads: u32,
    max_connections: u32,
) -> Result<(), LimitError> {
    let needed = open_files_needed(clients);
    if let Some((soft, hard)) = limits.open_files
        && soft < needed
    {
        return Err(LimitError::OpenFiles {
            clients,
            needed,
            soft,
            hard,
        });
    }
    // Each thread connects its clients one after another.
    if let Some(somaxconn) = limits.somaxconn
        && u64::from(threads) > somaxconn
    {
        return Err(LimitError::Backlog { threads, somaxconn });
    }
    if let Some([_, semmns, _, semmni]) = limits.semaphores {
        // 9.x: max_connections + autovacuum workers (3) + launcher (1) +
        // background workers (8) + auxiliary processes (4), 16 a set.
        let processes = u64::from(max_connections) + 3 + 1 + 8 + 4;
        let sets = processes.div_ceil(16);
        let semaphores = sets * 17;
        if semmni < sets || semmns < semaphores {
            return Err(LimitError::Semaphores {
                max_connections,
                sets,
                semaphores,
                semmni,
                semmns,
                want_semmns: semaphores.max(semmns) * 2,
                want_semmni: sets.max(semmni) * 2,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::settings as s;

    #[test]
    fn settings_given_the_decided_max_connections_are_those_for_workload_gives() {
        let profiles = [
            s(&[]),
            s(&[("shared_buffers", "128MB")]),
            s(&[("fsync", "off"), ("max_connections", "20")]),
            s(&[("MAX_CONNECTIONS", "200")]),
            s(&[("max_connections", "lots")]),
        ];
        for settings in &profiles {
            for clients in [1, 90, 91, 128, 500] {
                let (raised, max, _) = for_workload(settings, clients);
                assert_eq!(
                    with_max_connections(settings, max),
                    raised,
                    "{settings:?} at {clients} clients"
                );
            }
        }
    }

    #[test]
    fn the_default_max_connections_is_raised_for_128_clients() {
        let (settings, max, note) = for_workload(&s(&[("shared_buffers", "128MB")]), 128);
        assert_eq!(
            settings,
            s(&[("max_connections", "138"), ("shared_buffers", "128MB")])
        );
        assert_eq!(max, 138);
        let note = note.unwrap();
        assert!(
            note.contains("from 100 (the server's default) to 138"),
            "{note}"
        );
    }

    #[test]
    fn a_profile_max_connections_too_small_is_raised_in_place() {
        let smoke = s(&[("fsync", "off"), ("max_connections", "20")]);
        let (settings, max, note) = for_workload(&smoke, 128);
        assert_eq!(settings, s(&[("fsync", "off"), ("max_connections", "138")]));
        assert_eq!(max, 138);
        assert!(note.unwrap().contains("from 20 (the profile's)"));
    }

    #[test]
    fn enough_connections_are_left_alone() {
        let (settings, max, note) = for_workload(&s(&[("max_connections", "200")]), 128);
        assert_eq!(
            (settings, max, note),
            (s(&[("max_connections", "200")]), 200, None)
        );
        let (settings, max, note) = for_workload(&[], 1);
        assert_eq!((settings.len(), max, note), (0, 100, None));
        let (_, _, note) = for_workload(&[], 90);
        assert!(note.is_none(), "90 + 10 fits in 100");
        let (_, _, note) = for_workload(&[], 91);
        assert!(note.is_some());
    }

    fn roomy() -> SystemLimits {
        SystemLimits {
            somaxconn: Some(4096),
            open_files: Some((1024, 4096)),
            semaphores: Some([32000, 1024000000, 500, 32000]),
        }
    }

    #[test]
    fn a_roomy_machine_passes() {
        check_limits(&roomy(), 128, 2, 138).unwrap();
        check_limits(&SystemLimits::default(), 5000, 5000, 5010).unwrap();
    }

    #[test]
    fn too_few_open_files_names_ulimit() {
        let limits = SystemLimits {
            open_files: Some((256, 256)),
            ..roomy()
        };
        let err = check_limits(&limits, 512, 2, 522).unwrap_err();
        assert!(err.to_string().contains("ulimit -n 576"), "{err}");
    }

    #[test]
    fn a_short_backlog_names_somaxconn() {
        let limits = SystemLimits {
            somaxconn: Some(128),
            ..roomy()
        };
        check_limits(&limits, 256, 128, 266).unwrap();
        let err = check_limits(&limits, 256, 256, 266).unwrap_err();
        assert!(err.to_string().contains("net.core.somaxconn"), "{err}");
    }

    #[test]
    fn old_kernel_semaphores_are_checked() {
        let limits = SystemLimits {
            semaphores: Some([250, 256, 32, 8]),
            ..roomy()
        };
        // 138 + 16 processes: 10 sets, 170 semaphores.
        let err = check_limits(&limits, 128, 2, 138).unwrap_err();
        assert!(
            matches!(err, LimitError::Semaphores { sets: 10, .. }),
            "{err}"
        );
        check_limits(&limits, 10, 2, 100).unwrap();
    }

    #[test]
    fn kernel_sem_parses() {
        assert_eq!(
            parse_sem("32000\t1024000000\t500\t32000\n"),
            Some([32000, 1024000000, 500, 32000])
        );
        assert_eq!(parse_sem("1 2 3"), None);
    }

    #[test]
    fn this_process_limits_read() {
        let limits = SystemLimits::read();
        assert!(limits.open_files.is_some());
        assert!(raise_open_files(1));
    }
}
