//! The extraction prompt: what a good fact is, the categories, the reply's JSON shape, the
//! known facts with their short ids, and the transcript with turn numbers and dates.

use std::collections::HashSet;
use std::fmt::Write as _;

use fact_model::{SessionFact, Tag};

use super::known::{KnownIds, KnownMemory};
use super::transcript::{TranscriptChunk, date};
use crate::text::one_line;

/// What the model is asked to do, what makes a good fact, and what every part of the
/// reply means: the first part of every extraction prompt.
///
/// The GOOD and BAD examples are those of seed 004. The part on predicates matters most
/// to the store: a fact's `(subject, predicate)` is the key a newer fact supersedes, so
/// two different preferences of one user must not share a predicate, and a predicate
/// already in use is reused. `turn`, `supersedes`, `facts_to_remove`, `aliases`,
/// `user_context` and `history` are explained here; `docs/extraction-contract.md` is the
/// contract in full.
pub const EXTRACTION_GUIDE: &str = r#"You extract durable facts from a conversation transcript for a long-term memory, and keep that memory true: besides the new facts, you say which of the facts it already holds the conversation replaces or ends.

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

Each fact is a triple plus a sentence, the message it comes from, and the known facts it replaces:
- subject: who or what the fact is about: "user" for the person, or a short name for a project, tool or other entity ("project:rlm", "pytest").
- predicate: a SPECIFIC snake_case relation that names what kind of fact it is: "prefers_test_framework", "prefers_editor", "uses_database", "depends_on", "deadline" - never a bare "prefers", "likes", "uses" or "is". The pair (subject, predicate) is the key under which a newer fact replaces an older one: a later "user prefers_test_framework unittest" supersedes "user prefers_test_framework pytest". So two different facts about one subject must never share a predicate unless the newer one replaces the older; a user who prefers pytest and prefers vim gets "prefers_test_framework" and "prefers_editor", not "prefers" twice. When "Predicates in use" below lists predicates for the subject, reuse the listed one that fits instead of inventing a synonym.
- object: the value, short ("pytest", "zero external dependencies").
- content: the fact as one self-contained sentence.
- category: exactly one of the categories below.
- confidence: from 0.0 to 1.0, how clearly the transcript supports the fact: 1.0 when stated outright, about 0.5 when only implied.
- turn: the number in brackets of the message the fact comes from ("[3] user (2026-03-01): ..." is turn 3); the fact is true from that message's date. Only a number shown in the transcript.
- supersedes: the ids of known facts this fact replaces because they stop being true when it starts: the old city when the user moved, the old preference when it changed, even when their predicate differs from this fact's. Leave it out when the fact replaces nothing.

Besides facts, the reply may hold:
- facts_to_remove: the ids of known facts the conversation shows are no longer true when no new fact replaces them ("I sold my car"). They are ended, not deleted: the memory keeps their history.
- aliases: other names the conversation uses for an entity, each {"alias": "Mel", "entity": "Melanie"}.
- user_context: what the user is about, each field at most a few sentences: "work" (role, team, projects), "personal" (family, place, interests), "top_of_mind" (what occupies them now). Give only the fields this conversation tells something new about, each as the field's complete new text.
- history: summaries of the user's past: "recent_months", "earlier_context", "long_term_background"; the same rules as user_context.

Ids: use only the ids listed under "Known facts", written exactly as listed, without the brackets. Never invent or guess an id: a fact that is not listed cannot be superseded or removed.
"#;

/// The reply the model must give: the part of the instructions before the known facts
/// and the transcript.
pub const EXTRACTION_REPLY_SHAPE: &str = r#"Reply with ONE JSON object and nothing else, in this shape; leave out every part you have nothing for (a reply with nothing to say is {"facts": []}):
{"title": "...", "summary": "one paragraph", "facts": [{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest", "content": "User prefers pytest over unittest", "category": "preference", "confidence": 0.9, "turn": 3, "supersedes": ["<id of a known fact>"]}], "facts_to_remove": ["<id of a known fact>"], "aliases": [{"alias": "Mel", "entity": "Melanie"}], "user_context": {"work": "...", "personal": "...", "top_of_mind": "..."}, "history": {"recent_months": "...", "earlier_context": "...", "long_term_background": "..."}}

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

/// Opens the known facts when there are some; the facts follow, one per line.
const KNOWN_START: &str = "\nKnown facts: what the memory holds now about this \
                           conversation's subjects, one per line with its id in brackets \
                           and the date it is true from:\n";
/// Stands for the known facts when there are none.
const KNOWN_NONE: &str = "\nKnown facts: none, so leave out \"supersedes\" and \
                          \"facts_to_remove\".\n";
/// Opens the predicates in use; one line per subject follows.
const PREDICATES_START: &str = "\nPredicates in use, per subject:\n";
/// Opens the transcript; the rendered messages follow, then [`TRANSCRIPT_END`].
const TRANSCRIPT_START: &str = "\nThe transcript; each message starts with its turn number in \
                                brackets, its author's role and, when known, its date \
                                (\"[3] user (2026-03-01): \"):\n<transcript>\n";
/// Closes the transcript and ends the prompt.
const TRANSCRIPT_END: &str = "</transcript>\n";

/// The full prompt for one chunk of a conversation: [`EXTRACTION_GUIDE`], the allowed
/// `categories` with what each means, [`EXTRACTION_REPLY_SHAPE`], the `known` facts and
/// predicates, and the chunk between `<transcript>` tags as
/// [`TranscriptChunk::render`] writes it.
///
/// Each known fact is one line, `- [a1b2c3d4] user lives_in Paris: "User lives in Paris"
/// (since 2026-01-10)`, with its [short id](KnownMemory::short_ids) in brackets (the
/// statement left out when the fact has none; a fact given twice listed once); then each
/// subject's predicates, `- user: lives_in, prefers_editor`. Without known facts the
/// prompt says so, and the predicates are left out when there are none.
///
/// The prompt's length is the length of the prompt for an empty chunk plus that of the
/// rendered chunk ([`TranscriptChunk::rendered_chars`]), which is how
/// [`LlmFactExtractor`](crate::LlmFactExtractor) sizes its chunks.
///
/// ```
/// use fact_extract::{KnownMemory, Message, MessageRole, TranscriptChunk, extraction_prompt};
/// use fact_model::{SessionFact, SourceRole, Tag};
///
/// let paris = SessionFact::builder("user", "lives_in", "Paris")
///     .tag(Tag::Context)
///     .source("ep_1", SourceRole::Extractor)
///     .statement("User lives in Paris")
///     .valid_from("2026-01-10T08:00:00Z".parse()?)
///     .build()?;
/// let known = KnownMemory::new(
///     vec![paris],
///     vec![("user".to_owned(), vec!["lives_in".to_owned(), "prefers_editor".to_owned()])],
/// );
/// let chunk = TranscriptChunk::new(2, vec![
///     Message::new(MessageRole::User, "I moved to Berlin.").at("2026-03-01T09:00:00Z".parse()?),
/// ]);
/// let prompt = extraction_prompt(&[Tag::Preference, Tag::Context], &known, &chunk);
/// assert!(prompt.contains("- preference: what the user prefers"));
/// let short = &known.short_ids()[0];
/// assert!(prompt.contains(&format!(
///     "- [{short}] user lives_in Paris: \"User lives in Paris\" (since 2026-01-10)\n"
/// )));
/// assert!(prompt.contains("- user: lives_in, prefers_editor\n"));
/// assert!(prompt.ends_with("[2] user (2026-03-01): I moved to Berlin.\n</transcript>\n"));
///
/// let empty = extraction_prompt(&[Tag::Preference, Tag::Context], &known, &TranscriptChunk::default());
/// assert_eq!(prompt.chars().count(), empty.chars().count() + chunk.rendered_chars());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn extraction_prompt(
    categories: &[Tag],
    known: &KnownMemory,
    chunk: &TranscriptChunk,
) -> String {
    let ids = KnownIds::new(&known.facts);
    chunk_prompt(&instructions(categories, known, &ids), chunk)
}

/// The prompt up to and including the opening `<transcript>` tag.
pub(crate) fn instructions(categories: &[Tag], known: &KnownMemory, ids: &KnownIds) -> String {
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
    render_known(known, ids, &mut prompt);
    prompt.push_str(TRANSCRIPT_START);
    prompt
}

/// The prompt for `chunk` after `instructions` (as [`instructions`] wrote them).
pub(crate) fn chunk_prompt(instructions: &str, chunk: &TranscriptChunk) -> String {
    let mut prompt = String::with_capacity(instructions.len() + chunk.rendered_chars() + 16);
    prompt.push_str(instructions);
    prompt.push_str(&chunk.render());
    prompt.push_str(TRANSCRIPT_END);
    prompt
}

/// The characters a prompt holds besides its chunk: `instructions` and the closing tag.
pub(crate) fn overhead_chars(instructions: &str) -> usize {
    fact_model::char_len(instructions) + fact_model::char_len(TRANSCRIPT_END)
}

/// Appends the known facts (one line each, by short id) and the predicates in use.
fn render_known(known: &KnownMemory, ids: &KnownIds, out: &mut String) {
    let mut listed = HashSet::new();
    let mut lines = String::new();
    for (fact, short) in known.facts.iter().zip(&ids.short_ids) {
        if listed.insert(fact.id()) {
            fact_line(fact, short, &mut lines);
        }
    }
    if lines.is_empty() {
        out.push_str(KNOWN_NONE);
    } else {
        out.push_str(KNOWN_START);
        out.push_str(&lines);
    }
    let mut predicates = String::new();
    for (subject, relations) in &known.predicates {
        let subject = one_line(subject);
        let relations: Vec<_> = relations
            .iter()
            .map(|relation| one_line(relation))
            .filter(|relation| !relation.is_empty())
            .collect();
        if subject.is_empty() || relations.is_empty() {
            continue;
        }
        let _ = writeln!(predicates, "- {subject}: {}", relations.join(", "));
    }
    if !predicates.is_empty() {
        out.push_str(PREDICATES_START);
        out.push_str(&predicates);
    }
}

/// `- [short] subject relation object: "statement" (since date)` and a newline; every
/// field on one line.
fn fact_line(fact: &SessionFact, short: &str, out: &mut String) {
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "- [{short}] {} {} {}",
        one_line(fact.subject()),
        one_line(fact.relation()),
        one_line(fact.object())
    );
    if let Some(statement) = fact.statement().map(one_line)
        && !statement.is_empty()
    {
        let _ = write!(out, ": \"{statement}\"");
    }
    let _ = write!(out, " (since {}", date(fact.valid_from()));
    if let Some(end) = fact.valid_to() {
        let _ = write!(out, ", until {}", date(end));
    }
    out.push_str(")\n");
}
