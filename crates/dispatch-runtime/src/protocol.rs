//! The JSON protocol: one request object in, one response object out. The same JSON serves
//! `facts replay` (one request per line) and `facts mcp` (one tool per action); this is the
//! one place that knows the wire format.
//!
//! A request is `{"action": NAME, …fields}` with the fields of the action's request type;
//! a success is `{"ok": true, …fields}`, a failure `{"ok": false, "error": {"code",
//! "message"}}`. Actions: `init_run`, `ingest_output`, `compile_prompt`, `get_snapshot`,
//! `get_telemetry`, `query_facts`, `fact_history`. With the `schema` feature, [`actions`]
//! describes each one with the JSON Schema of its request.

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

/// `get_snapshot`: the task ledger of a run.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RunRef {
    /// The run.
    run_id: String,
}

/// `get_telemetry`: takes no fields.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NoFields {}

/// `query_facts`: what the retriever would give a task, for inspection.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct QueryFacts {
    /// The spec whose store is searched.
    spec_name: String,
    /// The querying task; its own facts are excluded.
    task_id: String,
    /// The text the facts are scored against.
    task_description: String,
    /// Only facts with any of these tags.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::tags"))]
    tags: Option<Vec<fact_model::Tag>>,
    /// At most this many facts (default 10).
    #[serde(default)]
    max_facts: Option<usize>,
    /// Token budget of the rendered `[Session Context]` section (default 500).
    #[serde(default)]
    max_tokens: Option<usize>,
}

/// `fact_history`: every version of a subject's facts.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct FactHistory {
    /// The spec whose store is read.
    spec_name: String,
    /// The subject, e.g. a file path or `task:3`.
    subject: String,
}

/// One action of the protocol, described for tool lists (MCP `tools/list`).
#[cfg(feature = "schema")]
#[derive(Debug, Clone)]
pub struct Action {
    /// The action's name, the `action` field of a request.
    pub name: &'static str,
    /// What the action does, for the agent choosing a tool.
    pub description: &'static str,
    /// The JSON Schema of the request's fields (without `action`), an object schema.
    pub input_schema: Map<String, Value>,
}

/// Every action of the protocol with the JSON Schema of its request, in the order an
/// orchestrator uses them.
///
/// ```
/// let actions = dispatch_runtime::protocol::actions();
/// let init = actions.iter().find(|a| a.name == "init_run").expect("init_run is an action");
/// assert_eq!(init.input_schema["type"], "object");
/// assert_eq!(init.input_schema["required"], serde_json::json!(["spec_name", "task_id"]));
/// ```
#[cfg(feature = "schema")]
#[must_use]
pub fn actions() -> Vec<Action> {
    use schema::object;
    vec![
        Action {
            name: "init_run",
            description: "Bind a run to a spec's task and load the spec's progress ledger from \
                <project>/.spec-context/specs/<spec>/tasks.md. Call before compile_prompt and \
                ingest_output; answers the run id (default <spec>:<task>).",
            input_schema: object::<InitRunRequest>(),
        },
        Action {
            name: "compile_prompt",
            description: "Compile the next dispatch prompt of a run, ledger-first: a stable \
                prefix per role, the delta of the task ledger, the facts earlier tasks \
                established that matter to this one ([Session Context]) and the task prompt, \
                within the role's token budget.",
            input_schema: object::<CompilePromptRequest>(),
        },
        Action {
            name: "ingest_output",
            description: "Ingest an agent's raw output: exactly one BEGIN_DISPATCH_RESULT ... \
                END_DISPATCH_RESULT block, checked against the role's schema; its facts go into \
                the spec's store (newer facts invalidate older ones), the task ledger is \
                updated, and the next action is answered.",
            input_schema: object::<IngestOutputRequest>(),
        },
        Action {
            name: "get_snapshot",
            description: "The task ledger of a run: revision, status, facts and their history.",
            input_schema: object::<RunRef>(),
        },
        Action {
            name: "query_facts",
            description: "Retrieve the facts of a spec's store that matter to a task \
                description, ranked, within a token budget, with the rendered \
                [Session Context] section.",
            input_schema: object::<QueryFacts>(),
        },
        Action {
            name: "fact_history",
            description: "Every version of a subject's facts in a spec's store, valid and \
                invalidated, oldest first.",
            input_schema: object::<FactHistory>(),
        },
        Action {
            name: "get_telemetry",
            description: "Counters of this server's session: dispatches, prompt tokens against \
                a full replay, injected against observed tokens, schema errors, facts stored.",
            input_schema: object::<NoFields>(),
        },
    ]
}

#[cfg(feature = "schema")]
mod schema {
    use serde_json::{Map, Value};

    /// The schema of `T` as a JSON object, without the `$schema`, `title` and top-level
    /// `description` keys: the action's own description says what it does.
    pub(super) fn object<T: schemars::JsonSchema>() -> Map<String, Value> {
        let mut schema = match schemars::schema_for!(T).to_value() {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        schema.remove("$schema");
        schema.remove("title");
        schema.remove("description");
        schema
    }

    /// Optional tags: an array of the closed tag vocabulary.
    pub(super) fn tags(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = fact_model::Tag::ALL.iter().map(|t| t.as_str()).collect();
        schemars::json_schema!({
            "type": ["array", "null"],
            "items": {"type": "string", "enum": names},
        })
    }
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
        "get_telemetry" => parse::<NoFields>(request).map(|_| success(json!({"telemetry": runtime.telemetry()}))),
        "query_facts" => parse::<QueryFacts>(request).and_then(|q| {
            let mut query = fact_retrieve::FactQuery::new(q.task_id, q.task_description);
            query.tags = q.tags;
            query.max_facts = q.max_facts.unwrap_or(query.max_facts);
            query.max_tokens = q.max_tokens.unwrap_or(query.max_tokens);
            let found = runtime.query_facts(&q.spec_name, &query).map_err(|e| error(e.code(), e.to_string()))?;
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
            Ok(success(json!({"facts": facts, "session_context": found.section, "tokens": found.tokens_used})))
        }),
        "fact_history" => parse::<FactHistory>(request).and_then(|h| {
            let facts = runtime.fact_history(&h.spec_name, &h.subject).map_err(|e| error(e.code(), e.to_string()))?;
            Ok(success(json!({"facts": facts})))
        }),
        other => Err(error("unknown_action", format!("unknown action {other:?}"))),
    };
    answer.unwrap_or_else(|failure| failure)
}
