//! The weekly digest: what moved in a period of the watch, up and down,
//! and which nights failed, so that a reader hears from the watcher even
//! in a quiet week and knows it is alive.
//!
//! Pure: the period's facts in ([`Facts`], read from the store by the
//! watch engine, which also decides when a period is due), its subject,
//! body, Message-ID part and file name out ([`compose`]). A digest tells of the changes settled since the digest
//! before it (those still candidates wait for a later one), and of the
//! nights whose clock lies in its period.

use crate::model::{NAMED_SHA, sha_prefix, short_sha};
use crate::report::watch::measured;
use crate::report::watch::site::links::{self, SiteUrl};
use crate::store::NightStatus;
use crate::store::{
    ChangeHunt, ChangeKind, ChangeMark, ChangeRow, ChangeStatus, NOT_ON_THE_LINE, Night,
};
use std::fmt::Write;

/// A digest ready to be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub subject: String,
    pub body: String,
    /// Names the message the same way however often it is sent.
    pub message_id_part: String,
    /// The file it is kept in: the period's last day, `YYYY-MM-DD.txt`.
    pub file_name: String,
    /// The file's text ([`kept`]).
    pub kept: String,
}

/// A digest as its file keeps it: its subject, a blank line, its body,
/// with every control character shown as an escape (a culprit's subject
/// is a commit's, and a terminal that prints the file must not take one
/// as an order).
fn kept(subject: &str, body: &str) -> String {
    let subject = crate::shown::visible_line(subject);
    crate::shown::visible(&format!("Subject: {subject}\n\n{body}")).into_owned()
}

/// What a period's digest tells of.
pub struct Facts<'a> {
    pub branch: &'a str,
    /// The period: its first second and the second after its last.
    pub period: (i64, i64),
    /// The nights whose clock lies in the period, oldest first.
    pub nights: &'a [Night],
    /// The runs those nights made.
    pub runs: usize,
    /// The changes settled since the digest before.
    pub changes: &'a [ChangeRow],
    /// Changes found and not yet measured again side by side.
    pub waiting: usize,
    pub hunts: &'a [ChangeHunt],
    /// The subjects of the culprits named, by full id.
    pub subjects: &'a [(String, String)],
    /// The marks people gave changes (`pgbisect watch mark`): a marked
    /// change is told apart, not among what moved.
    pub marks: &'a [ChangeMark],
    /// Where the site is served (`--site-url`): each change's line is
    /// followed by its page's address, and its hunt report's.
    pub site_url: Option<&'a SiteUrl>,
}

/// The digest of `f`: its subject, body, Message-ID part and file name.
pub fn compose(f: &Facts) -> Digest {
    let (first, last) = (day(f.period.0), day(f.period.1 - 1));
    let confirmed: Vec<&ChangeRow> = f
        .changes
        .iter()
        .filter(|c| matches!(c.status, ChangeStatus::Confirmed | ChangeStatus::Reported))
        .filter(|c| mark_of(c, f).is_none())
        .collect();
    let steps = |down: bool| -> Vec<&ChangeRow> {
        confirmed
            .iter()
            .filter(|c| c.kind == ChangeKind::Step && (c.pct < 0.0) == down)
            .copied()
            .collect()
    };
    let (slower, faster) = (steps(true), steps(false));
    let drifts: Vec<&ChangeRow> = confirmed
        .iter()
        .filter(|c| c.kind == ChangeKind::Drift)
        .copied()
        .collect();
    let failed = nights_where(f.nights, |n| n.status == NightStatus::Failed);
    let broken = nights_where(f.nights, |n| {
        n.status != NightStatus::Failed && n.reason.as_deref().is_some_and(is_broken_build)
    });
    let stopped = nights_where(f.nights, |n| n.status == NightStatus::Stopped);
    let news = news(
        [slower.len(), faster.len(), drifts.len()],
        [failed.len(), broken.len()],
    );
    let subject = format!(
        "pgbisect watch digest: {} {first} to {last}: {news}",
        f.branch
    );
    let mut out = String::new();
    let commits = measured_commits(f.nights);
    let _ = writeln!(
        out,
        "The watch of {} from {first} to {last} (UTC): {} night(s), {commits} commit(s) \
         measured, {} run(s).",
        f.branch,
        f.nights.len(),
        f.runs
    );
    out.push('\n');
    if confirmed.is_empty() {
        out.push_str("Nothing moved: no change was confirmed in any series.\n");
    }
    for (title, list) in [
        ("Slower", &slower),
        ("Faster", &faster),
        ("Drifts", &drifts),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "{title} ({}):", list.len());
            for c in list.iter() {
                let _ = writeln!(out, "  {}", change_line(c, &hunt_words(c, f)));
                if let Some(site) = f.site_url {
                    site_lines(&mut out, site, c, f);
                }
            }
        }
    }
    marked_section(&mut out, f);
    settled_counts(&mut out, f);
    out.push('\n');
    nights_section(&mut out, (&failed, &broken, &stopped));
    Digest {
        kept: kept(&subject, &out),
        subject,
        body: out,
        message_id_part: format!("watch-digest.{}.{first}.{last}", f.branch),
        file_name: format!("{last}.txt"),
    }
}

/// The subject's summary: how many moved each way, how many nights went
/// wrong; or that nothing moved.
fn news([slower, faster, drifts]: [usize; 3], [failed, broken]: [usize; 2]) -> String {
    let mut news = Vec::new();
    for (n, what) in [(slower, "slower"), (faster, "faster"), (drifts, "drifted")] {
        if n > 0 {
            news.push(format!("{n} {what}"));
        }
    }
    for (n, one, many) in [
        (failed, "night failed", "nights failed"),
        (
            broken,
            "night met a broken build",
            "nights met a broken build",
        ),
    ] {
        if n > 0 {
            news.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    }
    if news.is_empty() {
        news.push("nothing moved".into());
    }
    news.join(", ")
}

/// The mark a person gave `c`, if any.
fn mark_of<'a>(c: &ChangeRow, f: &Facts<'a>) -> Option<&'a ChangeMark> {
    f.marks.iter().find(|m| m.change == c.id)
}

/// The changes of the period a person marked, each with the mark and why.
fn marked_section(out: &mut String, f: &Facts) {
    let marked: Vec<(&ChangeRow, &ChangeMark)> = f
        .changes
        .iter()
        .filter_map(|c| Some((c, mark_of(c, f)?)))
        .collect();
    if marked.is_empty() {
        return;
    }
    let _ = writeln!(out, "Marked by hand ({}), not counted above:", marked.len());
    for (c, m) in marked {
        let said = format!("{}: {}", m.mark.as_str(), m.why);
        let _ = writeln!(out, "  {}", change_line(c, &said));
    }
}

/// How many changes were dismissed, and how many wait.
fn settled_counts(out: &mut String, f: &Facts) {
    let dismissed = f
        .changes
        .iter()
        .filter(|c| c.status == ChangeStatus::Dismissed)
        .count();
    if dismissed > 0 {
        let _ = writeln!(
            out,
            "Dismissed: {dismissed} change(s) the series showed did not hold when measured \
             again side by side."
        );
    }
    if f.waiting > 0 {
        let _ = writeln!(
            out,
            "Waiting: {} change(s) found and not yet measured again; a later night settles them.",
            f.waiting
        );
    }
}

/// The failed nights, the broken builds and the nights stopped at their
/// deadline, each with its reason's first line; or that there were none.
fn nights_section(out: &mut String, (failed, broken, stopped): (&[&Night], &[&Night], &[&Night])) {
    if failed.is_empty() && broken.is_empty() && stopped.is_empty() {
        out.push_str("No night failed, no build broke, no night stopped at its deadline.\n");
        return;
    }
    for (title, list) in [
        ("Nights that failed", failed),
        ("Builds broken", broken),
        ("Nights stopped at their deadline", stopped),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title} ({}):", list.len());
        for n in list {
            let reason = n.reason.as_deref().unwrap_or("no reason kept");
            let first = reason.lines().next().unwrap_or("").trim();
            let said = match error_line(reason) {
                e if e == first => first.to_string(),
                e => format!("{first} {e}"),
            };
            let _ = writeln!(
                out,
                "  {} (tip {}): {said}",
                day(n.clock),
                short_sha(&n.tip)
            );
        }
    }
}

/// A confirmed change: its number, series, size with interval, commits,
/// and `said` of it (what its hunt came to, or its mark).
fn change_line(c: &ChangeRow, said: &str) -> String {
    let size = measured::size(c);
    let interval = match size.interval {
        Some((lo, hi)) => format!(" (interval {lo:+.1}% to {hi:+.1}%)"),
        None => String::new(),
    };
    format!(
        "#{} {} {}{interval} between {}..{}: {said}",
        c.id,
        c.series,
        size.short(),
        short_sha(&c.before),
        short_sha(&c.after),
    )
}

/// The addresses of `c`'s page on the site and, once its hunt wrote one,
/// of its hunt report's page.
fn site_lines(out: &mut String, site: &SiteUrl, c: &ChangeRow, f: &Facts) {
    let reported = f
        .hunts
        .iter()
        .any(|h| h.change == c.id && h.report.is_some());
    let (page, hunt) = links::of_change(site, c.id, reported);
    let _ = writeln!(out, "    its page: {page}");
    if let Some(hunt) = hunt {
        let _ = writeln!(out, "    its hunt's report: {hunt}");
    }
}

/// What became of a change's hunt.
fn hunt_words(c: &ChangeRow, f: &Facts) -> String {
    if c.kind == ChangeKind::Drift {
        return "not hunted (a drift is spread over many commits)".into();
    }
    if c.pct >= 0.0 {
        return format!("not hunted ({})", measured::gain_words(&c.series));
    }
    let Some(h) = f.hunts.iter().find(|h| h.change == c.id) else {
        return "not hunted yet".into();
    };
    match (h.outcome.as_deref(), &h.culprit) {
        (None, _) => "hunt under way (the next start goes on)".into(),
        (Some("culprit-found"), Some(sha)) => {
            let subject = f
                .subjects
                .iter()
                .find(|(id, _)| id == sha)
                .map_or("", |(_, s)| s.as_str());
            format!("culprit {} {subject}", sha_prefix(sha, NAMED_SHA))
                .trim_end()
                .to_string()
        }
        (Some("inconclusive"), _) => "hunt inconclusive".into(),
        (Some("no-regression"), _) => "hunt: the drop did not reproduce".into(),
        (Some(NOT_ON_THE_LINE), _) => "not hunted (its commits left the branch)".into(),
        (Some(other), _) => format!("hunt: {other}"),
    }
}

fn nights_where(nights: &[Night], keep: impl Fn(&Night) -> bool) -> Vec<&Night> {
    nights.iter().filter(|n| keep(n)).collect()
}

/// Whether a night's reason names commits that do not build.
fn is_broken_build(reason: &str) -> bool {
    reason.starts_with("does not build")
}

/// The distinct commits the nights measured.
fn measured_commits(nights: &[Night]) -> usize {
    let mut ids: Vec<&str> = nights
        .iter()
        .flat_map(|n| n.commits.iter().map(|c| c.id.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

/// The line of a build's failure that says what went wrong: the first
/// with `error` in it (a build's reason begins with where its log is,
/// and quotes the compiler's or configure's errors after), else the
/// first that is not empty.
pub fn error_line(reason: &str) -> &str {
    let mut lines = reason.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next().unwrap_or("");
    lines
        .find(|l| l.to_ascii_lowercase().contains("error"))
        .unwrap_or(first)
}

/// `YYYY-MM-DD` of a clock.
fn day(clock: i64) -> String {
    crate::time::date_from_unix(clock)
}

#[cfg(test)]
#[path = "digest_tests.rs"]
mod tests;
