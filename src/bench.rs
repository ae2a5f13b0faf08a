//! pgbench command lines and output parsing.
//!
//! A hunt runs pgbench builds from many years against servers from many
//! years, so everything here is written for the oldest and the newest forms
//! at once: command lines that 2016's pgbench accepts (`-M` before the
//! workload, `-S`/`-N` rather than `-b`), and a parser that reads every
//! version's result lines. Building the command line and parsing the output
//! are pure; running pgbench lives in [`crate::server`].

pub mod instruments;
pub mod scripts;

pub use scripts::WeightedScript;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A pgbench builtin workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// TPC-B (sort of): pgbench's default, no flag.
    TpcbLike,
    /// `-S`: one primary-key SELECT a transaction.
    SelectOnly,
    /// `-N`: TPC-B without the updates of tellers and branches.
    SimpleUpdate,
}

/// How pgbench sends queries (`-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueryMode {
    #[default]
    Simple,
    Extended,
    Prepared,
}

impl QueryMode {
    /// The word pgbench takes after `-M`.
    pub fn as_arg(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// What one run executes: a builtin, a custom script file, or several
/// weighted ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    Builtin(Builtin),
    Script(PathBuf),
    Scripts(Vec<WeightedScript>),
}

/// A pgbench workload as a profile describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct PgbenchOptions {
    /// Builtin workload; select-only when neither this nor `script` is given.
    pub builtin: Option<Builtin>,
    /// Custom script (`-f`); excludes `builtin`.
    pub script: Option<PathBuf>,
    /// Several scripts with weights (`-f FILE@W`, pgbench 9.6 and later);
    /// excludes `builtin` and `script`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<WeightedScript>,
    /// SQL run with psql once on the data template after `pgbench -i`
    /// (tables, functions, `ALTER DATABASE ... SET`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup: Option<PathBuf>,
    /// The setup SQL's text, read once when the profile was loaded: the
    /// template's name, its marker and what psql runs all come from it.
    #[serde(skip)]
    pub setup_sql: Option<Vec<u8>>,
    /// `-M`; prepared when a profile does not say (pgbench's own default
    /// is simple, which mostly measures parsing and planning).
    pub mode: QueryMode,
    pub clients: u32,
    /// Worker threads (`-j`); when not given, as many as `cpus`, or as
    /// clients when that is unknown.
    pub threads: Option<u32>,
    /// CPUs of the machine pgbench runs on: more threads than CPUs only
    /// make the load generator compete with the server it measures.
    #[serde(skip)]
    pub cpus: Option<u32>,
    pub duration_secs: u32,
    /// Scale factor for `pgbench -i`.
    pub scale: u32,
    /// Runs made and discarded after each server start (caches are cold).
    pub warmup_runs: u32,
    /// Length of a warm-up run; `duration_secs` when not given.
    pub warmup_secs: Option<u32>,
    /// Passed to pgbench as they are, before the database name.
    pub extra_args: Vec<String>,
}

impl Default for PgbenchOptions {
    fn default() -> Self {
        PgbenchOptions {
            builtin: None,
            script: None,
            scripts: Vec::new(),
            setup: None,
            setup_sql: None,
            mode: QueryMode::Prepared,
            clients: 1,
            threads: None,
            cpus: None,
            duration_secs: 10,
            scale: 10,
            warmup_runs: 1,
            warmup_secs: None,
            extra_args: Vec::new(),
        }
    }
}

/// A workload description that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("both `builtin` and `script` are set: choose one workload")]
    BuiltinAndScript,
    #[error("`scripts` is set with `builtin` or `script`: choose one workload")]
    ScriptsAndOther,
    #[error("`{field}` must be at least 1 (got 0)")]
    Zero { field: &'static str },
}

impl PgbenchOptions {
    /// Checks the rules serde cannot: one workload, counts of at least 1.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.builtin.is_some() && self.script.is_some() {
            return Err(OptionsError::BuiltinAndScript);
        }
        if !self.scripts.is_empty() && (self.builtin.is_some() || self.script.is_some()) {
            return Err(OptionsError::ScriptsAndOther);
        }
        let counts = [
            ("clients", Some(self.clients)),
            ("threads", self.threads),
            ("duration-secs", Some(self.duration_secs)),
            ("scale", Some(self.scale)),
            ("warmup-secs", self.warmup_secs),
        ];
        match counts.iter().find(|(_, value)| *value == Some(0)) {
            Some((field, _)) => Err(OptionsError::Zero { field }),
            None => Ok(()),
        }
    }

    /// The workload one run executes.
    pub fn workload(&self) -> Workload {
        if !self.scripts.is_empty() {
            return Workload::Scripts(self.scripts.clone());
        }
        match (&self.script, self.builtin) {
            (Some(script), _) => Workload::Script(script.clone()),
            (None, builtin) => Workload::Builtin(builtin.unwrap_or(Builtin::SelectOnly)),
        }
    }

    /// Threads for a run with `clients` clients: the profile's `threads`,
    /// else one a CPU; never more than the clients, and a divisor of them,
    /// because pgbench up to 9.5 refuses "number of clients must be a
    /// multiple of number of threads".
    pub fn threads_for(&self, clients: u32) -> u32 {
        let clients = clients.max(1);
        let wanted = self
            .threads
            .or(self.cpus)
            .unwrap_or(clients)
            .clamp(1, clients);
        (1..=wanted)
            .rev()
            .find(|threads| clients.is_multiple_of(*threads))
            .unwrap_or(1)
    }

    /// Length of a warm-up run in seconds.
    pub fn warmup_duration(&self) -> u32 {
        self.warmup_secs.unwrap_or(self.duration_secs)
    }
}

/// Where pgbench connects: a server's private Unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conn {
    pub socket_dir: PathBuf,
    pub port: u16,
    pub dbname: String,
}

impl Conn {
    /// `-h SOCKETDIR -p PORT`, understood by every client program.
    pub fn host_args(&self) -> Vec<String> {
        vec![
            "-h".to_string(),
            self.socket_dir.display().to_string(),
            "-p".to_string(),
            self.port.to_string(),
        ]
    }
}

/// `pgbench -i -s SCALE -q ... DBNAME`: creates the pgbench tables.
pub fn init_args(opts: &PgbenchOptions, conn: &Conn) -> Vec<String> {
    let mut args = vec![
        "-i".to_string(),
        "-s".to_string(),
        opts.scale.to_string(),
        "-q".to_string(),
    ];
    args.extend(conn.host_args());
    args.push(conn.dbname.clone());
    args
}

/// The arguments of one timed run.
///
/// `-M` comes before the workload flag, as pgbench 9.6 requires. Builtins
/// use the flags every version knows: none for TPC-B, `-S`, `-N`.
///
/// About `-n`: pgbench by default vacuums the small pgbench tables and
/// truncates `pgbench_history` before each run. That keeps repeated runs on
/// one server comparable (the history table would otherwise grow run after
/// run), and it is what people comparing by hand measured, so builtin
/// workloads keep it. A custom script may not use the pgbench tables at all,
/// so it gets `-n`.
pub fn run_args(
    opts: &PgbenchOptions,
    clients: u32,
    duration_secs: u32,
    conn: &Conn,
) -> Vec<String> {
    args_for(
        opts,
        clients,
        ["-T", &duration_secs.max(1).to_string()],
        conn,
    )
}

/// The arguments of a counted run: `per_client` transactions a client
/// (`-t`) instead of a length in seconds, and with `seed` the random
/// draws seeded (`--random-seed`, pgbench 11 on): every run then draws
/// the same scripts of a weighted mix, in the same order, with the same
/// variables, and its instructions a transaction do not move with the
/// draw.
pub fn counted_args(
    opts: &PgbenchOptions,
    clients: u32,
    per_client: u64,
    (conn, seed): (&Conn, Option<u64>),
) -> Vec<String> {
    let mut args = args_for(opts, clients, ["-t", &per_client.max(1).to_string()], conn);
    if let Some(seed) = seed {
        // Options before the database name, which ends the list.
        let at = args.len().saturating_sub(1);
        args.insert(at, format!("--random-seed={seed}"));
    }
    args
}

/// Whether a pgbench run failed for not knowing `--random-seed` (before
/// pgbench 11).
pub fn refused_random_seed(failure: &str) -> bool {
    failure.contains("--random-seed")
        && (failure.contains("unrecognized option") || failure.contains("invalid option"))
}

fn args_for(opts: &PgbenchOptions, clients: u32, length: [&str; 2], conn: &Conn) -> Vec<String> {
    let mut args = conn.host_args();
    args.push("-M".to_string());
    args.push(opts.mode.as_arg().to_string());
    match opts.workload() {
        Workload::Builtin(Builtin::TpcbLike) => {}
        Workload::Builtin(Builtin::SelectOnly) => args.push("-S".to_string()),
        Workload::Builtin(Builtin::SimpleUpdate) => args.push("-N".to_string()),
        Workload::Script(script) => {
            args.push("-n".to_string());
            args.push("-f".to_string());
            args.push(absolute(&script).display().to_string());
        }
        Workload::Scripts(scripts) => {
            args.push("-n".to_string());
            for script in scripts {
                args.push("-f".to_string());
                args.push(script.arg());
            }
        }
    }
    let clients = clients.max(1);
    args.extend([
        "-c".to_string(),
        clients.to_string(),
        "-j".to_string(),
        opts.threads_for(clients).to_string(),
        length[0].to_string(),
        length[1].to_string(),
    ]);
    args.extend(opts.extra_args.iter().cloned());
    args.push(conn.dbname.clone());
    args
}

/// pgbench runs with another working directory than ours: scripts are
/// named by absolute path.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What one pgbench run reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgbenchReport {
    /// Transactions per second, without connection time where pgbench says.
    pub tps: f64,
    pub latency_ms: Option<f64>,
    /// `number of failed transactions` (pgbench 15+).
    pub failed_transactions: Option<u64>,
    /// `number of transactions actually processed`.
    pub transactions: Option<u64>,
}

/// pgbench output without a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("pgbench printed no `tps = ` line; its last lines were:\n{tail}")]
    NoTps { tail: String },
    #[error(
        "pgbench printed a tps line that is not a positive number: {line:?} \
         (0 means no transaction completed in the run)"
    )]
    BadTps { line: String },
}

/// Lines of output kept in errors.
pub const TAIL_LINES: usize = 20;

/// The last `n` lines of `text`, for error messages.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Reads a pgbench result from its output (stdout, or stdout and stderr).
///
/// Understands `tps = N (excluding connections establishing)` (up to 13,
/// preferred over the `including` line printed with it), `tps = N (without
/// initial connection time)` (14+), `latency average = X ms` and the older
/// `latency average: X ms`, `number of failed transactions: N (x%)` (15+)
/// and `number of transactions actually processed: N` (or `N/M`).
pub fn parse_output(text: &str) -> Result<PgbenchReport, ParseError> {
    let mut preferred_tps = None;
    let mut other_tps = None;
    let mut report = PgbenchReport {
        tps: f64::NAN,
        latency_ms: None,
        failed_transactions: None,
        transactions: None,
    };
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("tps = ") {
            let (number, note) = rest.split_once(' ').unwrap_or((rest, ""));
            let tps: f64 = match number.parse() {
                Ok(tps) if f64::is_finite(tps) && tps > 0.0 => tps,
                _ => {
                    return Err(ParseError::BadTps {
                        line: line.to_string(),
                    });
                }
            };
            if note.contains("excluding") || note.contains("without") {
                preferred_tps = Some(tps);
            } else {
                other_tps.get_or_insert(tps);
            }
        } else if let Some(rest) = line.strip_prefix("latency average") {
            report.latency_ms = parse_latency(rest);
        } else if let Some(rest) = line.strip_prefix("number of failed transactions:") {
            report.failed_transactions = leading_count(rest);
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed:") {
            report.transactions = leading_count(rest);
        }
    }
    match preferred_tps.or(other_tps) {
        Some(tps) => Ok(PgbenchReport { tps, ..report }),
        None => Err(ParseError::NoTps {
            tail: tail_lines(text, TAIL_LINES),
        }),
    }
}

/// ` = 0.039 ms`, `: 0.039 ms` or ` = 0.345 ms (including failures)`.
fn parse_latency(rest: &str) -> Option<f64> {
    let value = rest.trim_start().strip_prefix(['=', ':'])?.trim_start();
    let number = value.strip_suffix(" ms").unwrap_or(value);
    let number = number.split_whitespace().next()?;
    number.parse().ok().filter(|ms: &f64| ms.is_finite())
}

/// The count at the start of ` 276902`, ` 12 (0.005%)` or ` 1000/1000`.
fn leading_count(rest: &str) -> Option<u64> {
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pgbench")
            .join(name);
        std::fs::read_to_string(&path).unwrap()
    }

    fn conn() -> Conn {
        Conn {
            socket_dir: PathBuf::from("/tmp/sock"),
            port: 5440,
            dbname: "postgres".to_string(),
        }
    }

    #[test]
    fn parses_9_6_output_preferring_excluding() {
        let report = parse_output(&fixture("pg96_select_only.txt")).unwrap();
        assert_eq!(report.tps, 25791.018293);
        assert_eq!(report.latency_ms, Some(0.039));
        assert_eq!(report.transactions, Some(1547387));
        assert_eq!(report.failed_transactions, None);
    }

    /// The good endpoint's pgbench drives every server of a hunt: the
    /// oldest, 2015's, against a server of 15, with pgbisect's own
    /// argument order.
    #[test]
    fn parses_2015_pgbench_against_a_15_server() {
        let select = parse_output(&fixture("pg95_select_only_on_15.txt")).unwrap();
        assert_eq!(select.tps, 14477.021501);
        assert_eq!(select.latency_ms, Some(0.278));
        assert_eq!(select.transactions, Some(43117));
        let tpcb = parse_output(&fixture("pg95_tpcb_like_on_15.txt")).unwrap();
        assert_eq!(tpcb.tps, 993.120240);
        assert_eq!(tpcb.latency_ms, Some(4.032));
        let spring_2016 = parse_output(&fixture("pg96dev_select_only_on_15.txt")).unwrap();
        assert_eq!(spring_2016.tps, 13039.225069);
        assert_eq!(spring_2016.transactions, Some(39035));
    }

    /// What 2015's pgbench refuses, and that pgbisect's arguments avoid it.
    #[test]
    fn old_pgbench_refusals_are_avoided() {
        for refusal in [
            "pg95_threads_not_dividing.txt",
            "pg95_mode_after_script.txt",
        ] {
            let text = fixture(refusal);
            let ParseError::NoTps { tail } = parse_output(&text).unwrap_err() else {
                panic!("{refusal}")
            };
            assert_eq!(tail, text.trim_end());
        }
        let opts = PgbenchOptions {
            builtin: Some(Builtin::SimpleUpdate),
            cpus: Some(2),
            ..PgbenchOptions::default()
        };
        let args = run_args(&opts, 3, 2, &conn()).join(" ");
        assert!(args.contains("-M prepared -N -c 3 -j 1 "), "{args}");
    }

    #[test]
    fn parses_13_output() {
        let report = parse_output(&fixture("pg13_tpcb_like.txt")).unwrap();
        assert_eq!(report.tps, 2318.644290);
        assert_eq!(report.latency_ms, Some(1.725));
        assert_eq!(report.transactions, Some(23184));
    }

    #[test]
    fn parses_real_15_output() {
        let report = parse_output(&fixture("pg15_select_only.txt")).unwrap();
        assert_eq!(report.tps, 138879.373427);
        assert_eq!(report.latency_ms, Some(0.014));
        assert_eq!(report.failed_transactions, Some(0));
        assert_eq!(report.transactions, Some(276902));
    }

    #[test]
    fn parses_17_output_with_failures() {
        let report = parse_output(&fixture("pg17_simple_update.txt")).unwrap();
        assert_eq!(report.tps, 23190.118845);
        assert_eq!(report.latency_ms, Some(0.345));
        assert_eq!(report.failed_transactions, Some(12));
        assert_eq!(report.transactions, Some(231875));
    }

    #[test]
    fn excluding_wins_whatever_the_order() {
        let text = "tps = 2.0 (excluding connections establishing)\n\
                    tps = 1.0 (including connections establishing)\n";
        assert_eq!(parse_output(text).unwrap().tps, 2.0);
    }

    #[test]
    fn transactions_with_a_fixed_count() {
        let text = "number of transactions actually processed: 1000/1000\ntps = 5.5 (foo)\n";
        let report = parse_output(text).unwrap();
        assert_eq!(report.transactions, Some(1000));
        assert_eq!(report.tps, 5.5);
    }

    #[test]
    fn no_tps_is_an_error_with_the_tail() {
        let text = fixture("no_tps_connection_refused.txt");
        let err = parse_output(&text).unwrap_err();
        let ParseError::NoTps { tail } = &err else {
            panic!("{err:?}")
        };
        assert!(tail.contains("could not create connection"));
        let long: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let ParseError::NoTps { tail } = parse_output(&long).unwrap_err() else {
            panic!()
        };
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.starts_with("line 30") && tail.ends_with("line 49"));
    }

    #[test]
    fn bad_tps_is_an_error() {
        assert!(matches!(
            parse_output("tps = nan (without initial connection time)"),
            Err(ParseError::BadTps { .. })
        ));
        for zero in [
            "tps = 0",
            "tps = 0.000000 (without initial connection time)",
        ] {
            let err = parse_output(zero).unwrap_err();
            assert!(
                err.to_string().contains("no transaction completed"),
                "{err}"
            );
        }
    }

    #[test]
    fn run_args_put_mode_before_the_workload() {
        let opts = PgbenchOptions::default();
        let args = run_args(&opts, 4, 5, &conn());
        let expected = "-h /tmp/sock -p 5440 -M prepared -S -c 4 -j 4 -T 5 postgres";
        assert_eq!(args.join(" "), expected);
        let update = PgbenchOptions {
            builtin: Some(Builtin::SimpleUpdate),
            mode: QueryMode::Simple,
            threads: Some(2),
            extra_args: vec!["-r".to_string()],
            ..PgbenchOptions::default()
        };
        let expected = "-h /tmp/sock -p 5440 -M simple -N -c 8 -j 2 -T 10 -r postgres";
        assert_eq!(run_args(&update, 8, 10, &conn()).join(" "), expected);
        let tpcb = PgbenchOptions {
            builtin: Some(Builtin::TpcbLike),
            ..PgbenchOptions::default()
        };
        let args = run_args(&tpcb, 1, 10, &conn());
        assert!(!args.iter().any(|a| a == "-S" || a == "-N" || a == "-b"));
    }

    #[test]
    fn counted_runs_are_seeded_before_the_database_when_pgbench_takes_it() {
        let opts = PgbenchOptions::default();
        let seeded = counted_args(&opts, 1, 200, (&conn(), Some(1)));
        let expected =
            "-h /tmp/sock -p 5440 -M prepared -S -c 1 -j 1 -t 200 --random-seed=1 postgres";
        assert_eq!(seeded.join(" "), expected);
        let unseeded = counted_args(&opts, 1, 200, (&conn(), None));
        assert!(!unseeded.iter().any(|a| a.starts_with("--random-seed")));
        assert!(refused_random_seed(
            "pgbench: unrecognized option '--random-seed=1'\nTry \"pgbench --help\""
        ));
        assert!(!refused_random_seed(
            "pgbench: unrecognized option '--log-prefix=x'"
        ));
    }

    #[test]
    fn scripts_are_absolute_and_skip_vacuum() {
        let opts = PgbenchOptions {
            script: Some(PathBuf::from("bench/custom.sql")),
            ..PgbenchOptions::default()
        };
        let args = run_args(&opts, 1, 3, &conn());
        let f = args.iter().position(|a| a == "-f").unwrap();
        assert!(args.iter().position(|a| a == "-M").unwrap() < f);
        assert!(Path::new(&args[f + 1]).is_absolute());
        assert!(args.contains(&"-n".to_string()));
    }

    #[test]
    fn weighted_scripts_each_get_their_own_f() {
        let opts = PgbenchOptions {
            scripts: vec![
                WeightedScript::parse("w/a.sql@9").unwrap(),
                WeightedScript::parse("w/b.sql").unwrap(),
            ],
            ..PgbenchOptions::default()
        };
        opts.validate().unwrap();
        let args = run_args(&opts, 1, 3, &conn());
        let fs: Vec<&String> = args
            .iter()
            .enumerate()
            .filter(|(i, _)| *i > 0 && args[i - 1] == "-f")
            .map(|(_, a)| a)
            .collect();
        assert_eq!(fs.len(), 2, "{args:?}");
        assert!(
            fs[0].ends_with("w/a.sql@9") && fs[0].starts_with('/'),
            "{fs:?}"
        );
        assert!(fs[1].ends_with("w/b.sql"), "{fs:?}");
        assert!(args.contains(&"-n".to_string()));
        assert!(
            args.iter().position(|a| a == "-M").unwrap()
                < args.iter().position(|a| a == "-f").unwrap()
        );
        let both = PgbenchOptions {
            builtin: Some(Builtin::SelectOnly),
            ..opts
        };
        assert_eq!(both.validate(), Err(OptionsError::ScriptsAndOther));
    }

    #[test]
    fn threads_never_exceed_clients() {
        let opts = PgbenchOptions {
            threads: Some(8),
            ..PgbenchOptions::default()
        };
        assert_eq!(opts.threads_for(2), 2);
        assert_eq!(opts.threads_for(16), 8);
    }

    #[test]
    fn threads_default_to_the_cpus_and_divide_the_clients() {
        let two_cpus = PgbenchOptions {
            cpus: Some(2),
            ..PgbenchOptions::default()
        };
        assert_eq!(two_cpus.threads_for(128), 2);
        assert_eq!(two_cpus.threads_for(1), 1);
        assert_eq!(
            two_cpus.threads_for(7),
            1,
            "7 clients on 2 threads: 9.5 refuses"
        );
        let big_box = PgbenchOptions {
            cpus: Some(72),
            ..PgbenchOptions::default()
        };
        // Seed 000 ran 128 clients on -j 64.
        assert_eq!(big_box.threads_for(128), 64);
        assert_eq!(big_box.threads_for(72), 72);
        let profile_says = PgbenchOptions {
            threads: Some(12),
            cpus: Some(2),
            ..PgbenchOptions::default()
        };
        assert_eq!(profile_says.threads_for(128), 8);
        assert_eq!(profile_says.threads_for(96), 12);
        let unknown = PgbenchOptions::default();
        assert_eq!(unknown.threads_for(16), 16);
    }

    #[test]
    fn init_args_name_scale_and_socket() {
        let opts = PgbenchOptions {
            scale: 3,
            ..PgbenchOptions::default()
        };
        assert_eq!(
            init_args(&opts, &conn()).join(" "),
            "-i -s 3 -q -h /tmp/sock -p 5440 postgres"
        );
    }

    #[test]
    fn options_from_toml_with_defaults_and_validation() {
        let opts: PgbenchOptions =
            toml::from_str("builtin = \"tpcb-like\"\nmode = \"extended\"\nclients = 4\n").unwrap();
        assert_eq!(opts.workload(), Workload::Builtin(Builtin::TpcbLike));
        assert_eq!(opts.mode, QueryMode::Extended);
        assert_eq!(
            (opts.scale, opts.duration_secs, opts.warmup_runs),
            (10, 10, 1)
        );
        assert_eq!(
            PgbenchOptions::default().workload(),
            Workload::Builtin(Builtin::SelectOnly)
        );
        assert!(toml::from_str::<PgbenchOptions>("client = 4").is_err());
        let both: PgbenchOptions =
            toml::from_str("builtin = \"select-only\"\nscript = \"a.sql\"").unwrap();
        assert_eq!(both.validate(), Err(OptionsError::BuiltinAndScript));
        let zero: PgbenchOptions = toml::from_str("clients = 0").unwrap();
        assert_eq!(
            zero.validate(),
            Err(OptionsError::Zero { field: "clients" })
        );
        assert_eq!(PgbenchOptions::default().validate(), Ok(()));
    }

    proptest::proptest! {
        /// Any output, a killed pgbench's or a stranger's, is read without
        /// panic, and a result is only ever taken from a `tps = ` line
        /// holding a positive, finite number.
        #[test]
        fn any_output_reads_without_panic_or_invented_results(text in "(?s).{0,300}") {
            if let Ok(report) = parse_output(&text) {
                proptest::prop_assert!(report.tps.is_finite() && report.tps > 0.0);
                proptest::prop_assert!(text.contains("tps = "));
            }
        }

        #[test]
        fn a_tps_line_is_taken_only_when_it_is_a_positive_number(
            number in "[-+0-9.eEinfaN]{0,12}",
            before in "(?s).{0,80}",
        ) {
            let text = format!("{before}\ntps = {number} (without initial connection time)\n");
            let parsed: Option<f64> = number.parse().ok();
            match parse_output(&text) {
                Ok(report) => proptest::prop_assert_eq!(Some(report.tps), parsed),
                Err(_) => proptest::prop_assert!(
                    !parsed.is_some_and(|t| t.is_finite() && t > 0.0) || before.contains("tps = ")
                ),
            }
        }
    }
}
