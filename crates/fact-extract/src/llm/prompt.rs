//! The extraction prompt: what a good fact is, the categories, and the reply's JSON shape.

use fact_model::Tag;

use fact_model::Message;

use super::transcript::render_transcript;

/// What the model is asked to do and what makes a good fact: the first part of every
/// extraction prompt.
///
/// The GOOD and BAD examples are those of seed 004. The part on predicates matters most
/// to the store: a fact's `(subject, predicate)` is the key a newer fact supersedes, so
/// two different preferences of one user must not share a predicate.
pub const EXTRACTION_GUIDE: &str = r#"You extract durable facts from a conversation transcript for a long-term memory.

Extract discrete, specific facts: decisions, preferences, how things relate, technical details, corrections of earlier facts. Each fact must be supported by the transcript, worth knowing in a later conversation, and understandable without the transcript.

GOOD facts (specific, actionable, non-obvious):
- "User chose pytest over unittest for the RLM project"
- "User prefers zero external dependencies in Python projects"
- "Project RLM uses SQLite FTS5 for memory search, not vector embeddings"
- "User considers over-engineering a bigger risk than under-engineering"

BAD facts (generic, obvious, useless) - never extract these:
- "User likes clean code"
- "User is working on a software project"
- "User uses Python"

Do not extract small talk, what the assistant merely suggested and the user did not accept, or anything true only for this moment of the conversation. Fewer, sharper facts beat many vague ones; if nothing is worth keeping, return no facts.

Each fact is a triple plus a sentence:
- subject: who or what the fact is about: "user" for the person, or a short name for a project, tool or other entity ("project:rlm", "pytest").
- predicate: a SPECIFIC snake_case relation that names what kind of fact it is: "prefers_test_framework", "prefers_editor", "uses_database", "depends_on", "deadline" - never a bare "prefers", "likes", "uses" or "is". The pair (subject, predicate) is the key under which a newer fact replaces an older one: a later "user prefers_test_framework unittest" supersedes "user prefers_test_framework pytest". So two different facts about one subject must never share a predicate unless the newer one replaces the older; a user who prefers pytest and prefers vim gets "prefers_test_framework" and "prefers_editor", not "prefers" twice.
- object: the value, short ("pytest", "zero external dependencies").
- statement: the fact as one self-contained sentence.
- category: exactly one of the categories below.
- confidence: from 0.0 to 1.0, how clearly the transcript supports the fact: 1.0 when stated outright, about 0.5 when only implied.
"#;

/// The reply the model must give: the last part of the instructions, before the
/// transcript.
pub const EXTRACTION_REPLY_SHAPE: &str = r#"Reply with ONE JSON object and nothing else, exactly in this shape:
{"title": "...", "summary": "one paragraph", "facts": [{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest", "statement": "User prefers pytest over unittest", "category": "preference", "confidence": 0.9}]}

"title" is a short title for the conversation, "summary" one paragraph on what was discussed and decided, "facts" the list of facts (empty when there are none).
"#;

/// What each category means, for the prompt; categories without a line here are listed by
/// name alone.
fn category_hint(tag: Tag) -> Option<&'static str> {
    Some(match tag {
        Tag::Preference => "what the user prefers or wants done a certain way",
        Tag::Knowledge => "something the user knows or told about the world",
        Tag::Context => "the user's situation: role, projects, team, environment",
        Tag::Behavior => "how the user habitually works or behaves",
        Tag::Goal => "what the user wants to achieve",
        Tag::Correction => {
            "the user corrected an earlier fact or a mistake (keep the subject and predicate of \
             what is corrected, so the correction replaces it)"
        }
        Tag::Decision => "a choice that was made",
        Tag::Relationship => "how two entities relate (\"project A depends on library B\")",
        Tag::Technical => "a technical fact about a system, tool or codebase",
        Tag::Observation => "anything else worth remembering",
        _ => return None,
    })
}

/// Opens the transcript; the rendered messages follow, then [`TRANSCRIPT_END`].
const TRANSCRIPT_START: &str = "\nThe transcript; each message starts with its author's role \
                                (\"user: \", \"assistant: \"...):\n<transcript>\n";
/// Closes the transcript and ends the prompt.
const TRANSCRIPT_END: &str = "</transcript>\n";

/// The full prompt for one chunk of a conversation: [`EXTRACTION_GUIDE`], the allowed `categories`
/// with what each means, [`EXTRACTION_REPLY_SHAPE`], and the transcript between `<transcript>` tags
/// as [`render_transcript`] writes it.
///
/// The prompt's length is the length of `extraction_prompt(categories, &[])` plus that of
/// the rendered messages, which is how [`LlmFactExtractor`](crate::LlmFactExtractor) sizes
/// its chunks.
///
/// ```
/// use fact_extract::{Message, MessageRole, extraction_prompt, render_transcript};
/// use fact_model::Tag;
///
/// let messages = [Message::new(MessageRole::User, "Let's use pytest from now on.")];
/// let prompt = extraction_prompt(&[Tag::Preference, Tag::Decision], &messages);
/// assert!(prompt.contains("- preference: what the user prefers"));
/// assert!(prompt.contains(r#""predicate": "prefers_test_framework""#));
/// assert!(prompt.ends_with("user: Let's use pytest from now on.\n</transcript>\n"));
/// let empty = extraction_prompt(&[Tag::Preference, Tag::Decision], &[]);
/// assert_eq!(
///     prompt.chars().count(),
///     empty.chars().count() + render_transcript(&messages).chars().count(),
/// );
/// ```
#[must_use]
pub fn extraction_prompt(categories: &[Tag], transcript: &[Message]) -> String {
    let mut prompt = String::from(EXTRACTION_GUIDE);
    prompt.push_str("\nCategories:\n");
    for tag in categories {
        match category_hint(*tag) {
            Some(hint) => prompt.push_str(&format!("- {tag}: {hint}\n")),
            None => prompt.push_str(&format!("- {tag}\n")),
        }
    }
    prompt.push('\n');
    prompt.push_str(EXTRACTION_REPLY_SHAPE);
    prompt.push_str(TRANSCRIPT_START);
    prompt.push_str(&render_transcript(transcript));
    prompt.push_str(TRANSCRIPT_END);
    prompt
}
