//! The SQLite store's file: opened only where nobody else may plant one,
//! and held by one watcher at a time.
//!
//! The watcher runs as root from cron and reads back from its store what
//! it does next (the hunts it goes on with, the findings still to mail).
//! Whoever can write the file, or make one where root will open it,
//! steers root: a `watch.sqlite` planted in a work dir open to all, a
//! file of mode 0666, a link to another file, or a hot rollback journal
//! (`watch.sqlite-journal`) that SQLite plays back into root's own file
//! at the next open. So the store's folder is checked at every level as
//! the work dir is ([`crate::folders`]: no sticky folder open to all as
//! the last level), the file and its side files (`-journal`, `-wal`,
//! `-shm`) must be plain files of this user or root that nobody else may
//! write, and the file is opened without following a link.
//!
//! Two watchers on one store (two work dirs, one `--store`) would measure
//! every night twice and mail every finding twice: the watcher holds an
//! `flock(2)` on the store file for its run, as a hunt holds its work
//! dir's lock ([`crate::workspace::Lock`]); the kernel lets go of it
//! when the process ends however it ends. SQLite's own locks are POSIX
//! record locks, which on Linux do not meet `flock` ones.

use super::StoreError;
use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The files SQLite keeps beside the store, by the suffix of their name.
const SIDE_FILES: [&str; 3] = ["-journal", "-wal", "-shm"];

/// The store file at `path` made absolute, once its folder (made if
/// needed), the file and its side files have been checked.
pub fn checked(path: &Path) -> Result<PathBuf, StoreError> {
    let unsafe_at = |source| StoreError::Unsafe {
        path: path.display().to_string(),
        source,
    };
    let path = crate::folders::absolute(path).map_err(unsafe_at)?;
    if let Some(folder) = path.parent() {
        crate::folders::create_dir(folder).map_err(unsafe_at)?;
    }
    crate::folders::check_file(&path).map_err(unsafe_at)?;
    for side in SIDE_FILES {
        let mut name = path.clone().into_os_string();
        name.push(side);
        crate::folders::check_file(Path::new(&name)).map_err(unsafe_at)?;
    }
    Ok(path)
}

/// Opens (making it if needed, never through a link) the checked store
/// file `path` and takes its watcher's lock; another process holding it
/// is [`StoreError::Busy`].
pub fn lock(path: &Path) -> Result<File, StoreError> {
    let shown = path.display().to_string();
    let io = |source| StoreError::Unsafe {
        path: shown.clone(),
        source,
    };
    let file = crate::files::open_own(path).map_err(io)?;
    // SAFETY: flock only acts on the descriptor, which `file` owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(io(err));
        }
        let who = crate::proc::flock_pid(&file)
            .map_or_else(|| "another process".to_string(), |pid| format!("pid {pid}"));
        return Err(StoreError::Busy {
            store: shown,
            who,
            hint: "wait for it to finish; a watcher's work dirs each need a store of their own \
                   (leave --store out to keep it in the work dir)"
                .into(),
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folders::{Unsafe, unsafe_level};
    use std::os::unix::fs::PermissionsExt;

    fn refused(path: &Path) -> Unsafe {
        match checked(path) {
            Err(StoreError::Unsafe { source, .. }) => unsafe_level(&source)
                .cloned()
                .unwrap_or_else(|| panic!("{source}")),
            other => panic!("not refused: {:?}", other.map(|_| ())),
        }
    }

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_store_where_others_may_plant_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("w");
        let store = work.join("watch.sqlite");
        assert_eq!(checked(&store).unwrap(), store, "its folder is made");
        mode(&work, 0o1777);
        assert!(matches!(refused(&store), Unsafe::Shared { .. }));
        mode(&work, 0o755);
        std::fs::write(&store, "").unwrap();
        mode(&store, 0o666);
        assert!(matches!(refused(&store), Unsafe::Writable { .. }));
        mode(&store, 0o644);
        let journal = work.join("watch.sqlite-journal");
        std::os::unix::fs::symlink("/etc/passwd", &journal).unwrap();
        assert!(matches!(refused(&store), Unsafe::FileLink { .. }));
        std::fs::remove_file(&journal).unwrap();
        let link = work.join("link.sqlite");
        std::os::unix::fs::symlink(&store, &link).unwrap();
        assert!(matches!(refused(&link), Unsafe::FileLink { .. }));
        checked(&store).unwrap();
    }

    #[test]
    fn one_process_holds_the_store_until_it_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let store = checked(&tmp.path().join("watch.sqlite")).unwrap();
        let held = lock(&store).unwrap();
        // A second open file description, as another process would have.
        let err = lock(&store).unwrap_err();
        let said = err.to_string();
        assert!(matches!(err, StoreError::Busy { .. }), "{said}");
        assert!(
            said.contains(&format!("pid {}", std::process::id())),
            "{said}"
        );
        assert!(said.contains("hint:"), "{said}");
        drop(held);
        lock(&store).unwrap();
    }

    #[test]
    fn a_link_is_not_opened_to_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "").unwrap();
        let link = tmp.path().join("watch.sqlite");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(lock(&link), Err(StoreError::Unsafe { .. })));
    }
}
