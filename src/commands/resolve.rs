//! The values a flag and a profile can both give, each read here and
//! nowhere else: the flag when given, else what the hunt being judged ran
//! with, else the profile's, else pgbisect's default.
//!
//! The profile is the workload a user wrote down once; the flags only
//! override it (docs/src/profiles.md). When each command read these values
//! its own way, `compare` measured its own client counts whatever the
//! profile listed: every command now asks here. Of the flags a profile
//! can give, `--pgbench` and `--run-as` go to the lab as given and are
//! weighed against the profile where the lab opens (`--run-as` is checked
//! here first); `--hosts` where the hosts are chosen; a judgement's
//! threshold and run cap also against the hunt's kept profile, when it
//! measures with that one. The work dir, the time budget and `--runs` are flags
//! only: no profile sets them.

use crate::core::counts::MeasureChoice;
use crate::core::decide::DecisionConfig;
use crate::core::posterior::Search;
use crate::error::UsageError;
use crate::profile::{Profile, RunLength};

/// The client counts `compare` measures when neither `--clients` nor
/// the profile lists any: from one client to many, for the whole curve.
pub const COMPARE_CLIENTS: [u32; 6] = [1, 8, 16, 32, 64, 128];

/// The threshold in percent without a flag or a profile's.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// The profile's client counts, as listed (none when it lists none).
fn listed(profile: &Profile) -> Vec<u32> {
    let clients = profile.benchmark.clients.as_ref();
    clients.map(|c| c.to_vec()).unwrap_or_default()
}

/// Client counts measured side by side (`compare`, `watch`): `--clients`,
/// else the profile's, else `default`; a usage error for a count of 0.
pub(super) fn client_counts(
    flag: &[u32],
    profile: &Profile,
    default: &[u32],
) -> anyhow::Result<Vec<u32>> {
    let counts = match (flag, listed(profile)) {
        ([], from_profile) if !from_profile.is_empty() => from_profile,
        ([], _) => default.to_vec(),
        (given, _) => given.to_vec(),
    };
    if counts.contains(&0) {
        return Err(
            UsageError("--clients needs client counts of at least 1, e.g. 1,8,64".into()).into(),
        );
    }
    Ok(counts)
}

/// The one client count a hunt or a judgement decides on: `--clients`,
/// else the hunt's being judged (`judged`), else the profile's only one,
/// else 1. A profile listing several needs the flag.
pub(super) fn one_client_count(
    flag: Option<u32>,
    judged: Option<u32>,
    profile: &Profile,
) -> anyhow::Result<u32> {
    let listed = listed(profile);
    let given = flag.or(judged);
    if given.is_none() && listed.len() > 1 {
        let list: Vec<String> = listed.iter().map(u32::to_string).collect();
        return Err(UsageError(format!(
            "the profile gives clients = [{}], but a hunt decides on one client count: \
             give --clients N; to measure them all side by side, use \
             `pgbisect compare A B --clients {}`",
            list.join(", "),
            list.join(",")
        ))
        .into());
    }
    let clients = given.or(listed.first().copied()).unwrap_or(1);
    if clients == 0 {
        return Err(UsageError("--clients must be at least 1".into()).into());
    }
    Ok(clients)
}

/// The smallest drop that counts, in percent: `--threshold`, else the
/// profile's, else 5.
pub(super) fn threshold_pct(flag: Option<f64>, profile: &Profile) -> anyhow::Result<f64> {
    let pct = flag
        .or(profile.hunt.threshold)
        .unwrap_or(DEFAULT_THRESHOLD_PCT);
    if !(pct > 0.0 && pct < 100.0) {
        return Err(UsageError(format!(
            "--threshold {pct}: give a percentage between 0 and 100, e.g. 5"
        ))
        .into());
    }
    Ok(pct)
}

/// The decision's bounds: the threshold, and the run cap (`--max-runs`,
/// else the profile's, else the default), which must allow the runs a
/// decision needs.
pub(super) fn decision(
    (threshold, max_runs): (Option<f64>, Option<usize>),
    profile: &Profile,
) -> anyhow::Result<DecisionConfig> {
    let mut decision = DecisionConfig {
        threshold: threshold_pct(threshold, profile)? / 100.0,
        ..DecisionConfig::default()
    };
    if let Some(m) = max_runs.or(profile.hunt.max_runs) {
        if m < decision.min_runs {
            return Err(UsageError(format!(
                "--max-runs {m}: at least {} runs are needed to decide anything",
                decision.min_runs
            ))
            .into());
        }
        decision.max_runs = m;
    }
    Ok(decision)
}

/// How a hunt searches: `--search`, else the profile's, else posterior.
pub(super) fn search(flag: Option<Search>, profile: &Profile) -> Search {
    flag.or(profile.hunt.search).unwrap_or_default()
}

/// Whether a hunt chooses its runs' length from the noise at its
/// endpoints: `--run-length`, else the profile's, else fixed.
pub(super) fn chooses_run_length(flag: Option<RunLength>, profile: &Profile) -> bool {
    flag.or(profile.benchmark.run_length) == Some(RunLength::Auto)
}

/// Whether a hunt stops at its first culprit: `--first-only` (a switch
/// that can only say yes), else the profile's, else no.
pub(super) fn first_only(flag: bool, profile: &Profile) -> bool {
    flag || profile.hunt.first_only.unwrap_or(false)
}

/// The user PostgreSQL runs as: `--run-as`, else the profile's.
pub(super) fn run_as<'a>(flag: Option<&'a str>, profile: &'a Profile) -> Option<&'a str> {
    flag.or(profile.server.run_as.as_deref())
}

/// What decides (`--measure`): the flag, else the profile's `measure`,
/// else tps.
pub(super) fn measure(flag: Option<MeasureChoice>, profile: &Profile) -> MeasureChoice {
    flag.or(profile.hunt.measure).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(clients: &str) -> Profile {
        let text = format!("[benchmark]\nclients = {clients}\n[hunt]\nthreshold = 7\n");
        Profile::parse(&text, std::path::Path::new("p.toml")).unwrap()
    }

    #[test]
    fn the_flag_overrides_the_profile_which_overrides_the_default() {
        let (many, none) = (listing("[2, 3]"), Profile::default());
        let default = &COMPARE_CLIENTS;
        assert_eq!(client_counts(&[], &many, default).unwrap(), [2, 3]);
        assert_eq!(client_counts(&[4], &many, default).unwrap(), [4]);
        assert_eq!(client_counts(&[], &none, default).unwrap(), COMPARE_CLIENTS);
        let err = client_counts(&[1, 0], &none, default).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert_eq!(one_client_count(None, None, &listing("9")).unwrap(), 9);
        assert_eq!(one_client_count(None, None, &none).unwrap(), 1);
        assert_eq!(one_client_count(Some(5), Some(6), &many).unwrap(), 5);
        assert_eq!(one_client_count(None, Some(6), &many).unwrap(), 6);
        assert!(one_client_count(None, None, &many).is_err());
        assert!(one_client_count(Some(0), None, &none).is_err());
        assert_eq!(threshold_pct(None, &many).unwrap(), 7.0);
        assert_eq!(threshold_pct(Some(2.0), &many).unwrap(), 2.0);
        assert_eq!(threshold_pct(None, &none).unwrap(), 5.0);
        assert!(threshold_pct(Some(100.0), &none).is_err());
    }

    #[test]
    fn the_run_cap_leaves_room_for_a_decision() {
        let none = Profile::default();
        let min = DecisionConfig::default().min_runs;
        assert_eq!(decision((None, Some(min)), &none).unwrap().max_runs, min);
        let err = decision((None, Some(min - 1)), &none).unwrap_err();
        assert!(err.to_string().contains("--max-runs"), "{err}");
        let default = DecisionConfig::default().max_runs;
        assert_eq!(decision((None, None), &none).unwrap().max_runs, default);
    }

    #[test]
    fn a_hunts_search_settings_are_the_flags_else_the_profiles() {
        let text =
            "[benchmark]\nrun-length = \"auto\"\n[hunt]\nsearch = \"bisect\"\nfirst-only = true\n";
        let set = Profile::parse(text, std::path::Path::new("p.toml")).unwrap();
        let none = Profile::default();
        assert_eq!(search(None, &set), Search::Bisect);
        assert_eq!(search(Some(Search::Posterior), &set), Search::Posterior);
        assert_eq!(search(None, &none), Search::Posterior);
        assert!(chooses_run_length(None, &set));
        assert!(!chooses_run_length(Some(RunLength::Fixed), &set));
        assert!(!chooses_run_length(None, &none));
        assert!(first_only(false, &set) && first_only(true, &none) && !first_only(false, &none));
    }
}
