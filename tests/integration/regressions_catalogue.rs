//! The catalogue of real regressions (`bisect-profiles/regressions`): every
//! case in `cases.tsv` has a folder whose profile loads, whose setup SQL and
//! scripts exist, and whose scripts vary their input with pgbench variables.

use pgbisect::profile::Profile;
use std::path::{Path, PathBuf};

fn catalogue() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bisect-profiles/regressions")
}

/// (name, culprit, fix) of each line of `cases.tsv`.
fn cases() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(catalogue().join("cases.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 4, "{l}");
            (f[0].to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

#[test]
fn every_case_has_a_profile_setup_and_scripts_that_load() {
    let cases = cases();
    assert!(cases.len() >= 6, "{cases:?}");
    let readme = std::fs::read_to_string(catalogue().join("README.md")).unwrap();
    for (name, culprit, fix) in &cases {
        for hash in [culprit, fix] {
            assert!(
                hash.len() == 40 && hash.chars().all(|c| c.is_ascii_hexdigit()),
                "{name}: {hash} is not a full hash"
            );
            assert!(
                readme.contains(hash.as_str()),
                "{name}: README lacks {hash}"
            );
        }
        let path = catalogue().join(name).join("profile.toml");
        let profile = Profile::load(path.to_str().unwrap()).unwrap();
        assert!(!profile.description.is_empty(), "{name}");
        let options = profile.benchmark.pgbench_options(1);
        options.validate().unwrap();
        let setup = options.setup.as_ref().expect("a setup");
        assert!(setup.is_file(), "{name}: {}", setup.display());
        assert!(!options.scripts.is_empty(), "{name}");
        for script in &options.scripts {
            let text = std::fs::read_to_string(&script.path)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", script.path.display()));
            assert!(
                (text.contains("\\set ") && text.contains(':')) || only_parameterless(&text),
                "{name}: {} uses no pgbench variable",
                script.path.display()
            );
        }
    }
}

/// Whether every statement of a script is a utility command that takes no
/// parameters (`REFRESH MATERIALIZED VIEW`, `VACUUM`, ...): such a command
/// does its whole work at each run, so it needs no pgbench variable.
fn only_parameterless(script: &str) -> bool {
    const UTILITY: [&str; 5] = ["REFRESH ", "VACUUM", "ANALYZE", "CLUSTER", "REINDEX "];
    let statements: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("--"))
        .collect();
    !statements.is_empty()
        && statements.iter().all(|l| {
            UTILITY
                .iter()
                .any(|u| l.to_ascii_uppercase().starts_with(u))
        })
}

#[test]
fn a_script_of_utility_commands_needs_no_variable() {
    assert!(only_parameterless("-- why\nREFRESH MATERIALIZED VIEW v;\n"));
    assert!(!only_parameterless("SELECT 1;\n"));
    assert!(!only_parameterless(
        "REFRESH MATERIALIZED VIEW v;\nSELECT f(2);\n"
    ));
    assert!(!only_parameterless("-- nothing\n"));
}
