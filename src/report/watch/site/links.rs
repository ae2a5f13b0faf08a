//! Where the site's pages are, inside the site and on the web: one place
//! that names a change's page, its hunt report's page and the feed, so
//! that the pages, the finding's mail and the digest link the same files.
//!
//! A mail is read away from the site, so it can only link a page by an
//! absolute address: `--site-url` says where the `--html` folder is
//! served ([`SiteUrl`]). It is checked as the command line is read, an
//! `http://` or `https://` address and nothing a mail reader or a feed
//! reader could take for something else (a space, a quote, a fragment).

use std::fmt;

/// The feed of confirmed changes, at the site's root.
pub const FEED: &str = "changes.atom";

/// The page of change `id`, at the site's root.
pub fn change_page(id: i64) -> String {
    format!("change-{id}.html")
}

/// The page the text report of change `id`'s hunt is shown on, beside
/// its copy (`hunts/change-<id>.txt`, see [`super::hunt_report`]).
pub fn hunt_page(id: i64) -> String {
    format!("hunts/change-{id}.html")
}

/// Where the site is served: an `http://` or `https://` address ending
/// in `/`, to which a page's path inside the site is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteUrl(String);

impl SiteUrl {
    /// `text` checked: an `http://` or `https://` address of a web
    /// server, with no space, control character, quote, `<`, `>`, `?` or
    /// `#` (a page's path is added at its end); a `/` is added when it
    /// does not end in one. The error says what to give.
    pub fn parse(text: &str) -> Result<SiteUrl, String> {
        let lower = text.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("https://")
            .or_else(|| lower.strip_prefix("http://"));
        let problem = match rest {
            None => "is not an http:// or https:// URL",
            Some(_) if text.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                "holds a space or a control character"
            }
            Some(_) if text.contains(['"', '\'', '<', '>', '\\', '`']) => {
                "holds a quote, a backslash or an angle bracket"
            }
            Some(_) if text.contains(['?', '#']) => {
                "holds a query (?) or a fragment (#), before which a page's name could not go"
            }
            Some(rest) if rest.is_empty() || rest.starts_with('/') => "names no web server",
            Some(_) => {
                let mut base = text.to_string();
                if !base.ends_with('/') {
                    base.push('/');
                }
                return Ok(SiteUrl(base));
            }
        };
        Err(format!(
            "`{text}` {problem}: give the address the --html folder is served at, \
             e.g. https://perf.example.org/pgbisect/"
        ))
    }

    /// The absolute address of `path`, a page's path inside the site.
    pub fn page(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

impl fmt::Display for SiteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The addresses a message gives for change `id`: its page, and its hunt
/// report's page when `hunted` (the hunt wrote its report).
pub fn of_change(site: &SiteUrl, id: i64, hunted: bool) -> (String, Option<String>) {
    (
        site.page(&change_page(id)),
        hunted.then(|| site.page(&hunt_page(id))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_url_is_an_http_address_given_a_slash_at_its_end() {
        let site = SiteUrl::parse("https://perf.example.org/pg").unwrap();
        assert_eq!(site.to_string(), "https://perf.example.org/pg/");
        assert_eq!(
            site.page(&change_page(3)),
            "https://perf.example.org/pg/change-3.html"
        );
        let site = SiteUrl::parse("HTTP://localhost:8080/").unwrap();
        assert_eq!(
            of_change(&site, 4, true),
            (
                "HTTP://localhost:8080/change-4.html".into(),
                Some("HTTP://localhost:8080/hunts/change-4.html".into())
            )
        );
        assert_eq!(of_change(&site, 4, false).1, None);
    }

    #[test]
    fn anything_else_is_refused_saying_what_to_give() {
        for (text, why) in [
            ("perf.example.org/pg", "is not an http:// or https:// URL"),
            ("javascript:alert(1)", "is not an http"),
            ("file:///var/www", "is not an http"),
            ("https://", "names no web server"),
            ("https:///pg", "names no web server"),
            ("https://a.org/my site", "a space"),
            ("https://a.org/\"x", "a quote"),
            ("https://a.org/<b>", "an angle bracket"),
            ("https://a.org/?p=1", "a query"),
            ("https://a.org/#top", "a fragment"),
        ] {
            let err = SiteUrl::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
            assert!(
                err.contains("e.g. https://perf.example.org/pgbisect/"),
                "{err}"
            );
        }
    }
}
