//! The watcher's results as a static site, as `asv publish` writes one
//! for Python projects: an index of every series with a sparkline of its
//! recent points, its last point and its changes, and a page per series with its points over the nights as
//! an inline SVG chart, change points marked, each point linked to its
//! commit and each change to a page of its own and its hunt report's;
//! an Atom feed of the confirmed changes for a feed reader.
//!
//! Pure: the store's rows in, the pages' text out ([`pages`]); the caller
//! writes them and copies the hunt reports named by [`hunt_report`]. No
//! page loads anything from the network, nor runs a script: tooltips are
//! SVG `<title>`s. Everything that comes from git (subjects) is escaped.

mod atom;
mod change_pages;
mod chart;
mod html;
mod layout;
pub mod links;

pub use change_pages::hunt_report_page;
use links::SiteUrl;

use crate::core::counts::Measure;
use crate::store::points::{Point, points};
use crate::store::{ChangeMark, ChangeRow, Night, NightStatus, Role, RunRow, series_measure};
use std::collections::BTreeSet;

/// What the site is made of.
#[derive(Debug, Clone, Copy)]
pub struct SiteInput<'a> {
    pub branch: &'a str,
    /// Every night of the branch, oldest first.
    pub nights: &'a [Night],
    pub runs: &'a [RunRow],
    pub changes: &'a [ChangeRow],
    /// The marks people gave changes (`pgbisect watch mark`).
    pub marks: &'a [ChangeMark],
    /// The changes whose hunt report the site holds (see [`hunt_report`]).
    pub hunted: &'a BTreeSet<i64>,
    /// A commit's web page, `{sha}` standing for its full id; `None`: the
    /// sha is shown, not linked.
    pub commit_url: Option<&'a str>,
    /// The culprits the hunts named, a change's first one each.
    pub culprits: &'a [NamedCulprit],
    /// Where the site is served (`--site-url`): the feed's links are
    /// absolute with it, relative to the feed without.
    pub site_url: Option<&'a SiteUrl>,
}

/// The commit a change's hunt named, as its report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedCulprit {
    /// The change's id.
    pub change: i64,
    /// Its full id.
    pub commit: String,
    pub subject: String,
    pub author: String,
}

impl<'a> SiteInput<'a> {
    /// The culprit `change`'s hunt named, if the site knows one.
    fn culprit_of(&self, change: &ChangeRow) -> Option<&'a NamedCulprit> {
        self.culprits.iter().find(|c| c.change == change.id)
    }

    /// The mark a person gave `change` (`pgbisect watch mark`), if any.
    fn mark_of(&self, change: &ChangeRow) -> Option<&'a ChangeMark> {
        self.marks.iter().find(|m| m.change == change.id)
    }
}

impl NamedCulprit {
    /// In words, as plain text: `1a2b3c4d Subject (Author)`.
    fn words(&self) -> String {
        let mut words = crate::model::short_sha(&self.commit).to_string();
        if !self.subject.is_empty() {
            words = format!("{words} {}", self.subject);
        }
        if !self.author.is_empty() {
            words = format!("{words} ({})", self.author);
        }
        words
    }
}

/// One file of the site: its path inside the site's folder and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub path: String,
    pub text: String,
}

/// Where, in the site, the hunt report of change `id` is copied: the
/// text report, and the JSON one beside it when there is one.
pub fn hunt_report(id: i64) -> (String, String) {
    (
        format!("hunts/change-{id}.txt"),
        format!("hunts/change-{id}.json"),
    )
}

/// One series: a profile at a client count.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SeriesName {
    key: String,
    profile: String,
    clients: u32,
    /// Its page, inside the site.
    page: String,
}

/// A place on a series' x axis: a point, or a night that failed. A count
/// series' points are in instructions a transaction ([`counted_slot`]).
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Point(Point, Option<Spread>),
    Failed(Night),
}

/// The lowest and highest ratio of a point's pairs of runs (the commit's
/// run over the reference's run beside it).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spread {
    low: f64,
    high: f64,
}

/// The pages of the site: `index.html`, a page per series, a page per
/// change and the feed of confirmed changes (the hunt reports' pages are
/// [`hunt_report_page`]'s).
pub fn pages(input: &SiteInput) -> Vec<Page> {
    let series = series_names(input.runs);
    let mut out = Vec::new();
    let mut summaries = Vec::new();
    for s in &series {
        let slots = slots(input, &s.key);
        let changes: Vec<&ChangeRow> = input.changes.iter().filter(|c| c.series == s.key).collect();
        out.push(Page {
            path: s.page.clone(),
            text: html::series_page(input, s, &slots, &changes),
        });
        summaries.push((s, slots));
    }
    for change in input.changes {
        let series = series.iter().find(|s| s.key == change.series);
        out.push(Page {
            path: links::change_page(change.id),
            text: change_pages::change_page(input, change, series),
        });
    }
    out.push(Page {
        path: links::FEED.into(),
        text: atom::feed(input),
    });
    out.insert(
        0,
        Page {
            path: "index.html".into(),
            text: html::index(input, &summaries),
        },
    );
    out
}

/// Every series of the runs, by profile then client count, each with a
/// page name of its own.
fn series_names(runs: &[RunRow]) -> Vec<SeriesName> {
    let mut seen: Vec<(String, u32, String)> = runs
        .iter()
        .map(|r| (r.profile.clone(), r.clients, r.series.clone()))
        .collect();
    seen.sort();
    seen.dedup();
    let mut taken = BTreeSet::new();
    seen.into_iter()
        .map(|(profile, clients, key)| {
            let base = slug(&key);
            let mut page = format!("series-{base}.html");
            let mut n = 2;
            while !taken.insert(page.clone()) {
                page = format!("series-{base}-{n}.html");
                n += 1;
            }
            SeriesName {
                key,
                profile,
                clients,
                page,
            }
        })
        .collect()
}

/// A file name's part from a series key: letters, digits, `-`, `_`, `.`
/// kept, anything else a `-`.
fn slug(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The x axis of `series`: its points in the order the nights ran, and
/// each night that failed where it fell.
fn slots(input: &SiteInput, series: &str) -> Vec<Slot> {
    let pts = points(input.nights, input.runs, Some(series));
    let mut out = Vec::new();
    // In the order they ran, however the store listed them: the chart's x
    // axis and the points' table read this order.
    let mut nights: Vec<&Night> = input.nights.iter().collect();
    nights.sort_by_key(|n| (n.clock, n.id));
    for night in nights {
        if night.status == NightStatus::Failed {
            out.push(Slot::Failed(night.clone()));
            continue;
        }
        for p in pts.iter().filter(|p| p.night == night.id) {
            let spread = spread(input.runs, p);
            out.push(match series_measure(series) {
                Measure::Tps => Slot::Point(p.clone(), spread),
                Measure::Instructions => counted_slot(p, spread),
            });
        }
    }
    out
}

/// A point of a count series as its page shows it: what instructions
/// buy turned back into instructions a transaction, the commit's and the
/// reference's, and the ratio and spread of those; up is then more
/// instructions, a slowdown.
fn counted_slot(p: &Point, spread: Option<Spread>) -> Slot {
    let instructions = crate::core::counts::transactions_per_billion;
    let point = Point {
        tps: instructions(p.tps),
        reference_tps: instructions(p.reference_tps),
        ratio: 1.0 / p.ratio,
        ..p.clone()
    };
    let spread = spread.map(|s| Spread {
        low: 1.0 / s.high,
        high: 1.0 / s.low,
    });
    Slot::Point(point, spread)
}

/// The spread of `point`'s pairs of runs; `None` without a usable pair.
fn spread(runs: &[RunRow], point: &Point) -> Option<Spread> {
    let of_night = |r: &&RunRow| r.night == point.night && r.series == point.series;
    let usable = |r: &RunRow| r.tps.filter(|t| t.is_finite() && *t > 0.0);
    let ratios: Vec<f64> = runs
        .iter()
        .filter(of_night)
        .filter(|r| r.role == Role::Candidate && r.commit == point.commit)
        .filter_map(|c| {
            let reference = runs
                .iter()
                .filter(of_night)
                .find(|r| r.role == Role::Reference && r.round == c.round)?;
            Some(usable(c)? / usable(reference)?)
        })
        .collect();
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (low.is_finite() && high.is_finite()).then_some(Spread { low, high })
}

/// The web page of `sha` from the `--commit-url` template, if one is
/// given: `{sha}` replaced by the full id.
fn commit_href(template: Option<&str>, sha: &str) -> Option<String> {
    template.map(|t| t.replace("{sha}", sha))
}

/// A night's date, `YYYY-MM-DD` (UTC).
fn date(clock: i64) -> String {
    crate::time::date_from_unix(clock)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod link_tests;
