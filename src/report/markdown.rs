//! The report as GitHub-flavoured markdown, for issues, wikis and commit
//! fests: the same content as the text report, with real tables.

use super::layout::{Align, Block, Document};

/// Lays out a document as markdown.
pub fn render(doc: &Document) -> String {
    let mut parts = vec![format!("# {}", escape(&doc.title))];
    for section in &doc.sections {
        parts.push(format!("## {}", escape(&section.heading)));
        parts.extend(section.blocks.iter().map(block));
    }
    let mut out = parts.join("\n\n");
    out.push('\n');
    out
}

fn block(block: &Block) -> String {
    match block {
        Block::Facts(facts) => facts_list(facts),
        Block::Item { title, facts } => {
            format!("### {}\n\n{}", escape(title), facts_list(facts))
        }
        Block::List(items) => items
            .iter()
            .map(|i| format!("- {}", escape(i)))
            .collect::<Vec<_>>()
            .join("\n"),
        Block::Table { columns, rows } => table(columns, rows),
        Block::Verbatim(text) => format!("```toml\n{}\n```", text.replace("```", "` ` `")),
        Block::Command(argv) => format!(
            "```sh\n{}\n```",
            super::layout::shell_line(argv).replace("```", "` ` `")
        ),
        Block::Paragraph(text) => escape(text),
    }
}

fn facts_list(facts: &[(String, String)]) -> String {
    facts
        .iter()
        .map(|(label, value)| format!("- **{}:** {}", escape(label), escape(value)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn table(columns: &[(String, Align)], rows: &[Vec<String>]) -> String {
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let header = row(columns.iter().map(|(n, _)| escape(n)).collect());
    let rule = row(columns
        .iter()
        .map(|(_, a)| match a {
            Align::Left => ":---".to_string(),
            Align::Right => "---:".to_string(),
        })
        .collect());
    let mut lines = vec![header, rule];
    lines.extend(
        rows.iter()
            .map(|r| row(r.iter().map(|c| escape(c)).collect())),
    );
    lines.join("\n")
}

/// Escapes what markdown would otherwise read as markup.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a|b *c* <d>"), "a\\|b \\*c\\* \\<d>");
    }

    #[test]
    fn table_has_alignment_row() {
        let columns = vec![
            ("commit".to_string(), Align::Left),
            ("tps".to_string(), Align::Right),
        ];
        let rows = vec![vec!["abc".to_string(), "1.5".to_string()]];
        assert_eq!(
            table(&columns, &rows),
            "| commit | tps |\n| :--- | ---: |\n| abc | 1.5 |"
        );
    }
}
