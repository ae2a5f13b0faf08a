//! What the watcher's session adds to the hunt of a confirmed change: the
//! why-runs with a lab of instruments, as a hunt makes them, and the
//! finding told with the hunt's notifications (`--notify-cmd`,
//! `--mail-to`).

use crate::core::why::Why;
use crate::engine::hunt::budget::Budget;
use crate::engine::watch::hunt::{Finding, Follow, report_json};
use crate::error::{EXIT_CULPRIT_FOUND, EXIT_INCONCLUSIVE, EXIT_NO_REGRESSION};
use crate::lab::Lab;
use crate::lab::open::LabSpec;
use crate::machine::steady::Watch;
use crate::model::{NAMED_SHA, sha_prefix};
use crate::notify::{Ending, HuntEnd, Notifier};
use crate::report::findings::{HuntOutcome, HuntReport, Provenance};
use crate::workspace::HuntDir;
use std::path::PathBuf;

/// The session's side of the watcher's hunts.
pub struct Aftercare {
    /// Each profile's name and the spec its lab was opened with.
    pub specs: Vec<(String, LabSpec)>,
    /// Runs a side of the why-runs; `None`: none.
    pub why_runs: Option<usize>,
    pub notifier: Notifier,
    pub work_dir: PathBuf,
    pub watch: Watch,
    /// Why each finding told tonight was not (its mail refused, its
    /// command failed).
    pub unsent: Vec<String>,
}

impl Follow for Aftercare {
    fn why(
        &mut self,
        lab: &mut dyn Lab,
        profile: &str,
        report: &HuntReport,
        hunt: &HuntDir,
        budget: Option<Budget>,
    ) -> anyhow::Result<Vec<Why>> {
        let spec = self.specs.iter().find(|(name, _)| name == profile);
        let (Some((_, spec)), Some(runs)) = (spec, self.why_runs) else {
            return Ok(vec![]);
        };
        // A custom benchmark command has no instruments.
        if report.culprits.is_empty() || spec.profile.is_custom() {
            return Ok(vec![]);
        }
        let mut why_lab = super::why::why_lab(spec, (budget, report), &hunt.runs(), &self.watch)?;
        let runs_in: &mut dyn Lab = match why_lab.lab.as_deref_mut() {
            Some(profiled) => profiled,
            None => lab,
        };
        let clients = super::why::profile_clients(&spec.profile);
        let mut progress = crate::progress::LogLines::new();
        super::why::after_hunt(
            (runs_in, why_lab.no_profile.as_deref(), spec),
            report,
            hunt,
            (&clients, runs),
            budget,
            &mut progress,
        )
    }

    fn complete(&mut self, profile: &str, report: &mut HuntReport) {
        report.profile_name = profile.to_string();
        report.machine = Some(crate::machine::Machine::collect());
        let again = [
            "pgbisect",
            "--good",
            sha_prefix(&report.good.id, NAMED_SHA),
            "--bad",
            sha_prefix(&report.bad.id, NAMED_SHA),
            "--clients",
            &report.clients.to_string(),
        ];
        let mut again: Vec<String> = again.iter().map(|s| s.to_string()).collect();
        if profile != "default" {
            again.extend(["--profile".to_string(), profile.to_string()]);
        }
        report.made = Some(Provenance::now(again));
    }

    fn mail(&mut self, finding: &Finding) -> anyhow::Result<bool> {
        let exit_code = match finding.report.outcome {
            HuntOutcome::CulpritFound => EXIT_CULPRIT_FOUND,
            HuntOutcome::NoRegression => EXIT_NO_REGRESSION,
            HuntOutcome::Inconclusive => EXIT_INCONCLUSIVE,
        };
        let end = HuntEnd {
            ending: Ending::Finished(finding.report),
            exit_code,
            result: Some(report_json(finding.hunt)),
            report: Some(finding.hunt.report_text()),
            work_dir: Some(self.work_dir.clone()),
        };
        let told = self.notifier.deliver_finding(
            &end,
            (&finding.subject, &finding.body),
            &finding.message_id_part,
        );
        if let Err(e) = &told {
            self.unsent
                .push(format!("the finding of {}: {e:#}", finding.change.series));
        }
        told
    }
}
