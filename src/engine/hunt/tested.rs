//! A hunt's tested commits as its findings read them.
//!
//! The search judges a commit against the ends of the range it was
//! searching, and the posterior search leaves many commits it never had to
//! judge as "unsure"; the checks that confirm a culprit then settle a pair
//! side by side. A report whose table still said "unsure" beside a culprit
//! it confirms at p < 0.0001 contradicts itself, so the table is read
//! through the findings before it is written. (Which level a commit between
//! two drops was judged against is the report's to say: it marks those
//! rows from the culprits and ranges it shows.)

use crate::model::Commit;
use crate::report::findings::{Culprit, Judgement, TestedCommit};

/// The tested commits as the hunt's findings read them, so that no table
/// contradicts a verdict: a confirmed culprit is bad-like and its parent
/// good-like, whatever the search had left them as (a commit the posterior
/// search never had to judge is "unsure" until a check settles it).
pub(super) fn with_confirmed(
    mut tested: Vec<TestedCommit>,
    culprits: &[Culprit],
    commits: &[Commit],
) -> Vec<TestedCommit> {
    let position = |id: &str| commits.iter().position(|c| c.id == id);
    let drops: Vec<(usize, usize)> = culprits
        .iter()
        .filter_map(|c| Some((position(&c.parent)?, position(&c.commit)?)))
        .collect();
    let endpoint = |j: Judgement| matches!(j, Judgement::GoodEndpoint | Judgement::BadEndpoint);
    for t in tested.iter_mut().filter(|t| !endpoint(t.judgement)) {
        if drops.iter().any(|&(_, bad)| bad == t.position) {
            t.judgement = Judgement::BadLike;
        } else if drops.iter().any(|&(good, _)| good == t.position) {
            t.judgement = Judgement::GoodLike;
        }
    }
    tested
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::decide::{Change, Method};

    /// A SHA whose short form names its position: `04000000...`.
    fn id(pos: usize) -> String {
        format!("{pos:02}{}", "0".repeat(38))
    }

    fn commits(n: usize) -> Vec<Commit> {
        (0..n).map(|i| Commit::bare(id(i))).collect()
    }

    fn tested(pos: usize, judgement: Judgement) -> TestedCommit {
        TestedCommit {
            commit: Commit::bare(id(pos)),
            position: pos,
            judgement,
            samples: Vec::new(),
            summary: None,
            note: None,
        }
    }

    fn culprit(parent: usize, commit: usize) -> Culprit {
        Culprit {
            commit: id(commit),
            subject: String::new(),
            author: String::new(),
            date: String::new(),
            parent: id(parent),
            before_tps: 1000.0,
            after_tps: 800.0,
            change: Change {
                pct: -20.0,
                low_pct: -22.0,
                high_pct: -18.0,
                confidence: 0.99,
            },
            p_value: 0.0001,
            method: Method::WelchT,
            runs_before: 5,
            runs_after: 5,
            per_host: Vec::new(),
            functions: Vec::new(),
        }
    }

    #[test]
    fn a_confirmed_culprit_and_its_parent_are_never_unsure() {
        let list = vec![
            tested(0, Judgement::GoodEndpoint),
            tested(4, Judgement::Unsure),
            tested(5, Judgement::Unsure),
            tested(7, Judgement::BadLike),
            tested(9, Judgement::BadEndpoint),
        ];
        let out = with_confirmed(list, &[culprit(4, 5)], &commits(10));
        let judged: Vec<Judgement> = out.iter().map(|t| t.judgement).collect();
        use Judgement::*;
        assert_eq!(
            judged,
            [GoodEndpoint, GoodLike, BadLike, BadLike, BadEndpoint]
        );
        assert!(out.iter().all(|t| t.note.is_none()), "{out:?}");
    }

    #[test]
    fn an_endpoint_stays_an_endpoint_when_it_is_a_culprits_parent() {
        let list = vec![
            tested(0, Judgement::GoodEndpoint),
            tested(1, Judgement::Unsure),
        ];
        let out = with_confirmed(list, &[culprit(0, 1)], &commits(3));
        assert_eq!(out[0].judgement, Judgement::GoodEndpoint);
        assert_eq!(out[1].judgement, Judgement::BadLike);
    }
}
