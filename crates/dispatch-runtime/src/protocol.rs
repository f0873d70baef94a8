//! The JSON protocol: one request object in, one response object out. The same JSON serves
//! `facts replay` (one request per line, [`handle_line`]) and `facts mcp` (one tool per
//! action, [`handle`]). The request and response types themselves live with the runtime
//! (`InitRunRequest`, …); this module holds what only the wire needs: the action names, the
//! envelope, the error codes of the envelope, and the schemas.
//!
//! A request is `{"action": NAME, …fields}` with the fields of the action's request type
//! and an optional `id` of any JSON type, echoed in the response; a field the action does
//! not know is an `invalid_request` naming it. A success is `{"ok": true, …fields}`, a
//! failure `{"ok": false, "error": {"code", "message"}}`. Actions: `init_run`,
//! `ingest_output`, `compile_prompt`, `set_task_status`, `end_run`, `get_snapshot`,
//! `get_telemetry`, `query_facts`, `fact_history`. [`error_codes`] lists every code a response can carry.
//! With the `schema` feature, `actions()` describes each action with the JSON Schemas of its
//! request and response. The reference for people is `docs/protocol.md`.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
    SetTaskStatusRequest,
};

/// The error codes of the envelope itself; the runtime's, the contract's and the store's
/// codes come from their error types ([`error_codes`] lists them all).
pub mod code {
    /// A script line that is not JSON (or not UTF-8).
    pub const INVALID_JSON: &str = "invalid_json";
    /// A script line longer than the front end's limit (`facts replay --max-request-bytes`,
    /// 16 MiB by default); it is skipped without being held in memory.
    pub const LINE_TOO_LONG: &str = "line_too_long";
    /// A request that is not an object, has no `action` string, or whose fields do not fit
    /// the action (missing, mistyped or unknown).
    pub const INVALID_REQUEST: &str = "invalid_request";
    /// An `action` the protocol does not have.
    pub const UNKNOWN_ACTION: &str = "unknown_action";
    /// A response that could not be serialized (a bug; please report it).
    pub const INTERNAL_ERROR: &str = "internal_error";
    /// A call the caller may not make: `facts mcp --tokens` answers it to a tenant whose
    /// token lacks the tool's right, or that names a `project_path` outside its project.
    pub const FORBIDDEN: &str = "forbidden";

    /// The envelope's codes.
    pub const ALL: &[&str] = &[
        INVALID_JSON,
        LINE_TOO_LONG,
        INVALID_REQUEST,
        UNKNOWN_ACTION,
        INTERNAL_ERROR,
        FORBIDDEN,
    ];
}

/// Every error code a response can carry: the envelope's ([`code`]), the runtime's (the
/// store's `store_*` codes included, [`RuntimeError::CODES`](crate::RuntimeError::CODES))
/// and the result contract's ([`ContractError::CODES`](crate::ContractError::CODES)).
///
/// ```
/// let codes = dispatch_runtime::protocol::error_codes();
/// assert!(codes.contains(&"invalid_request"));
/// assert!(codes.contains(&"task_not_found"));
/// assert!(codes.contains(&"marker_missing"));
/// ```
#[must_use]
pub fn error_codes() -> Vec<&'static str> {
    let mut codes = code::ALL.to_vec();
    codes.extend(crate::RuntimeError::CODES.iter().map(|(code, _)| *code));
    codes.extend(crate::ContractError::CODES);
    codes
}

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
        Err(e) => return error(code::INTERNAL_ERROR, e.to_string()),
    }
    Value::Object(object)
}

/// The action's fields (the request without `action` and `id`) as its request type.
fn parse<T: DeserializeOwned>(fields: Value) -> Result<T, Value> {
    serde_json::from_value(fields).map_err(|e| error(code::INVALID_REQUEST, e.to_string()))
}

/// Whether an answer is a success (`"ok": true`).
#[must_use]
pub fn is_success(answer: &Value) -> bool {
    answer.get("ok") == Some(&Value::Bool(true))
}

/// The error code of an answer that failed (`None` for a success); a failure without a
/// code, which no answer of this crate is, counts as `internal_error`.
#[must_use]
pub fn error_code(answer: &Value) -> Option<&str> {
    if is_success(answer) {
        return None;
    }
    let code = answer
        .get("error")
        .and_then(|error| error.get("code"))
        .and_then(Value::as_str);
    Some(code.unwrap_or(code::INTERNAL_ERROR))
}

/// The prefix of the protocol's codes of a store's failures (`store_io`, `store_busy`, …):
/// [`RuntimeError::Store`](crate::RuntimeError::Store)'s code is it and the store's code.
const STORE_PREFIX: &str = "store_";

/// The codes the memory tools answer when the store itself failed (it could not read or
/// write), rather than the request: the store's own codes, without [`STORE_PREFIX`].
const STORE_FAILURES: [&str; 5] = ["io", "busy", "corrupt", "newer_schema", "backend"];

/// The store's own code (`io`, `busy`, `corrupt`, …) when an answer's error `code` says a
/// store failed: a protocol action's `store_*` code, or a memory tool's code of a store that
/// could not read or write. `None` for every other code, among them a memory tool's
/// `not_found` (an id the caller got wrong).
///
/// ```
/// use dispatch_runtime::protocol::store_failure;
/// assert_eq!(store_failure("store_busy"), Some("busy"));
/// assert_eq!(store_failure("corrupt"), Some("corrupt"));
/// assert_eq!(store_failure("not_found"), None);
/// assert_eq!(store_failure("invalid_request"), None);
/// ```
#[must_use]
pub fn store_failure(code: &str) -> Option<&str> {
    match code.strip_prefix(STORE_PREFIX) {
        Some(store) => Some(store),
        None => STORE_FAILURES.contains(&code).then_some(code),
    }
}

/// `get_snapshot` and `end_run`: a run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RunRef {
    /// The run.
    run_id: String,
}

/// `get_telemetry`: takes no fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NoFields {}

/// `query_facts`: what the retriever would give a task, for inspection.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
#[non_exhaustive]
pub struct Action {
    /// The action's name, the `action` field of a request.
    pub name: &'static str,
    /// What the action does, for the agent choosing a tool.
    pub description: &'static str,
    /// The JSON Schema of the request's fields (without `action` and `id`), an object
    /// schema.
    pub input_schema: Map<String, Value>,
    /// The JSON Schema of a response: `ok`, the optional `id` and `error`, and the
    /// success's fields (none of which is required, since a failure carries only `ok` and
    /// `error`).
    pub output_schema: Map<String, Value>,
    /// Whether the action only reads: it changes no store, ledger, file or counter a later
    /// request could see (MCP clients may run such tools without asking).
    pub read_only: bool,
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
    use schema::{object, response};
    vec![
        Action {
            name: "init_run",
            description: "Bind a run to a spec's task and load the spec's progress ledger from \
                <project>/.spec-context/specs/<spec>/tasks.md. Call before compile_prompt and \
                ingest_output; answers the run id (default <spec>:<task>).",
            input_schema: object::<InitRunRequest>(),
            output_schema: response::<crate::InitRunResponse>(),
            read_only: false,
        },
        Action {
            name: "compile_prompt",
            description: "Compile the next dispatch prompt of a run, ledger-first: a stable \
                prefix per role, the delta of the task ledger, the facts earlier tasks \
                established that matter to this one ([Session Context]) and the task prompt, \
                within the role's token budget.",
            input_schema: object::<CompilePromptRequest>(),
            output_schema: response::<crate::CompilePromptResponse>(),
            read_only: false,
        },
        Action {
            name: "ingest_output",
            description: "Ingest an agent's raw output: exactly one BEGIN_DISPATCH_RESULT ... \
                END_DISPATCH_RESULT block, checked against the role's schema; its facts go into \
                the spec's store (newer facts invalidate older ones), the task ledger is \
                updated, and the next action is answered.",
            input_schema: object::<IngestOutputRequest>(),
            output_schema: response::<crate::IngestOutputResponse>(),
            read_only: false,
        },
        Action {
            name: "set_task_status",
            description: "Mark a task of a spec pending, in_progress or completed: rewrites \
                that task's checkbox in tasks.md in place and atomically, leaving every other \
                byte as it was, and answers the spec's active task and totals afterwards. The \
                runtime never moves the active task by itself: call this (or edit tasks.md) \
                after advance_to_next_task.",
            input_schema: object::<SetTaskStatusRequest>(),
            output_schema: response::<crate::SetTaskStatusResponse>(),
            read_only: false,
        },
        Action {
            name: "end_run",
            description: "End a run when its task is done: the runtime drops the run and its \
                task ledger (the spec's facts stay), and answers the ledger's last revision and \
                status. A later request naming the run is run_not_initialized, until init_run \
                starts it again.",
            input_schema: object::<RunRef>(),
            output_schema: response::<crate::EndRunResponse>(),
            read_only: false,
        },
        Action {
            name: "get_snapshot",
            description: "The task ledger of a run: revision, status, facts and their history.",
            input_schema: object::<RunRef>(),
            output_schema: response::<SnapshotResponse>(),
            read_only: true,
        },
        Action {
            name: "query_facts",
            description: "Retrieve the facts of a spec's store that matter to a task \
                description, ranked, within a token budget, with the rendered \
                [Session Context] section.",
            input_schema: object::<QueryFacts>(),
            output_schema: response::<QueryFactsResponse>(),
            read_only: true,
        },
        Action {
            name: "fact_history",
            description: "Every version of a subject's facts in a spec's store, valid and \
                invalidated, oldest first.",
            input_schema: object::<FactHistory>(),
            output_schema: response::<FactHistoryResponse>(),
            read_only: true,
        },
        Action {
            name: "get_telemetry",
            description: "Counters of this server's session: dispatches, prompt tokens against \
                a full replay, injected against observed tokens, schema errors, facts stored.",
            input_schema: object::<NoFields>(),
            output_schema: response::<TelemetryResponse>(),
            read_only: true,
        },
    ]
}

/// A field holding an array of objects whose types live in crates without schemas.
#[cfg(feature = "schema")]
pub(crate) fn object_array(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "items": {"type": "object"}})
}

/// A task status, as the protocol spells it.
#[cfg(feature = "schema")]
pub(crate) fn task_status(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = ledger::TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
    schemars::json_schema!({"type": "string", "enum": names})
}

/// A dispatch agent's role: the two [`SourceRole`](fact_model::SourceRole)s that are dispatched.
#[cfg(feature = "schema")]
pub(crate) fn dispatch_role(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["implementer", "reviewer"]
    })
}

/// A spec's task totals.
#[cfg(feature = "schema")]
pub(crate) fn totals(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "properties": {
            "total": {"type": "integer"},
            "completed": {"type": "integer"},
            "in_progress": {"type": "integer"},
            "pending": {"type": "integer"}
        }
    })
}

/// The success of `get_snapshot`.
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct SnapshotResponse {
    /// The run's task ledger.
    snapshot: crate::Snapshot,
}

/// The success of `get_telemetry`.
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct TelemetryResponse {
    /// The counters.
    telemetry: crate::Telemetry,
}

/// The success of `query_facts`.
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct QueryFactsResponse {
    /// The facts, best first, each with its `score`.
    #[schemars(schema_with = "object_array")]
    facts: Vec<Value>,
    /// The rendered `[Session Context]` section, empty when no fact qualified.
    session_context: String,
    /// What the section costs.
    tokens: usize,
    /// Why the answer may be empty (a spec this server does not know).
    warnings: Vec<String>,
}

/// The success of `fact_history`.
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct FactHistoryResponse {
    /// Every version, oldest first.
    #[schemars(schema_with = "object_array")]
    facts: Vec<Value>,
    /// Why the answer may be empty (a spec this server does not know).
    warnings: Vec<String>,
}

#[cfg(feature = "schema")]
pub(crate) mod schema {
    use serde_json::{Map, Value};

    /// The schema of a response whose success fields are `T`'s: the envelope's `ok`, `id`
    /// and `error` added, and nothing required but `ok`.
    pub(super) fn response<T: schemars::JsonSchema>() -> Map<String, Value> {
        let mut schema = object::<T>();
        schema.remove("required");
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert(
                "ok".into(),
                serde_json::json!({"type": "boolean", "description": "Whether the request succeeded."}),
            );
            properties.insert(
                "id".into(),
                serde_json::json!({"description": "The request's `id`, echoed when it had one."}),
            );
            properties.insert(
                "error".into(),
                serde_json::json!({
                    "type": "object",
                    "description": "Why the request failed (with \"ok\": false).",
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "line": {"type": "integer", "description": "The script line (facts replay)."}
                    },
                    "required": ["code", "message"]
                }),
            );
        }
        schema.insert("required".into(), serde_json::json!(["ok"]));
        schema
    }

    /// The schema of `T` as a JSON object, without the `$schema`, `title` and top-level
    /// `description` keys: the action's own description says what it does.
    pub(crate) fn object<T: schemars::JsonSchema>() -> Map<String, Value> {
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
    let Some(object) = request.as_object() else {
        return error(code::INVALID_REQUEST, "a request is a JSON object");
    };
    let mut answer = answer(runtime, object);
    if let (Some(id), Some(fields)) = (object.get("id"), answer.as_object_mut()) {
        fields.insert("id".into(), id.clone());
    }
    answer
}

/// Answers one line of a JSON-lines script: `None` for a blank line or a `#` comment, which
/// get no response; a line that is not UTF-8 or not JSON is an `invalid_json` failure.
///
/// ```
/// use dispatch_runtime::{DispatchRuntimeManager, protocol};
///
/// let runtime = DispatchRuntimeManager::builder().build();
/// assert!(protocol::handle_line(&runtime, b"  # a comment").is_none());
/// assert!(protocol::handle_line(&runtime, b"").is_none());
/// let answer = protocol::handle_line(&runtime, br#"{"action": "get_telemetry", "id": 7}"#).unwrap();
/// assert!(protocol::is_success(&answer));
/// assert_eq!(answer["id"], 7);
/// assert_eq!(protocol::handle_line(&runtime, b"{oops")
///     .unwrap()["error"]["code"], "invalid_json");
/// ```
#[must_use]
pub fn handle_line(runtime: &DispatchRuntimeManager, line: &[u8]) -> Option<Value> {
    let line = line.trim_ascii();
    if line.is_empty() || line.starts_with(b"#") {
        return None;
    }
    // JSON is UTF-8: a line that is not is a failed request, not the end of the script.
    let parsed = std::str::from_utf8(line)
        .map_err(|e| format!("not UTF-8: {e}"))
        .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| e.to_string()));
    Some(match parsed {
        Ok(request) => handle(runtime, &request),
        Err(message) => error(code::INVALID_JSON, message),
    })
}

/// A warning when a query names a spec the runtime does not know, whose answer is empty
/// because of a typo rather than because nothing was learned.
fn spec_warnings(runtime: &DispatchRuntimeManager, spec_name: &str) -> Result<Vec<String>, Value> {
    let known = runtime
        .knows_spec(spec_name)
        .map_err(|e| error(e.code(), e.to_string()))?;
    Ok(if known {
        Vec::new()
    } else {
        vec![format!(
            "no run of spec {spec_name:?} was initialized and its store holds no facts; \
             check the name"
        )]
    })
}

fn answer(runtime: &DispatchRuntimeManager, object: &Map<String, Value>) -> Value {
    let Some(action) = object.get("action").and_then(Value::as_str) else {
        return error(
            code::INVALID_REQUEST,
            "a request needs an \"action\" string",
        );
    };
    let mut fields = object.clone();
    fields.remove("action");
    fields.remove("id");
    let request = Value::Object(fields);
    let answer = match action {
        "init_run" => parse::<InitRunRequest>(request).and_then(|r| {
            runtime
                .init_run(r)
                .map(success)
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        // A contract error is a failed request that still says what to do next.
        "ingest_output" => parse::<IngestOutputRequest>(request).and_then(|r| {
            let response = runtime
                .ingest_output(r)
                .map_err(|e| error(e.code(), e.to_string()))?;
            let failed = response.error.is_some();
            let mut answer = success(response);
            if failed && let Some(object) = answer.as_object_mut() {
                object.insert("ok".into(), Value::Bool(false));
            }
            Ok(answer)
        }),
        "compile_prompt" => parse::<CompilePromptRequest>(request).and_then(|r| {
            runtime
                .compile_prompt(r)
                .map(success)
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        "set_task_status" => parse::<SetTaskStatusRequest>(request).and_then(|r| {
            runtime
                .set_task_status(r)
                .map(success)
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        "end_run" => parse::<RunRef>(request).and_then(|r| {
            runtime
                .end_run(&r.run_id)
                .map(success)
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        "get_snapshot" => parse::<RunRef>(request).and_then(|r| {
            runtime
                .get_snapshot(&r.run_id)
                .map(|s| success(json!({"snapshot": s})))
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        "get_telemetry" => parse::<NoFields>(request).and_then(|_| {
            runtime
                .telemetry()
                .map(|telemetry| success(json!({ "telemetry": telemetry })))
                .map_err(|e| error(e.code(), e.to_string()))
        }),
        "query_facts" => parse::<QueryFacts>(request).and_then(|q| {
            let mut query = fact_retrieve::FactQuery::new(q.task_id, q.task_description);
            query.tags = q.tags;
            query.max_facts = q.max_facts.unwrap_or(query.max_facts);
            query.max_tokens = q.max_tokens.unwrap_or(query.max_tokens);
            let warnings = spec_warnings(runtime, &q.spec_name)?;
            let found = runtime
                .query_facts(&q.spec_name, &query)
                .map_err(|e| error(e.code(), e.to_string()))?;
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
            Ok(success(json!({
                "facts": facts,
                "session_context": found.section,
                "tokens": found.tokens_used,
                "warnings": warnings,
            })))
        }),
        "fact_history" => parse::<FactHistory>(request).and_then(|h| {
            let warnings = spec_warnings(runtime, &h.spec_name)?;
            let facts = runtime
                .fact_history(&h.spec_name, &h.subject)
                .map_err(|e| error(e.code(), e.to_string()))?;
            Ok(success(json!({"facts": facts, "warnings": warnings})))
        }),
        other => Err(error(
            code::UNKNOWN_ACTION,
            format!("unknown action {other:?}"),
        )),
    };
    answer.unwrap_or_else(|failure| failure)
}
