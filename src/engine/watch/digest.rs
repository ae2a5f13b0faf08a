//! When the weekly digest is due, and what it is made of.
//!
//! Periods follow the watcher's clock (the replay's, when replaying):
//! the first begins at the start (UTC) of the day of the first night
//! after digests were turned on and lasts `digest_every` days. At the end
//! of the first night whose clock is at or past a period's end, the
//! period is digested (read from the store here, its text composed by
//! [`crate::report::watch::digest`]) and told ([`Tell`]: written to a
//! file and mailed), and the next period begins on that night's day.
//! The store keeps each period ([`DigestRow`]): a period is digested
//! once, and one whose mail was refused is told again at the next start,
//! under the same Message-ID.

use super::config::WatchConfig;
use super::pick::DAY;
use crate::repo::Landed;
use crate::report::watch::digest::{Digest, Facts, compose};
use crate::report::watch::site::links::SiteUrl;
use crate::store::{ChangeRow, ChangeStatus, DigestRow, Night, Store};

/// Who is told of a digest.
pub trait Tell {
    /// Keeps `digest` and mails it: the Message-ID once mailed, `None`
    /// when nobody is to be mailed, an error when it was not told (the
    /// next start tries again).
    fn digest(&mut self, digest: &Digest) -> anyhow::Result<Option<String>>;
}

/// The start (UTC) of the day of `clock`.
fn day_start(clock: i64) -> i64 {
    clock.div_euclid(DAY) * DAY
}

/// At the end of the night at `clock`: a digest whose mail was refused is
/// told again; the open period is digested and told once the clock is at
/// or past its end, and the next one begun. The digests told now.
pub fn after_night(
    store: &mut dyn Store,
    line: &[Landed],
    (cfg, clock): (&WatchConfig, i64),
    tell: &mut dyn Tell,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<Digest>> {
    let mut told = Vec::new();
    if cfg.digest_every == 0 {
        return Ok(told);
    }
    let length = i64::from(cfg.digest_every) * DAY;
    let rows = store.digests(&cfg.branch)?;
    for row in rows
        .iter()
        .filter(|r| r.written.is_some() && r.sent.is_none())
    {
        crate::proc::check_interrupt()?;
        told.extend(tell_one(
            store,
            (line, cfg),
            (row.clone(), clock),
            tell,
            note,
        )?);
    }
    let mut open = match rows.iter().rev().find(|r| r.written.is_none()) {
        Some(r) => r.clone(),
        None => {
            let after = rows.last().map_or(i64::MIN, |r| r.end);
            open_period(&cfg.branch, day_start(clock).max(after), length)
        }
    };
    // The length given now counts, for the period still open too.
    open.end = open.start + length;
    if clock < open.end {
        store.save_digest(&open)?;
        return Ok(told);
    }
    open.written = Some(clock);
    open.changes = settled_since(store, &cfg.branch, &rows)?;
    crate::proc::check_interrupt()?;
    let next = open_period(&cfg.branch, day_start(clock).max(open.end), length);
    told.extend(tell_one(store, (line, cfg), (open, clock), tell, note)?);
    store.save_digest(&next)?;
    Ok(told)
}

fn open_period(branch: &str, start: i64, length: i64) -> DigestRow {
    DigestRow {
        branch: branch.to_string(),
        start,
        end: start + length,
        written: None,
        sent: None,
        message_id: None,
        changes: Vec::new(),
    }
}

/// The ids of the changes settled (no longer candidates) that no digest
/// in `rows` told of.
fn settled_since(
    store: &mut dyn Store,
    branch: &str,
    rows: &[DigestRow],
) -> anyhow::Result<Vec<i64>> {
    let told: Vec<i64> = rows.iter().flat_map(|r| r.changes.clone()).collect();
    Ok(store
        .changes(branch)?
        .into_iter()
        .filter(|c| c.status != ChangeStatus::Candidate && !told.contains(&c.id))
        .map(|c| c.id)
        .collect())
}

/// Composes `row`'s digest from the store, tells it, and keeps how that
/// went; the digest when it was told.
fn tell_one(
    store: &mut dyn Store,
    (line, cfg): (&[Landed], &WatchConfig),
    (mut row, clock): (DigestRow, i64),
    tell: &mut dyn Tell,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Option<Digest>> {
    let digest = of_store(store, line, &row, cfg.site_url.as_ref())?;
    let told = match tell.digest(&digest) {
        Ok(id) => {
            row.sent = Some(clock);
            row.message_id = id;
            note(&format!("digest told: {}", digest.subject));
            Some(digest)
        }
        Err(e) => {
            note(&format!(
                "the digest of {} was not told ({e:#}); the next start tries again",
                digest.file_name.trim_end_matches(".txt")
            ));
            None
        }
    };
    store.save_digest(&row)?;
    Ok(told)
}

/// The digest of `row`'s period, from what the store holds now.
fn of_store(
    store: &mut dyn Store,
    line: &[Landed],
    row: &DigestRow,
    site_url: Option<&SiteUrl>,
) -> anyhow::Result<Digest> {
    let nights: Vec<Night> = store
        .nights(&row.branch)?
        .into_iter()
        .filter(|n| (row.start..row.end).contains(&n.clock))
        .collect();
    let ids: Vec<i64> = nights.iter().map(|n| n.id).collect();
    let runs = store
        .runs(&row.branch)?
        .iter()
        .filter(|r| ids.contains(&r.night))
        .count();
    let all = store.changes(&row.branch)?;
    let waiting = all
        .iter()
        .filter(|c| c.status == ChangeStatus::Candidate)
        .count();
    let changes: Vec<ChangeRow> = all
        .into_iter()
        .filter(|c| row.changes.contains(&c.id))
        .collect();
    let hunts = store.hunts(&row.branch)?;
    let marks = store.marks(&row.branch)?;
    let subjects: Vec<(String, String)> = hunts
        .iter()
        .filter_map(|h| h.culprit.as_ref())
        .filter_map(|sha| line.iter().find(|l| &l.commit.id == sha))
        .map(|l| (l.commit.id.clone(), l.commit.subject.clone()))
        .collect();
    Ok(compose(&Facts {
        branch: &row.branch,
        period: (row.start, row.end),
        nights: &nights,
        runs,
        changes: &changes,
        waiting,
        hunts: &hunts,
        subjects: &subjects,
        marks: &marks,
        site_url,
    }))
}

#[cfg(test)]
#[path = "digest_tests.rs"]
mod tests;
