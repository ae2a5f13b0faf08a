//! `--site-url`: a replay of a made history with a drop, its finding
//! mailed and its site written. The mail links the change's page and the
//! hunt report's page at the site's address, both pages are there and
//! load in headless Chromium without a console error, the index names the
//! culprit, and the Atom feed of confirmed changes parses as XML with one
//! entry, linking the change's page.

use crate::common;
use crate::watch_site::{browse, chromium, console_lines};

use common::mail::MailServer;
use common::watch::{dated_history_with, replay};
use common::*;
use std::path::Path;

const SITE_URL: &str = "https://perf.example.org/pg";
const SUBJECT: &str = "Cache <b>less</b> & hope";

/// The mail whose subject starts with `prefix`, parsed: its body.
fn bodies(mails: &[String], prefix: &str) -> Vec<String> {
    mails
        .iter()
        .filter_map(|m| {
            let message = mail_parser::MessageParser::new().parse(m.as_bytes())?;
            let subject = message.subject()?;
            subject
                .starts_with(prefix)
                .then(|| message.body_text(0).map(|b| b.into_owned()))
                .flatten()
        })
        .collect()
}

/// The feed's entries as (id, title, link), checked to be an Atom feed.
fn atom_entries(path: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the feed is well-formed XML");
    let feed = doc.root_element();
    let atom = Some("http://www.w3.org/2005/Atom");
    assert_eq!(
        (feed.tag_name().name(), feed.tag_name().namespace()),
        ("feed", atom)
    );
    let text_of = |node: roxmltree::Node, name: &str| {
        node.children()
            .find(|c| c.tag_name().name() == name && c.tag_name().namespace() == atom)
            .and_then(|c| c.text())
            .unwrap_or_else(|| panic!("no <{name}> in {text}"))
            .to_string()
    };
    for name in ["id", "title", "updated"] {
        text_of(feed, name);
    }
    feed.children()
        .filter(|c| c.tag_name().name() == "entry")
        .map(|e| {
            text_of(e, "updated");
            let link = e
                .children()
                .find(|c| c.tag_name().name() == "link")
                .and_then(|l| l.attribute("href"))
                .expect("an entry's link")
                .to_string();
            (text_of(e, "id"), text_of(e, "title"), link)
        })
        .collect()
}

#[test]
fn the_mail_links_the_changes_page_and_its_hunt_report_on_the_site() {
    let (repo, shas) = dated_history_with(&levels_with_drop_at(30, 16), |i| {
        if i == 16 {
            SUBJECT.into()
        } else {
            format!("commit number {i}")
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile(tmp.path());
    let work = tmp.path().join("w");
    let site = tmp.path().join("site");
    let server = MailServer::start();
    let smtp = server.addr();
    let mut args = replay(&profile, "2024-01-01..2024-01-30");
    args.extend(["--every", "3", "--per-night", "1"]);
    args.extend(["--mail-to", "perf@example.org", "--smtp", &smtp]);
    args.extend(["--html", site.to_str().unwrap(), "--site-url", SITE_URL]);
    let out = pgbisect_sub("watch", repo.path(), &work, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let hunts: Vec<String> = std::fs::read_dir(work.join("watch-hunts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(hunts.len(), 1, "{hunts:?}");
    let id = hunts[0].strip_prefix("change-").unwrap();
    let (page, report) = (
        format!("change-{id}.html"),
        format!("hunts/change-{id}.html"),
    );

    // The finding's mail links both pages at the site's address.
    let mails = server.messages();
    let findings = bodies(&mails, "pgbisect watch: ");
    assert_eq!(findings.len(), 1, "{stderr}");
    let body = &findings[0];
    assert!(
        body.contains(&format!("\nIts page: {SITE_URL}/{page}\n")),
        "{body}"
    );
    assert!(
        body.contains(&format!("The hunt's report ({SITE_URL}/{report}):")),
        "{body}"
    );
    assert!(!body.contains("watch-hunts/change-"), "{body}");
    // So does the digest that tells of it.
    let digests = bodies(&mails, "pgbisect watch digest: ");
    assert!(
        digests
            .iter()
            .any(|d| d.contains(&format!("    its page: {SITE_URL}/{page}\n"))),
        "{digests:?}"
    );

    // Both pages are in the site; the index and the change's page name
    // the culprit, escaped; the hunt's page shows its report.
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    let culprit = format!(
        "{}</code> Cache &lt;b&gt;less&lt;/b&gt; &amp; hope <span class=\"author\">({} \
         &lt;{}&gt;)</span>",
        &shas[16][..8],
        AUTHOR.0,
        AUTHOR.1
    );
    assert!(index.contains(&culprit), "{index}");
    assert!(index.contains(&format!("href=\"{page}\"")), "{index}");
    assert!(index.contains(&format!("href=\"{report}\"")), "{index}");
    let change_page = std::fs::read_to_string(site.join(&page)).unwrap();
    assert!(change_page.contains(&culprit), "{change_page}");
    assert!(change_page.contains(&format!("href=\"{report}\"")));
    let report_page = std::fs::read_to_string(site.join(&report)).unwrap();
    let text = std::fs::read_to_string(work.join("watch-hunts").join(&hunts[0]).join("report.txt"))
        .unwrap();
    // The report as written, once its escapes are read back.
    let start = report_page.find("<pre id=\"report\">").expect("the report") + 17;
    let end = start + report_page[start..].find("</pre>").expect("closed");
    let shown = report_page[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    assert_eq!(shown, text);
    assert!(report_page.contains(&format!("href=\"change-{id}.txt\"")));
    assert!(site.join(format!("hunts/change-{id}.txt")).is_file());

    // The feed: one entry, the confirmed drop, its link absolute.
    let entries = atom_entries(&site.join("changes.atom"));
    assert_eq!(entries.len(), 1, "{entries:?}");
    let (entry_id, title, link) = &entries[0];
    assert!(
        entry_id.starts_with("urn:pgbisect:watch:main:"),
        "{entry_id}"
    );
    assert!(title.starts_with("profile/c8 -"), "{title}");
    assert!(
        title.ends_with(&format!(
            "{} {SUBJECT} ({} <{}>)",
            &shas[16][..8],
            AUTHOR.0,
            AUTHOR.1
        )),
        "{title}"
    );
    assert_eq!(link, &format!("{SITE_URL}/{page}"));

    // Both pages load in a real browser, and say nothing on its console.
    let Some(chromium) = chromium() else {
        return;
    };
    for (path, seen) in [(&page, &shas[16][..8]), (&report, "<pre id=\"report\">")] {
        let url = format!("file://{}", site.join(path).display());
        let (dom, log) = browse(&chromium, &url, &["--dump-dom"]);
        let errors = console_lines(&log);
        assert!(errors.is_empty(), "{path}: {}", errors.join("\n"));
        assert!(dom.contains(seen), "{path}: {dom}");
        assert!(!dom.contains("<b>less"), "{path}: {dom}");
    }
}

#[test]
fn publish_refuses_a_site_url_that_is_not_a_web_address() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let out = bin()
        .args(["watch", "publish", "--html"])
        .arg(&site)
        .arg("--work-dir")
        .arg(tmp.path().join("w"))
        .args(["--site-url", "ftp://perf.example.org/pg"])
        .output()
        .expect("pgbisect runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`ftp://perf.example.org/pg` is not an http:// or https:// URL"),
        "{stderr}"
    );
    assert!(stderr.contains("e.g. https://perf.example.org/pgbisect/"));
    assert!(!site.exists());
}
