//! [`DispatchRuntimeManager`]: runs, their ledgers and their spec's facts, composed from
//! trait objects. The ingest side: `init_run`, `ingest_output`, snapshots, fact queries and
//! telemetry.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use fact_extract::{FactExtractor, RuleBasedFactExtractor, relation};
use fact_model::{Assessment, Clock, ImplementerStatus, SessionFact, SystemClock};
use fact_retrieve::{CharsPerToken, FactQuery, FactRetriever, IndexRetriever, TokenCounter};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
use ledger::{LedgerCache, LedgerChange, LedgerError, StallConfig, StateSnapshotFact, TaskLedger};
use serde::{Deserialize, Serialize};

use crate::{ContractError, DEFAULT_MAX_OUTPUT_TOKENS, DispatchResult, Role, parse_output};

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
    /// The run was never initialized.
    #[error("run {run_id:?} was not initialized; call init_run first")]
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
        }
    }
}

/// What the orchestrator should do after an ingested output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "snake_case")]
pub enum IngestStatus {
    /// The output was valid and recorded.
    Recorded,
    /// The output broke the contract; nothing was recorded.
    Failed,
}

/// `init_run`: bind a run to a spec's task and load the spec's progress ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InitRunRequest {
    /// The spec, the folder name under `.spec-context/specs/`.
    pub spec_name: String,
    /// The task the run works on.
    pub task_id: String,
    /// The project root (default: the current directory).
    #[serde(default)]
    pub project_path: Option<PathBuf>,
    /// The run's id (default `{spec_name}:{task_id}`).
    #[serde(default)]
    pub run_id: Option<String>,
}

/// What `init_run` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitRunResponse {
    /// The run's id.
    pub run_id: String,
    /// The tasks.md the ledger came from.
    pub tasks_path: PathBuf,
    /// The spec's active task.
    pub active_task_id: Option<String>,
    /// How many tasks the spec has.
    pub total_tasks: usize,
}

/// `ingest_output`: one agent's raw output for the run's task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestOutputRequest {
    /// The run.
    pub run_id: String,
    /// Who produced the output.
    pub role: Role,
    /// The task it answers.
    pub task_id: String,
    /// The raw output, prose and marked block.
    pub output: String,
    /// The output token budget (default 1200).
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

/// A contract error, as the protocol reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    /// The stable code.
    pub code: String,
    /// A message for people.
    pub message: String,
}

/// What `ingest_output` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// The facts extracted from this output, as `subject relation object` lines.
    pub facts_extracted: Vec<String>,
    /// Facts stored from this output (new versions; the rest were already known).
    pub facts_added: usize,
    /// Facts this output invalidated.
    pub facts_invalidated: usize,
    /// What the extractor reported (a failing rule, never a lost result).
    pub extraction_diagnostics: Vec<String>,
    /// The contract error, when the output broke the contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// `compile_prompt`: the prompt of the next dispatch of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompilePromptRequest {
    /// The run.
    pub run_id: String,
    /// Who the prompt is for.
    pub role: Role,
    /// The run's task.
    pub task_id: String,
    /// The task prompt; without it, it is built from the ledger's entry for the task.
    #[serde(default)]
    pub task_prompt: Option<String>,
    /// The output budget the agent is told (default 1200).
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

/// Whether the guide was given in full or by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "snake_case")]
pub enum LedgerMode {
    /// The ledger entry alone (or the prompt the caller gave).
    LedgerOnly,
    /// The ledger entry plus only the missing pieces (e.g. the named acceptance criteria).
    LedgerPlusFallback,
    /// The full spec documents, in the explicit legacy mode.
    Legacy,
}

/// How far an over-budget prompt was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
pub struct Snapshot {
    /// The run.
    pub run_id: String,
    /// The task ledger's revision.
    pub revision: u64,
    /// The run's last ingest status, if any output was ingested.
    pub status: Option<IngestStatus>,
    /// The task-ledger facts.
    pub facts: Vec<StateSnapshotFact>,
    /// Every change, oldest first.
    pub history: Vec<LedgerChange>,
}

/// Counters over the manager's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// `session_context_tokens_injected / observation_tokens_ingested` (0 before any output).
    pub injected_to_observed_ratio: f64,
    /// Median time of the retrievals for compiled prompts, in microseconds, by the
    /// manager's clock (0 under a manual clock).
    pub retrieval_p50_us: f64,
    /// Facts stored (versions, over all specs).
    pub facts_stored: usize,
    /// Facts valid now (over all specs).
    pub facts_valid: usize,
    /// Invalidated versions kept as history (over all specs).
    pub facts_invalidated: usize,
}

struct Run {
    spec_name: String,
    task_id: String,
    /// The spec's documents, read once when the run starts: `compile_prompt` takes
    /// acceptance criteria from them and prices the full-replay baseline with them.
    docs: SpecDocs,
    /// The spec's tasks.md; every compile asks the ledger cache for it again (a `stat`
    /// when unchanged), so an edited tasks.md reaches the next prompt.
    tasks_path: PathBuf,
    progress: Arc<ledger::ProgressLedger>,
    ledger: TaskLedger,
    status: Option<IngestStatus>,
    /// Roles whose full guide this run has been given.
    guided: Vec<Role>,
}

/// The documents of a spec folder; empty when a file is missing.
struct SpecDocs {
    requirements: String,
    design: String,
    tasks: String,
}

impl SpecDocs {
    fn read(dir: &std::path::Path) -> Self {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        SpecDocs {
            requirements: read("requirements.md"),
            design: read("design.md"),
            tasks: read("tasks.md"),
        }
    }
}

struct Spec {
    store: Arc<dyn SessionFactStore>,
    retriever: Box<dyn FactRetriever>,
    /// Per task, the subjects of the `issue` facts its reviews raised and no approval has
    /// settled yet. Kept per spec, not per run, so a task re-initialized under a new run
    /// still settles its issues.
    open_issues: HashMap<String, BTreeSet<String>>,
}

#[derive(Default)]
struct State {
    runs: HashMap<String, Run>,
    specs: HashMap<String, Spec>,
    telemetry: Telemetry,
    /// How long each retrieval took, in microseconds.
    retrieval_us: Vec<i64>,
}

/// Makes the store of a spec.
pub type StoreFactory =
    Box<dyn Fn(&str, Arc<dyn Clock>) -> Arc<dyn SessionFactStore> + Send + Sync>;
/// Makes the retriever over a spec's store.
pub type RetrieverFactory = Box<
    dyn Fn(Arc<dyn SessionFactStore>, Arc<dyn TokenCounter>) -> Box<dyn FactRetriever>
        + Send
        + Sync,
>;

/// Builds a [`DispatchRuntimeManager`]; every part has a default.
pub struct RuntimeBuilder {
    clock: Arc<dyn Clock>,
    counter: Arc<dyn TokenCounter>,
    extractor: Option<Box<dyn FactExtractor>>,
    stores: StoreFactory,
    retrievers: RetrieverFactory,
    stall: StallConfig,
    prompts: PromptConfig,
}

/// How prompts are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptConfig {
    /// The implementer's input budget in tokens (default 4800).
    pub implementer_budget: usize,
    /// The reviewer's input budget in tokens (default 4000).
    pub reviewer_budget: usize,
    /// Whether an over-budget prompt is compacted in stages (default true); without it, an
    /// over-budget prompt is `dispatch_prompt_overflow_terminal`.
    pub auto_compaction: bool,
    /// Embed the full spec documents instead of the ledger entry (default false).
    pub legacy: bool,
    /// The most facts in the `[Session Context]` section (default 10).
    pub max_facts: usize,
    /// The most tokens the section may cost (default 500).
    pub max_fact_tokens: usize,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            implementer_budget: 4800,
            reviewer_budget: 4000,
            auto_compaction: true,
            legacy: false,
            max_facts: 10,
            max_fact_tokens: 500,
        }
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            clock: Arc::new(SystemClock),
            counter: Arc::new(CharsPerToken::default()),
            extractor: None,
            stores: Box::new(|_, clock| {
                Arc::new(InMemorySessionFactStore::new(StoreConfig::default(), clock))
            }),
            retrievers: Box::new(|store, counter| {
                Box::new(IndexRetriever::new(store).with_counter(counter))
            }),
            stall: StallConfig::default(),
            prompts: PromptConfig::default(),
        }
    }
}

impl RuntimeBuilder {
    /// The clock (default: the system clock).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The token counter (default: four characters per token).
    #[must_use]
    pub fn token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// The fact extractor (default: the rule extractor with the default rules).
    #[must_use]
    pub fn extractor(mut self, extractor: Box<dyn FactExtractor>) -> Self {
        self.extractor = Some(extractor);
        self
    }

    /// How a spec's store is made (default: an in-memory store with the default config).
    #[must_use]
    pub fn stores(mut self, stores: StoreFactory) -> Self {
        self.stores = stores;
        self
    }

    /// How a spec's retriever is made (default: BM25 over the store's index).
    #[must_use]
    pub fn retrievers(mut self, retrievers: RetrieverFactory) -> Self {
        self.retrievers = retrievers;
        self
    }

    /// How prompts are compiled.
    #[must_use]
    pub fn prompts(mut self, prompts: PromptConfig) -> Self {
        self.prompts = prompts;
        self
    }

    /// The stall threshold of every task ledger (default 2).
    #[must_use]
    pub fn stall(mut self, stall: StallConfig) -> Self {
        self.stall = stall;
        self
    }

    /// The manager.
    #[must_use]
    pub fn build(self) -> DispatchRuntimeManager {
        let extractor = self
            .extractor
            .unwrap_or_else(|| Box::new(RuleBasedFactExtractor::with_defaults(self.clock.clone())));
        DispatchRuntimeManager {
            clock: self.clock,
            counter: self.counter,
            extractor,
            stores: self.stores,
            retrievers: self.retrievers,
            stall: self.stall,
            prompts: self.prompts,
            ledgers: LedgerCache::default(),
            state: Mutex::new(State::default()),
        }
    }
}

/// Runs spec tasks through implementer and reviewer dispatches, remembering what each
/// result decided. Facts are scoped per spec: all runs of a spec share one store, and no
/// fact crosses to another spec.
///
/// ```
/// use std::sync::Arc;
/// use dispatch_runtime::{DispatchRuntimeManager, IngestOutputRequest, InitRunRequest, NextAction, Role};
///
/// let dir = std::env::temp_dir().join(format!("runtime-doc-{}", std::process::id()));
/// let specs = dir.join(".spec-context/specs/demo");
/// std::fs::create_dir_all(&specs)?;
/// std::fs::write(specs.join("tasks.md"), "- [ ] 1. Parse tasks.md\n")?;
///
/// let runtime = DispatchRuntimeManager::builder().build();
/// let run = runtime.init_run(InitRunRequest {
///     spec_name: "demo".into(), task_id: "1".into(), project_path: Some(dir.clone()), run_id: None,
/// })?;
/// let output = "BEGIN_DISPATCH_RESULT\n{\"task_id\": \"1\", \"status\": \"completed\", \
///               \"summary\": \"Parser added in src/parse.rs\"}\nEND_DISPATCH_RESULT";
/// let ingested = runtime.ingest_output(IngestOutputRequest {
///     run_id: run.run_id, role: Role::Implementer, task_id: "1".into(), output: output.into(),
///     max_output_tokens: None,
/// })?;
/// assert_eq!(ingested.next_action, NextAction::DispatchReviewer);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DispatchRuntimeManager {
    clock: Arc<dyn Clock>,
    counter: Arc<dyn TokenCounter>,
    extractor: Box<dyn FactExtractor>,
    stores: StoreFactory,
    retrievers: RetrieverFactory,
    stall: StallConfig,
    prompts: PromptConfig,
    ledgers: LedgerCache,
    state: Mutex<State>,
}

impl std::fmt::Debug for DispatchRuntimeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("DispatchRuntimeManager")
            .field("runs", &state.runs.len())
            .field("specs", &state.specs.len())
            .field("extractor", &self.extractor)
            .finish_non_exhaustive()
    }
}

impl DispatchRuntimeManager {
    /// A builder with every default.
    #[must_use]
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spec<'s>(&self, state: &'s mut State, spec_name: &str) -> &'s mut Spec {
        state.specs.entry(spec_name.to_owned()).or_insert_with(|| {
            let store = (self.stores)(spec_name, self.clock.clone());
            let retriever = (self.retrievers)(store.clone(), self.counter.clone());
            Spec {
                store,
                retriever,
                open_issues: HashMap::new(),
            }
        })
    }

    /// Binds a run to a spec's task and loads the spec's progress ledger from
    /// `<project>/.spec-context/specs/<spec>/tasks.md`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::ProgressLedgerMissingTasks`] or [`RuntimeError::ProgressLedgerInvalid`].
    pub fn init_run(&self, request: InitRunRequest) -> Result<InitRunResponse, RuntimeError> {
        let project = request
            .project_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        let tasks_path = project
            .join(".spec-context")
            .join("specs")
            .join(&request.spec_name)
            .join("tasks.md");
        let (progress, _) =
            self.ledgers
                .load(&request.spec_name, &tasks_path)
                .map_err(|stale| match stale.error {
                    error @ LedgerError::MissingTasksFile { .. } => {
                        RuntimeError::ProgressLedgerMissingTasks {
                            spec_name: request.spec_name.clone(),
                            source: error,
                        }
                    }
                    error => RuntimeError::ProgressLedgerInvalid {
                        spec_name: request.spec_name.clone(),
                        source: error,
                    },
                })?;
        let run_id = request
            .run_id
            .clone()
            .unwrap_or_else(|| format!("{}:{}", request.spec_name, request.task_id));
        let mut state = self.lock();
        self.spec(&mut state, &request.spec_name);
        state.telemetry.ledger_rebuild_count = self.ledgers.rebuilds();
        // Initializing a run again with the same binding keeps its task ledger (revision
        // history, stall and review-loop counters); a new binding starts a new ledger.
        let kept = state
            .runs
            .remove(&run_id)
            .filter(|run| run.spec_name == request.spec_name && run.task_id == request.task_id)
            .map(|run| run.ledger);
        let mut ledger =
            kept.unwrap_or_else(|| TaskLedger::new(request.task_id.clone(), self.stall));
        ledger.apply_progress(&progress, self.clock.now());
        let docs = SpecDocs::read(tasks_path.parent().unwrap_or(std::path::Path::new(".")));
        state.runs.insert(
            run_id.clone(),
            Run {
                spec_name: request.spec_name.clone(),
                task_id: request.task_id.clone(),
                docs,
                tasks_path: tasks_path.clone(),
                progress: progress.clone(),
                ledger,
                status: None,
                guided: Vec::new(),
            },
        );
        Ok(InitRunResponse {
            run_id,
            tasks_path,
            active_task_id: progress.active_task().map(|t| t.id().to_owned()),
            total_tasks: progress.totals().total,
        })
    }

    /// Reads one agent output into the run: contract checks, facts into the spec's store,
    /// the task ledger and stall state, and the next action.
    ///
    /// A contract error ends this dispatch, not the run: the response has status
    /// [`IngestStatus::Failed`], [`NextAction::HaltSchemaInvalidTerminal`] and the error,
    /// and the next output is checked afresh.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::RunNotInitialized`] or [`RuntimeError::RunTaskMismatch`].
    pub fn ingest_output(
        &self,
        request: IngestOutputRequest,
    ) -> Result<IngestOutputResponse, RuntimeError> {
        let mut state = self.lock();
        let (spec_name, bound) = match state.runs.get(&request.run_id) {
            Some(run) => (run.spec_name.clone(), run.task_id.clone()),
            None => {
                return Err(RuntimeError::RunNotInitialized {
                    run_id: request.run_id,
                });
            }
        };
        if bound != request.task_id {
            return Err(RuntimeError::RunTaskMismatch {
                run_id: request.run_id,
                bound,
                requested: request.task_id,
            });
        }
        state.telemetry.dispatch_count += 1;
        state.telemetry.observation_tokens_ingested += self.counter.count(&request.output) as u64;
        let budget = request
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let parsed = parse_output(
            request.role,
            &request.output,
            &request.task_id,
            budget,
            &*self.counter,
        );
        let (result, tokens) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return Ok(self.contract_failure(&mut state, &request.run_id, &error)),
        };
        state.telemetry.total_output_tokens += tokens as u64;
        let now = self.clock.now();
        let task_subject = format!("task:{}", request.task_id);
        let extraction = match &result {
            DispatchResult::Implementer(r) => {
                self.extractor.extract_from_implementer(r, &request.task_id)
            }
            DispatchResult::Reviewer(r) => {
                self.extractor.extract_from_reviewer(r, &request.task_id)
            }
        };
        let facts_extracted: Vec<String> = extraction
            .facts
            .iter()
            .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
            .collect();
        let spec = self.spec(&mut state, &spec_name);
        let store = spec.store.clone();
        let approved =
            matches!(&result, DispatchResult::Reviewer(r) if r.assessment == Assessment::Approved);
        // What a result settles but adds no fact for. An approval settles the issues the
        // task's earlier reviews raised (only this task's: another task's issue about the
        // same file stays), before its own batch goes in, so notes the approving review
        // itself makes stay valid.
        let mut settled = Vec::new();
        if approved {
            for subject in spec
                .open_issues
                .remove(&request.task_id)
                .unwrap_or_default()
            {
                settled.extend(store.invalidate_from_task(
                    &subject,
                    relation::ISSUE,
                    &request.task_id,
                ));
            }
        }
        let raised: Vec<String> = extraction
            .facts
            .iter()
            .filter(|f| f.relation() == relation::ISSUE)
            .map(|f| f.subject().to_owned())
            .collect();
        if !raised.is_empty() {
            let open = spec.open_issues.entry(request.task_id.clone()).or_default();
            open.extend(raised);
        }
        let report = store.add(extraction.facts);
        // An approval also settles the task's fixes and blockers, a completed
        // implementation its blockers.
        match &result {
            DispatchResult::Implementer(r) if r.status == ImplementerStatus::Completed => {
                settled.extend(store.invalidate(&task_subject, relation::BLOCKED_BY));
            }
            DispatchResult::Reviewer(_) if approved => {
                settled.extend(store.invalidate(&task_subject, relation::MUST_FIX));
                settled.extend(store.invalidate(&task_subject, relation::BLOCKED_BY));
            }
            _ => {}
        }
        let Some(run) = state.runs.get_mut(&request.run_id) else {
            return Err(RuntimeError::RunNotInitialized {
                run_id: request.run_id,
            });
        };
        let next_action = match &result {
            DispatchResult::Implementer(r) => {
                run.ledger.apply_implementer(r, now);
                match r.status {
                    ImplementerStatus::Completed => NextAction::DispatchReviewer,
                    ImplementerStatus::Blocked => NextAction::RetryImplementerWithConstraints,
                    ImplementerStatus::Failed => NextAction::RetryImplementer,
                }
            }
            DispatchResult::Reviewer(r) => {
                run.ledger.apply_reviewer(r, now);
                match r.assessment {
                    Assessment::Approved => NextAction::AdvanceToNextTask,
                    Assessment::NeedsChanges => NextAction::DispatchImplementerFixes,
                    Assessment::Blocked => NextAction::HaltAndEscalate,
                }
            }
        };
        run.status = Some(IngestStatus::Recorded);
        let stall = run.ledger.stall();
        let replan_hint = run
            .ledger
            .get(ledger::keys::TASK_REPLAN_HINT)
            .filter(|h| !h.is_empty())
            .map(str::to_owned);
        if stall.review_loop && request.role == Role::Reviewer {
            state.telemetry.approval_loops += 1;
        }
        Ok(IngestOutputResponse {
            status: IngestStatus::Recorded,
            next_action,
            replan_required: stall.replan_required(),
            replan_hint,
            facts_extracted,
            facts_added: report.added.len(),
            facts_invalidated: report.invalidated.len() + settled.len(),
            extraction_diagnostics: extraction
                .diagnostics
                .iter()
                .map(|d| format!("{}: {}", d.rule, d.message))
                .collect(),
            error: None,
        })
    }

    fn contract_failure(
        &self,
        state: &mut State,
        run_id: &str,
        error: &ContractError,
    ) -> IngestOutputResponse {
        *state
            .telemetry
            .schema_error_counts
            .entry(error.code().to_owned())
            .or_default() += 1;
        if let Some(run) = state.runs.get_mut(run_id) {
            run.status = Some(IngestStatus::Failed);
        }
        IngestOutputResponse {
            status: IngestStatus::Failed,
            next_action: NextAction::HaltSchemaInvalidTerminal,
            replan_required: false,
            replan_hint: None,
            facts_extracted: Vec::new(),
            facts_added: 0,
            facts_invalidated: 0,
            extraction_diagnostics: Vec::new(),
            error: Some(ErrorBody {
                code: error.code().to_owned(),
                message: error.to_string(),
            }),
        }
    }

    /// Compiles the prompt of the run's next dispatch for `role`: the role's stable prefix,
    /// then the dynamic tail in this order: `Task ID`, `Max output tokens`, `Delta context`
    /// (the ledger state, with the failure evidence on an implementer retry), `Guide cache
    /// key`, the guide instruction (full on the role's first compile in the run, compact
    /// after), the `[Session Context]` section (omitted when no fact qualifies), `Task
    /// prompt:` and the task prompt.
    ///
    /// Ledger-first: without `task_prompt`, the task prompt is the ledger's entry for the
    /// task (id, title, status, prompt, requirement ids); only missing pieces are added (the
    /// named acceptance criteria from requirements.md, or the task's details when it has no
    /// prompt), with the reason; full documents only in the legacy mode. Over the role's
    /// input budget, the prompt is compacted in stages, each kept only if it saves tokens.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::RunNotInitialized`], [`RuntimeError::RunTaskMismatch`], or
    /// [`RuntimeError::DispatchPromptOverflowTerminal`].
    pub fn compile_prompt(
        &self,
        request: CompilePromptRequest,
    ) -> Result<CompilePromptResponse, RuntimeError> {
        let mut state = self.lock();
        let run =
            state
                .runs
                .get_mut(&request.run_id)
                .ok_or_else(|| RuntimeError::RunNotInitialized {
                    run_id: request.run_id.clone(),
                })?;
        if run.task_id != request.task_id {
            return Err(RuntimeError::RunTaskMismatch {
                run_id: request.run_id.clone(),
                bound: run.task_id.clone(),
                requested: request.task_id.clone(),
            });
        }
        // An edited tasks.md reaches this prompt; one that cannot be compiled now leaves the
        // run on its last good ledger rather than failing the dispatch.
        if let Ok((progress, _)) = self.ledgers.load(&run.spec_name, &run.tasks_path)
            && !Arc::ptr_eq(&progress, &run.progress)
        {
            run.ledger.apply_progress(&progress, self.clock.now());
            run.progress = progress;
        }
        let docs = &run.docs;
        let task = run.progress.task(&request.task_id);
        // A blank task prompt is no task prompt: the ledger's entry is used instead.
        let given = request
            .task_prompt
            .as_deref()
            .filter(|p| !p.trim().is_empty());
        let (task_prompt, retrieval_text, ledger_mode, fallback_reasons) = if self.prompts.legacy {
            let own = given.map_or_else(|| task_text(task, &request.task_id), str::to_owned);
            let text = format!(
                "{own}\n\nrequirements.md:\n{}\n\ndesign.md:\n{}",
                docs.requirements, docs.design
            );
            let search =
                given.map_or_else(|| retrieval_text(task, &request.task_id), str::to_owned);
            (text, search, LedgerMode::Legacy, vec!["legacy_mode"])
        } else if let Some(given) = given {
            (
                given.to_owned(),
                given.to_owned(),
                LedgerMode::LedgerOnly,
                Vec::new(),
            )
        } else {
            ledger_first(task, &request.task_id, &docs.requirements)
        };
        let fallback_reason = (!fallback_reasons.is_empty()).then(|| fallback_reasons.join(","));
        let delta = delta_packet(&run.ledger, request.role);
        let guide_cache_key = format!("{}:{}", role_name(request.role), request.run_id);
        // The run counts as guided only once a prompt with the full guide is returned.
        let mut guide_mode = if run.guided.contains(&request.role) {
            GuideMode::Compact
        } else {
            GuideMode::Full
        };
        let spec_name = run.spec_name.clone();
        let baseline_docs = format!("{}\n{}\n{}", docs.requirements, docs.design, docs.tasks);
        let query = FactQuery {
            max_facts: self.prompts.max_facts,
            max_tokens: self.prompts.max_fact_tokens,
            ..FactQuery::new(request.task_id.clone(), retrieval_text)
        };
        let started = self.clock.now();
        let retrieval = self.spec(&mut state, &spec_name).retriever.retrieve(&query);
        let took = self.clock.now().unix_micros() - started.unix_micros();
        state.retrieval_us.push(took);
        let max_output = request
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let prefix = crate::prompt::stable_prefix(request.role);
        let budget = match request.role {
            Role::Implementer => self.prompts.implementer_budget,
            Role::Reviewer => self.prompts.reviewer_budget,
        };
        let parts = TailParts {
            task_id: &request.task_id,
            max_output,
            guide_cache_key: &guide_cache_key,
            guide: crate::prompt::guide_instruction(request.role, guide_mode == GuideMode::Full),
            session_context: &retrieval.section,
        };
        let count = |text: &str| self.counter.count(text);
        let mut stage = CompactionStage::None;
        let mut delta_sent = delta.clone();
        let mut prompt = assemble(prefix, &parts, &delta_sent, &task_prompt);
        let mut tokens = count(&prompt);
        if tokens > budget {
            if !self.prompts.auto_compaction {
                return Err(RuntimeError::DispatchPromptOverflowTerminal { tokens, budget });
            }
            let pruned = prune_delta(&delta);
            let candidate = assemble(prefix, &parts, &pruned, &task_prompt);
            if count(&candidate) < tokens {
                (delta_sent, prompt, stage) = (pruned, candidate, CompactionStage::DeltaPruned);
                tokens = count(&prompt);
            }
            if tokens > budget {
                let room = budget.saturating_sub(tokens.saturating_sub(count(&task_prompt)));
                let shortened = shorten(&task_prompt, room, &*self.counter);
                let candidate = assemble(prefix, &parts, &delta_sent, &shortened);
                if count(&candidate) < tokens {
                    (prompt, stage) = (candidate, CompactionStage::TaskPromptShortened);
                    tokens = count(&prompt);
                }
            }
            if tokens > budget {
                // The emergency form: the contract, the task's id and as much of its own
                // prompt (not the already shortened one) as fits; no delta, guide or context.
                let head = format!(
                    "{prefix}\n\nTask ID: {}\nMax output tokens: {max_output}\nTask prompt:\n",
                    request.task_id
                );
                let room = budget.saturating_sub(count(&head));
                let candidate = format!("{head}{}", shorten(&task_prompt, room, &*self.counter));
                if count(&candidate) < tokens {
                    (prompt, stage) = (candidate, CompactionStage::Emergency);
                    tokens = count(&prompt);
                    delta_sent = serde_json::Value::Object(serde_json::Map::new());
                    guide_mode = GuideMode::Omitted;
                }
            }
            if tokens > budget {
                return Err(RuntimeError::DispatchPromptOverflowTerminal { tokens, budget });
            }
        }
        let baseline_prompt_tokens = count(&format!("{prefix}\n\n{baseline_docs}\n{task_prompt}"));
        let session_context = if stage == CompactionStage::Emergency {
            String::new()
        } else {
            retrieval.section.clone()
        };
        let telemetry = &mut state.telemetry;
        *telemetry
            .ledger_mode_usage
            .entry(ledger_mode_name(ledger_mode).to_owned())
            .or_default() += 1;
        for reason in fallback_reasons {
            *telemetry
                .fallback_reasons
                .entry(reason.to_owned())
                .or_default() += 1;
        }
        telemetry.prompt_tokens_actual += tokens as u64;
        telemetry.prompt_tokens_baseline += baseline_prompt_tokens as u64;
        if !session_context.is_empty() {
            telemetry.session_context_tokens_injected += retrieval.tokens_used as u64;
        }
        if guide_mode == GuideMode::Full
            && let Some(run) = state.runs.get_mut(&request.run_id)
        {
            run.guided.push(request.role);
        }
        Ok(CompilePromptResponse {
            stable_prefix_hash: short_hash(prefix),
            full_prompt_hash: short_hash(&prompt),
            prompt,
            delta_packet: delta_sent,
            session_fact_ids: if session_context.is_empty() {
                Vec::new()
            } else {
                retrieval
                    .facts
                    .iter()
                    .map(|f| f.fact.id().to_string())
                    .collect()
            },
            session_context,
            guide_mode,
            guide_cache_key,
            prompt_tokens: tokens,
            prompt_token_budget: budget,
            baseline_prompt_tokens,
            ledger_mode,
            fallback_reason,
            compaction_stage: stage,
        })
    }

    /// The run's task ledger: revision, status, facts and their history.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::RunNotInitialized`].
    pub fn get_snapshot(&self, run_id: &str) -> Result<Snapshot, RuntimeError> {
        let state = self.lock();
        let run = state
            .runs
            .get(run_id)
            .ok_or_else(|| RuntimeError::RunNotInitialized {
                run_id: run_id.to_owned(),
            })?;
        Ok(Snapshot {
            run_id: run_id.to_owned(),
            revision: run.ledger.revision(),
            status: run.status,
            facts: run.ledger.snapshot(),
            history: run.ledger.history().to_vec(),
        })
    }

    /// The facts of `spec_name` relevant to a task, as the retriever ranks them, with the
    /// `[Session Context]` section they make.
    pub fn query_facts(&self, spec_name: &str, query: &FactQuery) -> fact_retrieve::Retrieval {
        let mut state = self.lock();
        self.spec(&mut state, spec_name).retriever.retrieve(query)
    }

    /// Every version of the facts about `subject` in `spec_name`, oldest first.
    pub fn fact_history(&self, spec_name: &str, subject: &str) -> Vec<SessionFact> {
        let mut state = self.lock();
        self.spec(&mut state, spec_name).store.history(subject)
    }

    /// The counters so far, with the stores' current fact counts.
    pub fn telemetry(&self) -> Telemetry {
        let state = self.lock();
        let mut telemetry = state.telemetry.clone();
        telemetry.ledger_rebuild_count = self.ledgers.rebuilds();
        let mut took = state.retrieval_us.clone();
        took.sort_unstable();
        telemetry.retrieval_p50_us = took.get(took.len() / 2).copied().unwrap_or(0) as f64;
        telemetry.prompt_token_delta = i64::try_from(telemetry.prompt_tokens_baseline)
            .unwrap_or(i64::MAX)
            - i64::try_from(telemetry.prompt_tokens_actual).unwrap_or(i64::MAX);
        if telemetry.observation_tokens_ingested > 0 {
            telemetry.injected_to_observed_ratio = telemetry.session_context_tokens_injected as f64
                / telemetry.observation_tokens_ingested as f64;
        }
        for mode in [
            LedgerMode::LedgerOnly,
            LedgerMode::LedgerPlusFallback,
            LedgerMode::Legacy,
        ] {
            telemetry
                .ledger_mode_usage
                .entry(ledger_mode_name(mode).to_owned())
                .or_insert(0);
        }
        for spec in state.specs.values() {
            let stored = spec.store.stored_count();
            let valid = spec.store.valid_count();
            telemetry.facts_stored += stored;
            telemetry.facts_valid += valid;
            telemetry.facts_invalidated += stored.saturating_sub(valid);
        }
        telemetry
    }
}

/// The fixed parts of a dynamic tail.
struct TailParts<'a> {
    task_id: &'a str,
    max_output: usize,
    guide_cache_key: &'a str,
    guide: &'a str,
    session_context: &'a str,
}

/// The prompt: prefix, blank line, then the tail in its fixed order.
fn assemble(
    prefix: &str,
    parts: &TailParts<'_>,
    delta: &serde_json::Value,
    task_prompt: &str,
) -> String {
    let mut tail = vec![
        format!("Task ID: {}", parts.task_id),
        format!("Max output tokens: {}", parts.max_output),
        format!("Delta context: {delta}"),
        format!("Guide cache key: {}", parts.guide_cache_key),
        parts.guide.to_owned(),
    ];
    if !parts.session_context.is_empty() {
        tail.push(parts.session_context.to_owned());
    }
    tail.push("Task prompt:".to_owned());
    tail.push(task_prompt.to_owned());
    format!("{prefix}\n\n{}", tail.join("\n"))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Implementer => "implementer",
        Role::Reviewer => "reviewer",
    }
}

fn ledger_mode_name(mode: LedgerMode) -> &'static str {
    match mode {
        LedgerMode::LedgerOnly => "ledger_only",
        LedgerMode::LedgerPlusFallback => "ledger_plus_fallback",
        LedgerMode::Legacy => "legacy",
    }
}

fn short_hash(text: &str) -> String {
    blake3::hash(text.as_bytes())
        .to_hex()
        .chars()
        .take(16)
        .collect()
}

/// The task's own text, for retrieval and as the head of a ledger-first prompt.
fn task_text(task: Option<&ledger::Task>, task_id: &str) -> String {
    match task {
        Some(task) => {
            let mut text = format!(
                "Task {}: {} ({})",
                task.id(),
                task.title(),
                task.status().as_str()
            );
            if let Some(prompt) = task.prompt() {
                text.push('\n');
                text.push_str(prompt);
            }
            text
        }
        None => format!("Task {task_id}"),
    }
}

/// The text facts are retrieved with: the task's title and what its prompt asks (the
/// prompt's `Task` section when it has one), never the fixed boilerplate around it.
fn retrieval_text(task: Option<&ledger::Task>, task_id: &str) -> String {
    match task {
        Some(task) => {
            let ask = task
                .prompt_section("Task")
                .or(task.prompt())
                .unwrap_or_default();
            format!("{} {ask}", task.title())
        }
        None => format!("Task {task_id}"),
    }
}

/// The ledger-first task prompt, the text to retrieve facts with, the mode and the reason.
/// The ledger-first task prompt, the retrieval text, the mode and every fallback reason
/// (`task_not_in_ledger`, `requirements_referenced`, `requirements_not_found`,
/// `prompt_missing`).
fn ledger_first(
    task: Option<&ledger::Task>,
    task_id: &str,
    requirements_md: &str,
) -> (String, String, LedgerMode, Vec<&'static str>) {
    let own = task_text(task, task_id);
    let search = retrieval_text(task, task_id);
    let Some(task) = task else {
        return (
            own,
            search,
            LedgerMode::LedgerPlusFallback,
            vec!["task_not_in_ledger"],
        );
    };
    let mut text = own.clone();
    let mut reasons = Vec::new();
    let ids = task.requirements();
    if !ids.is_empty() {
        text.push_str(&format!("\nRequirements: {}", ids.join(", ")));
        let (criteria, unmatched) = crate::prompt::acceptance_criteria(requirements_md, &ids);
        if !criteria.is_empty() {
            text.push_str("\nAcceptance criteria:\n");
            text.push_str(&criteria.join("\n"));
            reasons.push("requirements_referenced");
        }
        if !unmatched.is_empty() {
            text.push_str(&format!(
                "\nNot found in requirements.md: {}",
                unmatched.join(", ")
            ));
            reasons.push("requirements_not_found");
        }
    }
    if task.prompt().is_none() {
        for detail in task.details() {
            text.push_str(&format!("\n- {detail}"));
        }
        if let Some(purpose) = task.purpose() {
            text.push_str(&format!("\nPurpose: {purpose}"));
        }
        reasons.push("prompt_missing");
    }
    let mode = if reasons.is_empty() {
        LedgerMode::LedgerOnly
    } else {
        LedgerMode::LedgerPlusFallback
    };
    (text, search, mode, reasons)
}

/// The ledger state sent as `Delta context`.
fn delta_packet(task_ledger: &TaskLedger, role: Role) -> serde_json::Value {
    use ledger::keys;
    let text = |key: &str| {
        task_ledger
            .get(key)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let json = |key: &str| {
        task_ledger
            .get(key)
            .and_then(|v| serde_json::from_str::<serde_json::Value>(v).ok())
    };
    let mut packet = serde_json::Map::new();
    let mut put = |name: &str, value: Option<serde_json::Value>| {
        if let Some(value) =
            value.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
        {
            packet.insert(name.to_owned(), value);
        }
    };
    put(
        "active_task_id",
        text(keys::PROGRESS_ACTIVE_TASK_ID).map(Into::into),
    );
    put("totals", json(keys::PROGRESS_TOTALS));
    put("summary", text(keys::TASK_SUMMARY).map(Into::into));
    put(
        "reviewer_assessment",
        text(keys::TASK_REVIEWER_ASSESSMENT).map(Into::into),
    );
    put("reviewer_issues", json(keys::TASK_REVIEWER_ISSUES));
    put("required_fixes", json(keys::TASK_REQUIRED_FIXES));
    put("blockers", json(keys::TASK_BLOCKERS));
    put("stalled_count", json(keys::TASK_STALLED_COUNT));
    put("stalled_flagged", json(keys::TASK_STALLED_FLAGGED));
    put("replan_hint", text(keys::TASK_REPLAN_HINT).map(Into::into));
    if role == Role::Implementer {
        put(
            "failure_evidence",
            task_ledger.failure_evidence().map(Into::into),
        );
    }
    serde_json::Value::Object(packet)
}

/// The delta packet cut to what a retry needs: the active task, fixes, blockers, the stall
/// flag and the replan hint, each list cut to [`PRUNED_ITEMS`] and each text clipped to
/// [`PRUNED_CHARS`].
fn prune_delta(delta: &serde_json::Value) -> serde_json::Value {
    let keep = [
        "active_task_id",
        "required_fixes",
        "blockers",
        "stalled_flagged",
        "replan_hint",
    ];
    let pruned = delta
        .as_object()
        .map(|map| {
            map.iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), trim_value(v)))
                .collect()
        })
        .unwrap_or_default();
    serde_json::Value::Object(pruned)
}

/// Longest list a pruned delta keeps.
const PRUNED_ITEMS: usize = 5;
/// Longest text a pruned delta keeps, in chars.
const PRUNED_CHARS: usize = 200;

/// `value` with lists cut to [`PRUNED_ITEMS`] and strings clipped to [`PRUNED_CHARS`].
fn trim_value(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(fact_model::clip(text, PRUNED_CHARS).into_owned()),
        Value::Array(items) => {
            Value::Array(items.iter().take(PRUNED_ITEMS).map(trim_value).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), trim_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` cut on a char boundary to at most `tokens` under `counter`, marked with `...`
/// (the longest such [`clip`](fact_model::clip), found by binary search on its length).
fn shorten(text: &str, tokens: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= tokens {
        return text.to_owned();
    }
    let (mut low, mut high) = (0usize, fact_model::char_len(text));
    while low < high {
        let mid = (low + high).div_ceil(2);
        if counter.count(&fact_model::clip(text, mid)) <= tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    fact_model::clip(text, low).into_owned()
}
