//! The watcher's whole loop over simulated nights: `engine::watch` with
//! its looser detector and the side-by-side confirmation of every
//! candidate, over the simulated lab, under several kinds of noise. How
//! many changes a series confirms that are not there (false alarms per
//! 100 nights), how many nights after it landed a step is confirmed
//! between the right commits, and whether and when a slow drift (small
//! steps night after night) is reported.
//!
//! Each trial: three commits land a day; a first night backfills
//! `--backfill` days (a commit a day), then `--nights` nights are
//! watched, each measuring `--per-night` commits beside the reference
//! (`--rounds` pairs of runs each, 3 as `pgbisect watch` makes them). The
//! store is SQLite, a file of its own each trial.
//!
//! A noise model (`--models`, comma-separated) is the hunt's: a
//! `pgbisect simulate --noise` text (`gaussian:2`, `outliers:2:5:60:80`,
//! ...) or `journal:PATH` (the runs of a real hunt's journal, as
//! `simulate --noise-from-journal` reads them), optionally followed by
//! `+spells:CHANCE:MIN:MAX:LOW:HIGH`: slow spells of the machine
//! ([`pgbisect::lab::sim::spells`]) that begin at a run with CHANCE
//! percent, last MIN to MAX runs and slow every run, the commit's and
//! the reference's alike, by LOW to HIGH percent.
//!
//! A series (`--series`) is `flat`, a step in percent (`-5`, `+10`) that
//! lands at a random commit landing with night `--step-night` of the
//! watch, or `drift:N`: from that night on, the first commit of each of
//! N nights is `--drift-step` percent slower than the one before.
//!
//!     cargo run --release --example study_watch_loop -- --trials 50
//!
//! With `--measure instructions` the series is a count series
//! (`pgbisect watch --measure instructions`): the noise model is that of
//! counted runs (`gaussian:0.2`: they repeat to 0.2%), a step of the
//! level is a step of what instructions buy (`-1`: 1% fewer, about 1%
//! more instructions a transaction), and candidates are decided as
//! counts (their noise floor, fewer runs, a 0.5% threshold).
//!
//! With `STUDY_SHOW_MISSED` set, the changes of each step or drift trial
//! that was not confirmed are printed.

use clap::Parser;
use pgbisect::core::counts::Measure;
use pgbisect::engine::simulate::journal_noise::JournalNoise;
use pgbisect::engine::simulate::options::parse_noise;
use pgbisect::engine::watch::{ProfileLab, WatchConfig, watch_night};
use pgbisect::lab::Lab;
use pgbisect::lab::sim::spells::{SlowSpells, SpellLab};
use pgbisect::lab::sim::{History, NoiseModel, SimLab};
use pgbisect::store::sqlite::SqliteStore;
use pgbisect::store::{ChangeKind, ChangeStatus, Store};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::path::Path;

const DAY: i64 = 86_400;

#[derive(Debug, Parser)]
#[command(name = "study_watch_loop")]
struct Cli {
    /// Histories of each model and series.
    #[arg(long, default_value_t = 50)]
    trials: usize,
    /// Nights watched after the backfill.
    #[arg(long, default_value_t = 100)]
    nights: usize,
    #[arg(long, default_value_t = 30)]
    backfill: usize,
    #[arg(long, default_value_t = 3)]
    per_night: usize,
    /// Pairs of runs (the commit's and the reference's) a commit a night.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// At most this many pairs where the series' pairs scattered (as
    /// `pgbisect watch --max-rounds`; default: --rounds, a fixed count).
    #[arg(long)]
    max_rounds: Option<u32>,
    /// Noise models (see above).
    #[arg(long, value_delimiter = ',', default_values_t = ["gaussian:2".to_string()])]
    models: Vec<String>,
    /// Series: flat, a step in percent (-5, +10), or drift:NIGHTS.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true,
          default_values_t = ["flat".to_string(), "-5".to_string()])]
    series: Vec<String>,
    /// The watched night a step or a drift begins in.
    #[arg(long, default_value_t = 50)]
    step_night: usize,
    /// A drift's loss a night, in percent.
    #[arg(long, default_value_t = 0.5)]
    drift_step: f64,
    /// Rows run at once.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// What the series measures: tps, or instructions (counted runs).
    #[arg(long, default_value = "tps", value_parser = Measure::parse)]
    measure: Measure,
}

/// A noise model: the hunt's run-to-run noise, and the machine's spells.
#[derive(Clone)]
struct Model {
    name: String,
    noise: NoiseModel,
    spells: Option<SlowSpells>,
}

fn model(text: &str) -> anyhow::Result<Model> {
    let (base, spells) = match text.split_once("+spells:") {
        Some((base, s)) => (base, Some(spells(s)?)),
        None => (text, None),
    };
    let noise = match base.strip_prefix("journal:") {
        Some(path) => {
            let found = JournalNoise::load(Path::new(path))?;
            eprintln!("{path}: {}", found.describe());
            NoiseModel::empirical(found.residuals)
                .ok_or_else(|| anyhow::anyhow!("{path}: too few runs"))?
        }
        None => parse_noise(base).map_err(anyhow::Error::msg)?,
    };
    let name = match base.strip_prefix("journal:") {
        Some(path) => format!(
            "journal:{}{}",
            journal_name(path),
            text.strip_prefix(base).unwrap_or("")
        ),
        None => text.to_string(),
    };
    Ok(Model {
        name,
        noise,
        spells,
    })
}

/// A journal's hunt directory name, short.
fn journal_name(path: &str) -> String {
    let p = Path::new(path);
    let hunt = p.parent().and_then(|d| d.file_name());
    let work = p
        .parent()
        .and_then(|d| d.parent())
        .and_then(|d| d.parent())
        .and_then(|d| d.file_name());
    match (work, hunt) {
        (Some(w), _) => w.to_string_lossy().into_owned(),
        (None, Some(h)) => h.to_string_lossy().into_owned(),
        _ => path.to_string(),
    }
}

fn spells(text: &str) -> anyhow::Result<SlowSpells> {
    let f: Vec<f64> = text
        .split(':')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()?;
    let [chance, min, max, low, high] = f[..] else {
        anyhow::bail!("spells:CHANCE:MIN:MAX:LOW:HIGH, not spells:{text}");
    };
    Ok(SlowSpells {
        chance: chance / 100.0,
        runs: (min as usize, max as usize),
        slower: (low / 100.0, high / 100.0),
    })
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Flat,
    /// A step of this relative size (negative: slower).
    Step(f64),
    /// A loss a night over this many nights.
    Drift(usize),
}

fn kind(text: &str) -> anyhow::Result<Kind> {
    if text == "flat" {
        return Ok(Kind::Flat);
    }
    if let Some(n) = text.strip_prefix("drift:") {
        return Ok(Kind::Drift(n.parse()?));
    }
    Ok(Kind::Step(text.parse::<f64>()? / 100.0))
}

/// What one trial gave: changes confirmed that are not the step or drift,
/// and the night the step or drift was first confirmed (counted from the
/// night it began landing), with the drift so far then.
struct Trial {
    wrong: usize,
    delay: Option<i64>,
    /// Whether that first confirmation was a drift's.
    as_drift: bool,
}

/// The positions where `kind` changes the level, and their factors.
fn steps(cli: &Cli, kind: Kind, rng: &mut StdRng) -> Vec<(usize, f64)> {
    let first = 3 * (cli.backfill + cli.step_night);
    match kind {
        Kind::Flat => vec![],
        Kind::Step(s) => vec![(first + rng.random_range(1..=3), 1.0 + s)],
        Kind::Drift(n) => (0..n)
            .map(|k| (first + 1 + 3 * k, 1.0 - cli.drift_step / 100.0))
            .collect(),
    }
}

fn trial(cli: &Cli, model: &Model, kind: Kind, seed: u64) -> anyhow::Result<Trial> {
    let mut rng = StdRng::seed_from_u64(seed);
    let days = cli.backfill + cli.nights + 1;
    let steps = steps(cli, kind, &mut rng);
    let span = steps.first().map(|s| s.0).zip(steps.last().map(|s| s.0));
    let history = History {
        len: 3 * days,
        steps,
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    let line = history.landing_every(DAY / 3);
    let position = |id: &str| line.iter().position(|l| l.commit.id == id);
    let sim = SimLab::new(history, model.noise.clone(), rng.random());
    let sim: Box<dyn Lab> = match cli.measure {
        Measure::Tps => Box::new(sim),
        Measure::Instructions => Box::new(sim.counting(model.noise.clone())),
    };
    let lab: Box<dyn Lab> = match model.spells {
        Some(s) => Box::new(SpellLab::new(sim, s, rng.random())),
        None => sim,
    };
    let mut labs = vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8],
        lab,
        placements: vec![],
        measures: vec![cli.measure],
    }];
    // A file of its own each trial: the store opens files only, and a
    // `:memory:` path would be one file every trial shared.
    let dir = tempfile::tempdir()?;
    let mut store = SqliteStore::open(&dir.path().join("watch.sqlite"))?;
    let cfg = WatchConfig {
        backfill: cli.backfill,
        per_night: cli.per_night,
        rounds: cli.rounds,
        max_rounds: cli.max_rounds.unwrap_or(cli.rounds),
        ..WatchConfig::new("master")
    };
    let mut out = Trial {
        wrong: 0,
        delay: None,
        as_drift: false,
    };
    for night in 0..=cli.nights {
        let day = (cli.backfill + night) as i64;
        let clock = (day + 1) * DAY - 1;
        let w = watch_night(&mut store, &mut labs, &line, clock, &cfg, &mut |_| {})?;
        for c in w
            .changes
            .iter()
            .filter(|c| c.status == ChangeStatus::Confirmed)
        {
            let right = span.is_some_and(|(first, last)| {
                position(&c.before).is_some_and(|b| b < last)
                    && position(&c.after).is_some_and(|a| a >= first)
            });
            match span {
                Some((first, _)) if right => {
                    if out.delay.is_none() {
                        out.delay = Some(day - first as i64 / 3);
                        out.as_drift = c.kind == ChangeKind::Drift;
                    }
                }
                _ => out.wrong += 1,
            }
        }
    }
    if std::env::var_os("STUDY_SHOW_MISSED").is_some() && span.is_some() && out.delay.is_none() {
        for c in store.changes("master")? {
            eprintln!(
                "  missed {kind:?} at {span:?}: {:?} {:?}..{:?} {:+.1}% p={:.3}",
                c.status,
                position(&c.before),
                position(&c.after),
                c.pct,
                c.p_value
            );
        }
    }
    Ok(out)
}

fn percentile(sorted: &[i64], p: f64) -> String {
    if sorted.is_empty() {
        return "-".into();
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].to_string()
}

/// A seed of its own for each row, whatever else is run beside it.
fn row_seed(seed: u64, model: &str, series: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in model.bytes().chain([0]).chain(series.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One row of the table: `trials` series of one kind under one model.
fn row(cli: &Cli, model: &Model, series: &str) -> anyhow::Result<String> {
    let kind = kind(series)?;
    let mut rng = StdRng::seed_from_u64(row_seed(cli.seed, &model.name, series));
    let (mut wrong, mut delays, mut drifts) = (0usize, Vec::new(), 0usize);
    for _ in 0..cli.trials {
        let t = trial(cli, model, kind, rng.random())?;
        wrong += t.wrong;
        delays.extend(t.delay);
        drifts += usize::from(t.as_drift);
    }
    delays.sort();
    let watched = (cli.trials * cli.nights) as f64;
    let found = match kind {
        Kind::Flat => "-".to_string(),
        _ if drifts > 0 => format!("{}/{} ({drifts} as a drift)", delays.len(), cli.trials),
        _ => format!("{}/{}", delays.len(), cli.trials),
    };
    let within = match kind {
        Kind::Step(_) => format!(
            "{}/{}",
            delays.iter().filter(|d| **d <= 2).count(),
            cli.trials
        ),
        _ => "-".to_string(),
    };
    Ok(format!(
        "| {} | {} | {:.2} | {} | {} | {} / {} / {} |",
        model.name,
        series,
        wrong as f64 / watched * 100.0,
        found,
        within,
        percentile(&delays, 0.5),
        percentile(&delays, 0.9),
        delays.last().map_or("-".into(), |d| d.to_string())
    ))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let models: Vec<Model> = cli
        .models
        .iter()
        .map(|m| model(m))
        .collect::<anyhow::Result<_>>()?;
    for s in &cli.series {
        kind(s)?;
    }
    let rows: Vec<(&Model, &String)> = models
        .iter()
        .flat_map(|m| cli.series.iter().map(move |s| (m, s)))
        .collect();
    println!(
        "{}: per night {}, {} to {} pairs of runs a commit, {} nights watched, {} trials a row, \
         seed {}",
        cli.measure,
        cli.per_night,
        cli.rounds,
        cli.max_rounds.unwrap_or(cli.rounds),
        cli.nights,
        cli.trials,
        cli.seed
    );
    println!(
        "| noise | series | false confirmed per 100 nights | confirmed | within 2 nights \
         | nights to confirm (median / p90 / max) |"
    );
    println!("|---|---|---|---|---|---|");
    let jobs = cli.jobs.max(1);
    let results: Vec<anyhow::Result<Vec<(usize, String)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| {
                let (cli, rows) = (&cli, &rows);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (k, (m, s)) in rows.iter().enumerate().skip(j).step_by(jobs) {
                        let line = row(cli, m, s)?;
                        eprintln!("{line}");
                        out.push((k, line));
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a row panicked")))
            })
            .collect()
    });
    let mut lines = Vec::new();
    for r in results {
        lines.extend(r?);
    }
    lines.sort();
    for (_, line) in lines {
        println!("{line}");
    }
    Ok(())
}
