//! The watcher's hunt of a change reports as a person's hunt of the same
//! range does: the same sections and the same fields filled, and its
//! command to hunt the range again names the profile file it watched (by
//! its absolute path, though it was given relative) and runs as it is,
//! from the checkout.

use crate::common;

use common::watch::{dated_history, replay};
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Every field of `value` that holds something (not null, not empty),
/// by its path; a list's items under `name[]`.
fn filled(value: &Value, at: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(fields) => {
            for (name, v) in fields {
                let path = format!("{at}/{name}");
                let empty = match v {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(o) => o.is_empty(),
                    _ => false,
                };
                if !empty {
                    out.insert(path.clone());
                    filled(v, &path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                filled(item, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn filled_fields(path: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    filled(&json(path), "", &mut out);
    out
}

/// The headings of a text report: each line underlined with dashes.
fn headings(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| !w[1].is_empty() && w[1].chars().all(|c| c == '-'))
        .map(|w| w[0].to_string())
        .collect()
}

#[test]
fn a_watcher_hunt_reports_as_a_person_and_its_rerun_line_runs() {
    // A commit a day; a night every third day measures only its tip, so
    // the nights around the drop at commit 16 are commits 15 and 18.
    let (repo, shas) = dated_history(&levels_with_drop_at(30, 16));
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    // The watcher is given the profile file by a name relative to where
    // it starts.
    let mut args = replay(Path::new("profile.toml"), "2024-01-01..2024-01-30");
    args.extend(["--every", "3", "--per-night", "1"]);
    let out = bin()
        .arg("watch")
        .args(&args)
        .arg("--repo")
        .arg(repo.path())
        .arg("--work-dir")
        .arg(&work)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let hunts: Vec<_> = std::fs::read_dir(work.join("watch-hunts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(hunts.len(), 1, "{hunts:?}");
    let watched = &hunts[0];

    // A person hunts the same range with the same profile and clients.
    let by_hand = tmp.path().join("by-hand");
    let range = ["--good", &shas[15], "--bad", &shas[18]];
    let mut flags = range.to_vec();
    flags.extend(["--profile", profile.to_str().unwrap(), "--clients", "8"]);
    let out = pgbisect(repo.path(), &by_hand, &flags);
    assert_code(&out, 0);
    let person = only_hunt_dir(&by_hand);

    let (theirs, ours) = (
        filled_fields(&person.join("result.json")),
        filled_fields(&watched.join("report.json")),
    );
    assert_eq!(
        theirs.symmetric_difference(&ours).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "the person's: {theirs:?}\nthe watcher's: {ours:?}"
    );
    assert!(ours.contains("/made/command"), "{ours:?}");
    let (theirs, ours) = (
        headings(&person.join("report.txt")),
        headings(&watched.join("report.txt")),
    );
    assert!(theirs.len() >= 4, "{theirs:?}");
    assert_eq!(theirs, ours);

    // The command the watcher's report gives, pasted in the checkout,
    // where `profile.toml` names nothing.
    let report = json(&watched.join("report.json"));
    let again: Vec<String> = report["made"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let at = again.iter().position(|a| a == "--profile").unwrap();
    assert!(Path::new(&again[at + 1]).is_absolute(), "{again:?}");
    assert_eq!(
        Path::new(&again[at + 1]).canonicalize().unwrap(),
        profile.canonicalize().unwrap()
    );
    let elsewhere = tmp.path().join("cache");
    let rerun = bin()
        .args(&again[1..])
        .current_dir(repo.path())
        .env("XDG_CACHE_HOME", &elsewhere)
        .output()
        .unwrap();
    assert_code(&rerun, 0);
    let found = json(
        &only_hunt_dir(
            &elsewhere
                .join("pgbisect")
                .join(repo.path().file_name().unwrap()),
        )
        .join("result.json"),
    );
    assert_eq!(
        found["culprits"][0]["commit"],
        Value::from(shas[16].clone())
    );
}
