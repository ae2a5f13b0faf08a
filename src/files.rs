//! Writing into the work dir without following links planted there.
//!
//! pgbisect often runs as root, in a work dir under `/var/tmp` where any
//! user can make files. A link put where pgbisect writes a log or a report
//! (`logs/build-<sha>.log -> /etc/passwd`, or a hard link to it) would have
//! root overwrite its target. So every file pgbisect writes is made new
//! under a fresh name and renamed into place, never opened and truncated
//! where it is: a symbolic or hard link found in its place is replaced,
//! its target untouched. The one file written in place, the journal, is
//! appended to only when it is a plain file of pgbisect's own with no
//! other name. Every folder pgbisect writes into is checked to be a real
//! folder, not a link to one; and paths the user names for outputs are
//! refused when they are links (see [`write_output`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates a new, empty file at `path` for writing, in place of whatever
/// was there: the file is made under a fresh name in the same folder and
/// renamed over `path`. A symbolic or hard link at `path` is replaced, its
/// target untouched; and a process still writing into the file that was
/// there (a benchmark left running by a killed hunt) writes into a file no
/// longer named, never into this one.
pub fn create(path: &Path) -> io::Result<File> {
    let temp = fresh(path)?;
    temp.persist(path).map_err(|e| explain(path, e.error))
}

/// Writes `contents` to a new file that then replaces the one at `path`
/// (see [`create`]), synced to disk first: a crash leaves the old file or
/// the new one, never half of one.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut temp = fresh(path)?;
    temp.write_all(contents.as_ref())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| explain(path, e))?;
    temp.persist(path)
        .map(drop)
        .map_err(|e| explain(path, e.error))
}

/// [`write`] for a path the user named (`--output`, `--json`): outside
/// the work dir a link is the user's, so a link (or a device, a pipe) at
/// `path` is refused rather than replaced or written through.
pub fn write_output(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    check_output(path)?;
    write(path, contents)
}

/// [`write`], the error naming the file: a file of the work dir (a link
/// planted there is replaced).
pub fn write_file(path: &Path, body: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    write(path, body).with_context(|| format!("cannot write {}", path.display()))
}

/// [`write_output`], the error naming the file: a file at a path the
/// user named (a link there is refused).
pub fn write_output_file(path: &Path, body: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    write_output(path, body).with_context(|| format!("cannot write {}", path.display()))
}

/// Checks that `path`, named by the user for pgbisect to write, is not a
/// symbolic link nor anything but a plain file, and that every folder on
/// the way to it passes [`crate::folders::check_dir`]: a link to a folder
/// planted anywhere on the way (`/tmp/reports -> /etc`) would have the
/// file written where that link points.
pub fn check_output(path: &Path) -> io::Result<()> {
    check_folders_of(path)?;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let what = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        format!(
            "is a symbolic link{target}; pgbisect does not write through links: give the \
             path of the file itself, or remove the link"
        )
    } else if !meta.is_file() {
        "is not a plain file; pgbisect writes its outputs to plain files only: give another \
         path (or leave the option out to print to the terminal, where there is one)"
            .to_string()
    } else {
        return Ok(());
    };
    Err(io::Error::other(format!("{} {what}", path.display())))
}

/// The folder `path` is written into (`.` for a bare file name).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks every level of the folder of `path`, the output named by the
/// user; a folder missing is left to the write to say.
fn check_folders_of(path: &Path) -> io::Result<()> {
    let Err(err) = crate::folders::check_output_dir(folder_of(path)) else {
        return Ok(());
    };
    match crate::folders::unsafe_level(&err) {
        Some(level) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not written: {}\nhint: give a path whose every folder is a real \
                 folder (not a link), yours or root's, that other users cannot write",
                path.display(),
                level.problem()
            ),
        )),
        None if err.kind() == io::ErrorKind::NotFound => Ok(()),
        None => Err(err),
    }
}

/// A new file in the folder of `path`, to be renamed over it; readable as
/// a file made with the process's umask would be.
fn fresh(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let folder = folder_of(path);
    let name = path
        .file_name()
        .map(|n| format!(".{}.", n.to_string_lossy()))
        .unwrap_or_else(|| ".pgbisect.".into());
    tempfile::Builder::new()
        .prefix(&name)
        .suffix(".part")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(folder)
        .map_err(|e| explain(path, e))
}

/// Opens the file at `path` for appending, creating it if needed. An
/// append-only file such as the journal is never replaced, so what is
/// found there must be pgbisect's own: a symbolic link, a file with other
/// names (a hard link) or of another user is an error.
pub fn append(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| explain(path, e))?;
    check_own_file(path, &file)?;
    Ok(file)
}

/// The body of the plain file at `path`, read without following a link
/// (`None` when there is no file): a file of the work dir read back as
/// pgbisect's own, e.g. a hunt's report copied into a site or mailed. A
/// link or anything but a plain file there is an error, never read
/// through.
pub fn read_own(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(explain(path, e)),
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a plain file; pgbisect reads back only plain files of its own: remove it",
            path.display()
        )));
    }
    let mut body = Vec::new();
    file.read_to_end(&mut body)?;
    Ok(Some(body))
}

/// Opens `path` to read and write, making it (mode 0644) when missing,
/// without following a link, and refuses it when another user could
/// have planted it ([`check_own_file`]): a lock file.
pub fn open_own(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| explain(path, e))?;
    check_own_file(path, &file)?;
    Ok(file)
}

/// Checks that the open `file` (named `path`) is a plain file of the user
/// pgbisect runs as with no other name: one pgbisect may write in place.
pub fn check_own_file(path: &Path, file: &File) -> io::Result<()> {
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let problem = if !meta.is_file() {
        "is not a plain file".to_string()
    } else if meta.nlink() > 1 {
        format!(
            "has {} names (hard links): writing into it would change the others",
            meta.nlink()
        )
    } else if meta.uid() != me {
        format!("belongs to another user (uid {})", meta.uid())
    } else {
        return Ok(());
    };
    Err(io::Error::other(format!(
        "{} {problem}; pgbisect writes in place only into files of its own: remove it",
        path.display()
    )))
}

/// `err`, met writing `path`, in words that say what to do: a full disk
/// (or quota) and a link where a file was expected are named.
pub fn explain(path: &Path, err: io::Error) -> io::Error {
    match err.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => io::Error::new(
            io::ErrorKind::StorageFull,
            format!(
                "disk full: no space left to write {} ({err}); free some space there and rerun",
                path.display()
            ),
        ),
        Some(libc::ELOOP) => io::Error::other(format!(
            "{} is a symbolic link; pgbisect does not follow links in its work dir: remove it",
            path.display()
        )),
        _ => err,
    }
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
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| explain(path, e))?;
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
    let kept = cut_between(&head, len - 2 * half, &tail);
    write(path, &kept)?;
    Ok(String::from_utf8_lossy(&kept).into_owned())
}

/// `head` and `tail` of an output with a line saying that `cut` bytes
/// between them were left out.
pub fn cut_between(head: &[u8], cut: u64, tail: &[u8]) -> Vec<u8> {
    let mut kept = head.to_vec();
    kept.extend_from_slice(
        format!("\n[... {cut} bytes of output cut by pgbisect ...]\n").as_bytes(),
    );
    kept.extend_from_slice(tail);
    kept
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
    fn a_hard_link_where_a_file_is_written_is_replaced_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let report = tmp.path().join("report.txt");
        std::fs::hard_link(&target, &report).unwrap();
        write(&report, "report").unwrap();
        let mut log = create(&report).unwrap();
        log.write_all(b"log").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "log");
        // Nothing is left under a temporary name.
        let names = std::fs::read_dir(tmp.path()).unwrap().count();
        assert_eq!(names, 2);
    }

    #[test]
    fn a_file_written_by_an_earlier_holder_is_out_of_reach() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run.txt");
        let mut old = create(&out).unwrap();
        let mut new = create(&out).unwrap();
        old.write_all(b"tps = 1.0\n").unwrap();
        new.write_all(b"tps = 800.0\n").unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "tps = 800.0\n");
    }

    #[test]
    fn a_journal_with_other_names_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let journal = tmp.path().join("journal.jsonl");
        std::fs::hard_link(&target, &journal).unwrap();
        let err = append(&journal).unwrap_err().to_string();
        assert!(err.contains("has 2 names"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn an_output_path_that_is_a_link_or_a_device_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let out = tmp.path().join("report.txt");
        symlink(&target, &out).unwrap();
        let err = write_output(&out, "report").unwrap_err().to_string();
        assert!(err.contains("is a symbolic link (to "), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(
            std::fs::symlink_metadata(&out)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let err = check_output(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a plain file"), "{err}");
        write_output(&tmp.path().join("new.txt"), "new").unwrap();
        write_output(&target, "replaced").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "replaced");
    }

    #[test]
    fn an_output_under_a_link_to_a_folder_is_refused_with_nothing_written() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let planted = tmp.path().join("reports");
        symlink(&elsewhere, &planted).unwrap();
        for path in [planted.join("out.json"), planted.join("../reports/x.csv")] {
            let err = write_output(&path, "report").unwrap_err().to_string();
            assert!(err.contains("is a symbolic link"), "{err}");
            assert!(
                err.contains("hint: give a path whose every folder"),
                "{err}"
            );
            assert!(!err.contains("--work-dir"), "{err}");
        }
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A folder others may write, on the way, is refused too.
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_output(&open.join("out.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("writable by other users"), "{err}");
        check_output(&tmp.path().join("missing/out.json")).unwrap();
    }

    #[test]
    fn a_full_disk_is_named() {
        let err = explain(
            Path::new("/w/runs/run-1.txt"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let said = err.to_string();
        assert!(
            said.starts_with("disk full: no space left to write /w/runs/run-1.txt"),
            "{said}"
        );
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }

    #[test]
    fn an_output_may_go_straight_into_a_sticky_folder_open_to_all() {
        // As `--json /tmp/r.json`: /tmp is the last level.
        let sticky = Path::new("/tmp");
        let meta = std::fs::metadata(sticky).unwrap();
        if meta.permissions().mode() & 0o1777 != 0o1777 {
            crate::testing::skipped("/tmp is not a sticky folder open to all here");
            return;
        }
        check_output(&sticky.join("pgbisect-output-test.json")).unwrap();
    }
}
