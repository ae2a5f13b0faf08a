//! A differential flame graph of two folded profiles.
//!
//! The table names the functions that moved; the picture shows where they
//! sit. Drawn by inferno as Brendan Gregg's differential flame graphs are:
//! the frames are the after profile's, red where a frame's samples grew,
//! blue where they shrank, the before profile scaled to the after one's
//! sample count so that a busier run does not paint everything red.

use super::fold::Folded;
use std::io;
use std::path::Path;

/// The SVG of `after` against `before`, titled `title`.
pub fn differential_svg(before: &Folded, after: &Folded, title: &str) -> io::Result<Vec<u8>> {
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: true,
        },
        before.to_text().as_bytes(),
        after.to_text().as_bytes(),
        &mut merged,
    )?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = Some(format!(
        "red: more samples after, blue: fewer ({} samples before, {} after)",
        before.samples(),
        after.samples()
    ));
    options.count_name = "samples".to_string();
    options.hash = true;
    options.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_reader(&mut options, merged.as_slice(), &mut svg)
        .map_err(io::Error::other)?;
    Ok(svg)
}

/// Writes [`differential_svg`] to `path` (a link there is replaced, never
/// followed).
pub fn write_differential(
    path: &Path,
    before: &Folded,
    after: &Folded,
    title: &str,
) -> io::Result<()> {
    crate::files::write(path, differential_svg(before, after, title)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_differential_graph_is_svg_with_both_profiles_frames() {
        let before = Folded::parse(
            "postgres;PostgresMain;ExecutorStart 10\npostgres;PostgresMain;pq_getbyte 90\n",
        )
        .unwrap();
        let after = Folded::parse(
            "postgres;PostgresMain;ExecutorStart 60\npostgres;PostgresMain;pq_getbyte 40\n",
        )
        .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("why.svg");
        write_differential(&path, &before, &after, "ExecutorStart slowed").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let xml = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, xml).unwrap();
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(svg.contains("ExecutorStart slowed"));
        assert!(svg.contains("ExecutorStart"));
        assert!(svg.contains("pq_getbyte"));
        // Frames whose share grew are drawn red, those that shrank blue.
        let fills: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        assert!(fills.iter().any(|f| f.starts_with("rgb(255,")), "{fills:?}");
        assert!(
            fills
                .iter()
                .any(|f| f.starts_with("rgb(") && f.ends_with(",255)")),
            "{fills:?}"
        );
        assert_eq!(
            differential_svg(&before, &after, "t").unwrap(),
            differential_svg(&before, &after, "t").unwrap(),
            "the same profiles draw the same picture"
        );
    }
}
