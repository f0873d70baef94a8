//! The part of a query that is analyzed: a bounded prefix, so a multi-megabyte task prompt
//! costs what its first terms cost.
//!
//! The store owns the analyzer and gets queries as text; these functions only decide where
//! that text ends, using the store's own [`Analyzer`], so the terms the store sees are
//! exactly the ones [`query_terms`] reports.

use std::collections::HashSet;

use fact_store::Analyzer;

/// The most bytes of a query that are analyzed (64 KiB). Past this the text is cut at a
/// word boundary on a char boundary.
///
/// Analysis (splitting, lowercasing, stemming) costs about 45 ns a byte, and a query is
/// analyzed twice, here and in the store: 64 KiB bound that at about 6 ms, against 40 µs
/// for a 40-word query on 1,000 facts (`cargo bench -p fact-retrieve --bench retrieve`,
/// `retrieve_long_query`). The longest query text of the corpus, a spec's requirements,
/// design and tasks together, has 40 KB and is analyzed whole; a task prompt has 1–2 KB.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// The most distinct terms of a query that are analyzed (1,024). The text ends before the
/// word that would bring the 1,025th.
///
/// The store keeps a query's distinct terms in a list it searches linearly, so a search
/// costs the square of the distinct terms: measured on 1,000 facts, 64 KiB of varied prose
/// (3,300 distinct terms) took 11 ms and 256 KiB (12,400) 100 ms, so a 6 MB prompt stalled
/// for tens of seconds. At 1,000 distinct terms a search costs under a millisecond more
/// than a 40-word query, on 1,000 facts as on 100,000. The corpus's longest query text
/// holds 625 distinct terms, a task prompt at most 155.
pub const MAX_QUERY_TERMS: usize = 1024;

/// Whether `c` may lie inside a word: the analyzer's words are runs of letters and digits,
/// and ids such as `task:12` also hold a `:`. Text split at any other char analyzes to the
/// same terms as the whole.
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || c == ':'
}

/// The prefix of `text` that is analyzed: at most [`MAX_QUERY_BYTES`] bytes, and no word
/// that would bring more than [`MAX_QUERY_TERMS`] distinct terms under `analyzer`. It ends
/// at a word boundary, so its terms are exactly the first terms of `text` (a word is never
/// cut into a shorter, different term), except when the first [`MAX_QUERY_BYTES`] bytes
/// hold no boundary at all: then they are cut on a char boundary.
///
/// ```
/// use fact_retrieve::{MAX_QUERY_BYTES, query_text};
/// use fact_store::Analyzer;
///
/// let analyzer = Analyzer::default();
/// assert_eq!(query_text(&analyzer, "Extend the parser"), "Extend the parser");
/// let long = "parser ".repeat(1_000_000);
/// assert!(query_text(&analyzer, &long).len() <= MAX_QUERY_BYTES);
/// ```
#[must_use]
pub fn query_text<'t>(analyzer: &Analyzer, text: &'t str) -> &'t str {
    let text = clip_at_boundary(text, MAX_QUERY_BYTES);
    // Every term takes a byte and needs a boundary after it, so shorter text cannot hold
    // too many; most queries stop here.
    if text.len() <= 2 * MAX_QUERY_TERMS {
        return text;
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut start = 0;
    // Pieces end at a boundary char, so each analyzes to its own terms.
    for piece in text.split_inclusive(|c: char| !in_word(c)) {
        let mut fresh: Vec<String> = Vec::new();
        for term in analyzer.analyze(piece) {
            if !seen.contains(&term) && !fresh.contains(&term) {
                fresh.push(term);
            }
        }
        if seen.len() + fresh.len() > MAX_QUERY_TERMS {
            return text.get(..start).unwrap_or_default();
        }
        seen.extend(fresh);
        start += piece.len();
    }
    text
}

/// The distinct terms the store analyzes for `text` (those of [`query_text`]), in order of
/// first appearance: never more than [`MAX_QUERY_TERMS`].
///
/// ```
/// use fact_retrieve::query_terms;
/// use fact_store::Analyzer;
///
/// assert_eq!(query_terms(&Analyzer::default(), "Parse the parser's parsers"), ["pars", "parser"]);
/// ```
#[must_use]
pub fn query_terms(analyzer: &Analyzer, text: &str) -> Vec<String> {
    let mut terms = analyzer.analyze(query_text(analyzer, text));
    let mut seen = HashSet::new();
    terms.retain(|term| seen.insert(term.clone()));
    terms
}

/// `text` cut to at most `max_bytes` bytes, at the last word boundary there, or on a char
/// boundary when there is none.
fn clip_at_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end).unwrap_or_default();
    // Cut inside a word: drop its head, unless it is all there is.
    if text
        .get(end..)
        .and_then(|rest| rest.chars().next())
        .is_some_and(in_word)
        && let Some((at, _)) = head.char_indices().rev().find(|(_, c)| !in_word(*c))
    {
        return head.get(..at).unwrap_or_default();
    }
    head
}
