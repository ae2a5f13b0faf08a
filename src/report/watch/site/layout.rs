//! Where things go on a series' chart, apart from drawing them: the span
//! of its y axis and the rows of its change labels.
//!
//! A series' points sit within a few percent of each other, but one wild
//! run of a pair (a checkpoint, a neighbour on the machine) can lie at
//! half the level. An axis stretched to it leaves a 10% step a few pixels
//! high, which is the one thing the chart is for. So the axis spans the
//! bulk of what is plotted, and whatever lies far past it is drawn at the
//! edge with a mark of its own (see [`super::chart`]). Change labels of
//! nearby changes (a confirmed step and the dismissed ones around it) are
//! stacked in rows so that each can be read.

use crate::core::stats::percentile;

/// How far past the middle half of the values one may lie and still
/// widen the axis, in spans of that half (Tukey's fences).
const FENCE: f64 = 1.5;

/// The least a fence reaches past the middle half, as a share of its
/// midpoint: on a quiet series, runs within 2% are still drawn in full.
const MIN_REACH: f64 = 0.02;

/// The span of a y axis over the finite `values` plotted (every end of a
/// spread, say) that always holds each of the finite `kept` ones (each
/// point's median, each change's levels): the values inside the fences
/// set by the middle half of all of them, and every kept one. `None`
/// when there is no finite value at all.
pub(super) fn y_span(values: &[f64], kept: &[f64]) -> Option<(f64, f64)> {
    let kept: Vec<f64> = kept.iter().copied().filter(|v| v.is_finite()).collect();
    let all: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .chain(kept.iter().copied())
        .collect();
    if all.is_empty() {
        return None;
    }
    let (q1, q3) = (percentile(&all, 0.25), percentile(&all, 0.75));
    let reach = (FENCE * (q3 - q1)).max(MIN_REACH * ((q1 + q3) / 2.0).abs());
    let fenced = (q1 - reach)..=(q3 + reach);
    let shown = all.iter().filter(|v| fenced.contains(v)).chain(&kept);
    let (lo, hi) = shown.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    // The quartiles are among the values, so something lies inside.
    (lo <= hi).then_some((lo, hi))
}

/// A label's place: where its text is anchored and the box it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LabelBox {
    /// The text's anchor and baseline.
    pub x: f64,
    pub baseline: f64,
    /// Anchored at its end (left of its line), for a label that would
    /// run past the right edge otherwise.
    pub end: bool,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl LabelBox {
    /// Whether the two boxes share any area (touching edges do not).
    pub fn overlaps(&self, other: &LabelBox) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

/// A generous width of a character at the chart's 12px sans-serif, bold
/// as the page's style draws a confirmed change: the text's width is
/// guessed from its length, as nothing here measures.
const CHAR_WIDTH: f64 = 7.5;
/// A row's height; a label's box is its font's height and a little.
const ROW: f64 = 16.0;
const ASCENT: f64 = 11.0;
const DESCENT: f64 = 4.0;
/// Room between a line and its label, and after a label in its row.
const GAP: f64 = 4.0;

/// Places labels of `chars` characters beside the vertical lines at `x`
/// (pixels), `(x, chars)` each: right of its line, or left of it when it
/// would cross `right_edge`; in the first row from `first_baseline` down
/// where it meets no label placed before it, the labels taken from left
/// to right. The boxes come back in the order of `labels`.
pub(super) fn place_labels(
    labels: &[(f64, usize)],
    right_edge: f64,
    first_baseline: f64,
) -> Vec<LabelBox> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|a, b| labels[*a].0.total_cmp(&labels[*b].0));
    let mut placed: Vec<Option<LabelBox>> = vec![None; labels.len()];
    let mut taken: Vec<LabelBox> = Vec::new();
    for i in order {
        let (x, chars) = labels[i];
        let width = chars as f64 * CHAR_WIDTH;
        let end = x + GAP + width > right_edge;
        let (anchor, left) = if end {
            (x - GAP, x - GAP - width)
        } else {
            (x + GAP, x + GAP)
        };
        let at_row = |row: usize| {
            let baseline = first_baseline + ROW * row as f64;
            LabelBox {
                x: anchor,
                baseline,
                end,
                left,
                right: left + width + GAP,
                top: baseline - ASCENT,
                bottom: baseline + DESCENT,
            }
        };
        // Each placed label blocks one row at most, so a free one is found
        // within as many rows as there are labels.
        let free = (0..=taken.len())
            .map(at_row)
            .find(|b| !taken.iter().any(|t| t.overlaps(b)))
            .unwrap_or_else(|| at_row(taken.len()));
        taken.push(free);
        placed[i] = Some(free);
    }
    placed.into_iter().flatten().collect()
}
