//! `pgbisect watch` end to end: a real git repository whose commits landed
//! a day apart, measured through the shell-command test profile (its
//! benchmark prints the checked-out commit's level), replayed night by
//! night; then the series exported as CSV.

use crate::common;

use common::watch::{dated_history, replay};
use common::*;
use std::path::Path;

fn watch(repo: &Path, work: &Path, extra: &[&str]) -> std::process::Output {
    pgbisect_sub("watch", repo, work, extra)
}

#[test]
fn a_replay_finds_the_drop_confirms_it_once_and_exports_the_series() {
    let (repo, shas) = dated_history(&levels_with_drop_at(20, 12));
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let mut args = replay(&profile, "2024-01-01..2024-01-20");
    args.extend(["--per-night", "1"]);
    let out = watch(repo.path(), &work, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("CONFIRMED SLOWER"), "{stdout}");
    // The change lies between commit 11 and commit 12 (a commit a night).
    let range = format!("{}..{}", &shas[11][..8], &shas[12][..8]);
    assert!(stdout.contains(&range), "{stdout}");
    assert_eq!(stdout.matches("CONFIRMED").count(), 1, "{stdout}");
    // The same replay again: every night is done, nothing is run or raised;
    // --html writes the site after it.
    let site = tmp.path().join("site");
    let mut with_site = args.clone();
    with_site.extend(["--html", site.to_str().unwrap()]);
    let again = watch(repo.path(), &work, &with_site);
    let again_out = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{again_out}");
    assert!(again_out.contains("nothing new to measure"), "{again_out}");
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("1 confirmed"), "{index}");
    // The confirmed drop was hunted: its report is copied beside the page
    // and linked from the change.
    let link = index
        .split("href=\"")
        .find_map(|rest| rest.strip_prefix("hunts/change-"))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no hunt report linked: {index}"));
    let report = std::fs::read_to_string(site.join(format!("hunts/change-{link}"))).unwrap();
    assert!(report.contains(&shas[12][..8]), "{report}");
    let page = std::fs::read_to_string(site.join("series-profile-c8.html")).unwrap();
    assert_eq!(page.matches("class=\"point\"").count(), 20, "{page}");
    // The series as Otava reads it: a row a night.
    let csv = tmp.path().join("watch.csv");
    let export = bin()
        .args(["watch", "export", "--csv"])
        .arg(&csv)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(export.status.code(), Some(0));
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "time,commit,branch,night,profile/c8.ratio,profile/c8.tps,profile/c8.reference_tps,\
         reference"
    );
    assert_eq!(lines.len(), 21, "{text}");
    assert!(lines[1].starts_with(&format!("2024-01-01T23:59:59Z,{},main,", shas[0])));
}

#[test]
fn a_results_file_that_is_not_a_database_is_refused_untouched() {
    let (repo, _) = dated_history(&[1000, 1000]);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let db = work.join("watch.sqlite");
    // A file that is not SQLite at all is refused, not overwritten.
    std::fs::write(&db, "not a database").unwrap();
    let out = watch(repo.path(), &work, &["--replay", "2024-01-01..2024-01-02"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("watch.sqlite"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database");
}

#[test]
fn killed_in_the_middle_of_a_night_and_started_again_no_run_is_lost_or_stored_twice() {
    let (repo, _) = dated_history(&[1000; 3]);
    let tmp = tempfile::tempdir().unwrap();
    let calls = tmp.path().join("calls");
    let profile = slow_counting_profile(tmp.path(), &calls, "0.2");
    let work = tmp.path().join("w");
    let args = replay(&profile, "2024-01-01..2024-01-03");
    let mut child = bin()
        .arg("watch")
        .args(&args)
        .arg("--repo")
        .arg(repo.path())
        .arg("--work-dir")
        .arg(&work)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let count = || {
        std::fs::read_to_string(&calls)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let start = std::time::Instant::now();
    while count() < 8 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = count();
    assert!((8..18).contains(&before), "{before} runs before the kill");
    let out = watch(repo.path(), &work, &args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Three nights of one commit: 3 pairs of runs each. Three points are
    // too few for a change, so nothing is measured again side by side.
    use pgbisect::store::Store;
    let mut store = pgbisect::store::sqlite::SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let runs = store.runs("main").unwrap();
    assert_eq!(runs.len(), 18);
    let mut keys: Vec<_> = runs
        .iter()
        .map(|r| (r.night, r.commit.clone(), r.round, r.role))
        .collect();
    keys.sort_by_key(|k| format!("{k:?}"));
    keys.dedup();
    assert_eq!(keys.len(), 18);
    // At most the run the kill interrupted was made twice.
    assert!((18..=19).contains(&count()), "{} benchmark calls", count());
}

#[test]
fn a_replay_hunts_the_change_to_its_commit_and_mails_it_once() {
    // A commit a day; a night every third day measures only its tip, so
    // the nights around the drop at commit 16 are commits 15 and 18.
    let (repo, shas) = dated_history(&levels_with_drop_at(30, 16));
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let server = common::mail::MailServer::start();
    let smtp = server.addr();
    let mut args = replay(&profile, "2024-01-01..2024-01-30");
    args.extend(["--every", "3", "--per-night", "1"]);
    args.extend(["--mail-to", "perf@example.org", "--smtp", &smtp]);
    let out = watch(repo.path(), &work, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let range = format!("{}..{}", &shas[15][..8], &shas[18][..8]);
    assert!(stdout.contains(&range), "{stdout}");
    assert!(
        stdout.contains(&format!("culprit {}", shas[16])),
        "{stdout}\n{stderr}"
    );
    // The reports where the site links to them.
    use pgbisect::store::Store;
    let mut store = pgbisect::store::sqlite::SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let hunts = store.hunts("main").unwrap();
    assert_eq!(hunts.len(), 1, "{hunts:?}");
    let folder = work
        .join("watch-hunts")
        .join(format!("change-{}", hunts[0].change));
    let report = std::fs::read_to_string(folder.join("report.txt")).unwrap();
    assert!(report.contains(&shas[16][..8]), "{report}");
    assert!(folder.join("report.json").is_file());
    // One finding mailed, naming the culprit, with the chart and the
    // report; beside it the weekly digests, one of which names it too.
    let mails = server.messages();
    let (digests, findings): (Vec<String>, Vec<String>) = mails
        .iter()
        .map(|m| m.replace("\r\n ", " ").replace("\r\n", "\n"))
        .partition(|m| m.contains("Subject: pgbisect watch digest: "));
    assert_eq!(findings.len(), 1, "{stderr}");
    assert!(
        digests
            .iter()
            .any(|d| d.contains(&format!("culprit {} commit number 16", &shas[16][..12]))),
        "{digests:?}"
    );
    let mail = &findings[0];
    assert!(mail.contains(&format!("Culprit: {}", shas[16])), "{mail}");
    assert!(mail.contains("commit number 16"), "{mail}");
    assert!(mail.contains("<- after the change"), "{mail}");
    let id = format!("Message-ID: <pgbisect.watch.profile.c8.{}.", &shas[15][..8]);
    assert!(mail.contains(&id), "{mail}");
    // The same replay again: nothing hunted or mailed a second time.
    let again = watch(repo.path(), &work, &args);
    let again_err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{again_err}");
    assert!(!again_err.contains("hunting the"), "{again_err}");
    assert_eq!(server.messages().len(), mails.len());
}

#[test]
fn a_quiet_replay_mails_the_digest_alone_and_once() {
    let (repo, _) = dated_history(&[1000; 3]);
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let server = common::mail::MailServer::start();
    let smtp = server.addr();
    // Nights on January 1, 2 and 3; the period of the first two ends
    // with the third.
    let mut args = replay(&profile, "2024-01-01..2024-01-03");
    args.extend(["--per-night", "1", "--digest-every", "2"]);
    args.extend(["--mail-to", "perf@example.org", "--smtp", &smtp]);
    let out = watch(repo.path(), &work, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let mails = server.messages();
    assert_eq!(mails.len(), 1, "{stderr}");
    let mail = mails[0].replace("\r\n ", " ").replace("\r\n", "\n");
    assert!(
        mail.contains(
            "Subject: pgbisect watch digest: main 2024-01-01 to 2024-01-02: nothing moved"
        ),
        "{mail}"
    );
    assert!(
        mail.contains("Message-ID: <pgbisect.watch.digest.main.2024.01.01.2024.01.02@"),
        "{mail}"
    );
    assert!(
        mail.contains("2 night(s), 2 commit(s) measured, 12 run(s)."),
        "{mail}"
    );
    assert!(mail.contains("Nothing moved"), "{mail}");
    // Kept in the work dir as well.
    let kept = std::fs::read_to_string(work.join("digests").join("2024-01-02.txt")).unwrap();
    assert!(kept.contains("No night failed"), "{kept}");
    // The same replay again: the period was told, nothing is mailed.
    let again = watch(repo.path(), &work, &args);
    assert_eq!(
        again.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(server.messages().len(), 1);
}

/// Today (UTC), as `date` says it.
fn today() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .expect("date runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_first_start_is_labelled_today_and_each_backfilled_night_by_its_commits_day() {
    let (repo, shas) = dated_history(&[1000; 6]);
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let first = ["--profile", profile.to_str().unwrap(), "--clients", "8"];
    // The commits landed in January 2024: a start now backfills nothing
    // (the branch stood at its tip all of the last 30 days) and measures
    // the tip tonight, labelled today.
    let before = today();
    let out = watch(repo.path(), &tmp.path().join("now"), &first);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let nights: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("night of "))
        .collect();
    assert_eq!(nights.len(), 1, "{stdout}");
    let day = nights[0]
        .strip_prefix("night of ")
        .and_then(|l| l.get(..10))
        .unwrap_or("");
    assert!(day == before || day == today(), "{stdout}");
    // A replayed first night backfills the 3 days before it, each night
    // labelled by the time its commit landed (noon), tonight by its own.
    let mut replayed = first.to_vec();
    replayed.extend(["--replay", "2024-01-06..2024-01-06", "--backfill", "3"]);
    replayed.extend(["--per-night", "1"]);
    let out = watch(repo.path(), &tmp.path().join("replayed"), &replayed);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let labels: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("night of "))
        .map(|l| l.split(':').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        labels,
        [
            "2024-01-03T12",
            "2024-01-04T12",
            "2024-01-05T12",
            "2024-01-06T23"
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("reference {}", &shas[2][..8])),
        "{stdout}"
    );
}
