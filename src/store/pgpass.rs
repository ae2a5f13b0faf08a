//! What libpq takes from the environment and the postgres crate does
//! not: the user (`PGUSER`, else the login name) and the password
//! (`PGPASSWORD`, else the first matching line of `PGPASSFILE` or
//! `~/.pgpass`), so that a crontab line need not hold the password.

use ::postgres::Config;
use ::postgres::config::Host;

/// Fills in the user and the password `config` lacks, as libpq would.
pub fn fill_in(config: &mut Config) {
    if config.get_user().is_none()
        && let Some(user) = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
    {
        config.user(&user);
    }
    if config.get_password().is_some() {
        return;
    }
    if let Some(password) = env("PGPASSWORD") {
        config.password(&password);
        return;
    }
    let file = env("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| env("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")));
    let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
        return;
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or("").to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    if let Some(password) = lookup(&text, [&host, &port, &db, &user]) {
        config.password(&password);
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The password of the first line of a `.pgpass` text whose host, port,
/// database and user match `want` (`*` matching anything).
pub fn lookup(text: &str, want: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(fields)
        .filter(|f| f.len() == 5)
        .find(|f| {
            f[..4]
                .iter()
                .zip(want)
                .all(|(have, w)| have == "*" || have == w)
        })
        .map(|f| f[4].clone())
}

/// The `:`-separated fields of a line, `\:` and `\\` read as `:` and `\`.
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(last)) = (chars.next(), out.last_mut()) {
                    last.push(next);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_gives_the_password() {
        let text = "# team store\n\
                    db.example.org:5432:perf:watcher:s3cr\\:et\n\
                    *:*:*:watcher:fallback\n";
        assert_eq!(
            lookup(text, ["db.example.org", "5432", "perf", "watcher"]).as_deref(),
            Some("s3cr:et")
        );
        assert_eq!(
            lookup(text, ["other", "5432", "perf", "watcher"]).as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup(text, ["other", "5432", "perf", "someone"]), None);
    }
}
