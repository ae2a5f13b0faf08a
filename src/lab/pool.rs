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
//! Rounds, lone runs in turn and hosts that go away are handled as for
//! every lab of several hosts ([`crate::lab::spread`]). A run that was cut
//! short (its deadline, a job cancelled or preempted, its processes
//! killed) is a failed run with the reason, and is not made again.

use crate::core::fingerprint::fingerprint;
use crate::hosts::{Backend, Job, JobEnd};
use crate::lab::command::{CommandLab, read_run};
use crate::lab::spread::{OnHost, Ran, Sent, Spread};
use crate::lab::{HostRun, Lab, Planned, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Builds here with the profile's commands, measures on the hosts.
pub struct PoolLab {
    builder: CommandLab,
    on: OnHosts,
    spread: Spread,
}

/// What the threads running on the hosts share.
struct OnHosts {
    /// The benchmark command, its deadline, and the build command's
    /// fingerprint (part of an install's key).
    benchmark: String,
    limit: std::time::Duration,
    build_key: String,
    /// `pgbisect-<hunt>-`: the jobs' names start so.
    job_prefix: String,
    runs_dir: PathBuf,
    /// Where each install is on each host.
    sent: Sent,
}

impl PoolLab {
    /// Builds with `builder`, runs on `backend`'s hosts, names jobs
    /// `<job_prefix><run>`, keeps the runs' output in `runs_dir`.
    pub fn new(
        builder: CommandLab,
        backend: Arc<dyn Backend>,
        job_prefix: &str,
        runs_dir: &Path,
    ) -> PoolLab {
        let commands = builder.commands();
        let on = OnHosts {
            benchmark: commands.benchmark.clone(),
            limit: commands.benchmark_limit,
            build_key: fingerprint(commands.build.as_deref().unwrap_or(""))[..12].to_string(),
            job_prefix: job_prefix.to_string(),
            runs_dir: runs_dir.to_path_buf(),
            sent: Sent::new(backend),
        };
        PoolLab {
            builder,
            on,
            spread: Spread::default(),
        }
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
        local: &Path,
    ) -> anyhow::Result<Result<String, String>> {
        if !local.is_dir() {
            // No build command: an empty install, for the runs' folder.
            crate::folders::create_dir(local)?;
        }
        self.sent.ensure(host, local, &self.key(commit))
    }
}

impl OnHost for OnHosts {
    /// The commit and its install here.
    type Work = (Commit, PathBuf);

    fn hosts(&self) -> &[String] {
        self.sent.backend().hosts()
    }

    fn run_on(
        &self,
        host: &str,
        (commit, local): &(Commit, PathBuf),
        spec: RunSpec,
    ) -> anyhow::Result<Ran> {
        let started = Instant::now();
        let prefix = match self.ensure_sent(host, commit, local)? {
            Ok(path) => path,
            Err(reason) => return Ok(Ran::down(format!("no run on {host}: {reason}"))),
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
            what: crate::hosts::BENCHMARK_COMMAND.0,
            deadline_hint: crate::hosts::BENCHMARK_COMMAND.1,
            output: &output,
        };
        let outcome = match self.sent.backend().run(host, &job)? {
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
        Ok(Ran::made(outcome, started.elapsed().as_secs_f64()))
    }
}

impl Lab for PoolLab {
    /// Builds here, then puts the install on every host at once; a host
    /// that cannot take it now gets it before its next run.
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let prepared = self.builder.prepare(commit)?;
        if matches!(prepared, Prepared::Ready { .. }) {
            let local = self.builder.prefix(commit);
            if !local.is_dir() {
                crate::folders::create_dir(&local)?;
            }
            self.on.sent.everywhere(&local, &self.on.key(commit))?;
        }
        Ok(prepared)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        let work = (commit.clone(), self.builder.prefix(commit));
        self.spread.lone(&self.on, &work, spec)
    }

    fn hosts(&self) -> Vec<String> {
        self.on.hosts().to_vec()
    }

    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        let works: Vec<(Commit, PathBuf)> = runs
            .iter()
            .map(|p| (p.commit.clone(), self.builder.prefix(p.commit)))
            .collect();
        let asked: Vec<(usize, u64, &(Commit, PathBuf))> = runs
            .iter()
            .zip(&works)
            .map(|(p, w)| (p.host, p.run, w))
            .collect();
        self.spread.some(&self.on, spec, &asked)
    }

    fn totals(&self) -> LabTotals {
        let spread = self.spread.totals();
        LabTotals {
            runs: spread.runs,
            bench_seconds: spread.bench_seconds,
            ..self.builder.totals()
        }
    }

    fn describe(&self) -> String {
        let backend = self.on.sent.backend();
        format!(
            "{}; on {} ({})",
            self.builder.describe(),
            backend.hosts().join(", "),
            backend.kind()
        )
    }
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
    use std::sync::Mutex;
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
        assert!(lab.spread.is_down("gone"));
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
        let planned = |host, run| Planned {
            commit: &commit,
            host,
            run,
        };
        let made = lab
            .run_on(spec(10), &[planned(1, 11), planned(2, 12)])
            .unwrap();
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
        let err = lab.run_on(spec(13), &[planned(3, 13)]).unwrap_err();
        assert!(err.to_string().contains("no host number 3"), "{err}");
    }

    #[test]
    fn a_round_shared_among_commits_runs_each_on_its_host() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut lab, _, first) = pool(tmp.path(), &["a", "b", "c"]);
        let repo_dir = tmp.path().join("repo");
        std::fs::write(repo_dir.join("level"), "800\n").unwrap();
        git(&repo_dir, &["commit", "-q", "-am", "two"]);
        let second = Commit::bare(git(&repo_dir, &["rev-parse", "HEAD"]));
        lab.prepare(&first).unwrap();
        lab.prepare(&second).unwrap();
        let round = [(&first, 0), (&second, 1), (&first, 2)].map(|(commit, host)| Planned {
            commit,
            host,
            run: 20 + host as u64,
        });
        let made = lab.run_on(spec(20), &round).unwrap();
        let got: Vec<(String, f64)> = made
            .iter()
            .map(|r| match &r.outcome {
                RunOutcome::Measured(m) => (r.host.clone().unwrap(), m.tps),
                other => panic!("{other:?}"),
            })
            .collect();
        let want = [("a", 1000.0), ("b", 800.0), ("c", 1000.0)];
        let want: Vec<(String, f64)> = want.iter().map(|(h, t)| (h.to_string(), *t)).collect();
        assert_eq!(got, want);
    }
}
