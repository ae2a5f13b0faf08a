//! Private servers, data templates and pgbench runs against a real
//! PostgreSQL (`PGBISECT_TEST_PG_BIN`, default the Debian PostgreSQL 15
//! binaries). As root, everything PostgreSQL runs as user `postgres`.

use crate::common;

use common::pg::{select_only_s1, server_work_dir};
use common::pg_bin;
use pgbisect::bench::{self, PgbenchOptions};
use pgbisect::lab::pg::RunPlan;
use pgbisect::lab::pg::host::{REQUEST_ENV, Request};
use pgbisect::placement::{CpuSet, Pin, pin};
use pgbisect::server::waits::Sampling;
use pgbisect::server::{
    BenchError, DataTemplate, RunAs, RunningServer, Server, ServerError, SocketDir, SystemLimits,
    apply_settings, check_limits, for_workload, fresh_copy, open_files_needed, raise_open_files,
    reap_leftovers, shares_blocks, time_limit,
};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn template(bin: &Path, work: &Path, run_as: &RunAs) -> (DataTemplate, bool) {
    let spec = common::pg::template_spec(bin, work, "pg15-s1", select_only_s1(), run_as);
    DataTemplate::ensure(&spec).unwrap()
}

/// A server description on a fresh copy of a new template in `work`.
fn server_on_copy(
    bin: &Path,
    work: &Path,
    sockets: &SocketDir,
    settings: &[(&str, &str)],
) -> Server {
    let run_as = RunAs::resolve(None).unwrap();
    let (template, _) = template(bin, work, &run_as);
    common::pg::server_on_copy(
        bin,
        &template,
        work,
        "run",
        sockets.path(),
        &run_as,
        settings,
    )
}

fn uid_of(run_as: &RunAs) -> u32 {
    match run_as {
        RunAs::User { uid, .. } => *uid,
        RunAs::CurrentUser => std::fs::metadata("/proc/self").unwrap().uid(),
    }
}

fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
}

fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

fn registry_entries(work: &Path) -> usize {
    std::fs::read_dir(work.join("servers"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn template_is_built_once_and_copied_fresh() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let run_as = RunAs::resolve(None).unwrap();
    let (made, built) = template(&bin, work.path(), &run_as);
    assert!(built);
    assert!(made.data_dir().join("PG_VERSION").is_file());
    assert_eq!(
        registry_entries(work.path()),
        0,
        "the template's server was stopped and forgotten"
    );

    let started = Instant::now();
    let (again, built) = template(&bin, work.path(), &run_as);
    assert!(!built && again == made);
    assert!(started.elapsed() < Duration::from_millis(100));

    let dest = work.path().join("copies/one");
    let took = fresh_copy(&made, &dest).unwrap();
    eprintln!("fresh copy took {took:?}");
    assert!(took < Duration::from_secs(10));
    let owner = std::fs::metadata(dest.join("PG_VERSION")).unwrap().uid();
    assert_eq!(
        owner,
        uid_of(&run_as),
        "the copy belongs to the server's user"
    );
    std::fs::write(dest.join("scribble"), "left by a run").unwrap();
    fresh_copy(&made, &dest).unwrap();
    assert!(!dest.join("scribble").exists(), "every copy is fresh");
    let not_data = work.path().join("copies/not-data");
    std::fs::create_dir_all(&not_data).unwrap();
    assert!(matches!(
        fresh_copy(&made, &not_data),
        Err(ServerError::BadDataDir { .. })
    ));

    // A template without its marker is half-made: redone.
    std::fs::remove_file(made.dir().join("template-complete.json")).unwrap();
    std::fs::write(made.data_dir().join("half-made"), "").unwrap();
    let (_, built) = template(&bin, work.path(), &run_as);
    assert!(built && !made.data_dir().join("half-made").exists());
}

#[test]
fn server_applies_settings_runs_as_user_and_stops_on_drop() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let sockets = SocketDir::create(&RunAs::resolve(None).unwrap()).unwrap();
    let spec = server_on_copy(
        &bin,
        work.path(),
        &sockets,
        &[("shared_buffers", "48MB"), ("work_mem", "5 MB")],
    );

    let mut bad = spec.clone();
    bad.settings
        .push(("no_such_setting_here".to_string(), "1".to_string()));
    let err = bad.start().unwrap_err();
    let ServerError::StartFailed { log_tail, .. } = &err else {
        panic!("{err}")
    };
    assert!(log_tail.contains("no_such_setting_here"), "{err}");

    let server = spec.clone().start().unwrap();
    assert_eq!(server.psql("SHOW shared_buffers").unwrap(), "48MB");
    assert_eq!(server.psql("SHOW work_mem").unwrap(), "5MB");
    assert_eq!(
        server.psql("SHOW listen_addresses").unwrap(),
        "",
        "no TCP listener"
    );
    let postmaster_uid = std::fs::metadata(format!("/proc/{}", server.pid()))
        .unwrap()
        .uid();
    assert_eq!(postmaster_uid, uid_of(&spec.run_as));
    assert_eq!(registry_entries(work.path()), 1);

    let pid = server.pid();
    let socket = sockets.path().join(format!(".s.PGSQL.{}", server.port()));
    assert!(socket.exists());
    drop(server);
    assert!(!alive(pid), "stopped on drop");
    assert!(!socket.exists());
    assert_eq!(registry_entries(work.path()), 0);
}

/// The CPUs a process may run on, from its /proc status.
fn allowed_cpus_of(pid: u32) -> Option<CpuSet> {
    pin::allowed_cpus(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

#[test]
fn a_pinned_server_and_its_backends_run_on_the_cpus_named() {
    let Some(bin) = pg_bin() else { return };
    let Some(mine) = common::require(
        pin::current_affinity(),
        "this process's CPU affinity",
        "a Linux /proc/self/status with Cpus_allowed_list",
    ) else {
        return;
    };
    let cpu = mine.highest(1);
    let work = server_work_dir();
    let sockets = SocketDir::create(&RunAs::resolve(None).unwrap()).unwrap();
    let mut server = server_on_copy(&bin, work.path(), &sockets, &[]);
    server.pin = Pin::new(Some(cpu.clone()), None);
    let server = server.start().unwrap();
    assert_eq!(allowed_cpus_of(server.pid()), Some(cpu.clone()));
    // The background processes were forked by the postmaster, as backends are.
    let children: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid: &u32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after_name.split_whitespace().nth(1) == Some(&server.pid().to_string())
        })
        .collect();
    assert!(!children.is_empty());
    for child in children {
        assert_eq!(allowed_cpus_of(child), Some(cpu.clone()), "pid {child}");
    }
    let backend: u32 = server
        .psql("SELECT pg_backend_pid()")
        .unwrap()
        .parse()
        .unwrap();
    assert!(backend > 0);
}

#[test]
fn unknown_setting_is_named_with_the_version() {
    let Some(bin) = pg_bin() else { return };
    let run_as = RunAs::resolve(None).unwrap();
    let known = [
        ("shared_buffers".to_string(), "1GB".to_string()),
        ("DateStyle".to_string(), "ISO".to_string()),
    ];
    let applied = apply_settings(&bin, &run_as, &known).unwrap();
    assert_eq!(applied.settings, known.to_vec());
    let mut settings = known.to_vec();
    settings.push(("chekpoint_segments".to_string(), "64".to_string()));
    settings.push(("pg_stat_statements.max".to_string(), "100".to_string()));
    let err = apply_settings(&bin, &run_as, &settings).unwrap_err();
    let ServerError::UnknownSetting { name, version } = &err else {
        panic!("{err}")
    };
    assert_eq!(name, "chekpoint_segments");
    assert!(version.starts_with("15"), "{version}");
    assert!(err.to_string().contains("chekpoint_segments"));
}

/// A 9.4-era profile (checkpoint_segments, the smoke profile's 20
/// connections) drives 128 clients on PostgreSQL 15: the setting is
/// translated, max_connections follows the clients, and pgbench's
/// threads follow the CPUs.
#[test]
fn old_settings_and_128_clients_run_on_a_current_server() {
    let Some(bin) = pg_bin() else { return };
    let run_as = RunAs::resolve(None).unwrap();
    let profile = [
        ("checkpoint_segments".to_string(), "64".to_string()),
        ("max_connections".to_string(), "20".to_string()),
        (
            "stats_temp_directory".to_string(),
            "pg_stat_tmp".to_string(),
        ),
    ];
    let applied = apply_settings(&bin, &run_as, &profile).unwrap();
    let (settings, max_connections, raised) = for_workload(&applied.settings, 128);
    assert!(raised.is_some());
    assert_eq!(
        settings,
        vec![
            ("max_wal_size".to_string(), "3072MB".to_string()),
            ("max_connections".to_string(), "138".to_string()),
        ]
    );
    let options = PgbenchOptions {
        cpus: Some(2),
        duration_secs: 2,
        ..select_only_s1()
    };
    let threads = options.threads_for(128);
    assert_eq!(threads, 2);
    assert!(raise_open_files(open_files_needed(128)));
    check_limits(&SystemLimits::read(), 128, threads, max_connections).unwrap();
    let work = server_work_dir();
    let sockets = SocketDir::create(&run_as).unwrap();
    let borrowed: Vec<(&str, &str)> = settings
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let server = server_on_copy(&bin, work.path(), &sockets, &borrowed)
        .start()
        .unwrap();
    assert_eq!(server.psql("SHOW max_wal_size").unwrap(), "3GB");
    assert_eq!(server.psql("SHOW max_connections").unwrap(), "138");
    let args = bench::run_args(&options, 128, 2, &server.conn("postgres"));
    let out = work.path().join("pgbench-128.txt");
    let report = server
        .run_pgbench(
            &bin.join("pgbench"),
            &args,
            &Pin::none(),
            &out,
            time_limit(2),
        )
        .unwrap();
    assert!(report.tps > 0.0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("number of clients: 128"), "{text}");
    assert!(text.contains("number of threads: 2"), "{text}");
}

#[test]
fn pgbench_select_only_run_is_parsed() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let sockets = SocketDir::create(&RunAs::resolve(None).unwrap()).unwrap();
    let server = server_on_copy(&bin, work.path(), &sockets, &[])
        .start()
        .unwrap();
    let opts = select_only_s1();
    let args = bench::run_args(&opts, 2, 2, &server.conn("postgres"));
    let output = work.path().join("run-1.txt");
    let report = server
        .run_pgbench(
            &bin.join("pgbench"),
            &args,
            &Pin::none(),
            &output,
            time_limit(2),
        )
        .unwrap();
    assert!(report.tps > 100.0, "{report:?}");
    assert!(report.transactions.unwrap() > 0);
    assert_eq!(report.failed_transactions, Some(0));
    assert!(report.latency_ms.unwrap() > 0.0);
    let kept = std::fs::read_to_string(&output).unwrap();
    assert!(kept.starts_with("$ ") && kept.contains("-M prepared -S") && kept.contains("tps = "));

    // A run that cannot connect is an error naming the command, not a panic.
    let mut wrong = server.conn("postgres");
    wrong.port = wrong.port.wrapping_add(1);
    let err = server
        .run_pgbench(
            &bin.join("pgbench"),
            &bench::run_args(&opts, 1, 1, &wrong),
            &Pin::none(),
            &output,
            time_limit(1),
        )
        .unwrap_err();
    let BenchError::Failed { command, tail, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        command.contains("pgbench") && tail.contains("connect"),
        "{err}"
    );
}

#[test]
fn crashed_server_gives_an_error_with_the_log_tail() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let sockets = SocketDir::create(&RunAs::resolve(None).unwrap()).unwrap();
    let server: RunningServer = server_on_copy(&bin, work.path(), &sockets, &[])
        .start()
        .unwrap();
    let pid = server.pid();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling our own test server's postmaster.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    });
    let args = bench::run_args(&select_only_s1(), 1, 5, &server.conn("postgres"));
    let result = server.run_pgbench(
        &bin.join("pgbench"),
        &args,
        &Pin::none(),
        &work.path().join("crash.txt"),
        time_limit(5),
    );
    killer.join().unwrap();
    let err = result.unwrap_err();
    let BenchError::ServerCrashed {
        detail, log_tail, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert!(detail.contains("gone"), "{err}");
    assert!(log_tail.contains("ready to accept connections"), "{err}");
    assert!(!server.is_alive());
    drop(server);
}

#[test]
fn reap_stops_servers_a_dead_run_left_behind() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let sockets = SocketDir::create(&RunAs::resolve(None).unwrap()).unwrap();
    let server = server_on_copy(&bin, work.path(), &sockets, &[])
        .start()
        .unwrap();
    let pid = server.pid();
    std::mem::forget(server);
    assert!(alive(pid));
    assert_eq!(registry_entries(work.path()), 1);
    assert_eq!(reap_leftovers(&work.path().join("servers")).unwrap(), 1);
    assert!(wait_gone(pid));
    assert_eq!(registry_entries(work.path()), 0);
    assert_eq!(reap_leftovers(&work.path().join("servers")).unwrap(), 0);
}

/// The request of a `pgbisect host-run` whose run lasts two minutes: a
/// process that starts a server of its own (registered in `work`'s
/// registry) and is killed while it runs.
fn long_run_request(bin: &Path, work: &Path) -> String {
    let plan = RunPlan {
        commit: "pg15".into(),
        bin: bin.to_path_buf(),
        pgbench: bin.join("pgbench"),
        template: "pg15-s1".into(),
        options: PgbenchOptions {
            warmup_runs: 0,
            ..select_only_s1()
        },
        settings: Vec::new(),
        max_connections: 100,
        clients: 1,
        run: 1,
        seconds: Some(120),
        label: String::new(),
    };
    let request = Request {
        lab: work.to_path_buf(),
        run_as: None,
        placement: Default::default(),
        script: None,
        programs: Vec::new(),
        plan: Some(plan),
    };
    serde_json::to_string(&request).unwrap()
}

/// The postmaster of the run's server (on `work/data`, not the one that
/// made the template) once the registry lists it.
fn run_server_pid(work: &Path) -> Option<u32> {
    let entries = std::fs::read_dir(work.join("servers")).ok()?;
    entries.flatten().find_map(|e| {
        let entry: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
        let data_dir = PathBuf::from(entry["data_dir"].as_str()?);
        data_dir.starts_with(work.join("data")).then_some(())?;
        u32::try_from(entry["postmaster_pid"].as_u64()?).ok()
    })
}

/// The name and parent of process `pid`, from `/proc/PID/stat`.
fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
    let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
    Some((name.to_string(), ppid))
}

/// Whether a `pgbench` started by `ancestor` (or by its children) runs.
fn pgbench_runs_under(ancestor: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        let Some((name, mut parent)) = name_and_parent(pid) else {
            return false;
        };
        while name == "pgbench" && parent > 1 {
            if parent == ancestor {
                return true;
            }
            parent = name_and_parent(parent).map_or(0, |(_, p)| p);
        }
        false
    })
}

/// What the work dir holds, for a failure's message: the files' names and
/// the tails of the logs.
fn work_dir_story(work: &Path) -> String {
    let mut story = String::new();
    for entry in walk(work) {
        story.push_str(&format!("{}\n", entry.display()));
        if entry
            .extension()
            .is_some_and(|e| e == "log" || e == "out" || e == "txt")
        {
            let text = std::fs::read_to_string(&entry).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            for line in tail.into_iter().rev() {
                story.push_str(&format!("    {line}\n"));
            }
        }
    }
    story
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() && !path.ends_with("data") && !path.ends_with("current") {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn reap_stops_servers_of_a_killed_process() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    // pgbisect itself, as a hunt starts it on a host: it makes the
    // template, starts the run's server and runs pgbench for two minutes.
    let stderr = std::fs::File::create(work.path().join("host-run.out")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pgbisect"))
        .arg("host-run")
        .env(REQUEST_ENV, long_run_request(&bin, work.path()))
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    // Killed once pgbench runs against the server: before that the server
    // may still be stopped by pgbisect itself (a run that failed).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut pid = None;
    while pid.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        pid = run_server_pid(work.path()).filter(|_| pgbench_runs_under(child.id()));
    }
    child.kill().unwrap(); // SIGKILL: the child's servers are not stopped
    child.wait().unwrap();
    let story = work_dir_story(work.path());
    let pid = pid.unwrap_or_else(|| {
        panic!("pgbisect host-run ran no pgbench on a registered server in two minutes:\n{story}")
    });
    assert!(
        alive(pid),
        "the killed process left its server running:\n{story}"
    );
    let reaped = reap_leftovers(&work.path().join("servers")).unwrap();
    assert_eq!(reaped, 1, "the server was not reaped:\n{story}");
    assert!(wait_gone(pid));
    assert_eq!(registry_entries(work.path()), 0);
}

#[test]
fn shared_block_copies_are_detected_without_leaving_files() {
    let dir = tempfile::tempdir().unwrap();
    let shares = shares_blocks(dir.path());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(!shares_blocks(&dir.path().join("missing")));
    // ext4 and tmpfs have no reflinks; XFS may or may not (reflink=1).
    let fs_type = std::process::Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir.path())
        .output()
        .unwrap();
    let fs_type = String::from_utf8_lossy(&fs_type.stdout).trim().to_string();
    if fs_type == "ext2/ext3" || fs_type == "tmpfs" {
        assert!(!shares, "{fs_type}");
    }
    if fs_type == "btrfs" {
        assert!(shares, "{fs_type}");
    }
}

/// A started server, and the prefix of a transaction log in a folder
/// pgbench's user may write.
fn server_with_log_folder(bin: &Path) -> (tempfile::TempDir, SocketDir, RunningServer, PathBuf) {
    let work = server_work_dir();
    let run_as = RunAs::resolve(None).unwrap();
    let sockets = SocketDir::create(&run_as).unwrap();
    let server = server_on_copy(bin, work.path(), &sockets, &[])
        .start()
        .unwrap();
    let logs = work.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    run_as.hand_over(&logs).unwrap();
    (work, sockets, server, logs.join("1"))
}

#[test]
fn an_instrumented_run_gives_statements_percentiles_and_wait_events() {
    let Some(bin) = pg_bin() else { return };
    let (work, _sockets, server, prefix) = server_with_log_folder(&bin);
    let mut args = bench::run_args(&select_only_s1(), 2, 3, &server.conn("postgres"));
    let db = args.pop().unwrap();
    args.extend(bench::instruments::args(Some(&prefix)));
    args.push(db);
    let sampling = server
        .sample_wait_events(&work.path().join("waits.txt"))
        .unwrap();
    let Sampling::Started(sampler) = sampling else {
        panic!("PostgreSQL 15 has wait events")
    };
    let output = work.path().join("run.txt");
    let report = server
        .run_pgbench(
            &bin.join("pgbench"),
            &args,
            &Pin::none(),
            &output,
            time_limit(3),
        )
        .unwrap();
    let started = Instant::now();
    let waits = sampler.finish().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "psql stops on SIGINT"
    );
    let samples: u64 = waits.values().sum();
    // Two client backends, sampled every 0.1 s for 3 s: about 60 rows.
    assert!(samples >= 20, "{waits:?}");
    assert!(
        waits
            .keys()
            .all(|k| k == "CPU" || k.contains(':') || k.starts_with("idle")),
        "{waits:?}"
    );
    let statements =
        bench::instruments::statement_latencies(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(statements.len(), 2, "{statements:?}");
    assert!(statements[1].statement.starts_with("SELECT abalance"));
    assert!(statements[1].ms > 0.0);
    let files = bench::instruments::log_files(&prefix);
    assert_eq!(files.len(), 2, "one log per pgbench thread: {files:?}");
    let p = bench::instruments::log_percentiles(&files)
        .unwrap()
        .unwrap();
    // pgbench's log gives a latency of 0 us to a share of select-only
    // transactions at 100K+ a second (12% of a 2-client run measured by
    // hand here, over half in this test on a loaded 2-CPU machine): only
    // the tail must be above 0.
    assert!(
        p.p99_ms > 0.0 && p.p50_ms <= p.p95_ms && p.p95_ms <= p.p99_ms,
        "{p:?}"
    );
    // The log holds every transaction pgbench counted.
    assert_eq!(Some(p.transactions), report.transactions);
}

#[test]
fn a_sampled_transaction_log_holds_about_its_share_of_the_transactions() {
    let Some(bin) = pg_bin() else { return };
    let (work, _sockets, server, prefix) = server_with_log_folder(&bin);
    let mut args = bench::run_args(&select_only_s1(), 1, 3, &server.conn("postgres"));
    let db = args.pop().unwrap();
    args.extend(bench::instruments::sampled_log_args(&prefix, 0.1));
    args.push(db);
    let output = work.path().join("run.txt");
    let report = server
        .run_pgbench(
            &bin.join("pgbench"),
            &args,
            &Pin::none(),
            &output,
            time_limit(3),
        )
        .unwrap();
    let files = bench::instruments::log_files(&prefix);
    let p = bench::instruments::log_percentiles(&files)
        .unwrap()
        .expect("logged transactions");
    assert!(files.iter().all(|f| !f.exists()), "the log is removed");
    let all = report
        .transactions
        .expect("pgbench counts its transactions") as f64;
    let share = p.transactions as f64 / all;
    // Thousands of transactions, each logged with probability 0.1.
    assert!(all > 1000.0, "{all}");
    assert!((0.07..0.13).contains(&share), "{} of {all}", p.transactions);
    assert!(
        p.p50_ms <= p.p95_ms && p.p95_ms <= p.p99_ms && p.p99_ms > 0.0,
        "{p:?}"
    );
}
