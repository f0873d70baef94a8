//! `facts mcp`: the runtime's JSON protocol as an MCP server, over stdio or (with
//! `--http`) over streamable HTTP (`mcp/http.rs`).
//!
//! Every protocol action is one tool of the same name whose arguments are the action's
//! request fields and whose `outputSchema` is the action's response schema; a call becomes
//! `{"action": NAME, …arguments}` for [`protocol::handle`], and its answer comes back as the
//! tool's structured content (and as JSON text, for clients that only read text). An answer
//! with `"ok": false` is a tool error (`isError: true`) carrying the protocol's error code,
//! so the agent sees why; so is a call of a tool that does not exist (`unknown_tool`). Every
//! tool carries annotations (a title, and whether it only reads, may destroy, is idempotent)
//! for clients that decide which calls need a person's approval. This module knows MCP; the
//! wire format of the requests stays in `protocol`.
//!
//! With `--db`, the memory tools (`mcp/memory.rs`) are served beside the protocol's; with
//! `--embedder DIR` too, they are semantic: the service was given the sentence-embedding
//! model at start, so `memory_recall` ranks by meaning as well as by words and the facts
//! `memory_add` and `memory_archive` store are embedded as they are stored.
//!
//! With `--tokens FILE` (HTTP only, `mcp/tenants.rs`), every request carries its tenant
//! and the server answers it in the tenant's own space: a runtime whose spec stores are
//! under the tenant's scope (`SCOPE/spec:NAME`) and whose `project_path` must lie in the
//! tenant's project directory, and memory tools on the tenant's scope, each opened on the
//! tenant's first call and kept. A tool needs a right (`read` for the tools that only read,
//! `write` for the other memory tools, `runtime` for the other protocol actions); a call
//! without it is a tool error with code `forbidden`, and `tools/list` shows a tenant only
//! the tools it may call.

mod frames;
mod hints;
mod http;
mod memory;
mod metrics;
mod tenants;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use dispatch_runtime::protocol::code;
use dispatch_runtime::{DispatchRuntimeManager, protocol};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use hints::Hints;
pub(crate) use http::{AllowedOrigin, Listen, Tls, check_address, parse_address, parse_origin};
pub(crate) use memory::Memory;
pub(crate) use metrics::Metrics;
pub(crate) use tenants::{Tenant, Tenants, spec_prefix};

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "A temporal fact memory for dispatch orchestration. Per task: \
    init_run, then compile_prompt for the implementer, ingest_output with its raw output, \
    compile_prompt and ingest_output for the reviewer; follow next_action. Facts that earlier \
    tasks established reach later prompts through [Session Context]; query_facts and \
    fact_history inspect the store.";

/// What the server adds about the memory tools, when it serves them.
const MEMORY_INSTRUCTIONS: &str = " Long-term memory: memory_add remembers a fact (a newer \
    fact with the same subject and relation supersedes the old one), memory_recall and \
    memory_search find what is remembered (as_of asks about an earlier time), \
    memory_history shows how a subject's facts changed, memory_neighbours walks from an \
    entity to the facts around it, memory_archive keeps a whole \
    conversation with its dates, memory_context holds the user's context and history, \
    memory_alias names an entity twice, memory_forget deletes for good.";

/// What the server adds when the memory tools have an embedding model.
const SEMANTIC_INSTRUCTIONS: &str = " memory_recall matches by meaning as well as by words, \
    so a question need not share a word with the fact it finds.";

/// The error code of a call of a tool the server does not have.
const UNKNOWN_TOOL: &str = "unknown_tool";

/// How the server reaches its clients.
#[derive(Debug)]
pub(crate) enum Transport {
    /// One client on stdin and stdout, until it disconnects.
    Stdio,
    /// Streamable HTTP (or HTTPS), for any number of clients, until the process is
    /// stopped. The address was checked with [`check_address`]. Boxed: it is large and
    /// made once.
    Http(Box<Listen>),
}

/// The hints of a protocol action. An action this table does not know yet (the protocol
/// grew) gets a title from its name and the cautious hints: destructive unless read-only,
/// not idempotent.
fn protocol_hints(name: &'static str, read_only: bool) -> Hints {
    let hints = |title, destructive, idempotent| Hints {
        title,
        destructive,
        idempotent,
        open_world: false,
    };
    match name {
        // `rebind: true` starts a run's task ledger over; the same binding again keeps it.
        "init_run" => hints("Start a run", true, true),
        // Counts telemetry, and a run is guided only once: a second prompt may differ.
        "compile_prompt" => hints("Compile a dispatch prompt", false, false),
        // Newer facts supersede older ones, which stay in the history.
        "ingest_output" => hints("Ingest an agent's output", false, false),
        // Rewrites a task's checkbox in tasks.md.
        "set_task_status" => hints("Set a task's status", true, true),
        // Drops the run's task ledger; a second call changes nothing more.
        "end_run" => hints("End a run", true, true),
        "get_snapshot" => Hints::reads("Get a run's task ledger"),
        "query_facts" => Hints::reads("Query a spec's facts"),
        "fact_history" => Hints::reads("Show a subject's fact history"),
        "get_telemetry" => Hints::reads("Get the session's telemetry"),
        _ if read_only => Hints::reads(name),
        _ => hints(name, true, false),
    }
}

/// The protocol's actions as tools, with their schemas and annotations.
fn protocol_tools() -> Vec<Tool> {
    protocol::actions()
        .into_iter()
        .map(|action| {
            let tool = Tool::new(action.name, action.description, action.input_schema)
                .with_raw_output_schema(Arc::new(action.output_schema));
            protocol_hints(action.name, action.read_only).apply(tool, action.read_only)
        })
        .collect()
}

/// A tenant's runtime and memory tools.
pub(crate) struct Space {
    /// Its runtime: spec stores under its scope, its project directory.
    pub(crate) runtime: DispatchRuntimeManager,
    /// Its memory tools' state, on its scope, when the memory tools are served.
    pub(crate) memory: Option<Memory>,
}

/// Opens a tenant's [`Space`] with this project directory, or says why it cannot (a
/// protocol error answer, as the tool call's).
pub(crate) type OpenSpace = Box<dyn Fn(&Tenant, &Path) -> Result<Space, Value> + Send + Sync>;

/// The tenants' spaces, opened on each tenant's first call and kept.
pub(crate) struct Tenancy {
    open: OpenSpace,
    /// The canonical project directory of a tenant whose entry names none.
    project: PathBuf,
    /// The spaces, by scope and project directory (so a reloaded token file that changes
    /// either gets a new space); each slot is filled on its tenant's first call.
    spaces: Mutex<HashMap<(String, PathBuf), Arc<Slot>>>,
}

/// A tenant's space, once opened; its own lock, so a slow open (a database far away) holds
/// up only its own tenant.
type Slot = Mutex<Option<Arc<Space>>>;

impl Tenancy {
    /// Spaces opened by `open`; `project` is the server's (canonical) project directory.
    pub(crate) fn new(open: OpenSpace, project: PathBuf) -> Tenancy {
        Tenancy {
            open,
            project,
            spaces: Mutex::new(HashMap::new()),
        }
    }

    /// How many runs the tenants' runtimes hold together.
    fn runs_held(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self
            .spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        slots
            .iter()
            .filter_map(|slot| {
                // A slot being opened (its lock held) has no runs yet.
                let slot = slot.try_lock().ok()?;
                slot.as_ref().map(|space| space.runtime.run_count())
            })
            .sum()
    }

    /// The project directory `tenant`'s `project_path`s must lie in.
    fn project<'a>(&'a self, tenant: &'a Tenant) -> &'a Path {
        tenant.project().unwrap_or(&self.project)
    }

    /// `tenant`'s space, opened now if this is its first call (or if opening failed
    /// before).
    fn space(&self, tenant: &Tenant) -> Result<Arc<Space>, Value> {
        let project = self.project(tenant).to_path_buf();
        let slot = self
            .spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((tenant.scope().to_owned(), project.clone()))
            .or_default()
            .clone();
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(space) = slot.as_ref() {
            return Ok(space.clone());
        }
        let space = Arc::new((self.open)(tenant, &project)?);
        *slot = Some(space.clone());
        Ok(space)
    }
}

impl Serving {
    /// How many runs are held: the one runtime's, or every tenant's opened so far.
    fn runs_held(&self) -> usize {
        match self {
            Serving::One { runtime, .. } => runtime.run_count(),
            Serving::Tenants(tenancy) => tenancy.runs_held(),
        }
    }
}

/// Whom the server answers: everyone in one space, or each tenant in its own.
#[derive(Clone)]
enum Serving {
    /// One runtime and memory for every client.
    One {
        runtime: Arc<DispatchRuntimeManager>,
        memory: Option<Arc<Memory>>,
    },
    /// Each request in its tenant's space.
    Tenants(Arc<Tenancy>),
}

/// The MCP server: one runtime for the life of the process, shared by every client (every
/// HTTP session is a clone), so facts persist across runs of a spec until the server stops
/// (or, on a database, across servers); with tenants, one runtime and memory per tenant.
#[derive(Clone)]
pub(crate) struct FactsServer {
    serving: Serving,
    tools: Arc<[Tool]>,
    /// Whether the memory tools are served, and whether they rank by meaning.
    memory: Option<bool>,
    /// `--metrics`: where each tool call is counted.
    metrics: Option<metrics::Shared>,
}

impl FactsServer {
    pub(crate) fn new(runtime: DispatchRuntimeManager, memory: Option<Memory>) -> Self {
        let semantic = memory.as_ref().map(Memory::semantic);
        Self {
            serving: Serving::One {
                runtime: Arc::new(runtime),
                memory: memory.map(Arc::new),
            },
            tools: tools(semantic.is_some()).into(),
            memory: semantic,
            metrics: None,
        }
    }

    /// This server, counting its tool calls and its runs in `metrics`.
    pub(crate) fn with_metrics(mut self, metrics: metrics::Shared) -> Self {
        let serving = self.serving.clone();
        metrics.count_runs(Box::new(move || serving.runs_held()));
        self.metrics = Some(metrics);
        self
    }

    /// A server of tenants: each request is answered in its tenant's space, which
    /// `tenancy` opens. `memory`: whether the memory tools are served, and whether they
    /// rank by meaning.
    pub(crate) fn tenanted(tenancy: Tenancy, memory: Option<bool>) -> Self {
        Self {
            serving: Serving::Tenants(Arc::new(tenancy)),
            tools: tools(memory.is_some()).into(),
            memory,
            metrics: None,
        }
    }

    /// Answers one tool call: the protocol's (or a memory tool's) answer, or an
    /// `unknown_tool` failure that lists the tools there are. With tenants, the call is
    /// `tenant`'s, in its space, if its token has the tool's right.
    fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        tenant: Option<&Tenant>,
    ) -> Value {
        let Some(tool) = self.tools.iter().find(|tool| tool.name == name) else {
            return self.unknown(name);
        };
        let mut arguments = arguments.unwrap_or_default();
        match &self.serving {
            Serving::One { runtime, memory } => {
                self.answer(runtime, memory.as_deref(), name, arguments)
            }
            Serving::Tenants(tenancy) => {
                let Some(tenant) = tenant else {
                    return protocol::error(
                        code::FORBIDDEN,
                        "this server serves tenants, and the call came from none".to_owned(),
                    );
                };
                let right = right_of(tool);
                if !tenant.may(right) {
                    tracing::warn!(
                        "facts mcp: tenant {:?} called {name} without the {} right: forbidden",
                        tenant.name(),
                        right.name()
                    );
                    return protocol::error(
                        code::FORBIDDEN,
                        format!(
                            "tenant {:?} may not call {name}: its token lacks the {:?} right",
                            tenant.name(),
                            right.name()
                        ),
                    );
                }
                if let Err(answer) = confine(&mut arguments, tenancy.project(tenant), tenant) {
                    return answer;
                }
                match tenancy.space(tenant) {
                    Ok(space) => {
                        self.answer(&space.runtime, space.memory.as_ref(), name, arguments)
                    }
                    Err(answer) => answer,
                }
            }
        }
    }

    /// The answer of the protocol (or of a memory tool) on `runtime` and `memory`.
    fn answer(
        &self,
        runtime: &DispatchRuntimeManager,
        memory: Option<&Memory>,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Value {
        // Memory tools are named `memory_*`; no protocol action is.
        if name.starts_with("memory_") {
            return memory
                .and_then(|memory| memory.call(name, arguments))
                .unwrap_or_else(|| self.unknown(name));
        }
        let mut request = arguments;
        request.insert("action".into(), Value::String(name.to_owned()));
        protocol::handle(runtime, &Value::Object(request))
    }

    /// The failure of a call of a tool this server does not have.
    fn unknown(&self, name: &str) -> Value {
        let known: Vec<&str> = self.tools.iter().map(|tool| tool.name.as_ref()).collect();
        protocol::error(
            UNKNOWN_TOOL,
            format!("unknown tool {name:?}; known tools: {}", known.join(", ")),
        )
    }

    /// The tools `tenant` may call (every tool, without tenants).
    fn tools_for(&self, tenant: Option<&Tenant>) -> Vec<Tool> {
        match (&self.serving, tenant) {
            (Serving::One { .. }, _) => self.tools.to_vec(),
            (Serving::Tenants(_), None) => Vec::new(),
            (Serving::Tenants(_), Some(tenant)) => self
                .tools
                .iter()
                .filter(|tool| tenant.may(right_of(tool)))
                .cloned()
                .collect(),
        }
    }
}

/// The protocol's tools, and the memory tools when they are served.
fn tools(memory: bool) -> Vec<Tool> {
    let mut tools = protocol_tools();
    if memory {
        tools.extend(memory::tools());
    }
    tools
}

/// The right a call of `tool` needs: `read` for a tool that only reads, `write` for
/// another memory tool, `runtime` for another protocol action.
fn right_of(tool: &Tool) -> tenants::Right {
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.read_only_hint)
        == Some(true);
    if read_only {
        tenants::Right::Read
    } else if tool.name.starts_with("memory_") {
        tenants::Right::Write
    } else {
        tenants::Right::Runtime
    }
}

/// Keeps a call's `project_path` inside `root`: a relative path is taken from `root`, the
/// path is resolved (links and `..` followed) and must be `root` or lie under it, and the
/// call goes on with the resolved path. Otherwise the answer is `forbidden`.
fn confine(arguments: &mut Map<String, Value>, root: &Path, tenant: &Tenant) -> Result<(), Value> {
    let Some(Value::String(path)) = arguments.get("project_path") else {
        return Ok(());
    };
    let resolved = std::fs::canonicalize(root.join(path))
        .ok()
        .filter(|resolved| resolved.starts_with(root));
    match resolved {
        Some(resolved) => {
            let resolved = resolved.to_string_lossy().into_owned();
            arguments.insert("project_path".into(), Value::String(resolved));
            Ok(())
        }
        None => {
            tracing::warn!(
                "facts mcp: tenant {:?} named a project_path outside its project: forbidden",
                tenant.name()
            );
            Err(protocol::error(
                code::FORBIDDEN,
                format!(
                    "project_path {:?} is not a directory inside tenant {:?}'s project {}",
                    bounds_clip(path),
                    tenant.name(),
                    root.display()
                ),
            ))
        }
    }
}

/// A client's text, clipped for a message.
fn bounds_clip(text: &str) -> String {
    crate::bounds::clip(text, 200)
}

/// The tenant an HTTP request was authenticated as (`mcp/http.rs` put it there).
fn tenant_of(extensions: &rmcp::model::Extensions) -> Option<Arc<Tenant>> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<Tenant>>())
        .cloned()
}

impl ServerHandler for FactsServer {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = INSTRUCTIONS.to_owned();
        if let Some(semantic) = self.memory {
            instructions.push_str(MEMORY_INSTRUCTIONS);
            if semantic {
                instructions.push_str(SEMANTIC_INSTRUCTIONS);
            }
        }
        // `logging`: clients may set a level (`logging/setLevel`, which the MCP Inspector
        // and the conformance suite send); the server sends no log messages to clients (its
        // logs go to stderr), so every level filters all of them alike. rmcp deprecates
        // logging (SEP-2577 drops it from a later protocol version); the versions clients
        // speak today (2025-06-18, 2025-11-25) have it.
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("facts", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tenant = tenant_of(&context.extensions);
        Ok(ListToolsResult::with_all_items(
            self.tools_for(tenant.as_deref()),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    /// Accepts any level: the server sends clients no log messages to filter (see
    /// [`FactsServer::get_info`]'s `logging` capability).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(
            "facts mcp: a client set its log level to {:?}",
            request.level
        );
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Tools read and write stores (a database, a model command): off the async thread.
        let server = self.clone();
        let tenant = tenant_of(&context.extensions);
        let metrics = self.metrics.clone();
        let started = metrics.as_ref().map(|metrics| metrics.now());
        let tool = match self.get_tool(&request.name) {
            Some(tool) => tool.name.clone(),
            None => metrics::UNKNOWN_TOOL_LABEL.into(),
        };
        let answer = tokio::task::spawn_blocking(move || {
            // The call's span, the parent of the runtime's store, retrieval, embedding and
            // extraction spans: names and codes only, never the arguments.
            let span = tracing::info_span!(
                "tool_call",
                otel.kind = "server",
                tool = %tool,
                tenant = tracing::field::Empty,
                outcome = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            );
            if let Some(tenant) = &tenant {
                span.record("tenant", tenant.name());
            }
            let answer =
                span.in_scope(|| server.call(&request.name, request.arguments, tenant.as_deref()));
            let code = protocol::error_code(&answer);
            span.record("outcome", code.unwrap_or("ok"));
            if code.is_some() {
                span.record("otel.status_code", "error");
            }
            if let (Some(metrics), Some(started)) = (metrics, started) {
                let tenant = tenant.as_ref().map(|tenant| tenant.name());
                metrics.tool_call(&tool, code, tenant, started);
            }
            answer
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("the tool call failed: {e}"), None))?;
        let failed = !protocol::is_success(&answer);
        let mut result = CallToolResult::structured(answer);
        result.is_error = Some(failed);
        Ok(result.into())
    }
}

/// Serves MCP over `transport`: on stdio until the client disconnects, on HTTP until the
/// process is stopped. No request (a stdio frame, an HTTP body) may be longer than
/// `max_request_bytes`.
pub(crate) fn serve(
    server: FactsServer,
    transport: Transport,
    max_request_bytes: usize,
) -> Result<(), String> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    match transport {
        Transport::Stdio => tokio.block_on(serve_stdio(server, max_request_bytes)),
        Transport::Http(listen) => {
            let served = tokio.block_on(http::serve(server, *listen, max_request_bytes));
            // Tool calls still running when a signal stopped the server get a moment to
            // finish.
            tokio.shutdown_timeout(SHUTDOWN);
            served
        }
    }
}

/// How long tool calls still running when the server stops may go on.
const SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(10);

/// One client on stdin and stdout, through the relay that answers a frame rmcp cannot
/// parse with a JSON-RPC error, refuses frames past `max_request_bytes` and holds back a
/// client that does not read its answers (`mcp/frames.rs`).
async fn serve_stdio(server: FactsServer, max_request_bytes: usize) -> Result<(), String> {
    let ((reads, writes), written) =
        frames::relay(std::io::stdin(), tokio::io::stdout(), max_request_bytes);
    // The relay refused every longer frame: rmcp takes what it lets through, `\n` and all.
    let transport = AsyncRwTransport::new_server(reads, writes)
        .with_max_line_length(max_request_bytes.saturating_add(1));
    let served = serve_one(server, transport).await;
    // Every answer rmcp gave is on stdout before the process exits.
    let _ = written.await;
    served
}

/// Serves MCP to one client over `io`, newline-delimited JSON-RPC as on stdio, until the
/// client disconnects: the handler of `facts mcp` without a database, on any byte stream
/// (a `tokio::io::duplex`). For the fuzz target; not a stable API.
///
/// # Errors
///
/// The handshake failed or the service stopped with an error; the message says which.
pub async fn serve_io<T>(runtime: DispatchRuntimeManager, io: T) -> Result<(), String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    serve_one(FactsServer::new(runtime, None), io).await
}

/// One client on `transport`, until it disconnects.
async fn serve_one<T, E, A>(server: FactsServer, transport: T) -> Result<(), String>
where
    T: rmcp::transport::IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = server
        .serve(transport)
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("MCP server stopped: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn every_protocol_action_is_a_tool_with_its_schemas_and_annotations() {
        let server = FactsServer::new(DispatchRuntimeManager::builder().build(), None);
        // One tool per protocol action, in its order (the names are checked end to end in
        // tests/mcp.rs).
        let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_ref()).collect();
        let actions = protocol::actions();
        let action_names: Vec<&str> = actions.iter().map(|a| a.name).collect();
        assert_eq!(names, action_names);
        for (tool, action) in server.tools.iter().zip(&actions) {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.description.as_ref().is_some_and(|d| !d.is_empty()));
            let output = tool.output_schema.as_deref().unwrap();
            assert_eq!(output, &action.output_schema, "{}", tool.name);
            assert_eq!(output["type"], "object", "{}", tool.name);
            let annotations = tool.annotations.as_ref().unwrap();
            assert_eq!(annotations.read_only_hint, Some(action.read_only));
            assert!(annotations.destructive_hint.is_some());
            assert!(annotations.idempotent_hint.is_some());
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            let title = tool.title.as_deref().unwrap();
            assert!(title.contains(' '), "a title for people: {title:?}");
            assert_eq!(annotations.title.as_deref(), Some(title));
        }
        let read_only: Vec<&str> = server
            .tools
            .iter()
            .filter(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true))
            .map(|t| t.name.as_ref())
            .collect();
        assert_eq!(
            read_only,
            [
                "get_snapshot",
                "query_facts",
                "fact_history",
                "get_telemetry"
            ]
        );
    }

    #[test]
    fn an_action_the_table_does_not_know_gets_cautious_hints() {
        let writes = protocol_hints("future_action", false);
        assert_eq!(writes.title, "future_action");
        assert!(writes.destructive && !writes.idempotent);
        let reads = protocol_hints("future_query", true);
        assert!(!reads.destructive && reads.idempotent);
    }

    #[test]
    fn an_unknown_tool_is_a_failure_naming_the_known_tools_and_a_failure_keeps_its_code() {
        let server = FactsServer::new(DispatchRuntimeManager::builder().build(), None);
        let unknown = server.call("fly", None, None);
        assert_eq!(unknown["ok"], false);
        assert_eq!(unknown["error"]["code"], "unknown_tool");
        let message = unknown["error"]["message"].as_str().unwrap();
        assert!(message.contains("\"fly\""), "{message}");
        assert!(message.contains("known tools: init_run, "), "{message}");
        // Without a database, the memory tools do not exist either.
        let memory = server.call("memory_add", None, None);
        assert_eq!(memory["error"]["code"], "unknown_tool");
        let answer = server.call("get_snapshot", None, None);
        assert_eq!(answer["error"]["code"], protocol::code::INVALID_REQUEST);
    }

    #[test]
    fn init_run_gets_the_default_project_unless_it_names_one() {
        let dir = std::env::temp_dir().join(format!("facts-mcp-{}", std::process::id()));
        let runtime = DispatchRuntimeManager::builder()
            .project_root(dir.clone())
            .build();
        let server = FactsServer::new(runtime, None);
        for arguments in [
            serde_json::json!({"spec_name": "s", "task_id": "1"}),
            serde_json::json!({"spec_name": "s", "task_id": "1", "project_path": null}),
        ] {
            // No tasks.md there: the failure names where it looked.
            let answer = server.call("init_run", arguments.as_object().cloned(), None);
            assert_eq!(answer["ok"], false);
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(&dir.display().to_string()),
                "{answer}"
            );
        }
        let elsewhere = dir.join("elsewhere");
        let arguments = serde_json::json!({"spec_name": "s", "task_id": "1",
                                           "project_path": elsewhere});
        let answer = server.call("init_run", arguments.as_object().cloned(), None);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&elsewhere.display().to_string()),
            "{answer}"
        );
    }
}
