//! The files a command writes (through [`crate::files`]), and the check
//! that a path given for one can take it, made before hours of measuring.

use crate::error::UsageError;
use std::path::Path;

/// Fails at once, before hours of measuring, when `path` cannot take a
/// file: its folder is missing or takes no new file, or it is a folder
/// itself.
pub(super) fn check_writable_file(path: &Path, flag: &str) -> anyhow::Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let problem = if path.is_dir() {
        "is a directory"
    } else if !folder.is_dir() {
        "is in a folder that does not exist"
    } else {
        crate::files::check_output(path).map_err(|e| UsageError(format!("{flag} {e}")))?;
        return try_create_in(folder, path, flag);
    };
    Err(UsageError(format!(
        "{flag} {}: {problem}; give a file path in an existing folder",
        path.display()
    ))
    .into())
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
    }
}
