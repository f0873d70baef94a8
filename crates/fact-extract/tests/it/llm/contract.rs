//! The reply contract end to end: turns date facts, `supersedes` and `facts_to_remove`
//! name only known facts, aliases and profile fields are checked, a missing section
//! changes nothing, and no reply, however hostile, yields an id it was not given or a
//! turn outside its chunk.

use std::collections::HashSet;

use fact_extract::{
    ConversationExtraction, ConversationExtractor, DEFAULT_CATEGORIES, ExtractedAlias, KnownMemory,
    LlmExtractorConfig, MAX_PROFILE_CHARS, Message, MessageRole, TranscriptChunk,
    extraction_prompt,
};
use fact_model::{FactId, ProfileField, Timestamp};
use proptest::prelude::*;

use super::{
    Scripted, dated_conversation, diagnostic_lines, extract_with, extractor, fact_lines, known, t,
};

/// One fact of a reply: `user {predicate} {object}`, category context, with `extra` JSON
/// members (`"turn": 2`, say).
fn fact(predicate: &str, object: &str, extra: &str) -> String {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    format!(
        r#"{{"subject": "user", "predicate": "{predicate}", "object": "{object}", "category": "context"{extra}}}"#
    )
}

/// The facts as `relation object @ valid_from turn supersedes` lines, the superseded
/// facts by their known relation.
fn dated_lines(extraction: &ConversationExtraction, known: &KnownMemory) -> Vec<String> {
    let relation = |id: &FactId| {
        known
            .facts
            .iter()
            .find(|f| f.id() == *id)
            .map_or("?".to_owned(), |f| f.relation().to_owned())
    };
    extraction
        .facts
        .iter()
        .map(|f| {
            let supersedes: Vec<String> = f.supersedes.iter().map(relation).collect();
            format!(
                "{} {} @ {} turn {:?} supersedes [{}]",
                f.fact.relation(),
                f.fact.object(),
                f.fact.valid_from(),
                f.turn,
                supersedes.join(", ")
            )
        })
        .collect()
}

/// Extracts [`dated_conversation`] knowing [`known`] with one `reply`, and compares the
/// facts (as [`dated_lines`]), the removed facts' relations and the diagnostics.
fn check(
    reply: &str,
    facts: &[&str],
    remove: &[&str],
    diagnostics: &[&str],
) -> ConversationExtraction {
    let known = known();
    let (extraction, _) = extract_with(&known, &dated_conversation(), reply);
    assert_eq!(dated_lines(&extraction, &known), facts, "facts of {reply}");
    let removed: Vec<&str> = extraction
        .remove
        .iter()
        .map(|id| {
            known
                .facts
                .iter()
                .find(|f| f.id() == *id)
                .unwrap()
                .relation()
        })
        .collect();
    assert_eq!(removed, remove, "removals of {reply}");
    assert_eq!(
        diagnostic_lines(&extraction),
        diagnostics,
        "diagnostics of {reply}"
    );
    extraction
}

/// The short ids of [`known`]'s facts: lives_in, owns_car, prefers_editor.
fn ids() -> Vec<String> {
    known().short_ids()
}

const NOW: &str = "2026-11-22T10:00:00Z";

#[test]
fn a_fact_is_valid_from_the_time_of_its_turn() {
    check(
        &format!(
            r#"{{"facts": [{}, {}, {}, {}]}}"#,
            // Said in a dated message.
            fact("lives_in", "Berlin", r#""turn": 2"#),
            // A message without a time: the clock's reading.
            fact("congratulated_on", "the move", r#""turn": 3"#),
            // No turn: the last message of the chunk, which has no time either.
            fact("has_sister", "Melanie", ""),
            fact("sold", "a car", r#""turn": "4""#),
        ),
        &[
            "lives_in Berlin @ 2026-03-02T10:00:00Z turn Some(2) supersedes []",
            &format!("congratulated_on the move @ {NOW} turn Some(3) supersedes []"),
            &format!("has_sister Melanie @ {NOW} turn None supersedes []"),
            "sold a car @ 2026-03-03T11:00:00Z turn Some(4) supersedes []",
        ],
        &[],
        &[],
    );
    // Without a turn, the last message of the chunk dates the fact when it has a time.
    let known = known();
    let mut conversation = dated_conversation();
    conversation.truncate(5);
    let (extraction, _) = extract_with(
        &known,
        &conversation,
        &format!(r#"{{"facts": [{}]}}"#, fact("sold", "a car", "")),
    );
    assert_eq!(
        extraction.facts[0].fact.valid_from(),
        t("2026-03-03T11:00:00Z")
    );
}

#[test]
fn a_turn_outside_the_transcript_skips_the_fact() {
    check(
        &format!(
            r#"{{"facts": [{}, {}, {}]}}"#,
            fact("lives_in", "Berlin", r#""turn": 6"#),
            fact("lives_in", "Munich", r#""turn": 18446744073709551615"#),
            fact("lives_in", "Hamburg", r#""turn": -2"#),
        ),
        &[],
        &[],
        // Entries the reply reader rejects are reported first.
        &[
            "llm.fact: fact 3: turn -2 is not a message number (a non-negative integer)",
            "llm.turn: fact 1: (user lives_in Berlin): turn 6 is not a message of the transcript shown (turns 0 to 5); fact skipped",
            "llm.turn: fact 2: (user lives_in Munich): turn 18446744073709551615 is not a message of the transcript shown (turns 0 to 5); fact skipped",
        ],
    );
}

#[test]
fn supersedes_names_known_facts_by_short_or_full_id_and_nothing_else() {
    let ids = ids();
    let known = known();
    let full_car = known.facts[1].id().to_string();
    let too_short = ids[2].get(..6).unwrap();
    let too_short_diagnostic = format!(
        r#"llm.id: fact 1: supersedes 6: "{too_short}" is not the id of a known fact listed in the prompt; ignored"#
    );
    check(
        &format!(
            r#"{{"facts": [{}, {}]}}"#,
            fact(
                "moved_to",
                "Berlin",
                &format!(
                    r#""turn": 2, "supersedes": ["{}", "[{}]", "{full_car}", "deadbeef", "<id of a known fact>", "{too_short}"]"#,
                    ids[0],
                    ids[0].to_uppercase(),
                )
            ),
            fact(
                "lives_in",
                "Paris",
                &format!(r#""turn": 0, "supersedes": ["{}"]"#, ids[0])
            ),
        ),
        // Even under another predicate; repeats are dropped.
        &[
            "moved_to Berlin @ 2026-03-02T10:00:00Z turn Some(2) supersedes [lives_in, owns_car]",
            "lives_in Paris @ 2026-03-01T09:00:00Z turn Some(0) supersedes []",
        ],
        &[],
        &[
            r#"llm.id: fact 1: supersedes 4: "deadbeef" is not the id of a known fact listed in the prompt; ignored"#,
            r#"llm.id: fact 1: supersedes 5: "<id of a known fact>" is not the id of a known fact listed in the prompt; ignored"#,
            &too_short_diagnostic,
            // Restating a known fact cannot end it.
            "llm.id: fact 2: supersedes 1: the fact cannot supersede itself",
        ],
    );
}

#[test]
fn facts_to_remove_ends_only_listed_facts_and_leaves_superseded_ones_to_their_successor() {
    let ids = ids();
    check(
        &format!(
            r#"{{"facts": [{}], "facts_to_remove": ["{}", "{}", "{}", "{}", "ffffffffffffffff", 7]}}"#,
            fact(
                "lives_in",
                "Berlin",
                &format!(r#""turn": 2, "supersedes": ["{}"]"#, ids[0])
            ),
            ids[1],
            ids[1],
            ids[0],
            ids[2],
        ),
        &["lives_in Berlin @ 2026-03-02T10:00:00Z turn Some(2) supersedes [lives_in]"],
        &["owns_car", "prefers_editor"],
        &[
            "llm.reply: facts_to_remove 6: expected a string, found a number",
            r#"llm.id: facts_to_remove 5: "ffffffffffffffff" is not the id of a known fact listed in the prompt; ignored"#,
        ],
    );
    // Nothing known: every id is unknown, and nothing is removed.
    let (extraction, _) = extract_with(
        &KnownMemory::default(),
        &dated_conversation(),
        &format!(r#"{{"facts_to_remove": ["{}"]}}"#, ids[1]),
    );
    assert!(extraction.remove.is_empty());
    assert_eq!(extraction.diagnostics[0].rule, "llm.id");
}

#[test]
fn aliases_are_normalized_deduplicated_and_checked() {
    let extraction = check(
        r#"{"aliases": [
            {"alias": " Mel ", "entity": "Melanie"},
            {"alias": "MEL", "entity": "melanie"},
            {"alias": "Rob", "entity": "Robert  Smith"},
            {"alias": "   ", "entity": "Bob"},
            {"alias": "Me", "entity": "User"},
            {"alias": "Mel"}
        ]}"#,
        &[],
        &[],
        &[
            r#"llm.reply: aliases 6: expected {"alias": "...", "entity": "..."} with two strings"#,
            "llm.alias: alias 4: the alias and the entity must not be blank",
            r#"llm.alias: alias 5: "user" is the entity's own name"#,
        ],
    );
    let pair = |alias: &str, entity: &str| ExtractedAlias {
        alias: alias.to_owned(),
        entity: entity.to_owned(),
    };
    assert_eq!(
        extraction.aliases,
        [pair("mel", "melanie"), pair("rob", "robert smith")]
    );
}

#[test]
fn subjects_are_normalized_entities() {
    let extraction = check(
        r#"{"facts": [
            {"subject": "I", "predicate": "prefers_editor", "object": "Helix", "category": "preference", "turn": 0},
            {"subject": "  Project:RLM ", "predicate": "uses_database", "object": "SQLite", "category": "technical", "turn": 0}
        ]}"#,
        &[
            "prefers_editor Helix @ 2026-03-01T09:00:00Z turn Some(0) supersedes []",
            "uses_database SQLite @ 2026-03-01T09:00:00Z turn Some(0) supersedes []",
        ],
        &[],
        &[],
    );
    let subjects: Vec<&str> = extraction.facts.iter().map(|f| f.fact.subject()).collect();
    assert_eq!(subjects, ["user", "project:rlm"]);
}

#[test]
fn an_only_user_context_reply_changes_only_the_profile() {
    let extraction = check(
        r#"{"user_context": {"work": "Backend engineer\nat Acme", "top_of_mind": "  The move  "}}"#,
        &[],
        &[],
        &[],
    );
    assert_eq!(
        extraction,
        ConversationExtraction {
            profile: vec![
                (ProfileField::Work, "Backend engineer at Acme".to_owned()),
                (ProfileField::TopOfMind, "The move".to_owned()),
            ],
            ..ConversationExtraction::default()
        }
    );
}

#[test]
fn profile_texts_are_one_line_clipped_and_the_later_chunk_wins() {
    let known = known();
    let overhead = extraction_prompt(DEFAULT_CATEGORIES, &known, &TranscriptChunk::default())
        .chars()
        .count();
    let config = LlmExtractorConfig::default().with_max_prompt_chars(overhead + 200);
    let conversation: Vec<Message> = (0..6)
        .map(|i| {
            Message::new(
                MessageRole::User,
                format!("message {i} {}", "x".repeat(120)),
            )
        })
        .collect();
    let long = "word ".repeat(400);
    let replies = [
        format!(
            r#"{{"user_context": {{"work": "Engineer", "personal": "{long}"}}, "history": {{"recent_months": "Paris"}}}}"#
        ),
        r#"{"facts": []}"#.to_owned(),
        r#"{"user_context": {"work": "Manager", "personal": ""}, "history": {"earlier_context": "Lyon"}}"#
            .to_owned(),
    ];
    let client = Scripted::new(replies.iter().map(String::as_str));
    let extraction = extractor(client.clone(), config)
        .extract_conversation(&conversation, "chat-4", &known)
        .unwrap();
    assert!(client.prompts().len() >= 3);
    let fields: Vec<ProfileField> = extraction.profile.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        fields,
        [
            ProfileField::Work,
            ProfileField::Personal,
            ProfileField::RecentMonths,
            ProfileField::EarlierContext,
        ]
    );
    assert_eq!(extraction.profile[0].1, "Manager");
    let personal = &extraction.profile[1].1;
    assert_eq!(personal.chars().count(), MAX_PROFILE_CHARS);
    assert!(personal.ends_with("...") && !personal.contains("  "));
    assert_eq!(extraction.profile[2].1, "Paris");
    assert!(extraction.diagnostics.is_empty());
}

#[test]
fn turns_are_checked_against_the_chunk_and_merged_facts_keep_turn_and_all_supersedes() {
    let known = known();
    let ids = known.short_ids();
    let overhead = extraction_prompt(DEFAULT_CATEGORIES, &known, &TranscriptChunk::default())
        .chars()
        .count();
    // Three messages of about 130 characters per chunk at most.
    let config = LlmExtractorConfig::default().with_max_prompt_chars(overhead + 300);
    let conversation: Vec<Message> = (0..9)
        .map(|i| {
            Message::new(
                MessageRole::User,
                format!("message {i} {}", "y".repeat(110)),
            )
            .at(Timestamp::from_unix_secs(1_772_000_000 + i64::from(i) * 3_600).unwrap())
        })
        .collect();
    let berlin = |confidence: f64, turn: usize, supersedes: &str| {
        format!(
            r#"{{"subject": "user", "predicate": "lives_in", "object": "Berlin", "category": "context", "confidence": {confidence}, "turn": {turn}, "supersedes": ["{supersedes}"]}}"#
        )
    };
    let replies = [
        // Chunk 1 (turns 0 and 1): turn 3 is in the transcript, but not in this chunk.
        format!(
            r#"{{"facts": [{}, {}]}}"#,
            berlin(0.7, 1, &ids[0]),
            berlin(0.9, 3, &ids[0])
        ),
        // Chunk 2: the same fact, more confident, superseding another known fact.
        format!(r#"{{"facts": [{}]}}"#, berlin(0.9, 3, &ids[1])),
    ];
    let client = Scripted::new(replies.iter().map(String::as_str));
    let extraction = extractor(client.clone(), config)
        .extract_conversation(&conversation, "chat-5", &known)
        .unwrap();
    let prompts = client.prompts();
    assert!(prompts.len() >= 3, "{} prompts", prompts.len());
    assert!(prompts[0].contains("): message 1 ") && !prompts[0].contains("): message 3 "));
    assert!(prompts[1].contains("[3] user (2026-02-25): message 3 "));
    assert_eq!(
        dated_lines(&extraction, &known),
        [format!(
            "lives_in Berlin @ {} turn Some(3) supersedes [lives_in, owns_car]",
            conversation[3].timestamp.unwrap()
        )]
    );
    let chunks = prompts.len();
    assert_eq!(
        diagnostic_lines(&extraction),
        [format!(
            "llm.turn: chunk 1 of {chunks}: fact 2: (user lives_in Berlin): turn 3 is not a \
             message of the transcript shown (turns 0 to 1); fact skipped"
        )]
    );
}

/// A hostile id: a known one in some spelling, a near miss, or junk.
fn id(known: &KnownMemory) -> impl Strategy<Value = serde_json::Value> + use<> {
    let shorts = known.short_ids();
    let fulls: Vec<String> = known.facts.iter().map(|f| f.id().to_string()).collect();
    prop_oneof![
        proptest::sample::select(shorts.clone()).prop_map(serde_json::Value::from),
        proptest::sample::select(fulls).prop_map(serde_json::Value::from),
        (proptest::sample::select(shorts), 0usize..8)
            .prop_map(|(short, cut)| serde_json::Value::from(short.get(..cut).unwrap().to_owned())),
        "[0-9a-f]{6,18}".prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ]
}

fn turn() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        (0u64..8).prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "[0-9-]{0,4}".prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ]
}

fn hostile_reply() -> impl Strategy<Value = serde_json::Value> {
    let known = known();
    let reply_fact = (
        "[a-z ]{0,8}",
        "[a-z_ ]{0,8}",
        "[a-zA-Z ]{0,8}",
        proptest::sample::select(vec!["context", "goal", "mood", ""]),
        turn(),
        proptest::collection::vec(id(&known), 0..4),
    )
        .prop_map(|(subject, predicate, object, category, turn, supersedes)| {
            serde_json::json!({
                "subject": subject, "predicate": predicate, "object": object,
                "category": category, "turn": turn, "supersedes": supersedes,
            })
        });
    (
        proptest::collection::vec(reply_fact, 0..8),
        proptest::collection::vec(id(&known), 0..6),
        proptest::collection::vec(("[a-zA-Z ]{0,6}", "[a-zA-Z ]{0,6}"), 0..4),
        proptest::option::of(("[a-z ]{0,20}", any::<String>())),
    )
        .prop_map(|(facts, remove, aliases, profile)| {
            let aliases: Vec<_> = aliases
                .into_iter()
                .map(|(alias, entity)| serde_json::json!({"alias": alias, "entity": entity}))
                .collect();
            let mut reply = serde_json::json!({
                "facts": facts, "facts_to_remove": remove, "aliases": aliases,
            });
            if let Some((work, history)) = profile {
                reply["user_context"] = serde_json::json!({"work": work});
                reply["history"] = serde_json::json!({"recent_months": history});
            }
            reply
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn no_reply_yields_an_id_it_was_not_given_or_a_turn_outside_the_transcript(
        reply in hostile_reply(),
        prose in "[^{}]{0,20}",
    ) {
        let known = known();
        let conversation = dated_conversation();
        let (extraction, _) =
            extract_with(&known, &conversation, &format!("{prose}{reply}"));
        let given: HashSet<FactId> = known.facts.iter().map(|f| f.id()).collect();
        for fact in &extraction.facts {
            for id in &fact.supersedes {
                prop_assert!(given.contains(id));
                prop_assert_ne!(*id, fact.fact.id());
            }
            if let Some(turn) = fact.turn {
                prop_assert!(turn < conversation.len());
                let expect = conversation[turn].timestamp.unwrap_or(t(NOW));
                prop_assert_eq!(fact.fact.valid_from(), expect);
            }
            prop_assert_eq!(fact.fact.recorded_at(), Some(t(NOW)));
            prop_assert_eq!(fact.fact.subject(), fact_model::normalize_entity(fact.fact.subject()));
        }
        let superseded: HashSet<FactId> =
            extraction.facts.iter().flat_map(|f| f.supersedes.iter().copied()).collect();
        let mut removed = HashSet::new();
        for id in &extraction.remove {
            prop_assert!(given.contains(id));
            prop_assert!(!superseded.contains(id));
            prop_assert!(removed.insert(*id), "removed twice");
        }
        for alias in &extraction.aliases {
            prop_assert!(!alias.alias.is_empty() && !alias.entity.is_empty());
            prop_assert_ne!(&alias.alias, &alias.entity);
        }
        for (_, text) in &extraction.profile {
            prop_assert!(text.chars().count() <= MAX_PROFILE_CHARS);
            prop_assert!(!text.contains('\n'));
        }
    }

    #[test]
    fn any_reply_text_with_known_memory_is_handled_without_panic(text in any::<String>()) {
        let (extraction, _) = extract_with(&known(), &dated_conversation(), &text);
        if !text.contains('{') {
            let expect = ConversationExtraction {
                diagnostics: extraction.diagnostics.clone(),
                ..ConversationExtraction::default()
            };
            prop_assert_eq!(extraction, expect);
        }
    }
}

#[test]
fn every_fact_line_keeps_its_statement() {
    // The statement may be given as `content` (the contract) or `statement`.
    let (extraction, _) = extract_with(
        &known(),
        &dated_conversation(),
        r#"{"facts": [
            {"subject": "user", "predicate": "lives_in", "object": "Berlin", "content": "User moved to Berlin", "category": "context", "turn": 2},
            {"subject": "user", "predicate": "has_sister", "object": "Melanie", "statement": "Melanie is the user's sister", "category": "context", "turn": 5}
        ]}"#,
    );
    assert_eq!(
        fact_lines(&extraction),
        [
            "user | lives_in | Berlin | context | 1 | User moved to Berlin",
            "user | has_sister | Melanie | context | 1 | Melanie is the user's sister",
        ]
    );
}
