//! Dates for journals and reports: RFC 3339 in UTC, without a date crate;
//! and durations as people write them on a command line.
//!
//! Journals, reports and mails all stamp times; they share this one
//! formatter so that none of them has to depend on the hunt for it. A
//! hunt's `--time-budget` and `simulate`'s run lengths read durations the
//! same way, with this one parser.

use thiserror::Error;

/// The current time as RFC 3339 (UTC), without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix(secs as i64)
}

/// The day (UTC) of seconds since the epoch, as `YYYY-MM-DD`.
pub fn date_from_unix(secs: i64) -> String {
    let text = rfc3339_from_unix(secs);
    text.get(..10).unwrap_or(&text).to_string()
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_from_unix(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The next moment, after `now`, when the local clock reads `hh_mm`
/// (`07:00`): today if that is still ahead, else tomorrow.
pub fn next_local(
    hh_mm: &str,
    now: std::time::SystemTime,
) -> Result<std::time::SystemTime, String> {
    let bad = || format!("`{hh_mm}` is not a time of day: write it as HH:MM, e.g. 07:00");
    let (h, m) = hh_mm.trim().split_once(':').ok_or_else(bad)?;
    let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if !(0..24).contains(&h) || !(0..60).contains(&m) {
        return Err(bad());
    }
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| "the system clock is before 1970".to_string())?
        .as_secs() as libc::time_t;
    for day in 0..2 {
        // SAFETY: localtime_r and mktime only read and write the `tm`
        // given; a zeroed `tm` is a valid value to fill.
        let target = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            let when = secs + day * 86_400;
            if libc::localtime_r(&when, &mut tm).is_null() {
                return Err("cannot read the local time zone".into());
            }
            tm.tm_hour = h;
            tm.tm_min = m;
            tm.tm_sec = 0;
            tm.tm_isdst = -1;
            libc::mktime(&mut tm)
        };
        if target > secs {
            return Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(target as u64));
        }
    }
    Err(bad())
}

/// A duration given on the command line could not be read.
#[derive(Debug, Error, PartialEq)]
#[error(
    "`{0}` is not a duration: give seconds (170), or a number with s, m or h \
     (170s, 30m, 1.5h), or parts like 1h30m"
)]
pub struct DurationError(pub String);

/// Reads a duration: plain seconds (`170`), or numbers each followed by
/// `h`, `m` or `s` (`30m`, `1.5h`, `2m50s`).
pub fn parse_duration(text: &str) -> Result<f64, DurationError> {
    let err = || DurationError(text.to_string());
    let trimmed = text.trim();
    if let Ok(secs) = trimmed.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then_some(secs)
            .ok_or_else(err);
    }
    let (mut total, mut number, mut parts) = (0.0, String::new(), 0);
    for c in trimmed.chars() {
        let unit = match c {
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            '0'..='9' | '.' => {
                number.push(c);
                continue;
            }
            _ => return Err(err()),
        };
        let value: f64 = number.parse().map_err(|_| err())?;
        total += value * unit;
        number.clear();
        parts += 1;
    }
    if parts == 0 || !number.is_empty() || !total.is_finite() {
        return Err(err());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_local_time_of_day_is_within_a_day_and_on_the_minute() {
        let now = std::time::SystemTime::now();
        let next = next_local("07:00", now).unwrap();
        let ahead = next.duration_since(now).unwrap().as_secs();
        assert!(ahead > 0 && ahead <= 86_400 + 3600, "{ahead}");
        let unix = next
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(unix % 60, 0);
        for bad in ["7", "24:00", "07:60", "seven", "07:00:00"] {
            assert!(next_local(bad, now).unwrap_err().contains("HH:MM"), "{bad}");
        }
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_461_728_000), "2016-04-27T03:33:20Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn durations_read_as_seconds_or_with_units() {
        assert_eq!(parse_duration("170"), Ok(170.0));
        assert_eq!(parse_duration("14s"), Ok(14.0));
        assert_eq!(parse_duration("30m"), Ok(1800.0));
        assert_eq!(parse_duration("1.5h"), Ok(5400.0));
        assert_eq!(parse_duration("2m50s"), Ok(170.0));
        assert_eq!(parse_duration(" 8h "), Ok(28_800.0));
        for bad in ["", "m", "30x", "-5", "5m3", "1..2s", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(
            parse_duration("3d")
                .unwrap_err()
                .to_string()
                .contains("30m")
        );
    }
}
