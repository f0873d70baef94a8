//! Replies: finding the JSON object in what a model wrote, and reading every section of
//! the contract leniently.

use fact_extract::{REPLY_SECTIONS, ReplyError, parse_reply};
use fact_model::ProfileField;
use proptest::prelude::*;

const FACT: &str = r#"{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest", "statement": "User prefers pytest", "category": "preference", "confidence": 0.9}"#;

/// Parses `text` and compares the outcome: `Ok` with the facts as
/// `subject predicate object category confidence` lines and the rejections, or the error.
fn check(text: &str, expect: Result<(&[&str], &[&str]), ReplyError>) {
    let got = parse_reply(text).map(|reply| {
        let facts: Vec<String> = reply
            .facts
            .iter()
            .map(|f| {
                format!(
                    "{} {} {} {} {:?}",
                    f.subject, f.predicate, f.object, f.category, f.confidence
                )
            })
            .collect();
        (facts, reply.rejected)
    });
    let expect = expect.map(|(facts, rejected)| {
        (
            facts.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            rejected.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )
    });
    assert_eq!(got, expect, "{text}");
}

const PYTEST: &[&str] = &["user prefers_test_framework pytest preference Some(0.9)"];

#[test]
fn finds_the_object_alone_in_fences_or_after_prose() {
    let bare = format!(r#"{{"facts": [{FACT}]}}"#);
    check(&bare, Ok((PYTEST, &[])));
    check(&format!("```json\n{bare}\n```"), Ok((PYTEST, &[])));
    check(&format!("```\n{bare}\n```\n"), Ok((PYTEST, &[])));
    check(
        &format!("Sure! Here are the facts I found:\n\n{bare}\n\nLet me know if you need more."),
        Ok((PYTEST, &[])),
    );
    // Braces in prose before the reply, and inside its strings, are no trouble.
    check(
        &format!(
            "The shape is {{\"title\": ...}}; an example: {{\"a\": 1}}.\n{}",
            bare.replace(
                "User prefers pytest",
                "User prefers pytest {always} \\\"really\\\""
            )
        ),
        Ok((PYTEST, &[])),
    );
    // An object with facts nested in a wrapper is still found.
    check(&format!(r#"{{"result": {bare}}}"#), Ok((PYTEST, &[])));
}

#[test]
fn reads_title_summary_and_lenient_fields() {
    let reply = parse_reply(
        r#"{"title": "  Tests  ", "summary": 7, "facts": [
            {"subject": "project:rlm", "relation": "Uses Database", "object": "SQLite",
             "fact_type": "technical", "fact_text": "RLM uses SQLite", "confidence": "0.8"},
            {"subject": "user", "predicate": "team_size", "object": 4, "category": "context",
             "confidence": null}
        ]}"#,
    )
    .unwrap();
    assert_eq!(reply.title.as_deref(), Some("Tests"));
    assert_eq!(reply.summary, None);
    assert_eq!(reply.facts[0].predicate, "Uses Database");
    assert_eq!(reply.facts[0].category, "technical");
    assert_eq!(reply.facts[0].statement.as_deref(), Some("RLM uses SQLite"));
    assert_eq!(reply.facts[0].confidence, Some(0.8));
    assert_eq!(reply.facts[1].object, "4");
    assert_eq!(reply.facts[1].confidence, None);
    assert_eq!(reply.facts[1].position, 2);
    assert!(reply.rejected.is_empty());
}

#[test]
fn malformed_facts_are_rejected_one_by_one() {
    check(
        &format!(
            r#"{{"facts": [
                "user likes pytest",
                {{"subject": "user", "object": "x", "category": "goal"}},
                {FACT},
                {{"subject": "user", "predicate": "p", "object": ["a"], "category": "goal"}},
                {{"subject": "user", "predicate": "p", "object": "o", "category": "goal", "confidence": "high"}},
                {{"subject": "user", "predicate": "p", "object": "o", "category": "goal", "confidence": [1]}},
                {{"subject": 1, "predicate": "p", "object": "o", "category": "goal"}}
            ]}}"#
        ),
        Ok((
            PYTEST,
            &[
                "fact 1: not a JSON object",
                r#"fact 2: missing string "predicate""#,
                r#"fact 4: missing string "object""#,
                r#"fact 5: confidence "high" is not a number"#,
                "fact 6: confidence [1] is not a number",
                r#"fact 7: missing string "subject""#,
            ],
        )),
    );
}

#[test]
fn replies_without_a_usable_object_are_errors() {
    check("", Err(ReplyError::NoJson));
    check("I could not find any facts.", Err(ReplyError::NoJson));
    check("{ never closed", Err(ReplyError::NoJson));
    check(
        "{not json}",
        Err(ReplyError::Invalid(
            "key must be a string at line 1 column 2".to_owned(),
        )),
    );
    check(r#"{"title": "x"}"#, Err(ReplyError::NoSections));
    // A section of the wrong type does not make an object the reply.
    for wrong in [
        r#"{"facts": "none"}"#,
        r#"{"facts_to_remove": "abc"}"#,
        r#"{"aliases": {}}"#,
        r#"{"user_context": "works"}"#,
        r#"{"history": []}"#,
        r#"{"facts": null, "user_context": null}"#,
    ] {
        check(wrong, Err(ReplyError::NoSections));
    }
    check(r#"[{"facts": []}]"#, Ok((&[], &[])));
    assert_eq!(
        ReplyError::NoSections.to_string(),
        r#"the reply's JSON object has none of "facts", "facts_to_remove", "aliases" (arrays), "user_context", "history" (objects)"#
    );
}

#[test]
fn any_one_section_makes_the_reply() {
    for (text, sections) in [
        (r#"{"facts": []}"#, "facts"),
        (r#"{"facts_to_remove": []}"#, "facts_to_remove"),
        (r#"{"aliases": []}"#, "aliases"),
        (r#"{"user_context": {}}"#, "user_context"),
        (r#"{"history": {}}"#, "history"),
    ] {
        assert!(REPLY_SECTIONS.contains(&sections));
        let reply = parse_reply(&format!("Prose {{\"title\": \"no\"}} then {text}")).unwrap();
        assert!(reply.facts.is_empty() && reply.notes.is_empty(), "{text}");
    }
    // The first object with a section wins, even when a later one has more.
    let reply = parse_reply(
        r#"{"user_context": {"work": "Engineer"}} {"facts": [], "user_context": {"work": "Chef"}}"#,
    )
    .unwrap();
    assert_eq!(
        reply.user_context,
        [(ProfileField::Work, "Engineer".to_owned())]
    );
}

#[test]
fn reads_turns_and_supersedes_of_facts() {
    let fact = |extra: &str| {
        format!(
            r#"{{"subject": "user", "predicate": "lives_in", "object": "Berlin", "category": "context"{extra}}}"#
        )
    };
    let reply = parse_reply(&format!(
        r#"{{"facts": [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}]}}"#,
        fact(r#", "turn": 3, "supersedes": ["a1b2c3d4", " e5f6a7b8 "]"#),
        fact(r#", "turn": "4", "supersedes": "a1b2c3d4""#),
        fact(r#", "turn": 5.0, "supersedes": null"#),
        fact(r#", "turn": null, "supersedes": [1, "", "ok"]"#),
        fact(r#", "turn": -1"#),
        fact(r#", "turn": 2.5"#),
        fact(r#", "turn": "three""#),
        fact(r#", "turn": [1]"#),
        fact(r#", "turn": 18446744073709551615"#),
        fact(r#", "turn": 1e300"#),
        fact(r#", "supersedes": {"id": "a1b2c3d4"}"#),
    ))
    .unwrap();
    let got: Vec<(usize, Option<u64>, Vec<String>)> = reply
        .facts
        .iter()
        .map(|f| (f.position, f.turn, f.supersedes.clone()))
        .collect();
    let s = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            (1, Some(3), s(&["a1b2c3d4", "e5f6a7b8"])),
            (2, Some(4), s(&["a1b2c3d4"])),
            (3, Some(5), s(&[])),
            (4, None, s(&["ok"])),
            (9, Some(u64::MAX), s(&[])),
            (11, None, s(&[])),
        ]
    );
    assert_eq!(
        reply.rejected,
        [
            "fact 5: turn -1 is not a message number (a non-negative integer)",
            "fact 6: turn 2.5 is not a message number (a non-negative integer)",
            r#"fact 7: turn "three" is not a message number (a non-negative integer)"#,
            "fact 8: turn [1] is not a message number (a non-negative integer)",
            "fact 10: turn 1e+300 is not a message number (a non-negative integer)",
        ]
    );
    assert_eq!(
        reply.notes,
        [
            "fact 4: supersedes 1: expected a string, found a number",
            "fact 4: supersedes 2: blank",
            "fact 11: supersedes: expected an array, found an object",
        ]
    );
}

#[test]
fn reads_removals_aliases_and_profile_sections() {
    let reply = parse_reply(
        r#"{
        "facts_to_remove": [" a1b2c3d4 ", 7, "", "e5f6a7b8"],
        "aliases": [
            {"alias": "Mel", "entity": "Melanie"},
            {"alias": "Bob"},
            ["Rob", "Robert"],
            {"alias": "JS", "entity": "JavaScript", "note": "ok"}
        ],
        "user_context": {"work": "  Engineer at Acme ", "personal": "", "top_of_mind": 3, "mood": "happy"},
        "history": {"recentMonths": "Moved to Berlin", "earlier_context": null, "long_term_background": "Grew up in Lyon"}
    }"#,
    )
    .unwrap();
    assert!(reply.facts.is_empty() && reply.rejected.is_empty());
    assert_eq!(reply.facts_to_remove, ["a1b2c3d4", "e5f6a7b8"]);
    assert_eq!(
        reply.aliases,
        [
            ("Mel".to_owned(), "Melanie".to_owned()),
            ("JS".to_owned(), "JavaScript".to_owned()),
        ]
    );
    assert_eq!(
        reply.user_context,
        [(ProfileField::Work, "Engineer at Acme".to_owned())]
    );
    assert_eq!(
        reply.history,
        [
            (ProfileField::RecentMonths, "Moved to Berlin".to_owned()),
            (
                ProfileField::LongTermBackground,
                "Grew up in Lyon".to_owned()
            ),
        ]
    );
    assert_eq!(
        reply.notes,
        [
            "facts_to_remove 2: expected a string, found a number",
            "facts_to_remove 3: blank",
            r#"aliases 2: expected {"alias": "...", "entity": "..."} with two strings"#,
            r#"aliases 3: expected {"alias": "...", "entity": "..."} with two strings"#,
            "user_context.top_of_mind: expected a string, found a number",
            r#"user_context: unknown field "mood"; allowed: work, personal, top_of_mind"#,
        ]
    );
    // Sections of the wrong type beside a good one are notes.
    let reply = parse_reply(
        r#"{"facts": [], "facts_to_remove": 3, "aliases": "Mel", "user_context": [], "history": "x"}"#,
    )
    .unwrap();
    assert_eq!(
        reply.notes,
        [
            "facts_to_remove: expected an array, found a number",
            "aliases: expected an array, found a string",
            "user_context: expected an object, found an array",
            "history: expected an object, found a string",
        ]
    );
    // Camel-case names, as seed 002 writes them, are read too.
    let reply = parse_reply(r#"{"userContext": {"topOfMind": "The move"}, "facts": []}"#).unwrap();
    assert_eq!(
        reply.user_context,
        [(ProfileField::TopOfMind, "The move".to_owned())]
    );
}

#[test]
fn a_reply_full_of_braces_is_bounded_work() {
    let text = format!("{}{}", "{".repeat(50_000), r#"{"facts": []}"#);
    // The object sits after more opening braces than the parser tries.
    assert_eq!(parse_reply(&text), Err(ReplyError::NoJson));
}

proptest! {
    #[test]
    fn parse_reply_never_panics(text in any::<String>()) {
        let _ = parse_reply(&text);
    }

    #[test]
    fn parse_reply_never_panics_on_json_like_text(text in r#"[{}\[\]":,\\ a-z0-9.é`\n-]{0,200}"#) {
        let _ = parse_reply(&text);
    }

    #[test]
    fn parse_reply_never_panics_on_contract_shaped_text(
        text in r#"[{}\[\]":, a-z0-9._-]{0,40}"#,
        section in proptest::sample::select(REPLY_SECTIONS.to_vec()),
        value in r#"[{}\[\]":, a-z0-9.é-]{0,80}"#,
    ) {
        let _ = parse_reply(&format!(r#"{text}{{"{section}": {value}}}"#));
        let _ = parse_reply(&format!(r#"{{"{section}": [{value}]}}"#));
    }

    #[test]
    fn a_reply_is_found_after_any_prose_without_braces(prose in "[^{}]{0,200}") {
        let text = format!(r#"{prose}{{"facts": [{FACT}]}}"#);
        let reply = parse_reply(&text).unwrap();
        prop_assert_eq!(reply.facts.len(), 1);
    }
}
