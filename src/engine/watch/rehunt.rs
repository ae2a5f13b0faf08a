//! A change hunted again by hand (`pgbisect watch hunt CHANGE`).
//!
//! The watcher hunts a confirmed drop once. A person may want it hunted
//! again: the first hunt was inconclusive on a noisy night, the machine
//! was busy, or its culprit is in doubt. The hunt is run as the watcher
//! runs it ([`super::hunt::hunt_one`]: the series' lab and client count,
//! the watcher's decision and budget), in the change's folder
//! (`change-<id>`) as before; the folder of the hunt before it is first
//! set aside beside it, as `change-<id>.hunt-<N>` (N counting the hunts
//! from 1), so its report is kept, and the new hunt starts with a journal
//! of its own. The store's record of the hunt is begun again, its mail
//! kept as it was: a finding told once is not told again, and one never
//! told is told by the next start of the watcher.

use super::config::{ProfileLab, WatchConfig};
use super::hunt::{Ended, Hunted, Hunting, folder_name, folder_of, hunt_one};
use crate::repo::Landed;
use crate::store::{ChangeHunt, ChangeKind, ChangeRow, ChangeStatus, Store};
use crate::workspace::HuntDir;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// What hunting a change again did.
#[derive(Debug, Clone, PartialEq)]
pub struct Rehunted {
    pub hunted: Hunted,
    /// Where the hunt before it was set aside, if there was one.
    pub earlier: Option<PathBuf>,
    /// Why the hunt stopped before its end (its deadline): the next start
    /// of the watcher goes on with it.
    pub stopped: Option<String>,
}

/// Why `change` is not one to hunt, if it is not: only a confirmed drop
/// between two commits is (a hunt looks for the commit that made a drop).
pub fn not_huntable(change: &ChangeRow) -> Option<&'static str> {
    match (change.status, change.kind) {
        (ChangeStatus::Candidate, _) => Some(
            "it is not confirmed yet: the next night measures it again side by side, and hunts \
             it once confirmed",
        ),
        (ChangeStatus::Dismissed, _) => Some(
            "it was dismissed: measured again side by side, the move did not hold; there is \
             nothing to hunt",
        ),
        (_, ChangeKind::Drift) => Some(
            "it is a drift, a loss spread over many commits, none of which need be over the \
             hunt's threshold",
        ),
        _ if change.pct >= 0.0 => Some(
            "it is a gain (a rise of tps, or fewer instructions a transaction), and a hunt \
             looks for a slowdown",
        ),
        _ => None,
    }
}

/// Hunts `change` again (see the module's doc) with `labs`, whose one
/// lab measures its series, over `line`.
pub fn hunt_again(
    store: &mut dyn Store,
    labs: &mut [ProfileLab],
    (line, cfg): (&[Landed], &WatchConfig),
    hunting: &mut Hunting,
    change: &ChangeRow,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Rehunted> {
    let (profile, series) = super::detect::lab_of(labs, &change.series)
        .with_context(|| format!("no watched profile measures {}", change.series))?;
    let known = store
        .hunts(&cfg.branch)?
        .into_iter()
        .find(|h| h.change == change.id);
    let path = folder_of(&hunting.dir, change.id);
    let earlier = set_aside(&path)?;
    if let Some(to) = &earlier {
        note(&format!("the hunt before it is kept in {}", to.display()));
    }
    let begun = ChangeHunt::begun(change.id, &folder_name(change.id));
    let mut hunt = ChangeHunt {
        mailed: known.as_ref().and_then(|h| h.mailed),
        message_id: known.and_then(|h| h.message_id),
        ..begun
    };
    store.save_hunt(&hunt)?;
    let folder = HuntDir::at(&path);
    let lab = &mut labs[profile];
    let asked = (lab, &series, &folder);
    let ended = hunt_one(asked, change, line, cfg, hunting.follow, note)?;
    ended.record(&mut hunt);
    store.save_hunt(&hunt)?;
    let stopped = match ended {
        Ended::Stopped(reason) => Some(reason),
        _ => None,
    };
    Ok(Rehunted {
        hunted: Hunted {
            change: change.clone(),
            hunt,
            folder: path,
        },
        earlier,
        stopped,
    })
}

/// Moves the folder of a hunt (`change-<id>`) aside to the first free
/// `change-<id>.hunt-<N>` beside it, once its levels are checked (a
/// link planted in its place is refused, not followed); where it went,
/// or `None` when there was no folder.
fn set_aside(folder: &Path) -> anyhow::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(folder).is_err() {
        return Ok(None);
    }
    crate::folders::check_dir(folder)
        .map_err(|e| crate::workspace::refusal(e, "the hunt's folder"))?;
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = (1..)
        .map(|n| folder.with_file_name(format!("{name}.hunt-{n}")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .context("no free name beside the hunt's folder")?;
    std::fs::rename(folder, &aside).with_context(|| {
        format!(
            "cannot move the hunt's folder {} aside to {}",
            folder.display(),
            aside.display()
        )
    })?;
    Ok(Some(aside))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(status: ChangeStatus, kind: ChangeKind, pct: f64) -> ChangeRow {
        ChangeRow {
            id: 3,
            series: "default/c8".into(),
            before: "a".into(),
            after: "b".into(),
            pct,
            low_pct: None,
            high_pct: None,
            status,
            first_night: 1,
            p_value: 0.005,
            kind,
        }
    }

    #[test]
    fn only_a_confirmed_drop_between_two_commits_is_hunted_again() {
        use ChangeStatus::*;
        let step = ChangeKind::Step;
        assert_eq!(not_huntable(&change(Confirmed, step, -8.0)), None);
        assert_eq!(not_huntable(&change(Reported, step, -8.0)), None);
        for (status, kind, pct, why) in [
            (Candidate, step, -8.0, "not confirmed yet"),
            (Dismissed, step, -8.0, "dismissed"),
            (Confirmed, ChangeKind::Drift, -8.0, "drift"),
            (Confirmed, step, 6.0, "rise"),
        ] {
            let said = not_huntable(&change(status, kind, pct)).unwrap();
            assert!(said.contains(why), "{status:?} {kind:?} {pct}: {said}");
        }
    }

    #[test]
    fn each_earlier_hunt_is_set_aside_under_a_number_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let folder = folder_of(dir.path(), 3);
        assert_eq!(set_aside(&folder).unwrap(), None);
        for n in 1..=2 {
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(folder.join("report.txt"), format!("hunt {n}")).unwrap();
            let aside = set_aside(&folder).unwrap().unwrap();
            assert_eq!(aside, dir.path().join(format!("change-3.hunt-{n}")));
            let kept = std::fs::read_to_string(aside.join("report.txt")).unwrap();
            assert_eq!(kept, format!("hunt {n}"));
            assert!(!folder.exists());
        }
        // A link in the folder's place is refused, and stays.
        let target = dir.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, &folder).unwrap();
        assert!(set_aside(&folder).is_err());
        assert!(std::fs::symlink_metadata(&folder).unwrap().is_symlink());
    }
}
