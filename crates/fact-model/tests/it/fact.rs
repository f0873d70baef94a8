//! Validation of `SessionFact`: every rule, through the builder and through serde.

use fact_model::{
    FactError, FactUpdate, Field, Metadata, SessionFact, SourceRole, Tag, Timestamp, fold_statement,
};
use proptest::prelude::*;
use serde_json::json;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(secs).unwrap()
}

/// A valid wire fact; tests change one field at a time.
fn wire() -> serde_json::Value {
    json!({
        "subject": "src/lib.rs",
        "relation": "modified_by",
        "object": "task:1",
        "tags": ["file_change"],
        "valid_from": "2026-11-22T03:00:00Z",
        "source_task_id": "1",
        "source_role": "implementer",
        "confidence": 1.0
    })
}

/// Deserializes `wire()` with `field` set to `value` and checks the error names `expect`.
fn check_rejected(field: &str, value: serde_json::Value, expect: &str) {
    let mut fact = wire();
    fact[field] = value;
    let err = serde_json::from_value::<SessionFact>(fact).unwrap_err();
    assert!(err.to_string().contains(expect), "{field}: {err}");
}

#[test]
fn wire_validation_names_the_field() {
    check_rejected("subject", json!(""), "`subject` must not be empty");
    check_rejected("subject", json!("   \n"), "`subject` must not be empty");
    check_rejected(
        "subject",
        json!("s".repeat(201)),
        "`subject` is 201 characters long; the limit is 200",
    );
    check_rejected(
        "relation",
        json!("r".repeat(51)),
        "`relation` is 51 characters",
    );
    check_rejected(
        "object",
        json!("o".repeat(201)),
        "`object` is 201 characters",
    );
    check_rejected("tags", json!([]), "`tags` must hold 1 to 3 tags, got 0");
    check_rejected(
        "tags",
        json!(["test", "error", "decision", "goal"]),
        "got 4",
    );
    check_rejected(
        "tags",
        json!(["test", "test"]),
        "lists `test` more than once",
    );
    check_rejected("tags", json!(["tests"]), "unknown variant `tests`");
    check_rejected(
        "confidence",
        json!(1.5),
        "`confidence` must be a finite number in 0..=1, got 1.5",
    );
    check_rejected("confidence", json!(-0.1), "got -0.1");
    check_rejected(
        "valid_to",
        json!("2026-11-22T02:59:59Z"),
        "`valid_to` (2026-11-22T02:59:59Z) is before",
    );
    check_rejected("valid_from", json!("noon"), "invalid RFC 3339 timestamp");
    check_rejected(
        "source_task_id",
        json!(""),
        "`source_task_id` must not be empty",
    );
    check_rejected("source_role", json!("robot"), "unknown variant `robot`");
    check_rejected(
        "statement",
        json!("x".repeat(501)),
        "`statement` is 501 characters",
    );
    check_rejected("id", json!("0000000000000000"), "does not match the triple");
    check_rejected("id", json!("zz"), "invalid fact id");
}

#[test]
fn limits_count_chars_not_bytes() {
    // 200 three-byte characters: 600 bytes, but within the 200-character limit.
    let fact = SessionFact::builder("語".repeat(200), "関係", "é".repeat(200))
        .tag(Tag::Knowledge)
        .source("1", SourceRole::User)
        .valid_from(t(0))
        .build()
        .unwrap();
    assert_eq!(fact.subject().chars().count(), 200);
}

#[test]
fn builder_requires_source_and_valid_from() {
    let missing_source = SessionFact::builder("a", "b", "c")
        .tag(Tag::Test)
        .valid_from(t(0))
        .build();
    assert_eq!(
        missing_source.unwrap_err(),
        FactError::Missing {
            field: Field::SourceTaskId
        }
    );
    let missing_time = SessionFact::builder("a", "b", "c")
        .tag(Tag::Test)
        .source("1", SourceRole::Reviewer)
        .build();
    assert_eq!(
        missing_time.unwrap_err(),
        FactError::Missing {
            field: Field::ValidFrom
        }
    );
    let non_finite = SessionFact::builder("a", "b", "c")
        .tag(Tag::Test)
        .source("1", SourceRole::Reviewer)
        .valid_from(t(0))
        .confidence(f64::NAN)
        .build();
    assert!(matches!(non_finite, Err(FactError::Confidence { .. })));
}

#[test]
fn wire_form_roundtrips_and_id_is_optional_on_input() {
    let fact: SessionFact = serde_json::from_value(wire()).unwrap();
    let out = serde_json::to_value(&fact).unwrap();
    assert_eq!(out["id"], json!(fact.id().to_string()));
    assert_eq!(serde_json::from_value::<SessionFact>(out).unwrap(), fact);
    let mut without_confidence = wire();
    without_confidence
        .as_object_mut()
        .unwrap()
        .remove("confidence");
    assert_eq!(
        serde_json::from_value::<SessionFact>(without_confidence)
            .unwrap()
            .confidence(),
        1.0
    );
}

#[test]
fn invalidation_is_set_once_and_never_before_valid_from() {
    let fact: SessionFact = serde_json::from_value(wire()).unwrap();
    let start = fact.valid_from();
    let later = start
        .checked_add(std::time::Duration::from_secs(5))
        .unwrap();
    let ended = fact.invalidated_at(later).unwrap();
    assert_eq!(ended.valid_to(), Some(later));
    assert_eq!(ended.valid_from(), start);
    assert_eq!(
        ended.invalidated_at(later).unwrap_err(),
        FactError::AlreadyInvalidated { valid_to: later }
    );
    assert!(matches!(
        fact.invalidated_at(t(0)),
        Err(FactError::ValidityRange { .. })
    ));
    // Zero-length validity is allowed.
    assert!(fact.invalidated_at(start).is_ok());
}

#[test]
fn update_changes_only_given_fields() {
    let fact = SessionFact::builder("user", "prefers", "tabs")
        .tag(Tag::Preference)
        .source("chat", SourceRole::Extractor)
        .valid_from(t(7))
        .statement("Prefers tabs")
        .confidence(0.5)
        .build()
        .unwrap();
    let updated = fact
        .updated(&FactUpdate {
            tags: Some(vec![Tag::Preference, Tag::Behavior]),
            ..FactUpdate::default()
        })
        .unwrap();
    assert_eq!(updated.tags().as_slice(), &[Tag::Preference, Tag::Behavior]);
    assert_eq!(
        (updated.confidence(), updated.statement()),
        (0.5, Some("Prefers tabs"))
    );
    assert_eq!(
        (updated.id(), updated.valid_from()),
        (fact.id(), fact.valid_from())
    );
    let bad = FactUpdate {
        confidence: Some(2.0),
        ..FactUpdate::default()
    };
    assert!(matches!(
        fact.updated(&bad),
        Err(FactError::Confidence { .. })
    ));
    let blank = FactUpdate {
        statement: Some(" ".into()),
        ..FactUpdate::default()
    };
    assert_eq!(
        fact.updated(&blank).unwrap_err(),
        FactError::Blank {
            field: Field::Statement
        }
    );
}

#[test]
fn statements_fold_case_and_whitespace() {
    for (a, b) in [
        ("Likes Rust", "likes   rust"),
        ("ÉCOLE\n", "école"),
        ("a\tb", " a b "),
    ] {
        assert_eq!(fold_statement(a), fold_statement(b), "{a:?} vs {b:?}");
    }
    assert_ne!(fold_statement("likes rust"), fold_statement("likes rusty"));
}

proptest! {
    /// Whatever JSON arrives, deserialization either fails or yields a fact within every limit.
    #[test]
    fn deserialized_facts_are_always_valid(
        subject in ".{0,210}",
        relation in ".{0,60}",
        object in ".{0,210}",
        confidence in prop_oneof![any::<f64>(), 0.0f64..=1.0],
        tags in proptest::collection::vec(proptest::sample::select(Tag::ALL), 0..5),
    ) {
        let mut fact = wire();
        fact["subject"] = json!(subject);
        fact["relation"] = json!(relation);
        fact["object"] = json!(object);
        fact["confidence"] = json!(confidence);
        fact["tags"] = json!(tags);
        if let Ok(fact) = serde_json::from_value::<SessionFact>(fact) {
            prop_assert!((1..=200).contains(&fact.subject().chars().count()));
            prop_assert!((1..=50).contains(&fact.relation().chars().count()));
            prop_assert!((1..=200).contains(&fact.object().chars().count()));
            prop_assert!((1..=3).contains(&fact.tags().as_slice().len()));
            prop_assert!((0.0..=1.0).contains(&fact.confidence()));
        }
    }
}

#[test]
fn a_fact_carries_metadata_on_the_wire_only_when_it_has_some() {
    let plain = SessionFact::builder("user", "works_on", "rlm")
        .tag(Tag::Context)
        .source("ep_1", SourceRole::User)
        .valid_from(Timestamp::UNIX_EPOCH)
        .build()
        .unwrap();
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("metadata"), "{text}");
    let tagged = plain
        .clone()
        .with_metadata(Metadata::from_json(&json!({"project": "rlm", "n": 3})).unwrap());
    let text = serde_json::to_string(&tagged).unwrap();
    assert!(
        text.ends_with(r#""metadata":{"n":3,"project":"rlm"}}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<SessionFact>(&text).unwrap(), tagged);
    let bad = text.replace(r#""n":3"#, r#""n":[3]"#);
    let err = serde_json::from_str::<SessionFact>(&bad).unwrap_err();
    assert!(err.to_string().contains("an array"), "{err}");
}
