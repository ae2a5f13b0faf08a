//! The results of past hunts in a work dir, and `pgbisect report`.
//!
//! Every hunt keeps its `result.json` in `<work dir>/hunts/<name>/`, so a
//! report can be rendered again later, in another format, without running
//! anything. The newest result is the one most recently written.

use crate::app::UsageError;
use crate::cli::{ReportArgs, ReportFormat};
use crate::findings::HuntReport;
use crate::report;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

/// The file a hunt writes its result to, in its own folder.
pub const RESULT_FILE: &str = "result.json";

/// A past hunt's folder and when its result was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastHunt {
    pub name: String,
    pub dir: PathBuf,
    pub written: SystemTime,
}

/// Every hunt under `work_dir` that has a result, newest first.
pub fn past_hunts(work_dir: &Path) -> anyhow::Result<Vec<PastHunt>> {
    past_hunts_with(work_dir, RESULT_FILE)
}

/// Every hunt under `work_dir` whose folder holds `marker`, newest (by the
/// marker's time) first.
pub fn past_hunts_with(work_dir: &Path, marker: &str) -> anyhow::Result<Vec<PastHunt>> {
    let hunts = work_dir.join("hunts");
    let entries = match std::fs::read_dir(&hunts) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", hunts.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", hunts.display()))?;
        let dir = entry.path();
        let Ok(meta) = std::fs::metadata(dir.join(marker)) else {
            continue;
        };
        found.push(PastHunt {
            name: entry.file_name().to_string_lossy().into_owned(),
            written: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            dir,
        });
    }
    found.sort_by(|a, b| b.written.cmp(&a.written).then(a.name.cmp(&b.name)));
    Ok(found)
}

/// The hunt named `name`, or the newest one.
pub fn choose(work_dir: &Path, name: Option<&str>) -> anyhow::Result<PastHunt> {
    choose_with(work_dir, name, RESULT_FILE)
}

/// The hunt named `name`, or the newest one, among those holding `marker`.
pub fn choose_with(work_dir: &Path, name: Option<&str>, marker: &str) -> anyhow::Result<PastHunt> {
    let hunts = past_hunts_with(work_dir, marker)?;
    let looked = work_dir.join("hunts").join("*").join(marker);
    match name {
        None => hunts.into_iter().next().ok_or_else(|| {
            UsageError(format!(
                "no hunt in {} (looked for {})\n\
                 hint: run a hunt first (pgbisect --good REV --bad REV), or pass the \
                 --work-dir or --repo it used",
                work_dir.display(),
                looked.display()
            ))
            .into()
        }),
        Some(name) => {
            let known: Vec<String> = hunts.iter().map(|h| h.name.clone()).collect();
            hunts.into_iter().find(|h| h.name == name).ok_or_else(|| {
                UsageError(format!(
                    "no hunt named `{name}` with a {marker} in {}; known: {}",
                    work_dir.join("hunts").display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
                .into()
            })
        }
    }
}

/// The work dir given, or the one a hunt in `repo` (default: the current
/// directory) uses.
pub fn work_dir_of(work_dir: Option<&Path>, repo: Option<&Path>) -> anyhow::Result<PathBuf> {
    match work_dir {
        Some(w) => Ok(w.to_path_buf()),
        None => crate::app::default_work_dir(repo.unwrap_or(Path::new("."))),
    }
}

/// Reads a hunt's result.
pub fn load(hunt: &PastHunt) -> anyhow::Result<HuntReport> {
    let path = hunt.dir.join(RESULT_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a pgbisect hunt result (its JSON does not match)",
            path.display()
        )
    })
}

/// `pgbisect report`: renders a past hunt's result again.
pub fn report_command(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let envelope = match (&args.from, &args.to, args.format) {
        (Some(from), Some(to), _) if !(from.contains('@') && to.contains('@')) => {
            return Err(UsageError(format!(
                "--from `{from}` --to `{to}`: give email addresses, e.g. \
                 --from \"Jane Doe <jane@example.org>\""
            ))
            .into());
        }
        (Some(from), Some(to), _) => Some(report::Envelope {
            from: from.clone(),
            to: to.clone(),
            date_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }),
        (_, _, ReportFormat::Email) => {
            return Err(UsageError(
                "--format email needs --from ADDR and --to ADDR, e.g. \
                 --to pgsql-hackers@lists.postgresql.org"
                    .into(),
            )
            .into());
        }
        _ => None,
    };
    let work_dir = work_dir_of(args.at.work_dir.as_deref(), args.at.repo.as_deref())?;
    let hunt = choose(&work_dir, args.at.hunt.as_deref())?;
    let found = load(&hunt)?;
    let text = report::render(&found, args.format, envelope.as_ref())?;
    if let Some(path) = &args.chart {
        std::fs::write(path, crate::chart::hunt_chart(&found))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunt_with_result(work: &Path, name: &str, mtime_secs: u64) {
        let dir = work.join("hunts").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let file = std::fs::File::create(dir.join(RESULT_FILE)).unwrap();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(mtime_secs);
        file.set_modified(at).unwrap();
    }

    #[test]
    fn newest_result_first_and_folders_without_result_skipped() {
        let work = tempfile::tempdir().unwrap();
        hunt_with_result(work.path(), "old", 1_000_000);
        hunt_with_result(work.path(), "new", 2_000_000);
        std::fs::create_dir_all(work.path().join("hunts/running")).unwrap();
        let names: Vec<String> = past_hunts(work.path())
            .unwrap()
            .into_iter()
            .map(|h| h.name)
            .collect();
        assert_eq!(names, ["new", "old"]);
        assert_eq!(choose(work.path(), None).unwrap().name, "new");
        assert_eq!(choose(work.path(), Some("old")).unwrap().name, "old");
    }

    #[test]
    fn missing_hunts_are_usage_errors_that_say_where() {
        let work = tempfile::tempdir().unwrap();
        let err = choose(work.path(), None).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert!(err.to_string().contains("result.json"), "{err}");
        hunt_with_result(work.path(), "a", 1);
        let err = choose(work.path(), Some("b")).unwrap_err();
        assert!(err.to_string().contains("known: a"), "{err}");
    }

    #[test]
    fn bad_json_names_the_file() {
        let work = tempfile::tempdir().unwrap();
        hunt_with_result(work.path(), "a", 1);
        let hunt = choose(work.path(), None).unwrap();
        let err = load(&hunt).unwrap_err();
        assert!(format!("{err:#}").contains("result.json"), "{err:#}");
    }
}
