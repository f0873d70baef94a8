//! The memory tools described for tool lists (MCP `tools/list`): [`tools`], each with the
//! JSON Schema of its arguments (derived from the request types, so what a client sees
//! and what [`handle`](super::handle) accepts cannot drift) and of its answer (written
//! here; `facts`' tests check every answer against it).

use fact_model::ProfileField;
use serde_json::{Map, Value, json};

use super::requests::{
    Add, AddMany, Archive, Backfill, ById, EraseScope, Export, Forget, Format, History, List,
    NeighboursArgs, NoArgs, RecallArgs, Search, SearchMany, SetAlias, SetContext, Unalias, Update,
};
use crate::protocol::schema::object;

/// One memory tool, described for tool lists.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MemoryTool {
    /// The tool's name.
    pub name: &'static str,
    /// A short human title.
    pub title: &'static str,
    /// What it does, for the agent choosing a tool.
    pub description: &'static str,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Map<String, Value>,
    /// The JSON Schema of its answer: `ok`, the `error` of a failure, and the success's
    /// fields (none required but `ok`).
    pub output_schema: Map<String, Value>,
    /// It changes nothing.
    pub read_only: bool,
    /// It may delete what cannot be recovered.
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// It may reach beyond the memory (a model command).
    pub open_world: bool,
}

/// The schema of an answer: the envelope's `ok` and `error`, and the success's fields.
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

/// A stored fact (fact-model's wire form).
fn fact() -> Value {
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
            "valid_from": {"type": "string", "description": "When it became true."},
            "valid_to": {"type": ["string", "null"], "description": "null while current."},
            "superseded_by": {"type": "string",
                "description": "The fact that superseded this version, if one did."},
            "recorded_at": {"type": "string",
                "description": "When memory recorded this version."}
        },
        "required": ["subject", "relation", "object", "tags", "valid_from", "valid_to",
            "source_task_id", "source_role", "confidence"]
    })
}

/// Facts with their scores.
fn scored() -> Value {
    json!({
        "type": "array",
        "description": "Facts with their scores, best first.",
        "items": {
            "type": "object",
            "properties": {"score": {"type": "number"}, "fact": fact()},
            "required": ["score", "fact"]
        }
    })
}

fn ids() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// What archiving a conversation answers (`ArchiveReport`).
fn archive_report() -> Value {
    let fields: Vec<&str> = ProfileField::ALL.iter().map(|f| f.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "episode_id": {"type": "string"},
            "title": {"type": "string"},
            "messages": {"type": "integer", "minimum": 0},
            "started_at": {"type": "string"},
            "changes": {
                "type": ["object", "null"],
                "description": "What the extraction changed; null when no model ran.",
                "properties": {
                    "added": ids(),
                    "refreshed": ids(),
                    "superseded": ids(),
                    "removed": ids(),
                    "arrived_superseded": ids(),
                    "skipped": {"type": "integer", "minimum": 0},
                    "aliases": {"type": "array", "items": {"type": "array",
                        "items": {"type": "string"}}},
                    "profile": {"type": "array", "items": {"type": "string", "enum": fields}}
                }
            },
            "diagnostics": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["episode_id", "title", "messages", "started_at", "diagnostics"]
    })
}

/// The output schema of each tool.
fn output(name: &str) -> Map<String, Value> {
    let profile_entry = json!({
        "type": "object",
        "properties": {
            "field": {"type": "string"},
            "text": {"type": "string"},
            "at": {"type": "string"}
        },
        "required": ["field", "text", "at"]
    });
    let texts = |names: &[&str]| -> Value {
        let mut properties = Map::new();
        for name in names {
            properties.insert((*name).to_owned(), json!({"type": "string"}));
        }
        json!({"type": "object", "properties": properties})
    };
    let alias = json!({
        "type": "object",
        "properties": {
            "alias": {"type": "string"},
            "entity": {"type": "string"},
            "at": {"type": "string"}
        },
        "required": ["alias", "entity", "at"]
    });
    // The fields of one `memory_add` answer.
    let added = || {
        json!({
            "status": {"type": "string", "enum": ["added", "already_current",
                "arrived_superseded", "duplicate", "skipped"]},
            "id": {"type": "string", "description": "The offered fact's id."},
            "existing_id": {"type": ["string", "null"],
                "description": "For a duplicate: the current fact that holds the statement."},
            "superseded": ids(),
            "fact": fact(),
        })
    };
    let fields = match name {
        "memory_add" => added(),
        "memory_add_many" => json!({
            "results": {"type": "array", "items": {
                "type": "object", "properties": added(),
                "required": ["status", "id", "existing_id", "superseded", "fact"]}},
        }),
        "memory_get" => json!({"fact": fact()}),
        "memory_list" => json!({
            "count": {"type": "integer", "minimum": 0},
            "facts": {"type": "array", "items": fact()},
        }),
        "memory_update" => json!({
            "fact": fact(),
            "superseded": {"type": ["string", "null"],
                "description": "The fact a new object superseded."},
        }),
        "memory_delete" => json!({
            "deleted": {"type": "string", "description": "The deleted fact's id."},
            "versions": {"type": "integer", "minimum": 0},
        }),
        "memory_search" => json!({
            "query": {"type": "string"},
            "results": scored(),
        }),
        "memory_search_many" => json!({
            "results": {"type": "array", "items": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "results": scored()},
                "required": ["query", "results"]}},
        }),
        "memory_recall" => json!({
            "query": {"type": "string"},
            "text": {"type": "string", "description": "`## Relevant Facts` and `## Related \
                Episodes` (with the messages that answered, dated), empty when nothing \
                matched."},
            "tokens": {"type": "integer", "minimum": 0},
            "facts": scored(),
            "episodes": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "at": {"type": "string"},
                    "summary": {"type": "string"},
                    "messages": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "turn": {"type": "integer", "minimum": 0},
                            "role": {"type": "string"},
                            "content": {"type": "string"},
                            "timestamp": {"type": ["string", "null"]},
                            "score": {"type": "number"}
                        },
                        "required": ["turn", "role", "content", "score"]
                    }}
                },
                "required": ["id", "title", "at", "summary", "messages"]
            }},
        }),
        "memory_history" => json!({
            "subject": {"type": "string"},
            "versions": {"type": "array", "items": fact(),
                "description": "Every version, by valid_from."},
        }),
        "memory_neighbours" => json!({
            "entity": {"type": "string"},
            "neighbours": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "depth": {"type": "integer", "description": "1 or 2."},
                    "path": {"type": "array", "items": {"type": "string"},
                        "description": "The entities walked from the one asked about."},
                    "via": {"type": ["string", "null"],
                        "description": "The depth-1 fact a depth-2 fact was reached through."},
                    "fact": fact(),
                },
                "required": ["depth", "path", "via", "fact"],
            }, "description": "Depth 1 first; within a depth, oldest first."},
        }),
        "memory_format" => json!({
            "text": {"type": "string", "description": "User Context:, History: and Facts:."},
        }),
        "memory_archive" => archive_report()
            .get("properties")
            .cloned()
            .unwrap_or_default(),
        "memory_backfill" => json!({
            "episodes": {"type": "array", "items": archive_report()},
        }),
        "memory_context" => json!({
            "user_context": texts(&["work", "personal", "top_of_mind"]),
            "history": texts(&["recent_months", "earlier_context", "long_term_background"]),
            "versions": {"type": "array", "items": profile_entry},
        }),
        "memory_set_context" => json!({
            "changed": {"type": "array", "items": {"type": "string"}},
        }),
        "memory_aliases" => json!({
            "aliases": {"type": "array", "items": alias},
        }),
        "memory_alias" => json!({
            "alias": {"type": "string"},
            "entity": {"type": "string"},
            "merged": ids(),
        }),
        "memory_unalias" => json!({
            "removed": {"type": "string"},
        }),
        "memory_forget" => json!({
            "episodes": ids(),
            "facts": ids(),
            "versions": {"type": "integer", "minimum": 0},
            "aliases": ids(),
        }),
        "memory_export" => json!({
            "lines": {"type": "string", "description": "The page's lines of the export, each ended by a newline: join the pages in order to get the file."},
            "offset": {"type": "integer", "minimum": 0},
            "next_offset": {"type": ["integer", "null"], "minimum": 0, "description": "The offset of the next page; null after the last."},
            "total_lines": {"type": "integer", "minimum": 2},
        }),
        "memory_erase_scope" => {
            let count = json!({"type": "integer", "minimum": 0});
            let parts = [
                "versions",
                "embeddings",
                "token_vectors",
                "episodes",
                "messages",
                "aliases",
                "profile_versions",
                "keys",
            ];
            let properties: Map<String, Value> = parts
                .iter()
                .map(|part| ((*part).to_owned(), count.clone()))
                .collect();
            json!({
                "scope": {"type": "string"},
                "erased": {"type": "object", "properties": properties,
                           "required": parts, "additionalProperties": false},
            })
        }
        _ => json!({}),
    };
    response(fields)
}

/// Every memory tool, in the order of [`TOOL_NAMES`](super::TOOL_NAMES).
///
/// ```
/// let tools = dispatch_runtime::memory_protocol::tools();
/// let forget = tools.iter().find(|t| t.name == "memory_forget").expect("a tool");
/// assert!(forget.destructive && !forget.read_only);
/// assert_eq!(forget.output_schema["required"], serde_json::json!(["ok"]));
/// ```
#[must_use]
pub fn tools() -> Vec<MemoryTool> {
    // (read_only, destructive, idempotent, open_world)
    let tool =
        |name: &'static str,
         title: &'static str,
         description: &'static str,
         input_schema: Map<String, Value>,
         (read_only, destructive, idempotent, open_world): (bool, bool, bool, bool)| {
            MemoryTool {
                name,
                title,
                description,
                input_schema,
                output_schema: output(name),
                read_only,
                destructive,
                idempotent,
                open_world,
            }
        };
    let reads = (true, false, true, false);
    vec![
        tool(
            "memory_add",
            "Remember a fact",
            "Remember a fact about the user or a project: a (subject, relation, object) triple \
             with an optional one-sentence statement, true from now or from valid_from. A \
             current fact with the same subject and relation is superseded (history keeps it), \
             so choose a specific relation such as prefers_test_framework. Subjects are \
             normalized (\"User\", \"I\" and \"me\" are user) and an alias is stored under its \
             entity. A fact whose statement a current fact already holds is a duplicate.",
            object::<Add>(),
            (false, false, true, false),
        ),
        tool(
            "memory_add_many",
            "Remember many facts",
            "Remember many facts in one transaction (at most 1000), each as memory_add takes \
             one: all are stored, or, when one is invalid, none (invalid_fact names its \
             index). Later facts of the batch supersede earlier ones of the same subject and \
             relation. One answer per fact, in order.",
            object::<AddMany>(),
            (false, false, true, false),
        ),
        tool(
            "memory_get",
            "Show a fact",
            "One fact by its id: its latest version, current or not.",
            object::<ById>(),
            reads,
        ),
        tool(
            "memory_list",
            "List current facts",
            "Every current fact (or every fact valid at as_of), oldest first.",
            object::<List>(),
            reads,
        ),
        tool(
            "memory_update",
            "Change a fact",
            "Change a fact: a new object makes a new fact that supersedes it (history keeps \
             both); a new statement, category or confidence edits it in place.",
            object::<Update>(),
            (false, false, false, false),
        ),
        tool(
            "memory_delete",
            "Delete a fact",
            "Delete every version of a memory fact, by its id, with its embeddings.",
            object::<ById>(),
            (false, true, true, false),
        ),
        tool(
            "memory_search",
            "Search memory",
            "Search the current facts (or those valid at as_of) for words, best first; a \
             name that is an alias also finds its entity's facts.",
            object::<Search>(),
            reads,
        ),
        tool(
            "memory_search_many",
            "Search memory for many queries",
            "Answer many searches in one call (at most 1000 queries), each as memory_search \
             answers it, in order, with the same limit, as_of, filter and recency.",
            object::<SearchMany>(),
            reads,
        ),
        tool(
            "memory_recall",
            "Recall from memory",
            "Recall what memory holds about a question: the relevant facts and the archived \
             conversations' messages that answer it, dated, as `## Relevant Facts` and `## \
             Related Episodes` text within a token budget, ready for a prompt. as_of recalls \
             what was true, and said, then.",
            object::<RecallArgs>(),
            reads,
        ),
        tool(
            "memory_history",
            "Show a subject's history",
            "Every version of the facts about a subject (and its aliases), by the time they \
             became true; a superseded version carries valid_to and superseded_by.",
            object::<History>(),
            reads,
        ),
        tool(
            "memory_neighbours",
            "Walk from an entity",
            "The facts around an entity: at depth 1 those whose subject or object is the \
             entity (or one of its aliases), at depth 2 also the facts about the entities \
             those lead to, each with the path that reached it. For questions that take two \
             facts to answer (who works with the user's manager?).",
            object::<NeighboursArgs>(),
            reads,
        ),
        tool(
            "memory_format",
            "Format memory for a prompt",
            "The whole memory as seed 002's prompt block: User Context:, History: and Facts: \
             (by confidence), within a token budget.",
            object::<Format>(),
            reads,
        ),
        tool(
            "memory_archive",
            "Archive a conversation",
            "Archive a conversation as an episode whose messages memory_recall finds later, \
             each dated by its timestamp (or session_time). Its facts are extracted by the \
             model command llm_cmd, which this server accepts only when started with \
             --allow-llm-cmd, judged against what memory already holds: the reply may \
             supersede or remove known facts, name aliases, and update the user context.",
            object::<Archive>(),
            (false, false, false, true),
        ),
        tool(
            "memory_backfill",
            "Extract archived conversations",
            "Extract the facts of every conversation archived without them, oldest first, with \
             the model command llm_cmd (needs --allow-llm-cmd).",
            object::<Backfill>(),
            (false, false, false, true),
        ),
        tool(
            "memory_context",
            "Show the user context",
            "The user context (work, personal, top of mind) and history (recent months, \
             earlier context, long-term background), with each field's current version.",
            object::<NoArgs>(),
            reads,
        ),
        tool(
            "memory_set_context",
            "Set the user context",
            "Set fields of the user context and history; every change keeps the old text in \
             the history with its time.",
            object::<SetContext>(),
            (false, false, true, false),
        ),
        tool(
            "memory_aliases",
            "List aliases",
            "Every alias and the entity it names.",
            object::<NoArgs>(),
            reads,
        ),
        tool(
            "memory_alias",
            "Name an entity",
            "Make alias another name of entity: facts about the alias are stored and found \
             under the entity, and its current facts move there. A cycle of names is refused \
             (alias_cycle).",
            object::<SetAlias>(),
            (false, false, true, false),
        ),
        tool(
            "memory_unalias",
            "Remove an alias",
            "Remove an alias; the facts stay where they are.",
            object::<Unalias>(),
            (false, false, true, false),
        ),
        tool(
            "memory_forget",
            "Forget for good",
            "Delete for good, for a user who asks to be forgotten: an episode with its \
             messages and every fact extracted from it, or every version of every fact about \
             a subject and its aliases. Nothing of it stays in search, vectors or episodes.",
            object::<Forget>(),
            (false, true, true, false),
        ),
        tool(
            "memory_erase_scope",
            "Erase all of memory",
            "Erase everything memory holds in this scope, for good and in one transaction: \
             every fact and its history, embeddings, episodes and their messages, aliases and \
             the user context. Name the scope this connection holds as `scope` to confirm; \
             any other name is refused (wrong_scope). Only when the user asks for all of \
             their memory to be deleted.",
            object::<EraseScope>(),
            (false, true, true, false),
        ),
        tool(
            "memory_export",
            "Export memory",
            "A page of this scope's memory as the export file of docs/export-format.md (JSON \
             Lines: a header, every version of every fact, the episodes with their messages, \
             the aliases, the user context's versions, an end record with a digest). Ask \
             from offset 0 and follow next_offset until it is null; the joined lines are a \
             file `facts mem import` reads. If memory changed between pages, the file's \
             digest fails on import: export again.",
            object::<Export>(),
            (true, false, true, false),
        ),
    ]
}
