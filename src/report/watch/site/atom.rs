//! The confirmed changes as an Atom feed (RFC 4287), `changes.atom` at
//! the site's root, for whoever would rather follow the watcher in a feed
//! reader than in a mailbox: an entry per confirmed change, titled with
//! its series, its size and the commit its hunt named, linking the
//! change's page.
//!
//! An entry's id is made of the branch, the series and the two commits,
//! not of the database's row or the site's address, so that a change keeps
//! its id when the site moves or the feed is written from a copy of the
//! store. Links are absolute with `--site-url`, and relative to the feed
//! (which a reader resolves against the feed's own address) without.
//! Every text is escaped as XML; characters XML 1.0 does not allow (a
//! commit subject's terminal escapes) are written out.

use super::links::{FEED, change_page};
use super::{SiteInput, date};
use crate::model::short_sha;
use crate::report::chart::escape;
use crate::report::watch::measured;
use crate::store::{ChangeRow, ChangeStatus, Mark, Night};
use std::fmt::Write;

/// The feed of `input`'s confirmed changes, newest first; a change
/// marked not a real one (`watch mark N wrong`) is left out.
pub(super) fn feed(input: &SiteInput) -> String {
    let mut confirmed: Vec<(&ChangeRow, i64)> = input
        .changes
        .iter()
        .filter(|c| matches!(c.status, ChangeStatus::Confirmed | ChangeStatus::Reported))
        .filter(|c| input.mark_of(c).is_none_or(|m| m.mark != Mark::Wrong))
        .map(|c| (c, found_clock(input.nights, c)))
        .collect();
    confirmed.sort_by_key(|(c, clock)| std::cmp::Reverse((*clock, c.id)));
    let updated = confirmed
        .first()
        .map(|(_, clock)| *clock)
        .or_else(|| input.nights.iter().map(|n| n.clock).max())
        .unwrap_or(0);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    let _ = writeln!(
        out,
        "  <title>{}</title>\n  <id>{}</id>\n  <updated>{}</updated>\n  \
         <author><name>pgbisect watch</name></author>\n  <link rel=\"alternate\" \
         type=\"text/html\" href=\"{}\"/>",
        text(&format!(
            "pgbisect watch: {}: confirmed changes",
            input.branch
        )),
        text(&urn(&[input.branch])),
        crate::time::rfc3339_from_unix(updated),
        text(&href(input, "index.html")),
    );
    if let Some(site) = input.site_url {
        let _ = writeln!(
            out,
            "  <link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>",
            text(&site.page(FEED))
        );
    }
    for (change, clock) in confirmed {
        out.push_str(&entry(input, change, clock));
    }
    out.push_str("</feed>\n");
    out
}

/// One confirmed change's entry.
fn entry(input: &SiteInput, c: &ChangeRow, clock: i64) -> String {
    let culprit = match input.culprit_of(c) {
        Some(named) => named.words(),
        None if c.pct >= 0.0 => format!("{}, not hunted", measured::gain_words(&c.series)),
        None => "culprit not named yet".into(),
    };
    let marked = input.mark_of(c).map_or_else(String::new, |m| {
        format!(" (marked {}: {})", m.mark.as_str(), m.why)
    });
    let size = measured::size(c);
    let title = format!("{} {}: {culprit}{marked}", c.series, size.short());
    let summary = format!(
        "{} {} between {} and {} ({}, night of {}), measured again side by side: {culprit}.",
        c.series,
        size.bracketed(),
        short_sha(&c.before),
        short_sha(&c.after),
        c.kind.as_str(),
        date(clock)
    );
    format!(
        "  <entry>\n    <id>{}</id>\n    <title>{}</title>\n    <updated>{}</updated>\n    \
         <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n    \
         <summary>{}</summary>\n  </entry>\n",
        text(&urn(&[input.branch, &c.series, &c.before, &c.after])),
        text(&title),
        crate::time::rfc3339_from_unix(clock),
        text(&href(input, &change_page(c.id))),
        text(&summary)
    )
}

/// When a change was found: its night's clock (the store's nights hold
/// it), else the last night's.
fn found_clock(nights: &[Night], change: &ChangeRow) -> i64 {
    nights
        .iter()
        .find(|n| n.id == change.first_night)
        .or_else(|| nights.iter().max_by_key(|n| n.clock))
        .map_or(0, |n| n.clock)
}

/// The address of `path` inside the site: absolute with `--site-url`.
fn href(input: &SiteInput, path: &str) -> String {
    input
        .site_url
        .map_or_else(|| path.to_string(), |site| site.page(path))
}

/// `urn:pgbisect:watch:` and `parts`, each percent-encoded but for
/// letters, digits, `-`, `.`, `_` and `~`.
fn urn(parts: &[&str]) -> String {
    let mut out = String::from("urn:pgbisect:watch");
    for part in parts {
        out.push(':');
        for byte in part.bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                out.push(char::from(byte));
            } else {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

/// `raw` as XML text: control characters written out as escapes (XML 1.0
/// has no place for them), then escaped.
fn text(raw: &str) -> String {
    let shown = crate::shown::visible_line(raw);
    escape(&shown.replace(['\u{fffe}', '\u{ffff}'], "\u{fffd}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_a_urn_of_its_parts_percent_encoded() {
        assert_eq!(
            urn(&["master", "select-only/c8", "ab12"]),
            "urn:pgbisect:watch:master:select-only%2Fc8:ab12"
        );
        assert_eq!(urn(&["a b<é>"]), "urn:pgbisect:watch:a%20b%3C%C3%A9%3E");
    }

    #[test]
    fn text_keeps_no_character_xml_refuses() {
        let said = text("x\u{1b}[2J <b> & \u{7}\u{ffff}\r\n");
        assert!(!said.contains(|c: char| c.is_control()), "{said:?}");
        assert!(said.contains("&lt;b&gt; &amp;"), "{said}");
        assert!(!said.contains('\u{ffff}'), "{said}");
    }
}
