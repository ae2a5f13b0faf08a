//! Files a profile names (setup SQL, pgbench scripts), read where the
//! profile keeps them and nowhere else.
//!
//! pgbisect runs as root from cron, and a profile may sit in a folder
//! another user can write. The files it names are read as root and their
//! text ends up in a template, psql's errors and the journal, so a name
//! must not reach past the profile: `setup = "../../../etc/shadow"`, an
//! absolute path elsewhere, or a link planted in the profile's folder
//! would have root read (and show) what that user cannot. The rule is the
//! one a PostgreSQL engineer already follows, SQL kept beside the profile:
//!
//! - a name is relative to the profile's folder, with no `..` in it; an
//!   absolute path is taken only when it lies in that folder;
//! - no level below the profile's folder, nor the file, is a symbolic
//!   link, and the file is a plain file with no other name (a hard link);
//! - the file is opened without following a link at its last level, and
//!   the levels are checked again after it is open, its identity compared
//!   with what is at its path: a level swapped for a link while it was
//!   opened is found out.
//!
//! The text is read once, here: the hunt's identity, the data template's
//! name and what psql runs all come from that one reading.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// What every refusal ends with.
const HINT: &str = "hint: keep the file in the profile's folder (or a folder under it), not as \
                    a link, and name it relative to the profile, e.g. `setup = \"setup.sql\"`";

/// A file a profile names, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Its absolute path, in the profile's folder.
    pub path: PathBuf,
    pub text: Vec<u8>,
}

/// Reads the file the profile key `key` names as `named`, inside the
/// profile's folder `dir`; why it is refused, with a hint, when it is not
/// there as the module's rule says.
pub fn read_in(dir: &Path, key: &str, named: &Path) -> Result<Named, String> {
    let refuse = |why: String| format!("`{key} = \"{}\"` {why}\n{HINT}", named.display());
    if named.components().any(|c| c == Component::ParentDir) {
        return Err(refuse(
            "goes up with `..`: files a profile names are read from its folder only".into(),
        ));
    }
    let dir =
        crate::folders::absolute(dir).map_err(|e| refuse(format!("cannot be resolved: {e}")))?;
    let path = crate::folders::absolute(&dir.join(named))
        .map_err(|e| refuse(format!("cannot be resolved: {e}")))?;
    let below = match path.strip_prefix(&dir) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.to_path_buf(),
        _ => {
            return Err(refuse(format!(
                "is outside the profile's folder {}: files a profile names are read from \
                 its folder only",
                dir.display()
            )));
        }
    };
    let levels = || check_levels(&dir, &below).map_err(&refuse);
    levels()?;
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("is a symbolic link; pgbisect does not follow it".into()),
            _ => refuse(format!("cannot be read: {e}")),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| refuse(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("is not a plain file".into()));
    }
    if meta.nlink() != 1 {
        return Err(refuse(
            "has other names (a hard link); pgbisect reads only a file of one name".into(),
        ));
    }
    levels()?;
    let now = std::fs::symlink_metadata(&path).ok();
    if now.is_none_or(|m| (m.dev(), m.ino()) != (meta.dev(), meta.ino())) {
        return Err(refuse("changed while it was opened".into()));
    }
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| refuse(format!("cannot be read: {e}")))?;
    Ok(Named { path, text })
}

/// Checks that every folder between `dir` and the file `below` it is a
/// real folder, not a link to one.
fn check_levels(dir: &Path, below: &Path) -> Result<(), String> {
    let mut level = dir.to_path_buf();
    let parents: Vec<Component> = below.components().collect();
    for part in &parents[..parents.len().saturating_sub(1)] {
        level.push(part);
        let meta = std::fs::symlink_metadata(&level)
            .map_err(|e| format!("cannot be read: {}: {e}", level.display()))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "goes through the symbolic link {}; pgbisect does not follow it",
                level.display()
            ));
        }
        if !meta.is_dir() {
            return Err(format!("goes through {}, not a folder", level.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn folder() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("profile");
        std::fs::create_dir_all(dir.join("sql")).unwrap();
        std::fs::write(dir.join("setup.sql"), "CREATE TABLE t ();").unwrap();
        std::fs::write(dir.join("sql/a.sql"), "SELECT 1;").unwrap();
        std::fs::write(tmp.path().join("secret"), "root:x:0:").unwrap();
        (tmp, dir)
    }

    #[test]
    fn files_beside_the_profile_or_under_it_are_read() {
        let (_tmp, dir) = folder();
        let named = read_in(&dir, "setup", Path::new("setup.sql")).unwrap();
        assert_eq!(named.path, dir.join("setup.sql"));
        assert_eq!(named.text, b"CREATE TABLE t ();");
        let named = read_in(&dir, "scripts", Path::new("./sql/a.sql")).unwrap();
        assert_eq!(named.text, b"SELECT 1;");
        let inside = dir.join("sql/a.sql");
        assert_eq!(read_in(&dir, "script", &inside).unwrap().path, inside);
    }

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        let (tmp, dir) = folder();
        let up = read_in(&dir, "setup", Path::new("../secret")).unwrap_err();
        assert!(
            up.contains("goes up with `..`") && up.contains("hint:"),
            "{up}"
        );
        let round = read_in(&dir, "setup", Path::new("sql/../setup.sql")).unwrap_err();
        assert!(round.contains("`..`"), "{round}");
        let abs = read_in(&dir, "setup", &tmp.path().join("secret")).unwrap_err();
        assert!(abs.contains("outside the profile's folder"), "{abs}");
        let itself = read_in(&dir, "setup", &dir).unwrap_err();
        assert!(itself.contains("outside"), "{itself}");
        assert!(read_in(&dir, "setup", Path::new("sql")).is_err());
    }

    #[test]
    fn links_at_any_level_are_refused() {
        let (tmp, dir) = folder();
        symlink(tmp.path().join("secret"), dir.join("link.sql")).unwrap();
        let err = read_in(&dir, "setup", Path::new("link.sql")).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        symlink(tmp.path(), dir.join("up")).unwrap();
        let err = read_in(&dir, "setup", Path::new("up/secret")).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::hard_link(dir.join("setup.sql"), dir.join("twin.sql")).unwrap();
        let err = read_in(&dir, "setup", Path::new("twin.sql")).unwrap_err();
        assert!(err.contains("hard link"), "{err}");
        let err = read_in(&dir, "setup", Path::new("missing.sql")).unwrap_err();
        assert!(err.contains("cannot be read"), "{err}");
    }
}
