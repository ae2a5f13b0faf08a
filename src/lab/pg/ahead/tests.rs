use super::*;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a fake workshop built, and in which thread.
type Built = Arc<Mutex<Vec<(String, String)>>>;

/// A workshop whose builds take `seconds` (or until cancelled), record
/// what they built and in which thread, and fail as asked.
struct Fake {
    built: Built,
    seconds: f64,
    cancel: Option<Arc<AtomicBool>>,
    /// Commits that do not compile, and commits whose build meets trouble.
    broken: Vec<&'static str>,
    trouble: Vec<&'static str>,
    started: Option<mpsc::Sender<String>>,
    /// Where installs are made, removed with the fake.
    installs: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fake {
    fn new(seconds: f64) -> (Fake, Built) {
        let built = Arc::new(Mutex::new(Vec::new()));
        let dir = tempfile::tempdir().unwrap();
        let fake = Fake {
            built: built.clone(),
            seconds,
            cancel: None,
            broken: Vec::new(),
            trouble: Vec::new(),
            started: None,
            installs: dir.path().join("installs"),
            _dir: dir,
        };
        (fake, built)
    }
}

impl Workshop for Fake {
    fn build(&mut self, commit: &str) -> anyhow::Result<BuildOutcome> {
        if let Some(tell) = &self.started {
            tell.send(commit.to_string()).ok();
        }
        let until = Instant::now() + Duration::from_secs_f64(self.seconds);
        while Instant::now() < until {
            if self
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::SeqCst))
            {
                anyhow::bail!("interrupted while building {commit}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.built
            .lock()
            .unwrap()
            .push((commit.to_string(), thread));
        anyhow::ensure!(!self.trouble.contains(&commit), "no space left on device");
        let log = PathBuf::from(format!("build-{commit}.log"));
        Ok(if self.broken.contains(&commit) {
            BuildOutcome::Failed {
                reason: "does not compile".into(),
                log,
            }
        } else {
            let prefix = self.installs.join(commit);
            std::fs::create_dir_all(&prefix)?;
            BuildOutcome::Installed {
                prefix,
                cached: false,
                seconds: self.seconds,
                log,
            }
        })
    }

    fn totals(&self) -> (u64, f64) {
        let n = self.built.lock().unwrap().len() as u64;
        (n, n as f64 * self.seconds)
    }

    fn cancelled_by(&mut self, cancel: Option<Arc<AtomicBool>>) {
        self.cancel = cancel;
    }
}

fn prefix(outcome: &BuildOutcome) -> Option<&std::path::Path> {
    match outcome {
        BuildOutcome::Installed { prefix, .. } => Some(prefix),
        BuildOutcome::Failed { .. } => None,
    }
}

#[test]
fn a_commit_built_ahead_is_built_in_its_own_thread_once() {
    let (fake, built) = Fake::new(0.2);
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    assert!(!builds.start("c"), "one build at a time");
    // While it builds, the totals are those from before it, at once.
    let asked = Instant::now();
    assert_eq!(builds.totals(), (0, 0.0));
    assert!(asked.elapsed() < Duration::from_millis(100));
    let outcome = builds.build("b").unwrap();
    assert!(prefix(&outcome).is_some_and(|p| p.ends_with("b")));
    assert_eq!(
        *built.lock().unwrap(),
        [("b".to_string(), "build-ahead".to_string())]
    );
    assert_eq!(builds.totals().0, 1);
    assert!(builds.start("c"), "the next may start once it is over");
}

#[test]
fn a_build_asked_for_now_waits_for_the_one_ahead_which_is_kept() {
    let (mut fake, built) = Fake::new(0.05);
    fake.broken = vec!["b"];
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    builds.build("a").unwrap();
    // b did not compile ahead: preparing it later does not compile it again.
    let outcome = builds.build("b").unwrap();
    assert!(matches!(outcome, BuildOutcome::Failed { .. }));
    let order: Vec<String> = built.lock().unwrap().iter().map(|b| b.0.clone()).collect();
    assert_eq!(order, ["b", "a"]);
}

#[test]
fn trouble_met_ahead_stops_the_next_wait_and_names_the_build() {
    let (mut fake, _) = Fake::new(0.0);
    fake.trouble = vec!["b"];
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    let err = builds.wait().unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("building b ahead"), "{text}");
    assert!(text.contains("no space left on device"), "{text}");
    // The workshop is back for the next build.
    assert!(builds.build("a").is_ok());
}

#[test]
fn a_build_ahead_nobody_waits_for_is_stopped_when_the_lab_goes() {
    let (mut fake, built) = Fake::new(600.0);
    let (tell, started) = mpsc::channel();
    fake.started = Some(tell);
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    assert_eq!(started.recv_timeout(Duration::from_secs(10)).unwrap(), "b");
    let dropped = Instant::now();
    drop(builds);
    assert!(dropped.elapsed() < Duration::from_secs(10));
    assert!(
        built.lock().unwrap().is_empty(),
        "the build ended unfinished"
    );
}

#[test]
fn the_foreground_build_is_not_stopped_by_an_earlier_cancel() {
    let (fake, built) = Fake::new(0.05);
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    builds.wait().unwrap();
    builds.build("a").unwrap();
    assert_eq!(built.lock().unwrap().len(), 2);
    assert!(
        lock(&builds.workshop).cancel.is_none(),
        "a build made now has no cancel flag"
    );
}

#[test]
fn an_install_made_ahead_and_evicted_since_is_built_again() {
    let (fake, built) = Fake::new(0.0);
    let installs = fake.installs.clone();
    let mut builds = Builds::new(fake);
    assert!(builds.start("b"));
    builds.wait().unwrap();
    std::fs::remove_dir_all(installs.join("b")).unwrap();
    let outcome = builds.build("b").unwrap();
    assert!(prefix(&outcome).is_some_and(|p| p.is_dir()));
    assert_eq!(built.lock().unwrap().len(), 2);
}
