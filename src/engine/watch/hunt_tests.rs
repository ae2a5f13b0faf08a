//! The night loop with hunts over the simulated lab: a confirmed drop is
//! hunted to the commit that made it, a hunt killed half way goes on at
//! the next night, a hunted change is not hunted again, and its finding is
//! told once.

use super::hunt::{ChangeAsk, Finding, Follow, Hunting};
use super::*;
use crate::engine::hunt::HuntConfig;
use crate::engine::session::Plan;
use crate::engine::session::watch_hunts::{Hunter, ProfileSetup};
use crate::lab::sim::{History, NoiseModel, SimLab, sim_id};
use crate::lab::{Lab, RunSpec};
use crate::machine::steady::Watch;
use crate::model::{Commit, LabTotals, Prepared, RunOutcome};
use crate::profile::Profile;
use crate::progress::Progress;
use crate::report::findings::HuntReport;
use crate::store::sqlite::SqliteStore;
use crate::store::{ChangeHunt, ChangeRow, ChangeStatus};
use crate::workspace::HuntDir;
use std::collections::HashSet;

/// Ten commits a day; the step lands on day 20.
const STEP: usize = 200;

fn line() -> Vec<Landed> {
    (0..=500)
        .map(|p| Landed {
            commit: Commit::bare(sim_id(p)),
            committed: p as i64 * DAY / 10,
        })
        .collect()
}

fn sim(seed: u64) -> SimLab {
    let history = History {
        len: 500,
        steps: vec![(STEP, 0.9)],
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    SimLab::new(history, NoiseModel::Gaussian { cv: 0.01 }, seed)
}

fn labs(lab: Box<dyn Lab>) -> Vec<ProfileLab> {
    vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8],
        lab,
        placements: vec![],
        measures: vec![crate::core::counts::Measure::Tps],
    }]
}

/// The tip alone each night: the hunt has the day's ten commits to search.
fn config() -> WatchConfig {
    WatchConfig {
        backfill: 10,
        per_night: 1,
        ..WatchConfig::new("master")
    }
}

/// Follows hunts as a session does (the session's runner), keeping the
/// mails it is given; the first `refuse` mails fail, as an SMTP server
/// that does not answer, and the first `fail_commands` commands fail.
struct Told {
    hunter: Hunter,
    mails: Vec<(String, String, String)>,
    refuse: usize,
    hunts: usize,
    /// The commands run: `(tried, done)`.
    commands: (usize, usize),
    fail_commands: usize,
}

impl Told {
    /// The hunts' profile is the default one, its work dir in `dir`.
    fn new(dir: &std::path::Path) -> Told {
        let config = HuntConfig {
            clients: 8,
            ..HuntConfig::default()
        };
        let plan = Plan::for_tests(Profile::default(), config, dir);
        let hunter = Hunter {
            profiles: vec![ProfileSetup {
                name: "sim".into(),
                given: None,
                toml: String::new(),
                spec: plan.lab_spec(),
            }],
            why_runs: None,
            work: plan.work,
            watch: Watch::default(),
        };
        Told {
            hunter,
            mails: vec![],
            refuse: 0,
            hunts: 0,
            commands: (0, 0),
            fail_commands: 0,
        }
    }
}

impl Follow for Told {
    fn hunt(
        &mut self,
        asked: &ChangeAsk,
        lab: &mut dyn Lab,
        progress: &mut dyn Progress,
    ) -> anyhow::Result<HuntReport> {
        assert_eq!(asked.profile, "sim");
        self.hunts += 1;
        self.hunter.hunt(asked, lab, progress)
    }

    fn mail(&mut self, finding: &Finding) -> anyhow::Result<Option<String>> {
        if self.refuse > 0 {
            self.refuse -= 1;
            anyhow::bail!("the relay did not answer");
        }
        self.mails.push((
            finding.subject.clone(),
            finding.body.clone(),
            finding.message_id_part.clone(),
        ));
        Ok(Some(format!("<{}@example.org>", finding.message_id_part)))
    }

    fn command(&mut self, _finding: &Finding) -> anyhow::Result<bool> {
        self.commands.0 += 1;
        if self.fail_commands > 0 {
            self.fail_commands -= 1;
            anyhow::bail!("the --notify-cmd failed");
        }
        self.commands.1 += 1;
        Ok(true)
    }
}

struct Nights<'a> {
    store: &'a mut SqliteStore,
    dir: &'a std::path::Path,
    told: &'a mut Told,
    cfg: WatchConfig,
    said: Vec<String>,
}

impl<'a> Nights<'a> {
    fn new(store: &'a mut SqliteStore, dir: &'a std::path::Path, told: &'a mut Told) -> Self {
        Nights {
            store,
            dir,
            told,
            cfg: config(),
            said: vec![],
        }
    }

    fn run(&mut self, labs: &mut [ProfileLab], day: i64) -> anyhow::Result<Watched> {
        let mut hunting = Hunting {
            dir: self.dir.join("watch-hunts"),
            follow: self.told,
        };
        let said = &mut self.said;
        watch_night_hunting(
            self.store,
            labs,
            (&line(), (day + 1) * DAY - 1),
            &self.cfg,
            Some(&mut hunting),
            &mut |l| said.push(l.to_string()),
        )
    }

    fn hunts(&mut self) -> Vec<ChangeHunt> {
        self.store.hunts("master").unwrap()
    }
}

#[test]
fn a_confirmed_drop_is_hunted_to_its_commit_and_told_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    let mut told = Told {
        refuse: 1,
        fail_commands: 1,
        ..Told::new(dir.path())
    };
    let mut night = Nights::new(&mut store, dir.path(), &mut told);
    let mut labs = labs(Box::new(sim(7)));
    for day in 14..=30 {
        night.run(&mut labs, day).unwrap();
    }
    let hunts = night.hunts();
    assert_eq!(hunts.len(), 1, "{:?}", night.said);
    let h = &hunts[0];
    assert_eq!(h.outcome.as_deref(), Some("culprit-found"), "{h:?}");
    assert_eq!(h.culprit.as_deref(), Some(sim_id(STEP).as_str()));
    let folder = dir
        .path()
        .join("watch-hunts")
        .join(format!("change-{}", h.change));
    // The store keeps names under the hunts' folder, never paths.
    assert_eq!(h.dir, format!("change-{}", h.change));
    assert_eq!(
        h.report.as_deref(),
        Some(format!("change-{}/report.txt", h.change).as_str())
    );
    assert!(folder.join("report.txt").is_file());
    // Completed as a person's hunt's report is: the setup, and the command
    // that hunts the range again as this hunt did.
    let json = std::fs::read_to_string(folder.join("report.json")).unwrap();
    let report: HuntReport = serde_json::from_str(&json).unwrap();
    assert!(!report.configure_flags.is_empty(), "{json}");
    assert!(report.machine.is_some(), "{json}");
    let again = report.made.unwrap().command.join(" ");
    assert!(again.contains("--clients 8 --threshold 3%"), "{again}");
    // The relay refused the first time: told on the next night, once.
    assert!(h.mailed.is_some());
    let said = night.said.join("\n");
    assert!(said.contains("the next start tries again"), "{said}");
    drop(night);
    assert_eq!(told.mails.len(), 1);
    assert_eq!(told.hunts, 1);
    // The mail went out at the second try and the command failed: the
    // next try ran the command alone, and the mail was not sent again.
    assert_eq!(told.commands, (2, 1));
    let stored = store.hunts("master").unwrap();
    assert!(
        stored[0]
            .message_id
            .as_deref()
            .is_some_and(|id| id.starts_with("<watch.sim/c8.")),
        "{stored:?}"
    );
    let (subject, body, id) = &told.mails[0];
    assert!(subject.contains(&sim_id(STEP)[..8]), "{subject}");
    assert!(
        body.contains(&format!("Culprit: {}", sim_id(STEP))),
        "{body}"
    );
    assert!(body.contains("<- after the change"), "{body}");
    assert!(body.contains(&std::fs::read_to_string(folder.join("report.txt")).unwrap()));
    assert!(id.starts_with("watch.sim/c8."), "{id}");
}

/// A lab that fails (as a killed process stops) after `left` runs of
/// commits that are not in `spared` (the nights' commits).
struct KilledInHunt {
    inner: SimLab,
    spared: HashSet<String>,
    left: usize,
    hunted: usize,
}

impl Lab for KilledInHunt {
    fn prepare(&mut self, commit: &Commit) -> anyhow::Result<Prepared> {
        self.inner.prepare(commit)
    }

    fn run(&mut self, commit: &Commit, spec: RunSpec) -> anyhow::Result<RunOutcome> {
        if !self.spared.contains(&commit.id) {
            if self.left == 0 {
                anyhow::bail!("killed");
            }
            self.left -= 1;
            self.hunted += 1;
        }
        self.inner.run(commit, spec)
    }

    fn totals(&self) -> LabTotals {
        self.inner.totals()
    }

    fn describe(&self) -> String {
        "killed in the hunt".into()
    }
}

#[test]
fn a_hunt_killed_half_way_goes_on_at_the_next_night_and_is_not_hunted_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    let mut told = Told::new(dir.path());
    let mut night = Nights::new(&mut store, dir.path(), &mut told);
    // The nights' tips (position 10 d + 9) and the reference are spared.
    let spared = (0..50).map(|d| sim_id(10 * d + 9)).collect();
    let mut killed = labs(Box::new(KilledInHunt {
        inner: sim(3),
        spared,
        left: 4,
        hunted: 0,
    }));
    let mut day = 14;
    let err = loop {
        match night.run(&mut killed, day) {
            Ok(_) => day += 1,
            Err(e) => break e,
        }
        assert!(day < 30, "never killed: {:?}", night.said);
    };
    assert!(format!("{err:#}").contains("killed"), "{err:#}");
    let begun = night.hunts();
    assert_eq!(begun.len(), 1);
    assert_eq!(begun[0].outcome, None);
    let journal = HuntDir::at(dir.path().join("watch-hunts").join(&begun[0].dir)).journal();
    let before = crate::journal::Journal::load(&journal).unwrap().len();
    // The next night takes the hunt up first, from its journal.
    night.said.clear();
    let mut labs = labs(Box::new(sim(4)));
    let w = night.run(&mut labs, day + 1).unwrap();
    let first = &night.said[0];
    assert!(
        first.contains("hunting the") && night.said[1].contains("runs from its journal are reused"),
        "{:?}",
        night.said
    );
    assert!(crate::journal::Journal::load(&journal).unwrap().len() > before);
    let hunts = night.hunts();
    assert_eq!(hunts[0].culprit.as_deref(), Some(sim_id(STEP).as_str()));
    assert_eq!(w.hunts.len(), 1);
    // Hunted: the following nights neither hunt it nor tell it again.
    night.said.clear();
    for d in day + 2..=day + 5 {
        let w = night.run(&mut labs, d).unwrap();
        assert!(w.hunts.iter().all(|h| h.hunt.outcome.is_some()));
    }
    assert!(
        !night.said.iter().any(|l| l.contains("hunting the")),
        "{:?}",
        night.said
    );
    assert_eq!(night.hunts(), hunts);
    drop(night);
    assert_eq!(told.mails.len(), 1);
    let confirmed = store.changes("master").unwrap();
    assert!(
        confirmed
            .iter()
            .filter(|c| c.status == ChangeStatus::Confirmed)
            .count()
            == 1,
        "{confirmed:?}"
    );
}

#[test]
fn a_hunt_folder_planted_in_the_store_is_not_where_the_hunt_writes() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    let mut told = Told::new(dir.path());
    let mut night = Nights::new(&mut store, dir.path(), &mut told);
    let spared = (0..50).map(|d| sim_id(10 * d + 9)).collect();
    let mut killed = labs(Box::new(KilledInHunt {
        inner: sim(5),
        spared,
        left: 2,
        hunted: 0,
    }));
    let mut day = 14;
    while night.run(&mut killed, day).is_ok() {
        day += 1;
        assert!(day < 30, "never killed: {:?}", night.said);
    }
    // Whoever can write the store (or a version that kept paths) names
    // another folder, and a report in it.
    let mut planted = night.hunts()[0].clone();
    planted.dir = elsewhere.to_string_lossy().into_owned();
    planted.report = None;
    night.store.save_hunt(&planted).unwrap();
    let mut labs = labs(Box::new(sim(6)));
    let w = night.run(&mut labs, day + 1).unwrap();
    assert!(!elsewhere.exists(), "written where the store said");
    let folder = dir
        .path()
        .join("watch-hunts")
        .join(format!("change-{}", planted.change));
    assert!(folder.join("journal.jsonl").is_file());
    assert!(folder.join("report.txt").is_file());
    assert_eq!(w.hunts[0].folder, folder);
    let hunt = &night.hunts()[0];
    assert_eq!(
        hunt.report.as_deref(),
        Some(format!("change-{}/report.txt", hunt.change).as_str())
    );
    drop(night);
    assert_eq!(told.mails.len(), 1);
}

/// A 1% step: within the noise of tps (1%), well clear of counts' (0.2%).
fn counting_labs(seed: u64) -> Vec<ProfileLab> {
    let history = History {
        len: 500,
        steps: vec![(STEP, 0.99)],
        unbuildable: Default::default(),
        base_tps: 1000.0,
    };
    let lab = SimLab::new(history, NoiseModel::Gaussian { cv: 0.01 }, seed)
        .counting(NoiseModel::Gaussian { cv: 0.002 });
    vec![ProfileLab {
        name: "sim".into(),
        clients: vec![8],
        lab: Box::new(lab),
        placements: vec![],
        measures: WatchMeasures::Instructions.measures(),
    }]
}

#[test]
fn a_one_percent_step_on_counts_is_confirmed_and_hunted_on_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    let mut told = Told::new(dir.path());
    let mut night = Nights::new(&mut store, dir.path(), &mut told);
    let mut labs = counting_labs(7);
    for day in 14..=30 {
        night.run(&mut labs, day).unwrap();
    }
    let said = night.said.join("\n");
    drop(night);
    let changes = store.changes("master").unwrap();
    let confirmed: Vec<&ChangeRow> = changes
        .iter()
        .filter(|c| c.status == ChangeStatus::Confirmed)
        .collect();
    // The count series saw it; tps, whose threshold is 3%, did not.
    assert_eq!(confirmed.len(), 1, "{changes:?}\n{said}");
    let c = confirmed[0];
    assert_eq!(c.series, "sim/c8/instructions");
    let size = crate::report::watch::measured::size(c);
    assert!((0.7..1.4).contains(&size.pct), "{size:?}");
    // Each night both series were measured, the counts by counted runs.
    let runs = store.runs("master").unwrap();
    assert!(runs.iter().all(|r| r.series != "sim/c8"));
    let counted = runs
        .iter()
        .find(|r| r.series == "sim/c8/instructions")
        .unwrap();
    assert!(
        (1e9 / counted.tps.unwrap() - 44_000.0).abs() < 1_000.0,
        "{counted:?}"
    );
    // Hunted on counts, in a journal that says so, to the commit.
    let hunts = store.hunts("master").unwrap();
    assert_eq!(hunts.len(), 1, "{said}");
    assert_eq!(
        hunts[0].culprit.as_deref(),
        Some(sim_id(STEP).as_str()),
        "{said}"
    );
    let folder = dir
        .path()
        .join("watch-hunts")
        .join(format!("change-{}", c.id));
    let journal = std::fs::read_to_string(HuntDir::at(&folder).journal()).unwrap();
    assert!(
        journal.contains(&format!("\"watch-change-{}-instructions\"", c.id)),
        "{journal}"
    );
    let json = std::fs::read_to_string(folder.join("report.json")).unwrap();
    let report: HuntReport = serde_json::from_str(&json).unwrap();
    assert_eq!(report.measure, crate::core::counts::Measure::Instructions);
    let again = report.made.unwrap().command.join(" ");
    assert!(again.contains("--measure instructions"), "{again}");
    // Told as a rise of instructions a transaction: a slowdown.
    let (subject, body, _) = &told.mails[0];
    assert!(
        subject.contains("sim/c8/instructions +1.")
            && subject.contains("instructions a transaction"),
        "{subject}"
    );
    assert!(body.contains("instructions a transaction"), "{body}");
}
