//! `pgbisect watch publish --html`: the site written from a results
//! database, then loaded in a real browser (headless Chromium): the chart
//! renders with every point, a subject holding a script stays text, and
//! the console shows no error. A screenshot of the series' page is left
//! in `target/watch-site.png` for a person to look at.

use crate::common;

use common::*;
use pgbisect::store::sqlite::SqliteStore;
use pgbisect::store::{
    ChangeRow, ChangeStatus, NewNight, NightCommit, NightStatus, Role, RunRow, Store,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const NIGHTS: usize = 14;
/// The night (from 0) from which the series is 8% slower.
const DROP: usize = 9;
/// The night whose reference did not build.
const FAILED: usize = 11;
const EVIL: &str = "Speed up <script>document.title='pwned'</script> & <b>locks</b>";

fn sha(i: usize) -> String {
    format!("{:040x}", 0xabc000 + i)
}

/// A run of the series at `tps`, the fields it does not name empty.
fn run(night: i64, commit: &str, role: Role, round: u32, tps: f64) -> RunRow {
    serde_json::from_value(serde_json::json!({
        "night": night, "commit": commit, "series": "select-only/c8",
        "profile": "select-only", "clients": 8, "role": role, "round": round,
        "tps": tps, "started": 0, "seconds": 1.0,
    }))
    .expect("a run")
}

/// A results database of `NIGHTS` nights of one commit each, one series
/// 8% slower from night `DROP` on, night `FAILED` failed, and the drop a
/// confirmed change whose hunt wrote its report.
fn results(work: &Path) -> i64 {
    std::fs::create_dir_all(work).unwrap();
    let mut store = SqliteStore::open(&work.join("watch.sqlite")).unwrap();
    for i in 0..NIGHTS {
        let subject = if i == DROP {
            EVIL.to_string()
        } else {
            format!("Commit number {i}")
        };
        let night = store
            .begin_night(&NewNight {
                clock: 1_704_153_599 + 86_400 * i as i64,
                branch: "master".into(),
                tip: sha(i),
                reference: sha(0),
                commits: vec![NightCommit {
                    id: sha(i),
                    subject,
                    committed: 1_704_110_400 + 86_400 * i as i64,
                }],
            })
            .unwrap();
        if i == FAILED {
            let why = "the reference does not build";
            store
                .finish_night(night.id, NightStatus::Failed, Some(why))
                .unwrap();
            continue;
        }
        let level = if i >= DROP { 920.0 } else { 1000.0 };
        for round in 0..3u32 {
            let wobble = 1.0 + 0.01 * (f64::from(round) - 1.0) + 0.003 * (i % 3) as f64;
            let candidate = run(night.id, &sha(i), Role::Candidate, round, level * wobble);
            store.add_run(&candidate).unwrap();
            let reference = run(night.id, &sha(0), Role::Reference, round, 1000.0);
            store.add_run(&reference).unwrap();
        }
        store
            .finish_night(night.id, NightStatus::Done, None)
            .unwrap();
    }
    let mut change = ChangeRow {
        id: 0,
        series: "select-only/c8".into(),
        before: sha(DROP - 1),
        after: sha(DROP),
        pct: -8.0,
        low_pct: Some(-9.1),
        high_pct: Some(-6.9),
        status: ChangeStatus::Candidate,
        first_night: DROP as i64 + 2,
        p_value: 0.005,
        kind: pgbisect::store::ChangeKind::Step,
    };
    change.id = store.add_change(&change).unwrap();
    change.status = ChangeStatus::Confirmed;
    store.update_change(&change).unwrap();
    let hunt = work
        .join("watch-hunts")
        .join(format!("change-{}", change.id));
    std::fs::create_dir_all(&hunt).unwrap();
    std::fs::write(hunt.join("report.txt"), "culprit: abc <evil>\n").unwrap();
    change.id
}

/// `pgbisect watch publish --html SITE --work-dir WORK` with `extra`.
fn publish(work: &Path, site: &Path, extra: &[&str]) -> Output {
    bin()
        .args(["watch", "publish", "--html"])
        .arg(site)
        .arg("--work-dir")
        .arg(work)
        .args(extra)
        .output()
        .expect("pgbisect runs")
}

#[test]
fn publish_writes_an_index_a_series_page_and_the_hunt_report() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let id = results(&work);
    let site = tmp.path().join("site");
    let url = "https://git.postgresql.org/gitweb/?p=postgresql.git;a=commit;h={sha}";
    let out = publish(&work, &site, &["--commit-url", url]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        index.contains("href=\"series-select-only-c8.html\""),
        "{index}"
    );
    assert!(index.contains("1 confirmed"), "{index}");
    assert!(index.contains("the reference does not build"), "{index}");
    let report = format!("hunts/change-{id}.txt");
    assert!(index.contains(&format!("href=\"{report}\"")), "{index}");
    assert_eq!(
        std::fs::read_to_string(site.join(&report)).unwrap(),
        "culprit: abc <evil>\n"
    );
    let page = std::fs::read_to_string(site.join("series-select-only-c8.html")).unwrap();
    let link = format!("a=commit;h={}\"", sha(DROP));
    assert!(page.contains(&link), "{page}");
    assert!(!page.contains("<script"), "{page}");
    // A template without {sha} is a usage error.
    let bad = publish(&work, &site, &["--commit-url", "https://example.org/"]);
    assert_eq!(bad.status.code(), Some(2));
    // A work dir without results is refused, nothing written.
    let empty = tmp.path().join("empty");
    let none = publish(&empty, &tmp.path().join("site2"), &[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(!tmp.path().join("site2").exists());
}

/// The site of [`results`] written in `dir/site`.
fn published(dir: &Path) -> PathBuf {
    let work = dir.join("w");
    results(&work);
    let site = dir.join("site");
    let out = publish(&work, &site, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    site
}

/// Headless Chromium, or `None` when the test is skipped (see
/// `common::require`).
pub(crate) fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(CHROMIUM);
    require(
        path.is_file().then_some(path),
        "Chromium at /usr/bin/chromium",
        "Debian's `chromium` package: apt-get install chromium (scripts/setup.sh installs it)",
    )
}

/// Runs Chromium headless on `url` with `extra` flags, in a profile of
/// its own, killed after two minutes; its stdout and stderr.
pub(crate) fn browse(chromium: &Path, url: &str, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = Command::new("nice")
        .args(["-n", "19"])
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish with {url} in 2 minutes:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (read(&stdout), read(&stderr))
}

/// What the pages' console said, in Chromium's log (`INFO:CONSOLE:1]
/// "Uncaught Error: ..."`): the pages run no script, so any message is
/// one too many.
pub(crate) fn console_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn the_site_renders_in_headless_chromium_without_a_console_error() {
    let Some(chromium) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let site = published(tmp.path());
    let page = format!(
        "file://{}",
        site.join("series-select-only-c8.html").display()
    );
    // The check sees an error: a page that throws one is caught.
    let throws = tmp.path().join("throws.html");
    std::fs::write(&throws, "<script>throw new Error('seen')</script>").unwrap();
    let (_, log) = browse(
        &chromium,
        &format!("file://{}", throws.display()),
        &["--dump-dom"],
    );
    assert!(
        console_lines(&log)
            .iter()
            .any(|l| l.contains("Uncaught Error: seen")),
        "the console's error is not in Chromium's log:\n{log}"
    );
    let (dom, log) = browse(&chromium, &page, &["--dump-dom"]);
    let errors = console_lines(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    // The chart is in the rendered document with every point, the
    // change and the failed night; the subject's script stayed text.
    assert!(dom.contains("<svg"), "{dom}");
    assert_eq!(dom.matches("class=\"point\"").count(), NIGHTS - 1, "{dom}");
    assert_eq!(dom.matches("class=\"change confirmed\"").count(), 1);
    assert_eq!(dom.matches("<text class=\"failed\"").count(), 1, "{dom}");
    assert!(!dom.contains("<script"), "{dom}");
    assert!(dom.contains("&lt;script&gt;"), "{dom}");
    assert!(!dom.contains("pwned</title>"), "{dom}");
    let index = format!("file://{}", site.join("index.html").display());
    let (dom, log) = browse(&chromium, &index, &["--dump-dom"]);
    let errors = console_lines(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    assert!(dom.contains("select-only/c8"), "{dom}");
}

#[test]
fn a_screenshot_of_the_series_page_is_not_blank() {
    let Some(chromium) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let site = published(tmp.path());
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("watch-site.png");
    let blank_page = tmp.path().join("blank.html");
    std::fs::write(&blank_page, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank = tmp.path().join("blank.png");
    let page = site.join("series-select-only-c8.html");
    for (html, png) in [(&page, &shot), (&blank_page, &blank)] {
        let _ = std::fs::remove_file(png);
        let flag = format!("--screenshot={}", png.display());
        browse(
            &chromium,
            &format!("file://{}", html.display()),
            &[&flag, "--window-size=1100,900", "--hide-scrollbars"],
        );
    }
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let bytes = std::fs::read(&shot).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    // A page of text and a chart compresses far worse than a white one.
    assert!(size(&blank) > 0, "no screenshot of the blank page");
    assert!(
        size(&shot) > 4 * size(&blank),
        "the screenshot ({} bytes) is hardly larger than a blank page's ({} bytes)",
        size(&shot),
        size(&blank)
    );
    eprintln!("screenshot of the series page: {}", shot.display());
}

#[test]
fn a_marked_change_shows_its_mark_and_why_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let id = results(&work);
    let why = "the cost of <b>the new hash</b>, accepted";
    let out = bin()
        .args(["watch", "mark", &id.to_string(), "intended", "--why", why])
        .arg("--work-dir")
        .arg(&work)
        .output()
        .expect("pgbisect runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let site = tmp.path().join("site");
    let out = publish(&work, &site, &[]);
    assert_eq!(out.status.code(), Some(0));
    for page in ["series-select-only-c8.html", "index.html"] {
        let url = format!("file://{}", site.join(page).display());
        let (dom, log) = browse(&chromium, &url, &["--dump-dom"]);
        let errors = console_lines(&log);
        assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
        assert!(dom.contains(&format!(">#{id}</td>")), "{page}: {dom}");
        assert!(
            dom.contains(
                "confirmed, marked <b>intended</b>: <q class=\"why\">the cost of \
                 &lt;b&gt;the new hash&lt;/b&gt;, accepted</q>"
            ),
            "{page}: {dom}"
        );
        assert!(
            dom.contains("class=\"marked mark-intended\""),
            "{page}: {dom}"
        );
    }
}
