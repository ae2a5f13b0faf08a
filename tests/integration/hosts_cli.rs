//! Hunts measured on other hosts, through the real back ends: sshd on
//! localhost under several names (`PGBISECT_TEST_SSH_HOSTS`, their ssh
//! config in `PGBISECT_TEST_SSH_CONFIG`) and a single-node Slurm cluster
//! (`PGBISECT_TEST_SLURM_NODE`, `PGBISECT_TEST_SLURM_PARTITION`), as
//! `scripts/hosts-setup.sh` sets them up and `scripts/test.sh` exports
//! them (with `CI=true` or `PGBISECT_HOST_TESTS=1`). Without them the
//! tests say they are skipped, and fail under CI.
//!
//! Each hunt must name the right culprit and count every run once, also
//! when a job is killed mid-run, a host goes away, or the coordinator is
//! killed (SIGKILL) and the hunt resumed.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The ssh host names and their config file, or `None` (skipped).
fn ssh_setup() -> Option<(Vec<String>, PathBuf)> {
    const HOW: &str = "scripts/hosts-setup.sh sets them up, as root: \
                       PGBISECT_HOST_TESTS=1 scripts/test.sh";
    let hosts = require_env("PGBISECT_TEST_SSH_HOSTS", HOW)?;
    let config = require_env("PGBISECT_TEST_SSH_CONFIG", HOW)?;
    Some((
        hosts.split(',').map(str::to_string).collect(),
        config.into(),
    ))
}

/// The ssh config `config` with connections shared (`ControlMaster`),
/// their sockets in `dir`: a test opens a connection to a host once, not
/// for every command (each connect costs a second here under load). A
/// host whose address changes gets a connection of its own.
fn muxed(config: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(config).unwrap();
    let path = dir.join("ssh_config.mux");
    let shared = format!(
        "{text}\nHost *\n    ControlMaster auto\n    ControlPath {}/mux-%n-%p\n    \
         ControlPersist 30\n",
        dir.display()
    );
    std::fs::write(&path, shared).unwrap();
    path
}

/// The Slurm node and partition, or `None` (skipped).
fn slurm_setup() -> Option<(String, String)> {
    const HOW: &str = "scripts/hosts-setup.sh sets it up, as root: \
                       PGBISECT_HOST_TESTS=1 scripts/test.sh";
    let node = require_env("PGBISECT_TEST_SLURM_NODE", HOW)?;
    let partition = require_env("PGBISECT_TEST_SLURM_PARTITION", HOW)?;
    Some((node, partition))
}

fn toml_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!("[{}]", quoted.join(", "))
}

/// The test profile with `before` run ahead of each benchmark and
/// `hosts` (a `[hosts]` section) appended.
fn hosts_profile(dir: &Path, before: &str, hosts: &str) -> PathBuf {
    let path = profile_with(dir, "hosts.toml", before);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(hosts);
    std::fs::write(&path, text).unwrap();
    path
}

/// `[hosts]` for ssh `hosts`, their files under `dir/hosts`, reached with
/// the ssh config `config`.
fn ssh_section(hosts: &[String], dir: &Path, config: &Path) -> String {
    format!(
        "[hosts]\nssh = {}\ndir = \"{}\"\nssh-config = \"{}\"\n",
        toml_list(hosts),
        dir.join("hosts").display(),
        config.display()
    )
}

fn slurm_section(node: &str, partition: &str) -> String {
    format!("[hosts]\nnodes = [\"{node}\"]\npartition = \"{partition}\"\n")
}

/// A hunt of good..bad with `profile` in `work`, waiting for its end.
fn hunt(repo: &Path, work: &Path, profile: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--good", "good", "--bad", "bad", "--no-why", "--profile"];
    args.push(profile.to_str().unwrap());
    args.extend(extra);
    pgbisect(repo, work, &args)
}

/// The same hunt started in the background, its stderr in [`log`].
fn start(repo: &Path, work: &Path, profile: &Path, extra: &[&str]) -> Child {
    let stderr = std::fs::File::create(log(work)).unwrap();
    bin()
        .arg("--repo")
        .arg(repo)
        .arg("--work-dir")
        .arg(work)
        .args(["--good", "good", "--bad", "bad", "--no-why", "--profile"])
        .arg(profile)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Where [`start`] keeps the stderr of a hunt in `work`.
fn log(work: &Path) -> PathBuf {
    work.with_extension("log")
}

/// Waits for the hunt `child` in `work` to end with `code`.
fn ends_with(mut child: Child, work: &Path, code: i32) {
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(log(work)).unwrap_or_default();
    assert_eq!(status.code(), Some(code), "{said}");
}

/// Waits (at most three minutes) until `found` gives something.
fn wait_for<T>(what: &str, found: impl FnMut() -> Option<T>) -> T {
    wait_within(what, Duration::from_secs(180), found)
}

/// Waits (at most `limit`) until `found` gives something.
fn wait_within<T>(what: &str, limit: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(t) = found() {
            return t;
        }
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The result and the journaled runs of the finished hunt in `work`,
/// checked: the culprit is `culprit`, every journaled run has its own
/// number.
fn finished(work: &Path, culprit: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let hunt_dir = only_hunt_dir(work);
    let v = json(&hunt_dir.join("result.json"));
    assert_eq!(v["culprits"][0]["commit"], culprit, "{v:#}");
    let journal = std::fs::read_to_string(hunt_dir.join("journal.jsonl")).unwrap();
    let runs: Vec<serde_json::Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "run")
        .collect();
    let numbers = journaled_runs(work);
    assert_eq!(numbers.len(), runs.len(), "a run number journaled twice");
    (v, runs)
}

/// Checks the finished hunt in `work` as [`finished`] does, and that
/// every run is counted once in the totals; the failed runs' reasons.
fn check_hunt(work: &Path, culprit: &str) -> Vec<String> {
    let (v, runs) = finished(work, culprit);
    let counted = v["totals"]["runs"].as_u64().unwrap() as usize;
    assert!(
        counted <= runs.len() && counted + 1 >= runs.len(),
        "{counted} runs counted, {} journaled",
        runs.len()
    );
    runs.iter()
        .filter_map(|r| {
            r["outcome"]["Failed"]["reason"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// The pid files of jobs running on the ssh hosts under `dir/hosts`.
fn pid_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(hosts) = std::fs::read_dir(dir.join("hosts")) else {
        return Vec::new();
    };
    hosts
        .filter_map(Result::ok)
        .filter_map(|h| std::fs::read_dir(h.path().join("pids")).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| !t.trim().is_empty()))
        .collect()
}

/// The pid file of the job on a host that hangs in the profile's
/// `sleep 300`, and the job's pid: the job whose session (the job starts
/// one, `setsid`) holds that sleep; another host's run of the same round
/// may be running too.
fn hanging_job(dir: &Path) -> Option<(PathBuf, String)> {
    let sleeping_sessions: Vec<String> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x00300\x00"))
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace().nth(3).map(str::to_string)
        })
        .collect();
    pid_files(dir).into_iter().find_map(|file| {
        let pid = std::fs::read_to_string(&file).ok()?.trim().to_string();
        sleeping_sessions.contains(&pid).then_some((file, pid))
    })
}

/// Whether process `pid` runs: a zombie does not (this machine's first
/// process reaps orphans seconds late).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        state.is_some_and(|s| !s.starts_with(['Z', 'X']))
    })
}

/// Kills (SIGKILL) the job script on a host around the job that wrote
/// `pidfile`: the shell that ssh started, whose command line sets the job's
/// name before it starts the job. Left alone, it would see its job end and
/// sweep away what the job left, the server among it.
fn kill_job_script(pidfile: &Path) {
    let name = pidfile.file_stem().unwrap().to_string_lossy();
    let mark = format!("PGBISECT_JOB={name} setsid");
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if pid.parse::<u32>().is_err() || pid == std::process::id().to_string() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&mark) {
            let _ = Command::new("kill").args(["-s", "KILL", &pid]).status();
        }
    }
}

/// `out`, a second start after its coordinator was killed, ended well and
/// stopped the job `pid` the first start left on a host, saying so.
fn left_job_was_stopped(out: &std::process::Output, pid: &str, what: &str) {
    assert_code(out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "stopped what an earlier start of this {what} left running"
        )) && stderr.contains(&format!("(process group {})", pid.trim())),
        "{stderr}"
    );
    assert!(!alive(pid), "the left job {pid} still runs");
}

#[test]
fn an_ssh_hunt_finds_the_culprit_on_three_hosts() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(16, 11), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    let profile = hosts_profile(
        tmp.path(),
        "true",
        &ssh_section(&hosts, tmp.path(), &config),
    );
    let work = tmp.path().join("w");
    let out = hunt(repo.path(), &work, &profile, &[]);
    assert_code(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(ssh):"), "{stderr}");
    let failed = check_hunt(&work, &shas[11]);
    assert!(failed.is_empty(), "{failed:?}");
    // Each tested commit was sent once to each host; the hosts were given
    // back.
    let hunt_dir = only_hunt_dir(&work);
    let v = json(&hunt_dir.join("result.json"));
    let tested = v["tested"].as_array().unwrap().len();
    for host in &hosts {
        let on = tmp.path().join("hosts").join(host);
        let installs = std::fs::read_dir(on.join("installs")).unwrap().count();
        assert!(
            installs <= tested && installs >= 2,
            "{host}: {installs} installs"
        );
        assert!(!on.join("lock").exists(), "{host} is still locked");
    }
    // Runs were made on every host.
    let runs = std::fs::read_dir(hunt_dir.join("runs")).unwrap().count();
    assert!(runs >= hosts.len(), "{runs} runs");
}

#[test]
fn an_ssh_job_killed_mid_run_is_a_failed_run_and_a_host_that_goes_away_too() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(16, 11), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    // A host of its own, `flaky`, whose port the test closes mid-hunt.
    let real = std::fs::read_to_string(&config).unwrap();
    let first = real.lines().next().unwrap().to_string();
    let with_flaky = real.replacen(&first, &format!("{first} flaky"), 1);
    let own_config = tmp.path().join("ssh_config");
    std::fs::write(&own_config, &with_flaky).unwrap();
    let chosen = vec![hosts[0].clone(), "flaky".to_string()];
    // Run 3 hangs until it is killed; every run takes a moment and says
    // where it ran.
    let before =
        r#"echo on $PGBISECT_HOST && sleep 0.3 && { test \"$PGBISECT_RUN\" != 3 || sleep 120; }"#;
    let profile = hosts_profile(
        tmp.path(),
        before,
        &ssh_section(&chosen, tmp.path(), &own_config),
    );
    let work = tmp.path().join("w");
    let child = start(repo.path(), &work, &profile, &[]);
    let pidfile = wait_for("run 3 on a host", || {
        pid_files(tmp.path())
            .into_iter()
            .find(|p| p.to_string_lossy().ends_with("-3.pid"))
    });
    let host = pidfile
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .file_name()
        .unwrap();
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let killed = Command::new("ssh")
        .args(["-F", own_config.to_str().unwrap(), "-o", "BatchMode=yes"])
        .arg(host)
        .arg(format!("kill -TERM -{}", pid.trim()))
        .status()
        .unwrap();
    assert!(killed.success());
    // Then `flaky` goes away: its port is closed from now on.
    wait_for("more runs", || {
        (journaled_runs(&work).len() >= 6).then_some(())
    });
    std::fs::write(&own_config, format!("Host flaky\n    Port 1\n{with_flaky}")).unwrap();
    ends_with(child, &work, 0);
    let failed = check_hunt(&work, &shas[11]);
    assert!(
        failed.iter().any(|r| r.contains("exit status: 143")),
        "the killed run failed: {failed:?}"
    );
    // Runs went to both hosts, and after `flaky` went away to the other
    // one only: the runs meant for it were made there.
    let ran_on = |run: &Path| {
        let text = std::fs::read_to_string(run).unwrap();
        text.lines().next().unwrap_or("").to_string()
    };
    let mut runs: Vec<PathBuf> = std::fs::read_dir(only_hunt_dir(&work).join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let hosts_seen: Vec<String> = runs.iter().map(|r| ran_on(r)).collect();
    assert!(
        hosts_seen.contains(&"on flaky".to_string()),
        "{hosts_seen:?}"
    );
    let last = hosts_seen.iter().rev().take(4);
    assert!(
        last.clone().all(|h| *h == format!("on {}", hosts[0])),
        "{hosts_seen:?}"
    );
}

#[test]
fn a_killed_ssh_coordinator_is_cleaned_up_after_and_holds_its_hosts() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(16, 11), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    let section = ssh_section(&hosts[..2], tmp.path(), &config);
    // A run that finds the flag takes it and hangs.
    let flag = tmp.path().join("hang");
    let before = format!(
        "sleep 0.2 && {{ ! rm {} 2>/dev/null || sleep 300; }}",
        flag.display()
    );
    let profile = hosts_profile(tmp.path(), &before, &section);
    let work = tmp.path().join("w");
    let mut child = start(repo.path(), &work, &profile, &[]);
    wait_for("runs", || (journaled_runs(&work).len() >= 3).then_some(()));

    // Another hunt (another work dir) is refused the hosts meanwhile.
    let other = hunt(repo.path(), &tmp.path().join("other"), &profile, &[]);
    assert_code(&other, 2);
    let said = String::from_utf8_lossy(&other.stderr);
    assert!(said.contains("is used by another pgbisect hunt"), "{said}");

    // SIGKILL while a job hangs on a host: the job is left there.
    std::fs::write(&flag, "").unwrap();
    wait_for("a run to take the flag", || (!flag.exists()).then_some(()));
    let (_, pid) = wait_for("the hanging job", || hanging_job(tmp.path()));
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(&pid), "the job went with its coordinator");
    let before = journaled_runs(&work).len();

    let out = resume(&work);
    left_job_was_stopped(&out, &pid, "hunt");
    check_hunt(&work, &shas[11]);
    assert!(journaled_runs(&work).len() > before);
    assert!(pid_files(tmp.path()).is_empty(), "jobs left on the hosts");
}

/// The history of real PostgreSQL source the tests of this binary share,
/// each commit built once (`common::pg_history`): cloned to `dir/repo`,
/// the builds put in `work`'s install cache. The repo and the slow
/// commit's SHA; `None` (skipped) without the source.
fn pg_history(dir: &Path, work: &Path) -> Option<(PathBuf, String)> {
    let history = common::pg_history::built_history()?;
    let repo = dir.join("repo");
    history.seed(&repo, work);
    Some((repo, history.slow.clone()))
}

/// A temp dir every user may enter: PostgreSQL runs as `postgres` when
/// the tests run as root, and must reach the hosts' folders in it.
fn open_tempdir() -> tempfile::TempDir {
    common::pg::reachable_temp_dir("/var/tmp", "pgbisect-hosts-")
}

/// The postmasters of the hosts' lab folders under `dir/hosts` that run.
fn postmasters(dir: &Path) -> Vec<String> {
    let Ok(hosts) = std::fs::read_dir(dir.join("hosts")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for host in hosts.filter_map(Result::ok) {
        let name = host.file_name();
        let pidfile = host
            .path()
            .join("pg-lab")
            .join(&name)
            .join("data/current/postmaster.pid");
        let Ok(text) = std::fs::read_to_string(pidfile) else {
            continue;
        };
        let pid = text.lines().next().unwrap_or("").trim().to_string();
        if !pid.is_empty() && alive(&pid) {
            found.push(pid);
        }
    }
    found
}

/// Checks a finished PostgreSQL hunt in `work` over `hosts`: the culprit,
/// every run journaled once with its host and measured, runs on every host.
fn check_pg_hunt(work: &Path, culprit: &str, hosts: &[String]) {
    let (v, runs) = finished(work, culprit);
    for run in &runs {
        let host = run["host"].as_str().unwrap_or("");
        assert!(hosts.iter().any(|h| h == host), "{run}");
        assert!(
            run["outcome"]["Measured"]["tps"].as_f64().is_some(),
            "{run}"
        );
    }
    for host in hosts {
        assert!(
            runs.iter().any(|r| r["host"] == host.as_str()),
            "no run on {host}"
        );
    }
    // The builds this binary's tests share served: nothing was built again.
    let builds: Vec<_> = std::fs::read_dir(work.join("logs"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        builds
            .iter()
            .all(|n| !n.to_string_lossy().starts_with("build-")),
        "built again: {builds:?}"
    );
    // Where server and pgbench ran was decided on the hosts, and said.
    assert!(v["machine"]["placement"].is_object(), "{}", v["machine"]);
    // Runs and warm-ups are counted apart, as on one machine.
    let totals = &v["totals"];
    let warmups = totals["warmup_runs"].as_u64().unwrap();
    assert!(
        warmups > 0 && totals["runs"].as_u64().unwrap() > warmups,
        "{totals}"
    );
}

/// A hunt of real PostgreSQL builds over three ssh hosts (one box under
/// three names): built here, measured there; the coordinator killed
/// (SIGKILL) together with a run on a host while its server runs, and the
/// hunt resumed: the server left behind is stopped, and the culprit found.
#[test]
fn a_pgbench_hunt_over_ssh_hosts_survives_a_killed_coordinator() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let tmp = open_tempdir();
    let config = muxed(&config, tmp.path());
    let work = tmp.path().join("w");
    let Some((repo, slow)) = pg_history(tmp.path(), &work) else {
        return;
    };
    let profile = common::pg_history::short_smoke_profile(
        tmp.path(),
        &ssh_section(&hosts, tmp.path(), &config),
    );
    // The first culprit is enough: further steps would be hunted in noise.
    let mut child = start(&repo, &work, &profile, &["--first-only"]);
    // The installs are sent to the hosts and the templates made first.
    wait_within("runs", Duration::from_secs(600), || {
        (journaled_runs(&work).len() >= 6).then_some(())
    });
    let server = wait_for("a server on a host", || postmasters(tmp.path()).pop());
    child.kill().unwrap();
    child.wait().unwrap();
    // The runs on the hosts killed too, before they stop their servers,
    // and the job scripts around them before that.
    for pidfile in pid_files(tmp.path()) {
        kill_job_script(&pidfile);
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--"])
            .arg(format!("-{}", pid.trim()))
            .status();
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(&server), "the server went with its run");

    let out = resume(&work);
    assert_code(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Stopped either by the sweep of what the earlier start left on the
    // hosts, or by the run's own check of the servers registered there.
    assert!(
        stderr.contains("an earlier start of this hunt left running")
            || stderr.contains("server(s) or process(es) an earlier run left behind"),
        "{stderr}"
    );
    assert!(stderr.contains("(ssh)"), "{stderr}");
    assert!(
        !alive(&server),
        "the server {server} left on a host still runs"
    );
    check_pg_hunt(&work, &slow, &hosts);
    assert!(
        postmasters(tmp.path()).is_empty(),
        "servers left on the hosts"
    );
    assert!(pid_files(tmp.path()).is_empty(), "jobs left on the hosts");
    for host in &hosts {
        let templates = tmp
            .path()
            .join("hosts")
            .join(host)
            .join("pg-lab")
            .join(host)
            .join("templates");
        assert_eq!(std::fs::read_dir(templates).unwrap().count(), 1, "{host}");
    }
}

/// The Slurm jobs of hunts in this test's work dirs still in the queue.
fn queued(prefix: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%i|%j|%T"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split('|').nth(1).is_some_and(|n| n.starts_with(prefix)))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_slurm_hunt_survives_a_cancelled_job_and_a_killed_coordinator() {
    let Some((node, partition)) = slurm_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(8, 5), &[]);
    let tmp = tempfile::tempdir().unwrap();
    // A run that finds a flag takes it and hangs.
    let (cancel, kill) = (tmp.path().join("cancel"), tmp.path().join("kill"));
    let before = format!(
        "{{ ! rm {} 2>/dev/null || sleep 300; }} && {{ ! rm {} 2>/dev/null || sleep 300; }}",
        cancel.display(),
        kill.display()
    );
    let profile = hosts_profile(tmp.path(), &before, &slurm_section(&node, &partition));
    let work = tmp.path().join("w");
    let mut child = start(repo.path(), &work, &profile, &["--slurm"]);
    let prefix = wait_for("the hunt's folder", || {
        let hunt = std::fs::read_dir(work.join("hunts")).ok()?.next()?.ok()?;
        Some(format!("pgbisect-{}-", hunt.file_name().to_string_lossy()))
    });
    wait_for("runs", || (journaled_runs(&work).len() >= 2).then_some(()));
    // A job cancelled mid-run.
    std::fs::write(&cancel, "").unwrap();
    wait_for("a run to take the flag", || {
        (!cancel.exists()).then_some(())
    });
    let job = wait_for("the hanging job", || {
        queued(&prefix)
            .into_iter()
            .find(|l| l.ends_with("|RUNNING"))
    });
    let id = job.split('|').next().unwrap().to_string();
    assert!(Command::new("scancel").arg(&id).status().unwrap().success());
    // Then the coordinator killed while a job of it hangs.
    wait_for("runs after it", || {
        (journaled_runs(&work).len() >= 5).then_some(())
    });
    std::fs::write(&kill, "").unwrap();
    wait_for("a run to take the flag", || (!kill.exists()).then_some(()));
    let left = wait_for("the hanging job", || {
        queued(&prefix)
            .into_iter()
            .find(|l| l.ends_with("|RUNNING"))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let left_id = left.split('|').next().unwrap();
    assert_eq!(queued(&prefix).len(), 1, "the job outlives its coordinator");

    let out = resume(&work);
    assert_code(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("left running: Slurm job {left_id} ")),
        "{stderr}"
    );
    let failed = check_hunt(&work, &shas[5]);
    assert!(
        failed
            .iter()
            .any(|r| r.contains(&format!("JOB {id} ON {node} CANCELLED"))
                || r.contains(&format!("Slurm job {id} on {node} was cancelled"))),
        "the cancelled job is a failed run: {failed:?}"
    );
    assert!(
        queued(&prefix).is_empty(),
        "jobs left: {:?}",
        queued(&prefix)
    );
}

/// A job that outlives its time limit (the benchmark's `timeout`, one
/// minute) is ended by Slurm: a failed run that says so and how to give
/// runs more time, and the hunt goes on to its culprit.
#[test]
fn a_slurm_job_past_its_time_limit_is_a_failed_run_and_the_hunt_goes_on() {
    let Some((node, partition)) = slurm_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    // The first run outlasts its one-minute limit; the others are quick.
    let before = "if [ \\\"$PGBISECT_RUN\\\" = 1 ]; then sleep 600; fi; true";
    let profile = hosts_profile(tmp.path(), before, &slurm_section(&node, &partition));
    let text = std::fs::read_to_string(&profile).unwrap();
    let text = text.replace("[benchmark]\n", "[benchmark]\ntimeout = 60\n");
    std::fs::write(&profile, text).unwrap();
    let work = tmp.path().join("w");
    let out = hunt(repo.path(), &work, &profile, &["--slurm"]);
    assert_code(&out, 0);
    let failed = check_hunt(&work, &shas[2]);
    assert!(
        failed
            .iter()
            .any(|r| r.contains("hit its time limit (1 min")
                && r.contains("state TIMEOUT")
                && r.contains("timeout")),
        "the job past its limit is a failed run that says so: {failed:?}"
    );
    let hunt = only_hunt_dir(&work);
    let name = hunt.file_name().unwrap().to_string_lossy();
    let left = queued(&format!("pgbisect-{name}-"));
    assert!(left.is_empty(), "jobs left: {left:?}");
}

/// A hunt of real PostgreSQL builds through Slurm: each run a job on the
/// node, the installs and the node's lab folder read on the shared work
/// dir; the culprit found, every run measured and journaled once. (The
/// hunts of a shell command through Slurm are those below, with a job
/// past its limit, a cancelled job and a killed coordinator: one node
/// runs one job at a time, so each Slurm hunt costs the suite its jobs.)
#[test]
fn a_pgbench_hunt_through_slurm_finds_the_slowdown() {
    let Some((node, partition)) = slurm_setup() else {
        return;
    };
    let tmp = open_tempdir();
    let work = tmp.path().join("w");
    let Some((repo, slow)) = pg_history(tmp.path(), &work) else {
        return;
    };
    let profile =
        common::pg_history::short_smoke_profile(tmp.path(), &slurm_section(&node, &partition));
    let out = hunt(&repo, &work, &profile, &["--slurm", "--first-only"]);
    assert_code(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("measuring on {node} (slurm)")),
        "{stderr}"
    );
    // The culprit, every run measured (none failed) and journaled once.
    check_pg_hunt(&work, &slow, std::slice::from_ref(&node));
    let templates = work.join("pg-lab").join(&node).join("templates");
    assert_eq!(std::fs::read_dir(templates).unwrap().count(), 1);
}

/// A round through real ssh: one run on every host at once, in the hosts'
/// order, numbered from the round's first run.
#[test]
fn a_round_runs_on_every_ssh_host_at_once() {
    use pgbisect::hosts::ssh::Ssh;
    use pgbisect::lab::command::{CommandLab, Commands};
    use pgbisect::lab::pool::PoolLab;
    use pgbisect::lab::{Lab, LabDirs, RunSpec};
    use pgbisect::model::{Commit, RunOutcome};
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo_dir, shas) = history(&levels_with_drop_at(2, 1), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    let repo = pgbisect::repo::Repo::open(repo_dir.path()).unwrap();
    let worktree =
        pgbisect::repo::WorkTree::open_or_create(&repo, &tmp.path().join("checkout")).unwrap();
    let commands = Commands {
        build: Some("mkdir -p \"$PGBISECT_PREFIX\" && cp level \"$PGBISECT_PREFIX/\"".into()),
        benchmark: "sleep 2; echo \"tps = $(cat level) on $PGBISECT_HOST run $PGBISECT_RUN\""
            .into(),
        build_limit: Duration::from_secs(60),
        benchmark_limit: Duration::from_secs(60),
    };
    let runs = tmp.path().join("runs");
    let builder = CommandLab::new(
        commands,
        worktree,
        LabDirs::under(&tmp.path().join("w")),
        &runs,
    )
    .unwrap();
    let remote = tmp.path().join("hosts").display().to_string();
    let ssh = Ssh::new(hosts.clone(), Some(&remote), Some(config));
    let mut lab = PoolLab::new(builder, std::sync::Arc::new(ssh), "pgbisect-round-", &runs);
    let commit = Commit::bare(shas[1].clone());
    lab.prepare(&commit).unwrap();
    let started = Instant::now();
    let spec = RunSpec {
        clients: 1,
        run: 10,
        seconds: None,
    };
    let round = lab.run_round(&commit, spec).unwrap();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2 * hosts.len() as u64),
        "{took:?}: not at once"
    );
    assert_eq!(round.len(), hosts.len());
    for (i, (run, host)) in round.iter().zip(&hosts).enumerate() {
        assert_eq!(run.host.as_deref(), Some(host.as_str()));
        let RunOutcome::Measured(m) = &run.outcome else {
            panic!("{run:?}")
        };
        assert_eq!(m.tps, 800.0);
        let text = std::fs::read_to_string(m.output.as_ref().unwrap()).unwrap();
        assert!(
            text.contains(&format!("on {host} run {}", 10 + i)),
            "{text}"
        );
    }
    assert_eq!(lab.totals().runs, hosts.len() as u64);
}

/// The test profile on the ssh hosts `hosts`, their files under
/// `dir/hosts`.
fn ssh_profile(dir: &Path, hosts: &[String], config: &Path) -> PathBuf {
    hosts_profile(dir, "true", &ssh_section(hosts, dir, config))
}

/// Where the ssh host `host` of a test in `dir` keeps its lock.
fn lock_of(dir: &Path, host: &str) -> PathBuf {
    dir.join("hosts").join(host).join("lock")
}

/// `compare good bad` with `profile` at one client (`--runs` in `extra`).
fn compare(repo: &Path, work: &Path, profile: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["good", "bad", "--clients", "1", "--profile"];
    args.push(profile.to_str().unwrap());
    args.extend(extra);
    pgbisect_sub("compare", repo, work, &args)
}

#[test]
fn a_killed_compare_is_cleaned_up_after_when_run_again() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    // A run that finds the flag takes it and hangs.
    let flag = tmp.path().join("hang");
    std::fs::write(&flag, "").unwrap();
    let before = format!("{{ ! rm {} 2>/dev/null || sleep 300; }}", flag.display());
    let section = ssh_section(&hosts[..2], tmp.path(), &config);
    let profile = hosts_profile(tmp.path(), &before, &section);
    let work = tmp.path().join("w");
    let mut child = bin()
        .arg("compare")
        .args(["good", "bad", "--clients", "1", "--runs", "4", "--profile"])
        .arg(&profile)
        .arg("--repo")
        .arg(repo.path())
        .arg("--work-dir")
        .arg(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_, pid) = wait_for("the hanging job", || hanging_job(tmp.path()));
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(&pid), "the job went with its coordinator");

    let out = compare(repo.path(), &work, &profile, &["--runs", "4"]);
    left_job_was_stopped(&out, &pid, "comparison");
    assert!(pid_files(tmp.path()).is_empty(), "jobs left on the hosts");
    let v = comparison(&work);
    assert_eq!(v["rows"][0]["per_host"].as_array().unwrap().len(), 2);
}

/// The result of the only comparison in `work`.
fn comparison(work: &Path) -> serde_json::Value {
    let dir = std::fs::read_dir(work.join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    json(&dir.join("result.json"))
}

#[test]
fn compare_through_ssh_measures_both_sides_on_every_host_and_shows_each() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    // The profile says where the hosts' files go and how to reach them;
    // --hosts names them.
    let section = format!(
        "[hosts]\ndir = \"{}\"\nssh-config = \"{}\"\n",
        tmp.path().join("hosts").display(),
        config.display()
    );
    let profile = hosts_profile(tmp.path(), "echo on $PGBISECT_HOST", &section);
    let work = tmp.path().join("w");
    let hosts_flag = hosts.join(",");
    let out = compare(
        repo.path(),
        &work,
        &profile,
        &["--runs", "6", "--hosts", &hosts_flag],
    );
    assert_code(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("measuring on pgbisect-a"), "{stderr}");
    assert!(
        stdout.contains(&format!("measured on: {} (ssh)", hosts.join(", "))),
        "{stdout}"
    );
    assert!(stdout.contains("SLOWER"), "{stdout}");
    assert!(stdout.contains("per host:"), "{stdout}");
    let v = comparison(&work);
    let row = &v["rows"][0];
    // Two rounds a side: each host measured A and B, in turn, and saw
    // the drop at its own level.
    let per_host = row["per_host"].as_array().unwrap();
    assert_eq!(per_host.len(), hosts.len(), "{row:#}");
    for (h, name) in per_host.iter().zip(&hosts) {
        assert_eq!(h["host"], name.as_str());
        assert_eq!(
            (h["runs_before"].as_u64(), h["runs_after"].as_u64()),
            (Some(2), Some(2))
        );
        let ratio = h["after_tps"].as_f64().unwrap() / h["before_tps"].as_f64().unwrap();
        assert!((0.75..0.85).contains(&ratio), "{h}");
        assert!(
            stdout.lines().any(|l| l.contains(&format!("| {name}"))),
            "no row of {name}: {stdout}"
        );
    }
    assert_eq!(row["comparison"]["method"], "stratified-t", "{row:#}");
    // The runs' output says where each ran; the hosts were given back.
    let runs_dir = std::fs::read_dir(work.join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("runs");
    let mut seen: Vec<String> = std::fs::read_dir(runs_dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .filter_map(|t| t.lines().next().map(str::to_string))
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), hosts.len(), "{seen:?}");
    for host in &hosts {
        assert!(!lock_of(tmp.path(), host).exists());
    }
}

#[test]
fn compare_is_refused_hosts_another_hunt_holds() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    let profile = ssh_profile(tmp.path(), &hosts[..2], &config);
    let lock = lock_of(tmp.path(), &hosts[1]);
    std::fs::create_dir_all(&lock).unwrap();
    std::fs::write(lock.join("owner"), "elsewhere:/var/tmp/w somehunt\n").unwrap();
    let out = compare(
        repo.path(),
        &tmp.path().join("w"),
        &profile,
        &["--runs", "2"],
    );
    assert_code(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "the host {} is used by another pgbisect hunt",
            hosts[1]
        )),
        "{said}"
    );
    // The host it had taken first was given back.
    assert!(!lock_of(tmp.path(), &hosts[0]).exists());
}

#[test]
fn judge_measures_where_the_hunt_did_and_against_each_hosts_levels() {
    let Some((hosts, config)) = ssh_setup() else {
        return;
    };
    let (repo, shas) = history(&levels_with_drop_at(8, 5), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let config = muxed(&config, tmp.path());
    let profile = ssh_profile(tmp.path(), &hosts[..2], &config);
    let work = tmp.path().join("w");
    assert_code(&hunt(repo.path(), &work, &profile, &[]), 0);
    for (sha, code, word) in [(&shas[2], 0, "good-like"), (&shas[6], 1, "bad-like")] {
        let verdict = tmp.path().join("verdict.json");
        let out = pgbisect_sub(
            "judge",
            repo.path(),
            &work,
            &[sha, "--json", verdict.to_str().unwrap()],
        );
        assert_code(&out, code);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(word), "{stdout}");
        for host in &hosts[..2] {
            assert!(stdout.contains(&format!("  on {host}: median")), "{stdout}");
        }
        let v = json(&verdict);
        assert_eq!(v["hosts"].as_array().unwrap().len(), 2, "{v:#}");
        assert!(
            v["measured_on"].as_str().unwrap().contains("(ssh)"),
            "{v:#}"
        );
    }
    // The judge's runs were made on the hosts, named apart from the hunt's.
    let judged = std::fs::read_dir(only_hunt_dir(&work).join("judge-runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(judged >= 4, "{judged} judge runs");
    // A host the hunt has no levels of is refused, naming the hunt's.
    let out = pgbisect_sub(
        "judge",
        repo.path(),
        &work,
        &[&shas[6], "--hosts", &hosts[2]],
    );
    assert_code(&out, 128);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("measured on {}, {}", hosts[0], hosts[1])),
        "{said}"
    );
}

#[test]
fn a_slurm_compare_measures_on_the_node() {
    let Some((node, partition)) = slurm_setup() else {
        return;
    };
    let (repo, _) = history(&levels_with_drop_at(4, 2), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let profile = hosts_profile(tmp.path(), "true", &slurm_section(&node, &partition));
    let work = tmp.path().join("w");
    let out = compare(repo.path(), &work, &profile, &["--runs", "4", "--slurm"]);
    assert_code(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("measured on: {node} (slurm)")),
        "{stdout}"
    );
    assert!(stdout.contains("SLOWER"), "{stdout}");
    let v = comparison(&work);
    let row = &v["rows"][0];
    assert_eq!(row["a_hosts"].as_array().unwrap().len(), 4, "{row:#}");
    // One node: the comparison is the one machine's, without a per-host part.
    assert!(row.get("per_host").is_none(), "{row:#}");
}
