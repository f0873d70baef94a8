//! `llm_reply`: `fact_extract::parse_reply`, the reader of a model's extraction reply, and
//! `LlmFactExtractor`, which judges it, on raw text and on text around a reply-shaped JSON
//! object (every section of the contract with the keys and aliases the reader knows, the
//! known facts' ids in several spellings and near misses, hostile values, braces and
//! fences around it), answering a dated transcript with known memory, in one chunk or in
//! the smallest chunks.
//!
//! Checks: no panic; facts keep their order, each with a position from 1 up to the number
//! of entries read; every id the extraction returns (a fact's `supersedes`, `remove`) is
//! the id of a known fact, never the fact's own, and no removed id is also superseded;
//! every fact's turn is a turn of the transcript and its `valid_from` that message's time
//! (or the clock's, for an undated one); aliases are non-blank and distinct; profile texts
//! are one line of at most `MAX_PROFILE_CHARS` characters.

#![no_main]

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use fact_extract::{
    ConversationExtractor, KnownMemory, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor,
    MAX_PROFILE_CHARS, Message, MessageRole, parse_reply,
};
use fact_model::{FactId, ManualClock, ProfileField, SessionFact, SourceRole, Tag, Timestamp};
use factmem_fuzz::{Doc, Json, Key, Vocab, render_object};
use libfuzzer_sys::fuzz_target;

/// The known facts' objects (`user likes thing N`): the ids of the first two share their
/// first 8 hex digits, so their short ids have 9.
const KNOWN_OBJECTS: [&str; 3] = ["thing 13342", "thing 77615", "thing 30508"];
/// Their short ids, as the prompt lists them (checked once at start).
const KNOWN_SHORT_IDS: [&str; 3] = ["2d35377b7", "2d35377b8", "d8115d09"];

const VOCAB: Vocab = Vocab {
    keys: &[
        "subject",
        "predicate",
        "relation",
        "object",
        "statement",
        "content",
        "fact_text",
        "category",
        "fact_type",
        "confidence",
        "turn",
        "supersedes",
        "title",
        "summary",
        "facts",
        "facts_to_remove",
        "aliases",
        "alias",
        "entity",
        "user_context",
        "userContext",
        "history",
        "work",
        "personal",
        "top_of_mind",
        "topOfMind",
        "recent_months",
        "earlier_context",
        "long_term_background",
    ],
    strings: &[
        "user",
        "I",
        "likes",
        "prefers",
        "dark mode",
        "thing 13342",
        "preference",
        "knowledge",
        "context",
        "0.9",
        "1",
        "3",
        "-1",
        "NaN",
        "-0",
        "",
        " ",
        "{",
        "}",
        "```json",
        // The known facts' ids, in the spellings a reply may use, and near misses.
        "2d35377b7",
        "2d35377b8",
        "d8115d09",
        "2d35377b77fcdd2c",
        "2d35377b8db7a05a",
        "d8115d0957422e90",
        "[D8115D09]",
        " 2d35377b8DB7 ",
        "2d35377b",
        "d8115d0",
        "d8115d0957422e90a",
        "ffffffffffffffff",
        "<id of a known fact>",
        "Mel",
        "Melanie",
        "me",
    ],
    text: &[
        "{",
        "}",
        "[",
        "]",
        "\"",
        "```json\n",
        "```",
        "facts",
        "supersedes",
        "turn",
        ":",
        ",",
        "\\",
        "\n",
    ],
};

/// The sections besides `facts`, as an input names them, and `supersedes` misplaced at the
/// top level.
const SECTIONS: [&str; 5] = [
    "facts_to_remove",
    "aliases",
    "user_context",
    "history",
    "supersedes",
];

#[derive(Arbitrary, Debug)]
enum Input {
    Raw {
        text: String,
        small_chunks: bool,
    },
    Built {
        before: Doc,
        title: Option<Json>,
        summary: Option<Json>,
        facts: Vec<Vec<(Key, Json)>>,
        sections: Vec<(u8, Json)>,
        extra: Vec<(Key, Json)>,
        after: Doc,
        small_chunks: bool,
    },
}

struct Built<'a> {
    before: &'a Doc,
    title: Option<&'a Json>,
    summary: Option<&'a Json>,
    facts: &'a [Vec<(Key, Json)>],
    sections: &'a [(u8, Json)],
    extra: &'a [(Key, Json)],
    after: &'a Doc,
}

fn render(input: &Built<'_>) -> String {
    let mut out = input.before.render(VOCAB.text);
    out.push('{');
    for (name, value) in [("title", input.title), ("summary", input.summary)] {
        if let Some(value) = value {
            out.push_str(&format!("\"{name}\":"));
            value.render_into(&VOCAB, &mut out);
            out.push(',');
        }
    }
    for (section, value) in input.sections {
        let name = SECTIONS[usize::from(*section) % SECTIONS.len()];
        out.push_str(&format!("\"{name}\":"));
        value.render_into(&VOCAB, &mut out);
        out.push(',');
    }
    out.push_str("\"facts\":[");
    for (i, fact) in input.facts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        render_object(fact, &VOCAB, &mut out);
    }
    out.push(']');
    for (key, value) in input.extra {
        out.push(',');
        let mut field = String::new();
        render_object(&[(key.clone(), value.clone())], &VOCAB, &mut field);
        out.push_str(field.trim_start_matches('{').trim_end_matches('}'));
    }
    out.push('}');
    input.after.render_into(VOCAB.text, &mut out);
    out
}

fn t(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

/// The clock's reading: the time of undated messages and the recording time.
fn now() -> Timestamp {
    t("2026-03-10T00:00:00Z")
}

/// What memory knows: three facts, two of whose ids share 8 hex digits.
fn known() -> &'static KnownMemory {
    static KNOWN: OnceLock<KnownMemory> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let facts: Vec<SessionFact> = KNOWN_OBJECTS
            .iter()
            .map(|object| {
                SessionFact::builder("user", "likes", *object)
                    .tag(Tag::Preference)
                    .source("ep_0", SourceRole::Extractor)
                    .valid_from(t("2026-01-01T00:00:00Z"))
                    .build()
                    .expect("a valid fact")
            })
            .collect();
        let known = KnownMemory::new(facts, vec![("user".to_owned(), vec!["likes".to_owned()])]);
        assert_eq!(
            known.short_ids(),
            KNOWN_SHORT_IDS,
            "the fact ids changed: update the vocabulary"
        );
        known
    })
}

/// A transcript of five messages, some dated: turns 0 to 4.
fn transcript() -> Vec<Message> {
    vec![
        Message::new(MessageRole::User, "I like thing 13342.").at(t("2026-03-01T09:00:00Z")),
        Message::new(MessageRole::Assistant, "Noted."),
        Message::new(MessageRole::User, "Now I prefer dark mode.").at(t("2026-03-02T09:00:00Z")),
        Message::new(MessageRole::User, "Mel is Melanie."),
        Message::new(MessageRole::Tool, "{\"facts\": []}").at(t("2026-03-03T09:00:00Z")),
    ]
}

/// Answers every prompt with the same text.
#[derive(Debug)]
struct Fixed(String);

impl LlmClient for Fixed {
    fn complete(&self, _prompt: &str) -> Result<String, LlmError> {
        Ok(self.0.clone())
    }
}

fn check_reply(text: &str) {
    let Ok(reply) = parse_reply(text) else { return };
    let entries = reply.facts.len() + reply.rejected.len();
    let mut previous = 0;
    for fact in &reply.facts {
        assert!(fact.position > previous, "positions out of order");
        assert!(
            fact.position <= entries,
            "position {} of {entries} entries",
            fact.position
        );
        previous = fact.position;
        assert!(fact.supersedes.iter().all(|id| !id.trim().is_empty()));
    }
    assert!(reply.facts_to_remove.iter().all(|id| !id.trim().is_empty()));
    let context = [
        ProfileField::Work,
        ProfileField::Personal,
        ProfileField::TopOfMind,
    ];
    assert!(
        reply
            .user_context
            .iter()
            .all(|(field, _)| context.contains(field))
    );
    assert!(
        reply
            .history
            .iter()
            .all(|(field, _)| !context.contains(field))
    );
}

fn check_extraction(text: &str, small_chunks: bool) {
    let known = known();
    let transcript = transcript();
    let config = if small_chunks {
        // Less room than the instructions take: chunks of the smallest size.
        LlmExtractorConfig::default().with_max_prompt_chars(0)
    } else {
        LlmExtractorConfig::default()
    };
    let extractor = LlmFactExtractor::new(
        Arc::new(Fixed(text.to_owned())),
        Arc::new(ManualClock::new(now())),
        config,
    );
    let extraction = extractor
        .extract_conversation(&transcript, "chat-1", known)
        .expect("the client never fails");
    let given: HashSet<FactId> = known.facts.iter().map(SessionFact::id).collect();
    let mut superseded = HashSet::new();
    for fact in &extraction.facts {
        for id in &fact.supersedes {
            assert!(given.contains(id), "supersedes {id:?}, not a known fact");
            assert_ne!(*id, fact.fact.id(), "a fact supersedes itself");
            superseded.insert(*id);
        }
        if let Some(turn) = fact.turn {
            let message = transcript.get(turn).expect("the turn is in the transcript");
            assert_eq!(
                fact.fact.valid_from(),
                message.timestamp.unwrap_or(now()),
                "turn {turn}"
            );
        }
        assert_eq!(fact.fact.recorded_at(), Some(now()));
    }
    let mut removed = HashSet::new();
    for id in &extraction.remove {
        assert!(given.contains(id), "removes {id:?}, not a known fact");
        assert!(!superseded.contains(id), "{id:?} removed and superseded");
        assert!(removed.insert(*id), "{id:?} removed twice");
    }
    for alias in &extraction.aliases {
        assert!(!alias.alias.is_empty() && !alias.entity.is_empty());
        assert_ne!(alias.alias, alias.entity);
    }
    for (_, text) in &extraction.profile {
        assert!(text.chars().count() <= MAX_PROFILE_CHARS);
        assert!(!text.contains('\n'));
    }
}

fn check(text: &str, small_chunks: bool) {
    check_reply(text);
    check_extraction(text, small_chunks);
}

fuzz_target!(|input: Input| match input {
    Input::Raw { text, small_chunks } => check(&text, small_chunks),
    Input::Built {
        before,
        title,
        summary,
        facts,
        sections,
        extra,
        after,
        small_chunks,
    } => {
        let text = render(&Built {
            before: &before,
            title: title.as_ref(),
            summary: summary.as_ref(),
            facts: &facts,
            sections: &sections,
            extra: &extra,
            after: &after,
        });
        check(&text, small_chunks);
    }
});
