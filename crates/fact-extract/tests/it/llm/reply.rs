//! Replies: finding the JSON object in what a model wrote, and reading it leniently.

use fact_extract::{ReplyError, parse_reply};
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
    check(r#"{"title": "x"}"#, Err(ReplyError::NoFacts));
    check(r#"{"facts": "none"}"#, Err(ReplyError::NoFacts));
    check(r#"[{"facts": []}]"#, Ok((&[], &[])));
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
    fn a_reply_is_found_after_any_prose_without_braces(prose in "[^{}]{0,200}") {
        let text = format!(r#"{prose}{{"facts": [{FACT}]}}"#);
        let reply = parse_reply(&text).unwrap();
        prop_assert_eq!(reply.facts.len(), 1);
    }
}
