//! What a hunt (or a judgement against one) measures: the endpoints, the
//! profile and the decision's bounds, resolved from the flags.

use super::args::{LabArgs, TargetArgs};
use super::resolve;
use crate::core::counts::Measure;
use crate::engine::hunt::HuntConfig;
use crate::engine::release_check::Sides;
use crate::engine::session;
pub(super) use crate::engine::session::Plan;
use crate::error::UsageError;
use crate::lab::open::LabChoices;
use crate::profile::Profile;
use crate::repo::Repo;
use crate::server::{RunAs, ServerError};

/// The profile named by `--profile`, or the default one, with the user
/// that is to run PostgreSQL (`--run-as`, or the profile's) checked to
/// exist before any work, whatever the lab: a custom command does not use
/// it, but a typo there is a typo.
pub(super) fn load_profile(args: &LabArgs) -> anyhow::Result<Profile> {
    load_profile_with_text(args).map(|(profile, _)| profile)
}

/// [`load_profile`], with the TOML it was read from (none for the
/// default profile).
pub(super) fn load_profile_with_text(args: &LabArgs) -> anyhow::Result<(Profile, String)> {
    let (profile, text) = match args.profile.as_deref() {
        Some(p) => Profile::load_with_text(p)?,
        None => (Profile::default(), String::new()),
    };
    check_run_as(args.run_as.as_deref(), &profile)?;
    Ok((profile, text))
}

/// The user named to run PostgreSQL (`run_as`, else the profile's) exists.
pub(super) fn check_run_as(run_as: Option<&str>, profile: &Profile) -> anyhow::Result<()> {
    if let Some(name) = super::resolve::run_as(run_as, profile) {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let known = crate::server::is_root() || crate::server::lookup_user(&passwd, name).is_some();
        let checked = if known {
            RunAs::resolve(Some(name)).map(drop)
        } else {
            Err(ServerError::NoSuchUser {
                name: name.to_string(),
            })
        };
        checked.map_err(|e| UsageError(e.to_string()))?;
    }
    Ok(())
}

/// The lab flags, as the lab takes them.
pub(super) fn choices(args: &LabArgs) -> LabChoices {
    LabChoices {
        pgbench: args.pgbench.clone(),
        run_as: args.run_as.clone(),
        cache_size: args.cache_size,
        percentiles: None,
        measure: Default::default(),
        counter: None,
    }
}

/// Resolves the endpoints and the decision's bounds, with the profile
/// already loaded.
pub(super) fn resolve_plan_with(
    args: &TargetArgs,
    first_only: bool,
    profile: Profile,
) -> anyhow::Result<Plan> {
    resolve_plan_judged(args, (first_only, None), profile)
}

/// [`resolve_plan_with`]; `judged` is the client count of the hunt a
/// judgement is measured against, taken when `--clients` is not given.
pub(super) fn resolve_plan_judged(
    args: &TargetArgs,
    (first_only, judged): (bool, Option<u32>),
    profile: Profile,
) -> anyhow::Result<Plan> {
    let (good, bad) = endpoints_given(args)?;
    let repo_dir = args.lab.repo_dir();
    let repo = Repo::open(&repo_dir)?;
    let ends = repo.endpoints(good, bad)?;
    let config = hunt_config(args, (first_only, judged), &profile)?;
    let work = args.lab.work_dir()?;
    let setups = session::decide_setups(&profile, &session::hunt_clients(&profile, config.clients));
    let choices = LabChoices {
        measure: config.measure,
        counter: counter(config.measure, &profile)?,
        ..choices(&args.lab)
    };
    Ok(Plan {
        auto_counter: auto_counter(args, judged, &profile)?,
        profile,
        config,
        resolution: ends.records(),
        release: ends.moved().then(|| Sides {
            given: ends.good.name().to_string(),
            release: ends.good.commit.clone(),
            merge_base: ends.start.clone(),
            branch: ends.good_branch.clone(),
            left: ends.bad_line(),
        }),
        good: ends.start,
        bad: ends.bad.commit,
        repo_dir,
        work,
        choices,
        setups,
    })
}

/// `--good` and `--bad`, which a hunt cannot go without.
fn endpoints_given(args: &TargetArgs) -> anyhow::Result<(&str, &str)> {
    match (&args.good, &args.bad) {
        (Some(good), Some(bad)) => Ok((good, bad)),
        _ => Err(UsageError(
            "a hunt needs --good REV and --bad REV (a fast and a later, slower commit)\n\
             hint: pgbisect --good REL9_5_0 --bad master --clients 128; see pgbisect --help"
                .into(),
        )
        .into()),
    }
}

/// With `--measure auto` (or the profile's), the counter the endpoints
/// are counted by while the measure is chosen; `None` otherwise, and for
/// a judgement (`judged`), which measures as its hunt did.
fn auto_counter(
    args: &TargetArgs,
    judged: Option<u32>,
    profile: &Profile,
) -> anyhow::Result<Option<String>> {
    match (judged, resolve::measure(args.measure, profile).fixed()) {
        (None, None) => counter(Measure::Instructions, profile),
        _ => Ok(None),
    }
}

/// The counter of a plan that counts, as it names itself: found before
/// anything is built, and part of the plan (see [`LabChoices::counter`]).
fn counter(measure: Measure, profile: &Profile) -> anyhow::Result<Option<String>> {
    if measure.is_tps() {
        return Ok(None);
    }
    if profile.is_custom() {
        return Err(crate::lab::cannot_count());
    }
    let found =
        crate::counts::cachegrind::Cachegrind::find().map_err(|e| UsageError(e.to_string()))?;
    Ok(Some(crate::counts::Counter::name(&found).to_string()))
}

/// The hunt's settings: flags first, then the profile, then defaults
/// (see [`super::resolve`]).
fn hunt_config(
    args: &TargetArgs,
    (first_only, judged): (bool, Option<u32>),
    profile: &Profile,
) -> anyhow::Result<HuntConfig> {
    let clients = resolve::one_client_count(args.clients, judged, profile)?;
    let decision = resolve::decision((args.threshold, args.max_runs), profile)?;
    Ok(HuntConfig {
        decision,
        clients,
        first_only: resolve::first_only(first_only, profile),
        choose_run_length: resolve::chooses_run_length(args.run_length, profile),
        search: resolve::search(args.search, profile),
        candidates: args.candidates,
        // `auto` starts on tps until the endpoints choose (see `Plan::auto_counter`).
        measure: resolve::measure(args.measure, profile)
            .fixed()
            .unwrap_or(Measure::Tps),
        ..HuntConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::RunLength;

    #[test]
    fn a_profile_listing_several_client_counts_needs_one_for_a_hunt() {
        let profile = Profile::load("read-only-scaling").unwrap();
        let err = hunt_config(&TargetArgs::default(), (false, None), &profile).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("clients = [1, 16, 32, 64, 128]"), "{text}");
        assert!(text.contains("give --clients N"), "{text}");
        assert!(text.contains("--clients 1,16,32,64,128"), "{text}");
        let args = TargetArgs {
            clients: Some(16),
            ..TargetArgs::default()
        };
        assert_eq!(
            hunt_config(&args, (false, None), &profile).unwrap().clients,
            16
        );
        let one = Profile::load("smoke").unwrap();
        hunt_config(&TargetArgs::default(), (false, None), &one).unwrap();
    }

    /// The folder a hunt with `args` gets, between two fixed commits, as
    /// its resolved plan names it once saved and read back.
    fn folder_of(args: &TargetArgs, first_only: bool) -> String {
        use crate::engine::session::resolved::HuntPlan;
        use crate::workspace::PlanFlags;
        let (profile, _) = load_profile_with_text(&args.lab).unwrap();
        let config = hunt_config(args, (first_only, None), &profile).unwrap();
        let flags = PlanFlags {
            threshold: args.threshold,
            max_runs: args.max_runs,
            first_only,
        };
        let dir = std::path::Path::new("/var/tmp/w");
        let hunt = HuntPlan::for_tests(Plan::for_tests(profile, config, dir), flags);
        let text = serde_json::to_string(&hunt).unwrap();
        let back = HuntPlan::read(&text, dir).unwrap().unwrap();
        let name = back.key().unwrap().folder_name();
        assert_eq!(name, hunt.key().unwrap().folder_name());
        name
    }

    /// The flags of the hunts whose folder names are pinned below.
    fn pinned_flags() -> [(TargetArgs, bool); 4] {
        let tuned = TargetArgs {
            clients: Some(128),
            threshold: Some(2.5),
            max_runs: Some(12),
            search: Some(crate::core::posterior::Search::Bisect),
            ..TargetArgs::default()
        };
        let mut auto = TargetArgs {
            run_length: Some(RunLength::Auto),
            candidates: Some(2),
            ..TargetArgs::default()
        };
        auto.lab.profile = Some("smoke".into());
        let mut scaling = TargetArgs {
            clients: Some(16),
            ..TargetArgs::default()
        };
        scaling.lab.profile = Some("read-only-scaling".into());
        [
            (TargetArgs::default(), false),
            (tuned, true),
            (auto, false),
            (scaling, false),
        ]
    }

    /// A hunt's folder is found again by its plan key: the key of given
    /// flags must not change, or rerunning the command (or `resume`)
    /// starts the hunt over instead of replaying its journal.
    #[test]
    fn the_plan_key_of_given_flags_stays_what_it_was() {
        let cases = pinned_flags();
        let names: Vec<String> = cases.iter().map(|(a, f)| folder_of(a, *f)).collect();
        assert_eq!(
            names,
            [
                "aaaaaaaa-bbbbbbbb-c1-0ef477d2",
                "aaaaaaaa-bbbbbbbb-c128-68ce06e0",
                "aaaaaaaa-bbbbbbbb-c1-5bf20a58",
                "aaaaaaaa-bbbbbbbb-c16-c0d4f547",
            ]
        );
        let mut tuned = cases[1].0.clone();
        tuned.lab.work_dir = Some("/elsewhere".into());
        assert_eq!(folder_of(&tuned, true), names[1], "paths are not the plan");
        // The commits a round measures are kept, but not in the key.
        let round = TargetArgs {
            candidates: Some(3),
            ..TargetArgs::default()
        };
        assert_eq!(folder_of(&round, false), names[0]);
    }
}
