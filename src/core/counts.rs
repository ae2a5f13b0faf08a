//! The arithmetic of instruction counts, apart from what counts them
//! (`crate::counts`): a counted run is a short and a long pgbench run of
//! fixed transaction counts, and what the long run did more, over the
//! transactions it made more, is what a transaction costs: the fixed costs
//! of a run (a backend's start, its connection, pgbench's first queries)
//! cancel out.

use crate::core::decide::{Change, DecisionConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What decides: pgbench's transactions per second, or the instructions
/// a transaction costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    #[default]
    Tps,
    Instructions,
}

/// How a bad value's message names `tps`, and what it is.
pub const TPS_SAYS: &str = "`tps` (pgbench's transactions per second)";

/// How a bad value's message names `instructions`, and what it is.
pub const INSTRUCTIONS_SAYS: &str =
    "`instructions` (instructions a transaction costs, counted by cachegrind)";

impl Measure {
    /// Parses `tps` or `instructions`.
    pub fn parse(text: &str) -> Result<Measure, String> {
        match text {
            "tps" => Ok(Measure::Tps),
            "instructions" => Ok(Measure::Instructions),
            other => Err(format!(
                "`{other}` is not a measure: give {TPS_SAYS} or {INSTRUCTIONS_SAYS}"
            )),
        }
    }

    pub fn is_tps(&self) -> bool {
        *self == Measure::Tps
    }

    /// How the measure is named in flags, profiles and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Measure::Tps => "tps",
            Measure::Instructions => "instructions",
        }
    }

    /// `cfg` with the noise of this measure: counts never read a tighter
    /// spread than [`NOISE_FLOOR`] from runs that happen to agree to a
    /// millionth, nor call a run that differs by a few millionths an
    /// outlier, and a side-by-side comparison of counts may decide from
    /// [`COUNTED_MIN_RUNS`] runs a side; tps keeps `cfg` as it is.
    pub fn decision(&self, cfg: DecisionConfig) -> DecisionConfig {
        match self {
            Measure::Tps => cfg,
            Measure::Instructions => DecisionConfig {
                noise_floor: cfg.noise_floor.max(NOISE_FLOOR),
                outlier_floor: cfg.outlier_floor.max(NOISE_FLOOR),
                min_runs: cfg.min_runs.min(COUNTED_MIN_RUNS),
                exact: true,
                ..cfg
            },
        }
    }
}

impl Measure {
    /// A change of the figure decided on, as a hunt's notes give it:
    /// `-5.7% [-6.1%, -5.3%]` of tps, or `+6.03% [+5.80%, +6.27%]
    /// instructions a transaction` (the interval's ends swapped: the
    /// higher end of what instructions buy is the lower end of them).
    pub fn change_text(&self, c: &Change) -> String {
        let finite = [c.pct, c.low_pct, c.high_pct].iter().all(|v| v.is_finite());
        match self {
            Measure::Instructions if finite => format!(
                "{:+.2}% [{:+.2}%, {:+.2}%] instructions a transaction",
                instructions_change_pct(c.pct),
                instructions_change_pct(c.high_pct),
                instructions_change_pct(c.low_pct)
            ),
            _ => c.to_string(),
        }
    }
}

/// What `--measure` and a profile's `measure` ask for: one measure, or
/// `auto`, which a hunt chooses at its endpoints
/// ([`crate::core::choose_measure`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeasureChoice {
    #[default]
    Tps,
    Instructions,
    Auto,
}

impl MeasureChoice {
    /// Parses `tps`, `instructions` or `auto`.
    pub fn parse(text: &str) -> Result<MeasureChoice, String> {
        match text {
            "auto" => Ok(MeasureChoice::Auto),
            other => Measure::parse(other).map(MeasureChoice::from).map_err(|_| {
                format!(
                    "`{other}` is not a measure: give {TPS_SAYS}, {INSTRUCTIONS_SAYS} or \
                     `auto` (a hunt measures its endpoints both ways and decides on the one \
                     that sees the slowdown)"
                )
            }),
        }
    }

    /// The one measure asked for; `None` for `auto`.
    pub fn fixed(self) -> Option<Measure> {
        match self {
            MeasureChoice::Tps => Some(Measure::Tps),
            MeasureChoice::Instructions => Some(Measure::Instructions),
            MeasureChoice::Auto => None,
        }
    }

    /// How it is named in flags and profiles.
    pub fn name(self) -> &'static str {
        self.fixed().map_or("auto", |m| m.name())
    }
}

impl From<Measure> for MeasureChoice {
    fn from(measure: Measure) -> MeasureChoice {
        match measure {
            Measure::Tps => MeasureChoice::Tps,
            Measure::Instructions => MeasureChoice::Instructions,
        }
    }
}

impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The least noise of counts, as a standard deviation of their logs
/// ([`crate::core::decide::DecisionConfig::noise_floor`]): counted runs of
/// one server agree to 0.001-0.3% (BENCHMARKS), and a comparison never
/// reads a tighter spread than this from four runs that happen to agree
/// to a millionth.
pub const NOISE_FLOOR: f64 = 0.001;

/// The fewest counted runs a side before a comparison of counts may
/// decide: counts repeat to 0.1-0.3% (BENCHMARKS), so two runs a side,
/// read with Welch's t ([`crate::core::decide::DecisionConfig::least_for_t`])
/// and never with less spread than [`NOISE_FLOOR`] or the hunt's noise so
/// far, settle a change past both the threshold and about 1% (the bound
/// of two runs a side at a check's level), where tps needs four or more. A change nearer the threshold, or runs that
/// spread more, leave the comparison unclear until more runs come. A
/// culprit's check counts its one run of the search, so it adds one run
/// a side where the spread allows.
pub const COUNTED_MIN_RUNS: usize = 2;

/// A number decided on where higher is better, from instructions a
/// transaction: the transactions a billion instructions buy. A rise of
/// instructions is then a drop, as a drop of tps is, and every test of a
/// drop serves both measures.
pub fn transactions_per_billion(per_transaction: f64) -> f64 {
    1e9 / per_transaction
}

/// The change of instructions a transaction, in percent, that a change of
/// `pct` percent in [`transactions_per_billion`] is.
pub fn instructions_change_pct(pct: f64) -> f64 {
    (1.0 / (1.0 + pct / 100.0) - 1.0) * 100.0
}

/// What one pgbench run of a counted run cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Transactions pgbench completed.
    pub transactions: u64,
    /// Instructions of the processes the run started.
    pub instructions: u64,
    /// How many processes they were.
    pub processes: usize,
}

/// The instructions a transaction spent in one function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCount {
    pub name: String,
    pub per_transaction: f64,
}

/// The functions a transaction spent most in, at most `keep` of them:
/// what each counted more in the long run than in the short one, over the
/// `transactions` the long run made more.
pub fn functions_per_transaction(
    short: &BTreeMap<String, u64>,
    long: &BTreeMap<String, u64>,
    transactions: u64,
    keep: usize,
) -> Vec<FunctionCount> {
    if transactions == 0 {
        return Vec::new();
    }
    let mut out: Vec<FunctionCount> = long
        .iter()
        .filter_map(|(name, &n)| {
            let more = n.saturating_sub(short.get(name).copied().unwrap_or(0));
            (more > 0).then(|| FunctionCount {
                name: name.clone(),
                per_transaction: more as f64 / transactions as f64,
            })
        })
        .collect();
    out.sort_by(|a, b| b.per_transaction.total_cmp(&a.per_transaction));
    out.truncate(keep);
    out
}

/// The functions a report lists of those that moved most between two
/// sides' counted runs (a comparison's, a culprit's against its parent).
pub const SHOWN_FUNCTIONS: usize = 12;

/// How one function's instructions a transaction moved from A to B: the
/// medians of the counted runs of each side that kept it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    pub name: String,
    pub a: f64,
    pub b: f64,
}

impl FunctionChange {
    /// B against A as a percentage (`+94.4%`), or `new` when A had none.
    pub fn ratio_text(&self) -> String {
        if self.a > 0.0 {
            format!("{:+.1}%", (self.b / self.a - 1.0) * 100.0)
        } else {
            "new".to_string()
        }
    }
}

/// The functions whose instructions a transaction moved most between the
/// counted runs of A and of B (`runs`, each a run's
/// [`Counted::functions`]), at most `keep`; a function a side's runs did
/// not keep counts 0 there.
pub fn function_changes(
    a: &[Vec<FunctionCount>],
    b: &[Vec<FunctionCount>],
    keep: usize,
) -> Vec<FunctionChange> {
    let median_of = |runs: &[Vec<FunctionCount>], name: &str| -> f64 {
        let mut v: Vec<f64> = runs
            .iter()
            .map(|r| {
                r.iter()
                    .find(|f| f.name == name)
                    .map_or(0.0, |f| f.per_transaction)
            })
            .collect();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    let names: std::collections::BTreeSet<&str> = a
        .iter()
        .chain(b)
        .flatten()
        .map(|f| f.name.as_str())
        .collect();
    let mut out: Vec<FunctionChange> = names
        .into_iter()
        .map(|name| FunctionChange {
            name: name.to_string(),
            a: median_of(a, name),
            b: median_of(b, name),
        })
        .filter(|c| c.a != c.b)
        .collect();
    out.sort_by(|x, y| (y.b - y.a).abs().total_cmp(&(x.b - x.a).abs()));
    out.truncate(keep);
    out
}

/// The result of a counted run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// Instructions a transaction costs.
    pub per_transaction: f64,
    /// The counter's name ([`Counter::name`]).
    pub counter: String,
    pub short: Window,
    pub long: Window,
    /// The functions a transaction spent most in, when the counter names
    /// them (cachegrind does).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionCount>,
}

/// Why two windows give no count per transaction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CountError {
    #[error(
        "the long run completed {long} transactions, not more than the short run's {short}: \
         no count per transaction can be taken from them"
    )]
    NotLonger { short: u64, long: u64 },
    #[error(
        "the long run's processes counted {long} instructions, fewer than the short run's \
         {short}: a process of one of them was not counted (its counts file missing or cut)"
    )]
    Fewer { short: u64, long: u64 },
    #[error(
        "the short run started {short} processes and the long run {long}: the runs are not \
         alike (a process of the server's own started or ended in one of them), and their \
         difference is not the transactions' cost"
    )]
    Unlike { short: usize, long: usize },
}

/// The instructions a transaction costs, from a short and a long run that
/// started as many processes: what the long run did more, over the
/// transactions it made more.
pub fn per_transaction(short: &Window, long: &Window) -> Result<f64, CountError> {
    if long.transactions <= short.transactions {
        return Err(CountError::NotLonger {
            short: short.transactions,
            long: long.transactions,
        });
    }
    if long.instructions < short.instructions {
        return Err(CountError::Fewer {
            short: short.instructions,
            long: long.instructions,
        });
    }
    if long.processes != short.processes {
        return Err(CountError::Unlike {
            short: short.processes,
            long: long.processes,
        });
    }
    let instructions = (long.instructions - short.instructions) as f64;
    Ok(instructions / (long.transactions - short.transactions) as f64)
}

/// The transactions per client of a counted run's three pgbench runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lengths {
    pub warmup: u64,
    pub short: u64,
    pub long: u64,
}

/// How counted runs are fitted to a workload ([`Lengths::fitted`]): 2
/// since they last past a backend's first second and are timed on a
/// server of their own, 3 since they are timed in the CPU seconds of the
/// server's processes, not the wall clock's. A fit kept by another rule
/// is made again, and a hunt on counts made by another is not taken up
/// (its counts would not compare with the new ones).
pub const FIT_RULE: u32 = 3;

/// The short run of a fitted counted run lasts about this long, so that
/// both runs reach what a backend does once its first second is over. A
/// new backend flushes its statistics at most once a second
/// (`PGSTAT_MIN_INTERVAL`), so its first second keeps what its first
/// queries looked up pending, and a later one has none: a transaction
/// costs otherwise in each. fc415edf's loop over every stats kind, run
/// only when nothing is pending, cost 20.5K instructions a transaction
/// in runs of 200 and 1,200 (under a second each) against 20.5K before
/// it, and 22.9K against 20.4K in runs of 10,000 and 30,000. The fit
/// times the server processes' CPU, which a busy machine does not
/// stretch, so a short run lasts about this long on an idle machine and
/// longer on a busy one; twice the second, for what that CPU leaves out
/// (pgbench's own, the wake-ups between them).
const SHORT_SECONDS: f64 = 2.0;

/// The long run of a fitted counted run lasts about this much longer
/// than the short one: the transactions between them are what is
/// counted, and how many of a run's fall in the backend's first second
/// moves with the machine's speed, which a few seconds of them dilute.
const MORE_SECONDS: f64 = 3.0;

/// What a counted run of fitted lengths takes besides its short and long
/// runs, on an idle machine: starting the server under the counter, the
/// warm-up, each pgbench run's connection and vacuum, stopping it (about
/// 10 s in all for select-only at 1 client, BENCHMARKS).
const RUN_OVERHEAD_SECONDS: f64 = 5.0;

/// About how long a counted run of fitted lengths takes, on an idle
/// machine, for a hunt's plan.
pub fn run_seconds() -> f64 {
    SHORT_SECONDS + MORE_SECONDS + RUN_OVERHEAD_SECONDS
}

/// No run shorter than this many transactions a client.
const MIN_SHORT: u64 = 10;

/// The long run has at least this many transactions a client more than
/// the short one.
const MIN_MORE: u64 = 50;

/// No run of more than this many transactions a client: a clock that
/// read next to nothing does not start days of runs.
const MOST: u64 = 1_000_000;

impl Lengths {
    /// These lengths fitted to a transaction (a client's) that takes
    /// `each` seconds under the counter ([`seconds_each`]): the short run
    /// lasts [`SHORT_SECONDS`] and the long one [`MORE_SECONDS`] more, in
    /// transactions, never fewer than [`MIN_SHORT`] and [`MIN_MORE`] more.
    /// A workload whose transaction takes a second gets runs of 10 and 60
    /// transactions, not the hours the default lengths would take; a
    /// select-only one runs thousands, past its backend's first second.
    /// `each` not above 0 (the clock could not tell) keeps them.
    pub fn fitted(self, each: f64) -> Lengths {
        if !(each > 0.0 && each.is_finite()) {
            return self;
        }
        let lasting = |seconds: f64| ((seconds / each).ceil() as u64).min(MOST);
        let short = lasting(SHORT_SECONDS).max(MIN_SHORT);
        Lengths {
            short,
            long: short + lasting(MORE_SECONDS).max(MIN_MORE),
            ..self
        }
    }
}

/// The seconds a transaction (a client's) takes under the counter, from
/// two timed pgbench runs, each `(transactions a client, seconds)`, the
/// second the longer: their difference, as counts take it, so what every
/// run pays once cancels out. That is most of a short run: pgbench's
/// start and vacuum, and a new backend's first pass through the code
/// under the counter, which took 200 ms where ten select-only
/// transactions took 7. 0 when the longer run was not slower: the
/// transactions are too cheap for the clock to tell.
pub fn seconds_each(short: (u64, f64), long: (u64, f64)) -> f64 {
    let (more, longer) = (long.0.saturating_sub(short.0), long.1 - short.1);
    if more == 0 || longer <= 0.0 {
        return 0.0;
    }
    longer / more as f64
}

/// The transactions a client of the next timed warm-up run: enough that,
/// at the rate the latest (`latest`, `(transactions, seconds)`) ran with
/// its fixed costs in it, it takes [`PROBE_STEP_SECONDS`] more. Those
/// costs slow that rate, so a cheap transaction's next run takes less,
/// never more; and each run is the nearer the transaction's own rate.
/// At least twice the latest's, at most [`MAX_PROBE_GROWTH`] times.
pub fn next_probe(latest: (u64, f64)) -> u64 {
    let n = latest.0.max(1);
    let crude = pace(latest);
    let more = if crude > 0.0 && crude.is_finite() {
        (PROBE_STEP_SECONDS / crude).ceil() as u64
    } else {
        n
    };
    n + more.clamp(n, MAX_PROBE_GROWTH * n)
}

/// The seconds a transaction of a timed run (`(transactions, seconds)`)
/// took, what the run paid once in them: more than a transaction's own.
pub fn pace(run: (u64, f64)) -> f64 {
    run.1 / run.0.max(1) as f64
}

/// A transaction's seconds from two timed warm-up runs ([`seconds_each`]),
/// once the later one took [`PROBE_TELLS_SECONDS`] more than the other:
/// less is within what a busy machine's clock moves and what a run's
/// first pass through the code costs more or less.
pub fn probe_told(earlier: (u64, f64), later: (u64, f64)) -> Option<f64> {
    (later.0 > earlier.0 && later.1 - earlier.1 >= PROBE_TELLS_SECONDS)
        .then(|| seconds_each(earlier, later))
}

/// How much longer each timed warm-up run is made to take than the one
/// before, at that one's rate.
const PROBE_STEP_SECONDS: f64 = 3.0;

/// How much longer a timed warm-up run must take than the one before for
/// their difference to time a transaction.
const PROBE_TELLS_SECONDS: f64 = 1.5;

/// A timed warm-up run has at most this many times the transactions of
/// the one before: a clock that read nothing does not start hours.
const MAX_PROBE_GROWTH: u64 = 100;

/// Timed warm-up runs made at most to time a transaction; past them the
/// last one's own rate, fixed costs and all, times it.
pub const MAX_PROBES: usize = 7;

impl Default for Lengths {
    /// A warm-up of 200 transactions per client, and short and long runs
    /// of 200 and 1,200: about a second together for select-only under
    /// cachegrind at one client. Every workload's runs are fitted
    /// ([`Lengths::fitted`]); these are kept only where the clock could
    /// not time a transaction.
    fn default() -> Self {
        Lengths {
            warmup: 200,
            short: 200,
            long: 1200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn window(transactions: u64, instructions: u64) -> Window {
        Window {
            transactions,
            instructions,
            processes: 2,
        }
    }

    #[test]
    fn the_fixed_costs_cancel_out() {
        // PostgreSQL 15, select-only, one client (DESIGN): 200 and 1,200
        // transactions.
        let got = per_transaction(
            &window(200, 51_140_000 + 46_300_000),
            &window(1200, 94_930_000 + 46_300_000),
        )
        .unwrap();
        assert!((got - 43_790.0).abs() < 1.0, "{got}");
    }

    #[test]
    fn runs_that_cannot_be_set_against_each_other_are_refused() {
        assert!(matches!(
            per_transaction(&window(200, 10), &window(200, 20)),
            Err(CountError::NotLonger { .. })
        ));
        assert!(matches!(
            per_transaction(&window(200, 20), &window(1200, 10)),
            Err(CountError::Fewer { .. })
        ));
        let mut long = window(1200, 30);
        long.processes = 3;
        assert!(matches!(
            per_transaction(&window(200, 20), &long),
            Err(CountError::Unlike { .. })
        ));
    }

    #[test]
    fn a_rise_of_instructions_is_a_drop_of_what_they_buy() {
        let before = transactions_per_billion(40_000.0);
        let after = transactions_per_billion(42_000.0);
        let pct = (after / before - 1.0) * 100.0;
        assert!(pct < 0.0);
        assert!((instructions_change_pct(pct) - 5.0).abs() < 1e-9);
        assert_eq!(Measure::parse("instructions"), Ok(Measure::Instructions));
        assert!(Measure::parse("cycles").unwrap_err().contains("give `tps`"));
        assert_eq!(MeasureChoice::parse("auto"), Ok(MeasureChoice::Auto));
        assert_eq!(
            MeasureChoice::parse("instructions").map(MeasureChoice::fixed),
            Ok(Some(Measure::Instructions))
        );
        assert!(
            MeasureChoice::parse("cycles")
                .unwrap_err()
                .contains("or `auto`")
        );
        let change = Change {
            pct: -5.69,
            low_pct: -5.70,
            high_pct: -5.68,
            confidence: 0.99,
        };
        assert_eq!(
            Measure::Instructions.change_text(&change),
            "+6.03% [+6.02%, +6.04%] instructions a transaction"
        );
        assert_eq!(Measure::Tps.change_text(&change), "-5.7% [-5.7%, -5.7%]");
    }

    #[test]
    fn runs_are_fitted_to_last_past_a_backends_first_second() {
        let default = Lengths::default();
        // Select-only under cachegrind: 0.75 ms a transaction, so 2 s and
        // 3 s more.
        let fast = default.fitted(0.00075);
        assert_eq!((fast.short, fast.long), (2667, 2667 + 4000));
        assert_eq!(fast.warmup, default.warmup);
        // 20,000 float rows a transaction: 0.5 s each.
        let slow = default.fitted(0.5);
        assert_eq!((slow.short, slow.long), (10, 60));
        // 20 ms each, 50 in a second.
        let mid = default.fitted(0.02);
        assert_eq!((mid.short, mid.long), (100, 250));
        assert_eq!(default.fitted(0.0), default);
        assert_eq!(default.fitted(f64::NAN), default);
        let instant = default.fitted(1e-18);
        assert_eq!((instant.short, instant.long), (MOST, 2 * MOST));
    }

    #[test]
    fn a_transaction_is_timed_by_runs_that_grow_until_the_clock_tells() {
        // PostgreSQL 15, select-only under cachegrind (a watched night):
        // 10 transactions in 0.37 s, of which 0.36 s was pgbench's start,
        // its vacuum and the new backend's first pass through the code;
        // 0.75 ms a transaction after that.
        let took = |n: u64| (n, 0.36 + n as f64 * 0.00075);
        let mut latest = (10, 0.37);
        let mut runs = vec![latest.0];
        let each = loop {
            let next = took(next_probe(latest));
            runs.push(next.0);
            if let Some(each) = probe_told(latest, next) {
                break each;
            }
            latest = next;
        };
        assert_eq!(runs, [10, 92, 736, 3158]);
        assert!((each - 0.00075).abs() < 1e-9, "{each}");
        assert_eq!(Lengths::default().fitted(each).short, 2667);
        // Timing the first run alone would have cut them to 55 and 137,
        // all in the backend's first second.
        let crude = Lengths::default().fitted(0.37 / 10.0);
        assert_eq!((crude.short, crude.long), (55, 137));
        // A float workload: 0.5 s a transaction, 0.4 s once: the second
        // run tells.
        let first = (10, 5.4);
        let second = next_probe(first);
        assert_eq!(second, 20);
        assert_eq!(probe_told(first, (second, 10.4)), Some(0.5));
        // A first run slower than the next (a cold start) tells nothing.
        assert_eq!(probe_told((10, 0.4), (92, 0.39)), None);
        assert_eq!(probe_told((10, 0.4), (10, 2.5)), None);
        assert_eq!(seconds_each((10, 0.4), (280, 0.39)), 0.0);
        assert_eq!(next_probe((10, 0.0)), 20);
        assert_eq!(next_probe((10, 1e-9)), 10 + 1000);
    }

    #[test]
    fn a_function_counts_what_the_long_run_did_more() {
        let map = |pairs: &[(&str, u64)]| {
            pairs
                .iter()
                .map(|(n, c)| (n.to_string(), *c))
                .collect::<BTreeMap<_, _>>()
        };
        let short = map(&[
            ("float8mul", 1_000),
            ("PostgresMain", 5_000),
            ("InitPostgres", 9_000),
        ]);
        let long = map(&[
            ("float8mul", 11_000),
            ("PostgresMain", 6_000),
            ("InitPostgres", 9_000),
        ]);
        let got = functions_per_transaction(&short, &long, 10, 5);
        let names: Vec<_> = got
            .iter()
            .map(|f| (f.name.as_str(), f.per_transaction))
            .collect();
        assert_eq!(names, [("float8mul", 1_000.0), ("PostgresMain", 100.0)]);
        assert!(functions_per_transaction(&short, &long, 0, 5).is_empty());
    }

    #[test]
    fn the_functions_that_moved_most_lead() {
        let run = |pairs: &[(&str, f64)]| {
            pairs
                .iter()
                .map(|(n, c)| FunctionCount {
                    name: n.to_string(),
                    per_transaction: *c,
                })
                .collect::<Vec<_>>()
        };
        let a = [
            run(&[("f", 100.0), ("g", 50.0)]),
            run(&[("f", 102.0), ("g", 50.0)]),
        ];
        let b = [
            run(&[("f", 130.0), ("g", 49.0)]),
            run(&[("f", 130.0), ("h", 5.0)]),
        ];
        let got = function_changes(&a, &b, 2);
        assert_eq!(
            got[0],
            FunctionChange {
                name: "f".into(),
                a: 101.0,
                b: 130.0
            }
        );
        assert_eq!(got[1].name, "g");
        assert_eq!((got[1].a, got[1].b), (50.0, 24.5));
    }

    proptest! {
        /// Whatever the fixed cost of a run, the cost of a transaction is
        /// found exactly when both runs pay the same fixed cost.
        #[test]
        fn a_fixed_cost_never_changes_the_count(
            fixed in 0u64..1_000_000_000,
            each in 1u64..10_000_000,
            short in 1u64..10_000,
            more in 1u64..10_000,
        ) {
            let long = short + more;
            let got = per_transaction(
                &window(short, fixed + short * each),
                &window(long, fixed + long * each),
            ).unwrap();
            prop_assert!((got - each as f64).abs() < 1e-6 * each as f64);
        }
    }
}
