use super::*;
use crate::report::watch::digest::Digest;
use crate::store::sqlite::{FILE, SqliteStore};
use crate::store::{NewNight, NightCommit, NightStatus};

const JAN_1_2024: i64 = 1_704_067_200;

/// Records the digests it is given; refuses while `refuse` is set.
#[derive(Default)]
struct Told {
    digests: Vec<Digest>,
    refuse: bool,
}

impl Tell for Told {
    fn digest(&mut self, digest: &Digest) -> anyhow::Result<Option<String>> {
        if self.refuse {
            anyhow::bail!("the relay said no");
        }
        self.digests.push(digest.clone());
        Ok(Some(format!("<pgbisect.{}@x>", digest.message_id_part)))
    }
}

/// A done night of one commit on day `day` of January 2024.
fn stored_night(store: &mut SqliteStore, day: i64) -> i64 {
    let clock = JAN_1_2024 + day * DAY + DAY - 1;
    let n = store
        .begin_night(&NewNight {
            clock,
            branch: "master".into(),
            tip: format!("c{day}"),
            reference: "c0".into(),
            commits: vec![NightCommit {
                id: format!("c{day}"),
                subject: format!("commit {day}"),
                committed: clock - 100,
            }],
        })
        .unwrap();
    store.finish_night(n.id, NightStatus::Done, None).unwrap();
    clock
}

#[test]
fn a_period_is_told_once_at_the_first_night_past_its_end_and_a_refusal_is_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join(FILE)).unwrap();
    let cfg = WatchConfig {
        digest_every: 2,
        ..WatchConfig::new("master")
    };
    let mut told = Told::default();
    let mut notes = Vec::new();
    let mut night_of = |store: &mut SqliteStore, told: &mut Told, day: i64| {
        let clock = stored_night(store, day);
        let mut note = |l: &str| notes.push(l.to_string());
        after_night(store, &[], (&cfg, clock), told, &mut note).unwrap()
    };
    // Days 0 and 1 make the first period; day 2 is past its end.
    assert!(night_of(&mut store, &mut told, 0).is_empty());
    assert!(night_of(&mut store, &mut told, 1).is_empty());
    told.refuse = true;
    assert!(night_of(&mut store, &mut told, 2).is_empty());
    let rows = store.digests("master").unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].start, rows[0].end),
        (JAN_1_2024, JAN_1_2024 + 2 * DAY)
    );
    assert!(rows[0].written.is_some() && rows[0].sent.is_none());
    // The next night tells it, the period still open waits for its end.
    told.refuse = false;
    let again = night_of(&mut store, &mut told, 3);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].file_name, "2024-01-02.txt");
    assert!(
        again[0]
            .body
            .contains("2 night(s), 2 commit(s) measured, 0 run(s)")
    );
    // Day 4 ends the second period (days 2 and 3); nothing is told twice.
    let second = night_of(&mut store, &mut told, 4);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].file_name, "2024-01-04.txt");
    assert_eq!(told.digests.len(), 2);
    let rows = store.digests("master").unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[0].message_id.as_deref(),
        Some("<pgbisect.watch-digest.master.2024-01-01.2024-01-02@x>")
    );
    assert!(rows[2].written.is_none());
}

#[test]
fn no_digest_when_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join(FILE)).unwrap();
    let cfg = WatchConfig {
        digest_every: 0,
        ..WatchConfig::new("master")
    };
    let mut told = Told::default();
    for day in 0..10 {
        let clock = stored_night(&mut store, day);
        after_night(&mut store, &[], (&cfg, clock), &mut told, &mut |_| {}).unwrap();
    }
    assert!(told.digests.is_empty());
    assert_eq!(store.digests("master").unwrap(), vec![]);
}
