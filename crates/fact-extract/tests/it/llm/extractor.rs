//! The LLM extractor against a scripted client: reply shapes, fact checks, clipping,
//! chunking, merging and errors.

use std::time::Duration;

use fact_extract::{
    ConversationExtractor, DEFAULT_CATEGORIES, EXTRACTION_GUIDE, EXTRACTION_REPLY_SHAPE,
    KnownMemory, LlmError, LlmExtractorConfig, Message, MessageRole, TranscriptChunk,
    extraction_prompt,
};
use fact_model::{
    MAX_OBJECT_CHARS, MAX_STATEMENT_CHARS, MAX_SUBJECT_CHARS, SourceRole, Tag, fold_statement,
};
use proptest::prelude::*;

use super::{Scripted, check, conversation, diagnostic_lines, extractor, fact_lines};

/// A reply with one fact made of `fields` (JSON members without braces).
fn reply_with(fields: &str) -> String {
    format!(r#"{{"title": "Testing", "summary": "Chose pytest.", "facts": [{{{fields}}}]}}"#)
}

const PYTEST_FIELDS: &str = r#""subject": "user", "predicate": "prefers_test_framework", "object": "pytest", "statement": "User prefers pytest over unittest", "category": "preference", "confidence": 0.9"#;
const PYTEST: &str =
    "user | prefers_test_framework | pytest | preference | 0.9 | User prefers pytest over unittest";

#[test]
fn a_plain_reply_becomes_facts_with_source_time_title_and_summary() {
    let extraction = check(&reply_with(PYTEST_FIELDS), &[PYTEST], &[]);
    let fact = &extraction.facts[0].fact;
    assert_eq!(fact.source_task_id(), "chat-1");
    assert_eq!(fact.source_role(), SourceRole::Extractor);
    // The messages carry no time: the clock's reading dates the fact and records it.
    assert_eq!(fact.valid_from(), crate::at());
    assert_eq!(fact.recorded_at(), Some(crate::at()));
    assert!(fact.is_valid());
    assert_eq!(extraction.facts[0].turn, None);
    assert!(extraction.facts[0].supersedes.is_empty());
    assert!(extraction.remove.is_empty() && extraction.aliases.is_empty());
    assert!(extraction.profile.is_empty());
    assert_eq!(extraction.title.as_deref(), Some("Testing"));
    assert_eq!(extraction.summary.as_deref(), Some("Chose pytest."));
}

#[test]
fn fenced_json_and_json_after_prose_are_read() {
    let reply = reply_with(PYTEST_FIELDS);
    check(&format!("```json\n{reply}\n```"), &[PYTEST], &[]);
    check(&format!("```\n{reply}\n```"), &[PYTEST], &[]);
    check(
        &format!("Here is what I extracted from the conversation:\n{reply}\nHope it helps!"),
        &[PYTEST],
        &[],
    );
}

#[test]
fn a_garbage_reply_is_a_diagnostic_not_an_error() {
    let extraction = check(
        "I'm sorry, I can't help with that.",
        &[],
        &["llm.reply: no JSON object in the reply"],
    );
    assert_eq!(extraction.title, None);
    assert_eq!(extraction.summary, None);
    check(
        "{\"facts\": [oops]}",
        &[],
        &["llm.reply: the reply's JSON does not parse: expected value at line 1 column 12"],
    );
    check(
        r#"{"title": "x"}"#,
        &[],
        &[
            r#"llm.reply: the reply's JSON object has none of "facts", "facts_to_remove", "aliases" (arrays), "user_context", "history" (objects)"#,
        ],
    );
}

#[test]
fn facts_outside_the_categories_are_skipped() {
    let allowed = "preference, knowledge, context, behavior, goal, correction, decision, \
                   relationship, technical, observation";
    check(
        &reply_with(
            r#""subject": "user", "predicate": "feels", "object": "happy", "category": "feelings""#,
        ),
        &[],
        &[&format!(
            r#"llm.fact: fact 1: (user feels happy): unknown category "feelings"; allowed: {allowed}"#
        )],
    );
    // A real tag that is not among the allowed categories.
    check(
        &reply_with(
            r#""subject": "src/a.rs", "predicate": "modified_by", "object": "task:1", "category": "file_change""#,
        ),
        &[],
        &[&format!(
            r#"llm.fact: fact 1: (src/a.rs modified_by task:1): unknown category "file_change"; allowed: {allowed}"#
        )],
    );
    // Case and padding of a category do not matter.
    check(
        &reply_with(
            r#""subject": "user", "predicate": "goal", "object": "ship v2", "category": " Goal ""#,
        ),
        &["user | goal | ship v2 | goal | 1"],
        &[],
    );
}

#[test]
fn confidence_below_the_threshold_or_out_of_range_is_skipped() {
    let fact = |confidence: &str| {
        format!(
            r#"{{"subject": "user", "predicate": "likes", "object": "clean code", "category": "preference", "confidence": {confidence}}}"#
        )
    };
    let reply = format!(
        r#"{{"facts": [{}, {}, {}, {}, {}, {}, {}]}}"#,
        fact("0.3"),
        fact("0.5"),
        fact("1.5"),
        fact("-0.1"),
        fact(r#""NaN""#),
        fact("null"),
        fact(r#""0.7""#),
    );
    check(
        &reply,
        // 0.5, missing (1.0) and "0.7" are the same triple: merged, the highest kept.
        &["user | likes | clean code | preference | 1"],
        &[
            "llm.fact: fact 1: (user likes clean code): confidence 0.3 is below 0.5",
            "llm.fact: fact 3: (user likes clean code): confidence 1.5 is not in 0..=1",
            "llm.fact: fact 4: (user likes clean code): confidence -0.1 is not in 0..=1",
            "llm.fact: fact 5: (user likes clean code): confidence NaN is not in 0..=1",
        ],
    );
    // The threshold is configurable.
    let client = Scripted::new([reply.as_str()]);
    let config = LlmExtractorConfig::default().with_min_confidence(0.2);
    let extraction = extractor(client, config)
        .extract_conversation(&conversation(), "chat-1", &KnownMemory::default())
        .unwrap();
    assert_eq!(extraction.facts.len(), 1);
    assert_eq!(extraction.diagnostics.len(), 3);
}

#[test]
fn predicates_are_normalised_into_relations() {
    check(
        &reply_with(
            r#""subject": "  user ", "predicate": "  Prefers   Editor\t", "object": "vim", "category": "preference""#,
        ),
        &["user | prefers_editor | vim | preference | 1"],
        &[],
    );
}

#[test]
fn over_long_fields_are_clipped_not_dropped() {
    let long = "x".repeat(10_000);
    let extraction = check(
        &reply_with(&format!(
            r#""subject": "{}", "predicate": "{}", "object": "{long}", "statement": "{long}", "category": "knowledge""#,
            "s".repeat(300),
            "p".repeat(80),
        )),
        &[&format!(
            "{}... | {}... | {}... | knowledge | 1 | {}...",
            "s".repeat(MAX_SUBJECT_CHARS - 3),
            "p".repeat(47),
            "x".repeat(MAX_OBJECT_CHARS - 3),
            "x".repeat(MAX_STATEMENT_CHARS - 3),
        )],
        &[],
    );
    assert_eq!(
        extraction.facts[0].fact.object().chars().count(),
        MAX_OBJECT_CHARS
    );
    // Multi-byte text is cut on char boundaries.
    let wide = "日本語".repeat(3_000);
    let extraction = check(
        &reply_with(&format!(
            r#""subject": "user", "predicate": "reads", "object": "{wide}", "category": "knowledge""#
        )),
        &[&format!(
            "user | reads | {}... | knowledge | 1",
            wide.chars().take(MAX_OBJECT_CHARS - 3).collect::<String>()
        )],
        &[],
    );
    assert!(extraction.facts[0].fact.object().ends_with("..."));
}

#[test]
fn facts_that_stay_invalid_are_diagnostics() {
    check(
        r#"{"facts": [
            {"subject": " ", "predicate": "p", "object": "o", "category": "goal"},
            {"subject": "user", "predicate": "\t", "object": "o", "category": "goal"},
            {"subject": "user", "predicate": "p", "object": "", "category": "goal"},
            {"subject": "user", "predicate": "p", "object": "o", "statement": "  ", "category": "goal"}
        ]}"#,
        &["user | p | o | goal | 1"],
        &[
            "llm.fact: fact 1: ( p o): `subject` must not be empty or blank",
            "llm.fact: fact 2: (user  o): `relation` must not be empty or blank",
            "llm.fact: fact 3: (user p ): `object` must not be empty or blank",
        ],
    );
}

#[test]
fn duplicates_merge_keeping_the_higher_confidence() {
    check(
        r#"{"facts": [
            {"subject": "user", "predicate": "prefers_editor", "object": "vim", "statement": "User prefers vim", "category": "preference", "confidence": 0.6},
            {"subject": "user", "predicate": "prefers_editor", "object": "vim", "statement": "User likes vim best", "category": "preference", "confidence": 0.8},
            {"subject": "user", "predicate": "editor", "object": "Vim", "statement": "  USER prefers   VIM ", "category": "preference", "confidence": 0.7},
            {"subject": "user", "predicate": "prefers_language", "object": "Rust", "statement": "User prefers Rust", "category": "preference", "confidence": 0.9}
        ]}"#,
        &[
            "user | prefers_editor | vim | preference | 0.8 | User likes vim best",
            "user | prefers_language | Rust | preference | 0.9 | User prefers Rust",
        ],
        &[],
    );
}

#[test]
fn the_prompt_explains_facts_categories_and_the_reply_shape() {
    let client = Scripted::new([]);
    extractor(client.clone(), LlmExtractorConfig::default())
        .extract_conversation(&conversation(), "chat-1", &KnownMemory::default())
        .unwrap();
    let prompts = client.prompts();
    assert_eq!(
        prompts,
        [extraction_prompt(
            DEFAULT_CATEGORIES,
            &KnownMemory::default(),
            &TranscriptChunk::new(0, conversation())
        )]
    );
    let prompt = &prompts[0];
    for needle in [
        EXTRACTION_GUIDE,
        EXTRACTION_REPLY_SHAPE,
        "GOOD facts",
        "\"User chose pytest over unittest for the RLM project\"",
        "BAD facts",
        "\"User likes clean code\"",
        "SPECIFIC",
        "\"prefers_test_framework\"",
        "(subject, predicate)",
        "- preference: ",
        "- observation: ",
        r#"{"title": "...", "summary": "one paragraph", "facts": [{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest", "content": "User prefers pytest over unittest", "category": "preference", "confidence": 0.9, "turn": 3, "supersedes": ["<id of a known fact>"]}], "facts_to_remove": ["<id of a known fact>"], "aliases": [{"alias": "Mel", "entity": "Melanie"}], "user_context": {"work": "...", "personal": "...", "top_of_mind": "..."}, "history": {"recent_months": "...", "earlier_context": "...", "long_term_background": "..."}}"#,
        "\"turn\"",
        "\"supersedes\"",
        "\"facts_to_remove\"",
        "\"aliases\"",
        "\"user_context\"",
        "\"history\"",
        "Never invent or guess an id",
        "Known facts: none, so leave out \"supersedes\" and \"facts_to_remove\".\n",
        "<transcript>\n[0] user: Let's write the tests with pytest, not unittest.\n[1] assistant: Done: tests/test_parser.py uses pytest.\n</transcript>\n",
    ] {
        assert!(prompt.contains(needle), "the prompt lacks {needle:?}");
    }
    for tag in DEFAULT_CATEGORIES {
        assert!(prompt.contains(&format!("\n- {tag}: ")), "{tag}");
    }
    // Only the configured categories are offered.
    let narrow = extraction_prompt(
        &[Tag::Goal],
        &KnownMemory::default(),
        &TranscriptChunk::default(),
    );
    assert!(narrow.contains("- goal: ") && !narrow.contains("- preference: "));
}

#[test]
fn an_empty_conversation_asks_nothing() {
    let client = Scripted::new([]);
    let extraction = extractor(client.clone(), LlmExtractorConfig::default())
        .extract_conversation(&[], "chat-1", &KnownMemory::default())
        .unwrap();
    assert!(client.prompts().is_empty());
    assert_eq!(extraction, Default::default());
}

/// A conversation of 40 messages of about 200 characters, numbered.
fn long_conversation() -> Vec<Message> {
    (0..40)
        .map(|i| {
            let role = if i % 2 == 0 {
                MessageRole::User
            } else {
                MessageRole::Assistant
            };
            Message::new(
                role,
                format!("message {i:02}: {}", "lorem ipsum ".repeat(16)),
            )
        })
        .collect()
}

#[test]
fn long_conversations_are_chunked_and_their_facts_merged() {
    let overhead = extraction_prompt(
        DEFAULT_CATEGORIES,
        &KnownMemory::default(),
        &TranscriptChunk::default(),
    )
    .chars()
    .count();
    let config = LlmExtractorConfig::default().with_max_prompt_chars(overhead + 1_000);
    let vim = |confidence: f64, statement: &str| {
        format!(
            r#"{{"subject": "user", "predicate": "prefers_editor", "object": "vim", "statement": "{statement}", "category": "preference", "confidence": {confidence}}}"#
        )
    };
    let replies = [
        format!(
            r#"{{"title": "Editors", "summary": "Part one.", "facts": [{}]}}"#,
            vim(0.6, "User prefers vim")
        ),
        // The same triple, more confident: replaces the first.
        format!(
            r#"{{"title": "Ignored", "summary": "Part two.", "facts": [{}]}}"#,
            vim(0.9, "User uses vim for everything")
        ),
        // The same statement as the first, folded, on another triple, less confident.
        r#"{"facts": [{"subject": "User", "predicate": "editor", "object": "Vim", "statement": "user PREFERS vim", "category": "preference", "confidence": 0.7}]}"#.to_owned(),
        "not json".to_owned(),
    ];
    let client = Scripted::new(replies.iter().map(String::as_str));
    let extraction = extractor(client.clone(), config.clone())
        .extract_conversation(&long_conversation(), "chat-9", &KnownMemory::default())
        .unwrap();
    let prompts = client.prompts();
    assert!(prompts.len() >= 5, "{} prompts", prompts.len());
    for prompt in &prompts {
        assert!(prompt.chars().count() <= config.max_prompt_chars);
    }
    // Every message is in exactly one prompt, in order, with its turn.
    let all: String = prompts.concat();
    let mut from = 0;
    for (turn, message) in long_conversation().iter().enumerate() {
        let rendered = format!("[{turn}] {}: {}\n", message.role, message.content);
        let at = all
            .get(from..)
            .unwrap()
            .find(&rendered)
            .expect("message in a prompt");
        from += at + 1;
        assert_eq!(all.matches(&rendered).count(), 1);
    }
    assert_eq!(
        fact_lines(&extraction),
        ["user | prefers_editor | vim | preference | 0.9 | User uses vim for everything"]
    );
    assert_eq!(extraction.title.as_deref(), Some("Editors"));
    assert_eq!(
        extraction.summary.as_deref(),
        Some("Part one.\n\nPart two.")
    );
    let chunks = prompts.len();
    assert_eq!(
        diagnostic_lines(&extraction),
        [format!(
            "llm.reply: chunk 4 of {chunks}: no JSON object in the reply"
        )]
    );
    assert_eq!(
        fold_statement("user PREFERS vim"),
        fold_statement("User prefers vim")
    );
}

#[test]
fn a_failing_chunk_fails_the_extraction_and_is_named() {
    let overhead = extraction_prompt(
        DEFAULT_CATEGORIES,
        &KnownMemory::default(),
        &TranscriptChunk::default(),
    )
    .chars()
    .count();
    let config = LlmExtractorConfig::default().with_max_prompt_chars(overhead + 1_000);
    let client = Scripted::results([
        Ok(r#"{"facts": []}"#.to_owned()),
        Err(LlmError::Timeout {
            after: Duration::from_secs(30),
        }),
    ]);
    let err = extractor(client.clone(), config)
        .extract_conversation(&long_conversation(), "chat-9", &KnownMemory::default())
        .unwrap_err();
    let LlmError::InChunk { chunk, chunks, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*chunk, 2);
    assert!(*chunks >= 5);
    assert!(matches!(err.innermost(), LlmError::Timeout { .. }));
    assert_eq!(
        err.to_string(),
        format!("chunk 2 of {chunks}: no reply within 30s")
    );
    // No later chunk was asked.
    assert_eq!(client.prompts().len(), 2);
}

#[test]
fn the_extractor_is_a_trait_object() {
    let boxed: Box<dyn ConversationExtractor> =
        Box::new(extractor(Scripted::new([]), LlmExtractorConfig::default()));
    let shared: std::sync::Arc<dyn ConversationExtractor> = std::sync::Arc::new(boxed);
    assert!(
        shared
            .extract_conversation(&conversation(), "c", &KnownMemory::default())
            .is_ok()
    );
}

fn field() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        any::<String>().prop_map(serde_json::Value::from),
        "[a-zA-Z _]{0,12}".prop_map(serde_json::Value::from),
        (any::<char>(), 0usize..700).prop_map(|(c, n)| serde_json::Value::from(
            std::iter::repeat_n(c, n).collect::<String>()
        )),
        any::<f64>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ]
}

fn category() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        proptest::sample::select(Tag::ALL).prop_map(|tag| serde_json::Value::from(tag.as_str())),
        field(),
    ]
}

fn reply_fact() -> impl Strategy<Value = serde_json::Value> {
    (field(), field(), field(), field(), category(), field()).prop_map(
        |(subject, predicate, object, statement, category, confidence)| {
            serde_json::json!({
                "subject": subject, "predicate": predicate, "object": object,
                "statement": statement, "category": category, "confidence": confidence,
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_reply_yields_only_valid_distinct_facts(
        facts in proptest::collection::vec(reply_fact(), 0..8),
        prose in "[^{}]{0,40}",
    ) {
        let reply = format!("{prose}{}", serde_json::json!({ "facts": facts }));
        let extraction = extractor(Scripted::new([reply.as_str()]), LlmExtractorConfig::default())
            .extract_conversation(&conversation(), "chat-1", &KnownMemory::default())
            .unwrap();
        // Every reply fact is kept, merged into a kept one, or reported.
        prop_assert!(extraction.facts.len() + extraction.diagnostics.len() <= facts.len());
        prop_assert_eq!(extraction.facts.is_empty(), extraction.diagnostics.len() == facts.len());
        let mut ids = std::collections::HashSet::new();
        let mut statements = std::collections::HashSet::new();
        for fact in extraction.facts.iter().map(|f| &f.fact) {
            // Each fact survives the model's own validation again.
            let json = serde_json::to_value(fact).unwrap();
            prop_assert_eq!(&serde_json::from_value::<fact_model::SessionFact>(json).unwrap(), fact);
            prop_assert!(fact.confidence() >= 0.5);
            prop_assert!(DEFAULT_CATEGORIES.contains(&fact.tags().as_slice()[0]));
            prop_assert!(ids.insert(fact.id()));
            if let Some(statement) = fact.statement() {
                prop_assert!(statements.insert(fold_statement(statement)));
            }
        }
    }

    #[test]
    fn any_reply_text_is_handled_without_panic(text in any::<String>()) {
        let extraction = extractor(Scripted::new([text.as_str()]), LlmExtractorConfig::default())
            .extract_conversation(&conversation(), "chat-1", &KnownMemory::default())
            .unwrap();
        if !text.contains('{') {
            prop_assert!(extraction.facts.is_empty());
            prop_assert_eq!(
                diagnostic_lines(&extraction),
                ["llm.reply: no JSON object in the reply"]
            );
        }
    }
}
