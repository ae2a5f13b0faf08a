//! CPU profiles of two commits under the same pgbench load, and their
//! difference: the table of risers and fallers and a differential flame
//! graph. Both commits are built with frame pointers (their installs are
//! kept apart from unprofiled ones by the build cache's key); the runs of
//! the two alternate, each one a fresh server on a fresh copy of the data.
//!
//!     cargo run --release --example profile_pair -- --repo ~/src/postgres \
//!         --before PARENT --after CULPRIT --work-dir /var/tmp/profile-pair
//!
//! Writes `before.folded`, `after.folded`, `profile-diff.txt` and
//! `profile-diff.svg` into `<work dir>/profile`, and prints the table and
//! what profiling cost: each profiled run follows a run of the same commit
//! without perf, and the two are set side by side (throughput, and wall
//! time from pgbench's start to the profile folded).

use anyhow::{Context, bail};
use clap::Parser;
use pgbisect::bench::{self, Builtin, PgbenchOptions, QueryMode};
use pgbisect::build::{BuildOutcome, BuildSettings, Builder};
use pgbisect::lab::LabDirs;
use pgbisect::perf::{self, Folded, PerfSampler, Plan, Request, Sampler, Unavailable};
use pgbisect::placement::Pin;
use pgbisect::repo::{Repo, WorkTree};
use pgbisect::server::{
    DataTemplate, RunAs, Server, SocketDir, TemplateSpec, fresh_copy, pick_port, time_limit,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// The PostgreSQL git repository.
    #[arg(long, required_unless_present = "table_of")]
    repo: Option<PathBuf>,
    /// The commit profiled first (the parent of a culprit).
    #[arg(long, required_unless_present = "table_of")]
    before: Option<String>,
    /// The commit set against it (the culprit).
    #[arg(long, required_unless_present = "table_of")]
    after: Option<String>,
    /// Where checkouts, builds, data and the results go.
    #[arg(long, required_unless_present = "table_of")]
    work_dir: Option<PathBuf>,
    /// Only print the table of the profiles written before into this
    /// folder (`before.folded`, `after.folded`).
    #[arg(long, value_name = "DIR")]
    table_of: Option<PathBuf>,
    /// Rounds: each runs both commits without and with perf.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Length of each pgbench run, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    #[arg(long, default_value_t = 1)]
    clients: u32,
    #[arg(long, default_value_t = 10)]
    scale: u32,
    /// Samples a second (per CPU) taken by perf (default: pgbisect's).
    #[arg(long)]
    frequency: Option<u32>,
    /// Also keep each profiled run's `perf script` text in this folder.
    #[arg(long)]
    keep_scripts: Option<PathBuf>,
}

/// The real sampler, keeping a copy of what `perf script` printed.
struct Keeping {
    dir: Option<PathBuf>,
    name: String,
}

impl Sampler for Keeping {
    fn record(&self, req: &Request) -> anyhow::Result<Result<String, Unavailable>> {
        let recorded = PerfSampler::default().record(req)?;
        if let (Some(dir), Ok(text)) = (&self.dir, &recorded) {
            pgbisect::folders::create_dir(dir)?;
            pgbisect::files::write(&dir.join(&self.name), text)?;
        }
        Ok(recorded)
    }
}

/// One commit, built and ready to run.
struct Side {
    label: String,
    short: String,
    bin: PathBuf,
    template: DataTemplate,
    profile: Folded,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(dir) = &args.table_of {
        let read = |name: &str| -> anyhow::Result<Folded> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(Folded::parse(&text)?)
        };
        let diff = perf::ProfileDiff::between(&read("before.folded")?, &read("after.folded")?);
        print!("{}", diff.table(perf::TABLE_ROWS));
        return Ok(());
    }
    let (Some(work), Some(repo), Some(before), Some(after)) =
        (&args.work_dir, &args.repo, &args.before, &args.after)
    else {
        bail!("give --repo, --before, --after and --work-dir (or --table-of DIR)");
    };
    pgbisect::folders::create_dir(work)?;
    let run_as = RunAs::resolve(None)?;
    let options = PgbenchOptions {
        scale: args.scale,
        builtin: Some(Builtin::SelectOnly),
        mode: QueryMode::Prepared,
        ..Default::default()
    };
    let repo = Repo::open(repo)?;
    let mut tree = WorkTree::open_or_create(&repo, &work.join("checkout"))?;
    let dirs = LabDirs::under(work);
    let mut builder = Builder::new(&dirs, BuildSettings::default().for_profiling(), 10)?;
    let mut sides = Vec::new();
    for rev in [before, after] {
        let commit = repo.resolve(rev)?;
        tree.checkout(&commit.id)?;
        let started = Instant::now();
        let prefix = match builder.ensure(&commit.id, tree.path())? {
            BuildOutcome::Installed { prefix, .. } => prefix,
            BuildOutcome::Failed { reason, .. } => bail!("{rev} does not build: {reason}"),
        };
        eprintln!("{rev}: built in {:.0} s", started.elapsed().as_secs_f64());
        let bin = prefix.join("bin");
        let spec = TemplateSpec {
            bin: bin.clone(),
            pgbench: bin.join("pgbench"),
            dir: dirs.templates.join(&commit.id),
            options: options.clone(),
            run_as: run_as.clone(),
            registry_dir: Some(dirs.servers.clone()),
        };
        let (template, _) = DataTemplate::ensure(&spec)?;
        sides.push(Side {
            label: format!("{rev} ({})", commit.short()),
            short: commit.short().to_string(),
            bin,
            template,
            profile: Folded::default(),
        });
    }
    let sockets = SocketDir::create(&run_as)?;
    let lab = Lab {
        args: &args,
        options: &options,
        sockets: &sockets,
        dirs: &dirs,
        run_as: &run_as,
    };
    // Each round: per side, a run without perf (the throughput and wall
    // time to set the profiled run against), then a profiled one.
    let mut costs = Vec::new();
    for run in 1..=args.runs {
        for side in &mut sides {
            let plain = one_run(side, &lab, None)?;
            let sampler = Arc::new(Keeping {
                dir: args.keep_scripts.clone(),
                name: format!("{}-run{run}.perf-script", side.short),
            });
            let profiled = one_run(side, &lab, Some(sampler))?;
            eprintln!(
                "{} run {run}: {:.0} tps in {:.1} s; profiled {:.0} tps in {:.1} s",
                side.label,
                plain.tps,
                plain.wall.as_secs_f64(),
                profiled.tps,
                profiled.wall.as_secs_f64()
            );
            costs.push((
                profiled.tps / plain.tps,
                (profiled.wall - plain.wall.min(profiled.wall)).as_secs_f64(),
            ));
            if let Some(folded) = profiled.profile {
                for (frames, count) in folded.stacks() {
                    side.profile.add(&frames.join(";"), count);
                }
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!(
        "profiling cost, median of {} pairs: throughput x{:.2}, {:.1} s more wall time a run",
        costs.len(),
        median(costs.iter().map(|c| c.0).collect()),
        median(costs.iter().map(|c| c.1).collect())
    );
    let title = format!("{} against {}", sides[1].label, sides[0].label);
    let out = work.join("profile");
    let written = perf::write_comparison(&out, &sides[0].profile, &sides[1].profile, &title)?;
    println!("{}", written.table);
    println!("written: {}", out.display());
    Ok(())
}

/// What one run gave.
struct Ran {
    tps: f64,
    /// From pgbench's start to the profile in hand.
    wall: Duration,
    profile: Option<Folded>,
}

/// Where runs happen and with what.
struct Lab<'a> {
    args: &'a Args,
    options: &'a PgbenchOptions,
    sockets: &'a SocketDir,
    dirs: &'a LabDirs,
    run_as: &'a RunAs,
}

/// One run of `side` on a fresh server, sampled by `sampler` if given.
fn one_run(side: &Side, lab: &Lab, sampler: Option<Arc<dyn Sampler>>) -> anyhow::Result<Ran> {
    let (args, dirs) = (lab.args, lab.dirs);
    let data_dir = dirs.data.join("profile");
    fresh_copy(&side.template, &data_dir)?;
    let server = Server {
        bin: side.bin.clone(),
        data_dir,
        port: pick_port(lab.sockets.path()),
        socket_dir: lab.sockets.path().to_path_buf(),
        settings: Vec::new(),
        log: dirs.logs.join("profile-server.log"),
        run_as: lab.run_as.clone(),
        registry_dir: Some(dirs.servers.clone()),
        pin: Pin::none(),
        launcher: None,
    }
    .start()?;
    let conn = server.conn("postgres");
    let pgbench_args = bench::run_args(lab.options, args.clients, args.seconds, &conn);
    let out = dirs.logs.join("profile-pgbench.txt");
    let pgbench = || {
        server.run_pgbench(
            &side.bin.join("pgbench"),
            &pgbench_args,
            &Pin::none(),
            &out,
            time_limit(args.seconds),
        )
    };
    let started = Instant::now();
    let (profile, tps) = match sampler {
        Some(sampler) => {
            let within = Plan::within(Duration::from_secs(args.seconds.into()));
            let plan = Plan {
                frequency: args.frequency.unwrap_or(within.frequency),
                ..within
            };
            let (recorded, tps) =
                perf::record_during(sampler, server.pid(), &plan, &scratch(dirs), pgbench);
            (Some(recorded?.map_err(anyhow::Error::new)?), tps)
        }
        None => (None, pgbench()),
    };
    let wall = started.elapsed();
    server.stop()?;
    let tps = tps.context("pgbench failed")?.tps;
    Ok(Ran { tps, wall, profile })
}

fn scratch(dirs: &LabDirs) -> PathBuf {
    dirs.data.parent().unwrap_or(Path::new("/tmp")).join("perf")
}
