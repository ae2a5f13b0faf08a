//! A hunt's folder name, from what it hunts and how.
//!
//! Running the same command again must find the same folder, so that its
//! journal resumes the hunt; a hunt with other settings must get a folder
//! of its own. The name is `<good>-<bad>-c<clients>-<digest>`, the digest
//! a hash of the plan (the hunt's settings and the resolved profile) as
//! serde writes it, with null, false and empty values left out: adding a
//! setting whose default is one of those keeps every existing hunt's name.
//!
//! Releases before this one hashed the plan's `Debug` text instead, which
//! changes whenever a field is added. Their folders are found by what they
//! keep: the same endpoints and clients in the name, and the same resolved
//! profile and hunt flags in `profile.json` and `command.json`.

use super::HuntDir;
use crate::core::counts::FIT_RULE;
use crate::core::fingerprint::fingerprint;
use crate::core::hunt_config::HuntConfig;
use crate::core::posterior::Search;
use crate::model::Commit;
use crate::profile::Profile;
use anyhow::Context;
use serde_json::{Map, Value};

/// What names a hunt's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanKey {
    prefix: String,
    digest: String,
    profile: Value,
    flags: Value,
    /// Earlier releases searched candidate by candidate only.
    earlier_search: bool,
}

/// The flags of a hunt that change its plan beyond the profile, as they
/// are saved in `command.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlanFlags {
    pub threshold: Option<f64>,
    pub max_runs: Option<usize>,
    pub first_only: bool,
}

impl PlanKey {
    /// The key of a hunt of `good`..`bad` with `config`, `profile` and
    /// `flags`, counted by `counter` when it counts instructions: a hunt
    /// on counts is one of its own, and so is one whose counter is
    /// another release of valgrind (their counts differ by more than the
    /// noise a hunt on counts decides within), or whose runs were fitted
    /// by another rule ([`FIT_RULE`]).
    pub fn new(
        (good, bad): (&Commit, &Commit),
        (config, counter): (&HuntConfig, Option<&str>),
        profile: &Profile,
        flags: PlanFlags,
    ) -> anyhow::Result<PlanKey> {
        let profile =
            canonical(serde_json::to_value(profile).context("cannot encode the profile")?);
        // The commits a round measures change which runs are made, not
        // what is asked: not part of the key.
        let asked = HuntConfig {
            candidates: None,
            ..*config
        };
        let settings = canonical(serde_json::to_value(asked).context("cannot encode the plan")?);
        let mut parts = vec![settings, profile.clone()];
        if let Some(counter) = counter {
            parts.extend([Value::String(counter.to_string()), Value::from(FIT_RULE)]);
        }
        let text = serde_json::to_string(&Value::Array(parts)).context("cannot encode the plan")?;
        let flags = canonical(serde_json::json!({
            "threshold": flags.threshold,
            "max_runs": flags.max_runs,
            "first_only": flags.first_only,
        }));
        Ok(PlanKey {
            prefix: format!("{}-{}-c{}-", good.short(), bad.short(), config.clients),
            digest: fingerprint(&text)[..8].to_string(),
            profile,
            flags,
            // Earlier releases neither counted nor searched otherwise.
            earlier_search: config.search == Search::Bisect && config.measure.is_tps(),
        })
    }

    /// The folder name of a hunt with this plan.
    pub fn folder_name(&self) -> String {
        format!("{}{}", self.prefix, self.digest)
    }

    /// Whether `hunt`, made by an earlier release, hunted this plan. Those
    /// releases had only the candidate-by-candidate search: a plan with
    /// another search starts a hunt of its own rather than replay a
    /// journal made with that one.
    pub(super) fn matches_saved(&self, hunt: &HuntDir) -> bool {
        if !self.earlier_search || !hunt.name.starts_with(&self.prefix) {
            return false;
        }
        let read = |path: std::path::PathBuf| -> Option<Value> {
            serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
        };
        let (Some(profile), Some(command)) = (read(hunt.profile()), read(hunt.command())) else {
            return false;
        };
        // A resolved plan keeps them in `flags`; earlier releases' flags
        // are the command's own members.
        let given = command.get("flags").unwrap_or(&command);
        let flags = canonical(serde_json::json!({
            "threshold": given.get("threshold"),
            "max_runs": given.get("max_runs"),
            "first_only": given.get("first_only"),
        }));
        canonical(profile) == self.profile && flags == self.flags
    }
}

/// `value` without null, false and empty members (at any depth), so that
/// a new setting with such a default changes no key.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, canonical(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counts::Measure;

    fn key(config: HuntConfig, profile: &Profile, flags: PlanFlags) -> PlanKey {
        let (good, bad) = (Commit::bare("a".repeat(40)), Commit::bare("b".repeat(40)));
        PlanKey::new((&good, &bad), (&config, None), profile, flags).unwrap()
    }

    #[test]
    fn the_name_is_stable_and_says_what_is_hunted() {
        let config = HuntConfig {
            clients: 128,
            ..HuntConfig::default()
        };
        let k = key(config, &Profile::default(), PlanFlags::default());
        assert_eq!(k, key(config, &Profile::default(), PlanFlags::default()));
        assert!(
            k.folder_name().starts_with("aaaaaaaa-bbbbbbbb-c128-"),
            "{}",
            k.folder_name()
        );
        assert_eq!(k.folder_name().len(), "aaaaaaaa-bbbbbbbb-c128-".len() + 8);
        let other = HuntConfig {
            first_only: true,
            ..config
        };
        assert_ne!(
            k.folder_name(),
            key(other, &Profile::default(), PlanFlags::default()).folder_name()
        );
    }

    /// Hunts started by the previous release, whose profiles had no
    /// `[placement]` section, keep their folder.
    #[test]
    fn the_default_profile_keeps_the_key_of_the_previous_release() {
        let bisect = HuntConfig {
            search: Search::Bisect,
            ..HuntConfig::default()
        };
        let k = key(bisect, &Profile::default(), PlanFlags::default());
        assert_eq!(k.folder_name(), "aaaaaaaa-bbbbbbbb-c1-d05b4b5f");
        let parsed: Profile = toml::from_str("").unwrap();
        assert_eq!(
            key(bisect, &parsed, PlanFlags::default()).folder_name(),
            "aaaaaaaa-bbbbbbbb-c1-d05b4b5f"
        );
        // The posterior search, new in this release, is a plan of its own.
        let posterior = key(HuntConfig::default(), &parsed, PlanFlags::default());
        assert_ne!(posterior.folder_name(), k.folder_name());
        assert!(!posterior.earlier_search && k.earlier_search);
        let written = serde_json::to_value(&parsed).unwrap();
        assert!(written.get("placement").is_none(), "{written}");
    }

    /// A hunt on counts never resumes a hunt on tps of the same range,
    /// nor one counted by another counter; a hunt on tps keeps its key.
    #[test]
    fn a_hunt_on_counts_and_its_counter_are_in_the_key() {
        let (good, bad) = (Commit::bare("a".repeat(40)), Commit::bare("b".repeat(40)));
        let profile = Profile::default();
        let name = |config: HuntConfig, counter: Option<&str>| {
            let flags = PlanFlags::default();
            let k = PlanKey::new((&good, &bad), (&config, counter), &profile, flags).unwrap();
            (k.folder_name(), k.earlier_search)
        };
        let tps = HuntConfig {
            search: Search::Bisect,
            ..HuntConfig::default()
        };
        assert_eq!(
            name(tps, None),
            ("aaaaaaaa-bbbbbbbb-c1-d05b4b5f".to_string(), true)
        );
        let counted = HuntConfig {
            measure: Measure::Instructions,
            ..tps
        };
        let v19 = name(counted, Some("cachegrind (valgrind-3.19.0)"));
        let v22 = name(counted, Some("cachegrind (valgrind-3.22.0)"));
        assert_ne!(v19.0, name(tps, None).0);
        assert_ne!(v19.0, v22.0);
        assert_ne!(v19.0, name(counted, None).0);
        // No earlier release counted: none of their folders is this hunt's.
        assert!(!v19.1 && !name(counted, None).1);
    }

    #[test]
    fn new_settings_at_their_empty_default_keep_the_key() {
        let plain = serde_json::json!({"a": 1, "b": {"c": "x"}});
        let grown = serde_json::json!({"a": 1, "b": {"c": "x", "d": null, "e": []}, "f": false});
        assert_eq!(canonical(plain), canonical(grown));
        assert_ne!(
            canonical(serde_json::json!({"a": 1})),
            canonical(serde_json::json!({"a": 2}))
        );
    }

    #[test]
    fn a_folder_of_an_earlier_release_is_recognised_by_what_it_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let profile = Profile::default();
        let flags = PlanFlags {
            threshold: Some(7.0),
            ..PlanFlags::default()
        };
        let bisect = HuntConfig {
            search: Search::Bisect,
            ..HuntConfig::default()
        };
        let k = key(bisect, &profile, flags);
        let old = HuntDir::at(tmp.path().join("aaaaaaaa-bbbbbbbb-c1-0123abcd"));
        old.create().unwrap();
        std::fs::write(old.profile(), serde_json::to_string(&profile).unwrap()).unwrap();
        std::fs::write(
            old.command(),
            r#"{"good":"v1","bad":"v2","threshold":7.0,"first_only":false}"#,
        )
        .unwrap();
        assert!(k.matches_saved(&old));
        // Resumed by this release, the folder keeps its plan, the flags
        // in `flags`.
        std::fs::write(
            old.command(),
            r#"{"layout":2,"flags":{"threshold":7.0,"max_runs":null,"first_only":false}}"#,
        )
        .unwrap();
        assert!(k.matches_saved(&old));
        // Earlier releases searched candidate by candidate only.
        assert!(!key(HuntConfig::default(), &profile, flags).matches_saved(&old));
        let other_flags = PlanFlags {
            threshold: Some(5.0),
            ..flags
        };
        assert!(!key(bisect, &profile, other_flags).matches_saved(&old));
        let other_clients = HuntConfig {
            clients: 8,
            ..bisect
        };
        assert!(!key(other_clients, &profile, flags).matches_saved(&old));
    }
}
