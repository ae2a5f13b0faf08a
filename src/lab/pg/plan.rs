//! One run of a built commit, described apart from the machine it is made
//! on.
//!
//! A run is made here by [`super::PgLab`] or, for a hunt over several
//! hosts, on another machine by `pgbisect host-run` (see [`super::host`]).
//! Both turn the same [`RunPlan`] into the same [`RunJob`] with the code
//! below, so a run on a host is made exactly as one here: the plan says
//! what (which install, pgbench, template, settings, run), a [`Place`]
//! says where (the machine's folders, socket directory and the user
//! PostgreSQL runs as).

use super::runs::RunJob;
use crate::bench::PgbenchOptions;
use crate::lab::{LabDirs, RunSpec};
use crate::placement::Pin;
use crate::server::{self, RunAs, Server, SocketDir, TemplateSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What one run is, wherever it is made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// The commit's short name, in the names of the run's files.
    pub commit: String,
    /// The commit's install's `bin` folder.
    pub bin: PathBuf,
    /// The pgbench that drives the load (and makes the template).
    pub pgbench: PathBuf,
    /// The data template's folder name: one per data format and scale.
    pub template: String,
    pub options: PgbenchOptions,
    /// The server's settings, as the commit's server takes them, with
    /// `max_connections` for the run's clients.
    pub settings: Vec<(String, String)>,
    /// The `max_connections` of those settings, as the plan decided it.
    pub max_connections: u32,
    pub clients: u32,
    /// The run's number within the hunt.
    pub run: u64,
    /// The run's length when the hunt chose one.
    pub seconds: Option<u32>,
    /// Starts the names of the run's files (`why-` for instrumented runs).
    pub label: String,
}

/// Where runs are made on one machine.
pub struct Place<'a> {
    /// Templates, the data directory, server logs, the servers' registry.
    pub dirs: &'a LabDirs,
    /// Where pgbench's output goes.
    pub runs_dir: &'a Path,
    pub sockets: &'a SocketDir,
    pub run_as: &'a RunAs,
}

impl RunPlan {
    /// The run's number, clients and length.
    pub fn spec(&self) -> RunSpec {
        RunSpec {
            clients: self.clients,
            run: self.run,
            seconds: self.seconds,
        }
    }

    /// The same run, numbered `run` and lasting as `spec` says.
    pub fn for_spec(&self, spec: RunSpec) -> RunPlan {
        RunPlan {
            clients: spec.clients,
            run: spec.run,
            seconds: spec.seconds,
            ..self.clone()
        }
    }

    /// The data template the run starts from, in `place`.
    pub fn template_spec(&self, place: &Place) -> TemplateSpec {
        TemplateSpec {
            bin: self.bin.clone(),
            pgbench: self.pgbench.clone(),
            dir: place.dirs.templates.join(&self.template),
            options: self.options.clone(),
            run_as: place.run_as.clone(),
            registry_dir: Some(place.dirs.servers.clone()),
        }
    }

    /// The run's job in `place`, from `template`, the server and pgbench
    /// placed on `pins`.
    pub fn job<'t>(
        &self,
        place: &Place,
        template: &'t TemplateSpec,
        (server_pin, pgbench_pin): (Pin, Pin),
    ) -> RunJob<'t> {
        let label = &self.label;
        let server = Server {
            bin: self.bin.clone(),
            data_dir: place.dirs.data.join("current"),
            port: server::pick_port(place.sockets.path()),
            socket_dir: place.sockets.path().to_path_buf(),
            settings: self.settings.clone(),
            log: place
                .dirs
                .logs
                .join(format!("server-{label}{:05}.log", self.run)),
            run_as: place.run_as.clone(),
            registry_dir: Some(place.dirs.servers.clone()),
            pin: server_pin,
            launcher: None,
        };
        let out = format!("{label}run-{:05}-{}", self.run, self.commit);
        RunJob {
            template,
            server,
            pgbench: self.pgbench.clone(),
            pgbench_pin,
            spec: self.spec(),
            out: place.runs_dir.join(out),
            transaction_log: None,
            sampled_log: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_makes_its_job_in_the_place_given() {
        let plan = RunPlan {
            commit: "abcdef12".into(),
            bin: "/i/bin".into(),
            pgbench: "/g/bin/pgbench".into(),
            template: "v15-cat1-ctl2-s10".into(),
            options: PgbenchOptions::default(),
            settings: vec![("max_connections".into(), "20".into())],
            max_connections: 20,
            clients: 1,
            run: 7,
            seconds: None,
            label: String::new(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let dirs = LabDirs::under(tmp.path());
        let sockets = SocketDir::create(&RunAs::CurrentUser).unwrap();
        let place = Place {
            dirs: &dirs,
            runs_dir: &tmp.path().join("runs"),
            sockets: &sockets,
            run_as: &RunAs::CurrentUser,
        };
        let template = plan.template_spec(&place);
        assert_eq!(template.dir, dirs.templates.join("v15-cat1-ctl2-s10"));
        let again = plan.for_spec(RunSpec {
            clients: 1,
            run: 9,
            seconds: Some(3),
        });
        let job = again.job(&place, &template, (Pin::none(), Pin::none()));
        assert_eq!(job.out, tmp.path().join("runs/run-00009-abcdef12"));
        assert_eq!(job.server.log, dirs.logs.join("server-00009.log"));
        assert_eq!(job.server.data_dir, dirs.data.join("current"));
        assert_eq!(job.spec.seconds, Some(3));
        let text = serde_json::to_string(&again).unwrap();
        assert_eq!(serde_json::from_str::<RunPlan>(&text).unwrap(), again);
    }
}
