//! The command that hunts a range again, spelled once from the hunt's
//! plan: every hunt's report ends with it, a person's and the watcher's
//! alike, so that whoever reads a report can paste it in a PostgreSQL
//! checkout and get the same hunt. It keeps what shapes the hunt (the
//! workload, the client count, the decisions, the search, the budget and
//! the hosts), not where files go, who runs the server or who is told; a
//! profile stays as it was named: a bundled name as that name, a file as
//! its absolute path, so the command works from any folder.

use super::resolved::{HuntPlan, as_named};
use crate::model::{NAMED_SHA, sha_prefix};

/// The command line that hunts `hunt`'s range again, its endpoints as
/// SHAs (a branch name moves on).
pub fn again(hunt: &HuntPlan) -> Vec<String> {
    let (good, bad) = (
        sha_prefix(&hunt.plan.good.id, NAMED_SHA),
        sha_prefix(&hunt.plan.bad.id, NAMED_SHA),
    );
    let mut out: Vec<String> = ["pgbisect", "--good", good, "--bad", bad]
        .map(String::from)
        .to_vec();
    for (name, value) in valued_flags(hunt) {
        if let Some(v) = value {
            out.extend([format!("--{name}"), v]);
        }
    }
    for (on, name) in [
        (hunt.flags.first_only, "--first-only"),
        (hunt.why_runs.is_none(), "--no-why"),
        (hunt.hosts.slurm, "--slurm"),
    ] {
        if on {
            out.push(name.to_string());
        }
    }
    out
}

/// `--measure` of the hunt: `auto` when it chose, what it counted by
/// otherwise; `None` for tps, the default.
fn measure_flag(hunt: &HuntPlan) -> Option<String> {
    let measure = hunt.plan.choices.measure;
    if hunt.plan.auto_counter.is_some() {
        Some("auto".to_string())
    } else {
        (!measure.is_tps()).then(|| measure.name().to_string())
    }
}

/// The flags with a value that change what a hunt measures, and their
/// values (`None`: not given, or the default).
fn valued_flags(hunt: &HuntPlan) -> [(&'static str, Option<String>); 13] {
    let given = &hunt.shaping;
    let named = |v: Option<clap::builder::PossibleValue>| v.map(|p| p.get_name().to_string());
    [
        ("profile", hunt.profile_name.as_deref().map(as_named)),
        ("pgbench", hunt.plan.choices.pgbench.clone()),
        ("clients", given.clients.map(|c| c.to_string())),
        ("threshold", hunt.flags.threshold.map(|p| format!("{p}%"))),
        ("max-runs", hunt.flags.max_runs.map(|n| n.to_string())),
        (
            "search",
            given
                .search
                .and_then(|s| named(clap::ValueEnum::to_possible_value(&s))),
        ),
        ("candidates", given.candidates.map(|k| k.to_string())),
        ("measure", measure_flag(hunt)),
        (
            "run-length",
            given
                .run_length
                .and_then(|r| named(clap::ValueEnum::to_possible_value(&r))),
        ),
        ("time-budget", hunt.time.budget.clone()),
        ("deadline", hunt.time.deadline.clone()),
        (
            "hosts",
            (!hunt.hosts.hosts.is_empty()).then(|| hunt.hosts.hosts.join(",")),
        ),
        (
            "why-runs",
            hunt.why_runs
                .filter(|&n| n != crate::engine::why::DEFAULT_RUNS)
                .map(|n| n.to_string()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::hunt::{HuntConfig, Search};
    use crate::engine::session::Plan;
    use crate::engine::session::resolved::Shaping;
    use crate::model::Commit;
    use crate::profile::Profile;
    use crate::workspace::PlanFlags;
    use std::path::Path;

    fn hunt(good: &str, bad: &str) -> HuntPlan {
        let dir = Path::new(".");
        let mut plan = Plan::for_tests(Profile::default(), HuntConfig::default(), dir);
        plan.good = Commit::bare(good.to_string());
        plan.bad = Commit::bare(bad.to_string());
        let mut hunt = HuntPlan::for_tests(plan, PlanFlags::default());
        hunt.why_runs = Some(crate::engine::why::DEFAULT_RUNS);
        hunt
    }

    #[test]
    fn the_command_again_keeps_what_shapes_the_hunt_and_nothing_else() {
        let mut h = hunt(&format!("006a283a3c39{}", "0".repeat(28)), "60bbffae1c7e");
        h.profile_name = Some("ro-128".into());
        h.shaping = Shaping {
            clients: Some(128),
            search: Some(Search::Bisect),
            ..Shaping::default()
        };
        h.flags = PlanFlags {
            threshold: Some(2.5),
            max_runs: None,
            first_only: true,
        };
        h.time.budget = Some("8h".into());
        h.outputs.json = Some("/tmp/r.json".into());
        h.outputs.mail_to = vec!["perf@example.org".into()];
        assert_eq!(
            again(&h),
            [
                "pgbisect",
                "--good",
                "006a283a3c39",
                "--bad",
                "60bbffae1c7e",
                "--profile",
                "ro-128",
                "--clients",
                "128",
                "--threshold",
                "2.5%",
                "--search",
                "bisect",
                "--time-budget",
                "8h",
                "--first-only",
            ]
        );
        assert_eq!(
            again(&hunt("a", "b")),
            ["pgbisect", "--good", "a", "--bad", "b"]
        );
        let mut no_why = hunt("a", "b");
        no_why.why_runs = None;
        assert_eq!(again(&no_why).last().map(String::as_str), Some("--no-why"));
    }

    #[test]
    fn a_profile_file_is_named_by_its_absolute_path_and_a_bundled_one_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nightly.toml");
        std::fs::write(&file, "").unwrap();
        let named = as_named(file.to_str().unwrap());
        assert!(Path::new(&named).is_absolute(), "{named}");
        assert_eq!(
            std::fs::canonicalize(&named).unwrap(),
            file.canonicalize().unwrap()
        );
        assert_eq!(as_named("smoke"), "smoke");
        let mut h = hunt("a", "b");
        h.profile_name = Some(file.to_string_lossy().into_owned());
        let argv = again(&h);
        let at = argv.iter().position(|a| a == "--profile").unwrap();
        assert_eq!(argv[at + 1], named);
    }
}
