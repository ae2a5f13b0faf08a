//! Real builds of PostgreSQL 15 (Debian's source package): a clean build,
//! cache hits (also from a new builder), an incremental rebuild after a
//! header change, a commit that does not compile, and a build stopped by
//! its cancel flag (one made ahead that nobody waits for).
//!
//! Needs `PGBISECT_TEST_PG_SOURCE` (set by scripts/test.sh); without it
//! the test says it is skipped, and fails under CI. Every step shares one build tree, so PostgreSQL is built
//! from scratch once (about 4 minutes on 2 cores with a cold ccache).

use crate::common;

use common::mtime;
use pgbisect::build::{BuildOutcome, BuildSettings, Builder, read_stamp};
use pgbisect::lab::LabDirs;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

fn installed(outcome: BuildOutcome) -> (PathBuf, bool, f64, PathBuf) {
    match outcome {
        BuildOutcome::Installed {
            prefix,
            cached,
            seconds,
            log,
        } => (prefix, cached, seconds, log),
        BuildOutcome::Failed { reason, .. } => panic!("build failed: {reason}"),
    }
}

fn output(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {out:?}",
        program.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Replaces `from` by `to` in a file of the checkout, as a new commit would.
fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from}", path.display());
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// The build tree the builder made under `<work>/build/`.
fn build_tree(work: &Path) -> PathBuf {
    fs::read_dir(work.join("build"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("autoconf-")
        })
        .expect("an autoconf build tree")
}

/// A checkout and a work dir under one temp dir.
struct Setup {
    _tmp: tempfile::TempDir,
    checkout: PathBuf,
    work: PathBuf,
    settings: BuildSettings,
}

#[test]
fn build_cache_incremental_and_failure() {
    let Some(source) = common::pg_source() else {
        return;
    };
    // Fixed names under one temp dir: ccache sees the same relative paths
    // on every run, so a second run of this test is fast.
    let tmp = tempfile::tempdir().unwrap();
    let setup = Setup {
        checkout: tmp.path().join("checkout"),
        work: tmp.path().join("work"),
        settings: BuildSettings::default(),
        _tmp: tmp,
    };
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&source)
        .arg(&setup.checkout)
        .status()
        .unwrap();
    assert!(copied.success());
    let mut builder =
        Builder::new(&LabDirs::under(&setup.work), setup.settings.clone(), 3).unwrap();
    let (prefix, clean_seconds) = clean_build(&setup, &mut builder);
    cache_hits(&setup, &mut builder, &prefix);
    header_change(&setup, &mut builder, &prefix, clean_seconds);
    syntax_error(&setup, &mut builder);
    cancelled(&setup, &mut builder);
    assert_eq!(builder.totals().0, 4);
    let installs = fs::read_dir(setup.work.join("installs")).unwrap().count();
    assert!(installs <= 3, "{installs} installs kept");
}

/// 1. A clean build installs a working, relocated server.
fn clean_build(setup: &Setup, builder: &mut Builder) -> (PathBuf, f64) {
    let started = Instant::now();
    let (prefix, cached, clean_seconds, log) =
        installed(builder.ensure("c1", &setup.checkout).unwrap());
    eprintln!("clean build: {clean_seconds:.0} s");
    assert!(!cached);
    assert!(prefix.starts_with(setup.work.join("installs")));
    let version = output(&prefix.join("bin/postgres"), &["--version"]);
    assert!(version.contains("PostgreSQL) 15"), "{version}");
    for program in ["initdb", "pg_ctl", "psql", "pgbench"] {
        assert!(prefix.join("bin").join(program).is_file(), "{program}");
    }
    let pgbench = prefix.join("bin/pgbench");
    let ldd = output(Path::new("ldd"), &[pgbench.to_str().unwrap()]);
    let libpq = ldd
        .lines()
        .find(|l| l.contains("libpq"))
        .unwrap_or_default();
    assert!(
        libpq.contains(prefix.to_str().unwrap()),
        "pgbench must use its own libpq: {libpq}"
    );
    let stamp = read_stamp(&prefix).expect("a stamp");
    assert_eq!(stamp.commit, "c1");
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains("--enable-depend"));
    assert!(
        !text.contains("compatibility step"),
        "PostgreSQL 15 needs no compatibility step: {text}"
    );
    assert!(pgbisect::build::compat_report_flags(&LabDirs::under(&setup.work), &["c1"]).is_empty());
    assert_eq!(builder.totals().0, 1);
    assert!(started.elapsed().as_secs_f64() >= clean_seconds - 1.0);
    (prefix, clean_seconds)
}

/// The one build log of `commit` in `work/logs` (`build-<commit>-<key>.log`).
fn build_log(work: &Path, commit: &str) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(work.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&format!("build-{commit}-")) && name.ends_with(".log")
        })
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// 2. The same commit again is a cache hit, also for a new builder.
fn cache_hits(setup: &Setup, builder: &mut Builder, prefix: &Path) {
    let log = build_log(&setup.work, "c1");
    let log_written = mtime(&log);
    let started = Instant::now();
    let (again, cached, _, _) = installed(builder.ensure("c1", &setup.checkout).unwrap());
    assert!(cached && again == prefix);
    let mut fresh = Builder::new(&LabDirs::under(&setup.work), setup.settings.clone(), 3).unwrap();
    let (again, cached, seconds, _) = installed(fresh.ensure("c1", &setup.checkout).unwrap());
    assert!(cached && again == prefix && seconds == 0.0);
    let elapsed = started.elapsed().as_secs_f64();
    assert!(elapsed < 5.0, "cache hits must not build ({elapsed} s)");
    assert_eq!(fresh.totals(), (0, 0.0));
    assert_eq!(mtime(&log), log_written, "no make ran");
}

/// 3. A header change rebuilds the users of the header, and only them.
fn header_change(setup: &Setup, builder: &mut Builder, prefix: &Path, clean_seconds: f64) {
    let tree = build_tree(&setup.work);
    let user = tree.join("src/backend/utils/adt/cash.o");
    let bystander = tree.join("src/backend/utils/adt/int.o");
    let (user_before, bystander_before) = (mtime(&user), mtime(&bystander));
    let server_before = fs::read(prefix.join("bin/postgres")).unwrap();
    edit(
        &setup.checkout.join("src/include/utils/cash.h"),
        "#define CashGetDatum(X)\t\tInt64GetDatum(X)",
        "#define CashGetDatum(X)\t\tInt64GetDatum((X) + 1)",
    );
    let (prefix2, cached, header_seconds, _) =
        installed(builder.ensure("c2", &setup.checkout).unwrap());
    eprintln!("rebuild after a header change: {header_seconds:.0} s");
    assert!(!cached && prefix2 != prefix);
    assert!(mtime(&user) > user_before, "cash.o must be rebuilt");
    assert_eq!(mtime(&bystander), bystander_before, "int.o must be kept");
    let server_after = fs::read(prefix2.join("bin/postgres")).unwrap();
    assert_ne!(server_after, server_before);
    assert!(
        header_seconds < 150.0 && header_seconds < clean_seconds.max(150.0) / 2.0,
        "incremental: {header_seconds} s after a clean build of {clean_seconds} s"
    );
}

/// 4. A commit that does not compile is a failed outcome quoting the error.
fn syntax_error(setup: &Setup, builder: &mut Builder) {
    edit(
        &setup.checkout.join("src/backend/utils/adt/cash.c"),
        "#include \"utils/cash.h\"",
        "#include \"utils/cash.h\"\nint pgbisect_broken(void) { return 1 }",
    );
    match builder.ensure("c3", &setup.checkout).unwrap() {
        BuildOutcome::Failed { reason, log } => {
            eprintln!("failure reason: {reason}");
            assert_eq!(log, build_log(&setup.work, "c3"));
            assert!(log.is_file());
            assert!(reason.contains(log.to_str().unwrap()), "{reason}");
            let quoted = reason.contains("cash.c") && reason.contains("error:");
            assert!(quoted, "{reason}");
        }
        other => panic!("a syntax error must fail the build: {other:?}"),
    }
}

/// 5. A cancelled build (made ahead for a hunt that ended) installs nothing.
fn cancelled(setup: &Setup, builder: &mut Builder) {
    let cancel = Arc::new(AtomicBool::new(true));
    builder.cancelled_by(Some(cancel));
    let started = Instant::now();
    let err = builder.ensure("c4", &setup.checkout).unwrap_err();
    builder.cancelled_by(None);
    assert!(
        matches!(err, pgbisect::build::BuildError::Interrupted { .. }),
        "{err}"
    );
    assert!(started.elapsed().as_secs_f64() < 30.0);
    let installs: Vec<String> = fs::read_dir(setup.work.join("installs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !installs.iter().any(|i| i.starts_with("c4")),
        "{installs:?}"
    );
}
