//! The MCP memory tools of `facts mcp --db`: `memory_add`, `memory_search`,
//! `memory_recall`, `memory_history`, `memory_delete` and `memory_archive`, over one scope
//! of the database.
//!
//! Each tool's arguments are a struct here whose JSON Schema is derived (schemars), so the
//! schema a client sees and what the server accepts cannot drift. Answers have the shape of
//! the protocol's: `{"ok": true, …}`, or `{"ok": false, "error": {"code", "message"}}` for
//! a tool error; each tool's `outputSchema` describes both (the shapes of `mem/view.rs`,
//! written out here; `tests/mcp.rs` checks every answer against them). The search, recall
//! and history tools are annotated read-only, `memory_delete` destructive.
//!
//! Whether recall is semantic is the service's business: a [`MemoryService`] given an
//! embedding model (`facts mcp --embedder DIR`, `MemoryService::with_embedder`) ranks
//! `memory_recall` by meaning as well as by words and embeds what `memory_add` and
//! `memory_archive` store; a model failure is then a tool error with the model's code
//! (`inference`). `memory_search` stays lexical: it searches for words.

use std::sync::Arc;

use dispatch_runtime::reexports::{Clock, Tag};
use dispatch_runtime::{MemoryError, MemoryService, NewMemory, protocol};
use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::Hints;
use crate::mem::{self, view};

/// The source recorded on facts added through MCP.
const MCP_SOURCE: &str = "mcp";
/// The default token budget of `memory_recall` (seed 002).
const DEFAULT_MAX_TOKENS: usize = 2000;
/// The default number of facts of `memory_search`, and of facts and episodes of
/// `memory_recall`.
const DEFAULT_LIMIT: usize = 10;
/// The default time a model command may take, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// `memory_add`: a fact to remember.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Add {
    /// What the fact is about: `user`, `project:rlm`.
    subject: String,
    /// A specific predicate, such as `prefers_test_framework`: a newer fact with the same
    /// subject and relation supersedes the older one.
    relation: String,
    /// The value: `pytest`.
    object: String,
    /// One sentence stating the fact: `User prefers pytest over unittest`.
    #[serde(default)]
    statement: Option<String>,
    /// The category (default `knowledge`).
    #[serde(default)]
    #[schemars(schema_with = "category")]
    category: Option<Tag>,
    /// How sure, from 0 to 1 (default 1).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    confidence: Option<f64>,
}

/// `memory_search`: words to search the current facts for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    /// The words to search for.
    query: String,
    /// At most this many facts (default 10).
    #[serde(default)]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

/// `memory_recall`: a question to recall facts and episodes for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Recall {
    /// The question or topic.
    query: String,
    /// The most tokens the recalled text may cost (default 2000).
    #[serde(default)]
    max_tokens: Option<usize>,
    /// At most this many facts, and this many episodes (default 10).
    #[serde(default)]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

/// `memory_history`: a subject whose facts to trace.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct History {
    /// The subject: `user`.
    subject: String,
}

/// `memory_delete`: a fact to forget.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Delete {
    /// The fact's id: 16 hex digits, as `memory_add` and `memory_search` answer it.
    id: String,
}

/// `memory_archive`: a conversation to archive.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Archive {
    /// The conversation: JSON Lines of `{"role": "user"|"assistant"|"system"|"tool",
    /// "content": "..."}`.
    transcript: String,
    /// The episode's title (default: the first user message).
    #[serde(default)]
    title: Option<String>,
    /// A shell command line that answers an extraction prompt on stdin with JSON on
    /// stdout; accepted only when the server was started with `--allow-llm-cmd`. Without
    /// it, the conversation is archived without facts (`facts mem backfill` extracts
    /// them later).
    #[serde(default)]
    llm_cmd: Option<String>,
    /// How long the command may take per call, in seconds (default 120).
    #[serde(default)]
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
}

/// The closed category vocabulary, as an optional string.
fn category(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Tag::ALL.iter().map(|t| t.as_str()).collect();
    schemars::json_schema!({"type": "string", "enum": names})
}

/// The schema of `T` as a JSON object, without the `$schema`, `title` and top-level
/// `description` keys: the tool's own description says what it does.
fn object<T: JsonSchema>() -> Map<String, Value> {
    let mut schema = match schemars::schema_for!(T).to_value() {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    for key in ["$schema", "title", "description"] {
        schema.remove(key);
    }
    schema
}

/// The schema of a memory tool's answer: `ok`, the `error` of a failure, and the success's
/// `fields` (none required but `ok`, since a failure carries only `ok` and `error`), in the
/// protocol's envelope.
fn response(fields: Value) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert(
        "ok".into(),
        json!({"type": "boolean", "description": "Whether the call succeeded."}),
    );
    properties.insert(
        "error".into(),
        json!({
            "type": "object",
            "description": "Why the call failed (with \"ok\": false).",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"]
        }),
    );
    if let Value::Object(fields) = fields {
        properties.extend(fields);
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(["ok"]));
    schema
}

/// A stored fact, as `facts mem --json` shows it (fact-model's wire form).
fn fact_schema() -> Value {
    let text = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "id": text,
            "subject": text,
            "relation": text,
            "object": text,
            "statement": text,
            "tags": {"type": "array", "items": text, "description": "The category first."},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "source_task_id": text,
            "source_role": text,
            "valid_from": text,
            "valid_to": {"type": ["string", "null"], "description": "null while current."},
            "superseded_by": {"type": "string",
                "description": "The fact that superseded this version, if one did."}
        },
        "required": ["subject", "relation", "object", "tags", "valid_from", "valid_to",
            "source_task_id", "source_role", "confidence"]
    })
}

/// A fact with its search score.
fn scored_schema() -> Value {
    json!({
        "type": "array",
        "description": "Facts with their scores, best first.",
        "items": {
            "type": "object",
            "properties": {"score": {"type": "number"}, "fact": fact_schema()},
            "required": ["score", "fact"]
        }
    })
}

/// The output schema of each memory tool (the shapes of `mem/view.rs`).
fn output_schema(name: &str) -> Map<String, Value> {
    let ids = json!({"type": "array", "items": {"type": "string"}});
    let fields = match name {
        "memory_add" => json!({
            "status": {"type": "string", "enum": ["added", "already_current",
                "arrived_superseded", "duplicate", "skipped"]},
            "id": {"type": "string", "description": "The offered fact's id."},
            "existing_id": {"type": ["string", "null"],
                "description": "For a duplicate: the current fact that holds the statement."},
            "superseded": ids,
            "fact": fact_schema(),
        }),
        "memory_search" => json!({
            "query": {"type": "string"},
            "results": scored_schema(),
        }),
        "memory_recall" => json!({
            "query": {"type": "string"},
            "text": {"type": "string", "description": "`## Relevant Facts` and `## Related \
                Episodes`, empty when nothing matched."},
            "tokens": {"type": "integer", "minimum": 0},
            "facts": scored_schema(),
            "episodes": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "summary": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "created_at": {"type": "string"},
                    "extracted_at": {"type": ["string", "null"]}
                },
                "required": ["id", "title", "summary", "tags", "created_at"]
            }},
        }),
        "memory_history" => json!({
            "subject": {"type": "string"},
            "versions": {"type": "array", "items": fact_schema(),
                "description": "Every version, oldest first."},
        }),
        "memory_delete" => json!({
            "deleted": {"type": "string", "description": "The deleted fact's id."},
            "versions": {"type": "integer", "minimum": 0,
                "description": "How many versions were deleted."},
        }),
        "memory_archive" => json!({
            "episode_id": {"type": "string"},
            "title": {"type": "string"},
            "messages": {"type": "integer", "minimum": 0},
            "facts": {"type": ["object", "null"], "description": "What the store did with \
                the extracted facts (added, refreshed, invalidated, arrived_superseded, \
                skipped, compaction); null when no model command ran."},
            "diagnostics": {"type": "array", "items": {"type": "string"}},
        }),
        _ => json!({}),
    };
    response(fields)
}

/// The memory tools, in the order `tools/list` shows them.
pub(crate) fn tools() -> Vec<Tool> {
    let tool = |name: &'static str, description: &'static str, input, read_only, hints: Hints| {
        let tool = Tool::new(name, description, input)
            .with_raw_output_schema(Arc::new(output_schema(name)));
        hints.apply(tool, read_only)
    };
    let hints = |title, destructive, idempotent, open_world| Hints {
        title,
        destructive,
        idempotent,
        open_world,
    };
    vec![
        tool(
            "memory_add",
            "Remember a fact about the user or a project: a (subject, relation, object) triple \
             with an optional one-sentence statement. A current fact with the same subject and \
             relation is superseded (history keeps it), so choose a specific relation such as \
             prefers_test_framework. A fact whose statement a current fact already holds is \
             skipped as a duplicate.",
            object::<Add>(),
            false,
            // Supersedes, never deletes; the same fact again is already current.
            hints("Remember a fact", false, true, false),
        ),
        tool(
            "memory_search",
            "Search the current (not superseded) memory facts for words, best first.",
            object::<Search>(),
            true,
            hints("Search memory", false, true, false),
        ),
        tool(
            "memory_recall",
            "Recall what memory holds about a question: the relevant current facts and the \
             archived conversations that match, as `## Relevant Facts` and `## Related \
             Episodes` text within a token budget, ready for a prompt.",
            object::<Recall>(),
            true,
            hints("Recall from memory", false, true, false),
        ),
        tool(
            "memory_history",
            "Every version of the memory facts about a subject, oldest first; a superseded \
             version carries valid_to and superseded_by.",
            object::<History>(),
            true,
            hints("Show a subject's memory history", false, true, false),
        ),
        tool(
            "memory_delete",
            "Delete every version of a memory fact, by its id.",
            object::<Delete>(),
            false,
            // Gone with its history; deleting it again changes nothing (`not_found`).
            hints("Forget a fact", true, true, false),
        ),
        tool(
            "memory_archive",
            "Archive a conversation as an episode that memory_recall finds later. Its facts \
             are extracted by the model command llm_cmd, which this server accepts only when \
             it was started with --allow-llm-cmd; without llm_cmd the conversation is \
             archived without facts.",
            object::<Archive>(),
            false,
            // llm_cmd runs a command, which may ask a model anywhere.
            hints("Archive a conversation", false, false, true),
        ),
    ]
}

/// The memory tools' state: one scope's memory, and whether clients may name a command.
#[derive(Debug)]
pub(crate) struct Memory {
    service: MemoryService,
    clock: Arc<dyn Clock>,
    allow_llm_cmd: bool,
}

impl Memory {
    /// Tools over `service`; `memory_archive` runs a client's `llm_cmd` only when
    /// `allow_llm_cmd` is set.
    pub(crate) fn new(service: MemoryService, clock: Arc<dyn Clock>, allow_llm_cmd: bool) -> Self {
        Memory {
            service,
            clock,
            allow_llm_cmd,
        }
    }

    /// Whether recall ranks by meaning too (the service has an embedding model).
    pub(crate) fn semantic(&self) -> bool {
        self.service.hybrid().is_some()
    }

    /// Answers a memory tool call; `None` when `name` is not a memory tool.
    pub(crate) fn call(&self, name: &str, arguments: Map<String, Value>) -> Option<Value> {
        let arguments = Value::Object(arguments);
        let answer = match name {
            "memory_add" => parse(arguments).and_then(|a| self.add(a)),
            "memory_search" => parse(arguments).map(|a| self.search(a)),
            "memory_recall" => parse(arguments).and_then(|a| self.recall(a)),
            "memory_history" => parse(arguments)
                .map(|a: History| view::history(&a.subject, &self.service.history(&a.subject))),
            "memory_delete" => parse(arguments).and_then(|a: Delete| {
                let versions = self.service.delete(&a.id).map_err(failed)?;
                Ok(json!({"deleted": a.id.trim(), "versions": versions}))
            }),
            "memory_archive" => parse(arguments).and_then(|a| self.archive(a)),
            _ => return None,
        };
        Some(match answer {
            Ok(body) => ok(body),
            Err(error) => error,
        })
    }

    fn add(&self, add: Add) -> Result<Value, Value> {
        let mut new = NewMemory::new(add.subject, add.relation, add.object);
        new.statement = add.statement;
        new.category = add.category.unwrap_or(Tag::Knowledge);
        new.confidence = add.confidence.unwrap_or(1.0);
        MCP_SOURCE.clone_into(&mut new.source);
        self.service.add(new).map(|o| view::add(&o)).map_err(failed)
    }

    fn search(&self, search: Search) -> Value {
        let found = self
            .service
            .search(&search.query, search.limit.unwrap_or(DEFAULT_LIMIT));
        json!({"query": search.query, "results": view::scored(&found)})
    }

    fn recall(&self, recall: Recall) -> Result<Value, Value> {
        let found = self
            .service
            .recall(
                &recall.query,
                recall.limit.unwrap_or(DEFAULT_LIMIT),
                recall.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            )
            .map_err(failed)?;
        Ok(view::recall(&recall.query, &found))
    }

    fn archive(&self, archive: Archive) -> Result<Value, Value> {
        let extractor = match archive.llm_cmd {
            Some(_) if !self.allow_llm_cmd => {
                return Err(protocol::error(
                    "llm_cmd_not_allowed",
                    "this server runs no command a client names: start it with \
                     --allow-llm-cmd to accept llm_cmd, or archive without llm_cmd and \
                     extract later with `facts mem backfill --llm-cmd CMD`",
                ));
            }
            Some(cmd) => Some(mem::extractor(
                cmd,
                archive.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
                self.clock.clone(),
            )),
            None => None,
        };
        let report = self
            .service
            .archive(
                &archive.transcript,
                archive.title.as_deref(),
                extractor.as_ref().map(|e| e as _),
            )
            .map_err(failed)?;
        Ok(json!(report))
    }
}

/// The arguments of a call, or an `invalid_request` tool error.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, Value> {
    serde_json::from_value(arguments)
        .map_err(|e| protocol::error(protocol::code::INVALID_REQUEST, e.to_string()))
}

/// `{"ok": true}` merged with `body`'s fields.
fn ok(body: Value) -> Value {
    let mut object = Map::new();
    object.insert("ok".into(), Value::Bool(true));
    if let Value::Object(fields) = body {
        object.extend(fields);
    }
    Value::Object(object)
}

/// A memory error as a tool error carrying its code.
fn failed(error: MemoryError) -> Value {
    protocol::error(error.code(), error.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn every_memory_tool_has_an_object_schema_that_names_its_required_fields() {
        let tools = tools();
        let required = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            assert_eq!(tool.input_schema["type"], "object", "{name}");
            assert_eq!(tool.input_schema["additionalProperties"], false, "{name}");
            tool.input_schema["required"].clone()
        };
        assert_eq!(
            required("memory_add"),
            json!(["subject", "relation", "object"])
        );
        assert_eq!(required("memory_search"), json!(["query"]));
        assert_eq!(required("memory_recall"), json!(["query"]));
        assert_eq!(required("memory_history"), json!(["subject"]));
        assert_eq!(required("memory_delete"), json!(["id"]));
        assert_eq!(required("memory_archive"), json!(["transcript"]));
        let add = &tools[0].input_schema;
        assert_eq!(add["properties"]["category"]["enum"][0], "file_change");
        assert_eq!(add["properties"]["confidence"]["maximum"], 1.0);
    }

    #[test]
    fn every_memory_tool_has_an_output_schema_and_annotations() {
        let mut read_only = Vec::new();
        for tool in tools() {
            let output = tool.output_schema.as_deref().unwrap();
            assert_eq!(output["type"], "object", "{}", tool.name);
            assert_eq!(output["required"], json!(["ok"]), "{}", tool.name);
            // Every tool names its success fields beside the envelope's `ok` and `error`.
            assert!(
                output["properties"].as_object().unwrap().len() > 2,
                "{}",
                tool.name
            );
            let annotations = tool.annotations.as_ref().unwrap();
            assert!(tool.title.as_deref().is_some_and(|t| t.contains(' ')));
            assert_eq!(annotations.title, tool.title);
            if annotations.read_only_hint == Some(true) {
                read_only.push(tool.name.to_string());
            }
            let destructive = annotations.destructive_hint == Some(true);
            assert_eq!(destructive, tool.name == "memory_delete", "{}", tool.name);
            let open_world = annotations.open_world_hint == Some(true);
            assert_eq!(open_world, tool.name == "memory_archive", "{}", tool.name);
        }
        assert_eq!(
            read_only,
            ["memory_search", "memory_recall", "memory_history"]
        );
    }
}
