//! The files a command writes (through [`crate::files`]), and the check
//! that a path given for one can take it, made before hours of measuring.

use crate::error::UsageError;
use std::path::Path;

/// Fails at once, before hours of measuring, when `path` cannot take a
/// file: its folder is missing or takes no new file, or it is a folder
/// itself.
pub(super) fn check_writable_file(path: &Path, flag: &str) -> anyhow::Result<()> {
    let folder = crate::files::folder_of(path);
    let problem = if path.is_dir() {
        "is a directory; give a file path in an existing folder".to_string()
    } else if !folder.is_dir() {
        missing_folder(folder)
    } else {
        crate::files::check_output(path).map_err(|e| UsageError(format!("{flag} {e}")))?;
        return try_create_in(folder, path, flag);
    };
    Err(UsageError(format!("{flag} {}: {problem}", path.display())).into())
}

/// Names the missing `folder` a path was given in, and what to do.
fn missing_folder(folder: &Path) -> String {
    format!(
        "the folder {} does not exist; make it first (`mkdir -p {}`), or give a path in \
         a folder that exists",
        folder.display(),
        folder.display()
    )
}

/// Fails at once, before hours of measuring, when `dir` cannot take the
/// files of a folder such as `--html`'s: it is a link, a file, or under a
/// folder that is a link, missing or open to other users. A missing `dir`
/// is made when written, one checked level at a time.
pub(super) fn check_writable_folder(dir: &Path, flag: &str) -> anyhow::Result<()> {
    let refuse = |problem: String| -> anyhow::Result<()> {
        Err(UsageError(format!(
            "{flag} {}: {problem}\nhint: give {flag} a folder (made if missing) whose every \
             level is a real folder (not a link), yours or root's, that other users cannot \
             write",
            dir.display()
        ))
        .into())
    };
    let checked = match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return refuse("is a symbolic link; pgbisect does not write through links".into());
        }
        Ok(m) if !m.is_dir() => {
            return refuse(format!(
                "is a file, not a folder; {flag} names the folder to write into (made if \
                 missing): move the file away, or give {flag} another path"
            ));
        }
        Ok(_) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let folder = crate::files::folder_of(dir);
            if !folder.is_dir() {
                return refuse(missing_folder(folder));
            }
            folder
        }
        Err(e) => return refuse(e.to_string()),
    };
    match crate::folders::check_dir(checked) {
        Ok(()) => Ok(()),
        Err(e) => match crate::folders::unsafe_level(&e) {
            Some(level) => refuse(level.problem()),
            None => refuse(e.to_string()),
        },
    }
}

pub(super) use crate::files::write_output_file;

/// The file is written beside `path` and renamed over it: a file made
/// (and removed) there now shows that the folder takes one.
fn try_create_in(folder: &Path, path: &Path, flag: &str) -> anyhow::Result<()> {
    match tempfile::Builder::new()
        .prefix(".pgbisect-check.")
        .tempfile_in(folder)
    {
        Ok(_) => Ok(()),
        Err(e) => Err(UsageError(format!(
            "{flag} {}: cannot create a file in {} ({e}); give a path you can write",
            path.display(),
            folder.display()
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_file_that_cannot_be_written_is_refused_before_anything_runs() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(check_writable_file(&tmp.path().join("out.json"), "--json").is_ok());
        assert!(check_writable_file(Path::new("out.json"), "--json").is_ok());
        let missing = check_writable_file(&tmp.path().join("no/out.json"), "--json")
            .unwrap_err()
            .to_string();
        assert!(missing.contains("does not exist"), "{missing}");
        let proc = check_writable_file(Path::new("/proc/x.json"), "--json").unwrap_err();
        assert!(
            proc.to_string().contains("cannot create a file in /proc"),
            "{proc}"
        );
        let folder = check_writable_file(tmp.path(), "--json").unwrap_err();
        assert!(folder.to_string().contains("is a directory"), "{folder}");
        assert!(folder.downcast_ref::<UsageError>().is_some());
        let link = tmp.path().join("link.json");
        std::os::unix::fs::symlink(tmp.path().join("elsewhere.json"), &link).unwrap();
        let linked = check_writable_file(&link, "--json").unwrap_err();
        assert!(
            linked.to_string().contains("is a symbolic link"),
            "{linked}"
        );
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("dir")).unwrap();
        let through = check_writable_file(&tmp.path().join("dir/out.json"), "--json").unwrap_err();
        assert!(
            through.to_string().contains("is a symbolic link"),
            "{through}"
        );
        assert!(through.downcast_ref::<UsageError>().is_some());
    }

    #[test]
    fn a_site_folder_is_a_real_folder_checked_at_every_level() {
        let tmp = tempfile::tempdir().unwrap();
        check_writable_folder(&tmp.path().join("site"), "--html").unwrap();
        check_writable_folder(tmp.path(), "--html").unwrap();
        let file = tmp.path().join("site.html");
        std::fs::write(&file, "").unwrap();
        let err = check_writable_folder(&file, "--html").unwrap_err();
        assert!(err.to_string().contains("is a file, not a folder"), "{err}");
        assert!(
            err.to_string().contains("hint: give --html a folder"),
            "{err}"
        );
        assert!(!err.to_string().contains("--work-dir"), "{err}");
        assert!(err.downcast_ref::<UsageError>().is_some());
        let missing = check_writable_folder(&tmp.path().join("no/site"), "--html").unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        for dir in [link.clone(), link.join("site")] {
            let err = check_writable_folder(&dir, "--html").unwrap_err();
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
        }
    }
}
