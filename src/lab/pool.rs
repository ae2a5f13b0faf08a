//! A lab over several hosts, for custom-command profiles.
//!
//! With several identical machines a hunt gathers its runs N times
//! faster, but a commit is still built once: here, by the profile's build
//! command as [`CommandLab`] builds it, into its install prefix, which is
//! then put on every host (ssh: copied once per host, keyed as the build
//! cache keys installs; Slurm: read in place on the shared filesystem).
//! The benchmark command runs on the hosts in that install (its working
//! directory and `$PGBISECT_PREFIX`; the source tree stays here, so a
//! benchmark that needs files from it has the build command install
//! them), with `$PGBISECT_HOST` naming the host.
//!
//! [`Lab::run_round`] runs the benchmark on every host at once (a thread
//! each) and hands back one run per host in the hosts' order; [`Lab::run`]
//! alone goes to the next host in turn. A host that goes away makes
//! failed runs in rounds, each with the reason (ssh's words, Slurm's
//! refusal), and the hunt goes on with the others; a lone run meant for it
//! is made on the next host instead, and it is tried again every
//! [`RETRY_DOWN_EVERY`] runs. When it comes back, its runs go on, the
//! install sent first if it missed it. A run that was cut short (its
//! deadline, a job cancelled or preempted, its processes killed) is a
//! failed run with the reason, and is not made again.

use crate::core::fingerprint::fingerprint;
use crate::hosts::{Backend, Job, JobEnd};
use crate::lab::command::{CommandLab, read_run};
use crate::lab::{HostRun, Lab, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Builds here with the profile's commands, measures on the hosts.
pub struct PoolLab {
    builder: CommandLab,
    on: OnHosts,
    /// The host the next lone run goes to.
    next: usize,
    /// Hosts found down, left out of lone runs for a while.
    down: HashSet<String>,
    runs: u64,
    bench_seconds: f64,
}

/// What the threads running on the hosts share.
struct OnHosts {
    backend: Arc<dyn Backend>,
    /// The benchmark command, its deadline, and the build command's
    /// fingerprint (part of an install's key).
    benchmark: String,
    limit: std::time::Duration,
    build_key: String,
    /// `pgbisect-<hunt>-`: the jobs' names start so.
    job_prefix: String,
    runs_dir: PathBuf,
    /// Where each (host, commit) install is on the host.
    sent: Mutex<HashMap<(String, String), String>>,
}

impl PoolLab {
    /// Builds with `builder`, runs on `backend`'s hosts, names jobs
    /// `<job_prefix><run>`, keeps the runs' output in `runs_dir`.
    pub fn new(
        builder: CommandLab,
        backend: Arc<dyn Backend>,
        job_prefix: &str,
        runs_dir: &std::path::Path,
    ) -> PoolLab {
        let commands = builder.commands();
        let on = OnHosts {
            backend,
            benchmark: commands.benchmark.clone(),
            limit: commands.benchmark_limit,
            build_key: fingerprint(commands.build.as_deref().unwrap_or(""))[..12].to_string(),
            job_prefix: job_prefix.to_string(),
            runs_dir: runs_dir.to_path_buf(),
            sent: Mutex::new(HashMap::new()),
        };
        PoolLab {
            builder,
            on,
            next: 0,
            down: HashSet::new(),
            runs: 0,
            bench_seconds: 0.0,
        }
    }

    fn count(&mut self, seconds: f64) {
        self.runs += 1;
        self.bench_seconds += seconds;
    }
}

impl OnHosts {
    /// The install's key: the commit and the build command, as the build
    /// cache keys installs by commit and settings.
    fn key(&self, commit: &Commit) -> String {
        format!("{}-{}", commit.id, self.build_key)
    }

    /// Where `commit`'s install (`local` here) is on `host`, sent there
    /// first if it is not yet; or why it could not be.
    fn ensure_sent(
        &self,
        host: &str,
        commit: &Commit,
        local: &std::path::Path,
    ) -> anyhow::Result<Result<String, String>> {
        let index = (host.to_string(), commit.id.clone());
        if let Some(path) = self.lock_sent().get(&index) {
            return Ok(Ok(path.clone()));
        }
        if !local.is_dir() {
            // No build command: an empty install, for the runs' folder.
            crate::files::create_dir(local)?;
        }
        let sent = self.backend.send(host, local, &self.key(commit))?;
        if let Ok(path) = &sent {
            self.lock_sent().insert(index, path.clone());
        }
        Ok(sent)
    }

    fn lock_sent(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), String>> {
        self.sent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One run on `host` of `commit` (installed in `local` here).
    fn run_on(
        &self,
        host: &str,
        (commit, local): (&Commit, &std::path::Path),
        spec: RunSpec,
    ) -> anyhow::Result<Ran> {
        let started = Instant::now();
        let prefix = match self.ensure_sent(host, commit, local)? {
            Ok(path) => path,
            Err(reason) => {
                let reason = format!("no run on {host}: {reason}");
                return Ok(Ran::down(reason));
            }
        };
        let script = &self.benchmark;
        let output = self
            .runs_dir
            .join(format!("run-{:05}-{}.txt", spec.run, commit.short()));
        let job = Job {
            name: format!("{}{}", self.job_prefix, spec.run),
            script,
            env: vec![
                ("PGBISECT_COMMIT".into(), commit.id.clone()),
                ("PGBISECT_PREFIX".into(), prefix.clone()),
                ("PGBISECT_CLIENTS".into(), spec.clients.to_string()),
                ("PGBISECT_RUN".into(), spec.run.to_string()),
                ("PGBISECT_HOST".into(), host.to_string()),
            ],
            dir: prefix,
            limit: self.limit,
            output: &output,
        };
        let outcome = match self.backend.run(host, &job)? {
            JobEnd::Exited { code, output: text } => {
                let exit = if code == 0 {
                    Ok(())
                } else {
                    Err(format!("exit status: {code} on {host}"))
                };
                read_run(script, exit, &text, output)
            }
            JobEnd::Lost(reason) => RunOutcome::Failed { reason },
            JobEnd::HostDown(reason) => return Ok(Ran::down(reason)),
        };
        Ok(Ran {
            outcome,
            seconds: started.elapsed().as_secs_f64(),
            host_down: false,
        })
    }
}

/// One run on one host.
struct Ran {
    outcome: RunOutcome,
    seconds: f64,
    /// The host could not be reached: another may make the run.
    host_down: bool,
}

impl Ran {
    fn down(reason: String) -> Ran {
        Ran {
            outcome: RunOutcome::Failed { reason },
            seconds: 0.0,
            host_down: true,
        }
    }
}

/// Lone runs between two tries of hosts that were down.
const RETRY_DOWN_EVERY: u64 = 20;

impl Lab for PoolLab {
    /// Builds here, then puts the install on every host at once; a host
    /// that cannot take it now gets it before its next run.
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let prepared = self.builder.prepare(commit)?;
        if matches!(prepared, Prepared::Ready { .. }) {
            let (this, local) = (&self.on, self.builder.prefix(commit));
            let local = local.as_path();
            let sent: Vec<anyhow::Result<Result<String, String>>> = std::thread::scope(|s| {
                let handles: Vec<_> = this
                    .backend
                    .hosts()
                    .iter()
                    .map(|host| s.spawn(move || this.ensure_sent(host, commit, local)))
                    .collect();
                handles.into_iter().map(join).collect()
            });
            for result in sent {
                // A host that could not take it gets it before its run.
                let _not_now = result?;
            }
        }
        Ok(prepared)
    }

    /// On the next host in turn that is up; a host found down is left
    /// out of lone runs (tried again every [`RETRY_DOWN_EVERY`] runs) and
    /// the run goes to the next host. When every host is down, the run
    /// fails with the last host's reason.
    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let hosts = self.on.backend.hosts().to_vec();
        if spec.run.is_multiple_of(RETRY_DOWN_EVERY) {
            self.down.clear();
        }
        let local = self.builder.prefix(commit);
        let start = self.next;
        let mut order: Vec<usize> = (0..hosts.len())
            .map(|i| (start + i) % hosts.len())
            .collect();
        order.sort_by_key(|i| self.down.contains(&hosts[*i]));
        let mut last = None;
        for i in order {
            let ran = self.on.run_on(&hosts[i], (commit, &local), spec)?;
            if ran.host_down {
                self.down.insert(hosts[i].clone());
                last = Some(ran.outcome);
                continue;
            }
            self.down.remove(&hosts[i]);
            self.next = (i + 1) % hosts.len();
            self.count(ran.seconds);
            return Ok(ran.outcome);
        }
        self.count(0.0);
        Ok(last.unwrap_or_else(|| RunOutcome::Failed {
            reason: "no hosts".into(),
        }))
    }

    fn hosts(&self) -> Vec<String> {
        self.on.backend.hosts().to_vec()
    }

    /// The runs asked for, each on its own host, all at once: a whole
    /// round, or the part of one that a stopped hunt did not journal.
    fn run_on(
        &mut self,
        commit: &Commit,
        spec: RunSpec,
        runs: &[(usize, u64)],
    ) -> anyhow::Result<Vec<HostRun>> {
        let hosts = self.on.backend.hosts().to_vec();
        let (this, local) = (&self.on, self.builder.prefix(commit));
        let local = local.as_path();
        let mut asked = Vec::with_capacity(runs.len());
        for &(i, run) in runs {
            let host = hosts.get(i).ok_or_else(|| {
                anyhow::anyhow!("no host number {i}: the hunt has {}", hosts.len())
            })?;
            asked.push((host.as_str(), RunSpec { run, ..spec }));
        }
        let ended: Vec<anyhow::Result<Ran>> = std::thread::scope(|s| {
            let handles: Vec<_> = asked
                .iter()
                .map(|&(host, spec)| s.spawn(move || this.run_on(host, (commit, local), spec)))
                .collect();
            handles.into_iter().map(join).collect()
        });
        let mut made = Vec::with_capacity(asked.len());
        for ((host, _), result) in asked.iter().zip(ended) {
            let ran = result?;
            self.count(ran.seconds);
            if ran.host_down {
                self.down.insert(host.to_string());
            } else {
                self.down.remove(*host);
            }
            made.push(HostRun {
                host: Some(host.to_string()),
                outcome: ran.outcome,
            });
        }
        Ok(made)
    }

    fn totals(&self) -> LabTotals {
        LabTotals {
            runs: self.runs,
            bench_seconds: self.bench_seconds,
            ..self.builder.totals()
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}; on {} ({})",
            self.builder.describe(),
            self.on.backend.hosts().join(", "),
            self.on.backend.kind()
        )
    }
}

/// A thread's result; a thread that panicked is an error, not a panic here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, anyhow::Result<T>>) -> anyhow::Result<T> {
    handle
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("a thread running on a host panicked")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::{HostError, Owner};
    use crate::lab::LabDirs;
    use crate::lab::command::Commands;
    use crate::machine::Machine;
    use crate::repo::{Repo, WorkTree};
    use std::path::Path;
    use std::time::Duration;

    /// Hosts that are folders here: a job runs with `sh` in its folder,
    /// and a host named `gone` never answers.
    struct Folders {
        hosts: Vec<String>,
        root: PathBuf,
        sends: Mutex<Vec<String>>,
    }

    impl Backend for Folders {
        fn kind(&self) -> &'static str {
            "folders"
        }
        fn hosts(&self) -> &[String] {
            &self.hosts
        }
        fn run(&self, host: &str, job: &Job) -> anyhow::Result<JobEnd> {
            if host == "gone" {
                return Ok(JobEnd::HostDown("on gone: ssh failed: no route".into()));
            }
            let out = std::process::Command::new("sh")
                .args(["-c", job.script])
                .current_dir(&job.dir)
                .envs(job.env.iter().map(|(k, v)| (k, v)))
                .output()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            std::fs::write(job.output, &text)?;
            Ok(JobEnd::Exited {
                code: out.status.code().unwrap_or(-1),
                output: text,
            })
        }
        fn send(
            &self,
            host: &str,
            local: &Path,
            key: &str,
        ) -> anyhow::Result<Result<String, String>> {
            if host == "gone" {
                return Ok(Err("gone is down".into()));
            }
            let dest = self.root.join(host).join(key);
            std::fs::create_dir_all(&dest)?;
            for entry in std::fs::read_dir(local)? {
                let entry = entry?;
                std::fs::copy(entry.path(), dest.join(entry.file_name()))?;
            }
            self.sends.lock().unwrap().push(format!("{host} {key}"));
            Ok(Ok(dest.display().to_string()))
        }
        fn facts(&self, _host: &str) -> anyhow::Result<Result<Machine, String>> {
            Ok(Ok(Machine::default()))
        }
        fn lock(&self, _host: &str, _owner: &Owner) -> Result<(), HostError> {
            Ok(())
        }
        fn unlock(&self, _host: &str, _owner: &Owner) {}
        fn clean_up(&self, _host: &str, _owner: &Owner) -> anyhow::Result<Vec<String>> {
            Ok(Vec::new())
        }
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn pool(tmp: &Path, hosts: &[&str]) -> (PoolLab, Arc<Folders>, Commit) {
        let repo_dir = tmp.join("repo");
        std::fs::create_dir_all(&repo_dir).unwrap();
        git(&repo_dir, &["init", "-q"]);
        std::fs::write(repo_dir.join("level"), "1000\n").unwrap();
        git(&repo_dir, &["add", "level"]);
        git(&repo_dir, &["commit", "-q", "-m", "one"]);
        let commit = Commit::bare(git(&repo_dir, &["rev-parse", "HEAD"]));
        let repo = Repo::open(&repo_dir).unwrap();
        let worktree = WorkTree::open_or_create(&repo, &tmp.join("checkout")).unwrap();
        let commands = Commands {
            build: Some("mkdir -p \"$PGBISECT_PREFIX\" && cp level \"$PGBISECT_PREFIX/\"".into()),
            benchmark: "echo \"tps = $(cat level) on $PGBISECT_HOST run $PGBISECT_RUN\"".into(),
            build_limit: Duration::from_secs(60),
            benchmark_limit: Duration::from_secs(60),
        };
        let runs = tmp.join("runs");
        let builder =
            CommandLab::new(commands, worktree, LabDirs::under(&tmp.join("work")), &runs).unwrap();
        let backend = Arc::new(Folders {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            root: tmp.join("hosts"),
            sends: Mutex::new(Vec::new()),
        });
        let lab = PoolLab::new(builder, backend.clone(), "pgbisect-h-", &runs);
        (lab, backend, commit)
    }

    fn spec(run: u64) -> RunSpec {
        RunSpec {
            clients: 1,
            run,
            seconds: None,
        }
    }

    #[test]
    fn a_round_runs_once_on_every_host_in_order_from_one_build() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut lab, backend, commit) = pool(tmp.path(), &["a", "b", "gone"]);
        assert!(matches!(
            lab.prepare(&commit).unwrap(),
            Prepared::Ready { .. }
        ));
        lab.prepare(&commit).unwrap();
        let round = lab.run_round(&commit, spec(7)).unwrap();
        let hosts: Vec<_> = round.iter().map(|r| r.host.clone().unwrap()).collect();
        assert_eq!(hosts, ["a", "b", "gone"]);
        for (i, r) in round[..2].iter().enumerate() {
            let RunOutcome::Measured(m) = &r.outcome else {
                panic!("{r:?}")
            };
            assert_eq!(m.tps, 1000.0);
            let text = std::fs::read_to_string(m.output.as_ref().unwrap()).unwrap();
            let host = &hosts[i];
            assert!(text.contains(&format!("on {host} run {}", 7 + i)), "{text}");
        }
        let RunOutcome::Failed { reason } = &round[2].outcome else {
            panic!("{round:?}")
        };
        assert!(reason.contains("no run on gone: gone is down"), "{reason}");
        // One build, one send a reachable host, however often prepared.
        assert_eq!(lab.totals().builds, 1);
        assert_eq!(lab.totals().runs, 3);
        let sends = backend.sends.lock().unwrap().clone();
        assert_eq!(sends.len(), 2, "{sends:?}");
        assert!(sends.iter().all(|s| s.contains(&lab.on.key(&commit))));
        assert_eq!(lab.hosts(), ["a", "b", "gone"]);
        assert!(
            lab.describe().ends_with("on a, b, gone (folders)"),
            "{}",
            lab.describe()
        );
    }

    #[test]
    fn lone_runs_go_to_the_hosts_in_turn() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut lab, _, commit) = pool(tmp.path(), &["a", "b"]);
        lab.prepare(&commit).unwrap();
        let mut seen = Vec::new();
        for run in 1..=4 {
            let RunOutcome::Measured(m) = lab.run(&commit, spec(run)).unwrap() else {
                panic!()
            };
            let text = std::fs::read_to_string(m.output.unwrap()).unwrap();
            seen.push(text.split_whitespace().nth(4).unwrap().to_string());
        }
        assert_eq!(seen, ["a", "b", "a", "b"]);
    }

    #[test]
    fn a_lone_run_meant_for_a_host_that_is_down_is_made_on_another() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut lab, _, commit) = pool(tmp.path(), &["gone", "a"]);
        lab.prepare(&commit).unwrap();
        for run in 1..=3 {
            let outcome = lab.run(&commit, spec(run)).unwrap();
            assert!(matches!(outcome, RunOutcome::Measured(_)), "{outcome:?}");
        }
        assert!(lab.down.contains("gone"));
        assert_eq!(lab.totals().runs, 3);
        let (mut lab, _, commit) = pool(tmp.path().join("x").as_path(), &["gone"]);
        lab.prepare(&commit).unwrap();
        let RunOutcome::Failed { reason } = lab.run(&commit, spec(1)).unwrap() else {
            panic!()
        };
        assert!(reason.contains("gone is down"), "{reason}");
    }

    #[test]
    fn the_rest_of_a_round_cut_short_runs_only_on_the_hosts_asked_for() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut lab, _, commit) = pool(tmp.path(), &["a", "b", "c"]);
        lab.prepare(&commit).unwrap();
        let made = lab.run_on(&commit, spec(10), &[(1, 11), (2, 12)]).unwrap();
        let hosts: Vec<_> = made.iter().map(|r| r.host.clone().unwrap()).collect();
        assert_eq!(hosts, ["b", "c"]);
        for (r, (host, run)) in made.iter().zip([("b", 11), ("c", 12)]) {
            let RunOutcome::Measured(m) = &r.outcome else {
                panic!("{r:?}")
            };
            let text = std::fs::read_to_string(m.output.as_ref().unwrap()).unwrap();
            assert!(text.contains(&format!("on {host} run {run}")), "{text}");
        }
        assert_eq!(lab.totals().runs, 2);
        let err = lab.run_on(&commit, spec(13), &[(3, 13)]).unwrap_err();
        assert!(err.to_string().contains("no host number 3"), "{err}");
    }
}
