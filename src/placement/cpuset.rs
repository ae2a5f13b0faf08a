//! Sets of CPU numbers, written as Linux writes them (`0-3,8,10-11`).
//!
//! The kernel's cpulist format is what `taskset -c`, `numactl
//! --physcpubind`, /sys/devices/system/node/node*/cpulist and
//! /proc/PID/status (`Cpus_allowed_list`) speak, so profiles and reports
//! use it too.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;

/// The most CPUs a set may name: the size of glibc's `cpu_set_t`.
pub const MAX_CPUS: u32 = 1024;

/// A non-empty set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(BTreeSet<u32>);

/// A CPU list that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a CPU list ({why}); write CPU numbers and ranges as taskset -c does, e.g. `0`, `2-3` or `0,4-7`"
)]
pub struct CpuListError {
    pub text: String,
    pub why: String,
}

impl CpuSet {
    /// Parses `0-3,8`; an empty list or a CPU past [`MAX_CPUS`] is an error.
    pub fn parse(text: &str) -> Result<CpuSet, CpuListError> {
        let err = |why: &str| CpuListError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let number = |word: &str| -> Result<u32, CpuListError> {
            let n: u32 = word.trim().parse().map_err(|_| err("not a number"))?;
            if n >= MAX_CPUS {
                return Err(err("CPU number too large"));
            }
            Ok(n)
        };
        let mut cpus = BTreeSet::new();
        for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
            match part.split_once('-') {
                Some((from, to)) => {
                    let (from, to) = (number(from)?, number(to)?);
                    if from > to {
                        return Err(err("a range runs backwards"));
                    }
                    cpus.extend(from..=to);
                }
                None => {
                    cpus.insert(number(part)?);
                }
            }
        }
        CpuSet::from_cpus(cpus).ok_or_else(|| err("no CPUs"))
    }

    /// The set of `cpus`, if there are any.
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> Option<CpuSet> {
        let set: BTreeSet<u32> = cpus.into_iter().filter(|c| *c < MAX_CPUS).collect();
        (!set.is_empty()).then_some(CpuSet(set))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true: a set holds at least one CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The CPUs of both, if any.
    pub fn intersection(&self, other: &CpuSet) -> Option<CpuSet> {
        CpuSet::from_cpus(self.0.intersection(&other.0).copied())
    }

    /// The CPUs of `self` not in `other`, if any.
    pub fn difference(&self, other: &CpuSet) -> Option<CpuSet> {
        CpuSet::from_cpus(self.0.difference(&other.0).copied())
    }

    /// The `n` highest-numbered CPUs (all when there are fewer).
    pub fn highest(&self, n: usize) -> CpuSet {
        CpuSet(self.0.iter().rev().take(n.max(1)).copied().collect())
    }

    /// "CPU 3" or "CPUs 0-3", for sentences.
    pub fn describe(&self) -> String {
        if self.len() == 1 {
            format!("CPU {self}")
        } else {
            format!("CPUs {self}")
        }
    }
}

impl fmt::Display for CpuSet {
    /// The cpulist form, ranges joined: `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut cpus = self.iter().peekable();
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.peek() == Some(&(end + 1)) {
                end += 1;
                cpus.next();
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CpuSet::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_kernel_cpulist_format() {
        let set = CpuSet::parse("0-3,8,10-11\n").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(set.to_string(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse("5").unwrap().describe(), "CPU 5");
        assert_eq!(CpuSet::parse("1,0").unwrap().describe(), "CPUs 0-1");
    }

    #[test]
    fn bad_lists_say_how_to_write_one() {
        for bad in ["", "a", "3-1", "0-", "2000", " , "] {
            let message = CpuSet::parse(bad).unwrap_err().to_string();
            assert!(message.contains("taskset -c"), "{bad:?}: {message}");
        }
    }

    #[test]
    fn highest_cpus_and_set_arithmetic() {
        let set = CpuSet::parse("0-7").unwrap();
        assert_eq!(set.highest(2).to_string(), "6-7");
        assert_eq!(set.highest(0).to_string(), "7");
        let top = set.highest(2);
        assert_eq!(set.difference(&top).unwrap().to_string(), "0-5");
        assert_eq!(top.difference(&set), None);
        assert!(top.is_subset(&set));
        let other = CpuSet::parse("5-9").unwrap();
        assert_eq!(set.intersection(&other).unwrap().to_string(), "5-7");
    }

    proptest! {
        #[test]
        fn display_parses_back(cpus in proptest::collection::btree_set(0u32..MAX_CPUS, 1..40)) {
            let set = CpuSet::from_cpus(cpus).unwrap();
            prop_assert_eq!(CpuSet::parse(&set.to_string()).unwrap(), set);
        }
    }
}
