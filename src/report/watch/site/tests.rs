use super::*;
use crate::store::{ChangeStatus, NightCommit};

pub(super) const EVIL: &str = "Fix <script>alert(\"x\")</script> & more";

pub(super) fn sha(i: usize) -> String {
    format!("{i:040x}")
}

fn night(id: i64, status: NightStatus, reason: Option<&str>) -> Night {
    Night {
        id,
        clock: 86_400 * (19_723 + id) + 86_399,
        branch: "master".into(),
        tip: sha(id as usize),
        status,
        reason: reason.map(str::to_string),
        reference: sha(1),
        commits: vec![NightCommit {
            id: sha(id as usize),
            subject: if id == 4 {
                EVIL.into()
            } else {
                format!("commit {id}")
            },
            committed: 0,
        }],
    }
}

/// A run of the series at `tps`, the fields it does not name empty.
fn run(night: i64, role: Role, round: u32, tps: f64) -> RunRow {
    let commit = match role {
        Role::Candidate => sha(night as usize),
        Role::Reference => sha(1),
    };
    serde_json::from_value(serde_json::json!({
        "night": night, "commit": commit, "series": "select-only/c8",
        "profile": "select-only", "clients": 8, "role": role, "round": round,
        "tps": tps, "started": 0, "seconds": 1.0,
    }))
    .expect("a run")
}

fn change(id: i64, before: usize, after: usize, status: ChangeStatus) -> ChangeRow {
    ChangeRow {
        id,
        series: "select-only/c8".into(),
        before: sha(before),
        after: sha(after),
        pct: -10.0,
        low_pct: Some(-12.0),
        high_pct: Some(-8.0),
        status,
        first_night: 6,
        p_value: 0.01,
        kind: crate::store::ChangeKind::Step,
    }
}

/// Six nights of one series, the fourth 10% slower (its subject holds a
/// script), the fifth failed; a confirmed change and a dismissed one.
pub(super) struct Fixture {
    pub nights: Vec<Night>,
    pub runs: Vec<RunRow>,
    pub changes: Vec<ChangeRow>,
    pub marks: Vec<ChangeMark>,
}

impl Fixture {
    /// The site's input from the fixture on master, the changes in
    /// `hunted` with their hunt report; no commit address, culprit or
    /// site address (a test sets its own with `..`).
    pub(super) fn input<'a>(&'a self, hunted: &'a BTreeSet<i64>) -> SiteInput<'a> {
        SiteInput {
            branch: "master",
            nights: &self.nights,
            runs: &self.runs,
            changes: &self.changes,
            marks: &self.marks,
            hunted,
            commit_url: None,
            culprits: &[],
            site_url: None,
        }
    }
}

pub(super) fn fixture() -> Fixture {
    let mut nights = Vec::new();
    let mut runs = Vec::new();
    for id in 1..=6 {
        if id == 5 {
            nights.push(night(
                id,
                NightStatus::Failed,
                Some("reference does not build"),
            ));
            continue;
        }
        nights.push(night(id, NightStatus::Done, None));
        let level = if id >= 4 { 900.0 } else { 1000.0 };
        for round in 0..3 {
            runs.push(run(id, Role::Candidate, round, level + round as f64 * 10.0));
            runs.push(run(id, Role::Reference, round, 1000.0));
        }
    }
    let changes = vec![
        change(1, 3, 4, ChangeStatus::Confirmed),
        change(2, 2, 3, ChangeStatus::Dismissed),
    ];
    Fixture {
        nights,
        runs,
        changes,
        marks: Vec::new(),
    }
}

fn site(f: &Fixture, hunted: &BTreeSet<i64>, url: Option<&str>) -> Vec<Page> {
    pages(&SiteInput {
        commit_url: url,
        ..f.input(hunted)
    })
}

/// The inline SVG of a page, parsed.
fn svg_of(page: &str) -> String {
    let start = page.find("<svg").expect("an inline chart");
    let end = page.find("</svg>").expect("the chart closed") + "</svg>".len();
    page[start..end].to_string()
}

fn class_count(doc: &roxmltree::Document, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .count()
}

#[test]
fn an_index_and_a_page_per_series() {
    let f = fixture();
    let pages = site(&f, &BTreeSet::new(), None);
    let paths: Vec<&str> = pages.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "index.html",
            "series-select-only-c8.html",
            "change-1.html",
            "change-2.html",
            "changes.atom"
        ]
    );
    let index = &pages[0].text;
    assert!(index.starts_with("<!DOCTYPE html>"), "{index}");
    assert!(
        index.contains("href=\"series-select-only-c8.html\""),
        "{index}"
    );
    // The last point: night 6, 10% under the reference (920/1000 median).
    assert!(index.contains("0.9100"), "{index}");
    assert!(index.contains("1 confirmed"), "{index}");
    assert!(index.contains("1 dismissed"), "{index}");
    assert!(index.contains("reference does not build"), "{index}");
}

#[test]
fn the_chart_has_every_point_its_spread_the_changes_and_the_failed_night() {
    let f = fixture();
    let pages = site(&f, &BTreeSet::new(), None);
    let svg = svg_of(&pages[1].text);
    let doc = roxmltree::Document::parse(&svg).expect("the chart is valid XML");
    assert_eq!(class_count(&doc, "point"), 5);
    assert_eq!(class_count(&doc, "spread"), 5);
    assert_eq!(class_count(&doc, "failed"), 1);
    assert_eq!(class_count(&doc, "change confirmed"), 1);
    assert_eq!(class_count(&doc, "change dismissed"), 1);
    assert_eq!(class_count(&doc, "series"), 1);
    for node in doc.descendants().filter(|n| n.is_element()) {
        for attr in node.attributes() {
            if ["x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r"].contains(&attr.name()) {
                let v: f64 = attr.value().parse().expect("a number");
                assert!(v.is_finite(), "{} = {}", attr.name(), attr.value());
            }
        }
    }
    // The confirmed change is drawn just before night 4's point.
    let x_of = |class: &str| -> f64 {
        let g = doc
            .descendants()
            .find(|n| n.attribute("class") == Some(class))
            .unwrap();
        let line = g.children().find(|n| n.has_tag_name("line")).unwrap();
        line.attribute("x1").unwrap().parse().unwrap()
    };
    let points: Vec<f64> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("point"))
        .map(|n| n.attribute("cx").unwrap().parse().unwrap())
        .collect();
    let confirmed = x_of("change confirmed");
    assert!(
        points[2] < confirmed && confirmed < points[3],
        "{points:?} {confirmed}"
    );
}

#[test]
fn what_comes_from_git_is_escaped_everywhere() {
    let f = fixture();
    for page in site(
        &f,
        &BTreeSet::new(),
        Some("https://example.org/c?h={sha}&x=1"),
    ) {
        assert!(
            !page.text.contains("<script"),
            "{}: {}",
            page.path,
            page.text
        );
        assert!(!page.text.contains("</script"), "{}", page.path);
    }
    let pages = site(&f, &BTreeSet::new(), None);
    for page in pages.iter().filter(|p| p.path.ends_with(".html")) {
        // Nothing is loaded from anywhere: no script, image or style sheet
        // (the index names the feed, which a browser does not load).
        assert!(!page.text.contains("src="), "{}", page.path);
        let links = if page.path == "index.html" { 2 } else { 1 };
        assert_eq!(page.text.matches("<link").count(), links, "{}", page.path);
        assert!(page.text.contains("<link rel=\"icon\" href=\"data:,\">"));
    }
    assert!(
        pages[1]
            .text
            .contains("Fix &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more")
    );
}

#[test]
fn points_link_to_their_commit_only_with_a_template() {
    let f = fixture();
    let linked = site(
        &f,
        &BTreeSet::new(),
        Some("https://example.org/c?h={sha}&x=1"),
    );
    let href = format!("href=\"https://example.org/c?h={}&amp;x=1\"", sha(4));
    let svg = svg_of(&linked[1].text);
    assert!(svg.contains(&href), "{svg}");
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("a")).count(), 5);
    let plain = site(&f, &BTreeSet::new(), None);
    assert!(!plain[1].text.contains("href=\"http"), "{}", plain[1].text);
    // The full sha in the tooltip.
    assert!(
        plain[1]
            .text
            .contains(&format!("<title>{} commit 6", sha(6)))
    );
}

#[test]
fn a_change_links_its_hunt_report_or_says_it_is_not_hunted_yet() {
    let f = fixture();
    let tables = |pages: Vec<Page>| {
        pages
            .into_iter()
            .filter(|p| p.path == "index.html" || p.path.starts_with("series-"))
            .collect::<Vec<Page>>()
    };
    let not_yet = tables(site(&f, &BTreeSet::new(), None));
    assert_eq!(not_yet.len(), 2);
    for page in &not_yet {
        assert!(page.text.contains("not hunted yet"), "{}", page.path);
        assert!(!page.text.contains("hunts/change-1.txt"));
    }
    let hunted = tables(site(&f, &BTreeSet::from([1]), None));
    for page in &hunted {
        assert!(
            page.text.contains("href=\"hunts/change-1.txt\""),
            "{}",
            page.path
        );
        assert!(!page.text.contains("not hunted yet"), "{}", page.path);
        assert!(page.text.contains("none (dismissed)"), "{}", page.path);
    }
    assert_eq!(hunt_report(1).0, "hunts/change-1.txt");
}

/// Change 1 marked intended on 2024-01-10, its why holding markup.
fn intended_change_1() -> ChangeMark {
    ChangeMark {
        change: 1,
        mark: crate::store::Mark::Intended,
        why: "the <new> hash's cost".into(),
        marked: 1_704_844_800,
    }
}

#[test]
fn a_marked_change_shows_its_number_mark_and_why_escaped_and_is_no_longer_red() {
    let mut f = fixture();
    f.marks.push(intended_change_1());
    let pages = site(&f, &BTreeSet::new(), None);
    let change_page = pages.iter().find(|p| p.path == "change-1.html").unwrap();
    assert!(
        change_page.text.contains(
            "<span class=\"marked mark-intended\" title=\"marked intended on 2024-01-10\">\
             confirmed, marked <b>intended</b>: <q class=\"why\">the &lt;new&gt; hash&apos;s \
             cost</q></span>"
        ),
        "{}",
        change_page.text
    );
    let tables = |p: &&Page| p.path == "index.html" || p.path.starts_with("series-");
    for page in pages.iter().filter(tables) {
        let text = &page.text;
        assert!(text.contains("id=\"change-1\">#1</td>"), "{}", page.path);
        assert!(text.contains("id=\"change-2\">#2</td>"), "{}", page.path);
        assert!(
            text.contains(
                "<td class=\"marked mark-intended\" title=\"marked intended on 2024-01-10\">\
                 confirmed, marked <b>intended</b>: \
                 <q class=\"why\">the &lt;new&gt; hash&apos;s cost</q></td>"
            ),
            "{text}"
        );
        assert_eq!(
            statuses_in_order(text),
            ["none", "dismissed"],
            "{}",
            page.path
        );
    }
}

#[test]
fn the_chart_draws_a_marked_change_as_marked_and_its_tooltip_says_the_mark() {
    let mut f = fixture();
    f.marks.push(intended_change_1());
    let pages = site(&f, &BTreeSet::new(), None);
    let svg = svg_of(&pages[1].text);
    let doc = roxmltree::Document::parse(&svg).expect("the chart is valid XML");
    assert_eq!(class_count(&doc, "change confirmed"), 0, "{svg}");
    assert_eq!(class_count(&doc, "change dismissed"), 1, "{svg}");
    let g = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("change marked mark-intended"))
        .expect("the marked change");
    let child = |tag: &str| g.children().find(|n| n.has_tag_name(tag)).expect(tag);
    assert_eq!(
        child("title").text(),
        Some(
            "#1 00000000..00000000 -10.0% (confirmed, marked intended on 2024-01-10: the <new> \
             hash's cost), change-point p = 0.010"
        )
    );
    // Green as the tables' mark-intended, not the confirmed red.
    assert_eq!(child("line").attribute("stroke"), Some("#2c7a2c"));
    assert_eq!(child("text").attribute("fill"), Some("#2c7a2c"));
    assert_eq!(child("text").text(), Some("-10.0% intended"));
}

#[test]
fn an_empty_store_makes_an_index_that_says_so() {
    let empty = Fixture {
        nights: Vec::new(),
        runs: Vec::new(),
        changes: Vec::new(),
        marks: Vec::new(),
    };
    let pages = pages(&SiteInput {
        branch: "main",
        ..empty.input(&BTreeSet::new())
    });
    // The index, and the feed with no entry.
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[1].path, links::FEED);
    assert!(!pages[1].text.contains("<entry>"));
    assert!(pages[0].text.contains("No night yet."));
    assert!(pages[0].text.contains("No change found."));
}

#[test]
fn series_pages_get_names_of_their_own() {
    assert_eq!(slug("a b/c<8>"), "a-b-c-8-");
    let mut a = run(1, Role::Candidate, 0, 1.0);
    a.series = "x/c1".into();
    let mut b = a.clone();
    b.series = "x-c1".into();
    b.profile = "y".into();
    let names = series_names(&[a, b]);
    let pages: Vec<&str> = names.iter().map(|n| n.page.as_str()).collect();
    assert_eq!(pages, ["series-x-c1.html", "series-x-c1-2.html"]);
}

/// The `cy` of every point of a chart, in order.
fn point_ys(doc: &roxmltree::Document) -> Vec<f64> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("point"))
        .map(|n| n.attribute("cy").expect("cy").parse().expect("a number"))
        .collect()
}

#[test]
fn one_wild_run_is_marked_at_the_edge_and_the_step_stays_tall() {
    let mut f = fixture();
    let wild = f
        .runs
        .iter_mut()
        .find(|r| r.night == 2 && r.role == Role::Candidate && r.round == 0)
        .expect("night 2's first run");
    wild.tps = Some(500.0);
    let pages = site(&f, &BTreeSet::new(), None);
    let svg = svg_of(&pages[1].text);
    let doc = roxmltree::Document::parse(&svg).expect("the chart is valid XML");
    let ys = point_ys(&doc);
    // The 10% step (night 3 to night 4) takes over a quarter of the plot.
    let plot =
        crate::report::chart::HEIGHT - crate::report::chart::BOTTOM - crate::report::chart::TOP;
    assert!(ys[3] - ys[2] > plot / 4.0, "{ys:?}");
    let marks: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("off-axis"))
        .collect();
    assert_eq!(marks.len(), 1, "{svg}");
    let title = marks[0].children().find(|n| n.has_tag_name("title"));
    let title = title.and_then(|t| t.text()).unwrap_or_default();
    assert!(title.contains("lowest pair of runs at 0.5000"), "{title}");
    // Drawn at the bottom edge of the axis, under every point.
    let d = marks[0].attribute("d").unwrap_or_default();
    let edge: f64 = d[1..]
        .split([',', ' '])
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(ys.iter().all(|y| *y < edge), "{ys:?} {d}");
    assert!(edge <= crate::report::chart::HEIGHT - crate::report::chart::BOTTOM);
}

#[test]
fn a_chart_without_a_wild_run_marks_nothing_off_the_axis() {
    let f = fixture();
    let svg = svg_of(&site(&f, &BTreeSet::new(), None)[1].text);
    let doc = roxmltree::Document::parse(&svg).expect("the chart is valid XML");
    assert_eq!(class_count(&doc, "off-axis"), 0);
    let (top, bottom) = (
        crate::report::chart::TOP,
        crate::report::chart::HEIGHT - crate::report::chart::BOTTOM,
    );
    for y in point_ys(&doc) {
        assert!(top < y && y < bottom, "{y}");
    }
}

#[test]
fn the_y_span_holds_every_value_of_a_series_without_outliers() {
    // A 10% step with runs spread evenly up to 3% about each level.
    let levels: Vec<f64> = (0..30).map(|i| if i < 15 { 1.0 } else { 0.9 }).collect();
    let ends: Vec<f64> = levels
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            let off = 0.03 * ((i * 7 % 11) as f64 / 10.0);
            [l - off, l + off]
        })
        .collect();
    let (lo, hi) = layout::y_span(&ends, &levels).expect("a span");
    for v in ends.iter().chain(&levels) {
        assert!((lo..=hi).contains(v), "{v} outside {lo}..{hi}");
    }
    assert_eq!(layout::y_span(&[f64::NAN], &[]), None);
    // A kept value is held however far it lies.
    let (lo, _) = layout::y_span(&ends, &[0.2]).expect("a span");
    assert_eq!(lo, 0.2);
}

#[test]
fn the_y_span_leaves_a_wild_run_out() {
    let levels = [1.0, 1.0, 1.0, 1.0, 0.9, 0.9, 0.9, 0.9];
    let mut ends: Vec<f64> = levels.iter().flat_map(|l| [l - 0.005, l + 0.005]).collect();
    ends[2] = 0.5;
    let (lo, hi) = layout::y_span(&ends, &levels).expect("a span");
    assert!(lo > 0.85 && hi < 1.05, "{lo}..{hi}");
}

#[test]
fn labels_of_changes_close_together_do_not_overlap() {
    let right = 870.0;
    let mut at: Vec<(f64, usize)> = (0..30).map(|i| (100.0 + 6.0 * i as f64, 16)).collect();
    at.extend((0..6).map(|i| (840.0 + 5.0 * i as f64, 14)));
    at.push((400.0, 0));
    let boxes = layout::place_labels(&at, right, 64.0);
    assert_eq!(boxes.len(), at.len());
    for (i, a) in boxes.iter().enumerate() {
        assert!(a.right <= right + 4.0, "{a:?}");
        for b in &boxes[i + 1..] {
            assert!(!a.overlaps(b), "{a:?} and {b:?}");
        }
    }
    // Far apart, they share the first row.
    let apart = layout::place_labels(&[(100.0, 10), (500.0, 10)], right, 64.0);
    assert_eq!(apart[0].baseline, apart[1].baseline);
    assert!(!apart[0].end && !apart[1].end);
}

/// The `class` of each status cell of the changes' table, in order.
fn statuses_in_order(page: &str) -> Vec<&str> {
    let start = page
        .find("<table id=\"changes\">")
        .expect("a changes table");
    let end = start + page[start..].find("</table>").expect("closed");
    let mut out = Vec::new();
    for row in page[start..end].split("<tr>").skip(2) {
        let status = ["confirmed", "candidate", "dismissed"]
            .into_iter()
            .find(|s| row.contains(&format!("<td class=\"{s}\">")));
        out.push(status.unwrap_or("none"));
    }
    out
}

/// The dates of a table's rows, in order.
fn dates_in(page: &str, table: &str) -> Vec<String> {
    let start = page.find(&format!("<table id=\"{table}\">")).expect(table);
    let end = start + page[start..].find("</table>").expect("closed");
    page[start..end]
        .split("<tr")
        .skip(2)
        .filter_map(|row| row.split("<td>").nth(1)?.get(..10).map(str::to_string))
        .collect()
}

#[test]
fn changes_are_listed_newest_night_first_whatever_the_store_order() {
    let mut f = fixture();
    // Stored oldest last: the change at night 2 after the later ones.
    f.changes.push(change(3, 1, 2, ChangeStatus::Candidate));
    f.changes.swap(0, 1);
    let pages = site(&f, &BTreeSet::new(), None);
    let tables = pages
        .iter()
        .filter(|p| p.path == "index.html" || p.path.starts_with("series-"));
    for page in tables {
        assert_eq!(
            statuses_in_order(&page.text),
            ["confirmed", "dismissed", "candidate"],
            "{}",
            page.path
        );
        assert!(
            page.text.contains("Newest first, by the night"),
            "{}",
            page.path
        );
        let nights = dates_in(&page.text, "changes");
        assert_eq!(nights.len(), 3, "{}", page.path);
    }
    let nights = dates_in(&pages[1].text, "changes");
    assert_eq!(
        nights,
        [
            date(f.nights[3].clock),
            date(f.nights[2].clock),
            date(f.nights[1].clock)
        ]
    );
}

#[test]
fn nights_are_listed_newest_first_and_charted_oldest_first_whatever_the_store_order() {
    let mut f = fixture();
    f.nights[1].status = NightStatus::Stopped;
    f.nights[1].reason = Some("stopped at its deadline".into());
    f.nights.reverse();
    let pages = site(&f, &BTreeSet::new(), None);
    let clock = |id: i64| date(86_400 * (19_723 + id) + 86_399);
    assert_eq!(dates_in(&pages[0].text, "failed"), [clock(5), clock(2)]);
    let points = dates_in(&pages[1].text, "points");
    let newest_first: Vec<String> = [6, 5, 4, 3, 2, 1].into_iter().map(clock).collect();
    assert_eq!(points, newest_first);
    let svg = svg_of(&pages[1].text);
    let doc = roxmltree::Document::parse(&svg).expect("the chart is valid XML");
    let xs: Vec<f64> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("point"))
        .map(|n| n.attribute("cx").expect("cx").parse().expect("a number"))
        .collect();
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
}

#[test]
fn the_index_draws_each_series_recent_points_small_and_escaped() {
    let mut f = fixture();
    for r in &mut f.runs {
        r.series = "a<b&c".into();
    }
    for c in &mut f.changes {
        c.series = "a<b&c".into();
    }
    let index = &site(&f, &BTreeSet::new(), None)[0].text;
    assert!(!index.contains("a<b"), "{index}");
    let svg = svg_of(index);
    let doc = roxmltree::Document::parse(&svg).expect("the sparkline is valid XML");
    let root = doc.root_element();
    assert_eq!(root.attribute("class"), Some("sparkline"));
    let title = root.children().find(|n| n.has_tag_name("title"));
    let title = title.and_then(|t| t.text()).unwrap_or_default();
    assert!(title.starts_with("a<b&c: the last 5 point(s)"), "{title}");
    let line = root.children().find(|n| n.has_tag_name("polyline"));
    let ys: Vec<f64> = line
        .and_then(|l| l.attribute("points"))
        .unwrap_or_default()
        .split(' ')
        .filter_map(|xy| xy.split(',').nth(1)?.parse().ok())
        .collect();
    assert_eq!(ys.len(), 5, "{svg}");
    // Nights 1 to 3 at the reference, nights 4 and 6 10% under: lower.
    assert!(ys.iter().all(|y| (0.0..=28.0).contains(y)), "{ys:?}");
    assert!(
        ys[0] == ys[2] && ys[2] + 10.0 < ys[3] && ys[3] == ys[4],
        "{ys:?}"
    );
    assert_eq!(chart::sparkline("x", &[]), "");
}
