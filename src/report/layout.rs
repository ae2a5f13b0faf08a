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
    Paragraph(String),
}
