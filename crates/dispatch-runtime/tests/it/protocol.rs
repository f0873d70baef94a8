//! The JSON protocol: any request gets an answer, never a panic; and (with the `schema`
//! feature) the action list against what `protocol::handle` accepts, so the schemas an MCP
//! client sees cannot drift from the request types.

use dispatch_runtime::{DispatchRuntimeManager, protocol};
use proptest::prelude::*;
use serde_json::Value;
#[cfg(feature = "schema")]
use serde_json::{Map, json};

/// Any JSON value, a few levels deep, with the protocol's own words among its strings.
fn any_json() -> impl Strategy<Value = Value> {
    let word = prop::sample::select(vec![
        "init_run",
        "ingest_output",
        "compile_prompt",
        "end_run",
        "get_snapshot",
        "get_telemetry",
        "query_facts",
        "fact_history",
        "implementer",
        "reviewer",
        "demo",
        "demo:1",
        "1",
        "",
        "BEGIN_DISPATCH_RESULT\n{}\nEND_DISPATCH_RESULT",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        word.prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "action",
                    "run_id",
                    "spec_name",
                    "task_id",
                    "role",
                    "output",
                    "task_prompt",
                    "max_output_tokens",
                    "task_description",
                    "tags",
                    "max_facts",
                    "max_tokens",
                    "subject",
                    "project_path",
                ])
                .prop_map(str::to_owned),
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_request_gets_an_answer_with_ok(requests in prop::collection::vec(any_json(), 1..8)) {
        let runtime = DispatchRuntimeManager::builder().build();
        for request in &requests {
            let answer = protocol::handle(&runtime, request);
            prop_assert!(answer["ok"].is_boolean(), "{answer}");
            if answer["ok"] == false {
                prop_assert!(answer["error"]["code"].is_string(), "{answer}");
            }
        }
    }
}

/// A value of the type a property schema declares.
#[cfg(feature = "schema")]
fn sample(property: &Value) -> Value {
    if let Some(reference) = property["$ref"].as_str() {
        // The only definition is `Role`.
        assert_eq!(reference, "#/$defs/Role", "a new definition needs a sample");
        return json!("implementer");
    }
    let types: Vec<&str> = match &property["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        other => panic!("untyped property {other}"),
    };
    match types.first().copied() {
        Some("string") => property["enum"].get(0).cloned().unwrap_or(json!("x")),
        Some("integer") => json!(3),
        Some("boolean") => json!(false),
        Some("array") => json!([property["items"]["enum"][0].clone()]),
        other => panic!("no sample for {other:?}"),
    }
}

#[cfg(feature = "schema")]
fn request(name: &str, fields: &Map<String, Value>) -> Value {
    let mut object = fields.clone();
    object.insert("action".into(), json!(name));
    Value::Object(object)
}

#[cfg(feature = "schema")]
#[test]
fn every_action_accepts_every_property_its_schema_declares() {
    let runtime = DispatchRuntimeManager::builder().build();
    for action in protocol::actions() {
        let properties = action
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let fields: Map<String, Value> = properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| (name.clone(), sample(schema)))
            .collect();
        let answer = protocol::handle(&runtime, &request(action.name, &fields));
        let code = &answer["error"]["code"];
        assert!(
            code != "invalid_request" && code != "unknown_action",
            "{}: {answer}",
            action.name
        );
    }
}

#[cfg(feature = "schema")]
#[test]
fn every_required_property_is_required_by_the_request_type() {
    let runtime = DispatchRuntimeManager::builder().build();
    let mut checked = 0;
    for action in protocol::actions() {
        let properties = action
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let all: Map<String, Value> = properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| (name.clone(), sample(schema)))
            .collect();
        let required = action
            .input_schema
            .get("required")
            .and_then(Value::as_array);
        for field in required.into_iter().flatten().filter_map(Value::as_str) {
            let mut fields = all.clone();
            fields.remove(field);
            let answer = protocol::handle(&runtime, &request(action.name, &fields));
            assert_eq!(
                answer["error"]["code"], "invalid_request",
                "{}: {answer}",
                action.name
            );
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains(field), "{}: {message}", action.name);
            checked += 1;
        }
    }
    assert_eq!(checked, 19, "required fields over all actions");
}

#[cfg(feature = "schema")]
#[test]
fn every_listed_action_is_one_handle_knows() {
    let names: Vec<&str> = protocol::actions().iter().map(|a| a.name).collect();
    assert_eq!(names.len(), 9);
    let runtime = DispatchRuntimeManager::builder().build();
    for name in names {
        let answer = protocol::handle(&runtime, &json!({"action": name}));
        assert_ne!(answer["error"]["code"], "unknown_action", "{name}");
    }
    let unknown = protocol::handle(&runtime, &json!({"action": "get_snapshots"}));
    assert_eq!(unknown["error"]["code"], "unknown_action");
}
