//! Release names as people write them.
//!
//! PostgreSQL tags every release on its stable branch: `REL9_5_0` on
//! `REL9_5_STABLE`, `REL_16_2` on `REL_16_STABLE` (the underscore after
//! `REL` came with version 10, when major versions became one number).
//! People write `9.5`, `REL9_5`, `16` or `16.2` for them. This module reads
//! those forms as the tag or branch they stand for; it is pure, and
//! [`super::Repo::resolve_name`] asks it only after git did not know the
//! name itself, so a branch or tag really called `16` always wins.
//!
//! What each form means:
//!
//! | form | meaning |
//! |---|---|
//! | `REL9_5_0`, `REL_16_2` | that tag (git's own name) |
//! | `9.5.3`, `16.2` | the tag of that minor release, `REL9_5_3`, `REL_16_2` |
//! | `REL9_5`, `9.5`, `REL_16`, `16` | the major release: its first tag `REL9_5_0`, `REL_16_0`; before that tag exists, its stable branch |
//! | `REL9_5_STABLE`, `REL_16_STABLE` | the stable branch's tip, local or remote-tracking (`origin/REL_16_STABLE`) |

/// A PostgreSQL major version: two numbers before 10 (`9.5`), one since
/// (`16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Major {
    first: u32,
    /// The second number of versions before 10.
    second: Option<u32>,
}

impl Major {
    /// `REL9_5` or `REL_16`: the start every tag and branch name of the
    /// release shares.
    fn prefix(self) -> String {
        match self.second {
            Some(second) => format!("REL{}_{second}", self.first),
            None => format!("REL_{}", self.first),
        }
    }

    /// The tag of a minor release: `REL9_5_3`, `REL_16_2`.
    pub fn tag(self, minor: u32) -> String {
        format!("{}_{minor}", self.prefix())
    }

    /// The release's stable branch: `REL9_5_STABLE`, `REL_16_STABLE`.
    pub fn stable_branch(self) -> String {
        format!("{}_STABLE", self.prefix())
    }

    /// As people write it: `9.5`, `16`.
    pub fn version(self) -> String {
        match self.second {
            Some(second) => format!("{}.{second}", self.first),
            None => self.first.to_string(),
        }
    }

    fn new(numbers: &[u32]) -> Option<Major> {
        match *numbers {
            [first] if first >= 10 => Some(Major {
                first,
                second: None,
            }),
            [first, second] if first < 10 => Some(Major {
                first,
                second: Some(second),
            }),
            _ => None,
        }
    }

    /// How many numbers name the major version: 2 before 10, 1 since.
    fn width(first: u32) -> usize {
        if first < 10 { 2 } else { 1 }
    }
}

/// What a release-looking name asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseName {
    /// A major release: `9.5`, `REL9_5`, `16`, `REL_16`.
    Major(Major),
    /// One minor release: `9.5.3`, `REL9_5_3`, `16.2`, `REL_16_2`.
    Minor(Major, u32),
    /// A stable branch: `REL9_5_STABLE`, `REL_16_STABLE`.
    Stable(Major),
}

impl ReleaseName {
    /// Reads `name` as a release, or `None` when it is not one of the
    /// forms in the module's table (`9` alone names no one release).
    pub fn parse(name: &str) -> Option<ReleaseName> {
        let upper = name.trim().to_ascii_uppercase();
        if let Some(rest) = upper.strip_prefix("REL") {
            return Self::parse_tag_form(rest);
        }
        let numbers = numbers(upper.split('.'))?;
        Self::from_numbers(&numbers, false)
    }

    /// The major release it belongs to.
    pub fn major(self) -> Major {
        match self {
            ReleaseName::Major(m) | ReleaseName::Minor(m, _) | ReleaseName::Stable(m) => m,
        }
    }

    /// The tag or branch names it may stand for, in the order they are
    /// tried: `(is_tag, name)`.
    pub fn candidates(self) -> Vec<(bool, String)> {
        match self {
            ReleaseName::Major(m) => vec![(true, m.tag(0)), (false, m.stable_branch())],
            ReleaseName::Minor(m, minor) => vec![(true, m.tag(minor))],
            ReleaseName::Stable(m) => vec![(false, m.stable_branch())],
        }
    }

    /// `_16_2`, `9_5_STABLE`...: what follows `REL`. Since 10 an
    /// underscore follows `REL`; before, the number does.
    fn parse_tag_form(rest: &str) -> Option<ReleaseName> {
        let (new_style, rest) = match rest.strip_prefix('_') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let mut parts: Vec<&str> = rest.split('_').collect();
        let stable = parts.last() == Some(&"STABLE");
        if stable {
            parts.pop();
        }
        let numbers = numbers(parts.into_iter())?;
        if new_style != (numbers[0] >= 10) {
            return None;
        }
        Self::from_numbers(&numbers, stable)
    }

    fn from_numbers(numbers: &[u32], stable: bool) -> Option<ReleaseName> {
        let width = Major::width(*numbers.first()?);
        let major = Major::new(numbers.get(..width)?)?;
        match (&numbers[width..], stable) {
            ([], false) => Some(ReleaseName::Major(major)),
            ([], true) => Some(ReleaseName::Stable(major)),
            ([minor], false) => Some(ReleaseName::Minor(major, *minor)),
            _ => None,
        }
    }
}

/// The parts as numbers, when every part is one (and there is a part).
fn numbers<'a>(parts: impl Iterator<Item = &'a str>) -> Option<Vec<u32>> {
    let numbers: Vec<u32> = parts
        .map(|p| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    (!numbers.is_empty()).then_some(numbers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        ReleaseName::parse(text)
            .map(|r| r.candidates().into_iter().map(|(_, n)| n).collect())
            .unwrap_or_default()
    }

    #[test]
    fn short_forms_of_a_major_release_mean_its_first_tag_then_its_branch() {
        for form in ["9.5", "REL9_5", "rel9_5"] {
            assert_eq!(names(form), ["REL9_5_0", "REL9_5_STABLE"], "{form}");
        }
        for form in ["16", "REL_16"] {
            assert_eq!(names(form), ["REL_16_0", "REL_16_STABLE"], "{form}");
        }
    }

    #[test]
    fn minor_releases_and_stable_branches_name_one_ref() {
        assert_eq!(names("9.5.3"), ["REL9_5_3"]);
        assert_eq!(names("REL9_5_3"), ["REL9_5_3"]);
        assert_eq!(names("16.2"), ["REL_16_2"]);
        assert_eq!(names("REL_16_2"), ["REL_16_2"]);
        assert_eq!(names("REL9_5_STABLE"), ["REL9_5_STABLE"]);
        assert_eq!(names("REL_16_STABLE"), ["REL_16_STABLE"]);
        let stable = ReleaseName::parse("REL_16_STABLE").unwrap();
        assert_eq!(stable.major().version(), "16");
        assert_eq!(
            ReleaseName::parse("REL9_5_0")
                .unwrap()
                .major()
                .stable_branch(),
            "REL9_5_STABLE"
        );
    }

    #[test]
    fn names_that_are_no_release_are_left_alone() {
        for text in [
            "9",
            "9.5.3.1",
            "16.2.1",
            "REL9",
            "REL_9_5",
            "REL16",
            "REL_16_2_1",
            "master",
            "v16",
            "16.",
            ".5",
            "REL_",
            "REL9_5_STABLE_1",
            "1e2",
            "",
            "REL_16_beta1",
        ] {
            assert_eq!(ReleaseName::parse(text), None, "{text}");
        }
    }
}
