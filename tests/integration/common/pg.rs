//! A private PostgreSQL server on a fresh copy of a data template, as the
//! server, workload and perf tests start one: a work dir the server's
//! user can walk into, the template's spec, and the server on a copy.

use pgbisect::bench::{Builtin, PgbenchOptions, QueryMode};
use pgbisect::placement::Pin;
use pgbisect::server::{
    DataTemplate, RunAs, RunningServer, Server, SocketDir, TemplateSpec, fresh_copy, pick_port,
};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A temp dir under `parent` that every user may enter: as root,
/// PostgreSQL runs as `postgres` and must reach what the test puts in it.
pub fn reachable_temp_dir(parent: &str, prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(parent)
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A work directory for a server test, in `/tmp`.
pub fn server_work_dir() -> tempfile::TempDir {
    reachable_temp_dir("/tmp", "pgbisect-test-")
}

/// pgbench's select-only script, prepared, at scale 1: the smallest
/// template a server test needs.
pub fn select_only_s1() -> PgbenchOptions {
    PgbenchOptions {
        scale: 1,
        builtin: Some(Builtin::SelectOnly),
        mode: QueryMode::Prepared,
        ..Default::default()
    }
}

/// The template `work/templates/name` of `options` for the binaries in
/// `bin`, its servers registered in `work/servers`.
pub fn template_spec(
    bin: &Path,
    work: &Path,
    name: &str,
    options: PgbenchOptions,
    run_as: &RunAs,
) -> TemplateSpec {
    TemplateSpec {
        bin: bin.to_path_buf(),
        pgbench: bin.join("pgbench"),
        dir: work.join("templates").join(name),
        options,
        run_as: run_as.clone(),
        registry_dir: Some(work.join("servers")),
    }
}

/// A server (not started) on a fresh copy of `template` in
/// `work/run/data`, its log `work/run/server.log`, its socket in
/// `sockets`, registered in `work/servers`, run as `run_as`.
pub fn server_on_copy(
    bin: &Path,
    template: &DataTemplate,
    work: &Path,
    run: &str,
    sockets: &Path,
    run_as: &RunAs,
    settings: &[(&str, &str)],
) -> Server {
    let data_dir = work.join(run).join("data");
    fresh_copy(template, &data_dir).unwrap();
    Server {
        bin: bin.to_path_buf(),
        data_dir,
        port: pick_port(sockets),
        socket_dir: sockets.to_path_buf(),
        settings: settings
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        log: work.join(run).join("server.log"),
        run_as: run_as.clone(),
        registry_dir: Some(work.join("servers")),
        pin: Pin::none(),
        launcher: None,
    }
}

/// A server started on a fresh copy of the template `name` of
/// [`select_only_s1`] made in `work`, its socket in `sockets`.
pub fn started_s1(
    bin: &Path,
    work: &Path,
    name: &str,
    sockets: &SocketDir,
    run_as: &RunAs,
) -> RunningServer {
    started_s1_with(bin, work, (name, sockets), run_as, &[])
}

/// [`started_s1`] with server `settings`.
pub fn started_s1_with(
    bin: &Path,
    work: &Path,
    (name, sockets): (&str, &SocketDir),
    run_as: &RunAs,
    settings: &[(&str, &str)],
) -> RunningServer {
    let spec = template_spec(bin, work, name, select_only_s1(), run_as);
    let (template, _) = DataTemplate::ensure(&spec).unwrap();
    server_on_copy(
        bin,
        &template,
        work,
        "run",
        sockets.path(),
        run_as,
        settings,
    )
    .start()
    .unwrap()
}
