//! [`format_session_facts`]: the `[Session Context]` section of a dispatch prompt.

use std::borrow::Cow;

use fact_model::{SessionFact, char_len, clip};

/// The first line of the section.
pub const SESSION_CONTEXT_HEADER: &str = "[Session Context]";

/// The longest line of the section, in characters.
pub const MAX_LINE_CHARS: usize = 120;

/// The `[Session Context]` section for `facts`, in order; empty for no facts (the section
/// is then omitted from the prompt).
///
/// Each fact is one line, `- {subject} {relation} {object} [task:{source_task_id}]`, of at
/// most [`MAX_LINE_CHARS`] characters: the object is clipped first, then the subject, then
/// the relation, each with `...`, and the ` [task:X]` suffix stays whole. Only a task id
/// of about 100 characters or more leaves no room for the rest; such a line is clipped as
/// a whole. Runs of whitespace (newlines included) become one space, so a fact is one line.
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// use fact_retrieve::format_session_facts;
///
/// let fact = SessionFact::builder("src/parser.rs", "modified_by", "task:2")
///     .tag(Tag::FileChange)
///     .source("2", SourceRole::Implementer)
///     .valid_from(Timestamp::UNIX_EPOCH)
///     .build()?;
/// assert_eq!(
///     format_session_facts(&[fact]),
///     "[Session Context]\n- src/parser.rs modified_by task:2 [task:2]"
/// );
/// assert_eq!(format_session_facts(&[]), "");
/// # Ok::<(), fact_model::FactError>(())
/// ```
#[must_use]
pub fn format_session_facts(facts: &[SessionFact]) -> String {
    format_session_facts_while(facts, |_| true).0
}

/// The one renderer of the section: the section for the longest prefix of `facts` such
/// that `fits` accepts the section rendered so far after each fact's line is added, and
/// how many facts that prefix holds. The first fact whose section `fits` rejects ends the
/// list; `fits` is not called again after that. Empty for no facts kept.
///
/// [`format_session_facts`] keeps every fact; [`IndexRetriever`](crate::IndexRetriever)
/// keeps facts while the section stays within its token budget.
pub(crate) fn format_session_facts_while<'f>(
    facts: impl IntoIterator<Item = &'f SessionFact>,
    mut fits: impl FnMut(&str) -> bool,
) -> (String, usize) {
    let mut section = String::with_capacity(1024);
    section.push_str(SESSION_CONTEXT_HEADER);
    let mut kept = 0;
    for fact in facts {
        let before = section.len();
        section.push('\n');
        push_fact_line(&mut section, fact);
        if !fits(&section) {
            section.truncate(before);
            break;
        }
        kept += 1;
    }
    if kept == 0 {
        section.clear();
    }
    (section, kept)
}

/// One line of the section; see [`format_session_facts`].
#[must_use]
pub fn format_fact_line(fact: &SessionFact) -> String {
    let mut line = String::new();
    push_fact_line(&mut line, fact);
    line
}

/// Appends [`format_fact_line`]`(fact)` to `out`.
fn push_fact_line(out: &mut String, fact: &SessionFact) {
    const SUFFIX_START: &str = " [task:";
    const SUFFIX_END: &str = "]";
    let task = one_line(fact.source_task_id());
    let suffix_chars = SUFFIX_START.len() + char_len(&task) + SUFFIX_END.len();
    let mut fields = [
        one_line(fact.object()),
        one_line(fact.subject()),
        one_line(fact.relation()),
    ];
    let budget = MAX_LINE_CHARS.saturating_sub(2 + suffix_chars);
    let total = |fields: &[Cow<'_, str>; 3]| fields.iter().map(|f| char_len(f)).sum::<usize>() + 2;
    // Shrink object, then subject, then relation, each down to "..." at the least.
    let mut over = total(&fields).saturating_sub(budget);
    for field in &mut fields {
        if over == 0 {
            break;
        }
        let len = char_len(field);
        let target = len.saturating_sub(over).max(3.min(len));
        if target < len {
            let clipped = clip(field, target).into_owned();
            *field = Cow::Owned(clipped);
            over = over.saturating_sub(len - char_len(field));
        }
    }
    let [object, subject, relation] = &fields;
    let start = out.len();
    for part in [
        "- ",
        subject,
        " ",
        relation,
        " ",
        object,
        SUFFIX_START,
        &task,
        SUFFIX_END,
    ] {
        out.push_str(part);
    }
    // A line of at most MAX_LINE_CHARS bytes has at most that many characters.
    if out.len() - start > MAX_LINE_CHARS
        && let Some(line) = out.get(start..)
        && let Cow::Owned(clipped) = clip(line, MAX_LINE_CHARS)
    {
        out.truncate(start);
        out.push_str(&clipped);
    }
}

/// `text` with runs of whitespace folded to one space, and trimmed; borrowed when it
/// already is.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    let trimmed = text.trim();
    let folded = if trimmed.is_ascii() {
        // The same test on bytes, without an early exit so it runs a word at a time: ASCII
        // whitespace is `\t`..=`\r` and the space, so the text is folded unless it holds
        // one of the first five or two spaces in a row.
        !trimmed
            .bytes()
            .fold(false, |found, b| found | (b'\t'..=b'\r').contains(&b))
            && !trimmed.contains("  ")
    } else {
        let mut previous_space = false;
        trimmed.chars().all(|c| {
            let ok = (c == ' ' && !previous_space) || !c.is_whitespace();
            previous_space = c == ' ';
            ok
        })
    };
    if folded {
        Cow::Borrowed(trimmed)
    } else {
        Cow::Owned(trimmed.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}
