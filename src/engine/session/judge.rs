//! A judgement's session: one commit measured against a hunt's
//! endpoints, on the hosts the hunt measured on (or those given), each
//! run judged against its own host's levels.

use super::Plan;
use crate::engine::judge::{HuntRuns, Judgement, judge};
use crate::error::UsageError;
use crate::journal::Journal;
use crate::lab::held::HostsWanted;
use crate::model::Commit;
use crate::profile::Profile;
use crate::workspace::{HuntDir, WorkDir};
use anyhow::Context;
use std::path::Path;

/// A commit judged, and where it was measured when not here.
pub struct Judged {
    pub judgement: Judgement,
    /// The hosts that measured, when not this machine.
    pub measured_on: Option<String>,
}

/// The hunt to judge against (see [`find_hunt`]), refused when it has
/// too few runs of an endpoint to judge by.
pub fn hunt_to_judge(
    work: &WorkDir,
    (want_good, want_bad): (&Option<String>, &Option<String>),
    clients: Option<u32>,
) -> anyhow::Result<(HuntDir, HuntRuns)> {
    let (hunt_dir, hunt) = find_hunt(work, want_good, want_bad, clients)?;
    if hunt.references().is_empty() {
        return Err(UsageError(format!(
            "the hunt in {} has fewer than two runs of an endpoint: let it run longer",
            hunt_dir.dir().display()
        ))
        .into());
    }
    Ok((hunt_dir, hunt))
}

/// Measures `commit` as `plan` says against the runs of `hunt`, on the
/// hosts `hosts` asks for.
pub fn run(
    plan: &Plan,
    commit: &Commit,
    (hunt_dir, hunt): (&HuntDir, &HuntRuns),
    hosts: &HostsWanted,
) -> anyhow::Result<Judged> {
    let references = hunt.references();
    let plan = &measured_as_the_hunt(plan, hunt)?;
    let _lock = plan.work.create_and_lock()?;
    crate::proc::install_signal_handlers().context("cannot install the signal handlers")?;
    let held = crate::lab::held::take(
        hosts,
        &plan.profile,
        (plan.work.root(), &hunt_dir.name, "judgement"),
        crate::progress::for_stderr().as_mut(),
    )?;
    let mut lab = crate::lab::open::open(
        &plan.lab_spec(),
        &crate::machine::steady::Watch::default(),
        &hunt_dir.judge_runs(),
        held.as_ref().map(|h| (h, "judge-")),
    )?;
    check_hosts(&lab.hosts(), &references)?;
    let judgement = judge(
        lab.as_mut(),
        commit,
        &references,
        (&plan.config.decision, hunt.measure),
        (plan.config.clients, hunt.last_run, hunt.seconds),
    )?;
    Ok(Judged {
        judgement,
        measured_on: held.as_ref().map(|h| h.describe()),
    })
}

/// `plan`, measuring as the hunt did: a commit is judged against the
/// hunt's counts by counts of the same counter (the lab refuses another),
/// against its tps by tps. Asked to count against a hunt on tps, it
/// refuses: there are no counts to judge by.
fn measured_as_the_hunt(plan: &Plan, hunt: &HuntRuns) -> Result<Plan, UsageError> {
    if !plan.config.measure.is_tps() && hunt.measure.is_tps() {
        return Err(UsageError(
            "the hunt decided on tps, and its journal holds no counts to judge instructions by\n\
             hint: judge with --measure tps (the default), or hunt on counts first \
             (--measure instructions)"
                .into(),
        ));
    }
    let mut plan = plan.clone();
    plan.config.measure = hunt.measure;
    plan.choices.measure = hunt.measure;
    plan.choices.counter = hunt.counter.clone();
    Ok(plan)
}

/// Each run is judged against its own host's levels: the hosts that
/// measure now must be among those the hunt measured on.
fn check_hosts(
    hosts: &[String],
    references: &[(Option<String>, crate::core::decide::Reference)],
) -> anyhow::Result<()> {
    let now: Vec<Option<String>> = if hosts.is_empty() {
        vec![None]
    } else {
        hosts.iter().cloned().map(Some).collect()
    };
    if now.iter().any(|h| references.iter().any(|(r, _)| r == h)) {
        return Ok(());
    }
    let name = |h: &Option<String>| h.clone().unwrap_or_else(|| "this machine".into());
    let names =
        |hs: &mut dyn Iterator<Item = &Option<String>>| hs.map(name).collect::<Vec<_>>().join(", ");
    let then = names(&mut references.iter().map(|(h, _)| h));
    Err(UsageError(format!(
        "the hunt's endpoints were measured on {then}, and a run is judged only against \
         its own host's levels: judge on {} measures where the hunt has none\n\
         hint: measure where the hunt did ({})",
        names(&mut now.iter()),
        if references.iter().any(|(h, _)| h.is_none()) {
            "this machine: drop --hosts/--slurm".to_string()
        } else {
            format!(
                "--hosts {}, or --slurm with the same nodes",
                then.replace(", ", ",")
            )
        }
    ))
    .into())
}

/// Measures with the profile the hunt used, when it was kept: its build
/// and benchmark, and its decision settings unless given as flags.
pub fn use_saved_profile(
    plan: &mut Plan,
    (threshold, max_runs): (Option<f64>, Option<usize>),
    path: &Path,
) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let mut profile: Profile = serde_json::from_str(&text)
        .with_context(|| format!("cannot read the hunt's profile {}", path.display()))?;
    profile
        .reread_setup()
        .map_err(|e| crate::error::UsageError(format!("in the hunt's profile: {e}")))?;
    let decision = &mut plan.config.decision;
    if let (None, Some(t)) = (threshold, profile.hunt.threshold) {
        decision.threshold = t / 100.0;
    }
    if let (None, Some(m)) = (max_runs, profile.hunt.max_runs) {
        decision.max_runs = m.max(decision.min_runs);
    }
    plan.setups = super::decide_setups(&profile, &[plan.config.clients]);
    plan.profile = profile;
    Ok(())
}

/// The newest hunt in `work` with these endpoints and clients (each when
/// given), and its endpoints' runs.
pub fn find_hunt(
    work: &WorkDir,
    want_good: &Option<String>,
    want_bad: &Option<String>,
    clients: Option<u32>,
) -> anyhow::Result<(HuntDir, HuntRuns)> {
    let matches = |w: &Option<String>, id: &str| w.as_deref().is_none_or(|w| w == id);
    for hunt_dir in work.journals()? {
        let Some(hunt) = HuntRuns::from_events(&Journal::load(&hunt_dir.journal())?) else {
            continue;
        };
        let same_clients = clients.is_none() || hunt.clients == clients;
        if matches(want_good, &hunt.good) && matches(want_bad, &hunt.bad) && same_clients {
            return Ok((hunt_dir, hunt));
        }
    }
    let filtered = want_good.is_some() || want_bad.is_some() || clients.is_some();
    Err(UsageError(format!(
        "no hunt{} in {}: run a hunt first (pgbisect --good A --bad B ...)",
        if filtered {
            " with these --good/--bad/--clients"
        } else {
            ""
        },
        work.hunts_display()
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::Reference;

    fn reference() -> Reference {
        Reference {
            good_log_level: 7.0,
            good_runs: 3,
            bad_log_level: 6.8,
            bad_runs: 3,
            log_sigma: 0.01,
        }
    }

    #[test]
    fn runs_are_made_only_where_the_hunt_has_levels() {
        let on = |names: &[&str]| -> Vec<(Option<String>, Reference)> {
            names
                .iter()
                .map(|n| (Some(n.to_string()), reference()))
                .collect()
        };
        let hunt_hosts = on(&["a", "b"]);
        check_hosts(&["b".into(), "c".into()], &hunt_hosts).unwrap();
        let err = check_hosts(&[], &hunt_hosts).unwrap_err().to_string();
        assert!(err.contains("measured on a, b"), "{err}");
        assert!(err.contains("--hosts a,b"), "{err}");
        let here = vec![(None, reference())];
        check_hosts(&[], &here).unwrap();
        let err = check_hosts(&["a".into()], &here).unwrap_err().to_string();
        assert!(err.contains("drop --hosts/--slurm"), "{err}");
    }
}

#[cfg(test)]
mod measure_tests {
    use super::*;
    use crate::core::counts::Measure;
    use crate::core::hunt_config::HuntConfig;

    /// `--measure auto` (and the default) leaves the plan on tps; a
    /// judgement then measures as its hunt decided, counts included: the
    /// choice was made at the hunt's endpoints, and the levels it judges
    /// against are of that measure only.
    #[test]
    fn a_judgement_measures_as_the_hunt_decided() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::for_tests(Profile::default(), HuntConfig::default(), dir.path());
        let hunt = HuntRuns {
            good: "a".into(),
            bad: "b".into(),
            clients: None,
            good_tps: vec![],
            bad_tps: vec![],
            good_hosts: vec![],
            bad_hosts: vec![],
            last_run: 0,
            measure: Measure::Instructions,
            counter: Some("cachegrind (valgrind-3.19.0)".into()),
            seconds: None,
        };
        let judged = measured_as_the_hunt(&plan, &hunt).unwrap();
        assert_eq!(judged.config.measure, Measure::Instructions);
        assert_eq!(judged.choices.counter, hunt.counter);
        let on_tps = HuntRuns {
            measure: Measure::Tps,
            counter: None,
            ..hunt
        };
        let mut counting = plan.clone();
        counting.config.measure = Measure::Instructions;
        let err = measured_as_the_hunt(&counting, &on_tps).unwrap_err();
        assert!(err.to_string().contains("--measure tps"), "{err}");
    }
}
