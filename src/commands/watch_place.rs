//! Where the watcher's results are and what it measures, as every
//! `watch` action names them: the branch, repository, work dir and store
//! flags ([`Place`]), the store they name, the lab's flags, the
//! profiles loaded from `--profile` and `--clients`, and how large a
//! change must be to be confirmed ([`Thresholds`]).

use super::args::LabArgs;
use super::output::check_writable_file;
use super::plan::load_profile_with_text;
use super::values;
use crate::engine::session::watch::WatchedProfile;
use crate::engine::watch::{WatchConfig, WatchMeasures};
use crate::error::UsageError;
use crate::store::place::StoreAt;
use clap::Args;
use std::path::PathBuf;

/// Which branch, which repository, which work dir.
#[derive(Debug, Args, Clone)]
pub struct Place {
    /// The branch to watch (default: master, or main without one).
    #[arg(long, value_name = "NAME", value_parser = values::name)]
    pub branch: Option<String>,
    /// The git repository (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Where builds and the results database (watch.sqlite) go.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Where the results are kept: postgres://user@host:port/db (or a
    /// libpq key=value string) for a database a team's machines share, or
    /// sqlite:PATH (default: watch.sqlite in the work dir).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// With a --store database: the machine whose nights are read and
    /// written (default: this one's host name).
    #[arg(long, value_name = "NAME", requires = "store", value_parser = values::name)]
    pub machine: Option<String>,
}

/// How large a change, measured again side by side, must be to be
/// confirmed: on tps and on instructions, each against its own noise.
#[derive(Debug, Args, Clone)]
pub struct Thresholds {
    /// Least drop of tps a change confirms, in percent: 3 or 3% (a 5%
    /// step measured again scatters around 5%).
    #[arg(long, value_name = "PCT", default_value = "3", value_parser = super::args::percent,
          allow_hyphen_values = true)]
    pub threshold: f64,
    /// Least rise of instructions a transaction a count series confirms,
    /// in percent (counts repeat to 0.1-0.3%).
    #[arg(long, value_name = "PCT", default_value = "0.5", value_parser = super::args::percent,
          allow_hyphen_values = true)]
    pub count_threshold: f64,
}

impl Thresholds {
    /// Sets them in `config`.
    pub(super) fn apply(&self, config: &mut WatchConfig) {
        config.decision.threshold = self.threshold / 100.0;
        config.counts_threshold = self.count_threshold / 100.0;
    }
}

/// The store `--store` names, if given.
pub(super) fn store_at(place: &Place) -> anyhow::Result<Option<StoreAt>> {
    let Some(text) = &place.store else {
        return Ok(None);
    };
    match StoreAt::parse(text) {
        Some(StoreAt::Sqlite(path)) => {
            check_writable_file(&path, "--store sqlite:")?;
            Ok(Some(StoreAt::Sqlite(path)))
        }
        Some(at) => Ok(Some(at.as_machine(place.machine.clone()))),
        None => Err(UsageError(
            "--store: give postgres://user@host:port/db, a libpq key=value string, or \
             sqlite:PATH"
                .into(),
        )
        .into()),
    }
}

/// The lab flags: the repository and the work dir; the user PostgreSQL
/// runs as comes from the profile (default: postgres).
pub(super) fn lab_args(place: &Place) -> LabArgs {
    LabArgs {
        repo: place.repo.clone(),
        work_dir: place.work_dir.clone(),
        profile: None,
        run_as: None,
        pgbench: None,
        cache_size: 200,
    }
}

/// Each `--profile` (or the default one), loaded, named and with its
/// client counts and measures: `--measure` when given, else the
/// profile's `measure` (`auto` is both; [`WatchMeasures::of_profile`]),
/// else tps.
pub(super) fn profiles(
    given: &[String],
    (clients, measures): (&[u32], Option<WatchMeasures>),
    lab: &LabArgs,
) -> anyhow::Result<Vec<WatchedProfile>> {
    let names: Vec<Option<String>> = match given {
        [] => vec![None],
        given => given.iter().cloned().map(Some).collect(),
    };
    names
        .into_iter()
        .map(|name| {
            let (profile, toml) = load_profile_with_text(&LabArgs {
                profile: name.clone(),
                ..lab.clone()
            })?;
            let clients = super::resolve::client_counts(clients, &profile, &[1])?;
            let measures = measures
                .or(profile.hunt.measure.map(WatchMeasures::of_profile))
                .unwrap_or_default();
            if measures.counts() && profile.is_custom() {
                return Err(crate::lab::cannot_count());
            }
            Ok(WatchedProfile {
                name: series_name(name.as_deref()),
                given: name,
                profile,
                toml,
                clients,
                measures,
            })
        })
        .collect()
}

/// A profile's name in its series: a bundled name, or a file's stem.
fn series_name(given: Option<&str>) -> String {
    let Some(given) = given else {
        return "default".into();
    };
    std::path::Path::new(given)
        .file_stem()
        .map_or_else(|| given.to_string(), |s| s.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::watch::COUNTS_THRESHOLD;

    /// The config `pgbisect watch FLAGS` and `watch hunt 1 FLAGS` decide with.
    fn configs(flags: &[&str]) -> [WatchConfig; 2] {
        use crate::commands::{Cli, Command};
        use clap::Parser;
        let parse = |head: &[&str]| {
            let argv = [head, flags].concat();
            match Cli::try_parse_from(argv).unwrap().command {
                Some(Command::Watch(args)) => match args.action {
                    Some(super::super::watch::WatchAction::Hunt(hunt)) => hunt.thresholds,
                    _ => args.thresholds,
                },
                other => panic!("not a watch: {other:?}"),
            }
        };
        [
            &["pgbisect", "watch"][..],
            &["pgbisect", "watch", "hunt", "1"],
        ]
        .map(|head| {
            let mut config = WatchConfig::new("master");
            parse(head).apply(&mut config);
            config
        })
    }

    #[test]
    fn each_measure_confirms_at_the_threshold_given_for_it() {
        for config in configs(&[]) {
            assert_eq!(config.decision.threshold, 0.03);
            assert_eq!(config.counts_threshold, COUNTS_THRESHOLD);
        }
        for config in configs(&["--threshold", "4%", "--count-threshold", "0.25"]) {
            assert_eq!(config.decision.threshold, 0.04);
            assert_eq!(config.counts_threshold, 0.0025);
        }
    }
}
