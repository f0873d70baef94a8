//! Rules for reviewer results.

use fact_model::{Assessment, FactSelector, ReviewIssue, ReviewerResult, Tag};

use crate::{FnRule, RuleContext, RuleError, RuleOutput, relation};

/// Word starts that mark an issue as being about a convention (lowercase).
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

/// The subject of facts about an issue: its file, else the task.
fn issue_subject<'a>(issue: &'a ReviewIssue, ctx: &'a RuleContext<'_>) -> &'a str {
    match issue.file.as_deref().map(str::trim) {
        Some(file) if !file.is_empty() => file,
        _ => ctx.task_subject(),
    }
}

/// Whether `text` has a word starting with one of [`CONVENTION_WORDS`], in any case.
///
/// Word starts only, so `formatting` and `Patterns` count but `information` does not.
/// The words are ASCII, so comparing bytes case-insensitively needs no lowercased copy.
fn mentions_convention(text: &str) -> bool {
    // Bytes, not chars: the words are ASCII, and every byte of a non-ASCII char counts as
    // part of a word, so a word start is never inside a multi-byte char.
    let bytes = text.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || !b.is_ascii();
    let mut previous_is_word = false;
    for (at, &b) in bytes.iter().enumerate() {
        let word = is_word(b);
        // Every word of the list starts with one of these letters: a cheap filter.
        if word
            && !previous_is_word
            && matches!(b.to_ascii_lowercase(), b'c' | b'p' | b'n' | b's' | b'f')
        {
            let rest = bytes.get(at..).unwrap_or_default();
            let starts_with = |candidate: &&str| {
                rest.get(..candidate.len())
                    .is_some_and(|prefix| prefix.eq_ignore_ascii_case(candidate.as_bytes()))
            };
            if CONVENTION_WORDS.iter().any(starts_with) {
                return true;
            }
        }
        previous_is_word = word;
    }
    false
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
    out.push(ctx.fact(
        ctx.task_subject(),
        relation::REVIEWED_AS,
        result.assessment.as_str(),
        &[Tag::Decision],
    )?);
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
        let message = issue.message.trim();
        if message.is_empty() {
            continue;
        }
        let object = format!("[{}] {message}", issue.severity.as_str());
        out.push(ctx.fact(
            issue_subject(issue, ctx),
            relation::ISSUE,
            &object,
            &[Tag::Error],
        )?);
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
        out.push(ctx.fact(
            ctx.task_subject(),
            relation::MUST_FIX,
            fix.trim(),
            &[Tag::Convention],
        )?);
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
            out.push(ctx.fact(
                issue_subject(issue, ctx),
                relation::CONVENTION,
                issue.message.trim(),
                &[Tag::Convention],
            )?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::mentions_convention;

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
