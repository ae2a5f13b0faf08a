//! Which commits a night measures: pure.
//!
//! The tip always; when more landed since the last night than a night
//! measures, a sample spaced evenly over them, the tip last. A first night
//! backfills: the commit the branch stood at on each of the days before.

use crate::repo::Landed;

/// Seconds in a day.
pub const DAY: i64 = 86_400;

/// What landed on the line by `clock` (the line is oldest first).
pub fn landed_by(line: &[Landed], clock: i64) -> &[Landed] {
    let end = line
        .iter()
        .rposition(|l| l.committed <= clock)
        .map_or(0, |k| k + 1);
    &line[..end]
}

/// The commits of a night at `clock` after a night that measured up to
/// `last_tip` (`None`: none before): every commit landed after it, or a
/// spaced sample of `per_night` of them, the tip last. Empty when nothing
/// landed since.
pub fn tonight<'a>(
    line: &'a [Landed],
    clock: i64,
    last_tip: Option<&str>,
    per_night: usize,
) -> Vec<&'a Landed> {
    let landed = landed_by(line, clock);
    let start = match last_tip {
        Some(tip) => match landed.iter().position(|l| l.commit.id == tip) {
            Some(k) => k + 1,
            // The branch was rewritten past the last tip: the tip alone.
            None => landed.len().saturating_sub(1),
        },
        None => landed.len().saturating_sub(1),
    };
    spaced(&landed[start..], per_night.max(1))
}

/// Up to `n` of `new`, evenly spaced, the last one always among them.
pub fn spaced<T>(new: &[T], n: usize) -> Vec<&T> {
    let len = new.len();
    if len <= n {
        return new.iter().collect();
    }
    // The k-th of n picks sits at the end of the k-th of n equal stretches.
    (1..=n).map(|k| &new[k * len / n - 1]).collect()
}

/// The nights a first night backfills before `clock`: `(clock, commit)`
/// for each of the `days` days before, the commit the branch stood at
/// then, oldest first; a day on which nothing landed is left out, and so
/// is the commit the branch stands at by `clock` (tonight's night measures
/// it). Each is labelled by its commit's date, the day it landed, not by
/// the day it is measured on: a backfilled night did not run then.
pub fn backfill(line: &[Landed], clock: i64, days: usize) -> Vec<(i64, &Landed)> {
    let tip = landed_by(line, clock).last().map(|l| l.commit.id.as_str());
    let mut nights: Vec<(i64, &Landed)> = Vec::new();
    for k in (1..=days as i64).rev() {
        let Some(stood) = landed_by(line, clock - k * DAY).last() else {
            continue;
        };
        if Some(stood.commit.id.as_str()) == tip {
            break;
        }
        let after = nights.last().map(|(at, l)| (*at, l.commit.id.as_str()));
        if after.is_some_and(|(_, id)| id == stood.commit.id) {
            continue;
        }
        // A night's clock is its key: committer dates out of order (a
        // rebase) still give each night a later one than the one before.
        let at = after.map_or(stood.committed, |(at, _)| stood.committed.max(at + 1));
        nights.push((at, stood));
    }
    nights
}

/// The first day of a replay asked to start on the day `since` (00:00
/// UTC): that day, or, when nothing had landed by its night, the day the
/// line's first commit landed; `None` when the line is empty. A night
/// before that commit would have nothing to measure.
pub fn replay_start(line: &[Landed], since: i64) -> Option<i64> {
    let first = line.iter().map(|l| l.committed).min()?;
    let night = since.div_euclid(DAY) * DAY + DAY - 1;
    Some(if first > night {
        first.div_euclid(DAY) * DAY
    } else {
        since
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Commit;

    #[test]
    fn a_replay_from_before_the_first_commit_starts_on_its_day() {
        // Commit k lands at k hours past noon of day 10.
        let noon = 10 * DAY + DAY / 2;
        let line: Vec<Landed> = line(3)
            .into_iter()
            .map(|l| Landed {
                committed: l.committed + noon,
                ..l
            })
            .collect();
        assert_eq!(replay_start(&line, 2 * DAY), Some(10 * DAY));
        // Landed by the night of the day asked: that day.
        assert_eq!(replay_start(&line, 10 * DAY), Some(10 * DAY));
        assert_eq!(replay_start(&line, 12 * DAY), Some(12 * DAY));
        assert_eq!(replay_start(&[], 2 * DAY), None);
    }

    /// Commit `k` lands at `k` hours.
    fn line(n: usize) -> Vec<Landed> {
        (0..n)
            .map(|k| Landed {
                commit: Commit::bare(format!("c{k}")),
                committed: k as i64 * 3600,
            })
            .collect()
    }

    fn ids(picked: &[&Landed]) -> Vec<String> {
        picked.iter().map(|l| l.commit.id.clone()).collect()
    }

    #[test]
    fn the_tip_always_and_a_spaced_sample_when_many_landed() {
        let line = line(100);
        // By hour 20, commits 0..=20 have landed; 11..=20 are new.
        assert_eq!(
            ids(&tonight(&line, 20 * 3600, Some("c10"), 3)),
            ["c13", "c16", "c20"]
        );
        assert_eq!(
            ids(&tonight(&line, 20 * 3600, Some("c18"), 3)),
            ["c19", "c20"]
        );
        assert!(tonight(&line, 20 * 3600, Some("c20"), 3).is_empty());
        // No night before: the tip.
        assert_eq!(ids(&tonight(&line, 20 * 3600, None, 3)), ["c20"]);
        // A tip no longer on the line: the tip alone.
        assert_eq!(ids(&tonight(&line, 20 * 3600, Some("gone"), 3)), ["c20"]);
        assert!(tonight(&line, -1, None, 3).is_empty());
    }

    #[test]
    fn spaced_keeps_the_last_and_spreads_the_rest() {
        let xs: Vec<usize> = (0..10).collect();
        assert_eq!(spaced(&xs, 1), [&9]);
        assert_eq!(spaced(&xs, 2), [&4, &9]);
        assert_eq!(spaced(&xs, 5), [&1, &3, &5, &7, &9]);
        assert_eq!(spaced(&xs, 20).len(), 10);
    }

    #[test]
    fn backfill_takes_a_commit_a_day_and_skips_days_without_one() {
        // A commit every 12 hours: by each day's clock, a new tip.
        let line: Vec<Landed> = (0..20)
            .map(|k| Landed {
                commit: Commit::bare(format!("c{k}")),
                committed: k as i64 * DAY / 2,
            })
            .collect();
        let nights = backfill(&line, 5 * DAY, 3);
        let got: Vec<(i64, &str)> = nights
            .iter()
            .map(|(at, l)| (*at / DAY, l.commit.id.as_str()))
            .collect();
        assert_eq!(got, [(2, "c4"), (3, "c6"), (4, "c8")]);
        // Labelled by the commits' dates (c4 landed at the start of day 2).
        assert_eq!(nights[0].0, 2 * DAY);
        // Before the first commit nothing is backfilled; one commit twice
        // is kept once; the commit the branch stands at tonight is
        // tonight's, not a night 30 days back.
        let sparse = [
            Landed {
                commit: Commit::bare("old"),
                committed: 3 * DAY + 7,
            },
            Landed {
                commit: Commit::bare("tip"),
                committed: 5 * DAY,
            },
        ];
        let got = backfill(&sparse, 6 * DAY, 30);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].0, got[0].1.commit.id.as_str()),
            (3 * DAY + 7, "old")
        );
        assert!(backfill(&sparse[..1], 40 * DAY, 30).is_empty());
    }
}

/// `SINCE..UNTIL`, two dates `YYYY-MM-DD` (UTC), as seconds since the
/// epoch at the start of each day.
pub fn parse_range(text: &str) -> Result<(i64, i64), String> {
    let usage = || format!("`{text}`: give two dates as SINCE..UNTIL, e.g. 2024-01-01..2024-03-31");
    let (since, until) = text.split_once("..").ok_or_else(usage)?;
    let (since, until) = (
        parse_date(since).ok_or_else(usage)?,
        parse_date(until).ok_or_else(usage)?,
    );
    if until < since {
        return Err(format!("`{text}`: UNTIL comes before SINCE"));
    }
    Ok((since, until))
}

/// `YYYY-MM-DD` as seconds since the epoch at 00:00 UTC; a day its month
/// does not have (`2024-02-30`) or a year before git (1970..=9999) is none.
fn parse_date(text: &str) -> Option<i64> {
    let text = text.trim();
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    let mut parts = text.splitn(3, '-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if !(digits(y, 4) && digits(m, 2) && digits(d, 2)) {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if y < 1970 || !(1..=12).contains(&m) || !(1..=days_in_month(y, m)).contains(&d) {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) * DAY)
}

/// Days in month `m` (1-12) of year `y`, in the Gregorian calendar.
fn days_in_month(y: i64, m: i64) -> i64 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    #[test]
    fn a_replay_range_reads_two_dates() {
        let (since, until) = parse_range("2024-01-01..2024-03-01").unwrap();
        assert_eq!(
            crate::time::rfc3339_from_unix(since),
            "2024-01-01T00:00:00Z"
        );
        assert_eq!(
            crate::time::rfc3339_from_unix(until),
            "2024-03-01T00:00:00Z"
        );
        assert!(parse_range("2024-01-01").is_err());
        assert!(parse_range("2024-13-01..2024-14-01").is_err());
        assert!(parse_range("2024-03-01..2024-01-01").is_err());
        for bad in [
            "2024-02-30",
            "2023-02-29",
            "2024-04-31",
            "1900-01-01",
            "24-1-1",
            "2024-01-01x",
        ] {
            assert!(parse_range(&format!("{bad}..2025-01-01")).is_err(), "{bad}");
        }
        assert!(
            parse_range("2024-02-29..2000-02-29").is_err(),
            "until before since"
        );
        assert!(parse_range("2000-02-29..2024-02-29").is_ok(), "leap days");
    }
}
