//! Who the user is to git: the sender of an email draft.
//!
//! `git format-patch` signs its messages with `user.name` and `user.email`
//! from the repository's configuration, then the user's global and the
//! system's; a report mailed to pgsql-hackers should come from the same
//! person without asking again. Only the configuration is read, never
//! written.

use git2::{Config, Repository};
use std::path::Path;

/// `Name <email>` from git's configuration: the repository's at `repo`
/// (with the global and system files under it), else the global one
/// alone. None when no configuration gives an email address.
pub fn sender(repo: Option<&Path>) -> Option<String> {
    let from_repo = repo
        .and_then(|p| Repository::discover(p).ok())
        .and_then(|r| r.config().ok())
        .and_then(|c| ident(&c));
    from_repo.or_else(|| Config::open_default().ok().and_then(|c| ident(&c)))
}

/// `Name <email>` from one configuration; only the email when no name is
/// set, as git does.
pub fn ident(config: &Config) -> Option<String> {
    let text = |key: &str| {
        config
            .get_string(key)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let email = text("user.email")?;
    Some(match text("user.name") {
        Some(name) => format!("{} <{email}>", display_name(&name)),
        None => email,
    })
}

/// A display name as RFC 5322 takes it: quoted when it holds characters
/// that have a meaning in an address (`Doe, Jane`).
fn display_name(name: &str) -> String {
    let special = |c: char| "()<>[]:;@\\,.\"".contains(c);
    if name.chars().any(special) {
        format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, Config) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config");
        std::fs::write(&path, text).unwrap();
        let config = Config::open(&path).unwrap();
        (tmp, config)
    }

    #[test]
    fn name_and_email_make_a_sender() {
        let (_t, c) = config("[user]\n\tname = Jane Doe\n\temail = jane@example.org\n");
        assert_eq!(ident(&c).as_deref(), Some("Jane Doe <jane@example.org>"));
    }

    #[test]
    fn names_with_specials_are_quoted_and_a_lone_email_stands() {
        let (_t, c) = config("[user]\n\tname = Doe, J.\n\temail = j@example.org\n");
        assert_eq!(ident(&c).as_deref(), Some("\"Doe, J.\" <j@example.org>"));
        let (_t, c) = config("[user]\n\temail = j@example.org\n");
        assert_eq!(ident(&c).as_deref(), Some("j@example.org"));
    }

    #[test]
    fn no_email_is_no_sender() {
        let (_t, c) = config("[user]\n\tname = Jane Doe\n");
        assert_eq!(ident(&c), None);
        let (_t, c) = config("[core]\n\tbare = false\n");
        assert_eq!(ident(&c), None);
    }

    #[test]
    fn the_repository_s_own_setting_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path()).unwrap();
        let mut c = repo.config().unwrap();
        c.set_str("user.name", "Repo Person").unwrap();
        c.set_str("user.email", "repo@example.org").unwrap();
        assert_eq!(
            sender(Some(tmp.path())).as_deref(),
            Some("Repo Person <repo@example.org>")
        );
    }
}
