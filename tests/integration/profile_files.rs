//! Files a profile names (setup SQL, pgbench scripts) are read from the
//! profile's folder only, and their text is part of the hunt's identity.

use crate::common;

use common::{good_to_bad, history, pgbisect};
use pgbisect::core::hunt_config::HuntConfig;
use pgbisect::model::Commit;
use pgbisect::profile::{BUNDLED, Profile, ProfileError};
use pgbisect::workspace::{PlanFlags, PlanKey};
use std::path::Path;

/// A profile `p.toml` in `dir` whose `[benchmark]` is `bench`.
fn profile(dir: &Path, bench: &str) -> std::path::PathBuf {
    let path = dir.join("p.toml");
    std::fs::write(&path, format!("[benchmark]\n{bench}\nscale = 1\n")).unwrap();
    path
}

fn folder_name(profile: &Profile) -> String {
    let (good, bad) = (Commit::bare("a".repeat(40)), Commit::bare("b".repeat(40)));
    PlanKey::new(
        (&good, &bad),
        (&HuntConfig::default(), None),
        profile,
        PlanFlags::default(),
    )
    .unwrap()
    .folder_name()
}

#[test]
fn each_way_out_of_the_profiles_folder_is_refused_with_a_hint_and_exit_2() {
    let (repo, _) = history(&[1000, 900], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    std::fs::create_dir(&dir).unwrap();
    let secret = tmp.path().join("secret.sql");
    std::fs::write(&secret, "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("link.sql")).unwrap();
    let cases = [
        ("setup = \"../secret.sql\"".to_string(), "goes up with `..`"),
        (
            format!("setup = \"{}\"", secret.display()),
            "outside the profile's folder",
        ),
        ("setup = \"link.sql\"".to_string(), "symbolic link"),
        ("scripts = [\"link.sql@1\"]".to_string(), "symbolic link"),
        ("script = \"../secret.sql\"".to_string(), "`..`"),
    ];
    for (bench, says) in cases {
        let path = profile(&dir, &bench);
        let work = tmp.path().join("w");
        let out = pgbisect(repo.path(), &work, &good_to_bad(&path));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bench}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.contains("hint:"),
            "{bench}: {stderr}"
        );
        assert!(!stderr.contains("root:x"), "{stderr}");
        assert!(!work.join("installs").exists(), "nothing was built");
    }
}

#[test]
fn fixed_setup_sql_makes_another_hunt_and_the_same_text_the_same_one() {
    let tmp = tempfile::tempdir().unwrap();
    let path = profile(tmp.path(), "setup = \"setup.sql\"\nscripts = [\"q.sql\"]");
    let sql = tmp.path().join("setup.sql");
    std::fs::write(tmp.path().join("q.sql"), "SELECT 1;\n").unwrap();
    std::fs::write(&sql, "CREATE TABLE t (a int GENERATED ALWAYS AS 1);\n").unwrap();
    let load = || Profile::load(path.to_str().unwrap()).unwrap();
    let broken = folder_name(&load());
    assert_eq!(broken, folder_name(&load()));
    std::fs::write(&sql, "CREATE TABLE t (a int);\n").unwrap();
    let fixed = load();
    assert_ne!(broken, folder_name(&fixed));
    let options = fixed.benchmark.pgbench_options(1);
    assert_eq!(
        options.setup_sql.as_deref(),
        Some(&b"CREATE TABLE t (a int);\n"[..]),
        "psql runs the text the hunt is named for"
    );
    // A changed script starts a new hunt too.
    std::fs::write(tmp.path().join("q.sql"), "SELECT 2;\n").unwrap();
    assert_ne!(folder_name(&fixed), folder_name(&load()));
}

#[test]
fn the_digests_are_not_a_key_of_the_profile_and_bundled_profiles_name_no_files() {
    let text = "[benchmark]\nfile-digests = { setup = \"0\" }\n";
    let err = Profile::parse(text, Path::new("p.toml")).unwrap_err();
    assert!(matches!(err, ProfileError::Invalid { .. }), "{err}");
    for (name, _) in BUNDLED {
        assert!(
            !Profile::load(name).unwrap().benchmark.names_files(),
            "{name}"
        );
    }
}
