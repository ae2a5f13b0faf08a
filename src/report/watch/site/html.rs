//! The site's pages as HTML: the index, and a page per series. Every
//! text that comes from git or the store is escaped.

use super::chart::{change_style, series_chart, sparkline};
use super::links::{FEED, change_page, hunt_page};
use super::{SeriesName, SiteInput, Slot, commit_href, date, hunt_report};
use crate::core::counts::Measure;
use crate::model::short_sha;
use crate::report::chart::escape;
use crate::report::watch::measured;
use crate::store::{ChangeRow, ChangeStatus, Night, NightStatus, series_measure};
use std::cmp::Reverse;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}\
table{border-collapse:collapse;margin:.5em 0 1.5em}\
th,td{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
svg{max-width:100%;height:auto}\
.confirmed,.reported{color:#d62728;font-weight:bold}.candidate{color:#c25e00}\
.dismissed{color:#777}.failed{color:#d62728}.quiet{color:#777}\
.mark-intended{color:#2c7a2c}.mark-wrong{color:#777}";

/// A page's head and opening, titled `title`.
pub(super) fn open(title: &str) -> String {
    open_with(title, "")
}

/// A page's head and opening, titled `title`, `head` (HTML) in its head.
fn open_with(title: &str, head: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n{head}<title>{}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n",
        escape(title)
    )
}

pub(super) const CLOSE: &str =
    "<p class=\"quiet\">Written by pgbisect watch.</p>\n</body>\n</html>\n";

/// The index: every series with a small chart of its recent points, its
/// last point and its changes, then
/// every change, then the nights that failed or left a commit out.
pub(super) fn index(input: &SiteInput, series: &[(&SeriesName, Vec<Slot>)]) -> String {
    let feed = format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"confirmed changes\" \
         href=\"{FEED}\">\n"
    );
    let mut out = open_with(&format!("pgbisect watch: {}", input.branch), &feed);
    let _ = writeln!(
        out,
        "<h1>pgbisect watch: {}</h1>\n<p>{}</p>",
        escape(input.branch),
        nights_line(input)
    );
    out.push_str(
        "<h2>Series</h2>\n<table id=\"series\">\n<tr><th>series</th><th>profile</th>\
         <th>clients</th><th>measure</th><th>points</th><th>recent points</th>\
         <th>last point (ratio to the reference)</th><th>changes</th></tr>\n",
    );
    for (s, slots) in series {
        let last = slots.iter().rev().find_map(|slot| match slot {
            Slot::Point(p, _) => Some(p),
            Slot::Failed(_) => None,
        });
        let last = last.map_or_else(
            || "none".to_string(),
            |p| {
                format!(
                    "{:.4} at {} (night of {})",
                    p.ratio,
                    commit_link(input.commit_url, &p.commit, &p.subject),
                    date(p.clock)
                )
            },
        );
        let count = slots
            .iter()
            .filter(|s| matches!(s, Slot::Point(..)))
            .count();
        let changes = change_counts(input.changes.iter().filter(|c| c.series == s.key));
        let _ = writeln!(
            out,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"measure\">{}</td><td class=\"n\">{count}</td><td>{}</td>\
             <td>{last}</td><td>{changes}</td></tr>",
            escape(&s.page),
            escape(&s.key),
            escape(&s.profile),
            s.clients,
            escape(measured::measure_words(&s.key)),
            sparkline(&s.key, slots)
        );
    }
    out.push_str("</table>\n");
    let all: Vec<&ChangeRow> = input.changes.iter().collect();
    out.push_str(&changes_table(input, &all, true));
    out.push_str(&troubled_nights(input));
    out.push_str(CLOSE);
    out
}

/// A series' page: its chart, its changes, its points.
pub(super) fn series_page(
    input: &SiteInput,
    series: &SeriesName,
    slots: &[Slot],
    changes: &[&ChangeRow],
) -> String {
    let counted = series_measure(&series.key) == Measure::Instructions;
    let title = format!(
        "{}: {} at {} clients{}",
        input.branch,
        series.profile,
        series.clients,
        if counted {
            ", instructions a transaction"
        } else {
            ""
        }
    );
    let mut out = open(&title);
    let what = match counted {
        false => "median throughput",
        // Lower is better: a step up is a slowdown.
        true => {
            "median instructions a transaction (counted by cachegrind; lower is better, \
                 a step up is a slowdown)"
        }
    };
    let _ = writeln!(
        out,
        "<p><a href=\"index.html\">all series</a></p>\n<h1>{}</h1>\n\
         <p>Each point is a commit's {what} over the median of the reference \
         measured beside it that night; its vertical bar, the lowest to the highest ratio of \
         its pairs of runs. Hover a point for its commit.</p>",
        escape(&title)
    );
    let chart_title = format!("{} ({})", series.key, input.branch);
    out.push_str("<figure id=\"chart\">\n");
    out.push_str(&series_chart(
        (&chart_title, &series.key),
        slots,
        changes,
        input.marks,
        input.commit_url,
    ));
    out.push_str("<figcaption>");
    for status in [
        ChangeStatus::Confirmed,
        ChangeStatus::Candidate,
        ChangeStatus::Dismissed,
    ] {
        let (color, dash) = change_style(status);
        let dash = if dash == "none" { "solid" } else { "dashed" };
        let _ = write!(
            out,
            "<span style=\"border-left:3px {dash} {color};padding-left:.3em;margin-right:1em\">\
             {} change</span>",
            status.as_str()
        );
    }
    out.push_str("<span class=\"failed\">\u{d7} failed night</span></figcaption>\n</figure>\n");
    out.push_str(&changes_table(input, changes, false));
    out.push_str(&points_table(input, slots, &series.key));
    out.push_str(CLOSE);
    out
}

/// What the nights came to, in a line.
fn nights_line(input: &SiteInput) -> String {
    let nights = input.nights;
    let (Some(first), Some(last)) = (nights.first(), nights.last()) else {
        return "No night yet.".into();
    };
    let failed = nights
        .iter()
        .filter(|n| n.status == NightStatus::Failed)
        .count();
    format!(
        "{} night(s) from {} to {}, {failed} failed; the last one {} (tip {}), reference {}.",
        nights.len(),
        date(first.clock),
        date(last.clock),
        last.status.as_str(),
        commit_link(input.commit_url, &last.tip, ""),
        commit_link(input.commit_url, &last.reference, "")
    )
}

/// `2 confirmed, 1 dismissed`, or `none`.
fn change_counts<'a>(changes: impl Iterator<Item = &'a ChangeRow>) -> String {
    let statuses: Vec<ChangeStatus> = changes.map(|c| c.status).collect();
    let said: Vec<String> = [
        ChangeStatus::Reported,
        ChangeStatus::Confirmed,
        ChangeStatus::Candidate,
        ChangeStatus::Dismissed,
    ]
    .into_iter()
    .filter_map(|s| {
        let n = statuses.iter().filter(|x| **x == s).count();
        (n > 0).then(|| format!("<span class=\"{0}\">{n} {0}</span>", s.as_str()))
    })
    .collect();
    if said.is_empty() {
        "none".into()
    } else {
        said.join(", ")
    }
}

/// The changes, newest first by the night they lie at, each with its
/// hunt report when the site holds one.
pub(super) fn changes_table(
    input: &SiteInput,
    changes: &[&ChangeRow],
    with_series: bool,
) -> String {
    let mut out = String::from(
        "<h2>Changes</h2>\n<p class=\"quiet\">Newest first, by the night that first \
         measured the commit after the change.</p>\n",
    );
    if changes.is_empty() {
        out.push_str("<p>No change found.</p>\n");
        return out;
    }
    out.push_str("<table id=\"changes\">\n<tr><th>#</th>");
    if with_series {
        out.push_str("<th>series</th>");
    }
    out.push_str(
        "<th>night</th><th>between</th><th>change</th><th>status</th><th>found</th>\
         <th>culprit</th><th>hunt</th></tr>\n",
    );
    let mut changes: Vec<(Option<&Night>, &ChangeRow)> = changes
        .iter()
        .map(|c| (change_night(input, c), *c))
        .collect();
    changes.sort_by_key(|(night, c)| {
        let landed = night.and_then(|n| n.commits.iter().position(|m| m.id == c.after));
        Reverse((night.map(|n| (n.clock, n.id)), landed, c.id))
    });
    for (night, c) in changes {
        let _ = write!(out, "<tr><td class=\"n\" id=\"change-{0}\">#{0}</td>", c.id);
        if with_series {
            let _ = write!(out, "<td>{}</td>", escape(&c.series));
        }
        let at = night.map_or_else(String::new, |n| date(n.clock));
        let size = measured::size(c);
        let interval = escape(&format!("{}{}", size.interval_text(), size.unit));
        let found = input
            .nights
            .iter()
            .find(|n| n.id == c.first_night)
            .map_or_else(String::new, |n| format!("night of {}", date(n.clock)));
        let _ = writeln!(
            out,
            "<td>{at}</td><td>{} .. {}</td><td class=\"n\"><a class=\"change-page\" \
             href=\"{}\">{:+.1}%</a>{interval}</td>{}<td>{found}</td><td>{}</td><td>{}</td></tr>",
            commit_link(input.commit_url, &c.before, &subject_of(input, &c.before)),
            commit_link(input.commit_url, &c.after, &subject_of(input, &c.after)),
            escape(&change_page(c.id)),
            size.pct,
            status_cell(input, c),
            culprit_cell(input, c),
            hunt_cell(input, c),
        );
    }
    out.push_str("</table>\n");
    out
}

/// The night a change lies at: the first that measured its later commit,
/// or the one that found it when no night lists that commit.
pub(super) fn change_night<'a>(input: &SiteInput<'a>, change: &ChangeRow) -> Option<&'a Night> {
    let nights = input.nights;
    nights
        .iter()
        .filter(|n| n.commits.iter().any(|m| m.id == change.after))
        .min_by_key(|n| (n.clock, n.id))
        .or_else(|| nights.iter().find(|n| n.id == change.first_night))
}

/// A change's status in a table's cell (see [`status_shown`]).
fn status_cell(input: &SiteInput, change: &ChangeRow) -> String {
    let (attributes, text) = status_shown(input, change);
    format!("<td {attributes}>{text}</td>")
}

/// A change's status, with the mark a person gave it and why (`pgbisect
/// watch mark`): its element's attributes (a marked change is no longer
/// shown as news) and its HTML.
pub(super) fn status_shown(input: &SiteInput, change: &ChangeRow) -> (String, String) {
    let status = change.status.as_str();
    let Some(m) = input.mark_of(change) else {
        return (format!("class=\"{status}\""), status.to_string());
    };
    let mark = m.mark.as_str();
    (
        format!(
            "class=\"marked mark-{mark}\" title=\"marked {mark} on {}\"",
            date(m.marked)
        ),
        format!(
            "{status}, marked <b>{mark}</b>: <q class=\"why\">{}</q>",
            escape(&m.why)
        ),
    )
}

/// The hunt report's links (its page, and its text), or why there is
/// none; from a page at the site's root.
pub(super) fn hunt_cell(input: &SiteInput, change: &ChangeRow) -> String {
    if input.hunted.contains(&change.id) {
        let (text, _) = hunt_report(change.id);
        return format!(
            "<a class=\"hunt\" href=\"{}\">hunt report</a> (<a class=\"hunt-text\" \
             href=\"{}\">text</a>)",
            escape(&hunt_page(change.id)),
            escape(&text)
        );
    }
    match change.status {
        ChangeStatus::Confirmed | ChangeStatus::Reported => {
            "<span class=\"not-hunted\">not hunted yet</span>".into()
        }
        ChangeStatus::Candidate => "<span class=\"quiet\">not confirmed yet</span>".into(),
        ChangeStatus::Dismissed => "<span class=\"quiet\">none (dismissed)</span>".into(),
    }
}

/// A change's culprit for a table cell: its short sha (linked with a
/// commit URL), subject and author, escaped; or an empty cell.
pub(super) fn culprit_cell(input: &SiteInput, change: &ChangeRow) -> String {
    let Some(c) = input.culprit_of(change) else {
        return String::new();
    };
    let mut out = format!(
        "<span class=\"culprit\">{}",
        commit_link(input.commit_url, &c.commit, &c.subject)
    );
    if !c.subject.is_empty() {
        let _ = write!(out, " {}", escape(&c.subject));
    }
    if !c.author.is_empty() {
        let _ = write!(
            out,
            " <span class=\"author\">({})</span>",
            escape(&c.author)
        );
    }
    out.push_str("</span>");
    out
}

/// The subject of a commit the nights measured, or nothing.
pub(super) fn subject_of(input: &SiteInput, sha: &str) -> String {
    input
        .nights
        .iter()
        .flat_map(|n| &n.commits)
        .find(|c| c.id == sha)
        .map_or_else(String::new, |c| c.subject.clone())
}

/// A commit's short sha, linked to its page when there is a template; its
/// full id and subject in the tooltip.
pub(super) fn commit_link(template: Option<&str>, sha: &str, subject: &str) -> String {
    let tip = if subject.is_empty() {
        sha.to_string()
    } else {
        format!("{sha} {subject}")
    };
    let code = format!(
        "<code title=\"{}\">{}</code>",
        escape(&tip),
        escape(short_sha(sha))
    );
    match commit_href(template, sha) {
        Some(href) => format!("<a href=\"{}\">{code}</a>", escape(&href)),
        None => code,
    }
}

/// Every point of `series` and every night that failed, newest first.
fn points_table(input: &SiteInput, slots: &[Slot], series: &str) -> String {
    let unit = measured::measure_words(series);
    let mut out = format!(
        "<h2>Points</h2>\n<p class=\"quiet\">Newest night first.</p>\n<table id=\"points\">\n<tr><th>night</th><th>commit</th>\
         <th>subject</th><th>ratio</th><th>spread</th><th>{unit}</th><th>reference {unit}</th>\
         <th>reference</th></tr>\n",
    );
    for slot in slots.iter().rev() {
        match slot {
            Slot::Point(p, spread) => {
                let spread =
                    spread.map_or_else(String::new, |s| format!("{:.4} .. {:.4}", s.low, s.high));
                // The commit its ratio is to: the night's (`--reference`
                // moves it; earlier points keep theirs).
                let reference = input
                    .nights
                    .iter()
                    .find(|n| n.id == p.night)
                    .map_or_else(String::new, |n| {
                        commit_link(input.commit_url, &n.reference, "")
                    });
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.4}</td>\
                     <td class=\"n\">{spread}</td><td class=\"n\">{:.1}</td>\
                     <td class=\"n\">{:.1}</td><td class=\"reference\">{reference}</td></tr>",
                    date(p.clock),
                    commit_link(input.commit_url, &p.commit, ""),
                    escape(&p.subject),
                    p.ratio,
                    p.tps,
                    p.reference_tps
                );
            }
            Slot::Failed(n) => {
                let _ = writeln!(
                    out,
                    "<tr class=\"failed\"><td>{}</td><td>{}</td><td colspan=\"6\">night failed: \
                     {}</td></tr>",
                    date(n.clock),
                    commit_link(input.commit_url, &n.tip, ""),
                    escape(n.reason.as_deref().unwrap_or("no reason stored"))
                );
            }
        }
    }
    out.push_str("</table>\n");
    out
}

/// The nights that failed, stopped at their deadline, or left a commit
/// out (one that did not build), with why, newest first.
fn troubled_nights(input: &SiteInput) -> String {
    let mut troubled: Vec<&Night> = input
        .nights
        .iter()
        .filter(|n| {
            matches!(n.status, NightStatus::Failed | NightStatus::Stopped)
                || (n.status == NightStatus::Done && n.reason.is_some())
        })
        .collect();
    troubled.sort_by_key(|n| Reverse((n.clock, n.id)));
    let mut out = String::from(
        "<h2>Nights that failed or fell short</h2>\n<p class=\"quiet\">Newest first.</p>\n",
    );
    if troubled.is_empty() {
        out.push_str("<p>None.</p>\n");
        return out;
    }
    out.push_str(
        "<table id=\"failed\">\n<tr><th>night</th><th>tip</th><th>status</th><th>why</th></tr>\n",
    );
    for n in troubled {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"{status}\">{status}</td><td>{}</td></tr>",
            date(n.clock),
            commit_link(input.commit_url, &n.tip, &subject_of(input, &n.tip)),
            escape(n.reason.as_deref().unwrap_or("")),
            status = n.status.as_str()
        );
    }
    out.push_str("</table>\n");
    out
}
