//! What the watcher still owes its readers once a start is over: the
//! findings and digests the store holds as not yet told. A message the
//! relay (or sendmail, or `--notify-cmd`) refused stays owed, the next
//! start sends it, and until then every start says so and ends in error,
//! so that a reader of cron's log does not take silence for news that
//! nothing moved.

use crate::model::short_sha;
use crate::store::{ChangeRow, Store};

/// A message owed: what it is, and why its last try failed when this
/// start tried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    pub what: String,
    pub why: Option<String>,
}

/// How a change's finding is named among what is owed.
pub fn finding(change: &ChangeRow) -> String {
    format!(
        "the finding of {} ({}..{})",
        change.series,
        short_sha(&change.before),
        short_sha(&change.after)
    )
}

/// How the digest of the period ending on `last_day` (`YYYY-MM-DD`) is
/// named among what is owed.
pub fn digest(last_day: &str) -> String {
    format!("the digest of the period to {last_day}")
}

/// What the store holds as owed for `branch`: every finding of an ended
/// hunt not yet told (when `telling`, somebody is to be told of findings)
/// and every digest written and not yet told; with the last reason in
/// `tried` (what, why) each failed when this start tried it.
pub fn owed(
    store: &mut dyn Store,
    branch: &str,
    telling: bool,
    tried: &[(String, String)],
) -> anyhow::Result<Vec<Owed>> {
    let mut names = Vec::new();
    if telling {
        let changes = store.changes(branch)?;
        for hunt in store.hunts(branch)? {
            let change = changes.iter().find(|c| c.id == hunt.change);
            if let (Some(change), Some(_), None) = (change, &hunt.report, hunt.mailed) {
                names.push(finding(change));
            }
        }
    }
    for row in store.digests(branch)? {
        if row.written.is_some() && row.sent.is_none() {
            names.push(digest(&crate::time::date_from_unix(row.end - 1)));
        }
    }
    Ok(names
        .into_iter()
        .map(|what| {
            let why = tried.iter().rev().find(|(w, _)| *w == what);
            Owed {
                why: why.map(|(_, why)| why.clone()),
                what,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::{ChangeHunt, ChangeKind, ChangeStatus, DigestRow, NewNight};

    #[test]
    fn an_untold_finding_and_digest_are_owed_and_told_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
        let night = store
            .begin_night(&NewNight {
                clock: 86_399,
                branch: "master".into(),
                tip: "b".repeat(40),
                reference: "a".repeat(40),
                commits: vec![],
            })
            .unwrap();
        let mut ids = Vec::new();
        for (k, series) in ["p/c1", "p/c8", "p/c64"].into_iter().enumerate() {
            let change = ChangeRow {
                id: 0,
                series: series.into(),
                before: format!("{k}").repeat(40),
                after: "f".repeat(40),
                pct: -10.0,
                low_pct: None,
                high_pct: None,
                status: ChangeStatus::Confirmed,
                first_night: night.id,
                p_value: 0.01,
                kind: ChangeKind::Step,
            };
            ids.push(store.add_change(&change).unwrap());
        }
        // c1 ended and told; c8 ended, mailed, its command still owed;
        // c64 still hunting.
        let ended = |id: i64| ChangeHunt {
            report: Some(format!("change-{id}/report.txt")),
            outcome: Some("culprit-found".into()),
            ..ChangeHunt::begun(id, &format!("change-{id}"))
        };
        let told = ChangeHunt {
            mailed: Some(5),
            message_id: Some("<x@example.org>".into()),
            ..ended(ids[0])
        };
        let half = ChangeHunt {
            message_id: Some("<y@example.org>".into()),
            ..ended(ids[1])
        };
        for hunt in [told, half, ChangeHunt::begun(ids[2], "change-3")] {
            store.save_hunt(&hunt).unwrap();
        }
        let period = |start: i64, sent: Option<i64>| DigestRow {
            branch: "master".into(),
            start,
            end: start + 7 * 86_400,
            written: Some(start + 7 * 86_400),
            sent,
            message_id: None,
            changes: vec![],
        };
        store.save_digest(&period(0, Some(9))).unwrap();
        store.save_digest(&period(7 * 86_400, None)).unwrap();
        let tried = [(
            "the finding of p/c8 (11111111..ffffffff)".to_string(),
            "554 no".to_string(),
        )];
        let owed = owed(&mut store, "master", true, &tried).unwrap();
        assert_eq!(
            owed,
            [
                Owed {
                    what: "the finding of p/c8 (11111111..ffffffff)".into(),
                    why: Some("554 no".into()),
                },
                Owed {
                    what: "the digest of the period to 1970-01-14".into(),
                    why: None,
                },
            ]
        );
        // Nobody to tell of findings: only the digest is owed.
        assert_eq!(owed_without(&mut store).len(), 1);
    }

    fn owed_without(store: &mut SqliteStore) -> Vec<Owed> {
        owed(store, "master", false, &[]).unwrap()
    }
}
