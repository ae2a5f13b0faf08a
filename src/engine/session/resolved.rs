//! A hunt resolved from its flags, its profile and this machine: the one
//! value its `command.json` holds, its plan key is made from and `resume`
//! runs again as it is, without resolving anything a second time.
//!
//! Earlier releases saved the hunt's flags instead; [`HuntPlan::read`]
//! tells the two apart by `layout`, which those files do not have.

use super::Plan;
use crate::engine::hunt::Search;
use crate::files::write_file;
use crate::lab::held::HostsWanted;
use crate::profile::RunLength;
use crate::report::Format;
use crate::workspace::{HuntDir, PlanFlags, PlanKey, WorkDir};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The layout of `command.json` this release writes.
pub const LAYOUT: u32 = 2;

/// A hunt, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HuntPlan {
    /// [`LAYOUT`].
    pub layout: u32,
    /// `--good` and `--bad` as given.
    pub given: (String, String),
    pub plan: Plan,
    /// The flags beside the profile that the plan key keeps.
    pub flags: PlanFlags,
    pub hosts: HostsWanted,
    pub time: TimeLimit,
    /// Runs a side of the why-runs; `None`: no why-runs (`--no-why`).
    pub why_runs: Option<usize>,
    /// `--profile` as given (a file made absolute once saved), for the
    /// report.
    pub profile_name: Option<String>,
    /// The profile's TOML as it was read, for the report.
    pub profile_toml: String,
    /// The flags as given that the command hunting the range again keeps
    /// ([`super::rerun::again`]); absent from plans saved before it.
    #[serde(default)]
    pub shaping: Shaping,
    pub outputs: Outputs,
}

/// The hunt's time limit as given: each start counts from itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeLimit {
    /// `--time-budget`: a duration (8h, 90m).
    pub budget: Option<String>,
    /// `--deadline`: a local time of day (HH:MM).
    pub deadline: Option<String>,
}

/// Where a hunt's result goes, and who is told how it ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outputs {
    /// `--json`: the result as JSON (also when the hunt fails).
    pub json: Option<PathBuf>,
    /// What is printed at the end.
    pub format: Format,
    pub notify_cmd: Option<String>,
    pub mail_to: Vec<String>,
    pub smtp: Option<String>,
    pub mail_from: Option<String>,
}

/// The flags as given that shape a hunt and that its plan keeps nowhere
/// else as given (the plan holds what they resolved to): `None` when not
/// given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Shaping {
    pub clients: Option<u32>,
    pub search: Option<Search>,
    pub candidates: Option<u32>,
    pub run_length: Option<RunLength>,
}

/// `--profile` as it was named: a file as its absolute path, so that it
/// is found from any folder; a bundled profile's name as it is.
pub fn as_named(given: &str) -> String {
    let path = Path::new(given);
    if path.is_file() {
        absolute(path).to_string_lossy().into_owned()
    } else {
        given.to_string()
    }
}

/// `path` made absolute, its links resolved where it exists.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| crate::folders::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

impl HuntPlan {
    /// What names the hunt's folder.
    pub fn key(&self) -> anyhow::Result<PlanKey> {
        let plan = &self.plan;
        PlanKey::new(
            (&plan.good, &plan.bad),
            (&plan.config, plan.choices.counter.as_deref()),
            &plan.profile,
            self.flags,
        )
    }

    /// Saves the plan as `hunt`'s `command.json`, with the repository,
    /// the work dir and a profile file made absolute, so that the hunt
    /// can be resumed from anywhere.
    pub fn save(&self, hunt: &HuntDir) -> anyhow::Result<()> {
        let mut saved = self.clone();
        saved.plan.repo_dir = absolute(&self.plan.repo_dir);
        saved.plan.work = WorkDir::at(absolute(self.plan.work.root()));
        saved.profile_name = self.profile_name.as_deref().map(as_named);
        let body = serde_json::to_string_pretty(&saved).context("cannot encode the hunt's plan")?;
        write_file(&hunt.command(), &body)
    }

    /// The plan saved as `text` (read from `path`); `None` when `text`
    /// holds no plan's layout (an earlier release's flags, or no JSON).
    pub fn read(text: &str, path: &Path) -> Option<anyhow::Result<HuntPlan>> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        let layout = value.as_object()?.get("layout")?;
        if layout.as_u64() != Some(u64::from(LAYOUT)) {
            return Some(Err(anyhow::anyhow!(
                "{} was written by another release of pgbisect (plan layout {layout}, this \
                 release reads {LAYOUT}): resume the hunt with that release, or start it \
                 again with its command line",
                path.display()
            )));
        }
        Some(serde_json::from_value(value).with_context(|| {
            format!(
                "{} is not a saved pgbisect hunt (its JSON does not match)",
                path.display()
            )
        }))
    }
}

#[cfg(test)]
impl HuntPlan {
    /// `plan` hunted with `flags` and nothing else asked.
    pub fn for_tests(plan: Plan, flags: PlanFlags) -> HuntPlan {
        HuntPlan {
            layout: LAYOUT,
            given: ("v1".into(), "v2".into()),
            plan,
            flags,
            hosts: HostsWanted::default(),
            time: TimeLimit::default(),
            why_runs: None,
            profile_name: None,
            profile_toml: String::new(),
            shaping: Shaping::default(),
            outputs: Outputs::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::hunt::HuntConfig;
    use crate::profile::Profile;

    fn example(dir: &Path) -> HuntPlan {
        let config = HuntConfig {
            clients: 8,
            candidates: Some(2),
            ..HuntConfig::default()
        };
        let plan = Plan::for_tests(Profile::default(), config, Path::new("."));
        let mut hunt = HuntPlan::for_tests(plan, PlanFlags::default());
        hunt.profile_name = Some(dir.join("p.toml").to_string_lossy().into_owned());
        hunt
    }

    #[test]
    fn a_saved_plan_reads_back_whole_with_absolute_paths_and_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let hunt_dir = HuntDir::at(dir.path());
        std::fs::write(dir.path().join("p.toml"), "").unwrap();
        let hunt = example(dir.path());
        hunt.save(&hunt_dir).unwrap();
        let text = std::fs::read_to_string(hunt_dir.command()).unwrap();
        let back = HuntPlan::read(&text, &hunt_dir.command()).unwrap().unwrap();
        assert!(back.plan.repo_dir.is_absolute());
        assert!(back.plan.work.root().is_absolute());
        assert!(Path::new(back.profile_name.as_deref().unwrap()).is_absolute());
        assert_eq!(back.plan.config, hunt.plan.config);
        assert_eq!(back.plan.setups, hunt.plan.setups);
        assert_eq!(back.key().unwrap(), hunt.key().unwrap());
        let bisect = HuntConfig {
            search: crate::core::posterior::Search::Bisect,
            ..hunt.plan.config
        };
        let json = serde_json::to_string(&bisect).unwrap();
        assert_eq!(serde_json::from_str::<HuntConfig>(&json).unwrap(), bisect);
    }

    #[test]
    fn a_bundled_profile_name_stays_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let hunt_dir = HuntDir::at(dir.path());
        let mut hunt = example(dir.path());
        hunt.profile_name = Some("smoke".into());
        hunt.save(&hunt_dir).unwrap();
        let text = std::fs::read_to_string(hunt_dir.command()).unwrap();
        let back = HuntPlan::read(&text, &hunt_dir.command()).unwrap().unwrap();
        assert_eq!(back.profile_name.as_deref(), Some("smoke"));
    }

    #[test]
    fn only_a_plan_of_this_layout_is_read() {
        let path = Path::new("/w/hunts/h/command.json");
        let flags = include_str!("../../../tests/fixtures/command-0.2.json");
        assert!(HuntPlan::read(flags, path).is_none());
        assert!(HuntPlan::read("{", path).is_none());
        let later = HuntPlan::read(r#"{"layout": 3}"#, path)
            .unwrap()
            .unwrap_err();
        let text = format!("{later:#}");
        assert!(
            text.contains("plan layout 3") && text.contains(path.to_str().unwrap()),
            "{text}"
        );
        let torn = HuntPlan::read(r#"{"layout": 2}"#, path)
            .unwrap()
            .unwrap_err();
        assert!(
            format!("{torn:#}").contains("is not a saved pgbisect hunt"),
            "{torn:#}"
        );
    }
}
