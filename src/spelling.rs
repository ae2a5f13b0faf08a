//! How close a mistyped name is to the names there are, for the errors
//! that suggest what was meant (a setting, a branch): `mastr` reads as
//! `master`, one edit away.

/// The number of single-character insertions, deletions and
/// substitutions that turn `a` into `b` (Levenshtein distance).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The name of `known` closest to `name`, when it is close: at most two
/// edits away, and those edits at most half the longer name (`mian`
/// reads as `main`, but `a` does not read as `b`). Ties go to the first
/// in `known`.
pub fn closest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(name, k), k.as_str()))
        .filter(|&(d, k)| d <= 2 && 2 * d <= name.chars().count().max(k.chars().count()))
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_one_or_two_edits_away_is_the_closest_and_a_far_one_is_none() {
        assert_eq!(edit_distance("mastr", "master"), 1);
        assert_eq!(edit_distance("", "main"), 4);
        assert_eq!(edit_distance("REL_16_STABLE", "REL_16_STABLE"), 0);
        let known = ["main".to_string(), "master".into(), "feature".into()];
        assert_eq!(closest("mastr", &known), Some("master"));
        assert_eq!(closest("mian", &known), Some("main"));
        assert_eq!(closest("release", &known), None);
        assert_eq!(closest("x", &["y".to_string()]), None);
        assert_eq!(closest("ab", &["cd".to_string()]), None);
    }
}
