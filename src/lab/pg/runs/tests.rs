//! A run's bookkeeping against a fake machinery that records what it was
//! asked to do.

use super::*;
use crate::bench::{Builtin, PgbenchOptions};
use crate::core::counts::{Lengths, MAX_PROBES};
use crate::counts::{Counter, Launcher};
use crate::server::RunAs;
use std::cell::RefCell;
use std::rc::Rc;

/// What the fake was asked to do, in order.
#[derive(Debug, Default)]
struct Calls {
    templates_made: u32,
    /// The template the data directory was last copied from.
    copied_from: Option<PathBuf>,
    /// The folders of the templates asked for, made or found.
    template_dirs: Vec<PathBuf>,
    /// Templates whose setup SQL was run and failed.
    setups_failed: u32,
    copies: Vec<PathBuf>,
    starts: u32,
    pgbench: Vec<PathBuf>,
    stops: u32,
    /// The pin of each server started, and of each pgbench run.
    server_pins: Vec<Pin>,
    pgbench_pins: Vec<Pin>,
    /// The arguments of each pgbench run.
    args: Vec<Vec<String>>,
    /// Wait samplers started and finished.
    samplers: (u32, u32),
}

/// Runs measure `tps` unless told to fail; the first `fail_starts`
/// starts fail, and so does the pgbench run whose output is `fail_output`.
struct Fake {
    calls: Rc<RefCell<Calls>>,
    tps: f64,
    fail_template: bool,
    fail_setup: bool,
    fail_starts: u32,
    /// Templates are found made (by an earlier pgbisect), not made now.
    found: bool,
    /// The server of this `bin` does not start on a copy of this template.
    refuses: Option<(PathBuf, PathBuf)>,
    disk_full: bool,
    fail_output: Option<PathBuf>,
    /// pgbench refuses `--log-prefix`, as before 10.
    old_pgbench: bool,
}

impl Machinery for Fake {
    fn ensure_template(
        &mut self,
        spec: &TemplateSpec,
    ) -> Result<(DataTemplate, bool), ServerError> {
        if self.fail_template {
            return Err(ServerError::BadDataDir {
                path: spec.dir.clone(),
                detail: "initdb failed".into(),
            });
        }
        if self.fail_setup {
            self.calls.borrow_mut().setups_failed += 1;
            return Err(ServerError::SetupFailed {
                path: PathBuf::from("/p/schema.sql"),
                tail: "ERROR:  syntax error at or near \"GENERATED\"".into(),
            });
        }
        self.calls.borrow_mut().template_dirs.push(spec.dir.clone());
        if self.found && !spec.dir.to_string_lossy().contains("-own") {
            return Ok((DataTemplate::at(spec.dir.clone()), false));
        }
        self.calls.borrow_mut().templates_made += 1;
        Ok((DataTemplate::at(spec.dir.clone()), true))
    }

    fn fresh_copy(&mut self, template: &DataTemplate, data: &Path) -> Result<(), ServerError> {
        self.calls.borrow_mut().copies.push(data.to_path_buf());
        self.calls.borrow_mut().copied_from = Some(template.dir().to_path_buf());
        Ok(())
    }

    fn start(&mut self, server: Server) -> Result<Box<dyn Session>, ServerError> {
        let mut calls = self.calls.borrow_mut();
        calls.starts += 1;
        calls.server_pins.push(server.pin.clone());
        if self.disk_full {
            let full = std::io::Error::from_raw_os_error(28);
            return Err(ServerError::io("cannot write the server log", full));
        }
        let refused = self.refuses.as_ref().is_some_and(|(bin, dir)| {
            *bin == server.bin && calls.copied_from.as_ref() == Some(dir)
        });
        if calls.starts <= self.fail_starts || refused {
            return Err(ServerError::StopFailed {
                data_dir: server.data_dir,
                pid: 1,
            });
        }
        Ok(Box::new(FakeSession {
            calls: self.calls.clone(),
            tps: self.tps,
            fail_output: self.fail_output.clone(),
            old_pgbench: self.old_pgbench,
        }))
    }
}

struct FakeSession {
    calls: Rc<RefCell<Calls>>,
    tps: f64,
    fail_output: Option<PathBuf>,
    old_pgbench: bool,
}

impl Session for FakeSession {
    fn conn(&self, dbname: &str) -> Conn {
        Conn {
            socket_dir: PathBuf::from("/sock"),
            port: 5432,
            dbname: dbname.into(),
        }
    }

    fn run_pgbench(
        &self,
        _: &Path,
        args: &[String],
        pin: &Pin,
        out: &Path,
        _: Duration,
    ) -> Result<PgbenchReport, BenchError> {
        self.calls.borrow_mut().pgbench.push(out.to_path_buf());
        self.calls.borrow_mut().args.push(args.to_vec());
        let prefix = args.iter().find_map(|a| a.strip_prefix("--log-prefix="));
        if let (Some(prefix), true) = (prefix, self.old_pgbench) {
            return Err(BenchError::Failed {
                command: "pgbench".into(),
                status: "exit status: 1".into(),
                tail: format!("pgbench: unrecognized option '--log-prefix={prefix}'"),
            });
        }
        if args.iter().any(|a| a == "-r") {
            // What pgbench -r writes.
            let table = "statement latencies in milliseconds and failures:\n         \
                         0.050           0  SELECT 1;\n";
            std::fs::write(out, format!("tps = {}\n{table}", self.tps)).unwrap();
        }
        if let Some(prefix) = prefix {
            // What --log writes.
            std::fs::write(format!("{prefix}.77"), "0 0 100 0 1 1\n0 1 300 0 1 2\n").unwrap();
        }
        self.calls.borrow_mut().pgbench_pins.push(pin.clone());
        if self.fail_output.as_deref() == Some(out) {
            return Err(BenchError::Failed {
                command: "pgbench".into(),
                status: "exit status: 2".into(),
                tail: "connection refused".into(),
            });
        }
        Ok(PgbenchReport {
            tps: self.tps,
            latency_ms: Some(1.0),
            failed_transactions: None,
            transactions: None,
        })
    }

    fn stop(self: Box<Self>) -> Result<(), ServerError> {
        self.calls.borrow_mut().stops += 1;
        Ok(())
    }

    fn server_pid(&self) -> Option<u32> {
        Some(4242)
    }

    fn sample_wait_events(
        &self,
        _: &Path,
    ) -> Result<Result<Box<dyn WaitSampler>, String>, ServerError> {
        self.calls.borrow_mut().samplers.0 += 1;
        Ok(Ok(Box::new(FakeSampler {
            calls: self.calls.clone(),
        })))
    }
}

struct FakeSampler {
    calls: Rc<RefCell<Calls>>,
}

impl WaitSampler for FakeSampler {
    fn finish(self: Box<Self>) -> Result<BTreeMap<String, u64>, ServerError> {
        self.calls.borrow_mut().samplers.1 += 1;
        Ok([("CPU".to_string(), 7), ("Client:ClientRead".to_string(), 3)].into())
    }
}

/// Records the PID it was given and returns it as its profile.
#[derive(Default)]
struct FakeProfiler {
    started: Option<(u32, u32)>,
}

impl ServerProfiler for FakeProfiler {
    fn start(&mut self, pid: u32, seconds: u32) -> anyhow::Result<()> {
        self.started = Some((pid, seconds));
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::json!({ "pid": self.started.map(|s| s.0) }))
    }
}

fn fake() -> (Fake, Rc<RefCell<Calls>>) {
    let calls = Rc::new(RefCell::new(Calls::default()));
    let fake = Fake {
        calls: calls.clone(),
        tps: 1234.5,
        fail_template: false,
        fail_setup: false,
        fail_starts: 0,
        found: false,
        refuses: None,
        disk_full: false,
        fail_output: None,
        old_pgbench: false,
    };
    (fake, calls)
}

fn options(builtin: Builtin, warmup_runs: u32) -> PgbenchOptions {
    PgbenchOptions {
        builtin: Some(builtin),
        warmup_runs,
        ..PgbenchOptions::default()
    }
}

fn template_spec(dir: &str) -> TemplateSpec {
    TemplateSpec {
        bin: PathBuf::from("/install/bin"),
        pgbench: PathBuf::from("/install/bin/pgbench"),
        dir: PathBuf::from(dir),
        options: PgbenchOptions::default(),
        run_as: RunAs::CurrentUser,
        registry_dir: None,
    }
}

/// Run `run` of a commit on the template in `template_dir`.
fn run(runs: &mut Runs, template_dir: &str, run: u64) -> anyhow::Result<RunOutcome> {
    pinned_run(runs, template_dir, run, (Pin::none(), Pin::none()))
}

/// Run `run`, its server and pgbench on the pins given.
fn pinned_run(
    runs: &mut Runs,
    template_dir: &str,
    run: u64,
    (server_pin, pgbench_pin): (Pin, Pin),
) -> anyhow::Result<RunOutcome> {
    let spec = template_spec(template_dir);
    runs.measure(job(&spec, run, (server_pin, pgbench_pin)))
}

fn job(spec: &TemplateSpec, run: u64, (server_pin, pgbench_pin): (Pin, Pin)) -> RunJob<'_> {
    RunJob {
        transaction_log: None,
        sampled_log: None,
        template: spec,
        server: Server {
            bin: PathBuf::from("/install/bin"),
            data_dir: PathBuf::from("/work/data/current"),
            port: 5432,
            socket_dir: PathBuf::from("/sock"),
            settings: vec![],
            log: PathBuf::from(format!("/logs/server-{run}.log")),
            run_as: RunAs::CurrentUser,
            registry_dir: None,
            pin: server_pin,
            launcher: None,
        },
        pgbench: PathBuf::from("/install/bin/pgbench"),
        pgbench_pin,
        spec: RunSpec {
            clients: 4,
            run,
            seconds: None,
        },
        out: PathBuf::from(format!("/runs/{run}")),
    }
}

#[test]
fn an_instrumented_run_reads_statements_percentiles_waits_and_a_profile() {
    let (fake, calls) = fake();
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 1));
    let tmp = tempfile::tempdir().unwrap();
    let spec = template_spec("/t/a");
    let mut job = job(&spec, 9, (Pin::none(), Pin::none()));
    job.out = tmp.path().join("why-run-9");
    job.transaction_log = Some(tmp.path().join("log-9"));
    let mut profiler = FakeProfiler::default();
    let got = runs.measure_instrumented(job, Some(&mut profiler)).unwrap();
    let Instrumented::Measured(run) = got else {
        panic!("{got:?}")
    };
    assert_eq!((run.clients, run.tps), (4, 1234.5));
    assert_eq!(run.statements.len(), 1);
    assert_eq!(run.statements[0].ms, 0.05);
    let latency = run.latency.unwrap();
    assert_eq!(
        (latency.p50_ms, latency.p99_ms, latency.transactions),
        (0.1, 0.3, 2)
    );
    assert_eq!(
        run.waits,
        WaitEvents::Sampled([("CPU".to_string(), 7), ("Client:ClientRead".to_string(), 3)].into())
    );
    assert_eq!(run.profile, Some(serde_json::json!({ "pid": 4242 })));
    assert_eq!(profiler.started, Some((4242, 10)));
    let calls = calls.borrow();
    // Only the measured run is instrumented; the database name stays last.
    assert_eq!(calls.samplers, (1, 1));
    assert!(!calls.args[0].contains(&"-r".to_string()));
    let measured = &calls.args[1];
    assert!(measured.contains(&"-r".to_string()), "{measured:?}");
    assert_eq!(measured.last().map(String::as_str), Some("postgres"));
    // The transaction log was read and removed.
    assert!(!tmp.path().join("log-9.77").exists());
}

#[test]
fn a_pgbench_without_log_prefix_is_instrumented_without_the_log() {
    let (mut fake, calls) = fake();
    fake.old_pgbench = true;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 0));
    let tmp = tempfile::tempdir().unwrap();
    let spec = template_spec("/t/a");
    for n in [9, 10] {
        let mut job = job(&spec, n, (Pin::none(), Pin::none()));
        job.out = tmp.path().join(format!("why-run-{n}"));
        job.transaction_log = Some(tmp.path().join(format!("log-{n}")));
        let got = runs.measure_instrumented(job, None).unwrap();
        let Instrumented::Measured(run) = got else {
            panic!("{got:?}")
        };
        // The statements and the throughput, no percentiles.
        assert_eq!((run.tps, run.statements.len()), (1234.5, 1));
        assert_eq!(run.latency, None);
    }
    // The first run was refused and made again without the log; the
    // second went without it at once.
    let calls = calls.borrow();
    let logged: Vec<bool> = calls
        .args
        .iter()
        .map(|a| a.iter().any(|w| w.starts_with("--log")))
        .collect();
    assert_eq!(logged, [true, false, false]);
}

#[test]
fn a_plain_run_with_a_sampled_log_reads_its_percentiles_and_removes_the_log() {
    for old_pgbench in [false, true] {
        let (mut fake, calls) = fake();
        fake.old_pgbench = old_pgbench;
        let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 0));
        let tmp = tempfile::tempdir().unwrap();
        let spec = template_spec("/t/a");
        let mut job = job(&spec, 3, (Pin::none(), Pin::none()));
        job.out = tmp.path().join("run-3");
        job.sampled_log = Some((tmp.path().join("log-3"), 0.05));
        let RunOutcome::Measured(m) = runs.measure(job).unwrap() else {
            panic!("not measured")
        };
        let calls = calls.borrow();
        let first = &calls.args[0];
        assert!(
            first.contains(&"--sampling-rate=0.05".to_string()),
            "{first:?}"
        );
        assert!(!first.contains(&"-r".to_string()), "a plain run: {first:?}");
        assert_eq!(first.last().map(String::as_str), Some("postgres"));
        if old_pgbench {
            // Refused, and made again without the log.
            assert_eq!(calls.args.len(), 2);
            assert!(!calls.args[1].iter().any(|a| a.starts_with("--log")));
            assert_eq!(m.percentiles, None);
        } else {
            let p = m.percentiles.expect("percentiles");
            assert_eq!((p.p50_ms, p.p99_ms, p.transactions), (0.1, 0.3, 2));
            assert!(!tmp.path().join("log-3.77").exists(), "the log is removed");
        }
    }
}

fn tps(outcome: &RunOutcome) -> f64 {
    match outcome {
        RunOutcome::Measured(m) => m.tps,
        RunOutcome::Failed { reason } => panic!("failed: {reason}"),
    }
}

#[test]
fn a_read_only_workload_reuses_its_copy_and_counts_every_warm_up() {
    let (fake, calls) = fake();
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 2));
    for n in 1..=3 {
        assert_eq!(tps(&run(&mut runs, "/t/a", n).unwrap()), 1234.5);
    }
    let calls = calls.borrow();
    assert_eq!(calls.templates_made, 1, "the template is made once");
    assert_eq!(calls.copies.len(), 1, "one copy serves every read-only run");
    assert_eq!((calls.starts, calls.stops), (3, 3), "a server a run");
    assert_eq!(
        calls.pgbench[..3],
        [
            "/runs/1-warmup1.txt",
            "/runs/1-warmup2.txt",
            "/runs/1-run.txt"
        ]
        .map(PathBuf::from)
    );
    let t = runs.totals();
    assert_eq!((t.runs, t.warmup_runs), (9, 6));
    assert_eq!((t.setup.templates, t.setup.setups), (1, 3));
    assert_eq!(t.builds, 0, "builds are not counted by runs");
}

#[test]
fn a_later_process_reuses_a_read_only_copy_it_is_told_of_and_no_written_one() {
    let (machinery, calls) = fake();
    let mut first = Runs::new(Box::new(machinery), options(Builtin::SelectOnly, 0));
    run(&mut first, "/t/a", 1).unwrap();
    let left = first.unwritten_copy().cloned();
    assert_eq!(left, Some(DataTemplate::at("/t/a".into())));
    let (machinery, later) = fake();
    let mut second = Runs::new(Box::new(machinery), options(Builtin::SelectOnly, 0))
        .with_unwritten_copy(left.clone());
    run(&mut second, "/t/a", 2).unwrap();
    assert!(later.borrow().copies.is_empty(), "the copy was reused");
    // Of another template, or by a workload that writes: a fresh copy.
    run(&mut second, "/t/b", 3).unwrap();
    assert_eq!(later.borrow().copies.len(), 1);
    let (machinery, writes) = fake();
    let mut third =
        Runs::new(Box::new(machinery), options(Builtin::TpcbLike, 0)).with_unwritten_copy(left);
    run(&mut third, "/t/a", 4).unwrap();
    assert_eq!(writes.borrow().copies.len(), 1);
    assert!(
        third.unwritten_copy().is_none(),
        "a written copy is not offered"
    );
    assert_eq!(calls.borrow().copies.len(), 1);
}

#[test]
fn the_server_and_every_pgbench_run_get_their_pins() {
    let (fake, calls) = fake();
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 2));
    let cpus = |text: &str| Some(crate::placement::CpuSet::parse(text).unwrap());
    let server = Pin::new(cpus("0-2"), Some(0));
    let pgbench = Pin::new(cpus("3"), Some(0));
    pinned_run(&mut runs, "/t/a", 1, (server.clone(), pgbench.clone())).unwrap();
    let calls = calls.borrow();
    assert_eq!(calls.server_pins, [server]);
    assert_eq!(
        calls.pgbench_pins,
        [pgbench.clone(), pgbench.clone(), pgbench]
    );
}

#[test]
fn a_write_workload_gets_a_fresh_copy_every_run_and_a_new_format_its_template() {
    let (fake, calls) = fake();
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 0));
    run(&mut runs, "/t/a", 1).unwrap();
    run(&mut runs, "/t/a", 2).unwrap();
    run(&mut runs, "/t/b", 3).unwrap();
    let calls = calls.borrow();
    assert_eq!(calls.copies.len(), 3);
    assert_eq!(calls.templates_made, 2);
    assert_eq!(runs.totals().warmup_runs, 0);
}

#[test]
fn a_failed_run_is_an_outcome_and_the_next_run_starts_from_a_new_copy() {
    let (mut fake, calls) = fake();
    fake.fail_output = Some(PathBuf::from("/runs/2-run.txt"));
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 1));
    run(&mut runs, "/t/a", 1).unwrap();
    let outcome = run(&mut runs, "/t/a", 2).unwrap();
    let RunOutcome::Failed { reason } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(reason.contains("connection refused"), "{reason}");
    run(&mut runs, "/t/a", 3).unwrap();
    let calls = calls.borrow();
    assert_eq!(
        calls.copies.len(),
        2,
        "the data a failed run left is not reused"
    );
    assert_eq!(
        calls.stops, 3,
        "the server of the failed run is stopped too"
    );
}

#[test]
fn a_server_that_does_not_start_fails_the_run_and_a_full_disk_stops_the_hunt() {
    let (mut fake, calls) = fake();
    fake.fail_starts = 1;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 1));
    assert!(matches!(
        run(&mut runs, "/t/a", 1).unwrap(),
        RunOutcome::Failed { .. }
    ));
    run(&mut runs, "/t/a", 2).unwrap();
    assert_eq!(calls.borrow().copies.len(), 2);
    assert!(
        calls.borrow().pgbench.len() == 2,
        "nothing ran on the server that did not start"
    );

    let (mut fake, _) = self::fake();
    fake.disk_full = true;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 1));
    let err = run(&mut runs, "/t/a", 1).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot write the server log"),
        "{err:#}"
    );
}

#[test]
fn a_template_that_cannot_be_made_fails_the_run_before_any_server_starts() {
    let (mut fake, calls) = fake();
    fake.fail_template = true;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 1));
    let outcome = run(&mut runs, "/t/a", 1).unwrap();
    assert!(matches!(&outcome, RunOutcome::Failed { reason } if reason.contains("initdb failed")));
    assert_eq!(calls.borrow().starts, 0);
    assert_eq!(runs.totals().runs, 0);
}

#[test]
fn setup_sql_that_fails_fails_every_run_of_that_template_with_psqls_words_made_once() {
    let (mut fake, calls) = fake();
    fake.fail_setup = true;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 1));
    for _ in 0..3 {
        let outcome = run(&mut runs, "/t/a", 1).unwrap();
        let RunOutcome::Failed { reason } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(
            reason.contains("setup SQL /p/schema.sql failed"),
            "{reason}"
        );
        assert!(reason.contains("syntax error at or near"), "{reason}");
    }
    assert_eq!(calls.borrow().setups_failed, 1);
    assert_eq!(calls.borrow().starts, 0);
}

#[test]
fn a_server_that_does_not_start_on_a_template_others_made_gets_its_own_once() {
    let (mut fake, calls) = fake();
    fake.found = true;
    fake.fail_starts = 1;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 0));
    let outcome = run(&mut runs, "/t/a", 1).unwrap();
    assert!(matches!(outcome, RunOutcome::Measured(_)), "{outcome:?}");
    // Later runs of the commit start on its own template at once.
    run(&mut runs, "/t/a", 2).unwrap();
    let calls = calls.borrow();
    assert_eq!(calls.starts, 3);
    assert_eq!(calls.templates_made, 1, "its own template is made once");
    let own = &calls.template_dirs[1];
    assert!(own.starts_with("/t") && own != Path::new("/t/a"), "{own:?}");
    assert_eq!(calls.template_dirs.len(), 2, "{:?}", calls.template_dirs);
}

#[test]
fn a_server_that_does_not_start_on_its_own_template_either_fails_the_run() {
    let (mut fake, calls) = fake();
    fake.found = true;
    fake.fail_starts = 3;
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 0));
    for n in 1..=2 {
        let outcome = run(&mut runs, "/t/a", n).unwrap();
        assert!(matches!(outcome, RunOutcome::Failed { .. }), "{outcome:?}");
    }
    let calls = calls.borrow();
    assert_eq!(calls.templates_made, 1, "the template is made again once");
    assert_eq!(calls.starts, 3, "then the commit is judged by its own");
    assert!(calls.pgbench.is_empty());
}

#[test]
fn a_template_another_commit_made_here_is_made_again_for_one_whose_server_refuses_it() {
    let (mut fake, calls) = fake();
    fake.refuses = Some((PathBuf::from("/other/bin"), PathBuf::from("/t/a")));
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 0));
    run(&mut runs, "/t/a", 1).unwrap();
    let mut other = template_spec("/t/a");
    other.bin = PathBuf::from("/other/bin");
    let mut job = job(&other, 2, (Pin::none(), Pin::none()));
    job.server.bin = other.bin.clone();
    let outcome = runs.measure(job).unwrap();
    assert!(matches!(outcome, RunOutcome::Measured(_)), "{outcome:?}");
    let calls = calls.borrow();
    assert_eq!(calls.templates_made, 2);
    assert_eq!(calls.starts, 3);
    assert_ne!(calls.template_dirs[1], PathBuf::from("/t/a"));

    // Its own template refused too: the commit is broken, and the
    // template its server refused is not made again for it.
    let (mut fake, calls) = self::fake();
    fake.refuses = Some((PathBuf::from("/install/bin"), PathBuf::from("/t/a")));
    let mut runs = Runs::new(Box::new(fake), options(Builtin::TpcbLike, 0));
    let outcome = run(&mut runs, "/t/a", 1).unwrap();
    assert!(matches!(outcome, RunOutcome::Failed { .. }), "{outcome:?}");
    assert_eq!(calls.borrow().templates_made, 1, "it made that one itself");
}

/// Counts what each pgbench run asked for (`-t`, a client's): a backend
/// of its own of 1,000 instructions, and 50 a transaction of each of the
/// job's 4 clients.
struct FakeCounter {
    calls: Rc<RefCell<Calls>>,
}

impl Counter for FakeCounter {
    fn name(&self) -> &str {
        "fake counter"
    }

    fn launcher(&self, _: &Path, dir: &Path, _: Option<u32>) -> std::io::Result<Launcher> {
        Ok(Launcher {
            program: dir.join("postgres-counted"),
            counts: dir.join("counts"),
        })
    }

    fn ended(&self, _: &Launcher) -> std::io::Result<BTreeMap<u32, u64>> {
        let calls = self.calls.borrow();
        Ok((calls.args.iter().enumerate())
            .map(|(i, args)| (i as u32 + 1, 1000 + 4 * 50 * transactions(args)))
            .collect())
    }
}

/// The transactions a client (`-t`) of a pgbench run's arguments.
fn transactions(args: &[String]) -> u64 {
    let at = args.iter().position(|a| a == "-t").expect("-t");
    args[at + 1].parse().unwrap()
}

#[test]
fn a_workloads_first_counted_run_is_fitted_on_a_server_of_its_own_and_every_run_runs_alike() {
    let (fake, calls) = fake();
    let counter = FakeCounter {
        calls: calls.clone(),
    };
    let work = tempfile::tempdir().unwrap();
    let fits = work.path().join(fits::FILE);
    let mut runs = Runs::new(Box::new(fake), options(Builtin::SelectOnly, 0)).keeping_fits(fits);
    let launcher = counter
        .launcher(Path::new("/p"), work.path(), None)
        .unwrap();
    let spec = template_spec("/t/a");
    for run in 1..=2 {
        let job = job(&spec, run, (Pin::none(), Pin::none()));
        let outcome = runs.count(job, &counter, &launcher, Lengths::default());
        let Ok(RunOutcome::Measured(m)) = outcome else {
            panic!("run {run}: {outcome:?}");
        };
        assert_eq!(m.instructions.unwrap().per_transaction, 50.0);
    }
    let calls = calls.borrow();
    // The fit's server, then one a counted run.
    assert_eq!((calls.starts, calls.stops), (3, 3));
    let names: Vec<String> = (calls.pgbench.iter())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let fitting = names.iter().take_while(|n| n.starts_with("1-fit")).count();
    assert!((2..=MAX_PROBES).contains(&fitting), "{names:?}");
    let counted = &calls.args[fitting..];
    assert_eq!(
        names[fitting..],
        [
            "1-warmup1",
            "1-count-short",
            "1-count-long",
            "2-warmup1",
            "2-count-short",
            "2-count-long"
        ]
        .map(|n| format!("{n}.txt"))
    );
    // Every counted run makes the same runs, so its short and long run
    // find the server's buffers as every other's did.
    let lengths: Vec<u64> = counted.iter().map(|a| transactions(a)).collect();
    assert_eq!(lengths[..3], lengths[3..], "{lengths:?}");
    assert!(lengths[1] < lengths[2], "{lengths:?}");
    let t = runs.totals();
    assert_eq!(
        (t.runs, t.warmup_runs),
        (6 + fitting as u64, 2 + fitting as u64)
    );
}
