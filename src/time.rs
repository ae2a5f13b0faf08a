//! Dates for journals and reports: RFC 3339 in UTC, without a date crate.
//!
//! Journals, reports and mails all stamp times; they share this one
//! formatter so that none of them has to depend on the hunt for it.

/// The current time as RFC 3339 (UTC), without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix(secs as i64)
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
}
