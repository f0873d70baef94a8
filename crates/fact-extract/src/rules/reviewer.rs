//! Rules for reviewer results.

use std::borrow::Cow;

use fact_model::{Assessment, FactSelector, FactText, ReviewIssue, ReviewerResult, Tag};

use crate::relation;
use crate::rule::{FnRule, RuleContext, RuleError, RuleOutput};
use crate::text::trim;

/// The subject of facts about an issue: its file, else the task.
fn issue_subject<'a>(issue: &'a ReviewIssue, ctx: &'a RuleContext<'_>) -> &'a str {
    match issue.file.as_deref().map(trim) {
        Some(file) if !file.is_empty() => file,
        _ => ctx.task_subject(),
    }
}

/// Whether `text` has a word starting with a convention word ([`listed_words_starting`]),
/// in any case.
///
/// Word starts only, so `formatting` and `Patterns` count but `information` does not.
/// The words are ASCII, so comparing bytes case-insensitively needs no lowercased copy.
fn mentions_convention(text: &str) -> bool {
    // Bytes, not chars: the words are ASCII, and every byte of a non-ASCII char counts as
    // part of a word, so a word start is never inside a multi-byte char. (Finding the
    // candidate letters eight bytes at a time ran fewer instructions but took no less
    // time.)
    let bytes = text.as_bytes();
    let mut previous_is_word = false;
    for (at, &b) in bytes.iter().enumerate() {
        let class = BYTE_CLASS.get(usize::from(b)).copied().unwrap_or(WORD);
        // Only a word start with the first letter of a listed word is worth comparing,
        // and only with the words that start with that letter.
        if class & STARTS_LISTED != 0
            && !previous_is_word
            && listed_word_follows(bytes.get(at..).unwrap_or_default())
        {
            return true;
        }
        previous_is_word = class & WORD != 0;
    }
    false
}

/// Whether `rest` starts with a convention word, in any case.
fn listed_word_follows(rest: &[u8]) -> bool {
    rest.first().is_some_and(|&first| {
        listed_words_starting(first).iter().any(|candidate| {
            rest.get(..candidate.len())
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case(candidate.as_bytes()))
        })
    })
}

/// Whether `b` is the first letter, in either case, of a convention word
/// (`| 0x20` lowercases an ASCII letter, and only these letters map to these five).
const fn starts_listed_word(b: u8) -> bool {
    matches!(b | 0x20, b'c' | b'p' | b'n' | b's' | b'f')
}

/// [`BYTE_CLASS`] bit: the byte is part of a word (ASCII alphanumeric, `_`, or any byte
/// of a non-ASCII char).
const WORD: u8 = 1;
/// [`BYTE_CLASS`] bit: [`starts_listed_word`].
const STARTS_LISTED: u8 = 2;

/// The class of every byte, so the scan does one lookup per byte.
// Evaluated at compile time: an index out of bounds is a build error, not a panic.
#[allow(clippy::indexing_slicing)]
const BYTE_CLASS: [u8; 256] = {
    let mut class = [0u8; 256];
    let mut b = 0;
    while b < class.len() {
        let byte = b as u8;
        if byte.is_ascii_alphanumeric() || byte == b'_' || !byte.is_ascii() {
            class[b] |= WORD;
        }
        if starts_listed_word(byte) {
            class[b] |= STARTS_LISTED;
        }
        b += 1;
    }
    class
};

/// The word starts that mark an issue as being about a convention (lowercase), by their
/// first letter: those that start with the letter `b`, in either case.
fn listed_words_starting(b: u8) -> &'static [&'static str] {
    match b.to_ascii_lowercase() {
        b'c' => &["convention", "camelcase"],
        b'p' => &["pattern", "pascalcase"],
        b'n' => &["naming"],
        b's' => &["style", "snake_case"],
        b'f' => &["format"],
        _ => &[],
    }
}

/// `task:{id} reviewed_as {assessment}` (decision); an approval settles the `issue`
/// facts the task's reviews raised (about any file, from this task only) and the task's
/// `must_fix` and `blocked_by` facts.
pub const ASSESSMENT: FnRule<ReviewerResult> = FnRule::new("reviewer.assessment", assessment);

fn assessment(
    result: &ReviewerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    ctx.add_task_word(
        out,
        relation::REVIEWED_AS,
        result.assessment.as_str(),
        &[Tag::Decision],
    )?;
    if result.assessment == Assessment::Approved {
        out.settles.extend([
            FactSelector::from_task(relation::ISSUE, ctx.task_id()),
            FactSelector::key(ctx.task_subject(), relation::MUST_FIX),
            FactSelector::key(ctx.task_subject(), relation::BLOCKED_BY),
        ]);
    }
    Ok(())
}

/// `{file or task:{id}} issue [{severity}] {message}` for each issue (error).
pub const ISSUES: FnRule<ReviewerResult> = FnRule::new("reviewer.issues", issues);

fn issues(
    result: &ReviewerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for issue in &result.issues {
        let message = trim(&issue.message);
        if message.is_empty() {
            continue;
        }
        let severity = issue.severity.as_str();
        let mut object = String::with_capacity(severity.len() + message.len() + 3);
        object.push('[');
        object.push_str(severity);
        object.push_str("] ");
        object.push_str(message);
        ctx.add_from(
            out,
            Cow::Borrowed(issue_subject(issue, ctx)),
            FactText::from_static(relation::ISSUE),
            Cow::Owned(object),
            &[Tag::Error],
        )?;
    }
    Ok(())
}

/// `task:{id} must_fix {fix, clipped}` for each required fix (convention).
pub const REQUIRED_FIXES: FnRule<ReviewerResult> =
    FnRule::new("reviewer.required_fixes", required_fixes);

fn required_fixes(
    result: &ReviewerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for fix in &result.required_fixes {
        ctx.add(
            out,
            ctx.task_subject(),
            relation::MUST_FIX,
            trim(fix),
            &[Tag::Convention],
        )?;
    }
    Ok(())
}

/// `{file or task:{id}} convention {message, clipped}` for each issue whose message or fix
/// mentions a convention (convention).
pub const CONVENTIONS: FnRule<ReviewerResult> = FnRule::new("reviewer.conventions", conventions);

fn conventions(
    result: &ReviewerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for issue in &result.issues {
        if mentions_convention(&issue.message) || mentions_convention(&issue.fix) {
            ctx.add(
                out,
                issue_subject(issue, ctx),
                relation::CONVENTION,
                trim(&issue.message),
                &[Tag::Convention],
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The convention words the rule table lists.
    const CONVENTION_WORDS: &[&str] = &[
        "convention",
        "pattern",
        "naming",
        "style",
        "camelcase",
        "snake_case",
        "pascalcase",
        "format",
    ];

    #[test]
    fn words_by_first_letter_are_the_listed_words() {
        let mut by_letter: Vec<&str> = (0..=u8::MAX)
            .filter(|b| !b.is_ascii_uppercase())
            .flat_map(listed_words_starting)
            .copied()
            .collect();
        let mut listed = CONVENTION_WORDS.to_vec();
        by_letter.sort_unstable();
        listed.sort_unstable();
        assert_eq!(by_letter, listed);
        for b in 0..=u8::MAX {
            let starts = starts_listed_word(b);
            assert_eq!(starts, !listed_words_starting(b).is_empty(), "{b}");
            let class = BYTE_CLASS[usize::from(b)];
            assert_eq!(class & STARTS_LISTED != 0, starts, "{b}");
            let word = b.is_ascii_alphanumeric() || b == b'_' || !b.is_ascii();
            assert_eq!(class & WORD != 0, word, "{b}");
        }
    }

    /// The definition, one byte at a time.
    fn mentions_convention_bytewise(text: &str) -> bool {
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || !b.is_ascii();
        (0..bytes.len()).any(|at| {
            let start = at == 0 || !is_word(bytes[at - 1]);
            start
                && CONVENTION_WORDS.iter().any(|word| {
                    bytes
                        .get(at..at + word.len())
                        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(word.as_bytes()))
                })
        })
    }

    #[test]
    fn the_word_scan_agrees_with_the_definition() {
        let pieces = [
            "naming",
            "Format",
            "xstyle",
            "_pattern",
            "snake_Case",
            "PascalCase",
            "camel",
            "conv",
            "é",
            "ü",
            "-",
            " ",
            "s",
            "c",
            "information",
            "(",
            "9p",
            "pattern",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(state % 7) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            assert_eq!(
                mentions_convention(&text),
                mentions_convention_bytewise(&text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn convention_words_match_at_word_starts_in_any_case() {
        for yes in [
            "Use the naming convention",
            "follow the existing PATTERNS",
            "inconsistent Style",
            "use camelCase here",
            "rename to snake_case",
            "should be PascalCase",
            "run the formatter",
            "(format) this",
        ] {
            assert!(mentions_convention(yes), "{yes:?}");
        }
        for no in [
            "missing information",
            "add validation",
            "unstyled",
            "",
            "résumé",
        ] {
            assert!(!mentions_convention(no), "{no:?}");
        }
    }
}
