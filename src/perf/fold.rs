//! `perf script` output folded into one line per distinct call stack.
//!
//! Folding is inferno's collapse-perf, the code behind most flame graphs
//! drawn from Linux `perf`; pgbisect only keeps its result as counts per
//! stack, so that two profiles can be set side by side and written back as
//! the folded text inferno draws from.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

/// Folded stacks: `comm;outer;...;leaf` and how many samples ended in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    stacks: BTreeMap<String, u64>,
}

/// Folded text that is not `stack count` lines.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FoldError {
    #[error("line {line} of the folded stacks is not `frame;frame;... count`: {text:?}")]
    BadLine { line: usize, text: String },
    #[error("inferno could not fold the `perf script` output: {0}")]
    Collapse(String),
}

impl Folded {
    /// Folds the text `perf script` printed for a recording made with call
    /// graphs (`perf record -g`). The root frame of each stack is the
    /// process name (`postgres`). Each sample counts one when the text has
    /// no period field (`perf script -F comm,pid,tid,time,event,ip,sym,dso`,
    /// as [`super::PerfSampler`] prints it); with one, samples are
    /// weighted by their period.
    pub fn from_perf_script(script: &str) -> Result<Folded, FoldError> {
        use inferno::collapse::Collapse;
        let mut options = inferno::collapse::perf::Options::default();
        options.nthreads = 1;
        let mut folder = inferno::collapse::perf::Folder::from(options);
        let mut out = Vec::new();
        folder
            .collapse(script.as_bytes(), &mut out)
            .map_err(|e| FoldError::Collapse(e.to_string()))?;
        Folded::parse(&String::from_utf8_lossy(&out))
    }

    /// Reads folded text (`frame;frame;... count` a line), as written by
    /// [`Folded::to_text`] or inferno.
    pub fn parse(text: &str) -> Result<Folded, FoldError> {
        let mut folded = Folded::default();
        for (i, line) in text.as_bytes().lines().enumerate() {
            let line = line.map_err(|e| FoldError::Collapse(e.to_string()))?;
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            let bad = || FoldError::BadLine {
                line: i + 1,
                text: line.to_string(),
            };
            let (stack, count) = line.rsplit_once(' ').ok_or_else(bad)?;
            let count: u64 = count.parse().map_err(|_| bad())?;
            if stack.is_empty() {
                return Err(bad());
            }
            folded.add(stack, count);
        }
        Ok(folded)
    }

    /// Counts `count` more samples for `stack`.
    pub fn add(&mut self, stack: &str, count: u64) {
        *self.stacks.entry(stack.to_string()).or_default() += count;
    }

    /// Adds every sample of `other` (profiles of several runs of a side
    /// become one).
    pub fn merge(&mut self, other: &Folded) {
        for (stack, count) in &other.stacks {
            self.add(stack, *count);
        }
    }

    /// The folded text, one `stack count` line per stack, sorted.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (stack, count) in &self.stacks {
            let _ = writeln!(out, "{stack} {count}");
        }
        out
    }

    /// All samples.
    pub fn samples(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Each stack as its frames from the outermost (the process name)
    /// to the leaf, with its count.
    pub fn stacks(&self) -> impl Iterator<Item = (Vec<&str>, u64)> {
        self.stacks
            .iter()
            .map(|(stack, &count)| (stack.split(';').collect(), count))
    }

    /// Whether a function of that name is in any stack.
    pub fn has_function(&self, name: &str) -> bool {
        self.stacks
            .keys()
            .any(|stack| stack.split(';').any(|f| f == name))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `perf script` of a PostgreSQL 15 server under pgbench (select-only,
    /// prepared, 1 client), recorded with frame-pointer call graphs.
    pub(crate) const BEFORE: &str = include_str!("testdata/parent.perf-script");

    #[test]
    fn a_recorded_server_profile_folds_into_postgres_stacks() {
        let folded = Folded::from_perf_script(BEFORE).unwrap();
        assert!(folded.samples() > 100, "{}", folded.samples());
        assert!(folded.has_function("PostgresMain"));
        assert!(folded.has_function("ExecutorStart"));
        for (frames, count) in folded.stacks() {
            assert_eq!(frames[0], "postgres", "root frame is the process name");
            assert!(count > 0);
        }
        // Every sample in the script is one line starting with the process name.
        let sample_lines = BEFORE
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with([' ', '\t']))
            .count() as u64;
        assert_eq!(folded.samples(), sample_lines);
    }

    #[test]
    fn merged_profiles_add_up_stack_by_stack() {
        let mut a = Folded::parse("postgres;main;exec 3\npostgres;main 1\n").unwrap();
        let b = Folded::parse("postgres;main;exec 2\npostgres;idle 5\n").unwrap();
        a.merge(&b);
        assert_eq!(a.samples(), 11);
        assert_eq!(
            a.to_text(),
            "postgres;idle 5\npostgres;main 1\npostgres;main;exec 5\n"
        );
    }

    #[test]
    fn folded_text_reads_back_as_it_was_written() {
        let folded = Folded::from_perf_script(BEFORE).unwrap();
        assert_eq!(Folded::parse(&folded.to_text()).unwrap(), folded);
    }

    #[test]
    fn a_small_script_folds_to_its_stacks() {
        let script = "\
postgres  4242/4242  1234.500000: cpu-clock:ppp: 
\t    55d1 ExecutorStart (/usr/lib/postgresql/15/bin/postgres)
\t    55d2 PortalStart (/usr/lib/postgresql/15/bin/postgres)
\t    55d3 PostgresMain (/usr/lib/postgresql/15/bin/postgres)

postgres  4243/4243  1234.510000: cpu-clock:ppp: 
\t    55d1 ExecutorStart (/usr/lib/postgresql/15/bin/postgres)
\t    55d2 PortalStart (/usr/lib/postgresql/15/bin/postgres)
\t    55d3 PostgresMain (/usr/lib/postgresql/15/bin/postgres)

";
        let folded = Folded::from_perf_script(script).unwrap();
        assert_eq!(
            folded.to_text(),
            "postgres;PostgresMain;PortalStart;ExecutorStart 2\n"
        );
    }

    #[test]
    fn folded_text_that_is_not_stacks_is_refused_with_its_line() {
        let err = Folded::parse("a;b 3\nnot a count\n").unwrap_err();
        assert_eq!(
            err,
            FoldError::BadLine {
                line: 2,
                text: "not a count".into()
            }
        );
    }
}
