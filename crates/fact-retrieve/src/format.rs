//! [`format_session_facts`]: the `[Session Context]` section of a dispatch prompt.

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
    let mut section = String::from(SESSION_CONTEXT_HEADER);
    let mut kept = 0;
    for fact in facts {
        let before = section.len();
        section.push('\n');
        section.push_str(&format_fact_line(fact));
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
    let suffix = format!(" [task:{}]", one_line(fact.source_task_id()));
    let mut fields = [
        one_line(fact.object()),
        one_line(fact.subject()),
        one_line(fact.relation()),
    ];
    let budget = MAX_LINE_CHARS.saturating_sub(2 + char_len(&suffix));
    let total = |fields: &[String; 3]| fields.iter().map(|f| char_len(f)).sum::<usize>() + 2;
    // Shrink object, then subject, then relation, each down to "..." at the least.
    let mut over = total(&fields).saturating_sub(budget);
    for field in &mut fields {
        if over == 0 {
            break;
        }
        let len = char_len(field);
        let target = len.saturating_sub(over).max(3.min(len));
        if target < len {
            *field = clip(field, target).into_owned();
            over = over.saturating_sub(len - char_len(field));
        }
    }
    let [object, subject, relation] = &fields;
    let line = format!("- {subject} {relation} {object}{suffix}");
    clip(&line, MAX_LINE_CHARS).into_owned()
}

/// `text` with runs of whitespace folded to one space, and trimmed.
fn one_line(text: &str) -> String {
    let trimmed = text.trim();
    let mut previous_space = false;
    let folded = trimmed.chars().all(|c| {
        let ok = (c == ' ' && !previous_space) || !c.is_whitespace();
        previous_space = c == ' ';
        ok
    });
    if folded {
        trimmed.to_owned()
    } else {
        trimmed.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}
