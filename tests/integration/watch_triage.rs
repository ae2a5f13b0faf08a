//! `pgbisect watch mark` and `pgbisect watch hunt` end to end, on the
//! results of a replay of a made history (a day apart, the last commits
//! 20% slower) through the shell-command test profile: a change marked by
//! its number, marked again, shown on the site; a change hunted again,
//! the report of the hunt before it kept; numbers the results do not
//! hold, and a mark without a why, refused with exit 2; a moved
//! reference, its points and exported rows labelled by it.

use crate::common;

use common::watch::{dated_history, replay};
use common::*;
use pgbisect::store::sqlite::SqliteStore;
use pgbisect::store::{ChangeRow, ChangeStatus, Mark, Store};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The results of a replay of 16 nights with the drop at night 12. A test
/// binds `tmp` (and `repo`, when it runs the watcher again) for as long
/// as it reads them: a field left to `..` is dropped at once, its
/// directory deleted.
struct Replayed {
    /// Holds the work dir and the profile.
    tmp: tempfile::TempDir,
    repo: tempfile::TempDir,
    shas: Vec<String>,
    profile: PathBuf,
    /// The work dir, `tmp/w`.
    work: PathBuf,
    /// The confirmed drop's number.
    id: i64,
}

fn replayed() -> Replayed {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, shas) = dated_history(&levels_with_drop_at(16, 12));
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let mut args = replay(&profile, "2024-01-01..2024-01-16");
    args.extend(["--per-night", "1"]);
    watch_nights(repo.path(), &work, &args, 0);
    let id = confirmed(&work);
    Replayed {
        tmp,
        repo,
        shas,
        profile,
        work,
        id,
    }
}

/// `pgbisect watch ARGS` over `repo` into `work`, exiting `code`.
fn watch_nights(repo: &Path, work: &Path, args: &[&str], code: i32) -> Output {
    let out = pgbisect_sub("watch", repo, work, args);
    assert_eq!(out.status.code(), Some(code), "{}", said(&out));
    out
}

/// The replay's changes, as stored.
fn changes(work: &Path) -> Vec<ChangeRow> {
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    store.changes("main").unwrap()
}

/// The confirmed drop's number.
fn confirmed(work: &Path) -> i64 {
    let all = changes(work);
    let found = all.iter().find(|c| c.status == ChangeStatus::Confirmed);
    found
        .unwrap_or_else(|| panic!("no confirmed change: {all:?}"))
        .id
}

fn said(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `pgbisect watch SUB ARGS --work-dir WORK`.
fn watch_in(work: &Path, args: &[&str]) -> Output {
    bin()
        .arg("watch")
        .args(args)
        .arg("--work-dir")
        .arg(work)
        .output()
        .expect("pgbisect runs")
}

#[test]
fn a_change_is_marked_by_its_number_marked_again_and_shown_on_the_site() {
    let Replayed {
        tmp,
        repo: _repo,
        shas,
        work,
        id,
        ..
    } = replayed();
    let n = id.to_string();
    let out = watch_in(&work, &["mark", &n, "wrong", "--why", "the disk was full"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let between = format!("between {}..{}", &shas[11][..8], &shas[12][..8]);
    assert!(
        stdout.contains(&format!("change #{id} (profile/c8 -")),
        "{stdout}"
    );
    assert!(stdout.contains(&between), "{stdout}");
    assert!(
        stdout.contains("marked wrong: the disk was full"),
        "{stdout}"
    );
    assert!(!stdout.contains("replaced"), "{stdout}");
    // Marked again, as the site shows the number (#N): the mark replaced,
    // and said so.
    let why = "the cost of the new   format,\naccepted in review";
    let hash = format!("#{id}");
    let again = watch_in(&work, &["mark", &hash, "intended", "--why", why]);
    assert_eq!(again.status.code(), Some(0), "{}", said(&again));
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("marked intended: the cost of the new format, accepted in review"),
        "{stdout}"
    );
    assert!(
        stdout.contains("it was marked wrong on ") && stdout.contains("that mark is replaced"),
        "{stdout}"
    );
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let marks = store.marks("main").unwrap();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!((marks[0].change, marks[0].mark), (id, Mark::Intended));
    drop(store);
    // The site shows the mark and the why beside the change's number.
    let site = tmp.path().join("site");
    let out = watch_in(&work, &["publish", "--html", site.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let own_page = format!("change-{id}.html");
    for page in ["index.html", "series-profile-c8.html", own_page.as_str()] {
        let text = std::fs::read_to_string(site.join(page)).unwrap();
        if page != own_page {
            assert!(text.contains(&format!(">#{id}</td>")), "{page}: {text}");
        }
        assert!(
            text.contains("marked <b>intended</b>: <q class=\"why\">the cost of the new format"),
            "{page}: {text}"
        );
    }
}

#[test]
fn an_unknown_number_or_a_mark_without_a_why_is_refused_with_what_to_give() {
    let Replayed {
        tmp: _tmp,
        repo,
        work,
        id,
        ..
    } = replayed();
    let unknown = watch_in(&work, &["mark", "999", "intended", "--why", "meant"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", said(&unknown));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("no change #999 in the results of main"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("#{id}")), "{stderr}");
    let no_why = watch_in(&work, &["mark", &id.to_string(), "intended"]);
    assert_eq!(no_why.status.code(), Some(2), "{}", said(&no_why));
    assert!(said(&no_why).contains("--why TEXT"), "{}", said(&no_why));
    let blank = watch_in(&work, &["mark", &id.to_string(), "wrong", "--why", "  "]);
    assert_eq!(blank.status.code(), Some(2), "{}", said(&blank));
    let word = watch_in(&work, &["mark", &id.to_string(), "meant", "--why", "x"]);
    assert_eq!(word.status.code(), Some(2), "{}", said(&word));
    assert!(said(&word).contains("intended"), "{}", said(&word));
    let hunt = pgbisect_sub("watch", repo.path(), &work, &["hunt", "999"]);
    assert_eq!(hunt.status.code(), Some(2), "{}", said(&hunt));
    assert!(said(&hunt).contains("no change #999"), "{}", said(&hunt));
    // Nothing was marked by any of them.
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    assert_eq!(store.marks("main").unwrap(), vec![]);
}

#[test]
fn a_change_is_hunted_again_and_the_report_of_the_hunt_before_it_is_kept() {
    let Replayed {
        tmp: _tmp,
        repo,
        shas,
        profile,
        work,
        id,
    } = replayed();
    let hunts = work.join("watch-hunts");
    let first = std::fs::read_to_string(hunts.join(format!("change-{id}/report.txt")))
        .expect("the watch hunted the drop");
    let profile = profile.to_str().unwrap();
    let args = ["hunt", &id.to_string(), "--profile", profile];
    let out = pgbisect_sub("watch", repo.path(), &work, &args);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let culprit = format!("hunted again: culprit {}", shas[12]);
    assert!(stdout.contains(&culprit), "{stdout}");
    let earlier = hunts.join(format!("change-{id}.hunt-1"));
    assert!(stdout.contains(&earlier.display().to_string()), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(earlier.join("report.txt")).unwrap(),
        first
    );
    let again = std::fs::read_to_string(hunts.join(format!("change-{id}/report.txt"))).unwrap();
    assert!(again.contains(&shas[12][..8]), "{again}");
    // Once more: the second hunt is kept too, under the next number.
    let out = pgbisect_sub("watch", repo.path(), &work, &args);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(
        hunts
            .join(format!("change-{id}.hunt-2/report.txt"))
            .is_file()
    );
    // A change that is not a confirmed drop is not hunted.
    let other = changes(&work)
        .into_iter()
        .find(|c| c.status != ChangeStatus::Confirmed);
    if let Some(other) = other {
        let args = ["hunt", &other.id.to_string(), "--profile", profile];
        let out = pgbisect_sub("watch", repo.path(), &work, &args);
        assert_eq!(out.status.code(), Some(2), "{}", said(&out));
        assert!(said(&out).contains("is not hunted"), "{}", said(&out));
    }
    // Without the profile that measures its series: what to give.
    let out = pgbisect_sub("watch", repo.path(), &work, &["hunt", &id.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("give the --profile"), "{}", said(&out));
}

#[test]
fn a_moved_reference_is_kept_its_points_labelled_and_the_move_is_not_a_change() {
    // Every commit at one level but commit 3, a quarter slower: as the
    // reference from night 9 on, every ratio after it is 1.33 times the
    // ones before, a step in the series that is the move, not a change.
    let mut levels = vec![1000; 16];
    levels[3] = 750;
    let (repo, shas) = dated_history(&levels);
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let before = replay(&profile, "2024-01-01..2024-01-08");
    watch_nights(repo.path(), &work, &before, 1);
    let mut args = replay(&profile, "2024-01-09..2024-01-14");
    args.extend(["--reference", &shas[3][..10], "--digest-every", "0"]);
    let out = watch_nights(repo.path(), &work, &args, 1);
    let moved = format!(
        "the reference moves from {} to {}",
        &shas[0][..8],
        &shas[3][..8]
    );
    assert!(said(&out).contains(&moved), "{}", said(&out));
    // Later nights keep the moved reference without the flag.
    let after = replay(&profile, "2024-01-15..2024-01-16");
    let out = watch_nights(repo.path(), &work, &after, 1);
    assert!(
        !said(&out).contains("the reference moves"),
        "{}",
        said(&out)
    );
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    let references: Vec<String> = store
        .nights("main")
        .unwrap()
        .into_iter()
        .map(|n| n.reference)
        .collect();
    let mut expected = vec![shas[0].clone(); 8];
    expected.extend(vec![shas[3].clone(); 8]);
    assert_eq!(references, expected);
    assert_eq!(store.changes("main").unwrap(), vec![]);
    drop(store);
    // Every point kept, each labelled by the reference it was measured
    // beside.
    let site = tmp.path().join("site");
    let out = watch_in(&work, &["publish", "--html", site.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let page = std::fs::read_to_string(site.join("series-profile-c8.html")).unwrap();
    assert_eq!(page.matches("class=\"point\"").count(), 16, "{page}");
    for (sha, n) in [(&shas[0], 8), (&shas[3], 8)] {
        let label = format!("<td class=\"reference\"><code title=\"{sha}\">");
        assert_eq!(page.matches(&label).count(), n, "{page}");
    }
    // A REV the repository does not hold: exit 2, nothing run.
    // Each exported row names the reference its ratios are over, last.
    let csv = tmp.path().join("watch.csv");
    let out = watch_in(&work, &["export", "--csv", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let last: Vec<&str> = text.lines().filter_map(|l| l.rsplit(',').next()).collect();
    let mut expected = vec!["reference"];
    expected.extend([shas[0].as_str(); 8]);
    expected.extend([shas[3].as_str(); 8]);
    assert_eq!(last, expected, "{text}");
    let mut bad = replay(&profile, "2024-01-17..2024-01-17");
    bad.extend(["--reference", "no-such-rev"]);
    let out = watch_nights(repo.path(), &work, &bad, 2);
    assert!(said(&out).contains("--reference"), "{}", said(&out));
}
