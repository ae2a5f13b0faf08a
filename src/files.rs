//! Writing into the work dir without following links planted there.
//!
//! pgbisect often runs as root, in a work dir under `/var/tmp` where any
//! user can make files. A symbolic link put where pgbisect writes a log or
//! a report (`logs/build-<sha>.log -> /etc/passwd`) would have root
//! overwrite its target. So every file pgbisect writes is opened with
//! `O_NOFOLLOW` (a link found in its place is removed first: removing a
//! link never touches its target), and every folder it writes into is
//! checked to be a real folder, not a link to one.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Creates (or truncates) the file at `path` for writing; a symbolic link
/// at `path` is removed first, never followed.
pub fn create(path: &Path) -> io::Result<File> {
    remove_link(path)?;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes `contents` to the file at `path`, as [`create`] opens it.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    create(path)?.write_all(contents.as_ref())
}

/// Opens the file at `path` for appending, creating it if needed; a
/// symbolic link there is an error (an append-only file such as the
/// journal is never replaced).
pub fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| link_error(path, e))
}

/// Creates the folder `dir` (and its parents) if needed, and checks that
/// it is a real folder, not a symbolic link to one.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Err(io::Error::other(format!(
            "{} is a symbolic link; pgbisect does not follow links in its work dir: remove it",
            dir.display()
        )));
    }
    Ok(())
}

/// Checks that `dir` belongs to the user pgbisect runs as: as root, a work
/// dir another user owns could hold links and files of that user's choice.
pub fn check_owner(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(io::Error::other(format!(
            "{} belongs to another user (uid {}), not to the user pgbisect runs as (uid {me}); \
             give a work dir of your own with --work-dir",
            dir.display(),
            meta.uid()
        )));
    }
    Ok(())
}

/// Most of a command's output kept (and read back), in bytes: its first
/// and last halves, which hold what a failure and a result print.
pub const KEEP_OUTPUT: u64 = 1 << 20;

/// Shortens the file at `path` to its first and last `keep / 2` bytes,
/// with a line saying how much was cut between them, when it is longer
/// than `keep`; returns what is left, as text.
pub fn keep_ends(path: &Path, keep: u64) -> io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let len = file.metadata()?.len();
    if len <= keep {
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        return Ok(String::from_utf8_lossy(&text).into_owned());
    }
    let half = keep / 2;
    let mut head = vec![0; half as usize];
    file.read_exact(&mut head)?;
    let mut tail = vec![0; half as usize];
    file.seek(SeekFrom::Start(len - half))?;
    file.read_exact(&mut tail)?;
    let mut kept = head;
    kept.extend_from_slice(
        format!(
            "\n[... {} bytes of output cut by pgbisect ...]\n",
            len - 2 * half
        )
        .as_bytes(),
    );
    kept.extend_from_slice(&tail);
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&kept)?;
    Ok(String::from_utf8_lossy(&kept).into_owned())
}

fn remove_link(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::remove_file(path),
        _ => Ok(()),
    }
}

fn link_error(path: &Path, err: io::Error) -> io::Error {
    if err.raw_os_error() == Some(libc::ELOOP) {
        io::Error::other(format!(
            "{} is a symbolic link; pgbisect does not follow links in its work dir: remove it",
            path.display()
        ))
    } else {
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_where_a_file_is_written_is_replaced_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let log = tmp.path().join("build.log");
        symlink(&target, &log).unwrap();
        write(&log, "log text").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "log text");
        assert!(
            !std::fs::symlink_metadata(&log)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        write(&log, "shorter").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "shorter");
    }

    #[test]
    fn a_link_where_the_journal_is_appended_to_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let journal = tmp.path().join("journal.jsonl");
        symlink(&target, &journal).unwrap();
        let err = append(&journal).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        let real = tmp.path().join("real.jsonl");
        append(&real).unwrap().write_all(b"a\n").unwrap();
        append(&real).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "a\nb\n");
    }

    #[test]
    fn long_output_keeps_its_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run.txt");
        let text = format!("start\n{}\ntps = 5\n", "x".repeat(10_000));
        write(&out, &text).unwrap();
        assert_eq!(keep_ends(&out, 20_000).unwrap(), text);
        let kept = keep_ends(&out, 100).unwrap();
        assert!(kept.starts_with("start\n"), "{kept}");
        assert!(kept.ends_with("tps = 5\n"), "{kept}");
        assert!(
            kept.contains("[... 9915 bytes of output cut by pgbisect ...]"),
            "{kept}"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), kept);
    }

    #[test]
    fn a_linked_folder_is_refused_and_a_foreign_one_named() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let hunts = tmp.path().join("hunts");
        symlink(&elsewhere, &hunts).unwrap();
        let err = create_dir(&hunts).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        create_dir(&tmp.path().join("a/b")).unwrap();
        check_owner(tmp.path()).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&elsewhere, Some(65534), None).unwrap();
            let err = check_owner(&elsewhere).unwrap_err().to_string();
            assert!(err.contains("belongs to another user (uid 65534)"), "{err}");
        }
    }
}
