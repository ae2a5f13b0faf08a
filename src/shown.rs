//! Text written by others, made safe to show.
//!
//! Commit subjects and authors come from whoever committed, profile and
//! series names from whoever wrote the profile. pgbisect prints them on a
//! terminal (often root's, from cron's mail or a tail of the log), writes
//! them into text reports and mails them. A subject holding `ESC ]` or
//! `ESC [2J` would drive the reader's terminal; a CR would make a line
//! that overwrites itself, or end a mail header early. So the text is
//! shown with its control characters written out (`\u{1b}`, `\r`), and
//! where it must stay on one line (a header, a progress line) they are
//! spaces. The HTML site escapes on its own and does not come here.

use std::borrow::Cow;

/// `text` with every control character but TAB and LF written as an
/// escape (`\r`, `\u{0}`, `\u{1b}`, `\u{9b}`), so that printing it moves no
/// cursor and starts no terminal sequence. Text without any is borrowed.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`visible`] on one line: a CR, LF or TAB is a space, and the other
/// control characters are escapes. For a subject in a progress line or a
/// column of a table.
pub fn visible_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let spaced: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\r' | '\n' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    Cow::Owned(visible(&spaced).into_owned())
}

/// `text` as one header value: every control character is a space, runs
/// of white space are one space, and the ends are trimmed.
pub fn header_value(text: &str) -> String {
    text.split(|c: char| c.is_control() || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Control characters a terminal acts on: C0 (but TAB and LF), DEL, C1.
fn hidden(c: char) -> bool {
    c.is_control() && c != '\t' && c != '\n'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_are_written_out() {
        assert_eq!(visible("fix\x1b[2J it"), "fix\\u{1b}[2J it");
        assert_eq!(visible("a\rb\0c\u{9b}d"), "a\\rb\\u{0}c\\u{9b}d");
        assert_eq!(visible("tab\tand\nline"), "tab\tand\nline");
        assert!(matches!(visible("plain é"), Cow::Borrowed(_)));
        assert_eq!(visible_line("a\r\nb\tc\x07"), "a  b c\\u{7}");
        assert_eq!(header_value("  a\r\nBcc: x@y \x1b\t z "), "a Bcc: x@y z");
    }

    proptest! {
        #[test]
        fn nothing_a_terminal_acts_on_is_left(text in "\\PC*|[\\x00-\\x1f\\x7f-\\u{9f}a ]*") {
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(hidden));
            let line = visible_line(&text);
            prop_assert!(!line.chars().any(char::is_control));
            let header = header_value(&text);
            prop_assert!(!header.chars().any(char::is_control));
            prop_assert!(!header.contains("  "));
        }
    }
}
