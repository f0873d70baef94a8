//! `facts mcp`: the runtime's JSON protocol as an MCP server over stdio.
//!
//! Every protocol action is one tool of the same name whose arguments are the action's
//! request fields; a call becomes `{"action": NAME, …arguments}` for
//! [`protocol::handle`], and its answer comes back as the tool's structured content (and
//! as JSON text, for clients that only read text). An answer with `"ok": false` is a tool
//! error (`isError: true`) carrying the protocol's error code, so the agent sees why. This
//! module knows MCP; the wire format of the requests stays in `protocol`.
//!
//! With `--db`, the memory tools (`mcp/memory.rs`) are served beside the protocol's.

mod memory;

use std::path::PathBuf;
use std::sync::Arc;

use dispatch_runtime::{DispatchRuntimeManager, protocol};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "A temporal fact memory for dispatch orchestration. Per task: \
    init_run, then compile_prompt for the implementer, ingest_output with its raw output, \
    compile_prompt and ingest_output for the reviewer; follow next_action. Facts that earlier \
    tasks established reach later prompts through [Session Context]; query_facts and \
    fact_history inspect the store.";

/// What the server adds about the memory tools, when it serves them.
const MEMORY_INSTRUCTIONS: &str = " Long-term memory: memory_add remembers a fact (a newer \
    fact with the same subject and relation supersedes the old one), memory_recall and \
    memory_search find what is remembered, memory_history shows how a subject's facts \
    changed, memory_archive keeps a whole conversation.";

pub(crate) use memory::Memory;

/// The MCP server: one runtime for the life of the connection, so facts persist across
/// runs of a spec until the client disconnects (or, on a database, across servers).
#[derive(Clone)]
pub(crate) struct FactsServer {
    runtime: Arc<DispatchRuntimeManager>,
    tools: Arc<[Tool]>,
    /// The project root for `init_run` calls that name none.
    project: Option<PathBuf>,
    /// The memory tools' state, when they are served.
    memory: Option<Arc<Memory>>,
}

impl FactsServer {
    pub(crate) fn new(
        runtime: DispatchRuntimeManager,
        project: Option<PathBuf>,
        memory: Option<Memory>,
    ) -> Self {
        let mut tools: Vec<Tool> = protocol::actions()
            .into_iter()
            .map(|action| Tool::new(action.name, action.description, action.input_schema))
            .collect();
        if memory.is_some() {
            tools.extend(memory::tools());
        }
        Self {
            runtime: Arc::new(runtime),
            tools: tools.into(),
            project,
            memory: memory.map(Arc::new),
        }
    }

    /// Answers one tool call; `None` for a tool that does not exist.
    fn call(&self, name: &str, arguments: Option<serde_json::Map<String, Value>>) -> Option<Value> {
        if !self.tools.iter().any(|tool| tool.name == name) {
            return None;
        }
        // Memory tools are named `memory_*`; no protocol action is.
        if name.starts_with("memory_")
            && let Some(memory) = &self.memory
        {
            return memory.call(name, arguments.unwrap_or_default());
        }
        let mut request = arguments.unwrap_or_default();
        if name == "init_run"
            && let Some(project) = &self.project
            && request.get("project_path").is_none_or(Value::is_null)
        {
            request.insert(
                "project_path".into(),
                Value::String(project.display().to_string()),
            );
        }
        request.insert("action".into(), Value::String(name.to_owned()));
        Some(protocol::handle(&self.runtime, &Value::Object(request)))
    }
}

impl ServerHandler for FactsServer {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = INSTRUCTIONS.to_owned();
        if self.memory.is_some() {
            instructions.push_str(MEMORY_INSTRUCTIONS);
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("facts", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Tools read and write stores (a database, a model command): off the async thread.
        let server = self.clone();
        let name = request.name.clone();
        let answer = tokio::task::spawn_blocking(move || server.call(&name, request.arguments))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the tool call failed: {e}"), None))?;
        let Some(answer) = answer else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        };
        let failed = answer.get("ok") != Some(&Value::Bool(true));
        let mut result = CallToolResult::structured(answer);
        result.is_error = Some(failed);
        Ok(result.into())
    }
}

/// Serves MCP on stdin and stdout until the client disconnects.
pub(crate) fn serve(
    runtime: DispatchRuntimeManager,
    project: Option<PathBuf>,
    memory: Option<Memory>,
) -> Result<(), String> {
    let server = FactsServer::new(runtime, project, memory);
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    tokio.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("MCP server stopped: {e}"))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn every_protocol_action_is_a_tool_with_an_object_schema() {
        let server = FactsServer::new(DispatchRuntimeManager::builder().build(), None, None);
        // One tool per protocol action, in its order (the names are checked end to end in
        // tests/mcp.rs).
        let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_ref()).collect();
        let actions: Vec<&str> = protocol::actions().iter().map(|a| a.name).collect();
        assert_eq!(names, actions);
        for tool in server.tools.iter() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.description.as_ref().is_some_and(|d| !d.is_empty()));
        }
    }

    #[test]
    fn an_unknown_tool_is_not_answered_and_a_failure_keeps_its_code() {
        let server = FactsServer::new(DispatchRuntimeManager::builder().build(), None, None);
        assert!(server.call("fly", None).is_none());
        let answer = server.call("get_snapshot", None).unwrap();
        assert_eq!(answer["error"]["code"], "invalid_request");
    }

    #[test]
    fn init_run_gets_the_default_project_unless_it_names_one() {
        let dir = std::env::temp_dir().join(format!("facts-mcp-{}", std::process::id()));
        let server = FactsServer::new(
            DispatchRuntimeManager::builder().build(),
            Some(dir.clone()),
            None,
        );
        let arguments = serde_json::json!({"spec_name": "s", "task_id": "1"});
        let answer = server
            .call("init_run", arguments.as_object().cloned())
            .unwrap();
        assert_eq!(answer["error"]["code"], "progress_ledger_missing_tasks");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&dir.display().to_string()),
            "{answer}"
        );
    }
}
