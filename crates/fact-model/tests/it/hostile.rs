//! Hostile input to the value types: a subject of 10,000 combining characters, NUL bytes,
//! confidences that are not numbers in `0..=1`, fact ids with whitespace or of the wrong
//! length, and JSON nested 100,000 deep. Each gets a typed error naming the field (or is
//! accepted and kept verbatim), never a panic.

use fact_model::{
    FactError, FactId, Field, MAX_SUBJECT_CHARS, SessionFact, SourceRole, Tag, Timestamp, clip,
};
use serde_json::json;

/// `e` followed by 9,999 combining acute accents: 10,000 chars, 20,000 bytes, one
/// grapheme.
fn combining_subject() -> String {
    let mut subject = String::from("e");
    subject.extend(std::iter::repeat_n('\u{301}', 9_999));
    subject
}

fn build(subject: &str, confidence: f64) -> Result<SessionFact, FactError> {
    SessionFact::builder(subject, "modified_by", "task:1")
        .tag(Tag::FileChange)
        .source("1", SourceRole::Implementer)
        .valid_from(Timestamp::UNIX_EPOCH)
        .confidence(confidence)
        .build()
}

/// A valid wire fact; tests change one field.
fn wire() -> serde_json::Value {
    json!({
        "subject": "src/lib.rs", "relation": "modified_by", "object": "task:1",
        "tags": ["file_change"], "valid_from": "2026-11-22T03:00:00Z",
        "source_task_id": "1", "source_role": "implementer", "confidence": 1.0
    })
}

#[test]
fn a_subject_of_ten_thousand_combining_characters_is_too_long_and_clips_on_char_boundaries() {
    let subject = combining_subject();
    assert_eq!(subject.chars().count(), 10_000);
    let err = build(&subject, 1.0).unwrap_err();
    assert_eq!(
        err,
        FactError::TooLong {
            field: Field::Subject,
            max: MAX_SUBJECT_CHARS,
            actual: 10_000,
        }
    );
    // The one way to shorten it counts chars: the base letter and 196 accents, then the
    // marker; the cut falls between two accents, never inside one.
    let clipped = clip(&subject, MAX_SUBJECT_CHARS);
    assert_eq!(clipped.chars().count(), MAX_SUBJECT_CHARS);
    assert!(clipped.starts_with('e') && clipped.ends_with("..."));
    assert_eq!(
        clipped.chars().filter(|c| *c == '\u{301}').count(),
        MAX_SUBJECT_CHARS - 4
    );
    let fact = build(&clipped, 1.0).unwrap();
    assert_eq!(fact.subject(), clipped);
    // Its id is the documented hash (the long-input path) and survives the wire.
    assert_eq!(
        fact.id(),
        FactId::for_triple(&clipped, "modified_by", "task:1")
    );
    let back: SessionFact = serde_json::from_str(&serde_json::to_string(&fact).unwrap()).unwrap();
    assert_eq!(back, fact);
    // Through serde the full subject is refused the same way, naming the field.
    let mut fact = wire();
    fact["subject"] = json!(subject);
    let err = serde_json::from_value::<SessionFact>(fact).unwrap_err();
    assert!(
        err.to_string()
            .contains("`subject` is 10000 characters long; the limit is 200"),
        "{err}"
    );
}

#[test]
fn nul_bytes_in_fact_text_are_kept_verbatim_and_survive_json() {
    let fact = SessionFact::builder("src/a\0b.rs", "modified_by", "task:\0")
        .tag(Tag::FileChange)
        .source("1\0", SourceRole::Implementer)
        .valid_from(Timestamp::UNIX_EPOCH)
        .statement("a statement with a \0 inside")
        .build()
        .unwrap();
    assert_eq!(fact.subject(), "src/a\0b.rs");
    assert_ne!(
        fact.id(),
        FactId::for_triple("src/ab.rs", "modified_by", "task:"),
        "a NUL is part of the text the id hashes"
    );
    let json = serde_json::to_string(&fact).unwrap();
    assert!(
        json.contains(r"src/a\u0000b.rs"),
        "JSON escapes the NUL: {json}"
    );
    let back: SessionFact = serde_json::from_str(&json).unwrap();
    assert_eq!(back, fact);
    // A text of NULs only is not blank (NUL is not whitespace): it is a fact like any.
    assert!(build("\0", 1.0).is_ok());
}

#[test]
fn confidences_that_are_not_numbers_in_zero_to_one_are_refused_by_the_builder() {
    for value in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e308,
        -1e308,
        1.0 + f64::EPSILON,
    ] {
        let err = build("src/lib.rs", value).unwrap_err();
        assert!(
            matches!(err, FactError::Confidence { value: v } if v.to_bits() == value.to_bits()),
            "{value}: {err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("`confidence` must be a finite number in 0..=1")
        );
    }
    // -0 is zero: accepted, and it compares equal to 0 after a round trip.
    let fact = build("src/lib.rs", -0.0).unwrap();
    assert_eq!(fact.confidence(), 0.0);
    let back: SessionFact = serde_json::from_str(&serde_json::to_string(&fact).unwrap()).unwrap();
    assert_eq!(back.confidence(), 0.0);
}

#[test]
fn confidences_that_are_not_numbers_in_zero_to_one_are_refused_on_the_wire() {
    // JSON has no NaN or Infinity literal: serde_json refuses the text itself.
    for (text, expect) in [
        (
            "1e308",
            "`confidence` must be a finite number in 0..=1, got 1e308",
        ),
        ("-1e308", "`confidence` must be a finite number in 0..=1"),
        ("1e999", "number out of range"),
        ("NaN", "expected value"),
        ("Infinity", "expected value"),
        ("\"NaN\"", "invalid type: string"),
    ] {
        let json = wire()
            .to_string()
            .replace("\"confidence\":1.0", &format!("\"confidence\":{text}"));
        assert!(json.contains(text));
        let err = serde_json::from_str::<SessionFact>(&json).unwrap_err();
        assert!(err.to_string().contains(expect), "{text}: {err}");
    }
    let json = wire()
        .to_string()
        .replace("\"confidence\":1.0", "\"confidence\":-0.0");
    let fact: SessionFact = serde_json::from_str(&json).unwrap();
    assert_eq!(fact.confidence(), 0.0);
}

#[test]
fn fact_ids_with_whitespace_or_of_the_wrong_length_are_refused() {
    let good = "0123456789abcdef";
    assert!(good.parse::<FactId>().is_ok());
    let long = "a".repeat(10_000);
    let cases = [
        String::new(),
        " ".to_owned(),
        format!(" {good}"),
        format!("{good} "),
        format!("{good}\n"),
        "0123456789abcde".to_owned(),
        "0123456789 abcde".to_owned(),
        "0123456789abcdef0".to_owned(),
        "0123456789ABCDEF".to_owned(),
        "0123456789abcde\0".to_owned(),
        // 16 bytes, 8 chars: no byte is a hex digit, and no char is split.
        "éééééééé".to_owned(),
        // 16 bytes ending in a two-byte char: the last pair is `d` and half of `é`.
        "0123456789abcdé".to_owned(),
        long.clone(),
    ];
    for case in &cases {
        let err = case.parse::<FactId>().unwrap_err();
        assert!(err.input.chars().count() <= 64, "{case:?}");
        assert!(
            err.to_string()
                .contains("expected 16 lowercase hex characters")
        );
    }
    // The error names the input, clipped: 10,000 characters come back as 64.
    let err = long.parse::<FactId>().unwrap_err();
    assert_eq!(err.input, clip(&long, 64));
    // On the wire too.
    let err = serde_json::from_value::<FactId>(json!(format!(" {good}"))).unwrap_err();
    assert!(err.to_string().contains("invalid fact id"), "{err}");
    let mut fact = wire();
    fact["id"] = json!(format!("{good} "));
    assert!(serde_json::from_value::<SessionFact>(fact).is_err());
}

#[test]
fn json_nested_100_000_deep_is_an_error_not_a_stack_overflow() {
    let depth = 100_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let objects = format!("{}0{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    for nested in [&arrays, &objects] {
        // As a field's value: refused at its first bracket.
        for field in ["subject", "tags", "confidence", "superseded_by"] {
            let mut text = wire().to_string();
            text.insert_str(1, &format!("\"{field}\":{nested},"));
            let err = serde_json::from_str::<SessionFact>(&text).unwrap_err();
            assert!(err.is_data() || err.is_syntax(), "{field}: {err}");
        }
        // As an unknown field's value: skipped (without recursion), the fact read.
        let mut text = wire().to_string();
        text.insert_str(1, &format!("\"extra\":{nested},"));
        let fact = serde_json::from_str::<SessionFact>(&text).unwrap();
        assert_eq!(fact.subject(), "src/lib.rs");
        assert!(serde_json::from_str::<SessionFact>(nested).is_err());
        assert!(serde_json::from_str::<FactId>(nested).is_err());
        let err = serde_json::from_str::<serde_json::Value>(nested).unwrap_err();
        assert!(
            err.to_string().contains("recursion limit exceeded"),
            "{err}"
        );
    }
}
