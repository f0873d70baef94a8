//! The filter language: what each operator tests, the errors and their paths, both forms
//! read back, and boolean algebra on random facts.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{MetaValue, Metadata, SessionFact, SourceRole, Tag, Timestamp};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(secs).unwrap()
}

fn fact(subject: &str, object: &str, tags: &[Tag], meta: Value) -> SessionFact {
    let mut builder = SessionFact::builder(subject, "prefers", object)
        .source("ep_1", SourceRole::User)
        .valid_from(t(100))
        .confidence(0.8)
        .metadata(Metadata::from_json(&meta).unwrap());
    for tag in tags {
        builder = builder.tag(*tag);
    }
    builder.build().unwrap()
}

fn holds(filter: Value, fact: &SessionFact) -> bool {
    Filter::from_json(&filter).unwrap().matches(fact)
}

#[test]
fn each_field_and_operator_tests_what_it_names() {
    let f = fact(
        "user",
        "dark mode",
        &[Tag::Preference, Tag::Context],
        json!({"project": "rlm", "n": 3, "done": false}),
    );
    let yes = [
        json!({"subject": "user"}),
        json!({"subject": {"ne": "alice"}}),
        json!({"object": {"contains": "dark"}}),
        json!({"object": {"in": ["light mode", "dark mode"]}}),
        json!({"relation": {"nin": ["likes"]}}),
        json!({"object": {"gt": "apple"}}),
        json!({"category": "context"}),
        json!({"category": {"in": ["goal", "preference"]}}),
        json!({"category": {"nin": ["goal"]}}),
        json!({"source": "ep_1"}),
        json!({"confidence": {"gte": 0.8, "lt": 0.9}}),
        json!({"valid_from": {"lte": "1970-01-01T00:01:40Z"}}),
        json!({"valid_to": {"exists": false}}),
        json!({"valid_to": {"ne": "2026-01-01T00:00:00Z"}}),
        json!({"recorded_at": {"exists": false}}),
        json!({"metadata.project": "rlm"}),
        json!({"metadata.n": {"gt": 2.5}}),
        json!({"metadata.n": 3.0}),
        json!({"metadata.done": false}),
        json!({"metadata.project": {"contains": "rl"}}),
        json!({"metadata.missing": {"ne": 1}}),
        json!({"metadata.missing": {"nin": [1]}}),
        json!({"metadata.missing": {"exists": false}}),
        json!({"metadata.n": {"ne": "3"}}),
        json!({"or": [{"subject": "x"}, {"metadata.n": 3}]}),
        json!({"not": {"subject": "x"}}),
        json!({}),
        json!({"and": []}),
    ];
    for filter in yes {
        assert!(holds(filter.clone(), &f), "{filter}");
    }
    let no = [
        json!({"subject": "User"}),
        json!({"object": {"contains": "Dark"}}),
        json!({"category": "goal"}),
        json!({"category": {"ne": "context"}}),
        json!({"confidence": {"gt": 0.8}}),
        json!({"valid_to": {"lt": "2100-01-01T00:00:00Z"}}),
        json!({"valid_to": {"exists": true}}),
        json!({"metadata.missing": 1}),
        json!({"metadata.missing": {"gt": 0}}),
        json!({"metadata.n": "3"}),
        json!({"metadata.n": {"gt": "2"}}),
        json!({"metadata.n": {"contains": "3"}}),
        json!({"metadata.project": {"lt": "a"}}),
        json!({"or": []}),
        json!({"subject": "user", "object": "light mode"}),
    ];
    for filter in no {
        assert!(!holds(filter.clone(), &f), "{filter}");
    }
}

#[test]
fn errors_name_the_path_inside_the_filter() {
    let cases = [
        (
            json!({"colour": "red"}),
            "/colour",
            "unknown field `colour`",
        ),
        (
            json!({"and": [{"subject": "a"}, {"metadata.p": {"gtx": 1}}]}),
            "/and/1/metadata.p/gtx",
            "unknown operator `gtx`",
        ),
        (
            json!({"confidence": {"gt": "high"}}),
            "/confidence/gt",
            "takes a number, found a string",
        ),
        (
            json!({"not": {"valid_from": {"gt": "yesterday"}}}),
            "/not/valid_from/gt",
            "RFC 3339",
        ),
        (json!({"category": "colour"}), "/category", "unknown tag"),
        (
            json!({"category": {"gt": "goal"}}),
            "/category/gt",
            "`gt` does not apply to `category`",
        ),
        (
            json!({"object": {"in": ["a", 1]}}),
            "/object/in/1",
            "takes a string, found a number",
        ),
        (json!({"object": {"in": "a"}}), "/object/in", "takes a list"),
        (
            json!({"object": {"exists": 1}}),
            "/object/exists",
            "true or false",
        ),
        (
            json!({"metadata.p": {"gt": true}}),
            "/metadata.p/gt",
            "a number or a string",
        ),
        (
            json!({"metadata.p": [1]}),
            "/metadata.p",
            "a string, a number or a boolean",
        ),
        (json!({"metadata.a b": 1}), "/metadata.a b", "metadata key"),
        (json!({"or": {"subject": "a"}}), "/or", "a list of filters"),
        (json!([1]), "", "expected an object"),
        (json!({"a/b": 1}), "/a~1b", "unknown field"),
    ];
    for (filter, path, reason) in cases {
        let err = Filter::from_json(&filter).unwrap_err();
        assert_eq!(err.code(), "invalid_filter");
        assert_eq!(err.path(), path, "{filter}: {err}");
        assert!(err.reason().contains(reason), "{filter}: {err}");
    }
}

#[test]
fn size_and_depth_are_bounded() {
    let mut deep = json!({"subject": "a"});
    for _ in 0..=MAX_FILTER_DEPTH {
        deep = json!({ "not": deep });
    }
    let err = Filter::from_json(&deep).unwrap_err();
    assert!(err.reason().contains("levels deep"), "{err}");
    let wide = json!({"object": {"in": vec!["x"; MAX_FILTER_ITEMS]}});
    let err = Filter::from_json(&wide).unwrap_err();
    assert!(err.reason().contains("more than"), "{err}");
    let text = format!("subject in ({})", vec!["x"; MAX_FILTER_ITEMS].join(", "));
    assert!(Filter::parse_where(&text).is_err());
    let nested = format!("{}subject = a{}", "(".repeat(40), ")".repeat(40));
    assert!(Filter::parse_where(&nested).is_err());
}

#[test]
fn the_readable_form_reads_as_documented() {
    let read = |text: &str| Filter::parse_where(text).unwrap().to_json();
    assert_eq!(
        read(r#"metadata.project = "rlm" and category in (preference, decision)"#),
        json!({"and": [
            {"metadata.project": {"eq": "rlm"}},
            {"category": {"in": ["preference", "decision"]}},
        ]})
    );
    // `and` binds tighter than `or`; keywords are case-insensitive; `==` is `=`.
    assert_eq!(
        read("subject == a OR subject = b AND NOT object contains 'it''s'"),
        json!({"or": [
            {"subject": {"eq": "a"}},
            {"and": [{"subject": {"eq": "b"}}, {"not": {"object": {"contains": "it's"}}}]},
        ]})
    );
    // Words are read by the field's kind.
    assert_eq!(
        read("subject = 42 and metadata.n >= 3 and metadata.s = \"3\" and metadata.b = true"),
        json!({"and": [
            {"subject": {"eq": "42"}},
            {"metadata.n": {"gte": 3}},
            {"metadata.s": {"eq": "3"}},
            {"metadata.b": {"eq": true}},
        ]})
    );
    assert_eq!(
        read("valid_to not exists and recorded_at exists and valid_from < 2026-01-01T00:00:00Z"),
        json!({"and": [
            {"valid_to": {"exists": false}},
            {"recorded_at": {"exists": true}},
            {"valid_from": {"lt": "2026-01-01T00:00:00Z"}},
        ]})
    );
    assert_eq!(
        read("source not in (ep_1, 'ep 2') and confidence != 0.5"),
        json!({"and": [
            {"source": {"nin": ["ep_1", "ep 2"]}},
            {"confidence": {"ne": 0.5}},
        ]})
    );
    assert_eq!(read("()"), json!({"and": []}));
    assert_eq!(
        read("not (subject = a)"),
        json!({"not": {"subject": {"eq": "a"}}})
    );
}

#[test]
fn readable_errors_name_the_column() {
    let cases = [
        ("colour = red", "column 1", "unknown field"),
        ("subject = a and", "column 16", "expected a field"),
        ("subject ~ a", "column 9", "unexpected `~`"),
        ("subject = \"open", "column 11", "not closed"),
        ("(subject = a", "column 13", "expected `)`"),
        ("confidence > high", "column 12", "takes a number"),
        ("subject a", "column 9", "expected an operator"),
        ("", "column 1", "empty"),
        (
            "subject = a b",
            "column 13",
            "expected `and`, `or` or the end",
        ),
    ];
    for (text, path, reason) in cases {
        let err = Filter::parse_where(text).unwrap_err();
        assert_eq!(err.path(), path, "{text}: {err}");
        assert!(err.reason().contains(reason), "{text}: {err}");
    }
}

fn scalar() -> impl Strategy<Value = (FilterField, Value)> {
    let text = "[ -~é]{0,8}".prop_map(Value::from);
    prop_oneof![
        (
            prop_oneof![
                Just(FilterField::Subject),
                Just(FilterField::Object),
                Just(FilterField::Source)
            ],
            text.clone()
        ),
        (
            Just(FilterField::Category),
            prop::sample::select(vec!["goal", "context", "preference"]).prop_map(Value::from)
        ),
        (
            Just(FilterField::Confidence),
            (0u32..=10).prop_map(|n| json!(f64::from(n) / 10.0))
        ),
        (
            prop_oneof![
                Just(FilterField::ValidFrom),
                Just(FilterField::ValidTo),
                Just(FilterField::RecordedAt)
            ],
            (0i64..400).prop_map(|s| Value::from(t(s).to_string())),
        ),
        (
            "[a-c]".prop_map(FilterField::Metadata),
            prop_oneof![
                text,
                (-5i64..5).prop_map(Value::from),
                (-5.0f64..5.0).prop_map(Value::from),
                any::<bool>().prop_map(Value::from)
            ],
        ),
    ]
}

fn condition_strategy() -> impl Strategy<Value = Filter> {
    (
        scalar(),
        prop::sample::select(Operator::ALL.to_vec()),
        any::<bool>(),
    )
        .prop_filter_map("operator does not apply", |((field, value), op, flag)| {
            let value = match op {
                Operator::Exists => Value::Bool(flag),
                Operator::In | Operator::Nin => Value::Array(vec![value.clone(), value]),
                _ => value,
            };
            let mut ops = serde_json::Map::new();
            ops.insert(op.name().to_owned(), value);
            let mut map = serde_json::Map::new();
            map.insert(field.name().into_owned(), Value::Object(ops));
            Filter::from_json(&Value::Object(map)).ok()
        })
}

/// Random filters whose `and`/`or` lists hold at least two parts (the readable form
/// writes a one-part list as its part alone).
fn filter_strategy() -> impl Strategy<Value = Filter> {
    condition_strategy().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Filter::And),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Filter::Or),
            inner.prop_map(|f| Filter::Not(Box::new(f))),
        ]
    })
}

fn fact_strategy() -> impl Strategy<Value = SessionFact> {
    (
        prop::sample::select(vec!["user", "ab", "é"]),
        "[ -~]{1,6}",
        prop::sample::subsequence(vec![Tag::Goal, Tag::Context, Tag::Preference], 1..=2),
        (0u32..=10),
        (
            0i64..400,
            prop::option::of(0i64..400),
            prop::option::of(0i64..400),
        ),
        prop::collection::btree_map(
            "[a-c]",
            prop_oneof![
                "[a-c]{0,2}".prop_map(MetaValue::String),
                (-5i64..5).prop_map(|n| MetaValue::Number(n as f64)),
                any::<bool>().prop_map(MetaValue::Bool),
            ],
            0..3,
        ),
    )
        .prop_map(
            |(subject, object, tags, confidence, (from, to, recorded), meta)| {
                let mut builder =
                    SessionFact::builder(subject, "r", object.trim().to_owned() + "o")
                        .source("ep_1", SourceRole::User)
                        .valid_from(t(from))
                        .confidence(f64::from(confidence) / 10.0)
                        .metadata(Metadata::from_pairs(meta).unwrap());
                for tag in tags {
                    builder = builder.tag(tag);
                }
                if let Some(to) = to {
                    builder = builder.valid_to(t(from.max(to)));
                }
                if let Some(at) = recorded {
                    builder = builder.recorded_at(t(at));
                }
                builder.build().unwrap()
            },
        )
}

proptest! {
    /// Both forms read back what they write.
    #[test]
    fn both_forms_round_trip(filter in filter_strategy()) {
        prop_assert_eq!(&Filter::from_json(&filter.to_json()).unwrap(), &filter);
        let text = filter.to_where();
        prop_assert_eq!(&Filter::parse_where(&text).unwrap(), &filter, "{}", text);
    }

    /// `not` negates, `ne`/`nin` are `not eq`/`not in`, and `and`/`or` combine as
    /// boolean algebra, on random facts.
    #[test]
    fn the_combinators_are_boolean_algebra(
        a in filter_strategy(),
        b in filter_strategy(),
        fact in fact_strategy(),
    ) {
        let not_a = Filter::Not(Box::new(a.clone()));
        prop_assert_eq!(not_a.matches(&fact), !a.matches(&fact));
        let both = Filter::And(vec![a.clone(), b.clone()]);
        prop_assert_eq!(both.matches(&fact), a.matches(&fact) && b.matches(&fact));
        let either = Filter::Or(vec![a.clone(), b.clone()]);
        prop_assert_eq!(either.matches(&fact), a.matches(&fact) || b.matches(&fact));
        for condition in a.conditions() {
            let mut flipped = condition.clone();
            let (op, back) = match condition.op() {
                Operator::Eq => (Operator::Ne, true),
                Operator::In => (Operator::Nin, true),
                _ => (condition.op(), false),
            };
            if back {
                flipped.op = op;
                let one = Filter::Condition(condition.clone());
                prop_assert_eq!(Filter::Condition(flipped).matches(&fact), !one.matches(&fact));
            }
        }
    }
}

#[test]
fn serde_reads_and_writes_the_json_shape() {
    let filter: Filter = serde_json::from_str(
        r#"{"and": [{"metadata.project": "rlm"}, {"confidence": {"gt": 0.5}}]}"#,
    )
    .unwrap();
    assert_eq!(
        filter,
        Filter::parse_where(r#"metadata.project = "rlm" and confidence > 0.5"#).unwrap()
    );
    let written = serde_json::to_value(&filter).unwrap();
    assert_eq!(written, filter.to_json());
    let error = serde_json::from_str::<Filter>(r#"{"and": [{"colour": "red"}]}"#).unwrap_err();
    assert!(error.to_string().contains("/and/0/colour"), "{error}");
}
