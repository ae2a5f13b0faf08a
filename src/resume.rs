//! `pgbisect resume`: continues a stopped hunt as it was started.
//!
//! An overnight hunt can be killed (a reboot, the OOM killer, Ctrl-C).
//! Every hunt saves the command it was given (`command.json`, with paths
//! made absolute) in its folder when it starts; `resume` reads it back and
//! runs the same hunt, which replays its journal, so nothing already built
//! or measured is done again. Rerunning the original command line does the
//! same; `resume` only spares the user from remembering it.

use crate::cli::{ResumeArgs, RunArgs};
use crate::results;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file a hunt's command is saved in, in the hunt's folder.
pub const COMMAND_FILE: &str = "command.json";

/// Saves `args` into `hunt_dir`, with the repository, work dir and a
/// profile file made absolute, so the hunt can be resumed from anywhere.
pub fn save(
    hunt_dir: &Path,
    args: &RunArgs,
    repo_dir: &Path,
    work_dir: &Path,
) -> anyhow::Result<()> {
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut saved = args.clone();
    saved.lab.repo = Some(absolute(repo_dir));
    saved.lab.work_dir = Some(absolute(work_dir));
    saved.lab.profile = args.lab.profile.as_ref().map(|p| {
        let path = Path::new(p);
        if path.is_file() {
            absolute(path).to_string_lossy().into_owned()
        } else {
            p.clone()
        }
    });
    let path = hunt_dir.join(COMMAND_FILE);
    let body = serde_json::to_string_pretty(&saved).context("cannot encode the hunt's command")?;
    std::fs::write(&path, body).with_context(|| format!("cannot write {}", path.display()))
}

/// The saved command of the hunt in `hunt_dir`.
pub fn load(hunt_dir: &Path) -> anyhow::Result<RunArgs> {
    let path: PathBuf = hunt_dir.join(COMMAND_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a saved pgbisect hunt (its JSON does not match)",
            path.display()
        )
    })
}

/// `pgbisect resume`.
pub fn resume_command(args: &ResumeArgs) -> anyhow::Result<ExitCode> {
    let work_dir = results::work_dir_of(args.at.work_dir.as_deref(), args.at.repo.as_deref())?;
    let hunt = results::choose_with(&work_dir, args.at.hunt.as_deref(), COMMAND_FILE)?;
    let run = load(&hunt.dir)?;
    eprintln!(
        "resuming the hunt in {}: --good {} --bad {}",
        hunt.dir.display(),
        run.good.as_deref().unwrap_or("?"),
        run.bad.as_deref().unwrap_or("?")
    );
    crate::app::hunt(&run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::LabArgs;

    #[test]
    fn saved_commands_load_back_with_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("p.toml");
        std::fs::write(&profile, "").unwrap();
        let args = RunArgs {
            good: Some("v1".into()),
            bad: Some("v2".into()),
            lab: LabArgs {
                profile: Some(profile.to_string_lossy().into_owned()),
                ..LabArgs::default()
            },
            clients: Some(8),
            first_only: true,
            ..RunArgs::default()
        };
        save(dir.path(), &args, dir.path(), dir.path()).unwrap();
        let back = load(dir.path()).unwrap();
        assert_eq!(back.good.as_deref(), Some("v1"));
        assert_eq!(back.clients, Some(8));
        assert!(back.first_only);
        assert!(back.lab.repo.unwrap().is_absolute());
        assert!(Path::new(&back.lab.profile.unwrap()).is_absolute());
    }

    #[test]
    fn a_bundled_profile_name_stays_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let args = RunArgs {
            lab: LabArgs {
                profile: Some("smoke".into()),
                ..LabArgs::default()
            },
            ..RunArgs::default()
        };
        save(dir.path(), &args, dir.path(), dir.path()).unwrap();
        assert_eq!(
            load(dir.path()).unwrap().lab.profile.as_deref(),
            Some("smoke")
        );
    }
}
