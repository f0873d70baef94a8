//! The JSON protocol: one request object in, one response object out. The same JSON serves
//! `facts replay` and, later, the MCP server; this is the one place that knows the wire
//! format.
//!
//! A request is `{"action": NAME, …fields}` with the fields of the action's request type;
//! a success is `{"ok": true, …fields}`, a failure `{"ok": false, "error": {"code",
//! "message"}}`. Actions: `init_run`, `ingest_output`, `compile_prompt`, `get_snapshot`,
//! `get_telemetry`, `query_facts`, `fact_history`.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest};

/// The response to a request that failed.
#[must_use]
pub fn error(code: &str, message: impl Into<String>) -> Value {
    json!({"ok": false, "error": {"code": code, "message": message.into()}})
}

/// `{"ok": true}` merged with `body`'s fields.
fn success(body: impl serde::Serialize) -> Value {
    let mut object = Map::new();
    object.insert("ok".into(), Value::Bool(true));
    match serde_json::to_value(body) {
        Ok(Value::Object(fields)) => object.extend(fields),
        Ok(other) => {
            object.insert("result".into(), other);
        }
        Err(e) => return error("internal_error", e.to_string()),
    }
    Value::Object(object)
}

fn parse<T: DeserializeOwned>(request: &Value) -> Result<T, Value> {
    serde_json::from_value(request.clone()).map_err(|e| error("invalid_request", e.to_string()))
}

#[derive(Deserialize)]
struct RunRef {
    run_id: String,
}

#[derive(Deserialize)]
struct QueryFacts {
    spec_name: String,
    task_id: String,
    task_description: String,
    #[serde(default)]
    tags: Option<Vec<fact_model::Tag>>,
    #[serde(default)]
    max_facts: Option<usize>,
    #[serde(default)]
    max_tokens: Option<usize>,
}

#[derive(Deserialize)]
struct FactHistory {
    spec_name: String,
    subject: String,
}

/// Answers one request.
///
/// ```
/// use dispatch_runtime::{DispatchRuntimeManager, protocol};
/// use serde_json::json;
///
/// let runtime = DispatchRuntimeManager::builder().build();
/// let answer = protocol::handle(&runtime, &json!({"action": "get_snapshot", "run_id": "nope"}));
/// assert_eq!(answer["ok"], false);
/// assert_eq!(answer["error"]["code"], "run_not_initialized");
/// assert_eq!(protocol::handle(&runtime, &json!({"action": "fly"}))["error"]["code"], "unknown_action");
/// ```
#[must_use]
pub fn handle(runtime: &DispatchRuntimeManager, request: &Value) -> Value {
    let Some(action) = request.get("action").and_then(Value::as_str) else {
        return error("invalid_request", "a request needs an \"action\" string");
    };
    let answer = match action {
        "init_run" => parse::<InitRunRequest>(request)
            .and_then(|r| runtime.init_run(r).map(success).map_err(|e| error(e.code(), e.to_string()))),
        // A contract error is a failed request that still says what to do next.
        "ingest_output" => parse::<IngestOutputRequest>(request).and_then(|r| {
            let response = runtime.ingest_output(r).map_err(|e| error(e.code(), e.to_string()))?;
            let failed = response.error.is_some();
            let mut answer = success(response);
            if failed && let Some(object) = answer.as_object_mut() {
                object.insert("ok".into(), Value::Bool(false));
            }
            Ok(answer)
        }),
        "compile_prompt" => parse::<CompilePromptRequest>(request)
            .and_then(|r| runtime.compile_prompt(r).map(success).map_err(|e| error(e.code(), e.to_string()))),
        "get_snapshot" => parse::<RunRef>(request).and_then(|r| {
            runtime.get_snapshot(&r.run_id).map(|s| success(json!({"snapshot": s}))).map_err(|e| error(e.code(), e.to_string()))
        }),
        "get_telemetry" => Ok(success(json!({"telemetry": runtime.telemetry()}))),
        "query_facts" => parse::<QueryFacts>(request).map(|q| {
            let mut query = fact_retrieve::FactQuery::new(q.task_id, q.task_description);
            query.tags = q.tags;
            query.max_facts = q.max_facts.unwrap_or(query.max_facts);
            query.max_tokens = q.max_tokens.unwrap_or(query.max_tokens);
            let found = runtime.query_facts(&q.spec_name, &query);
            let facts: Vec<Value> = found
                .facts
                .iter()
                .map(|f| {
                    let mut fact = serde_json::to_value(&f.fact).unwrap_or(Value::Null);
                    if let Some(object) = fact.as_object_mut() {
                        object.insert("score".into(), json!(f.score));
                    }
                    fact
                })
                .collect();
            success(json!({"facts": facts, "session_context": found.section, "tokens": found.tokens_used}))
        }),
        "fact_history" => parse::<FactHistory>(request)
            .map(|h| success(json!({"facts": runtime.fact_history(&h.spec_name, &h.subject)}))),
        other => Err(error("unknown_action", format!("unknown action {other:?}"))),
    };
    answer.unwrap_or_else(|failure| failure)
}
