//! The shape of a report before it is laid out: sections of facts,
//! lists and tables. [`document`](super::document) fills it; `text`,
//! `markdown` and `email` lay it out; [`why`](super::why) adds a
//! culprit's why-runs to it.

/// A whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// One line saying what was found (also the email's subject).
    pub title: String,
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub heading: String,
    pub blocks: Vec<Block>,
}

/// How a table column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// `label: value` lines.
    Facts(Vec<(String, String)>),
    /// A headed group of facts, such as one culprit.
    Item {
        title: String,
        facts: Vec<(String, String)>,
    },
    /// Bulleted remarks.
    List(Vec<String>),
    Table {
        columns: Vec<(String, Align)>,
        rows: Vec<Vec<String>>,
    },
    /// Text shown as it is (the profile's TOML).
    Verbatim(String),
    /// A shell command line, one argument an element: laid out to be
    /// copied and run (quoted where the shell needs it, each flag kept
    /// with its value).
    Command(Vec<String>),
    Paragraph(String),
}

/// `argv` as one shell command line, each argument quoted when the shell
/// would read it otherwise.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| crate::proc::shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(crate::proc::shell_quote("--clients"), "--clients");
        assert_eq!(
            crate::proc::shell_quote("/tmp/ro 128.toml"),
            "'/tmp/ro 128.toml'"
        );
        assert_eq!(crate::proc::shell_quote("it's"), "'it'\\''s'");
        assert_eq!(crate::proc::shell_quote(""), "''");
        let argv = ["pgbisect", "--profile", "a b"].map(String::from);
        assert_eq!(shell_line(&argv), "pgbisect --profile 'a b'");
    }
}
