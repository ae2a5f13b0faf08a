//! Two CPU profiles set side by side, function by function.
//!
//! Two builds under the same load never give the same number of samples
//! (the slower one may even get more), so functions are compared by their
//! share of each profile's samples: `self`, the samples taken in the
//! function itself, says where the CPU time went; `total`, the samples with
//! the function anywhere on the stack, says what it and its callees cost.
//! A commit that adds work to a function shows as that function's self
//! share rising, which is how the table ranks; its callers' total shares
//! rise with it. The root frame of a stack is the process name, not a
//! function, and is left out.

use super::fold::Folded;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// One function's shares of samples in both profiles (the type the
/// "why" results keep).
pub use crate::core::why::FunctionChange;

/// The difference between a profile before (the parent, say) and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileDiff {
    pub before_samples: u64,
    pub after_samples: u64,
    /// Every function seen in either profile, by name.
    pub functions: Vec<FunctionChange>,
}

/// Samples per function: in the function itself, and with it on the stack.
#[derive(Default)]
struct Counts {
    own: u64,
    total: u64,
}

fn counts(folded: &Folded) -> BTreeMap<&str, Counts> {
    let mut by_name: BTreeMap<&str, Counts> = BTreeMap::new();
    for (frames, count) in folded.stacks() {
        let functions = &frames[1..];
        if let Some(leaf) = functions.last() {
            by_name.entry(leaf).or_default().own += count;
        }
        // A recursive function counts once per sample in its total.
        let mut seen = HashSet::new();
        for name in functions {
            if seen.insert(*name) {
                by_name.entry(name).or_default().total += count;
            }
        }
    }
    by_name
}

impl ProfileDiff {
    /// The function-by-function difference of `after` against `before`.
    pub fn between(before: &Folded, after: &Folded) -> ProfileDiff {
        let (b, a) = (counts(before), counts(after));
        let (nb, na) = (before.samples(), after.samples());
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let names: std::collections::BTreeSet<&str> = b.keys().chain(a.keys()).copied().collect();
        let functions = names
            .into_iter()
            .map(|name| {
                let (cb, ca) = (b.get(name), a.get(name));
                FunctionChange {
                    name: name.to_string(),
                    self_before: share(cb.map_or(0, |c| c.own), nb),
                    self_after: share(ca.map_or(0, |c| c.own), na),
                    total_before: share(cb.map_or(0, |c| c.total), nb),
                    total_after: share(ca.map_or(0, |c| c.total), na),
                }
            })
            .collect();
        ProfileDiff {
            before_samples: nb,
            after_samples: na,
            functions,
        }
    }

    /// The `n` functions whose self share rose most, largest rise first
    /// (ties: larger total rise, then name).
    pub fn risers(&self, n: usize) -> Vec<&FunctionChange> {
        self.ranked(n, FunctionChange::self_change, FunctionChange::total_change)
    }

    /// The `n` functions whose total share (with their callees) rose most,
    /// largest rise first (ties: larger self rise, then name).
    pub fn grown(&self, n: usize) -> Vec<&FunctionChange> {
        self.ranked(n, FunctionChange::total_change, FunctionChange::self_change)
    }

    /// The functions named in `names` that either profile sampled, the
    /// largest rise of the total share first, and how many of `names`
    /// neither sampled. A name matches the compiler's clones of the
    /// function too (`hlCover.isra.0`, `heap_insert.part.0`); of several,
    /// the one with the most samples with callees stands for it.
    pub fn of_functions(&self, names: &[String]) -> (Vec<FunctionChange>, usize) {
        let mut found: Vec<FunctionChange> = Vec::new();
        let mut unsampled = 0;
        for name in names {
            let weight = |f: &&FunctionChange| f.total_before + f.total_after;
            let best = self
                .functions
                .iter()
                .filter(|f| f.name.split('.').next() == Some(name.as_str()))
                .max_by(|x, y| weight(x).total_cmp(&weight(y)));
            match best {
                Some(f) => found.push(f.clone()),
                None => unsampled += 1,
            }
        }
        found.sort_by(|x, y| {
            y.total_change()
                .total_cmp(&x.total_change())
                .then(x.name.cmp(&y.name))
        });
        (found, unsampled)
    }

    /// The `n` functions whose self share fell most, largest fall first.
    pub fn fallers(&self, n: usize) -> Vec<&FunctionChange> {
        self.ranked(n, |f| -f.self_change(), |f| -f.total_change())
    }

    /// The `n` functions whose `key` is above zero, largest first (ties:
    /// larger `tie`, then name).
    fn ranked(
        &self,
        n: usize,
        key: impl Fn(&FunctionChange) -> f64,
        tie: impl Fn(&FunctionChange) -> f64,
    ) -> Vec<&FunctionChange> {
        let mut moved: Vec<&FunctionChange> =
            self.functions.iter().filter(|f| key(f) > 0.0).collect();
        moved.sort_by(|x, y| {
            key(y)
                .total_cmp(&key(x))
                .then(tie(y).total_cmp(&tie(x)))
                .then(x.name.cmp(&y.name))
        });
        moved.truncate(n);
        moved
    }

    /// The top `n` risers and fallers as a plain-text table that fits 72
    /// columns, with the sample counts it rests on.
    pub fn table(&self, n: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "CPU profile of the server: {} samples before, {} after",
            self.before_samples, self.after_samples
        );
        let _ = writeln!(
            out,
            "(share of samples in the function itself; total: with its callees)"
        );
        for (title, rows) in [("rose", self.risers(n)), ("fell", self.fallers(n))] {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{:<NAME$}  {:>7} {:>7} {:>8}  {:>8}",
                format!("self share {title}"),
                "before",
                "after",
                "change",
                "total"
            );
            if rows.is_empty() {
                let _ = writeln!(out, "  (none)");
            }
            for f in rows {
                let _ = writeln!(
                    out,
                    "{:<NAME$}  {:>6.1}% {:>6.1}% {:>+7.1}pp {:>+6.1}pp{}",
                    fit(&f.name, NAME),
                    100.0 * f.self_before,
                    100.0 * f.self_after,
                    f.self_change(),
                    f.total_change(),
                    if self.may_be_chance(f) { " ~" } else { "" }
                );
            }
        }
        let shown = self.risers(n).into_iter().chain(self.fallers(n));
        if shown.into_iter().any(|f| self.may_be_chance(f)) {
            let _ = writeln!(
                out,
                "\n~ within two standard errors of sampling: may be chance alone"
            );
        }
        out
    }

    /// Whether `f`'s self-share change is within two standard errors of
    /// the difference of two sampled proportions. Samples taken close in
    /// time are not independent, so this flags too few rows, never too
    /// many: an unflagged change can still be noise, a flagged one surely
    /// may be.
    pub fn may_be_chance(&self, f: &FunctionChange) -> bool {
        let var = |p: f64, n: u64| {
            if n == 0 {
                f64::INFINITY
            } else {
                p * (1.0 - p) / n as f64
            }
        };
        let se = (var(f.self_before, self.before_samples) + var(f.self_after, self.after_samples))
            .sqrt();
        (f.self_after - f.self_before).abs() <= 2.0 * se
    }
}

/// Width of the function column.
const NAME: usize = 34;

/// `name` cut to `width` characters, its end marked with `..` when cut.
fn fit(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        return name.to_string();
    }
    let kept: String = name.chars().take(width - 2).collect();
    format!("{kept}..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn folded(text: &str) -> Folded {
        Folded::parse(text).unwrap()
    }

    #[test]
    fn shares_count_the_leaf_as_self_and_every_frame_once_as_total() {
        let before = folded("postgres;main;PostgresMain;exec;exec 3\npostgres;main;idle 1\n");
        let diff = ProfileDiff::between(&before, &before);
        let get = |n: &str| diff.functions.iter().find(|f| f.name == n).unwrap();
        assert_eq!(get("exec").self_before, 0.75);
        assert_eq!(get("exec").total_before, 0.75, "recursion counted once");
        assert_eq!(get("main").self_before, 0.0);
        assert_eq!(get("main").total_before, 1.0);
        assert!(!diff.functions.iter().any(|f| f.name == "postgres"));
        assert!(diff.risers(5).is_empty() && diff.fallers(5).is_empty());
    }

    #[test]
    fn the_function_given_more_work_rises_and_the_rest_fall() {
        let before = folded(
            "postgres;PostgresMain;ExecutorStart 10\n\
             postgres;PostgresMain;ExecutorRun;heap_getnext 60\n\
             postgres;PostgresMain;pq_getbyte 30\n",
        );
        let after = folded(
            "postgres;PostgresMain;ExecutorStart 50\n\
             postgres;PostgresMain;ExecutorRun;heap_getnext 60\n\
             postgres;PostgresMain;pq_getbyte 40\n",
        );
        let diff = ProfileDiff::between(&before, &after);
        let risers = diff.risers(3);
        assert_eq!(risers.len(), 1);
        assert_eq!(risers[0].name, "ExecutorStart");
        assert!(!diff.may_be_chance(risers[0]), "+23pp of 100 samples");
        // 1 sample in 100 against 2 in 150 is what chance gives.
        let few = ProfileDiff::between(
            &folded("postgres;f 1\npostgres;g 99\n"),
            &folded("postgres;f 2\npostgres;g 148\n"),
        );
        assert!(few.may_be_chance(few.risers(1)[0]));
        assert!(few.table(3).contains(" ~\n"), "{}", few.table(3));
        assert!((risers[0].self_change() - 23.33).abs() < 0.01);
        let fallers: Vec<&str> = diff.fallers(3).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(fallers, ["heap_getnext", "pq_getbyte"]);
    }

    #[test]
    fn new_calls_into_shared_callees_lead_the_growth_not_the_self_shares() {
        // As a culprit that pins a visibility-map page at every inserted
        // row: the new time is in the buffer lookup, which the table's
        // own reads make too, under a function the parent hardly called.
        let before = folded(
            "postgres;heap_insert;ReadBuffer;hash_bytes 10\n\
             postgres;heap_insert;PageAddItem 60\n\
             postgres;ExecScan 30\n",
        );
        let after = folded(
            "postgres;heap_insert;ReadBuffer;hash_bytes 10\n\
             postgres;heap_insert;visibilitymap_pin;ReadBuffer;hash_bytes 12\n\
             postgres;heap_insert;visibilitymap_pin;ReadBuffer 8\n\
             postgres;heap_insert;PageAddItem 60\n\
             postgres;ExecScan 30\n",
        );
        let diff = ProfileDiff::between(&before, &after);
        assert_eq!(diff.risers(1)[0].name, "hash_bytes");
        let grown: Vec<&str> = diff.grown(2).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(grown, ["visibilitymap_pin", "ReadBuffer"]);
        assert!(diff.grown(9).iter().all(|f| f.total_change() > 0.0));
    }

    #[test]
    fn changed_functions_are_found_under_their_clones_names_and_ranked_by_total() {
        let before = folded(
            "postgres;PostgresMain;prsd_headline;hlCover.isra.0;checkcondition_HL 1\n\
             postgres;PostgresMain;other 9\n",
        );
        let after = folded(
            "postgres;PostgresMain;prsd_headline;hlCover.isra.0;checkcondition_HL 8\n\
             postgres;PostgresMain;prsd_headline 1\n\
             postgres;PostgresMain;other 1\n",
        );
        let diff = ProfileDiff::between(&before, &after);
        let names: Vec<String> = ["prsd_headline", "hlCover", "never_called", "other"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (sampled, unsampled) = diff.of_functions(&names);
        let order: Vec<&str> = sampled.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(order, ["prsd_headline", "hlCover.isra.0", "other"]);
        assert_eq!(unsampled, 1);
        assert!((sampled[1].total_change() - 70.0).abs() < 1e-9);
    }

    #[test]
    fn the_table_fits_72_columns_and_names_both_directions() {
        let before =
            folded("postgres;a_function_with_a_name_far_too_long_for_any_column 5\npostgres;b 5\n");
        let after =
            folded("postgres;a_function_with_a_name_far_too_long_for_any_column 9\npostgres;b 1\n");
        let table = ProfileDiff::between(&before, &after).table(5);
        for line in table.lines() {
            assert!(line.chars().count() <= 72, "{line:?} ({})", line.len());
        }
        assert!(table.contains("10 samples before, 10 after"), "{table}");
        assert!(
            table.contains("a_function_with_a_name_far_too_l.."),
            "{table}"
        );
        assert!(table.contains("+40.0pp"), "{table}");
        assert!(
            !table.contains('~'),
            "10 samples a side can show 40pp: {table}"
        );
        assert!(table.contains("-40.0pp"), "{table}");
    }

    #[test]
    fn recorded_profiles_of_a_slowed_executor_start_name_it_first() {
        let before = Folded::from_perf_script(super::super::fold::tests::BEFORE).unwrap();
        let after = Folded::from_perf_script(AFTER).unwrap();
        let diff = ProfileDiff::between(&before, &after);
        let top: Vec<&str> = diff.risers(3).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(top[0], "ExecutorStart", "{}", diff.table(5));
        let json = serde_json::to_string(&diff).unwrap();
        let back: ProfileDiff = serde_json::from_str(&json).unwrap();
        assert_eq!(back.functions.len(), diff.functions.len());
        assert_eq!(back.risers(3)[0].name, "ExecutorStart");
        assert!((back.risers(3)[0].self_change() - top_change(&diff)).abs() < 1e-9);
    }

    fn top_change(diff: &ProfileDiff) -> f64 {
        diff.risers(1)[0].self_change()
    }

    /// The same load on the commit that adds a spin loop to ExecutorStart.
    const AFTER: &str = include_str!("testdata/slowed.perf-script");

    fn stacks() -> impl Strategy<Value = Vec<(Vec<u8>, u64)>> {
        prop::collection::vec((prop::collection::vec(0u8..6, 1..5), 1u64..50), 1..20)
    }

    fn to_folded(stacks: &[(Vec<u8>, u64)]) -> Folded {
        let mut f = Folded::default();
        for (frames, count) in stacks {
            let names: Vec<String> = frames.iter().map(|i| format!("f{i}")).collect();
            f.add(&format!("postgres;{}", names.join(";")), *count);
        }
        f
    }

    proptest! {
        #[test]
        fn self_shares_sum_to_one_and_changes_to_zero(a in stacks(), b in stacks()) {
            let diff = ProfileDiff::between(&to_folded(&a), &to_folded(&b));
            let before: f64 = diff.functions.iter().map(|f| f.self_before).sum();
            let after: f64 = diff.functions.iter().map(|f| f.self_after).sum();
            prop_assert!((before - 1.0).abs() < 1e-9 && (after - 1.0).abs() < 1e-9);
            let change: f64 = diff.functions.iter().map(|f| f.self_change()).sum();
            prop_assert!(change.abs() < 1e-6);
            for f in &diff.functions {
                prop_assert!(f.self_before <= f.total_before + 1e-12);
                prop_assert!(f.total_after <= 1.0 + 1e-12);
            }
        }

        #[test]
        fn swapping_the_profiles_swaps_risers_and_fallers(a in stacks(), b in stacks()) {
            let (fa, fb) = (to_folded(&a), to_folded(&b));
            let ab = ProfileDiff::between(&fa, &fb);
            let ba = ProfileDiff::between(&fb, &fa);
            let names = |v: Vec<&FunctionChange>| v.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
            prop_assert_eq!(names(ab.risers(3)), names(ba.fallers(3)));
        }
    }
}
