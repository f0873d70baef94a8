//! One point, one line: facts of one subject that state the same sentence under different
//! relations (a reviewer's issue that is also a convention) are retrieved once.

use std::borrow::Cow;

use fact_model::{ELLIPSIS, char_len};

use crate::format::one_line;
use crate::retrieved::RetrievedFact;

/// The relations whose object states a point in words, strongest first. Of the retrieved
/// facts of one subject that make the same point (see [`IndexRetriever`]), only the
/// strongest is kept: the one whose relation comes first here, then the higher score,
/// then the better rank. Facts of other relations (`modified_by task:2`, `passed_in
/// task:3`) name things rather than state points and are never folded.
///
/// - `convention`: a standing rule, which outlives the review that stated it;
/// - `must_fix`: what the task must change;
/// - `blocked_by`: what stops the task, stronger than the same follow-up as `requires`;
/// - `requires`: a follow-up action;
/// - `issue`: a review finding; its `[severity]` tag is all it adds to the same sentence
///   as a convention or a fix, and an approval settles it.
///
/// These are the relation names of fact-extract's rules (`fact_extract::relation`).
///
/// [`IndexRetriever`]: crate::IndexRetriever
pub const RELATION_STRENGTH: &[&str] =
    &["convention", "must_fix", "blocked_by", "requires", "issue"];

/// The shortest clipped text (without its `...`) that matches a longer one it begins: long
/// enough that one subject's two texts sharing it are one sentence.
const MIN_CLIPPED_CHARS: usize = 40;

/// The longest leading `[tag]` that is stripped (the reviewer's severities are at most 9
/// letters).
const MAX_TAG_CHARS: usize = 16;

/// The text a fact's point is compared on: its object with runs of whitespace folded, and
/// a leading `[tag] ` (lowercase ASCII letters, as fact-extract's `[minor] `) removed.
fn point_text(object: &str) -> Cow<'_, str> {
    match one_line(object) {
        Cow::Borrowed(folded) => Cow::Borrowed(strip_tag(folded)),
        Cow::Owned(folded) => match strip_tag(&folded) {
            stripped if stripped.len() == folded.len() => Cow::Owned(folded),
            stripped => Cow::Owned(stripped.to_owned()),
        },
    }
}

/// `text` without a leading `[tag] `; see [`point_text`].
fn strip_tag(text: &str) -> &str {
    text.strip_prefix('[')
        .and_then(|rest| rest.split_once("] "))
        .filter(|(tag, _)| {
            (1..=MAX_TAG_CHARS).contains(&tag.len()) && tag.bytes().all(|b| b.is_ascii_lowercase())
        })
        .map_or(text, |(_, stripped)| stripped)
}

/// Whether two point texts are one sentence: equal, or one was clipped (ends in `...` after
/// at least [`MIN_CLIPPED_CHARS`] characters) and the other begins with what it kept.
/// Clipping is how they differ when they come from one long reviewer message: the issue's
/// `[severity] ` prefix leaves less of the message under fact-extract's length limit.
fn same_text(a: &str, b: &str) -> bool {
    a == b || begins(a, b) || begins(b, a)
}

/// Whether `clipped` ends in `...` after at least [`MIN_CLIPPED_CHARS`] characters that
/// `text` begins with.
fn begins(clipped: &str, text: &str) -> bool {
    clipped
        .strip_suffix(ELLIPSIS)
        .is_some_and(|kept| char_len(kept) >= MIN_CLIPPED_CHARS && text.starts_with(kept))
}

/// The rank of a relation in [`RELATION_STRENGTH`], if it states points.
fn strength(relation: &str) -> Option<usize> {
    RELATION_STRENGTH.iter().position(|r| *r == relation)
}

/// `ranked` (best first) without every fact for which `ranked` holds a stronger fact making
/// the same point: same subject, both relations in [`RELATION_STRENGTH`], the same text (see
/// [`same_text`]). Stronger: earlier in [`RELATION_STRENGTH`], then a higher score, then
/// earlier in `ranked`. The facts kept keep their order.
pub(crate) fn fold_same_points(ranked: Vec<RetrievedFact>) -> Vec<RetrievedFact> {
    struct Point<'r> {
        at: usize,
        strength: usize,
        subject: &'r str,
        text: Cow<'r, str>,
        /// The byte length of the text's first [`MIN_CLIPPED_CHARS`] characters.
        head: usize,
    }
    impl Point<'_> {
        fn head(&self) -> &str {
            self.text.get(..self.head).unwrap_or(&self.text)
        }
    }
    let dropped = {
        let mut points: Vec<Point<'_>> = ranked
            .iter()
            .enumerate()
            .filter_map(|(at, found)| {
                let strength = strength(found.fact.relation())?;
                let text = point_text(found.fact.object());
                let head = text
                    .char_indices()
                    .nth(MIN_CLIPPED_CHARS)
                    .map_or(text.len(), |(end, _)| end);
                Some(Point {
                    at,
                    strength,
                    subject: found.fact.subject(),
                    text,
                    head,
                })
            })
            .collect();
        let score = |at: usize| ranked.get(at).map_or(0.0, |found| found.score);
        let stronger = |a: &Point<'_>, b: &Point<'_>| {
            a.strength
                .cmp(&b.strength)
                .then(score(b.at).total_cmp(&score(a.at)))
                .then(a.at.cmp(&b.at))
                .is_lt()
        };
        // Facts that can match share their subject and their text's first
        // MIN_CLIPPED_CHARS characters; only those are compared.
        points.sort_by(|a, b| (a.subject, a.head()).cmp(&(b.subject, b.head())));
        let mut dropped = Vec::new();
        for group in points.chunk_by(|a, b| a.subject == b.subject && a.head() == b.head()) {
            if group.len() < 2 {
                continue;
            }
            for point in group {
                if group
                    .iter()
                    .any(|other| stronger(other, point) && same_text(&other.text, &point.text))
                {
                    dropped.push(point.at);
                }
            }
        }
        dropped
    };
    if dropped.is_empty() {
        return ranked;
    }
    let mut keep = vec![true; ranked.len()];
    for at in dropped {
        if let Some(keep) = keep.get_mut(at) {
            *keep = false;
        }
    }
    ranked
        .into_iter()
        .zip(keep)
        .filter_map(|(found, keep)| keep.then_some(found))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{point_text, same_text};

    #[test]
    fn a_severity_tag_and_whitespace_do_not_change_the_point() {
        assert_eq!(
            point_text("[minor] Naming  convention:\nuse snake_case"),
            "Naming convention: use snake_case"
        );
        assert_eq!(point_text("[important] x"), "x");
        // Not a tag: capitals, digits, no space after it, or too long.
        for text in [
            "[WIP] x",
            "[v2] x",
            "[minor]x",
            "[abcdefghijklmnopq] x",
            "[] x",
        ] {
            assert_eq!(point_text(text), text);
        }
    }

    #[test]
    fn a_clipped_text_matches_the_text_it_begins() {
        let long = "Use snake_case for every function and module name in the models folder";
        let clipped = |n: usize| format!("{}...", long.chars().take(n).collect::<String>());
        assert!(same_text(long, long));
        assert!(same_text(&clipped(50), long));
        assert!(same_text(long, &clipped(50)));
        assert!(same_text(&clipped(45), &clipped(60)));
        // Too short a clip says too little to be the same sentence.
        assert!(!same_text(&clipped(20), long));
        assert!(!same_text(long, "Use snake_case"));
    }
}
