//! The runtime's request, response and error types: plain Rust values with the serde form
//! the protocol speaks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fact_store::StoreError;
use ledger::{LedgerChange, LedgerError, StateSnapshotFact, TaskStatus, Totals};
use serde::{Deserialize, Serialize};

use fact_model::SourceRole;

/// Why an action failed. [`code`](Self::code) is the protocol's error code.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The spec's tasks.md does not exist.
    #[error("no tasks.md for spec {spec_name}: {source}")]
    ProgressLedgerMissingTasks {
        /// The spec.
        spec_name: String,
        /// The ledger error, naming the path.
        source: LedgerError,
    },
    /// The spec's tasks.md exists but cannot be compiled.
    #[error("cannot compile the progress ledger of spec {spec_name}: {source}")]
    ProgressLedgerInvalid {
        /// The spec.
        spec_name: String,
        /// The ledger error.
        source: LedgerError,
    },
    /// The run is not known: it was never initialized, or it was ended (`end_run`), bound
    /// anew, or dropped after being idle longer than the runtime's run expiry.
    #[error(
        "run {run_id:?} is not initialized (never, or it was ended or expired); call init_run first"
    )]
    RunNotInitialized {
        /// The unknown run.
        run_id: String,
    },
    /// The prompt is over the role's input budget and cannot be compacted under it.
    #[error("the prompt costs {tokens} tokens; the input budget is {budget}")]
    DispatchPromptOverflowTerminal {
        /// What the smallest prompt costs.
        tokens: usize,
        /// The budget.
        budget: usize,
    },
    /// The run is bound to another task.
    #[error("run {run_id:?} is bound to task {bound:?}, not {requested:?}")]
    RunTaskMismatch {
        /// The run.
        run_id: String,
        /// Its task.
        bound: String,
        /// The task asked for.
        requested: String,
    },
    /// The spec name is not one folder name (empty, `.`/`..`, a separator, a NUL): specs
    /// live in `<project>/.spec-context/specs/<spec>/`, and a name may not leave that folder.
    #[error("invalid spec name {spec_name:?}: {reason}")]
    InvalidSpecName {
        /// The name given.
        spec_name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The task is not in the spec's tasks.md.
    #[error("task {task_id:?} is not in {}", tasks_path.display())]
    TaskNotFound {
        /// The spec.
        spec_name: String,
        /// The task asked for.
        task_id: String,
        /// The tasks.md searched.
        tasks_path: PathBuf,
    },
    /// `init_run` would bind an existing run to another spec or task without `rebind`.
    #[error(
        "run {run_id:?} is bound to task {bound_task:?} of spec {bound_spec:?}; pass \
         \"rebind\": true to bind it to another task (its task ledger starts over)"
    )]
    RunRebind {
        /// The run.
        run_id: String,
        /// Its spec.
        bound_spec: String,
        /// Its task.
        bound_task: String,
    },
    /// `set_task_status` could not rewrite tasks.md.
    #[error("cannot set the task's status in tasks.md of spec {spec_name}: {source}")]
    TaskStatusWrite {
        /// The spec.
        spec_name: String,
        /// The ledger error, naming the path.
        source: LedgerError,
    },
    /// The request names a role that is not a dispatch agent (only implementers and
    /// reviewers are dispatched).
    #[error("{role} is not a dispatch agent; expected implementer or reviewer")]
    NotADispatchRole {
        /// The role given.
        role: SourceRole,
    },
    /// The spec's fact store could not be opened, read or written.
    #[error("fact store: {source}")]
    Store {
        /// The store's error; its [`code`](StoreError::code) is part of the protocol's code.
        source: StoreError,
    },
}

impl RuntimeError {
    /// The protocol's error code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            RuntimeError::ProgressLedgerMissingTasks { .. } => "progress_ledger_missing_tasks",
            RuntimeError::ProgressLedgerInvalid { .. } => "progress_ledger_invalid",
            RuntimeError::RunNotInitialized { .. } => "run_not_initialized",
            RuntimeError::RunTaskMismatch { .. } => "run_task_mismatch",
            RuntimeError::DispatchPromptOverflowTerminal { .. } => {
                "dispatch_prompt_overflow_terminal"
            }
            RuntimeError::InvalidSpecName { .. } => "invalid_spec_name",
            RuntimeError::TaskNotFound { .. } => "task_not_found",
            RuntimeError::RunRebind { .. } => "run_rebind",
            RuntimeError::TaskStatusWrite { .. } => "task_status_write_failed",
            RuntimeError::NotADispatchRole { .. } => "not_a_dispatch_role",
            RuntimeError::Store { source } => store_code(source),
        }
    }

    /// Every code [`code`](Self::code) can return, with when it happens, for references.
    pub const CODES: &'static [(&'static str, &'static str)] = &[
        (
            "progress_ledger_missing_tasks",
            "the spec has no tasks.md under <project>/.spec-context/specs/<spec>/",
        ),
        (
            "progress_ledger_invalid",
            "the spec's tasks.md cannot be read or compiled",
        ),
        (
            "run_not_initialized",
            "the run id was never given to init_run in this process, or the run was ended \
             (end_run) or expired (idle longer than the run expiry)",
        ),
        (
            "run_task_mismatch",
            "the request names another task than the one the run is bound to",
        ),
        (
            "run_rebind",
            "init_run names an existing run id with another spec or task and no \"rebind\": true",
        ),
        (
            "dispatch_prompt_overflow_terminal",
            "the prompt is over the role's input budget even after compaction",
        ),
        (
            "invalid_spec_name",
            "spec_name is empty, `.` or `..`, or holds a path separator or NUL",
        ),
        (
            "task_not_found",
            "the task id is not in the spec's tasks.md",
        ),
        (
            "not_a_dispatch_role",
            "the request's role is not implementer or reviewer",
        ),
        (
            "task_status_write_failed",
            "set_task_status could not rewrite tasks.md (read-only, disk full, …)",
        ),
        ("store_not_found", "the store has no fact with that id"),
        ("store_invalid_update", "the store refused an update"),
        (
            "store_duplicate_statement",
            "the store already holds that statement",
        ),
        ("store_snapshot_json", "a snapshot is not valid JSON"),
        (
            "store_snapshot_version",
            "a snapshot has a version this build does not read",
        ),
        ("store_io", "the store's file cannot be read or written"),
        (
            "store_busy",
            "the store's database stayed locked by another process beyond the busy timeout",
        ),
        (
            "store_corrupt",
            "the store's file is not a database this build wrote",
        ),
        (
            "store_newer_schema",
            "the database has a newer schema than this build knows",
        ),
        ("store_backend", "any other store failure"),
    ];
}

/// The protocol code of a store error: `store_` and the store's own code.
fn store_code(error: &StoreError) -> &'static str {
    match error.code() {
        "not_found" => "store_not_found",
        "invalid_update" => "store_invalid_update",
        "duplicate_statement" => "store_duplicate_statement",
        "snapshot_json" => "store_snapshot_json",
        "snapshot_version" => "store_snapshot_version",
        "io" => "store_io",
        "busy" => "store_busy",
        "corrupt" => "store_corrupt",
        "newer_schema" => "store_newer_schema",
        _ => "store_backend",
    }
}

/// What the orchestrator should do after an ingested output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    /// The implementer completed: review it.
    DispatchReviewer,
    /// The implementer is blocked: retry with the blockers as constraints.
    RetryImplementerWithConstraints,
    /// The implementer failed: retry.
    RetryImplementer,
    /// The reviewer approved: move on.
    AdvanceToNextTask,
    /// The reviewer asked for changes: dispatch the implementer with the fixes.
    DispatchImplementerFixes,
    /// The reviewer is blocked: a person must decide.
    HaltAndEscalate,
    /// The output broke the contract: this dispatch ends here.
    HaltSchemaInvalidTerminal,
}

/// How an ingested output ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IngestStatus {
    /// The output was valid and recorded.
    Recorded,
    /// The output broke the contract; nothing was recorded.
    Failed,
}

/// `init_run`: bind a run to a spec's task and load the spec's progress ledger.
///
/// ```
/// use dispatch_runtime::InitRunRequest;
///
/// let request = InitRunRequest::new("todo-api", "2").with_run_id("run-7");
/// assert_eq!(request.run_id.as_deref(), Some("run-7"));
/// assert!(request.project_path.is_none() && !request.rebind);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct InitRunRequest {
    /// The spec, the folder name under `.spec-context/specs/`.
    pub spec_name: String,
    /// The task the run works on.
    pub task_id: String,
    /// The project root (default: the runtime's project root, which `facts replay` and
    /// `facts mcp` take from `--project`, else the current directory).
    #[serde(default)]
    pub project_path: Option<PathBuf>,
    /// The run's id (default `{spec_name}:{task_id}`).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Allow binding an existing run id to another spec or task, which starts a new task
    /// ledger for it (default false: that is a `run_rebind` error).
    #[serde(default)]
    pub rebind: bool,
}

impl InitRunRequest {
    /// A request binding run `{spec_name}:{task_id}` to the task, in the runtime's project.
    #[must_use]
    pub fn new(spec_name: impl Into<String>, task_id: impl Into<String>) -> Self {
        InitRunRequest {
            spec_name: spec_name.into(),
            task_id: task_id.into(),
            project_path: None,
            run_id: None,
            rebind: false,
        }
    }

    /// Reads the spec from the project rooted at `project_path`.
    #[must_use]
    pub fn with_project_path(mut self, project_path: impl Into<PathBuf>) -> Self {
        self.project_path = Some(project_path.into());
        self
    }

    /// Names the run `run_id` instead of `{spec_name}:{task_id}`.
    #[must_use]
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Allows (`true`) binding an existing run id to another spec or task.
    #[must_use]
    pub fn with_rebind(mut self, rebind: bool) -> Self {
        self.rebind = rebind;
        self
    }
}

/// What `init_run` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InitRunResponse {
    /// The run's id.
    pub run_id: String,
    /// The tasks.md the ledger came from.
    pub tasks_path: PathBuf,
    /// The spec's active task.
    pub active_task_id: Option<String>,
    /// The spec's task counts: `total`, `completed`, `in_progress`, `pending` (the same
    /// shape as `facts ledger --json` and `set_task_status`).
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::protocol::totals"))]
    pub totals: Totals,
    /// What the tasks.md parser reported (lines that look like tasks but are not, …), as
    /// `line N: message`; empty when the file is clean.
    pub warnings: Vec<String>,
}

/// What `end_run` answers: the run that ended, and its task ledger's last state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EndRunResponse {
    /// The run.
    pub run_id: String,
    /// The spec it was bound to; its facts stay.
    pub spec_name: String,
    /// The task it was bound to.
    pub task_id: String,
    /// Its task ledger's last revision.
    pub revision: u64,
    /// Its last ingest status, if any output was ingested.
    pub status: Option<IngestStatus>,
}

/// `set_task_status`: rewrite one task's checkbox in the spec's tasks.md (`[ ]`, `[-]`,
/// `[x]`), in place and atomically, every other byte left as it was. The runtime never
/// moves the active task by itself: after `advance_to_next_task` the orchestrator marks the
/// task completed (here, or by editing the file), and the next `init_run` or
/// `compile_prompt` reads the new state.
///
/// ```
/// use dispatch_runtime::SetTaskStatusRequest;
/// use dispatch_runtime::reexports::TaskStatus;
///
/// let request = SetTaskStatusRequest::new("todo-api", "2", TaskStatus::Completed)
///     .with_project_path("/work/todo");
/// assert_eq!(request.status, TaskStatus::Completed);
/// assert!(request.project_path.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SetTaskStatusRequest {
    /// The spec, the folder name under `.spec-context/specs/`.
    pub spec_name: String,
    /// The task whose marker is rewritten.
    pub task_id: String,
    /// The new status: `pending`, `in_progress` or `completed`.
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::task_status")
    )]
    pub status: TaskStatus,
    /// The project root (default: the runtime's project root, as for `init_run`).
    #[serde(default)]
    pub project_path: Option<PathBuf>,
}

impl SetTaskStatusRequest {
    /// A request setting task `task_id` of spec `spec_name` to `status`, in the runtime's
    /// project.
    #[must_use]
    pub fn new(
        spec_name: impl Into<String>,
        task_id: impl Into<String>,
        status: TaskStatus,
    ) -> Self {
        SetTaskStatusRequest {
            spec_name: spec_name.into(),
            task_id: task_id.into(),
            status,
            project_path: None,
        }
    }

    /// Rewrites the tasks.md of the project rooted at `project_path`.
    #[must_use]
    pub fn with_project_path(mut self, project_path: impl Into<PathBuf>) -> Self {
        self.project_path = Some(project_path.into());
        self
    }
}

/// What `set_task_status` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetTaskStatusResponse {
    /// The tasks.md rewritten.
    pub tasks_path: PathBuf,
    /// The task.
    pub task_id: String,
    /// Its 1-based line in the file.
    pub line: usize,
    /// The status it had.
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::task_status")
    )]
    pub previous_status: TaskStatus,
    /// The status it has now.
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::task_status")
    )]
    pub status: TaskStatus,
    /// Whether the file was written (false when the task already had the status).
    pub changed: bool,
    /// The spec's active task afterwards (the first task not completed).
    pub active_task_id: Option<String>,
    /// The spec's totals afterwards.
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::protocol::totals"))]
    pub totals: Totals,
}

/// `ingest_output`: one agent's raw output for the run's task.
///
/// ```
/// use dispatch_runtime::IngestOutputRequest;
/// use dispatch_runtime::reexports::SourceRole;
///
/// let request = IngestOutputRequest::new("todo-api:2", SourceRole::Implementer, "2", "...")
///     .with_max_output_tokens(800);
/// assert_eq!(request.max_output_tokens, Some(800));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct IngestOutputRequest {
    /// The run.
    pub run_id: String,
    /// Who produced the output: a [dispatch agent](SourceRole::is_dispatch_agent).
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::dispatch_role")
    )]
    pub role: SourceRole,
    /// The task it answers.
    pub task_id: String,
    /// The raw output, prose and marked block.
    pub output: String,
    /// The output token budget (default 1200).
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

impl IngestOutputRequest {
    /// A request ingesting `output`, produced by `role` for task `task_id` of run `run_id`,
    /// under the default output budget.
    #[must_use]
    pub fn new(
        run_id: impl Into<String>,
        role: SourceRole,
        task_id: impl Into<String>,
        output: impl Into<String>,
    ) -> Self {
        IngestOutputRequest {
            run_id: run_id.into(),
            role,
            task_id: task_id.into(),
            output: output.into(),
            max_output_tokens: None,
        }
    }

    /// Checks the output against a budget of `tokens` output tokens.
    #[must_use]
    pub fn with_max_output_tokens(mut self, tokens: usize) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }
}

/// What a store's compaction did, in counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Compaction {
    /// Invalidated versions dropped from the history.
    pub dropped_history: usize,
    /// Valid facts merged into summaries.
    pub merged: usize,
    /// Summary facts written.
    pub summaries: usize,
    /// Valid facts dropped outright.
    pub dropped_valid: usize,
    /// Valid facts in the store afterwards.
    pub valid_after: usize,
}

/// A contract error, as the protocol reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    /// The stable code.
    pub code: String,
    /// A message for people.
    pub message: String,
}

/// What `ingest_output` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestOutputResponse {
    /// Recorded, or failed on the contract.
    pub status: IngestStatus,
    /// What to do next.
    pub next_action: NextAction,
    /// Whether the task needs a new plan (stalled or in a review loop).
    pub replan_required: bool,
    /// The replan hint, when one is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replan_hint: Option<String>,
    /// The facts extracted from this output, as `subject relation object` lines; at most
    /// 100 (`MAX_LISTED_FACTS`), the rest counted in `facts_extracted_omitted`.
    pub facts_extracted: Vec<String>,
    /// How many extracted facts `facts_extracted` does not list.
    pub facts_extracted_omitted: usize,
    /// Facts stored from this output (new versions; the rest were already known).
    pub facts_added: usize,
    /// Facts this output invalidated.
    pub facts_invalidated: usize,
    /// What the store's capacity policy did while storing this output's facts (absent
    /// when it did nothing): `facts_added` counts versions stored, some of which the
    /// compaction may have dropped again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// What the extractor reported (a failing rule, never a lost result).
    pub extraction_diagnostics: Vec<String>,
    /// The contract error, when the output broke the contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// `compile_prompt`: the prompt of the next dispatch of a run.
///
/// ```
/// use dispatch_runtime::CompilePromptRequest;
/// use dispatch_runtime::reexports::SourceRole;
///
/// let request = CompilePromptRequest::new("todo-api:2", SourceRole::Reviewer, "2")
///     .with_task_prompt("Review the retry logic");
/// assert_eq!(request.task_prompt.as_deref(), Some("Review the retry logic"));
/// assert_eq!(request.max_output_tokens, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CompilePromptRequest {
    /// The run.
    pub run_id: String,
    /// Who the prompt is for: a [dispatch agent](SourceRole::is_dispatch_agent).
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::dispatch_role")
    )]
    pub role: SourceRole,
    /// The run's task.
    pub task_id: String,
    /// The task prompt; without it, it is built from the ledger's entry for the task.
    #[serde(default)]
    pub task_prompt: Option<String>,
    /// The output budget the agent is told (default 1200).
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

impl CompilePromptRequest {
    /// A request for the prompt of `role`'s next dispatch on task `task_id` of run `run_id`,
    /// its task prompt built from the ledger, under the default output budget.
    #[must_use]
    pub fn new(run_id: impl Into<String>, role: SourceRole, task_id: impl Into<String>) -> Self {
        CompilePromptRequest {
            run_id: run_id.into(),
            role,
            task_id: task_id.into(),
            task_prompt: None,
            max_output_tokens: None,
        }
    }

    /// Uses `task_prompt` as the task prompt instead of the ledger's entry.
    #[must_use]
    pub fn with_task_prompt(mut self, task_prompt: impl Into<String>) -> Self {
        self.task_prompt = Some(task_prompt.into());
        self
    }

    /// Tells the agent its output budget is `tokens` tokens.
    #[must_use]
    pub fn with_max_output_tokens(mut self, tokens: usize) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }
}

/// Whether the guide was given in full or by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GuideMode {
    /// The first compile of a role in a run.
    Full,
    /// Later compiles: a reference to the guide already given.
    Compact,
    /// The emergency form of an over-budget prompt, which has no guide; the next compile
    /// of the role gives the full guide.
    Omitted,
}

/// Where the task prompt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LedgerMode {
    /// The ledger entry alone (or the prompt the caller gave).
    LedgerOnly,
    /// The ledger entry plus only the missing pieces (e.g. the named acceptance criteria).
    LedgerPlusFallback,
    /// The full spec documents, in the explicit legacy mode.
    Legacy,
}

/// The telemetry name of a [`LedgerMode`]: its `snake_case` wire name.
pub(super) fn ledger_mode_name(mode: LedgerMode) -> &'static str {
    match mode {
        LedgerMode::LedgerOnly => "ledger_only",
        LedgerMode::LedgerPlusFallback => "ledger_plus_fallback",
        LedgerMode::Legacy => "legacy",
    }
}

/// How far an over-budget prompt was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CompactionStage {
    /// Within budget as compiled.
    None,
    /// The delta packet was pruned to what a retry needs.
    DeltaPruned,
    /// The task prompt was shortened too.
    TaskPromptShortened,
    /// Emergency form: contract, task id and the shortened task prompt only.
    Emergency,
}

/// What `compile_prompt` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompilePromptResponse {
    /// The prompt: the stable prefix, a blank line, the dynamic tail.
    pub prompt: String,
    /// BLAKE3 of the stable prefix (16 hex characters): changes only with the role.
    pub stable_prefix_hash: String,
    /// BLAKE3 of the whole prompt (16 hex characters).
    pub full_prompt_hash: String,
    /// The ledger state sent as `Delta context`.
    pub delta_packet: serde_json::Value,
    /// The `[Session Context]` section, empty when no fact qualified.
    pub session_context: String,
    /// The ids of the facts in it.
    pub session_fact_ids: Vec<String>,
    /// Full or compact guide.
    pub guide_mode: GuideMode,
    /// `{role}:{run}`.
    pub guide_cache_key: String,
    /// What the prompt costs.
    pub prompt_tokens: usize,
    /// The role's input budget.
    pub prompt_token_budget: usize,
    /// What replaying the full spec documents would cost instead.
    pub baseline_prompt_tokens: usize,
    /// Where the task prompt came from.
    pub ledger_mode: LedgerMode,
    /// Why something beyond the ledger entry was added.
    pub fallback_reason: Option<String>,
    /// How far the prompt was compacted.
    pub compaction_stage: CompactionStage,
}

/// What `get_snapshot` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Snapshot {
    /// The run.
    pub run_id: String,
    /// The task ledger's revision.
    pub revision: u64,
    /// The run's last ingest status, if any output was ingested.
    pub status: Option<IngestStatus>,
    /// The task-ledger facts.
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::object_array")
    )]
    pub facts: Vec<StateSnapshotFact>,
    /// Every change, oldest first.
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::protocol::object_array")
    )]
    pub history: Vec<LedgerChange>,
}

/// Counters over the manager's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Telemetry {
    /// Outputs ingested, valid or not.
    pub dispatch_count: u64,
    /// Tokens of the valid result blocks.
    pub total_output_tokens: u64,
    /// Tokens of the raw outputs ingested: what observation masking would drop.
    pub observation_tokens_ingested: u64,
    /// Reviews that asked for the same changes twice in a row.
    pub approval_loops: u64,
    /// Contract errors by code.
    pub schema_error_counts: BTreeMap<String, u64>,
    /// Progress-ledger compilations.
    pub ledger_rebuild_count: u64,
    /// Compiled prompts by ledger mode.
    pub ledger_mode_usage: BTreeMap<String, u64>,
    /// Fallback reasons by count.
    pub fallback_reasons: BTreeMap<String, u64>,
    /// Tokens of every compiled prompt.
    pub prompt_tokens_actual: u64,
    /// Tokens the same prompts would cost replaying the full spec documents.
    pub prompt_tokens_baseline: u64,
    /// `prompt_tokens_baseline - prompt_tokens_actual` (negative if prompts cost more).
    pub prompt_token_delta: i64,
    /// Tokens of the `[Session Context]` sections injected.
    pub session_context_tokens_injected: u64,
    /// `session_context_tokens_injected / observation_tokens_ingested` (0 before any
    /// output): the raw figure, which counts masking's savings once.
    pub injected_to_observed_ratio: f64,
    /// What observation masking saves over the session: an orchestrator re-sends its
    /// history on every dispatch cycle, so each raw output ingested saves its tokens once
    /// per later cycle of its spec. Counted as, for every compiled prompt, the tokens of
    /// all outputs of that spec ingested before it (`sum over observations of tokens x
    /// later cycles`).
    pub masking_savings_tokens: u64,
    /// `session_context_tokens_injected / masking_savings_tokens` (0 before any saving):
    /// what injecting facts costs against what masking saves, seed 000's measure (goal
    /// under 0.1).
    pub injected_to_masked_ratio: f64,
    /// Median time of the retrievals for compiled prompts, in microseconds, by the
    /// manager's clock (0 under a manual clock, and before any retrieval). Estimated from a
    /// histogram of fixed size: within 1/128 (0.8%) of the exact median, exact below 128 µs.
    pub retrieval_p50_us: f64,
    /// The 99th percentile of the same times, estimated as the median is.
    pub retrieval_p99_us: f64,
    /// Facts stored (versions, over all specs).
    pub facts_stored: usize,
    /// Facts valid now (over all specs).
    pub facts_valid: usize,
    /// Invalidated versions kept as history (over all specs).
    pub facts_invalidated: usize,
}
