//! The PostgreSQL lab over several hosts: builds here, runs there.
//!
//! Each commit is built once, here, by [`PgLab`] (its build cache, its
//! fixups, its settings check); its install, and the install whose
//! pgbench drives the load, go to each host once ([`Sent`]: ssh copies
//! them, Slurm reads them on the shared filesystem). So does pgbisect
//! itself, keyed by a hash of its own file (the hosts' facts were checked
//! alike, so the binary runs there): each run is `pgbisect host-run` on
//! the host ([`super::host`]), which makes it with the very code a run
//! here is made with, in the host's lab folder beside its installs
//! (`<host's folder>/pg-lab/<host>`: templates kept there and reused,
//! the data directory, server logs, the servers' registry), and answers
//! with the outcome and what it cost.
//!
//! Before the first run every host is checked (the user PostgreSQL runs
//! as reaches the lab folder, a fixed pgbench is there) and what an
//! earlier run left there (a postmaster whose `host-run` was killed) is
//! stopped. A run that fails on a host is a failed run with the host's
//! reason (the server log's tail, pgbench's errors); a host that cannot
//! be reached is down, as for every lab of several hosts
//! ([`crate::lab::spread`]). Runs with instruments (the why-runs after a
//! culprit) are made here.

use super::PgLab;
use super::host::{self, Answer, Request};
use super::plan::RunPlan;
use crate::core::why::Instrumented;
use crate::error::UsageError;
use crate::hosts::{Backend, Job, JobEnd};
use crate::lab::spread::{OnHost, Ran, Sent, Spread, add_totals, join};
use crate::lab::{HostRun, Lab, Planned, RunSpec};
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use crate::placement::Placement;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a run on a host may take besides its pgbench runs and data: two
/// server starts and stops with pg_ctl's waits, and the host's set-up.
const RUN_MARGIN: Duration = Duration::from_secs(600);
/// How long checking a host before the first run may take.
const CHECK_LIMIT: Duration = Duration::from_secs(300);

/// Builds here with [`PgLab`], measures on the hosts.
pub struct PgPoolLab {
    local: PgLab,
    on: OnHosts,
    spread: Spread,
}

/// What the threads running on the hosts share.
struct OnHosts {
    sent: Sent,
    /// pgbisect itself here, staged for sending, and its key.
    me: (PathBuf, String),
    /// The request every run starts from (the host's folder and the run
    /// filled in per run).
    request: Request,
    /// `pgbisect-<hunt>-`: the jobs' names start so.
    job_prefix: String,
    runs_dir: PathBuf,
    /// Where the first run that said so placed its server and pgbench on
    /// its host (hosts are alike, so the others did the same).
    placement: HostsPlacement,
}

/// Where the hosts placed server and pgbench, as their first run said:
/// shared with whoever reports it.
pub type HostsPlacement = Arc<Mutex<Option<Placement>>>;

/// One commit's runs: the plan made here, and the installs it uses
/// (here, with their keys).
struct Work {
    plan: RunPlan,
    installs: Vec<(PathBuf, String)>,
}

impl PgPoolLab {
    /// Builds with `local`, runs on `backend`'s hosts, names jobs
    /// `<job_prefix><run>`, keeps the runs' output in `runs_dir`. Every
    /// host gets pgbisect and is checked first; a host on which runs
    /// cannot be made is an error naming it and what to do. `placement`
    /// gets where the hosts placed server and pgbench.
    pub fn new(
        local: PgLab,
        backend: Arc<dyn Backend>,
        (job_prefix, runs_dir): (&str, &Path),
        placement: HostsPlacement,
    ) -> anyhow::Result<PgPoolLab> {
        let me = stage_self(&local.work_root())?;
        let on = OnHosts {
            sent: Sent::new(backend),
            me,
            request: local.host_request()?,
            job_prefix: job_prefix.to_string(),
            runs_dir: runs_dir.to_path_buf(),
            placement,
        };
        on.check_hosts()?;
        Ok(PgPoolLab {
            local,
            on,
            spread: Spread::default(),
        })
    }

    /// What a run of `commit` needs, built first; why it cannot run when
    /// it does not build.
    fn work(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Result<Work, String>> {
        if let Some(reason) = self.local.ready_to_run(commit)? {
            return Ok(Err(reason));
        }
        let plan = match self.local.plan(commit, spec, "")? {
            Ok(plan) => plan,
            Err(reason) => return Ok(Err(reason)),
        };
        let installs = self
            .local
            .installs_for_run(&commit.id)
            .into_iter()
            .map(|path| {
                let key = install_key(&path);
                (path, key)
            })
            .collect();
        Ok(Ok(Work { plan, installs }))
    }
}

/// An install's key on the hosts: its folder's name, which the build
/// cache made from the commit and the build settings.
fn install_key(path: &Path) -> String {
    path.file_name().map_or_else(
        || "install".to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// pgbisect itself, copied to `<work>/host-tools/pgbisect-<hash>/` to be
/// sent to the hosts; the folder and its key.
fn stage_self(work: &Path) -> anyhow::Result<(PathBuf, String)> {
    use std::hash::{Hash, Hasher};
    let exe = std::env::current_exe().context("cannot find pgbisect's own program")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("cannot read {}", exe.display()))?;
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let key = format!("pgbisect-{:016x}", hasher.finish());
    let dir = work.join("host-tools").join(&key);
    let program = dir.join("pgbisect");
    if !program.is_file() {
        crate::folders::create_dir(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let part = dir.join("pgbisect.part");
        std::fs::copy(&exe, &part)
            .with_context(|| format!("cannot copy {} to {}", exe.display(), part.display()))?;
        std::fs::rename(&part, &program)
            .with_context(|| format!("cannot write {}", program.display()))?;
    }
    Ok((dir, key))
}

/// The host's lab folder: beside the installs sent to it (`me_there` is
/// `<host's folder>/installs/<key>` over ssh, or the staged folder under
/// the shared work dir with Slurm), one per host name.
fn lab_on(me_there: &str, host: &str) -> PathBuf {
    let me = Path::new(me_there);
    let beside = me.parent().and_then(Path::parent).unwrap_or(me);
    beside.join("pg-lab").join(host)
}

/// `path` with the install `local` in it replaced by `remote`.
fn moved(path: &Path, local: &Path, remote: &str) -> Option<PathBuf> {
    path.strip_prefix(local)
        .ok()
        .map(|rest| Path::new(remote).join(rest))
}

/// What to do about a run stopped at its deadline on a host.
const RUN_DEADLINE_HINT: &str = "its deadline covers the data copy, the warm-ups and the run, \
     each with a margin: a host this slow is busy with other work, or not alike the others";

/// How long one run on a host may take: making the template and a copy,
/// the warm-ups and the run, with pgbisect's deadlines for each.
fn run_limit(plan: &RunPlan) -> Duration {
    let options = &plan.options;
    let seconds = plan.seconds.unwrap_or(options.duration_secs);
    let warmup = options.warmup_secs.unwrap_or(seconds);
    crate::server::data_limit(options.scale) * 2
        + crate::server::time_limit(warmup) * options.warmup_runs
        + crate::server::time_limit(seconds)
        + RUN_MARGIN
}

impl OnHosts {
    fn backend(&self) -> &Arc<dyn Backend> {
        self.sent.backend()
    }

    /// Sends pgbisect to every host and checks each at once: the errors,
    /// one a host, when any.
    fn check_hosts(&self) -> anyhow::Result<()> {
        let hosts = self.backend().hosts();
        let checked: Vec<anyhow::Result<Result<Vec<String>, String>>> = std::thread::scope(|s| {
            let handles: Vec<_> = hosts
                .iter()
                .enumerate()
                .map(|(i, host)| s.spawn(move || self.check(i, host)))
                .collect();
            handles.into_iter().map(join).collect()
        });
        let mut problems = Vec::new();
        for (host, result) in hosts.iter().zip(checked) {
            match result? {
                Ok(notes) => {
                    for note in notes {
                        eprintln!("pgbisect: on {host}: {note}");
                    }
                }
                Err(problem) => problems.push(format!("{host}: {problem}")),
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(UsageError(format!(
            "runs of PostgreSQL cannot be made on every host:\n{}",
            problems.join("\n")
        ))
        .into())
    }

    /// Checks host number `i`: its notes, or why runs cannot be made there.
    fn check(&self, i: usize, host: &str) -> anyhow::Result<Result<Vec<String>, String>> {
        let output = self.runs_dir.join(format!("host-check-{i}.txt"));
        let ended = self.host_run(host, None, &format!("check-{i}"), CHECK_LIMIT, &output)?;
        Ok(match ended {
            Ok((_, Some(answer))) => match answer.error {
                Some(error) => Err(error),
                None => Ok(answer.notes),
            },
            Ok((text, None)) => Err(no_answer(&text)),
            Err(ran) => Err(failure_reason(&ran.outcome)),
        })
    }

    /// Runs `pgbisect host-run` on `host` with `plan` (`None`: a check),
    /// as the job `<prefix><name>`: its output and answer, or the run that
    /// could not be made (the host down, the job lost).
    fn host_run(
        &self,
        host: &str,
        plan: Option<RunPlan>,
        name: &str,
        limit: Duration,
        output: &Path,
    ) -> anyhow::Result<Result<(String, Option<Answer>), Ran>> {
        let (me, key) = &self.me;
        let me_there = match self.sent.ensure(host, me, key)? {
            Ok(path) => path,
            Err(reason) => return Ok(Err(Ran::down(format!("no run on {host}: {reason}")))),
        };
        let what = if plan.is_some() {
            "the pgbench run"
        } else {
            "the host's check"
        };
        let request = Request {
            lab: lab_on(&me_there, host),
            plan,
            ..self.request.clone()
        };
        let json = serde_json::to_string(&request).context("cannot encode a host's request")?;
        let job = Job {
            name: format!("{}{name}", self.job_prefix),
            script: "exec ./pgbisect host-run",
            env: vec![(host::REQUEST_ENV.to_string(), json)],
            dir: me_there,
            limit,
            what,
            deadline_hint: RUN_DEADLINE_HINT,
            output,
        };
        Ok(match self.backend().run(host, &job)? {
            JobEnd::Exited { code, output: text } => {
                let answer = Answer::find(&text);
                if answer.is_none() && code != 0 {
                    let reason = format!("exit status: {code} on {host}: {}", no_answer(&text));
                    return Ok(Err(Ran::made(RunOutcome::Failed { reason }, 0.0)));
                }
                Ok((text, answer))
            }
            JobEnd::Lost(reason) => Err(Ran::made(RunOutcome::Failed { reason }, 0.0)),
            JobEnd::HostDown(reason) => Err(Ran::down(reason)),
        })
    }
}

/// Why a run failed, from its outcome.
fn failure_reason(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Failed { reason } => reason.clone(),
        RunOutcome::Measured(_) => "measured".into(),
    }
}

/// What a job that gave no answer printed last.
fn no_answer(text: &str) -> String {
    let last: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .rev()
        .take(5)
        .collect();
    let last: Vec<&str> = last.into_iter().rev().collect();
    format!("pgbisect host-run gave no answer: {}", last.join(" / "))
}

impl OnHost for OnHosts {
    type Work = Work;

    fn hosts(&self) -> &[String] {
        self.backend().hosts()
    }

    fn run_on(&self, host: &str, work: &Work, spec: RunSpec) -> anyhow::Result<Ran> {
        let started = Instant::now();
        let mut plan = work.plan.for_spec(spec);
        for (local, key) in &work.installs {
            let there = match self.sent.ensure(host, local, key)? {
                Ok(path) => path,
                Err(reason) => return Ok(Ran::down(format!("no run on {host}: {reason}"))),
            };
            for path in [&mut plan.bin, &mut plan.pgbench] {
                if let Some(remote) = moved(path, local, &there) {
                    *path = remote;
                }
            }
        }
        let output = self
            .runs_dir
            .join(format!("run-{:05}-{}.txt", spec.run, plan.commit));
        let limit = run_limit(&plan);
        let name = spec.run.to_string();
        let (text, answer) = match self.host_run(host, Some(plan), &name, limit, &output)? {
            Ok(ended) => ended,
            Err(ran) => return Ok(ran),
        };
        let seconds = started.elapsed().as_secs_f64();
        let Some(answer) = answer else {
            let reason = format!("on {host}: {}", no_answer(&text));
            return Ok(Ran::made(RunOutcome::Failed { reason }, seconds));
        };
        let outcome = match (answer.error, answer.outcome) {
            (Some(error), _) => RunOutcome::Failed {
                reason: format!("on {host}: {error}"),
            },
            (None, Some(RunOutcome::Measured(mut m))) => {
                m.output = Some(output);
                RunOutcome::Measured(m)
            }
            (None, Some(RunOutcome::Failed { reason })) => RunOutcome::Failed {
                reason: format!("on {host}: {reason}"),
            },
            (None, None) => RunOutcome::Failed {
                reason: format!("on {host}: the host made no run"),
            },
        };
        if let Some(placement) = answer.placement {
            let mut first = self
                .placement
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            first.get_or_insert(placement);
        }
        let mut totals = answer.totals;
        totals.runs = totals.runs.max(1);
        Ok(Ran {
            outcome,
            totals,
            host_down: false,
        })
    }
}

impl Lab for PgPoolLab {
    /// Builds here, then puts the install on every host at once; a host
    /// that cannot take it now gets it before its next run.
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        let prepared = self.local.prepare(commit)?;
        if matches!(prepared, Prepared::Ready { .. }) {
            for local in self.local.installs_for_run(&commit.id) {
                self.on.sent.everywhere(&local, &install_key(&local))?;
            }
        }
        Ok(prepared)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        match self.work(commit, spec)? {
            Ok(work) => self.spread.lone(&self.on, &work, spec),
            Err(reason) => Ok(RunOutcome::Failed { reason }),
        }
    }

    fn hosts(&self) -> Vec<String> {
        self.on.hosts().to_vec()
    }

    /// Each commit's work is made once; the runs of a commit whose work
    /// cannot be made fail with the reason, the others are made at once.
    fn run_on(&mut self, spec: RunSpec, runs: &[Planned]) -> anyhow::Result<Vec<HostRun>> {
        // Each distinct commit's work, and for each run the place of its own.
        let mut ids: Vec<&str> = Vec::new();
        let mut works: Vec<Result<Work, String>> = Vec::new();
        let mut which = Vec::with_capacity(runs.len());
        for p in runs {
            let i = match ids.iter().position(|id| *id == p.commit.id) {
                Some(i) => i,
                None => {
                    ids.push(&p.commit.id);
                    works.push(self.work(p.commit, spec)?);
                    works.len() - 1
                }
            };
            which.push(i);
        }
        let asked: Vec<(usize, u64, &Work)> = runs
            .iter()
            .zip(&which)
            .filter_map(|(p, &i)| works[i].as_ref().ok().map(|w| (p.host, p.run, w)))
            .collect();
        let mut made = self.spread.some(&self.on, spec, &asked)?.into_iter();
        let hosts = self.on.hosts();
        let mut round = Vec::with_capacity(runs.len());
        for (p, &i) in runs.iter().zip(&which) {
            round.push(match &works[i] {
                Ok(_) => made
                    .next()
                    .context("the hosts gave back fewer runs than were asked for")?,
                Err(reason) => HostRun {
                    host: hosts.get(p.host).cloned(),
                    outcome: RunOutcome::Failed {
                        reason: reason.clone(),
                    },
                },
            });
        }
        Ok(round)
    }

    /// Made here: the instruments (pgbench's transaction log, wait events,
    /// a CPU profile) are read on this machine.
    fn instrumented_run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<Instrumented> {
        self.local.instrumented_run(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        let mut totals = self.local.totals();
        add_totals(&mut totals, &self.spread.totals());
        totals
    }

    fn describe(&self) -> String {
        let backend = self.on.backend();
        format!(
            "{}; on {} ({})",
            self.local.describe(),
            backend.hosts().join(", "),
            backend.kind()
        )
    }

    fn run_length(&self) -> Option<u32> {
        self.local.run_length()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_lab_folder_is_beside_its_installs() {
        assert_eq!(
            lab_on(
                "/root/.cache/pgbisect-hosts/box1/installs/pgbisect-00ff",
                "box1"
            ),
            PathBuf::from("/root/.cache/pgbisect-hosts/box1/pg-lab/box1")
        );
        assert_eq!(
            lab_on("/shared/work/host-tools/pgbisect-00ff", "node7"),
            PathBuf::from("/shared/work/pg-lab/node7")
        );
    }

    #[test]
    fn paths_in_an_install_move_with_it() {
        let local = Path::new("/w/installs/abc-123");
        assert_eq!(
            moved(
                Path::new("/w/installs/abc-123/bin/pgbench"),
                local,
                "/h/installs/abc-123"
            ),
            Some(PathBuf::from("/h/installs/abc-123/bin/pgbench"))
        );
        assert_eq!(moved(Path::new("/usr/bin/pgbench"), local, "/h"), None);
        assert_eq!(install_key(local), "abc-123");
    }

    #[test]
    fn a_runs_deadline_covers_its_data_warmups_and_run() {
        let plan = RunPlan {
            commit: "abc".into(),
            bin: "/b".into(),
            pgbench: "/p".into(),
            template: "t".into(),
            options: crate::bench::PgbenchOptions {
                scale: 10,
                duration_secs: 5,
                warmup_runs: 1,
                warmup_secs: Some(2),
                ..Default::default()
            },
            settings: Vec::new(),
            max_connections: 100,
            clients: 1,
            run: 1,
            seconds: Some(30),
            label: String::new(),
        };
        let limit = run_limit(&plan);
        let least = crate::server::data_limit(10) * 2
            + crate::server::time_limit(2)
            + crate::server::time_limit(30);
        assert!(limit > least, "{limit:?}");
    }

    #[test]
    fn a_job_that_gave_no_answer_is_told_by_its_last_lines() {
        let said = no_answer("a\n\nb\nc\nd\ne\nf\n");
        assert_eq!(said, "pgbisect host-run gave no answer: b / c / d / e / f");
    }
}
