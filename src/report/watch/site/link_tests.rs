//! The pages a mail or a feed links: a change's page, a hunt report's
//! page, the culprit named in the index, and the Atom feed.

use super::tests::{EVIL, Fixture, fixture, sha};
use super::*;
use crate::store::Mark;

const AUTHOR: &str = "Ann <ann@example.org> \u{1b}[2J";

fn culprit() -> NamedCulprit {
    NamedCulprit {
        change: 1,
        commit: sha(4),
        subject: EVIL.into(),
        author: AUTHOR.into(),
    }
}

/// The site of `f`, change 1 hunted.
fn site(f: &Fixture, culprits: &[NamedCulprit], site_url: Option<&SiteUrl>) -> Vec<Page> {
    pages(&SiteInput {
        culprits,
        site_url,
        ..f.input(&BTreeSet::from([1]))
    })
}

fn page<'a>(pages: &'a [Page], path: &str) -> &'a str {
    &pages
        .iter()
        .find(|p| p.path == path)
        .unwrap_or_else(|| panic!("no {path}"))
        .text
}

#[test]
fn every_change_has_a_page_the_tables_link_with_its_culprit_named() {
    let f = fixture();
    let pages = site(&f, &[culprit()], None);
    let index = page(&pages, "index.html");
    for id in [1, 2] {
        assert!(
            index.contains(&format!("class=\"change-page\" href=\"change-{id}.html\"")),
            "{index}"
        );
        assert!(pages.iter().any(|p| p.path == format!("change-{id}.html")));
    }
    // The culprit: its short sha, subject and author, escaped.
    let named = format!(
        "<span class=\"culprit\"><code title=\"{0} Fix &lt;script&gt;alert(&quot;x&quot;)\
         &lt;/script&gt; &amp; more\">{1}</code> Fix &lt;script&gt;alert(&quot;x&quot;)\
         &lt;/script&gt; &amp; more <span class=\"author\">(Ann &lt;ann@example.org&gt;  [2J)\
         </span></span>",
        sha(4),
        crate::model::short_sha(&sha(4))
    );
    let confirmed = page(&pages, "change-1.html");
    for text in [index, confirmed] {
        assert!(text.contains(&named), "{text}");
        assert!(!text.contains("<script"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
    assert!(
        confirmed.contains("<a class=\"hunt\" href=\"hunts/change-1.html\">hunt report</a>"),
        "{confirmed}"
    );
    assert!(confirmed.contains("href=\"series-select-only-c8.html\""));
    assert!(confirmed.contains("-10.0% [-12.0%, -8.0%]"), "{confirmed}");
    let dismissed = page(&pages, "change-2.html");
    assert!(dismissed.contains("none (not hunted)"), "{dismissed}");
    // The index names the feed for a browser or a feed reader to find.
    assert!(index.contains(
        "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"confirmed changes\" \
         href=\"changes.atom\">"
    ));
}

#[test]
fn a_hunt_report_page_shows_the_report_escaped_beside_its_text() {
    let f = fixture();
    let (hunted, culprits) = (BTreeSet::from([1]), [culprit()]);
    let input = SiteInput {
        culprits: &culprits,
        ..f.input(&hunted)
    };
    let report = "Culprit: </pre><script>x()</script>\n\u{1b}[31mred\n";
    let shown = hunt_report_page(&input, 1, report);
    assert_eq!(shown.path, "hunts/change-1.html");
    let text = &shown.text;
    assert!(
        text.contains(
            "<pre id=\"report\">Culprit: &lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;\n\
             \\u{1b}[31mred\n</pre>"
        ),
        "{text}"
    );
    assert!(text.contains("<a href=\"../change-1.html\">the change</a>"));
    assert!(text.contains("class=\"report-text\" href=\"change-1.txt\""));
    assert!(text.contains("<a href=\"../index.html\">"));
    assert!(text.contains("<span class=\"culprit\">"), "{text}");
    // A change the store no longer holds still gets its page.
    let gone = hunt_report_page(&input, 9, "text");
    assert!(gone.text.contains("The hunt of change 9"), "{}", gone.text);
}

/// The feed's root, parsed as XML.
fn feed_entries(text: &str) -> Vec<(String, String, String, String)> {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "feed");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2005/Atom")
    );
    let child = |node: roxmltree::Node, name: &str| -> String {
        node.children()
            .find(|c| c.tag_name().name() == name)
            .unwrap_or_else(|| panic!("no <{name}>"))
            .text()
            .unwrap_or("")
            .to_string()
    };
    for name in ["id", "title", "updated"] {
        assert!(!child(root, name).is_empty(), "no feed {name}");
    }
    root.children()
        .filter(|c| c.tag_name().name() == "entry")
        .map(|e| {
            let link = e
                .children()
                .find(|c| c.tag_name().name() == "link")
                .and_then(|l| l.attribute("href"))
                .expect("a link")
                .to_string();
            (child(e, "id"), child(e, "title"), child(e, "updated"), link)
        })
        .collect()
}

#[test]
fn the_feed_has_an_entry_per_confirmed_change_linking_its_page() {
    let f = fixture();
    let pages = site(&f, &[culprit()], None);
    let entries = feed_entries(page(&pages, links::FEED));
    assert_eq!(entries.len(), 1, "only the confirmed change");
    let (id, title, updated, link) = &entries[0];
    assert_eq!(
        id,
        &format!(
            "urn:pgbisect:watch:master:select-only%2Fc8:{}:{}",
            sha(3),
            sha(4)
        )
    );
    assert_eq!(
        title,
        &format!(
            "select-only/c8 -10.0%: {} {EVIL} (Ann <ann@example.org> \\u{{1b}}[2J)",
            crate::model::short_sha(&sha(4))
        )
    );
    // Found by night 6.
    assert_eq!(updated, &crate::time::rfc3339_from_unix(f.nights[5].clock));
    assert_eq!(link, "change-1.html");
    // With the site's address: the links are absolute, the ids the same.
    let at = SiteUrl::parse("https://perf.example.org/pg").unwrap();
    let pages = site(&f, &[], Some(&at));
    let text = page(&pages, links::FEED);
    let served = feed_entries(text);
    assert_eq!(served[0].0, *id);
    assert_eq!(served[0].3, "https://perf.example.org/pg/change-1.html");
    assert!(served[0].1.ends_with("culprit not named yet"), "{text}");
    assert!(
        text.contains(
            "rel=\"self\" type=\"application/atom+xml\" \
             href=\"https://perf.example.org/pg/changes.atom\""
        ),
        "{text}"
    );
}

#[test]
fn the_feed_leaves_out_a_change_marked_wrong_and_says_an_intended_one_was_meant() {
    let mut f = fixture();
    let marked = |mark| ChangeMark {
        change: 1,
        mark,
        why: "the new <checks>, on purpose".into(),
        marked: f.nights[5].clock,
    };
    f.marks = vec![marked(Mark::Intended)];
    let pages = site(&f, &[culprit()], None);
    let entries = feed_entries(page(&pages, links::FEED));
    assert_eq!(entries.len(), 1);
    assert!(
        entries[0]
            .1
            .ends_with("(marked intended: the new <checks>, on purpose)"),
        "{:?}",
        entries[0]
    );
    f.marks = vec![marked(Mark::Wrong)];
    let pages = site(&f, &[culprit()], None);
    assert!(feed_entries(page(&pages, links::FEED)).is_empty());
}
