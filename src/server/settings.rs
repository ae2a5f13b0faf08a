//! A profile's server settings, meaning the same on every version a hunt
//! builds.
//!
//! A hunt from 2015 to today starts servers ten years apart, and settings
//! were renamed, changed unit or went away between them: a 9.5 server
//! refuses `wal_keep_size`, a server of 10 reads `max_wal_size = 1024` as
//! 1 GB where 9.6 read 16 GB. This module knows those histories (the names
//! each version has, in `setting_names.txt`, read from PostgreSQL's own
//! GUC tables) and turns a profile's settings into the ones one server
//! takes, with a note for every change, so that a report says what each
//! server really ran with. Everything here is pure: the caller says which
//! names a built server knows (`postgres --describe-config`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::OnceLock;

/// A PostgreSQL major version, as an ordinal that sorts: 9.5 is 95, 10 is
/// 100, 17 is 170.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Major(u32);

impl Major {
    /// `9.5`, `9.5devel`, `9.6.24`, `10devel`, `13beta2`, `16.2`, `17rc1`.
    pub fn parse(text: &str) -> Option<Major> {
        let text = text.trim();
        let end = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let mut parts = text[..end].split('.').filter(|p| !p.is_empty());
        let first: u32 = parts.next()?.parse().ok()?;
        if first >= 10 {
            return Some(Major(first * 10));
        }
        let second: u32 = parts.next()?.parse().ok()?;
        (second < 10).then_some(Major(first * 10 + second))
    }

    /// The major version a source tree says it is: `AC_INIT([PostgreSQL],
    /// [9.6devel], ...)` in `configure.ac` (`configure.in` before 12), or
    /// `version: '17devel'` in `meson.build`.
    pub fn from_source(build_file: &str) -> Option<Major> {
        build_file.lines().find_map(|line| {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("AC_INIT(") {
                let version = rest.split(',').nth(1)?;
                return Major::parse(version.trim().trim_matches(['[', ']', ' ']));
            }
            let rest = line.strip_prefix("version:")?;
            Major::parse(rest.trim().trim_matches(['\'', ',', ' ']))
        })
    }

    /// The version before this one (9.6 before 10).
    fn previous(self) -> Major {
        match self.0 {
            100 => Major(96),
            n if n > 100 => Major(n - 10),
            n => Major(n.saturating_sub(1)),
        }
    }

    /// The version after this one (10 after 9.6).
    fn next(self) -> Major {
        match self.0 {
            96 => Major(100),
            n if n >= 100 => Major(n + 10),
            n => Major(n + 1),
        }
    }
}

impl fmt::Display for Major {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 100 {
            write!(f, "{}", self.0 / 10)
        } else {
            write!(f, "{}.{}", self.0 / 10, self.0 % 10)
        }
    }
}

/// The versions of master's line that had a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Life {
    pub first: Major,
    /// `None`: master still has it.
    pub last: Option<Major>,
}

impl Life {
    /// Whether master's line had the setting in version `v`.
    pub fn includes(&self, v: Major) -> bool {
        self.overlaps(v, v)
    }

    fn overlaps(&self, from: Major, to: Major) -> bool {
        self.first <= to && self.last.is_none_or(|last| last >= from)
    }
}

impl fmt::Display for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.last {
            None => write!(f, "PostgreSQL {} and later", self.first),
            Some(last) if last == self.first => write!(f, "PostgreSQL {last} only"),
            Some(last) => write!(f, "PostgreSQL {} to {last}", self.first),
        }
    }
}

/// Every setting name master's line has had, with its life.
pub fn known_names() -> &'static BTreeMap<String, Life> {
    static NAMES: OnceLock<BTreeMap<String, Life>> = OnceLock::new();
    NAMES.get_or_init(|| parse_names(include_str!("setting_names.txt")))
}

fn parse_names(text: &str) -> BTreeMap<String, Life> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let first = Major::parse(words.next()?)?;
            let last = match words.next()? {
                "-" => None,
                v => Some(Major::parse(v)?),
            };
            Some((name.to_string(), Life { first, last }))
        })
        .collect()
}

/// How a value carries over between a setting and its older name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convert {
    /// The same value means the same thing.
    Same,
    /// The newer setting is a size in MB, the older a count of WAL segments
    /// worth this many MB each.
    SegmentsOf(u64),
}

/// A setting and the name it had before, on older servers.
struct Renamed {
    newer: &'static str,
    older: &'static str,
    convert: Convert,
    /// Where the conversion comes from, for notes.
    source: &'static str,
}

/// Renames a benchmark profile may meet between 9.5 and master (checked
/// in PostgreSQL's history and release notes).
const RENAMED: &[Renamed] = &[
    Renamed {
        newer: "max_wal_size",
        older: "checkpoint_segments",
        // 9.5 release notes: "max_wal_size = (3 * checkpoint_segments) * 16MB".
        convert: Convert::SegmentsOf(3 * 16),
        source: "9.5 release notes: max_wal_size = (3 * checkpoint_segments) * 16MB",
    },
    Renamed {
        newer: "wal_keep_size",
        older: "wal_keep_segments",
        convert: Convert::SegmentsOf(16),
        source: "13 release notes: wal_keep_size = wal_keep_segments * wal_segment_size (16MB)",
    },
    Renamed {
        newer: "min_parallel_table_scan_size",
        older: "min_parallel_relation_size",
        convert: Convert::Same,
        source: "renamed in 10",
    },
    Renamed {
        newer: "max_parallel_workers_per_gather",
        older: "max_parallel_degree",
        convert: Convert::Same,
        source: "renamed during 9.6 development",
    },
    Renamed {
        newer: "debug_parallel_query",
        older: "force_parallel_mode",
        convert: Convert::Same,
        source: "renamed in 16",
    },
    Renamed {
        newer: "ssl_groups",
        older: "ssl_ecdh_curve",
        convert: Convert::Same,
        source: "renamed in 18",
    },
    Renamed {
        newer: "gin_pending_list_limit",
        older: "pending_list_cleanup_size",
        convert: Convert::Same,
        source: "renamed during 9.5 development",
    },
];

/// Sizes whose plain numbers changed unit: `max_wal_size = 64` is 64 WAL
/// segments (1 GB) on 9.5 and 9.6 and 64 MB from 10 on. A plain number
/// here means MB (today's meaning) and is passed with its unit.
const SIZES_IN_MB: &[&str] = &["max_wal_size", "min_wal_size", "wal_keep_size"];

/// A profile's setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error(
        "`{name}` is not a PostgreSQL setting of any version from 9.4 to today{}; \
         fix the name in the profile's [server.settings] (settings of extensions have a dot: `ext.name`)",
        did_you_mean(suggestions)
    )]
    Unknown {
        name: String,
        suggestions: Vec<String>,
    },
    #[error(
        "`{name}` exists in {life}, but this hunt's commits are PostgreSQL {from} to {to}: \
         no server of the range takes it; remove it from the profile's [server.settings]"
    )]
    OutOfRange {
        name: String,
        life: Life,
        from: Major,
        to: Major,
    },
    #[error(
        "`{name} = {value}` is not a size: give a number of MB or a value with a unit \
         (kB, MB, GB, TB), e.g. `{name} = \"1GB\"`"
    )]
    NotASize { name: String, value: String },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}

/// Checks a profile's settings before anything is built: every name must
/// be a setting of some version (a typo is an error with the names it
/// resembles), and of some version between `from` and `to` (the hunt's
/// endpoints, when their versions are known), under its own or its older
/// or newer name. One version of slack on either side allows for settings
/// back-patched into a release during its beta. Names with a dot belong to
/// extensions and are left to the server.
pub fn check(
    settings: &[(String, String)],
    range: Option<(Major, Major)>,
) -> Result<(), SettingError> {
    for (name, value) in settings {
        if name.contains('.') {
            continue;
        }
        let lower = name.to_ascii_lowercase();
        let lives = lives_of(&lower);
        if lives.is_empty() {
            return Err(SettingError::Unknown {
                name: name.clone(),
                suggestions: suggestions(&lower),
            });
        }
        if needs_size(&lower) && size_in_mb(value).is_none() {
            return Err(SettingError::NotASize {
                name: name.clone(),
                value: value.clone(),
            });
        }
        if let Some((from, to)) = range {
            let (from, to) = (from.min(to).previous(), from.max(to).next());
            if !lives.iter().any(|life| life.overlaps(from, to)) {
                return Err(SettingError::OutOfRange {
                    name: name.clone(),
                    life: lives[0],
                    from: from.next(),
                    to: to.previous(),
                });
            }
        }
    }
    Ok(())
}

/// The lives of a name and of its other names (its own first).
fn lives_of(name: &str) -> Vec<Life> {
    let names = known_names();
    std::iter::once(name)
        .chain(RENAMED.iter().filter_map(|r| {
            if r.newer == name {
                Some(r.older)
            } else if r.older == name {
                Some(r.newer)
            } else {
                None
            }
        }))
        .filter_map(|n| names.get(n).copied())
        .collect()
}

fn needs_size(name: &str) -> bool {
    SIZES_IN_MB.contains(&name)
        || RENAMED
            .iter()
            .any(|r| r.newer == name && r.convert != Convert::Same)
}

/// Known names within two edits of `name`, or that contain it.
fn suggestions(name: &str) -> Vec<String> {
    let mut close: Vec<(usize, &String)> = known_names()
        .keys()
        .map(|known| (crate::spelling::edit_distance(name, known), known))
        .filter(|(d, known)| *d <= 2 || (name.len() >= 5 && known.contains(name)))
        .collect();
    close.sort();
    close.into_iter().take(3).map(|(_, n)| n.clone()).collect()
}

/// A size setting's value in MB: `20GB`, `1024MB`, `512kB`, `1TB`, or a
/// plain number of MB. None when it is not a size.
pub fn size_in_mb(value: &str) -> Option<u64> {
    let value = value.trim();
    let digits = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let number: u64 = value[..digits].parse().ok()?;
    let mb = match value[digits..].trim() {
        "" | "MB" => number,
        "kB" => number.div_ceil(1024),
        "GB" => number * 1024,
        "TB" => number * 1024 * 1024,
        _ => return None,
    };
    Some(mb)
}

/// The settings one server runs with, and what was changed for it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    pub settings: Vec<(String, String)>,
    /// One line per setting changed or left out, for progress and reports.
    pub notes: Vec<String>,
}

/// The profile's `settings` for a server that knows the setting names
/// `known` (lower case, as `postgres --describe-config` lists them) and
/// calls itself `version`. A setting the server does not know is given
/// under its other name when it has one (with its value converted), and
/// otherwise left out: it belongs to versions before or after this one,
/// where that behaviour does not exist. A name no version knows is an
/// error.
pub fn for_server(
    settings: &[(String, String)],
    known: &BTreeSet<String>,
    version: &str,
) -> Result<Applied, SettingError> {
    let given: BTreeSet<String> = settings
        .iter()
        .map(|(name, _)| name.to_ascii_lowercase())
        .collect();
    let mut applied = Applied::default();
    for (name, value) in settings {
        let lower = name.to_ascii_lowercase();
        if name.contains('.') || known.contains(&lower) {
            applied
                .settings
                .push((name.clone(), with_unit(&lower, value)));
            continue;
        }
        if let Some((other, converted, source)) = other_name(&lower, value, known) {
            if given.contains(other) {
                applied.notes.push(format!(
                    "{name} = {value}: left out on PostgreSQL {version}, where the profile's {other} applies"
                ));
            } else {
                applied.notes.push(format!(
                    "{name} = {value} is {other} = {converted} on PostgreSQL {version} ({source})"
                ));
                applied.settings.push((other.to_string(), converted));
            }
            continue;
        }
        match known_names().get(&lower) {
            Some(life) => applied.notes.push(format!(
                "{name} = {value}: left out on PostgreSQL {version}, which has no such setting \
                 (it exists in {life})"
            )),
            None => {
                return Err(SettingError::Unknown {
                    name: name.clone(),
                    suggestions: suggestions(&lower),
                });
            }
        }
    }
    Ok(applied)
}

/// `value` with `MB` added when `name` is a size whose plain numbers
/// changed unit between versions.
fn with_unit(name: &str, value: &str) -> String {
    if SIZES_IN_MB.contains(&name) && value.trim().chars().all(|c| c.is_ascii_digit()) {
        format!("{}MB", value.trim())
    } else {
        value.to_string()
    }
}

/// The name `name` has on a server that knows `known`, and the value.
fn other_name(
    name: &str,
    value: &str,
    known: &BTreeSet<String>,
) -> Option<(&'static str, String, &'static str)> {
    RENAMED.iter().find_map(|r| {
        let (other, converted) = if r.newer == name && known.contains(r.older) {
            (r.older, to_older(r.convert, value)?)
        } else if r.older == name && known.contains(r.newer) {
            (r.newer, to_newer(r.convert, value)?)
        } else {
            return None;
        };
        Some((other, converted, r.source))
    })
}

/// A size in MB as a count of segments of `mb` MB each, at least 1.
fn to_older(convert: Convert, value: &str) -> Option<String> {
    match convert {
        Convert::Same => Some(value.to_string()),
        Convert::SegmentsOf(mb) => {
            let size = size_in_mb(value)?;
            Some(((size + mb / 2) / mb).max(1).to_string())
        }
    }
}

/// A count of segments as a size in MB.
fn to_newer(convert: Convert, value: &str) -> Option<String> {
    match convert {
        Convert::Same => Some(value.to_string()),
        Convert::SegmentsOf(mb) => {
            let segments: u64 = value.trim().parse().ok()?;
            Some(format!("{}MB", segments * mb))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::settings as s;

    /// The names a server of `version` knows, from the shipped table.
    fn server(version: &str) -> BTreeSet<String> {
        let v = Major::parse(version).unwrap();
        known_names()
            .iter()
            .filter(|(_, life)| life.includes(v))
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn v(text: &str) -> Major {
        Major::parse(text).unwrap()
    }

    #[test]
    fn versions_parse_and_sort() {
        assert_eq!(v("9.5devel").to_string(), "9.5");
        assert_eq!(v("9.6.24").to_string(), "9.6");
        assert_eq!(v("13beta2").to_string(), "13");
        assert_eq!(v("16.2").to_string(), "16");
        assert!(v("9.6") < v("10devel") && v("10") < v("11"));
        assert_eq!(v("10").previous(), v("9.6"));
        assert_eq!(v("9.6").next(), v("10"));
        assert_eq!(Major::parse("devel"), None);
        assert_eq!(Major::parse("9"), None);
    }

    #[test]
    fn versions_from_configure_and_meson() {
        let configure =
            "dnl comment\nAC_INIT([PostgreSQL], [9.6devel], [pgsql-bugs@postgresql.org])\n";
        assert_eq!(Major::from_source(configure), Some(v("9.6")));
        let meson = "project('postgresql',\n  ['c'],\n  version: '17devel',\n";
        assert_eq!(Major::from_source(meson), Some(v("17")));
        assert_eq!(Major::from_source("nothing here"), None);
    }

    #[test]
    fn the_shipped_table_has_the_known_histories() {
        let names = known_names();
        assert!(names.len() > 400, "{}", names.len());
        let life = |n: &str| names[n].to_string();
        assert_eq!(life("checkpoint_segments"), "PostgreSQL 9.4 to 9.5");
        assert_eq!(life("max_wal_size"), "PostgreSQL 9.5 and later");
        assert_eq!(life("stats_temp_directory"), "PostgreSQL 9.4 to 15");
        assert_eq!(life("vacuum_defer_cleanup_age"), "PostgreSQL 9.4 to 16");
        assert_eq!(life("operator_precedence_warning"), "PostgreSQL 9.5 to 14");
        assert_eq!(life("replacement_sort_tuples"), "PostgreSQL 9.6 to 11");
        assert_eq!(life("sql_inheritance"), "PostgreSQL 9.4 to 10");
        assert_eq!(life("max_parallel_degree"), "PostgreSQL 9.6 only");
        assert_eq!(names["datestyle"].last, None);
    }

    #[test]
    fn checkpoint_segments_becomes_max_wal_size_by_the_release_notes() {
        let applied =
            for_server(&s(&[("checkpoint_segments", "64")]), &server("13"), "13.0").unwrap();
        assert_eq!(applied.settings, s(&[("max_wal_size", "3072MB")]));
        assert!(
            applied.notes[0].contains("max_wal_size = 3072MB"),
            "{:?}",
            applied.notes
        );
        assert!(
            applied.notes[0].contains("release notes"),
            "{:?}",
            applied.notes
        );
    }

    #[test]
    fn max_wal_size_becomes_checkpoint_segments_on_old_servers() {
        let profile = s(&[("max_wal_size", "20GB"), ("min_wal_size", "15GB")]);
        let applied = for_server(&profile, &server("9.4"), "9.5devel").unwrap();
        // 20 GB / (3 * 16 MB) = 426.7
        assert_eq!(applied.settings, s(&[("checkpoint_segments", "427")]));
        assert_eq!(applied.notes.len(), 2);
        assert!(
            applied.notes[1].contains("min_wal_size = 15GB: left out"),
            "{:?}",
            applied.notes
        );
        let tiny = for_server(&s(&[("max_wal_size", "10MB")]), &server("9.4"), "9.4").unwrap();
        assert_eq!(tiny.settings, s(&[("checkpoint_segments", "1")]));
    }

    #[test]
    fn plain_wal_sizes_mean_mb_on_every_version() {
        let profile = s(&[("max_wal_size", "1024"), ("min_wal_size", "80MB")]);
        for version in ["9.5", "9.6", "10", "18"] {
            let applied = for_server(&profile, &server(version), version).unwrap();
            assert_eq!(
                applied.settings,
                s(&[("max_wal_size", "1024MB"), ("min_wal_size", "80MB")]),
                "{version}"
            );
            assert!(applied.notes.is_empty());
        }
    }

    #[test]
    fn wal_keep_segments_and_wal_keep_size_translate_both_ways() {
        let old = for_server(&s(&[("wal_keep_segments", "32")]), &server("16"), "16").unwrap();
        assert_eq!(old.settings, s(&[("wal_keep_size", "512MB")]));
        let new = for_server(&s(&[("wal_keep_size", "1GB")]), &server("9.6"), "9.6").unwrap();
        assert_eq!(new.settings, s(&[("wal_keep_segments", "64")]));
    }

    #[test]
    fn same_valued_renames_carry_the_value() {
        let profile = s(&[
            ("max_parallel_workers_per_gather", "0"),
            ("debug_parallel_query", "off"),
        ]);
        let known: BTreeSet<String> = ["max_parallel_degree", "force_parallel_mode"]
            .map(String::from)
            .into();
        let applied = for_server(&profile, &known, "9.6devel").unwrap();
        assert_eq!(
            applied.settings,
            s(&[("max_parallel_degree", "0"), ("force_parallel_mode", "off")])
        );
        let on_11 = for_server(
            &s(&[("min_parallel_relation_size", "8MB")]),
            &server("11"),
            "11",
        )
        .unwrap();
        assert_eq!(
            on_11.settings,
            s(&[("min_parallel_table_scan_size", "8MB")])
        );
    }

    #[test]
    fn removed_settings_are_left_out_with_a_note() {
        let profile = s(&[
            ("stats_temp_directory", "/dev/shm/x"),
            ("operator_precedence_warning", "off"),
            ("replacement_sort_tuples", "0"),
            ("sql_inheritance", "on"),
            ("vacuum_defer_cleanup_age", "0"),
            ("shared_buffers", "1GB"),
        ]);
        let applied = for_server(&profile, &server("17"), "17.2").unwrap();
        assert_eq!(applied.settings, s(&[("shared_buffers", "1GB")]));
        assert_eq!(applied.notes.len(), 5);
        assert!(
            applied.notes[0].contains("stats_temp_directory")
                && applied.notes[0].contains("PostgreSQL 9.4 to 15"),
            "{:?}",
            applied.notes
        );
        // Newer settings on an old server likewise.
        let jit = for_server(&s(&[("jit", "off")]), &server("10"), "10.23").unwrap();
        assert!(jit.settings.is_empty() && jit.notes[0].contains("PostgreSQL 11 and later"));
    }

    #[test]
    fn both_names_given_keep_each_on_its_own_versions() {
        let profile = s(&[("checkpoint_segments", "64"), ("max_wal_size", "2GB")]);
        let applied = for_server(&profile, &server("15"), "15").unwrap();
        assert_eq!(applied.settings, s(&[("max_wal_size", "2GB")]));
        let old = for_server(&profile, &server("9.4"), "9.4").unwrap();
        assert_eq!(old.settings, s(&[("checkpoint_segments", "64")]));
    }

    #[test]
    fn extension_settings_and_case_pass_through() {
        let profile = s(&[("pg_stat_statements.max", "1000"), ("DateStyle", "ISO")]);
        let applied = for_server(&profile, &server("15"), "15").unwrap();
        assert_eq!(applied.settings, profile);
    }

    #[test]
    fn typos_are_rejected_with_suggestions() {
        let err = check(&s(&[("shared_bufers", "1GB")]), None).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("did you mean shared_buffers"), "{text}");
        let err = for_server(&s(&[("max_conections", "10")]), &server("15"), "15").unwrap_err();
        assert!(err.to_string().contains("max_connections"), "{err}");
    }

    #[test]
    fn a_setting_no_version_of_the_range_takes_is_rejected() {
        let range = Some((v("12"), v("20")));
        let err = check(&s(&[("sql_inheritance", "off")]), range).unwrap_err();
        assert!(
            matches!(err, SettingError::OutOfRange { .. }) && err.to_string().contains("12 to 20"),
            "{err}"
        );
        // Translatable, so fine on any range.
        check(&s(&[("checkpoint_segments", "64")]), range).unwrap();
        check(&s(&[("wal_keep_size", "1GB")]), Some((v("9.5"), v("9.6")))).unwrap();
        // Within a version of the range's ends: allowed (beta back-patches).
        check(&s(&[("sql_inheritance", "on")]), Some((v("11"), v("16")))).unwrap();
    }

    #[test]
    fn sizes_are_checked_before_anything_runs() {
        let err = check(&s(&[("max_wal_size", "lots")]), None).unwrap_err();
        assert!(matches!(err, SettingError::NotASize { .. }), "{err}");
        assert_eq!(size_in_mb("20GB"), Some(20480));
        assert_eq!(size_in_mb(" 512kB "), Some(1));
        assert_eq!(size_in_mb("1TB"), Some(1024 * 1024));
        assert_eq!(size_in_mb("80"), Some(80));
        assert_eq!(size_in_mb("8gb"), None);
    }
}
