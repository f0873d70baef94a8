//! The prompt: known facts one per line with unique short ids, the predicates in use, the
//! transcript with turns and dates, and chunked prompts that stay within the limit with
//! all of it included.

use std::collections::HashSet;

use fact_extract::{
    ConversationExtractor, DEFAULT_CATEGORIES, KnownMemory, LlmExtractorConfig, MIN_CHUNK_CHARS,
    MIN_SHORT_ID_CHARS, Message, MessageRole, TranscriptChunk, extraction_prompt,
};
use fact_model::{SessionFact, SourceRole, Tag};
use proptest::prelude::*;

use super::{Scripted, dated_conversation, extract_with, extractor, known, known_fact, t};

#[test]
fn the_prompt_lists_known_facts_predicates_and_the_numbered_transcript() {
    let known = known();
    let (_, prompt) = extract_with(&known, &dated_conversation(), r#"{"facts": []}"#);
    let ids = known.short_ids();
    for (fact, short) in known.facts.iter().zip(&ids) {
        assert_eq!(short.len(), MIN_SHORT_ID_CHARS);
        assert!(fact.id().to_string().starts_with(short.as_str()));
    }
    let expect = format!(
        "\nKnown facts: what the memory holds now about this conversation's subjects, one per \
         line with its id in brackets and the date it is true from:\n\
         - [{}] user lives_in Paris: \"User lives in Paris\" (since 2026-01-10)\n\
         - [{}] user owns_car a Volvo: \"User owns a Volvo\" (since 2026-01-10)\n\
         - [{}] user prefers_editor vim: \"User prefers vim\" (since 2026-01-10)\n\
         \nPredicates in use, per subject:\n\
         - user: lives_in, owns_car, prefers_editor\n\
         \nThe transcript; each message starts with its turn number in brackets, its author's \
         role and, when known, its date (\"[3] user (2026-03-01): \"):\n<transcript>\n\
         [0] user (2026-03-01): Hi! Quick update on my life.\n\
         [1] assistant: Sure, go ahead.\n\
         [2] user (2026-03-02): I moved from Paris to Berlin last week.\n\
         [3] assistant: Congratulations on the move!\n\
         [4] user (2026-03-03): Also, I sold my car. Mel helped me move.\n\
         [5] user: Melanie is my sister.\n\
         </transcript>\n",
        ids[0], ids[1], ids[2]
    );
    assert!(prompt.ends_with(&expect), "{prompt}");
    // The instructions for every section of the reply come first.
    for needle in [
        "- turn: ",
        "- supersedes: ",
        "- facts_to_remove: ",
        "- aliases: ",
        "- user_context: ",
        "- history: ",
        "reuse the listed one that fits",
        "use only the ids listed under \"Known facts\"",
        "Never invent or guess an id",
    ] {
        let at = prompt
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?}"));
        assert!(at < prompt.find("Known facts: what").unwrap(), "{needle}");
    }
}

#[test]
fn facts_are_listed_once_on_one_line_and_blank_predicates_are_left_out() {
    let bare = SessionFact::builder("project:rlm", "uses_database", "SQLite\nFTS5")
        .tag(Tag::Technical)
        .source("ep_0", SourceRole::Extractor)
        .valid_from(t("2025-12-31T23:00:00Z"))
        .build()
        .unwrap();
    let ended = known_fact("prefers_editor", "emacs", "User prefers\temacs")
        .invalidated_at(t("2026-02-01T00:00:00Z"))
        .unwrap();
    let known = KnownMemory::new(
        vec![bare.clone(), ended.clone(), bare.clone()],
        vec![
            ("project:rlm".to_owned(), vec![" ".to_owned()]),
            (" ".to_owned(), vec!["x".to_owned()]),
            (
                "user".to_owned(),
                vec![String::new(), "prefers_editor".to_owned()],
            ),
        ],
    );
    let ids = known.short_ids();
    assert_eq!(ids[0], ids[2]);
    let prompt = extraction_prompt(&[Tag::Technical], &known, &TranscriptChunk::default());
    assert!(prompt.contains(&format!(
        "one per line with its id in brackets and the date it is true from:\n\
         - [{}] project:rlm uses_database SQLite FTS5 (since 2025-12-31)\n\
         - [{}] user prefers_editor emacs: \"User prefers emacs\" (since 2026-01-10, until 2026-02-01)\n\
         \nPredicates in use, per subject:\n- user: prefers_editor\n\nThe transcript",
        ids[0], ids[1]
    )));
    // Nothing known: the model is told, and no predicates are listed.
    let prompt = extraction_prompt(
        &[Tag::Technical],
        &KnownMemory::default(),
        &TranscriptChunk::default(),
    );
    assert!(prompt.contains(
        "\nKnown facts: none, so leave out \"supersedes\" and \"facts_to_remove\".\n\nThe transcript"
    ));
    assert!(!prompt.contains("Predicates in use, per subject"));
}

#[test]
fn short_ids_grow_past_eight_digits_only_when_ids_share_a_prefix() {
    // Found by search: the ids of these two triples share their first 8 hex digits.
    let fact = |object: &str| {
        SessionFact::builder("user", "likes", object)
            .tag(Tag::Preference)
            .source("ep_0", SourceRole::Extractor)
            .valid_from(t("2026-01-01T00:00:00Z"))
            .build()
            .unwrap()
    };
    let a = fact("thing 13342");
    let b = fact("thing 77615");
    let c = fact("thing 1");
    assert_eq!(a.id().to_string().get(..8), b.id().to_string().get(..8));
    let known = KnownMemory::new(vec![a.clone(), b.clone(), c.clone()], vec![]);
    let ids = known.short_ids();
    assert_eq!(
        ids,
        [
            "2d35377b7",
            "2d35377b8",
            c.id().to_string().get(..8).unwrap()
        ]
    );
    assert_eq!(known.resolve("2d35377b7"), Some(a.id()));
    assert_eq!(known.resolve("2D35377B8DB7"), Some(b.id()));
    assert_eq!(known.resolve("2d35377b"), None);
    let prompt = extraction_prompt(&[Tag::Preference], &known, &TranscriptChunk::default());
    assert!(prompt.contains("- [2d35377b7] user likes thing 13342 (since 2026-01-01)\n"));
    assert!(prompt.contains("- [2d35377b8] user likes thing 77615 (since 2026-01-01)\n"));
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,12}",
        any::<String>().prop_filter("not blank", |s| !s.trim().is_empty()),
    ]
}

fn facts() -> impl Strategy<Value = Vec<SessionFact>> {
    proptest::collection::vec((word(), word(), word(), any::<bool>()), 0..40).prop_map(|rows| {
        rows.into_iter()
            .filter_map(|(subject, relation, object, statement)| {
                let mut builder = SessionFact::builder(
                    fact_model::clip(&subject, 200),
                    fact_model::clip(&relation, 50),
                    fact_model::clip(&object, 200),
                )
                .tag(Tag::Context)
                .source("ep_0", SourceRole::Extractor)
                .valid_from(t("2026-01-01T00:00:00Z"));
                if statement {
                    builder = builder.statement(format!("{subject} {relation} {object}"));
                }
                builder.build().ok()
            })
            .collect()
    })
}

fn message() -> impl Strategy<Value = Message> {
    let content = prop_oneof![
        3 => any::<String>(),
        1 => (any::<char>(), 0usize..3_000).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ];
    (
        proptest::sample::select(MessageRole::ALL.to_vec()),
        content,
        any::<bool>(),
    )
        .prop_map(|(role, content, dated)| {
            let message = Message::new(role, content);
            if dated {
                message.at(t("2026-03-01T09:00:00Z"))
            } else {
                message
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn short_ids_are_unique_prefixes_and_resolve_back(facts in facts()) {
        let known = KnownMemory::new(facts, vec![]);
        let ids = known.short_ids();
        prop_assert_eq!(ids.len(), known.facts.len());
        let distinct: HashSet<_> = known.facts.iter().map(SessionFact::id).collect();
        let shorts: HashSet<&String> = ids.iter().collect();
        prop_assert_eq!(shorts.len(), distinct.len());
        for (fact, short) in known.facts.iter().zip(&ids) {
            let hex = fact.id().to_string();
            prop_assert!(short.len() >= MIN_SHORT_ID_CHARS && hex.starts_with(short.as_str()));
            prop_assert_eq!(known.resolve(short), Some(fact.id()));
            prop_assert_eq!(known.resolve(&hex), Some(fact.id()));
            // No other listed id starts with it.
            for other in &distinct {
                prop_assert!(*other == fact.id() || !other.to_string().starts_with(short.as_str()));
            }
        }
    }

    #[test]
    fn chunked_prompts_stay_within_the_limit_with_known_memory_included(
        facts in facts(),
        messages in proptest::collection::vec(message(), 1..12),
        extra in 0usize..6_000,
    ) {
        let known = KnownMemory::new(facts, vec![("user".to_owned(), vec!["lives_in".to_owned()])]);
        let overhead = extraction_prompt(DEFAULT_CATEGORIES, &known, &TranscriptChunk::default())
            .chars()
            .count();
        let max_prompt_chars = overhead + extra;
        let client = Scripted::new([]);
        extractor(client.clone(), LlmExtractorConfig::default().with_max_prompt_chars(max_prompt_chars))
            .extract_conversation(&messages, "chat-1", &known)
            .unwrap();
        let prompts = client.prompts();
        prop_assert!(!prompts.is_empty());
        for prompt in &prompts {
            let len = prompt.chars().count();
            if extra >= MIN_CHUNK_CHARS {
                prop_assert!(len <= max_prompt_chars, "{} > {}", len, max_prompt_chars);
            } else {
                // Too little room left: chunks of the minimum size.
                prop_assert!(len <= overhead + MIN_CHUNK_CHARS);
            }
            // Every prompt carries the whole known memory.
            for short in known.short_ids() {
                let listed = format!("- [{short}] ");
                prop_assert!(prompt.contains(&listed));
            }
        }
    }
}
