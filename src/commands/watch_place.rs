//! Where the watcher's results are and what it measures, as every
//! `watch` action names them: the branch, repository, work dir and store
//! flags ([`Place`]), the store they name, the lab's flags and the
//! profiles loaded from `--profile` and `--clients`.

use super::args::LabArgs;
use super::output::check_writable_file;
use super::plan::load_profile_with_text;
use super::values;
use crate::engine::session::watch::WatchedProfile;
use crate::engine::watch::WatchMeasures;
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
