//! Workloads with a schema against a real PostgreSQL
//! (`PGBISECT_TEST_PG_BIN`, default the Debian PostgreSQL 15 binaries): a
//! profile's setup SQL runs once on the data template, its weighted scripts
//! run in one pgbench, and setup SQL the server refuses is an error with
//! psql's words.

use crate::common;

use common::pg::{server_on_copy, server_work_dir, template_spec};
use common::pg_bin;
use pgbisect::bench;
use pgbisect::placement::Pin;
use pgbisect::profile::Profile;
use pgbisect::server::{DataTemplate, RunAs, ServerError, SocketDir, TemplateSpec, time_limit};
use std::path::Path;

const SETUP: &str = "\
CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 1000) g;
CREATE FUNCTION item_name(i int) RETURNS text LANGUAGE sql STABLE
  AS $$ SELECT name FROM item WHERE id = i $$;
ALTER DATABASE postgres SET work_mem = '7MB';
";

/// A case folder: profile, setup SQL, two weighted scripts.
fn case(dir: &Path, setup: &str) -> Profile {
    std::fs::write(dir.join("schema.sql"), setup).unwrap();
    std::fs::write(
        dir.join("lookup.sql"),
        "\\set i random(1, 1000)\nSELECT item_name(:i);\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("count.sql"),
        "\\set i random(1, 900)\nSELECT count(*) FROM item WHERE id BETWEEN :i AND :i + 100;\n",
    )
    .unwrap();
    let profile = dir.join("case.toml");
    std::fs::write(
        &profile,
        "description = \"a schema and two scripts\"\n[benchmark]\nsetup = \"schema.sql\"\n\
         scripts = [\"lookup.sql@9\", \"count.sql@1\"]\nscale = 1\nwarmup-runs = 0\n",
    )
    .unwrap();
    Profile::load(profile.to_str().unwrap()).unwrap()
}

fn spec(bin: &Path, work: &Path, profile: &Profile, name: &str) -> TemplateSpec {
    let options = profile.benchmark.pgbench_options(1);
    template_spec(bin, work, name, options, &RunAs::resolve(None).unwrap())
}

#[test]
fn setup_sql_makes_the_template_and_weighted_scripts_run_on_it() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let profile = case(work.path(), SETUP);
    let spec = spec(&bin, work.path(), &profile, "pg15-s1-setup");
    let (template, built) = DataTemplate::ensure(&spec).unwrap();
    assert!(built);
    assert!(template.dir().join("setup.log").is_file());
    // psql read the SQL on its input: no copy is left for others to read.
    assert!(!template.dir().join("setup.sql").exists());
    // The same setup finds the template made; another makes a new one.
    assert!(!DataTemplate::ensure(&spec).unwrap().1);
    let other = case(work.path(), &format!("{SETUP}SELECT 1;\n"));
    let mut changed = spec.clone();
    changed.options = other.benchmark.pgbench_options(1);
    assert!(DataTemplate::ensure(&changed).unwrap().1);

    let sockets = SocketDir::create(&spec.run_as).unwrap();
    let server = server_on_copy(
        &bin,
        &template,
        work.path(),
        "run",
        sockets.path(),
        &spec.run_as,
        &[],
    )
    .start()
    .unwrap();
    // The database's own setting reaches every new session.
    assert_eq!(server.psql("SHOW work_mem").unwrap(), "7MB");
    assert_eq!(server.psql("SELECT item_name(42)").unwrap(), "item 42");

    let options = &spec.options;
    let args = bench::run_args(options, 1, 2, &server.conn("postgres"));
    let out = work.path().join("run-1.txt");
    let report = server
        .run_pgbench(
            &bin.join("pgbench"),
            &args,
            &Pin::none(),
            &out,
            time_limit(2),
        )
        .unwrap();
    assert!(report.tps > 0.0, "{report:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("lookup.sql@9") && text.contains("count.sql@1"),
        "{text}"
    );
    // pgbench names each script with its weight and counts its transactions.
    assert!(
        text.contains("weight: 9") && text.contains("weight: 1"),
        "{text}"
    );
    server.stop().unwrap();
}

#[test]
fn setup_sql_the_server_refuses_is_an_error_with_psqls_words() {
    let Some(bin) = pg_bin() else { return };
    let work = server_work_dir();
    let bad = "CREATE TABLE t (id int);\nCREATE TABLE t (id int);\nCREATE TABLE never (id int);\n";
    let profile = case(work.path(), bad);
    let spec = spec(&bin, work.path(), &profile, "pg15-s1-bad");
    let err = DataTemplate::ensure(&spec).unwrap_err();
    let ServerError::SetupFailed { path, tail } = &err else {
        panic!("{err}")
    };
    assert_eq!(path, &work.path().join("schema.sql"));
    assert!(tail.contains("relation \"t\" already exists"), "{err}");
    assert!(err.to_string().contains("setup SQL"), "{err}");
    // No marker: the half-made template is made again next time, and fails again.
    assert!(!spec.dir.join("template-complete.json").exists());
    assert!(matches!(
        DataTemplate::ensure(&spec),
        Err(ServerError::SetupFailed { .. })
    ));
}
