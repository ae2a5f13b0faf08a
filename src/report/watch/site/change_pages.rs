//! A page per change, and a page per hunt report: what a mail or a feed
//! entry links, so that a reader lands on the change itself (its series,
//! its commits, its size, the commit its hunt named) and, one click on,
//! on the hunt's whole report, rather than on the index.
//!
//! A hunt report's page shows the text report as it was written, escaped,
//! in the site's layout, with the `.txt` beside it linked for whoever
//! wants the file. Every text that comes from git or a report is escaped.

use super::html::{
    CLOSE, change_night, commit_link, culprit_cell, hunt_cell, open, status_shown, subject_of,
};
use super::links::change_page as change_page_path;
use super::{Page, SeriesName, SiteInput, date, hunt_report, links};
use crate::model::short_sha;
use crate::report::chart::escape;
use crate::report::watch::measured;
use crate::store::{ChangeRow, ChangeStatus};
use std::fmt::Write;

/// The page of `change`, in `series` (its page, when the site has one).
pub(super) fn change_page(
    input: &SiteInput,
    change: &ChangeRow,
    series: Option<&SeriesName>,
) -> String {
    let size = measured::size(change);
    let title = format!(
        "{} {} between {} and {}",
        change.series,
        size.short(),
        short_sha(&change.before),
        short_sha(&change.after)
    );
    let mut out = open(&title);
    let series_link = series.map_or_else(
        || escape(&change.series),
        |s| format!("<a href=\"{}\">{}</a>", escape(&s.page), escape(&s.key)),
    );
    let _ = writeln!(
        out,
        "<p><a href=\"index.html\">all series</a></p>\n<h1>{}</h1>\n<table id=\"change\">",
        escape(&title)
    );
    let interval = match size.interval {
        Some(_) => " measured again side by side",
        None => "",
    };
    let night = change_night(input, change).map_or_else(String::new, |n| date(n.clock));
    let found = input
        .nights
        .iter()
        .find(|n| n.id == change.first_night)
        .map_or_else(String::new, |n| format!("night of {}", date(n.clock)));
    let culprit = match (culprit_cell(input, change), change.status) {
        (cell, _) if !cell.is_empty() => cell,
        (_, ChangeStatus::Confirmed | ChangeStatus::Reported) => "none named".into(),
        _ => "none (not hunted)".into(),
    };
    let rows = [
        ("series", series_link),
        ("kind", escape(change.kind.as_str())),
        (
            "between",
            format!(
                "{} .. {}",
                commit_link(
                    input.commit_url,
                    &change.before,
                    &subject_of(input, &change.before)
                ),
                commit_link(
                    input.commit_url,
                    &change.after,
                    &subject_of(input, &change.after)
                )
            ),
        ),
        ("measure", escape(measured::measure_words(&change.series))),
        ("change", escape(&format!("{}{interval}", size.bracketed()))),
        ("status", {
            let (attributes, text) = status_shown(input, change);
            format!("<span {attributes}>{text}</span>")
        }),
        ("night", night),
        ("found", found),
        ("change-point p", format!("{:.3}", change.p_value)),
        ("culprit", culprit),
        ("hunt", hunt_cell(input, change)),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{value}</td></tr>");
    }
    out.push_str("</table>\n");
    out.push_str(CLOSE);
    out
}

/// The page of the hunt report of change `id`, its text `report` shown
/// as it was written (escaped), linked to its copy beside it and to the
/// change's page; `change` is the store's row, if it still holds one.
pub fn hunt_report_page(input: &SiteInput, id: i64, report: &str) -> Page {
    let change = input.changes.iter().find(|c| c.id == id);
    let title = match change {
        Some(c) => format!(
            "The hunt of {} {} between {} and {}",
            c.series,
            measured::size(c).short(),
            short_sha(&c.before),
            short_sha(&c.after)
        ),
        None => format!("The hunt of change {id}"),
    };
    let mut out = open(&title);
    let (text, _) = hunt_report(id);
    let file = text.rsplit('/').next().unwrap_or(&text);
    let _ = writeln!(
        out,
        "<p><a href=\"../index.html\">all series</a> \u{b7} <a href=\"../{}\">the change</a> \
         \u{b7} <a class=\"report-text\" href=\"{}\">the report as text</a></p>\n<h1>{}</h1>",
        escape(&change_page_path(id)),
        escape(file),
        escape(&title)
    );
    if let Some(c) = change.filter(|c| input.culprit_of(c).is_some()) {
        let _ = writeln!(out, "<p>Culprit: {}</p>", culprit_cell(input, c));
    }
    let _ = writeln!(
        out,
        "<pre id=\"report\">{}</pre>",
        escape(&crate::shown::visible(report))
    );
    out.push_str(CLOSE);
    Page {
        path: links::hunt_page(id),
        text: out,
    }
}
