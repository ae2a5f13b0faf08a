//! The report as plain text for the pgsql-hackers mailing list.
//!
//! Mail clients and the archives show text as it is, and lines longer than
//! 72 columns get wrapped by someone else's rules, breaking tables. So
//! every line here is at most [`WIDTH`] columns: long values wrap with a
//! hanging indent, and tables are sized to fit. The one exception is a
//! path or URL longer than a line: cut in two it could be neither copied
//! nor clicked, so it stays whole on a line of its own.

use super::layout::{Align, Block, Document};

/// The longest line a text report holds.
pub const WIDTH: usize = 72;

/// Lays out a document as text.
pub fn render(doc: &Document) -> String {
    let mut lines = wrap(&doc.title, WIDTH, "", "");
    for section in &doc.sections {
        lines.push(String::new());
        lines.extend(wrap(&section.heading, WIDTH, "", ""));
        lines.push("-".repeat(section.heading.chars().count().min(WIDTH)));
        for (i, block) in section.blocks.iter().enumerate() {
            if i > 0 {
                lines.push(String::new());
            }
            lines.extend(block_lines(block));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    // Commit subjects and notes are others' text: no terminal escapes.
    crate::shown::visible(&out).into_owned()
}

fn block_lines(block: &Block) -> Vec<String> {
    match block {
        Block::Facts(facts) => facts_lines(facts, ""),
        Block::Item { title, facts } => {
            let mut lines = wrap(title, WIDTH, "", "  ");
            lines.extend(facts_lines(facts, "  "));
            lines
        }
        Block::List(items) => items
            .iter()
            .flat_map(|item| wrap(item, WIDTH, "- ", "  "))
            .collect(),
        Block::Table { columns, rows } => table_lines(columns, rows),
        Block::Verbatim(text) => text
            .lines()
            .flat_map(|line| wrap_verbatim(line, WIDTH))
            .collect(),
        Block::Paragraph(text) => wrap(text, WIDTH, "", ""),
        Block::Command(argv) => command_lines(argv),
    }
}

/// A command line indented, continued with ` \\` between arguments (a
/// flag kept with its value), so that it can be pasted into a shell.
fn command_lines(argv: &[String]) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for arg in argv.iter().map(|a| crate::proc::shell_quote(a)) {
        match groups.last_mut() {
            Some(last)
                if last.starts_with("--") && !last.contains(' ') && !arg.starts_with('-') =>
            {
                last.push(' ');
                last.push_str(&arg);
            }
            _ => groups.push(arg),
        }
    }
    let (first, rest) = ("    ", "        ");
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_string();
    for group in groups {
        let fresh = line.trim().is_empty();
        if !fresh && line.chars().count() + 1 + group.chars().count() + 2 > WIDTH {
            lines.push(format!("{line} \\"));
            line = rest.to_string();
        } else if !fresh {
            line.push(' ');
        }
        line.push_str(&group);
    }
    lines.push(line);
    lines
}

/// Whether `word` is a path or a URL, which a cut would break.
fn unbreakable(word: &str) -> bool {
    word.contains('/')
}

/// `label: value` lines with the values aligned, wrapped under the value.
fn facts_lines(facts: &[(String, String)], indent: &str) -> Vec<String> {
    let label_width = facts
        .iter()
        .map(|(l, _)| l.chars().count() + 1)
        .max()
        .unwrap_or(0);
    facts
        .iter()
        .flat_map(|(label, value)| {
            let first = format!("{indent}{:<label_width$} ", format!("{label}:"));
            let rest = " ".repeat(first.chars().count());
            wrap(value, WIDTH, &first, &rest)
        })
        .collect()
}

fn table_lines(columns: &[(String, Align)], rows: &[Vec<String>]) -> Vec<String> {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = columns
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, ((_, align), w))| {
                let cell = cells.get(i).map_or("", String::as_str);
                match align {
                    Align::Left => format!("{cell:<w$}"),
                    Align::Right => format!("{cell:>w$}"),
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let header: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
    let mut lines = vec![line(&header)];
    let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    lines.push("-".repeat(total));
    lines.extend(rows.iter().map(|r| line(r)));
    lines
}

/// Word-wraps `text` to `width` columns; the first line starts with
/// `first`, the others with `rest`. A word longer than a line is cut,
/// unless it is a path or a URL: that stays whole, on a line of its own.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let used = line.chars().count();
        let need = word.chars().count() + usize::from(!empty);
        if !empty && used + need > width {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
        while line.chars().count() > width && !unbreakable(word) {
            let head: String = line.chars().take(width).collect();
            let tail: String = line.chars().skip(width).collect();
            lines.push(head);
            line = format!("{rest}{tail}");
        }
    }
    if !empty || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// Cuts a verbatim line into pieces of at most `width` columns, marking
/// each cut with a trailing `\` so no character is lost or invented.
fn wrap_verbatim(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.trim_end().chars().collect();
    if chars.len() <= width {
        return vec![chars.into_iter().collect()];
    }
    let piece = width - 1;
    let mut out: Vec<String> = chars
        .chunks(piece)
        .map(|c| c.iter().collect::<String>() + "\\")
        .collect();
    if let Some(last) = out.last_mut() {
        last.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_and_width() {
        let text = "Make idle backends exit if the postmaster dies, and a few more words";
        let lines = wrap(text, 30, "subject: ", "         ");
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert_eq!(lines[0], "subject: Make idle backends");
        let joined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(joined[1..].join(" "), text);
    }

    proptest::proptest! {
        #[test]
        fn wrapped_lines_fit_and_keep_every_character(
            text in "[a-zé ]{0,200}",
            width in 12usize..80,
        ) {
            let lines = wrap(&text, width, "label: ", "       ");
            for line in &lines {
                proptest::prop_assert!(line.chars().count() <= width, "{:?}", line);
            }
            let kept: String = lines.concat().chars().filter(|c| *c != ' ').collect();
            let given: String = format!("label:{text}").chars().filter(|c| *c != ' ').collect();
            proptest::prop_assert_eq!(kept, given);
        }
    }

    #[test]
    fn wrap_cuts_a_word_longer_than_the_line() {
        let lines = wrap(&"x".repeat(25), 10, "", "");
        assert_eq!(lines, vec!["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    }

    #[test]
    fn a_path_or_url_is_never_cut() {
        let path = format!(
            "/var/tmp/pgbisect/hunts/h/why-{}/profile-diff.svg",
            "0".repeat(40)
        );
        let text = format!("flame graph at {path} (red: more samples in the culprit)");
        let lines = wrap(&text, 72, "", "  ");
        assert!(lines.iter().any(|l| l.trim() == path), "{lines:?}");
        for line in &lines {
            assert!(
                line.chars().count() <= 72 || line.trim() == path,
                "{line:?}"
            );
        }
        let url = format!("https://www.postgresql.org/message-id/{}", "x".repeat(80));
        assert_eq!(wrap(&url, 72, "- ", "  "), vec![format!("- {url}")]);
    }

    #[test]
    fn a_command_is_laid_out_to_be_pasted_with_each_flag_by_its_value() {
        let argv: Vec<String> = [
            "pgbisect",
            "--good",
            "006a283a3c39",
            "--bad",
            "60bbffae1c7e",
            "--profile",
            "/home/jane/profiles/read only 128.toml",
            "--clients",
            "128",
            "--threshold",
            "2.5%",
            "--first-only",
        ]
        .map(String::from)
        .to_vec();
        let lines = command_lines(&argv);
        assert_eq!(
            lines,
            [
                "    pgbisect --good 006a283a3c39 --bad 60bbffae1c7e \\",
                "        --profile '/home/jane/profiles/read only 128.toml' \\",
                "        --clients 128 --threshold 2.5% --first-only",
            ]
        );
    }

    #[test]
    fn wrap_of_nothing_is_the_prefix() {
        assert_eq!(wrap("", 72, "note: ", "  "), vec!["note:".to_string()]);
    }

    #[test]
    fn verbatim_cuts_are_marked() {
        let long = "a".repeat(15);
        let pieces = wrap_verbatim(&long, 8);
        assert_eq!(pieces, vec!["aaaaaaa\\", "aaaaaaa\\", "a"]);
        assert_eq!(wrap_verbatim("short", 8), vec!["short"]);
    }

    #[test]
    fn table_aligns_columns() {
        let columns = vec![
            ("commit".to_string(), Align::Left),
            ("tps".to_string(), Align::Right),
        ];
        let rows = vec![
            vec!["abc".to_string(), "1.5".to_string()],
            vec!["abcdefgh".to_string(), "1234.5".to_string()],
        ];
        assert_eq!(
            table_lines(&columns, &rows),
            vec![
                "commit       tps",
                "----------------",
                "abc          1.5",
                "abcdefgh  1234.5"
            ]
        );
    }
}
