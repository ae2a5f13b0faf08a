//! Renderers of a hunt's findings. Each returns text; none prints.
//!
//! [`document`] chooses what a report says, opening with the
//! [`finding`]; `text`, `markdown` and
//! `email` only lay it out, so the formats cannot disagree. The size of
//! the drop a report leads with is [`estimate::best`]: the culprits'
//! side-by-side changes combined when they cover the whole drop, else
//! every run of the endpoints, never only the endpoints' first look
//! (see that module for why). Each culprit's why-runs are laid out by
//! [`why`]. The watcher's night, findings, digest and site are rendered
//! beside them, in [`watch`].

pub mod chart;
pub mod counted;
pub mod document;
pub mod email;
pub mod estimate;
pub mod finding;
pub mod findings;
pub mod layout;
pub mod markdown;
pub mod running;
pub mod text;
pub mod units;
pub mod watch;
pub mod why;

use crate::report::findings::HuntReport;
use anyhow::Context;

pub use email::Envelope;

/// The result as pretty JSON.
pub fn json(report: &HuntReport) -> anyhow::Result<String> {
    serde_json::to_string_pretty(report).context("cannot encode the result as JSON")
}

/// The report as plain text for the mailing list: at most 72 columns.
pub fn text(report: &HuntReport) -> String {
    text::render(&document::document(report))
}

/// The why-runs of one commit against another on their own, as plain
/// text (for `compare --why`).
pub fn why_text(why: &crate::core::why::Why) -> String {
    let heading = format!(
        "Why: {} against {}, again with instruments",
        crate::model::short_sha(&why.commit),
        crate::model::short_sha(&why.parent)
    );
    let text = text::render(&layout::Document {
        title: String::new(),
        sections: vec![layout::Section {
            heading,
            blocks: why::blocks(why),
        }],
    });
    text.trim_start().to_string()
}

/// The report as GitHub-flavoured markdown.
pub fn markdown(report: &HuntReport) -> String {
    markdown::render(&document::document(report))
}

/// The report as an RFC 5322 message whose body is [`text`].
pub fn email(report: &HuntReport, envelope: &Envelope) -> String {
    let id = format!("{}.{}", report.good.short(), report.bad.short());
    email::render(&document::headline(report), &text(report), &id, envelope)
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Plain text for the mailing list, at most 72 columns.
    #[default]
    Text,
    /// GitHub-flavoured markdown with tables.
    Markdown,
    /// The result as data.
    Json,
    /// An RFC 5322 message with the text as body.
    Email,
}

/// Renders `report` in `format`; an email needs an envelope.
pub fn render(
    report: &HuntReport,
    format: Format,
    envelope: Option<&Envelope>,
) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => text(report),
        Format::Markdown => markdown(report),
        Format::Json => json(report)? + "\n",
        Format::Email => {
            let envelope = envelope.context("an email report needs a sender and a recipient")?;
            email(report, envelope)
        }
    })
}
