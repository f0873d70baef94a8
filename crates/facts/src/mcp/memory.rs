//! The MCP memory tools of `facts mcp --db`: the tools of
//! `dispatch_runtime::memory_protocol` over one scope of the database, as MCP tools.
//!
//! This adapter knows MCP and nothing of the wire format: `tools/list` shows
//! [`memory_protocol::tools`] (each with its input and output schema and annotations:
//! `readOnlyHint` on the tools that only read, `destructiveHint` on `memory_delete`,
//! `memory_forget` and `memory_erase_scope`), and a call is [`memory_protocol::handle`];
//! an answer with `"ok": false` becomes a tool error that carries its code.
//!
//! Whether recall is semantic is the service's business: a [`MemoryService`] given an
//! embedding model (`facts mcp --embedder DIR`, `MemoryService::with_embedder`) ranks
//! `memory_recall` by meaning as well as by words and embeds what the tools store.

use std::sync::Arc;

use dispatch_runtime::MemoryService;
use dispatch_runtime::memory_protocol::{self, Policy};
use rmcp::model::Tool;
use serde_json::{Map, Value};

use super::hints::Hints;

/// The memory tools, in the order `tools/list` shows them.
pub(crate) fn tools() -> Vec<Tool> {
    memory_protocol::tools()
        .into_iter()
        .map(|tool| {
            let hints = Hints {
                title: tool.title,
                destructive: tool.destructive,
                idempotent: tool.idempotent,
                open_world: tool.open_world,
            };
            let described = Tool::new(tool.name, tool.description, tool.input_schema)
                .with_raw_output_schema(Arc::new(tool.output_schema));
            hints.apply(described, tool.read_only)
        })
        .collect()
}

/// The memory tools' state: one scope's memory, and what clients may ask of it.
#[derive(Debug)]
pub(crate) struct Memory {
    service: MemoryService,
    policy: Policy,
}

impl Memory {
    /// Tools over `service`, the memory of `scope` (the only scope `memory_erase_scope`
    /// erases); `memory_archive` and `memory_backfill` run a client's `llm_cmd` only when
    /// `allow_llm_cmd` is set.
    pub(crate) fn new(service: MemoryService, scope: &str, allow_llm_cmd: bool) -> Self {
        Memory {
            service,
            policy: Policy::new("mcp")
                .with_allow_llm_cmd(allow_llm_cmd)
                .with_scope(scope),
        }
    }

    /// Whether recall ranks by meaning too (the service has an embedding model).
    pub(crate) fn semantic(&self) -> bool {
        self.service.hybrid().is_some()
    }

    /// Answers a memory tool call; `None` when `name` is not a memory tool.
    pub(crate) fn call(&self, name: &str, arguments: Map<String, Value>) -> Option<Value> {
        memory_protocol::handle(&self.service, &self.policy, name, Value::Object(arguments))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use serde_json::json;

    use super::*;

    #[test]
    fn every_memory_tool_has_an_object_schema_that_names_its_required_fields() {
        let tools = tools();
        let required = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            assert_eq!(tool.input_schema["type"], "object", "{name}");
            assert_eq!(tool.input_schema["additionalProperties"], false, "{name}");
            tool.input_schema
                .get("required")
                .cloned()
                .unwrap_or(json!([]))
        };
        assert_eq!(
            required("memory_add"),
            json!(["subject", "relation", "object"])
        );
        assert_eq!(required("memory_search"), json!(["query"]));
        assert_eq!(required("memory_recall"), json!(["query"]));
        assert_eq!(required("memory_history"), json!(["subject"]));
        assert_eq!(required("memory_delete"), json!(["id"]));
        assert_eq!(required("memory_get"), json!(["id"]));
        assert_eq!(required("memory_archive"), json!(["transcript"]));
        assert_eq!(required("memory_alias"), json!(["alias", "entity"]));
        assert_eq!(required("memory_context"), json!([]));
        let add = &tools[0].input_schema;
        assert!(
            add["properties"]["category"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!("preference"))
        );
        assert_eq!(add["properties"]["confidence"]["maximum"], 1.0);
    }

    #[test]
    fn every_memory_tool_has_an_output_schema_and_annotations() {
        let mut read_only = Vec::new();
        let mut destructive = Vec::new();
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
            if annotations.destructive_hint == Some(true) {
                destructive.push(tool.name.to_string());
            }
            let open_world = annotations.open_world_hint == Some(true);
            assert_eq!(
                open_world,
                ["memory_archive", "memory_backfill"].contains(&&*tool.name),
                "{}",
                tool.name
            );
        }
        assert_eq!(
            read_only,
            [
                "memory_get",
                "memory_list",
                "memory_search",
                "memory_search_many",
                "memory_recall",
                "memory_history",
                "memory_neighbours",
                "memory_format",
                "memory_context",
                "memory_aliases",
                "memory_export"
            ]
        );
        assert_eq!(
            destructive,
            ["memory_delete", "memory_forget", "memory_erase_scope"]
        );
    }
}
