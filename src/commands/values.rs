//! Flag values checked as the command line is read, before anything runs.
//!
//! A night of `pgbisect watch` starts from cron and is read in the
//! morning: a value that makes no sense (`--every 0`, `--replay
//! 2024-02-30`, a `--commit-url` that is not a web page) must stop it at
//! once, with a usage error (exit 2) saying what to give, not hours later
//! or never. Each function here is a clap value parser: it returns the
//! value or what is wrong with it, and clap names the flag.

/// A count of at least 1 (commits a night, pairs of runs, days between
/// nights).
pub fn count(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "`{text}` is not a count: give a whole number of at least 1"
        )),
    }
}

/// [`count`] as a `usize`.
pub fn count_usize(text: &str) -> Result<usize, String> {
    count(text).map(|n| n as usize)
}

/// A length of time above zero (`30m`, `300s`), in seconds: a run of no
/// length measures nothing.
pub fn positive_duration(text: &str) -> Result<f64, String> {
    match crate::time::parse_duration(text) {
        Ok(seconds) if seconds > 0.0 => Ok(seconds),
        _ => Err(format!(
            "`{text}` is not a length of time above zero: write it as 30m, 300s or 1h30m"
        )),
    }
}

/// A share of commits in percent, 0 or more and below 100 (`5` or `5%`).
pub fn share_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim_end();
    match number.parse::<f64>() {
        Ok(pct) if (0.0..100.0).contains(&pct) => Ok(pct),
        _ => Err(format!(
            "`{text}` is not a percentage from 0 to below 100: write it as 5 or 5%"
        )),
    }
}

/// A web page of a commit: an `http://` or `https://` URL with `{sha}`
/// where the commit's id goes, without spaces or control characters (it
/// becomes a link in every page of the site).
pub fn commit_url(text: &str) -> Result<String, String> {
    let lower = text.to_ascii_lowercase();
    let problem = if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        "is not an http:// or https:// URL"
    } else if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        "holds a space or a control character"
    } else if text.len() <= "https://{sha}".len() || text.contains("://{sha}") {
        "names no web server"
    } else if !text.contains("{sha}") {
        "has no {sha} in it, where the commit's id goes"
    } else {
        return Ok(text.to_string());
    };
    Err(format!(
        "`{text}` {problem}: give a commit's web page with {{sha}} for its id, e.g. \
         'https://git.postgresql.org/gitweb/?p=postgresql.git;a=commit;h={{sha}}'"
    ))
}

/// `--site-url`: where the `--html` site is served (see
/// [`SiteUrl::parse`](crate::report::watch::site::links::SiteUrl::parse)).
pub fn site_url(text: &str) -> Result<crate::report::watch::site::links::SiteUrl, String> {
    crate::report::watch::site::links::SiteUrl::parse(text)
}

/// `SINCE..UNTIL`, two real dates (see [`crate::engine::watch::pick::parse_range`]).
pub fn replay_range(text: &str) -> Result<String, String> {
    crate::engine::watch::pick::parse_range(text).map(|_| text.to_string())
}

/// A time budget such as `8h` (see [`crate::engine::hunt::budget::parse_duration`]).
pub fn time_budget(text: &str) -> Result<String, String> {
    crate::engine::hunt::budget::parse_duration(text).map(|_| text.to_string())
}

/// A local time of day `HH:MM`.
pub fn clock_time(text: &str) -> Result<String, String> {
    crate::time::next_local(text, std::time::SystemTime::now()).map(|_| text.to_string())
}

/// A name that becomes part of a path or a row others read (a branch, a
/// machine): not empty, without control characters, and for a name that
/// is one path component, without `/` nor `.`/`..` alone.
pub fn name(text: &str) -> Result<String, String> {
    let problem = if text.trim().is_empty() {
        "is empty"
    } else if text.chars().any(char::is_control) {
        "holds a control character"
    } else if text.starts_with('-') {
        "starts with -"
    } else {
        return Ok(text.to_string());
    };
    Err(format!("`{}` {problem}: give a name", text.escape_debug()))
}

/// [`name`], and one path component: no `/`, not `.` or `..`.
pub fn plain_name(text: &str) -> Result<String, String> {
    let text = name(text)?;
    if text.contains('/') || text == "." || text == ".." {
        return Err(format!(
            "`{text}` is not a plain name: give one without / (it names a folder)"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_shares_of_the_simulator_are_ones_a_hunt_can_have() {
        assert_eq!(positive_duration("30m"), Ok(1800.0));
        for bad in ["0s", "0", "soon", "-1"] {
            assert!(positive_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(share_percent("0"), Ok(0.0));
        assert_eq!(share_percent("5%"), Ok(5.0));
        for bad in ["100", "150", "-5", "x", "NaN"] {
            assert!(share_percent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_are_at_least_one() {
        assert_eq!(count("3"), Ok(3));
        assert_eq!(count_usize(" 12 "), Ok(12));
        for bad in ["0", "-1", "1.5", "", "many", "99999999999"] {
            assert!(count(bad).unwrap_err().contains("at least 1"), "{bad}");
        }
    }

    #[test]
    fn a_commit_url_is_a_web_page_with_the_sha() {
        let gitweb = "https://git.postgresql.org/gitweb/?p=postgresql.git;a=commit;h={sha}";
        assert_eq!(commit_url(gitweb).as_deref(), Ok(gitweb));
        assert!(commit_url("http://example.org/c/{sha}").is_ok());
        for (bad, said) in [
            ("javascript:alert(1)//{sha}", "not an http"),
            ("JAVASCRIPT:x{sha}", "not an http"),
            ("data:text/html,{sha}", "not an http"),
            ("//example.org/{sha}", "not an http"),
            ("https://example.org/c", "no {sha}"),
            ("https://example.org/ {sha}", "a space"),
            ("https://example.org/\n{sha}", "control"),
            ("https://{sha}", "no web server"),
        ] {
            let err = commit_url(bad).unwrap_err();
            assert!(err.contains(said) && err.contains("e.g."), "{bad}: {err}");
        }
    }

    #[test]
    fn dates_durations_and_times_are_read_as_the_night_reads_them() {
        assert!(replay_range("2024-02-01..2024-02-29").is_ok());
        assert!(replay_range("2024-02-30..2024-03-01").is_err());
        assert!(time_budget("6h").is_ok());
        for bad in ["0h", "6", "-1h", "soon"] {
            assert!(time_budget(bad).is_err(), "{bad}");
        }
        assert!(clock_time("07:00").is_ok());
        for bad in ["25:00", "7", "07:60"] {
            assert!(clock_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_hold_no_control_bytes_and_plain_ones_no_slash() {
        assert!(name("feature/x").is_ok());
        assert!(plain_name("db1.example.org").is_ok());
        for bad in ["", " ", "a\u{1b}[2J", "-x"] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
        for bad in ["a/b", "..", ".", "../etc"] {
            assert!(plain_name(bad).is_err(), "{bad}");
        }
    }
}
