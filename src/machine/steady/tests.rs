use super::*;

/// A fake root holding `files` (path relative to the root, content).
fn fake_root(files: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

fn stat_line(pid: u32, name: &str, ppid: u32, ticks: u64) -> String {
    format!("{pid} ({name}) R {ppid} 1 1 0 -1 4194304 100 0 0 0 {ticks} 0 0 0 20 0 1 0 100 0 0")
}

const QUIET: Activity = Activity {
    busy: Vec::new(),
    steal: None,
};

#[test]
fn a_tuned_quiet_machine_has_nothing_to_say() {
    let root = fake_root(&[
        ("proc/loadavg", "0.05 0.10 0.20 1/300 4242\n"),
        ("proc/meminfo", "SwapTotal: 1024 kB\nSwapFree: 1024 kB\n"),
        (
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        ),
        ("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n"),
        (
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always madvise [never]\n",
        ),
    ]);
    assert_eq!(findings(root.path(), 2, &QUIET, true), vec![]);
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(findings(empty.path(), 2, &QUIET, true), vec![]);
}

#[test]
fn an_untuned_busy_machine_gets_a_command_for_each_problem() {
    let root = fake_root(&[
        ("proc/loadavg", "3.52 2.10 1.20 4/300 4242\n"),
        (
            "proc/meminfo",
            "SwapTotal: 2097152 kB\nSwapFree: 2000000 kB\n",
        ),
        (
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "powersave\n",
        ),
        (
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "powersave\n",
        ),
        (
            "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor",
            "performance\n",
        ),
        ("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n"),
        (
            "sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        ),
    ]);
    let seen = Activity {
        busy: vec![("rustc".into(), 0.93), ("cc1".into(), 0.4)],
        steal: Some(0.07),
    };
    let found = findings(root.path(), 4, &seen, true);
    let whats: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
    assert_eq!(
        whats,
        [
            "load average 3.52 on 4 CPUs before the hunt",
            "other processes use the CPUs: rustc 93%, cc1 40%",
            "the hypervisor took 7% of the CPU time (steal)",
            "CPU frequency governor powersave on CPUs 0-1",
            "turbo boost on (intel_pstate)",
            "transparent huge pages: always (khugepaged compacts memory under the runs)",
            "95 MiB of swap in use",
        ]
    );
    assert_eq!(found[3].advice, "cpupower frequency-set -g performance");
    // During the hunt the load average counts our own runs.
    let during = findings(root.path(), 4, &seen, false);
    assert!(!during.iter().any(|f| f.what.starts_with("load average")));
}

#[test]
fn amd_boost_is_named_when_intel_pstate_is_absent() {
    let root = fake_root(&[("sys/devices/system/cpu/cpufreq/boost", "1\n")]);
    let found = findings(root.path(), 2, &QUIET, false);
    assert_eq!(
        found[0].advice,
        "echo 0 > /sys/devices/system/cpu/cpufreq/boost"
    );
}

#[test]
fn proc_stat_names_may_hold_spaces_and_parentheses() {
    let line = stat_line(42, "tmux: server (1)", 1, 250);
    let p = parse_proc_stat(42, &line).unwrap();
    assert_eq!(
        (p.pid, p.ppid, p.name.as_str(), p.ticks),
        (42, 1, "tmux: server (1)", 250)
    );
    assert_eq!(parse_proc_stat(1, "garbage"), None);
    let cpu = parse_cpu_line("cpu  100 0 50 800 0 0 0 50 0 0\ncpu0 1 2 3\n").unwrap();
    assert_eq!((cpu.total, cpu.steal), (1000, 50));
}

#[test]
fn busy_processes_leave_out_pgbisect_and_what_it_started() {
    let root = fake_root(&[]);
    let write = |ticks: [u64; 4]| {
        let procs = [
            (100, "pgbisect", 1),
            (101, "postgres", 100),
            (200, "rustc", 1),
            (300, "sshd", 1),
        ];
        for ((pid, name, ppid), t) in procs.into_iter().zip(ticks) {
            let path = root.path().join(format!("proc/{pid}/stat"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, stat_line(pid, name, ppid, t)).unwrap();
        }
        let steal = ticks[0] / 10;
        std::fs::write(
            root.path().join("proc/stat"),
            format!("cpu  {} 0 0 {} 0 0 0 {steal} 0 0\n", ticks[0], 1000 - steal),
        )
        .unwrap();
    };
    write([0, 0, 0, 0]);
    let before = sample(root.path());
    write([100, 100, 90, 1]);
    let after = sample(root.path());
    assert_eq!(after.procs.len(), 4);
    let seen = activity(&before, &after, 1.0, 100.0, 100);
    assert_eq!(seen.busy, vec![("rustc".to_string(), 0.9)]);
    let steal = seen.steal.unwrap();
    assert!((steal - 0.1).abs() < 1e-9, "{steal}");
}

/// The real machine answers without error and in about the window.
#[test]
fn checks_the_running_machine() {
    let started = std::time::Instant::now();
    let found = check(2, Duration::from_millis(200), true);
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(found.iter().all(|f| !f.advice.is_empty()), "{found:?}");
}

#[test]
fn a_watch_keeps_each_advice_once_and_checks_when_due() {
    let watch = Watch::default();
    let a = Finding::new("load 3", "stop it");
    let a_again = Finding::new("load 4", "stop it");
    let b = Finding::new("swap", "swapoff");
    assert_eq!(watch.record(vec![a.clone()]), vec![a.clone()]);
    assert_eq!(watch.record(vec![a_again, b.clone()]), vec![b.clone()]);
    assert_eq!(watch.seen(), vec![a, b]);
    assert!(watch.due(Duration::from_secs(600)));
    assert!(!watch.due(Duration::from_secs(600)));
    assert!(watch.due(Duration::ZERO));
    assert!(describe(&watch.seen()[1]).contains("to fix: swapoff"));
}
