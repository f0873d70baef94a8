//! [`DispatchRuntimeManager`]: runs, their ledgers and their spec's facts, composed from
//! trait objects. The ingest side: `init_run`, `ingest_output`, snapshots, fact queries and
//! telemetry.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use fact_extract::{FactExtractor, RuleBasedFactExtractor};
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
    /// Facts stored from this output.
    pub facts_added: usize,
    /// Facts this output invalidated.
    pub facts_invalidated: usize,
    /// What the extractor reported (a failing rule, never a lost result).
    pub extraction_diagnostics: Vec<String>,
    /// The contract error, when the output broke the contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
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
    ledger: TaskLedger,
    status: Option<IngestStatus>,
}

struct Spec {
    store: Arc<dyn SessionFactStore>,
    retriever: Box<dyn FactRetriever>,
}

#[derive(Default)]
struct State {
    runs: HashMap<String, Run>,
    specs: HashMap<String, Spec>,
    telemetry: Telemetry,
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

    fn spec<'s>(&self, state: &'s mut State, spec_name: &str) -> &'s Spec {
        state.specs.entry(spec_name.to_owned()).or_insert_with(|| {
            let store = (self.stores)(spec_name, self.clock.clone());
            let retriever = (self.retrievers)(store.clone(), self.counter.clone());
            Spec { store, retriever }
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
        let mut ledger = TaskLedger::new(request.task_id.clone(), self.stall);
        ledger.apply_progress(&progress, self.clock.now());
        let mut state = self.lock();
        self.spec(&mut state, &request.spec_name);
        state.telemetry.ledger_rebuild_count = self.ledgers.rebuilds();
        state.runs.insert(
            run_id.clone(),
            Run {
                spec_name: request.spec_name.clone(),
                task_id: request.task_id.clone(),
                ledger,
                status: None,
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
        let store = self.spec(&mut state, &spec_name).store.clone();
        let report = store.add(extraction.facts);
        // What a result settles but adds no fact for: an approval settles earlier fixes and
        // blockers, a completed implementation its blockers.
        let mut settled = Vec::new();
        match &result {
            DispatchResult::Implementer(r) if r.status == ImplementerStatus::Completed => {
                settled.extend(store.invalidate(&task_subject, "blocked_by"));
            }
            DispatchResult::Reviewer(r) if r.assessment == Assessment::Approved => {
                settled.extend(store.invalidate(&task_subject, "must_fix"));
                settled.extend(store.invalidate(&task_subject, "blocked_by"));
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
            facts_added: 0,
            facts_invalidated: 0,
            extraction_diagnostics: Vec::new(),
            error: Some(ErrorBody {
                code: error.code().to_owned(),
                message: error.to_string(),
            }),
        }
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
        for spec in state.specs.values() {
            let stored = spec.store.export_snapshot().records.len();
            let valid = spec.store.valid_count();
            telemetry.facts_stored += stored;
            telemetry.facts_valid += valid;
            telemetry.facts_invalidated += stored.saturating_sub(valid);
        }
        telemetry
    }
}
