//! Folders pgbisect writes under, checked at every level.
//!
//! pgbisect runs as root from cron, in a work dir often under `/var/tmp`.
//! Whoever can rename or replace a folder on the way to where pgbisect
//! writes decides what it writes over and what it runs: an `installs/`
//! swapped by another user has root run that user's `run.sh`, a swapped
//! `hunts/<plan>` has root write reports into a folder of their choice.
//! Checking only the work dir itself is not enough, so every folder from
//! `/` down to the one pgbisect writes into must be:
//!
//! - a real folder, not a symbolic link to one;
//! - owned by the user pgbisect runs as, or by root (or, for the folders
//!   handed to the user that runs PostgreSQL, by that user);
//! - not writable by group or others, unless it has the sticky bit, as
//!   `/tmp` and `/var/tmp` do (where nobody can rename what others made),
//!   and is not the last level: in a sticky folder open to all, anyone
//!   may still add a file of their own where pgbisect would make one (a
//!   `watch.sqlite`, a `-journal` beside it, a hunt's report), so the
//!   folder pgbisect writes into is one nobody else may write at all.
//!
//! The files pgbisect reads back as its own (the watcher's SQLite store
//! and its side files) are checked the same way with [`check_file`].
//!
//! Folders are created one level at a time, each checked before the next
//! is made in it, with mode 0755 (less what the umask takes away).

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Creates the folder `dir` and its missing parents, checking every level
/// from `/` down (see the module's documentation).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    create_dir_for(dir, None)
}

/// As [`create_dir`], with the last level allowed to belong to the user
/// `server` (uid) that runs PostgreSQL: its data, socket and log folders.
pub fn create_dir_for(dir: &Path, server: Option<u32>) -> io::Result<()> {
    let dir = absolute(dir)?;
    let levels: Vec<&Path> = dir.ancestors().collect();
    for level in levels.into_iter().rev() {
        let last = level == dir;
        match std::fs::symlink_metadata(level) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => make(level)?,
            Err(e) => return Err(e),
        }
        check_level(level, if last { server } else { None }, last)?;
    }
    Ok(())
}

/// Checks every level of the existing folder `dir`, from `/` down.
pub fn check_dir(dir: &Path) -> io::Result<()> {
    check_dir_for(dir, None)
}

/// Checks every level of the existing folder an output file (`--json`,
/// `--output`) is written into, as [`check_dir`] does, but a sticky
/// folder open to all (`/tmp`) is fine as the last level too: an output
/// is written, never read back as pgbisect's own, and in a sticky folder
/// nobody else can rename over it once written (it is renamed into place,
/// and a link or a device at its name is refused).
pub fn check_output_dir(dir: &Path) -> io::Result<()> {
    check_levels(dir, None, false)
}

/// As [`check_dir`], with the last level allowed to belong to the user
/// `server` (uid) that runs PostgreSQL: a data directory entered again.
pub fn check_dir_for(dir: &Path, server: Option<u32>) -> io::Result<()> {
    check_levels(dir, server, true)
}

/// Checks every level of `dir` from `/` down, the last one allowed to
/// belong to `server`, and refused when sticky and open to all if
/// `strict_last`.
fn check_levels(dir: &Path, server: Option<u32>, strict_last: bool) -> io::Result<()> {
    let dir = absolute(dir)?;
    for level in dir.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let last = level == dir;
        check_level(level, if last { server } else { None }, last && strict_last)?;
    }
    Ok(())
}

/// Checks the folder `dir`, every level down to it, and everything in it
/// (an install whose programs PostgreSQL's user runs): each folder and
/// file owned by this user or root and writable by nobody else, no folder
/// a link. Symbolic links inside are not followed and need no check of
/// their own: only whoever may write their folder could have made them.
pub fn check_tree(dir: &Path) -> io::Result<()> {
    check_dir(dir)?;
    let mut folders = vec![absolute(dir)?];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                continue;
            }
            let path = entry.path();
            // Inside, a sticky folder open to all is no better: others
            // could add a program or a library there.
            check_owner_and_mode(&path, &std::fs::symlink_metadata(&path)?, None, false)?;
            if kind.is_dir() {
                folders.push(path);
            }
        }
    }
    Ok(())
}

/// `path` made absolute (against the current directory) with its `.` and
/// `..` taken out, so that every level of it is one that is checked.
pub fn absolute(path: &Path) -> io::Result<PathBuf> {
    let joined = std::path::absolute(path)?;
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

fn make(level: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o755).create(level) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// What is wrong with one level of a path pgbisect writes under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsafe {
    #[error(
        "{} is a symbolic link; pgbisect does not follow links on the way to where it writes\n\
         hint: remove the link, or give the real folder (--work-dir \"$(realpath {})\")",
        path.display(),
        path.display()
    )]
    Link { path: PathBuf },
    #[error(
        "{} is not a folder; pgbisect needs a folder there\n\
         hint: move it away, or pass another --work-dir",
        path.display()
    )]
    NotAFolder { path: PathBuf },
    #[error(
        "{} belongs to another user (uid {owner}), not to the user pgbisect runs as \
         (uid {me}) or root: that user could swap what pgbisect writes and runs there\n\
         hint: `chown {me} {}` if it is yours to take, or pass another --work-dir",
        path.display(),
        path.display()
    )]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} is writable by other users (mode {mode:04o}): they could swap what pgbisect \
         writes and runs there\n\
         hint: `chmod go-w {}`, or pass another --work-dir",
        path.display(),
        path.display()
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error(
        "{} is a folder every user may add files to (mode {mode:04o}): another user could \
         plant there what pgbisect reads back as its own\n\
         hint: make a folder of your own in it (`mkdir -m 0755 {}/pgbisect`) and use that, \
         or pass another --work-dir",
        path.display(),
        path.display()
    )]
    Shared { path: PathBuf, mode: u32 },
    #[error(
        "{} is not a plain file; pgbisect reads and writes only plain files of its own there\n\
         hint: move it away",
        path.display()
    )]
    NotAFile { path: PathBuf },
    #[error(
        "{} is a symbolic link; pgbisect opens the files it reads back as its own only as \
         plain files, never through a link\n\
         hint: remove the link, or give the file's own path (--store \
         \"sqlite:$(realpath {})\")",
        path.display(),
        path.display()
    )]
    FileLink { path: PathBuf },
}

impl Unsafe {
    /// What is wrong, without the hint: for a path the user named for an
    /// output, where another `--work-dir` is no answer.
    pub fn problem(&self) -> String {
        let said = self.to_string();
        said.lines().next().unwrap_or_default().to_string()
    }
}

impl From<Unsafe> for io::Error {
    fn from(e: Unsafe) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, e)
    }
}

/// Checks the file `path`, if there is one, as one pgbisect reads back as
/// its own: a plain file, not a link, owned by this user or root, not
/// writable by group or others. Whether there is one.
pub fn check_file(path: &Path) -> io::Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let path = path.to_path_buf();
    if meta.file_type().is_symlink() {
        return Err(Unsafe::FileLink { path }.into());
    }
    if !meta.is_file() {
        return Err(Unsafe::NotAFile { path }.into());
    }
    check_owner_and_mode(&path, &meta, None, false)?;
    Ok(true)
}

/// Checks one level: a real folder, owned by this user, root or
/// `server`, not writable by group or others unless sticky and not the
/// `last` level (the one pgbisect writes into).
fn check_level(level: &Path, server: Option<u32>, last: bool) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(level)?;
    let path = level.to_path_buf();
    if meta.file_type().is_symlink() {
        return Err(Unsafe::Link { path }.into());
    }
    if !meta.is_dir() {
        return Err(Unsafe::NotAFolder { path }.into());
    }
    let mode = meta.permissions().mode() & 0o7777;
    if last && mode & 0o1000 != 0 && mode & 0o022 != 0 {
        return Err(Unsafe::Shared { path, mode }.into());
    }
    check_owner_and_mode(level, &meta, server, true)
}

/// Checks that `path` (with `meta`) belongs to this user, root or
/// `server`, and that group and others cannot write it (a sticky folder
/// aside, when `sticky_ok`).
fn check_owner_and_mode(
    path: &Path,
    meta: &std::fs::Metadata,
    server: Option<u32>,
    sticky_ok: bool,
) -> io::Result<()> {
    let path = path.to_path_buf();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let owner = meta.uid();
    if owner != me && owner != 0 && Some(owner) != server {
        return Err(Unsafe::Foreign { path, owner, me }.into());
    }
    let mode = meta.permissions().mode() & 0o7777;
    let sticky = sticky_ok && meta.is_dir() && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        return Err(Unsafe::Writable { path, mode }.into());
    }
    Ok(())
}

/// The [`Unsafe`] level behind an error of [`create_dir`], if that is
/// what it is.
pub fn unsafe_level(err: &io::Error) -> Option<&Unsafe> {
    err.get_ref()?.downcast_ref::<Unsafe>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn refusal(dir: &Path) -> Unsafe {
        let err = create_dir(dir).unwrap_err();
        unsafe_level(&err)
            .cloned()
            .unwrap_or_else(|| panic!("{err}"))
    }

    #[test]
    fn every_level_made_is_checked_and_closed_to_others() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("w/hunts/plan");
        create_dir(&deep).unwrap();
        for level in ["w", "w/hunts", "w/hunts/plan"] {
            let m = std::fs::metadata(tmp.path().join(level)).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o755, "{level}");
        }
        // Again: everything is there and fine.
        create_dir(&deep).unwrap();
        check_dir(&deep).unwrap();
    }

    #[test]
    fn a_level_open_to_others_is_refused_at_any_depth() {
        let tmp = tempfile::tempdir().unwrap();
        let w = tmp.path().join("w");
        create_dir(&w.join("hunts")).unwrap();
        mode(&w, 0o777);
        let err = refusal(&w.join("hunts/plan"));
        assert_eq!(
            err,
            Unsafe::Writable {
                path: w.clone(),
                mode: 0o777
            }
        );
        assert!(err.to_string().contains("chmod go-w"), "{err}");
        assert!(!w.join("hunts/plan").exists());
        mode(&w, 0o755);
        mode(&w.join("hunts"), 0o775);
        assert!(matches!(
            refusal(&w.join("hunts/plan")),
            Unsafe::Writable { .. }
        ));
        // A sticky folder (as /tmp) is fine on the way: nobody renames
        // what others made.
        mode(&w.join("hunts"), 0o1777);
        create_dir(&w.join("hunts/plan")).unwrap();
        // But not as the folder written into: others may add files there.
        let err = refusal(&w.join("hunts"));
        assert_eq!(
            err,
            Unsafe::Shared {
                path: w.join("hunts"),
                mode: 0o1777
            }
        );
        assert!(err.to_string().contains("mkdir -m 0755"), "{err}");
        assert!(check_dir(&w.join("hunts")).is_err());
        check_dir(&w.join("hunts/plan")).unwrap();
    }

    #[test]
    fn a_file_read_back_is_a_plain_file_of_this_user_closed_to_others() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("watch.sqlite");
        assert!(!check_file(&file).unwrap(), "none yet");
        std::fs::write(&file, "").unwrap();
        mode(&file, 0o644);
        assert!(check_file(&file).unwrap());
        mode(&file, 0o666);
        let err = check_file(&file).unwrap_err();
        assert!(
            matches!(
                unsafe_level(&err),
                Some(Unsafe::Writable { mode: 0o666, .. })
            ),
            "{err}"
        );
        let link = tmp.path().join("link.sqlite");
        symlink(&file, &link).unwrap();
        let err = check_file(&link).unwrap_err();
        assert!(
            matches!(unsafe_level(&err), Some(Unsafe::FileLink { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("--store"), "{err}");
        let err = check_file(tmp.path()).unwrap_err();
        assert!(
            matches!(unsafe_level(&err), Some(Unsafe::NotAFile { .. })),
            "{err}"
        );
    }

    #[test]
    fn links_and_files_on_the_way_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let w = tmp.path().join("w");
        create_dir(&w).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, w.join("installs")).unwrap();
        let err = refusal(&w.join("installs/abc"));
        assert_eq!(
            err,
            Unsafe::Link {
                path: w.join("installs")
            }
        );
        assert!(!elsewhere.join("abc").exists());
        std::fs::write(w.join("file"), "").unwrap();
        assert!(matches!(
            refusal(&w.join("file")),
            Unsafe::NotAFolder { .. }
        ));
        assert!(matches!(
            refusal(&w.join("file/x")),
            Unsafe::NotAFolder { .. }
        ));
    }

    #[test]
    fn a_level_of_another_user_is_refused_unless_handed_to_the_server() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // only root can give a folder away
        }
        let tmp = tempfile::tempdir().unwrap();
        let w = tmp.path().join("w");
        create_dir(&w.join("hunts/plan")).unwrap();
        std::os::unix::fs::chown(w.join("hunts"), Some(65534), None).unwrap();
        let err = refusal(&w.join("hunts/plan"));
        assert!(matches!(err, Unsafe::Foreign { owner: 65534, .. }), "{err}");
        assert!(err.to_string().contains("chown 0"), "{err}");
        // The server's own folder, handed over, is fine as the last level.
        create_dir_for(&w.join("hunts"), Some(65534)).unwrap();
    }

    #[test]
    fn a_tree_is_refused_for_any_folder_or_file_others_may_change() {
        let tmp = tempfile::tempdir().unwrap();
        let install = tmp.path().join("installs/abc");
        create_dir(&install.join("bin")).unwrap();
        let postgres = install.join("bin/postgres");
        std::fs::write(&postgres, "").unwrap();
        mode(&postgres, 0o755);
        symlink("/bin/true", install.join("bin/psql")).unwrap();
        check_tree(&install).unwrap();
        mode(&postgres, 0o775);
        let err = check_tree(&install).unwrap_err();
        assert_eq!(
            unsafe_level(&err),
            Some(&Unsafe::Writable {
                path: postgres.clone(),
                mode: 0o775
            })
        );
        mode(&postgres, 0o755);
        mode(&install.join("bin"), 0o1777);
        assert!(check_tree(&install).is_err(), "a sticky bin/ is still open");
        mode(&install.join("bin"), 0o755);
        mode(&tmp.path().join("installs"), 0o777);
        assert!(check_tree(&install).is_err(), "a level above");
    }

    #[test]
    fn a_data_directory_entered_again_may_be_the_servers_alone() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // only root can give a folder away
        }
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("w/data/current");
        create_dir(&data).unwrap();
        std::os::unix::fs::chown(&data, Some(65534), None).unwrap();
        check_dir_for(&data, Some(65534)).unwrap();
        assert!(check_dir(&data).is_err());
        std::os::unix::fs::chown(data.parent().unwrap(), Some(65534), None).unwrap();
        let err = check_dir_for(&data, Some(65534)).unwrap_err();
        assert!(
            matches!(unsafe_level(&err), Some(Unsafe::Foreign { path, .. }) if path.ends_with("w/data")),
            "{err}"
        );
    }

    #[test]
    fn relative_paths_are_made_absolute_without_dots() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("a/./b/../c")).unwrap(), cwd.join("a/c"));
        assert_eq!(absolute(Path::new("/x/../y")).unwrap(), PathBuf::from("/y"));
    }
}
