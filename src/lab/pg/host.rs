//! A run of the PostgreSQL lab made on a host, for a hunt coordinated
//! from another machine.
//!
//! The coordinator builds each commit once and sends the install, and
//! pgbisect itself, to the hosts; on a host, `pgbisect host-run` reads a
//! [`Request`] from its environment, makes the run with the same code a
//! run here is made with ([`RunPlan`], [`Runs`]: template made once per
//! data format and kept in the host's lab folder, a fresh copy, server
//! start with the profile's settings, warm-ups, pgbench, server stop also
//! on failure or interrupt), and prints pgbench's output followed by one
//! [`Answer`] line. What runs on the host is decided there, from the
//! host's own CPUs and limits: the placement of server and pgbench,
//! pgbench's threads, the user PostgreSQL runs as when the host's login is
//! root. Servers an earlier run left (its process killed) are stopped
//! first, as [`super::PgLab`] does here.

use super::plan::{Place, RunPlan};
use super::runs::{RealMachinery, Runs};
use crate::lab::LabDirs;
use crate::model::{LabTotals, RunOutcome};
use crate::placement::{Placement, PlacementSpec, Policy};
use crate::server::{DataTemplate, RunAs, SocketDir};
use crate::strays::{self, Marks};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable a host's run reads its request from.
pub const REQUEST_ENV: &str = "PGBISECT_HOST_REQUEST";
/// Starts the line that carries a host's answer.
pub const ANSWER_MARK: &str = "pgbisect-host-answer: ";

/// What a host is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The host's lab folder: templates, the data directory, server logs,
    /// the servers' registry, pgbench's output.
    pub lab: PathBuf,
    /// `--run-as`, for a host whose login is root.
    pub run_as: Option<String>,
    /// Where the server and pgbench run, decided on the host.
    pub placement: PlacementSpec,
    /// The custom pgbench script's text, when the workload has one.
    pub script: Option<String>,
    /// Programs that must be on the host (a fixed pgbench).
    pub programs: Vec<PathBuf>,
    /// The run to make; `None`: only check that runs can be made there.
    pub plan: Option<RunPlan>,
}

/// What a host answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The run's outcome, when a run was asked for and made.
    pub outcome: Option<RunOutcome>,
    /// What the run cost: templates, set-ups, warm-ups, benchmark time.
    pub totals: LabTotals,
    /// Lines to show on the coordinator (servers an earlier run left and
    /// that were stopped, notes about the settings).
    pub notes: Vec<String>,
    /// Why the host could not do what it was asked.
    pub error: Option<String>,
    /// Where the run's server and pgbench ran, decided on the host from
    /// its own CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

impl Answer {
    /// The line that carries it.
    pub fn line(&self) -> String {
        let json = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"the answer could not be written: {e}\"}}"));
        format!("{ANSWER_MARK}{json}")
    }

    /// The answer in a job's output (its last answer line), if any.
    pub fn find(output: &str) -> Option<Answer> {
        output
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(ANSWER_MARK))
            .and_then(|json| serde_json::from_str(json).ok())
    }
}

/// Does what `request` asks on this machine. An interrupt (the host's job
/// stopped) is an error: the run is not finished.
pub fn serve(request: &Request) -> anyhow::Result<Answer> {
    let mut answer = Answer::default();
    match serve_into(request, &mut answer) {
        Ok(()) => {}
        Err(e) if e.downcast_ref::<crate::proc::Interrupted>().is_some() => return Err(e),
        Err(e) => answer.error = Some(format!("{e:#}")),
    }
    Ok(answer)
}

fn serve_into(request: &Request, answer: &mut Answer) -> anyhow::Result<()> {
    let run_as = RunAs::resolve(request.run_as.as_deref())?;
    let dirs = LabDirs::under(&request.lab);
    let runs_dir = request.lab.join("runs");
    for dir in [&dirs.templates, &dirs.data, &dirs.logs, &runs_dir] {
        crate::folders::create_dir(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    run_as.check_reachable(&dirs.data).map_err(|e| {
        anyhow::anyhow!(
            "{e}\nhint: {} runs PostgreSQL on the host and must reach its folder: give [hosts] \
             dir a folder every user can enter, e.g. dir = \"/var/tmp/pgbisect\"",
            run_as.describe()
        )
    })?;
    for program in &request.programs {
        anyhow::ensure!(
            program.is_file(),
            "{} is not on this host: a fixed pgbench must be at the same path on every host",
            program.display()
        );
    }
    let marks = Marks::for_work_dir(&request.lab);
    let reaped = super::stop_left_behind(&dirs, &marks)?;
    if reaped > 0 {
        answer.notes.push(format!(
            "stopped {reaped} server(s) or process(es) an earlier run left behind"
        ));
    }
    let Some(plan) = &request.plan else {
        return Ok(());
    };
    let mut plan = plan.clone();
    plan.options.cpus = std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok());
    if let Some(text) = &request.script {
        plan.options.script = Some(write_script(&request.lab, text)?);
    }
    super::check_machine(&plan.options, plan.clients, plan.max_connections)?;
    let placement = Policy::current(&request.placement).decide(plan.clients)?;
    let pins = placement.pins();
    answer.placement = Some(placement);
    let sockets = SocketDir::create(&run_as)?;
    let place = Place {
        dirs: &dirs,
        runs_dir: &runs_dir,
        sockets: &sockets,
        run_as: &run_as,
    };
    let template = plan.template_spec(&place);
    let job = plan.job(&place, &template, pins);
    // A read-only workload's copy of the data serves later runs on the
    // host, as it does on one machine; the note of it is taken away until
    // the run has ended well, so a run cut short leaves none.
    let note = copy_note(&job.server.data_dir);
    let earlier = take_copy_note(&note, &job.server.data_dir);
    let mut runs =
        Runs::new(Box::new(RealMachinery), plan.options.clone()).with_unwritten_copy(earlier);
    let install = plan.bin.parent().unwrap_or(&plan.bin);
    crate::folders::check_tree(install).with_context(|| {
        format!(
            "refusing the install {}: PostgreSQL's user runs its programs",
            install.display()
        )
    })?;
    let outcome = strays::run_marked(&marks.token(), || runs.measure(job))?;
    if let Some(template) = runs.unwritten_copy() {
        let text = serde_json::to_string(template).context("cannot encode the data template")?;
        crate::files::write(&note, text)
            .with_context(|| format!("cannot write {}", note.display()))?;
    }
    answer.totals = runs.totals();
    answer.outcome = Some(outcome);
    Ok(())
}

/// Where a host notes which template its data directory is an unwritten
/// copy of: beside the data directory.
fn copy_note(data: &Path) -> PathBuf {
    let mut name = data.file_name().unwrap_or_default().to_os_string();
    name.push(".copy-of.json");
    data.with_file_name(name)
}

/// The template an earlier run noted its unwritten copy of, when the copy
/// is still there; the note is removed either way.
fn take_copy_note(note: &Path, data: &Path) -> Option<DataTemplate> {
    let text = std::fs::read_to_string(note).ok()?;
    // A note that cannot be removed could outlive a run cut short.
    std::fs::remove_file(note).ok()?;
    let template = serde_json::from_str(&text).ok()?;
    data.join("PG_VERSION").is_file().then_some(template)
}

/// The custom script, in the host's lab folder, named by its text.
fn write_script(lab: &Path, text: &str) -> anyhow::Result<PathBuf> {
    let dir = lab.join("scripts");
    crate::folders::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = crate::core::fingerprint::fingerprint(text);
    let path = dir.join(format!("{name}.sql"));
    crate::files::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;

    #[test]
    fn a_copy_note_is_taken_once_and_only_while_its_copy_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("current");
        let note = copy_note(&data);
        assert_eq!(note, tmp.path().join("current.copy-of.json"));
        let template = DataTemplate::at(tmp.path().join("template"));
        let write = || std::fs::write(&note, serde_json::to_string(&template).unwrap()).unwrap();
        write();
        assert_eq!(take_copy_note(&note, &data), None, "no data directory");
        assert!(!note.exists());
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("PG_VERSION"), "15\n").unwrap();
        write();
        assert_eq!(take_copy_note(&note, &data), Some(template));
        assert!(!note.exists(), "taken away until a run ends well");
        assert_eq!(take_copy_note(&note, &data), None);
    }

    #[test]
    fn the_last_answer_line_of_an_output_is_read() {
        let answer = Answer {
            outcome: Some(RunOutcome::Measured(Measurement {
                instructions: None,
                tps: 812.5,
                latency_ms: Some(1.2),
                failed_transactions: None,
                percentiles: None,
                output: None,
            })),
            notes: vec!["a note".into()],
            ..Answer::default()
        };
        let output = format!(
            "tps = 1 (a warm-up)\n{}\npgbench said more\n",
            answer.line()
        );
        assert_eq!(Answer::find(&output), Some(answer));
        assert_eq!(Answer::find("tps = 5\n"), None);
    }

    #[test]
    fn a_check_makes_the_lab_folders_and_a_missing_program_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let mut request = Request {
            lab: tmp.path().join("lab"),
            run_as: None,
            placement: PlacementSpec::default(),
            script: None,
            programs: Vec::new(),
            plan: None,
        };
        let answer = serve(&request).unwrap();
        if server_user_reaches(tmp.path()) {
            assert_eq!(answer.error, None);
            assert!(tmp.path().join("lab/templates").is_dir());
        }
        request.programs = vec![tmp.path().join("no-pgbench")];
        let answer = serve(&request).unwrap();
        let error = answer.error.unwrap();
        assert!(
            error.contains("no-pgbench is not on this host") || error.contains("hint:"),
            "{error}"
        );
    }

    /// Whether the user PostgreSQL would run as reaches `dir` (a temp dir
    /// made by root is closed to it).
    fn server_user_reaches(dir: &Path) -> bool {
        RunAs::resolve(None).is_ok_and(|r| r.check_reachable(dir).is_ok())
    }
}
