//! [`DispatchRuntimeManager`]: runs, their ledgers and their spec's facts, composed from
//! trait objects: `init_run`, `end_run`, `ingest_output`, snapshots, fact queries and
//! telemetry here; `compile_prompt` in `compile`; the request and response types in `api`;
//! the retrieval latencies' histogram in `histogram`.
//!
//! # Locking
//!
//! Every run and every spec has a lock of its own. The maps that find them (`runs`,
//! `specs`) and the counters are locked only to look up, insert or remove an entry or to
//! add to a counter, never across I/O. A request on a run holds that run's lock for its
//! whole length, store transactions, retrieval and tasks.md reads included: requests on
//! one run take turns, as they always did, and requests on other runs and specs never wait
//! for them. A spec's lock is held only while its store is opened. Locks are taken in one
//! order: a run, then a map, then a spec, then the counters.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use fact_extract::{Extraction, FactExtractor, RuleBasedFactExtractor, relation};
use fact_model::{
    Assessment, Clock, DispatchResult, ImplementerStatus, Message, MessageRole, SessionFact,
    SourceRole, SystemClock,
};
use fact_model::{CharsPerToken, TokenCounter};
use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever};
use fact_store::{
    AddReport, Episode, EpisodeStore, InMemorySessionFactStore, SessionFactStore, Step, StepReport,
    StoreConfig, StoreError, StoreResult, Transaction,
};
use ledger::{LedgerCache, LedgerError, StallConfig, TaskLedger};
use serde::{Deserialize, Serialize};

use crate::{ContractError, DEFAULT_MAX_OUTPUT_TOKENS, parse_output};

mod api;
mod compile;
mod histogram;

use self::api::ledger_mode_name;
pub use self::api::{
    Compaction, CompactionStage, CompilePromptRequest, CompilePromptResponse, EndRunResponse,
    ErrorBody, GuideMode, IngestOutputRequest, IngestOutputResponse, IngestStatus, InitRunRequest,
    InitRunResponse, LedgerMode, NextAction, RuntimeError, SetTaskStatusRequest,
    SetTaskStatusResponse, Snapshot, Telemetry,
};
use self::histogram::LatencyHistogram;

/// A run: its binding, fixed for its life, and what its requests change, behind the run's
/// own lock.
struct RunEntry {
    spec_name: String,
    task_id: String,
    /// When a request last named the run, in microseconds since the epoch by the runtime's
    /// clock: a run idle longer than the runtime's expiry is dropped.
    last_used: AtomicI64,
    /// Set (before the run leaves the map) when it is ended, expires or is bound anew: a
    /// request that found it just before then answers that the run is not initialized.
    ended: AtomicBool,
    state: Mutex<Run>,
}

impl RunEntry {
    /// The run's state, or [`RuntimeError::RunNotInitialized`] when it has ended since it
    /// was found.
    fn lock(&self, run_id: &str) -> Result<MutexGuard<'_, Run>, RuntimeError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if self.ended.load(Ordering::Acquire) {
            return Err(RuntimeError::RunNotInitialized {
                run_id: run_id.to_owned(),
            });
        }
        Ok(state)
    }
}

/// What a run's requests change.
struct Run {
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
    guided: Vec<SourceRole>,
}

/// The documents of a spec folder; empty when a file is missing.
struct SpecDocs {
    requirements: String,
    design: String,
    tasks: String,
}

impl SpecDocs {
    /// The spec's documents in `dir`. A missing document is empty (requirements and design
    /// are optional); one that exists but cannot be read (not UTF-8, no permission) is
    /// empty too, with a warning for `init_run` to return, never silently.
    fn read(dir: &std::path::Path) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut read = |name: &str| match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => {
                warnings.push(format!(
                    "{name} cannot be read ({error}); the prompts go without it"
                ));
                String::new()
            }
        };
        let docs = SpecDocs {
            requirements: read("requirements.md"),
            design: read("design.md"),
            tasks: read("tasks.md"),
        };
        (docs, warnings)
    }
}

/// A spec's facts: its store, and the retriever over it. Everything a result settles is
/// in the store, so a runtime restarted on a durable store picks up where it was. Shared
/// (`Arc`) by the requests on the spec, none of which holds a lock to use it: the store
/// and the retriever take care of their own concurrency.
struct Spec {
    store: Arc<dyn SessionFactStore>,
    retriever: Box<dyn FactRetriever>,
    /// Tokens of every raw output ingested for the spec so far: what an orchestrator that
    /// masks observations no longer re-sends on each later dispatch cycle.
    observed_tokens: AtomicU64,
}

/// A spec's place in the runtime: empty until its store is opened. Its store is opened
/// under `opening`, which only another request opening the same spec waits for; `spec` is
/// held only to read or set the value, so nothing waits for an opening to read the specs
/// that are open.
#[derive(Default)]
struct SpecSlot {
    opening: Mutex<()>,
    spec: Mutex<Option<Arc<Spec>>>,
}

impl SpecSlot {
    /// The spec, if its store is open.
    fn get(&self) -> Option<Arc<Spec>> {
        lock(&self.spec).clone()
    }
}

impl Spec {
    /// Puts a result's facts into the store after invalidating what the result settles
    /// (the extractor decides: an approval settles the issues its task's reviews raised
    /// and the task's fixes and blockers, a completed implementation its blockers); the
    /// result's own facts go in last, so notes an approving review makes stay valid.
    /// Returns how many facts were added and how many invalidated.
    ///
    /// The settles and the facts are one [`Transaction`]: no failure, and no other writer,
    /// comes between them. It carries `key`, so a result retried after an unknown outcome
    /// (`store_io`) is applied at most once.
    ///
    /// After an automatic compaction the store's valid count is read: when that read
    /// fails, the facts are stored and the error is returned.
    fn remember(&self, extraction: Extraction, key: String) -> StoreResult<Remembered> {
        let mut transaction = Transaction::new().with_key(key);
        for selector in extraction.settles {
            transaction.push(Step::EndMatching(selector));
        }
        let facts = extraction.facts.len();
        transaction.push(Step::Add(extraction.facts));
        let applied = {
            let _span = tracing::info_span!("store", operation = "apply", facts).entered();
            self.store.apply(transaction)?
        };
        let mut settled = 0;
        let mut report = AddReport::default();
        for step in applied.steps {
            match step {
                StepReport::Ended { ids } => settled += ids.len(),
                StepReport::Added(added) => report = added,
                _ => {}
            }
        }
        report.compaction = applied.compaction;
        let compaction = match &report.compaction {
            Some(c) => Some(Compaction {
                dropped_history: c.dropped_history,
                merged: c.merged,
                summaries: c.summaries.len(),
                dropped_valid: c.dropped_valid.len(),
                valid_after: self.store.valid_count()?,
            }),
            None => None,
        };
        Ok(Remembered {
            added: report.added.len(),
            invalidated: report.invalidated.len() + settled,
            compaction,
        })
    }
}

/// The key of an ingest's transaction: the run, task and role, and a hash of the output, so
/// the same request retried is applied once.
fn ingest_key(request: &IngestOutputRequest) -> String {
    let output = blake3::hash(request.output.as_bytes());
    format!(
        "ingest:{}:{}:{}:{}",
        request.run_id,
        request.task_id,
        request.role,
        output.to_hex()
    )
}

/// A store's error as the runtime reports it: [`RuntimeError::Store`], whose protocol
/// code is `store_` and the store's own.
fn store_error(source: StoreError) -> RuntimeError {
    RuntimeError::Store { source }
}

/// What [`Spec::remember`] did.
struct Remembered {
    added: usize,
    invalidated: usize,
    compaction: Option<Compaction>,
}

/// The most extracted facts an ingest response lists; the rest are counted, so a result
/// with thousands of facts does not make a response line of megabytes.
pub const MAX_LISTED_FACTS: usize = 100;

impl Spec {}

/// What [`DispatchRuntimeManager::archive_spec`] stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecArchive {
    /// The episode of the session.
    pub episode_id: String,
    /// Its generated summary.
    pub summary: String,
    /// What the durable store did with the session's valid facts.
    pub facts: AddReport,
}

/// A one-paragraph summary of a spec session, from its valid facts.
fn session_summary(spec_name: &str, facts: &[SessionFact]) -> String {
    let with = |relation: &str| -> Vec<&SessionFact> {
        facts.iter().filter(|f| f.relation() == relation).collect()
    };
    let completed: Vec<&str> = with(relation::COMPLETED_WITH)
        .into_iter()
        .filter(|f| f.object() == "completed")
        .map(|f| f.subject())
        .collect();
    let mut files: Vec<&str> = with(relation::MODIFIED_BY)
        .iter()
        .map(|f| f.subject())
        .collect();
    files.sort_unstable();
    files.dedup();
    let issues = with(relation::ISSUE).len();
    let conventions: Vec<String> = facts
        .iter()
        .filter(|f| f.tags().contains(fact_model::Tag::Convention))
        .map(|f| fact_model::clip(f.object(), 80).into_owned())
        .take(3)
        .collect();
    let list = |items: &[&str]| {
        let shown: Vec<&str> = items.iter().take(8).copied().collect();
        let more = items.len().saturating_sub(shown.len());
        let mut text = shown.join(", ");
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    };
    let mut summary = format!(
        "Spec {spec_name}: {} valid facts; {} tasks completed",
        facts.len(),
        completed.len()
    );
    if !completed.is_empty() {
        summary.push_str(&format!(" ({})", list(&completed)));
    }
    summary.push_str(&format!("; {} files changed", files.len()));
    if !files.is_empty() {
        summary.push_str(&format!(" ({})", list(&files)));
    }
    summary.push_str(&format!("; {issues} open issues"));
    if !conventions.is_empty() {
        summary.push_str(&format!("; conventions: {}", conventions.join("; ")));
    }
    summary.push('.');
    summary
}

/// Where a valid result sends the orchestrator next.
fn next_action(result: &DispatchResult) -> NextAction {
    match result {
        DispatchResult::Implementer(r) => match r.status {
            ImplementerStatus::Completed => NextAction::DispatchReviewer,
            ImplementerStatus::Blocked => NextAction::RetryImplementerWithConstraints,
            ImplementerStatus::Failed => NextAction::RetryImplementer,
        },
        DispatchResult::Reviewer(r) => match r.assessment {
            Assessment::Approved => NextAction::AdvanceToNextTask,
            Assessment::NeedsChanges => NextAction::DispatchImplementerFixes,
            Assessment::Blocked => NextAction::HaltAndEscalate,
        },
    }
}

/// Refuses a spec name that is not one plain folder name, so no request reaches a file
/// outside `<project>/.spec-context/specs/`.
fn check_spec_name(spec_name: &str) -> Result<(), RuntimeError> {
    let reason = if spec_name.is_empty() {
        Some("it is empty")
    } else if spec_name == "." || spec_name == ".." {
        Some("it names a folder, not a spec")
    } else if spec_name.contains(['/', '\\']) {
        Some("it holds a path separator; a spec name is one folder name")
    } else if spec_name.contains('\0') {
        Some("it holds a NUL byte")
    } else if spec_name.len() > 255 {
        Some("it is longer than 255 bytes")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(RuntimeError::InvalidSpecName {
            spec_name: fact_model::clip(spec_name, 120).into_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// `<project>/.spec-context/specs/<spec>/tasks.md`.
fn tasks_path(project: &Path, spec_name: &str) -> PathBuf {
    project
        .join(".spec-context")
        .join("specs")
        .join(spec_name)
        .join("tasks.md")
}

/// The counters of [`Telemetry`], and the retrievals' latencies.
#[derive(Default)]
struct Counters {
    telemetry: Telemetry,
    /// How long the retrievals took, in microseconds, in fixed memory.
    retrieval_us: LatencyHistogram,
}

/// Makes the store of a spec, from the spec's name and the runtime's clock; a durable
/// store can fail to open.
pub type StoreFactory =
    Box<dyn Fn(&str, Arc<dyn Clock>) -> StoreResult<Arc<dyn SessionFactStore>> + Send + Sync>;
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
    project_root: PathBuf,
    run_expiry: Option<Duration>,
}

/// How prompts are compiled.
///
/// ```
/// use dispatch_runtime::PromptConfig;
///
/// let prompts = PromptConfig::default().with_max_facts(5).with_auto_compaction(false);
/// assert_eq!((prompts.max_facts, prompts.max_fact_tokens), (5, 500));
/// assert!(!prompts.auto_compaction);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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

impl PromptConfig {
    /// Gives the implementer's prompt a budget of `tokens` input tokens.
    #[must_use]
    pub fn with_implementer_budget(mut self, tokens: usize) -> Self {
        self.implementer_budget = tokens;
        self
    }

    /// Gives the reviewer's prompt a budget of `tokens` input tokens.
    #[must_use]
    pub fn with_reviewer_budget(mut self, tokens: usize) -> Self {
        self.reviewer_budget = tokens;
        self
    }

    /// Compacts an over-budget prompt in stages (`true`) or reports it as an overflow.
    #[must_use]
    pub fn with_auto_compaction(mut self, auto_compaction: bool) -> Self {
        self.auto_compaction = auto_compaction;
        self
    }

    /// Embeds the full spec documents (`true`) instead of the ledger entry.
    #[must_use]
    pub fn with_legacy(mut self, legacy: bool) -> Self {
        self.legacy = legacy;
        self
    }

    /// Puts at most `max_facts` facts in the `[Session Context]` section.
    #[must_use]
    pub fn with_max_facts(mut self, max_facts: usize) -> Self {
        self.max_facts = max_facts;
        self
    }

    /// Lets the `[Session Context]` section cost at most `tokens` tokens.
    #[must_use]
    pub fn with_max_fact_tokens(mut self, tokens: usize) -> Self {
        self.max_fact_tokens = tokens;
        self
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            clock: Arc::new(SystemClock),
            counter: Arc::new(CharsPerToken::default()),
            extractor: None,
            stores: Box::new(|_, clock| {
                Ok(Arc::new(InMemorySessionFactStore::new(
                    StoreConfig::default(),
                    clock,
                )))
            }),
            retrievers: Box::new(|store, counter| {
                Box::new(IndexRetriever::new(store).with_counter(counter))
            }),
            stall: StallConfig::default(),
            prompts: PromptConfig::default(),
            project_root: PathBuf::from("."),
            run_expiry: None,
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

    /// The project root of `init_run` requests that name none, or name `null` (default: the
    /// current directory). The one place that default is decided, for every front end.
    #[must_use]
    pub fn project_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.project_root = root.into();
        self
    }

    /// Drops a run that no request has named for longer than `idle`, by the runtime's
    /// clock (default: none; a run lives until `end_run` or the end of the process). A
    /// request naming a dropped run is [`RuntimeError::RunNotInitialized`], as for a run
    /// never initialized; its spec's facts stay, only the run's task ledger goes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dispatch_runtime::DispatchRuntimeManager;
    ///
    /// let runtime = DispatchRuntimeManager::builder()
    ///     .run_expiry(Duration::from_secs(24 * 3600))
    ///     .build();
    /// # drop(runtime);
    /// ```
    #[must_use]
    pub fn run_expiry(mut self, idle: Duration) -> Self {
        self.run_expiry = Some(idle);
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
            project_root: self.project_root,
            run_expiry: self
                .run_expiry
                .map(|idle| i64::try_from(idle.as_micros()).unwrap_or(i64::MAX)),
            ledgers: LedgerCache::default(),
            runs: Mutex::default(),
            specs: Mutex::default(),
            counters: Mutex::default(),
        }
    }
}

/// Runs spec tasks through implementer and reviewer dispatches, remembering what each
/// result decided. Facts are scoped per spec: all runs of a spec share one store, and no
/// fact crosses to another spec.
///
/// ```
/// use std::sync::Arc;
/// use dispatch_runtime::{DispatchRuntimeManager, IngestOutputRequest, InitRunRequest, NextAction};
/// use fact_model::SourceRole;
///
/// let dir = std::env::temp_dir().join(format!("runtime-doc-{}", std::process::id()));
/// let specs = dir.join(".spec-context/specs/demo");
/// std::fs::create_dir_all(&specs)?;
/// std::fs::write(specs.join("tasks.md"), "- [ ] 1. Parse tasks.md\n")?;
///
/// let runtime = DispatchRuntimeManager::builder().build();
/// let run = runtime.init_run(InitRunRequest::new("demo", "1").with_project_path(&dir))?;
/// let output = "BEGIN_DISPATCH_RESULT\n{\"task_id\": \"1\", \"status\": \"completed\", \
///               \"summary\": \"Parser added in src/parse.rs\"}\nEND_DISPATCH_RESULT";
/// let ingested =
///     runtime.ingest_output(IngestOutputRequest::new(run.run_id, SourceRole::Implementer, "1", output))?;
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
    project_root: PathBuf,
    /// The idle time after which a run is dropped, in microseconds.
    run_expiry: Option<i64>,
    ledgers: LedgerCache,
    /// The runs by id. Locked only to find, add or remove one.
    runs: Mutex<HashMap<String, Arc<RunEntry>>>,
    /// The specs by name. Locked only to find or add one.
    specs: Mutex<HashMap<String, Arc<SpecSlot>>>,
    counters: Mutex<Counters>,
}

impl std::fmt::Debug for DispatchRuntimeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchRuntimeManager")
            .field("runs", &self.run_count())
            .field("specs", &lock(&self.specs).len())
            .field("extractor", &self.extractor)
            .finish_non_exhaustive()
    }
}

/// A lock's guard; a lock a panicking thread held is used as it was left (every critical
/// section leaves its state whole at each step).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DispatchRuntimeManager {
    /// A builder with every default.
    #[must_use]
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The counters, held only to add to them or to read them.
    fn counters(&self) -> MutexGuard<'_, Counters> {
        lock(&self.counters)
    }

    /// Now, in microseconds since the epoch, by the runtime's clock.
    fn now_micros(&self) -> i64 {
        self.clock.now().unix_micros()
    }

    /// Whether `run` has been idle longer than the runtime's expiry at `now`.
    fn expired(&self, run: &RunEntry, now: i64) -> bool {
        self.run_expiry.is_some_and(|expiry| {
            now.saturating_sub(run.last_used.load(Ordering::Acquire)) > expiry
        })
    }

    /// Drops every run idle longer than the expiry, marking each ended first.
    fn sweep(&self, runs: &mut HashMap<String, Arc<RunEntry>>, now: i64) {
        if self.run_expiry.is_some() {
            runs.retain(|_, run| {
                let expired = self.expired(run, now);
                if expired {
                    run.ended.store(true, Ordering::Release);
                }
                !expired
            });
        }
    }

    /// The run `run_id`, named again now; [`RuntimeError::RunNotInitialized`] when there is
    /// none, or it was idle longer than the expiry (it is dropped then).
    fn run(&self, run_id: &str) -> Result<Arc<RunEntry>, RuntimeError> {
        let now = self.now_micros();
        let mut runs = lock(&self.runs);
        match runs.get(run_id).cloned() {
            Some(run) if !self.expired(&run, now) => {
                run.last_used.fetch_max(now, Ordering::AcqRel);
                Ok(run)
            }
            Some(run) => {
                run.ended.store(true, Ordering::Release);
                runs.remove(run_id);
                Err(RuntimeError::RunNotInitialized {
                    run_id: run_id.to_owned(),
                })
            }
            None => Err(RuntimeError::RunNotInitialized {
                run_id: run_id.to_owned(),
            }),
        }
    }

    /// How many runs the runtime holds (some may have expired and wait for the next
    /// `init_run` to be dropped).
    #[must_use]
    pub fn run_count(&self) -> usize {
        lock(&self.runs).len()
    }

    /// The spec's store and retriever, opened on first use. Only the spec's own slot is
    /// locked while its store opens.
    fn spec(&self, spec_name: &str) -> Result<Arc<Spec>, RuntimeError> {
        check_spec_name(spec_name)?;
        let slot = lock(&self.specs)
            .entry(spec_name.to_owned())
            .or_default()
            .clone();
        if let Some(spec) = slot.get() {
            return Ok(spec);
        }
        let _opening = lock(&slot.opening);
        // Another request may have opened it while this one waited.
        if let Some(spec) = slot.get() {
            return Ok(spec);
        }
        let spec = self.open_spec(spec_name)?;
        *lock(&slot.spec) = Some(spec.clone());
        Ok(spec)
    }

    /// The spec, if its store is open.
    fn opened_spec(&self, spec_name: &str) -> Option<Arc<Spec>> {
        lock(&self.specs).get(spec_name).cloned()?.get()
    }

    /// A new store of the spec, and the retriever over it.
    fn open_spec(&self, spec_name: &str) -> Result<Arc<Spec>, RuntimeError> {
        let store = (self.stores)(spec_name, self.clock.clone()).map_err(store_error)?;
        let retriever = (self.retrievers)(store.clone(), self.counter.clone());
        Ok(Arc::new(Spec {
            store,
            retriever,
            observed_tokens: AtomicU64::new(0),
        }))
    }

    /// Binds a run to a spec's task and loads the spec's progress ledger from
    /// `<project>/.spec-context/specs/<spec>/tasks.md`.
    ///
    /// With a [run expiry](RuntimeBuilder::run_expiry), runs idle longer than it are
    /// dropped here.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::ProgressLedgerMissingTasks`] or [`RuntimeError::ProgressLedgerInvalid`].
    pub fn init_run(&self, request: InitRunRequest) -> Result<InitRunResponse, RuntimeError> {
        check_spec_name(&request.spec_name)?;
        let project = request
            .project_path
            .clone()
            .unwrap_or_else(|| self.project_root.clone());
        let tasks_path = tasks_path(&project, &request.spec_name);
        let progress = self.progress(&request.spec_name, &tasks_path)?;
        if progress.task(&request.task_id).is_none() {
            return Err(RuntimeError::TaskNotFound {
                spec_name: request.spec_name,
                task_id: request.task_id,
                tasks_path,
            });
        }
        let mut warnings: Vec<String> = progress
            .diagnostics()
            .iter()
            .map(|d| format!("line {}: {}", d.line, d.message))
            .collect();
        let run_id = request
            .run_id
            .clone()
            .unwrap_or_else(|| format!("{}:{}", request.spec_name, request.task_id));
        let same_binding =
            |run: &RunEntry| run.spec_name == request.spec_name && run.task_id == request.task_id;
        let rebind_error = |run: &RunEntry| RuntimeError::RunRebind {
            run_id: run_id.clone(),
            bound_spec: run.spec_name.clone(),
            bound_task: run.task_id.clone(),
        };
        // Refused before any store is opened or file read; checked again when the run is
        // put in place, in case another request bound it meanwhile.
        if !request.rebind
            && let Some(run) = lock(&self.runs).get(&run_id)
            && !same_binding(run)
            && !self.expired(run, self.now_micros())
        {
            return Err(rebind_error(run));
        }
        self.spec(&request.spec_name)?;
        let (docs, unreadable) = SpecDocs::read(tasks_path.parent().unwrap_or(Path::new(".")));
        warnings.extend(unreadable);
        let now = self.clock.now();
        let mut ledger = TaskLedger::new(request.task_id.clone(), self.stall);
        ledger.apply_progress(&progress, now);
        let fresh = Run {
            docs,
            tasks_path: tasks_path.clone(),
            progress: progress.clone(),
            ledger,
            status: None,
            guided: Vec::new(),
        };
        loop {
            let kept = {
                let mut runs = lock(&self.runs);
                self.sweep(&mut runs, now.unix_micros());
                match runs.get(&run_id).cloned() {
                    Some(run) if same_binding(&run) => run,
                    Some(run) if !request.rebind => return Err(rebind_error(&run)),
                    previous => {
                        // A new run, or a new binding, which starts a new task ledger.
                        if let Some(previous) = previous {
                            previous.ended.store(true, Ordering::Release);
                        }
                        let run = RunEntry {
                            spec_name: request.spec_name.clone(),
                            task_id: request.task_id.clone(),
                            last_used: AtomicI64::new(now.unix_micros()),
                            ended: AtomicBool::new(false),
                            state: Mutex::new(fresh),
                        };
                        runs.insert(run_id.clone(), Arc::new(run));
                        break;
                    }
                }
            };
            // Initializing a run again with the same binding keeps its task ledger (revision
            // history, stall and review-loop counters), after a request still running on it.
            let mut run = lock(&kept.state);
            if kept.ended.load(Ordering::Acquire) {
                // Ended or expired since it was found: start anew.
                continue;
            }
            kept.last_used
                .fetch_max(now.unix_micros(), Ordering::AcqRel);
            run.ledger.apply_progress(&progress, now);
            run.docs = fresh.docs;
            run.tasks_path = fresh.tasks_path;
            run.progress = fresh.progress;
            run.status = None;
            run.guided.clear();
            break;
        }
        Ok(InitRunResponse {
            run_id,
            tasks_path,
            active_task_id: progress.active_task().map(|t| t.id().to_owned()),
            totals: progress.totals(),
            warnings,
        })
    }

    /// Ends a run: it is dropped with its task ledger, and a later request naming it is
    /// [`RuntimeError::RunNotInitialized`] (until `init_run` starts it again, with a new
    /// ledger). Its spec's facts stay. A request still running on the run finishes first,
    /// and the answer is the run's last state.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::RunNotInitialized`] when there is no such run (never initialized,
    /// already ended, or expired).
    pub fn end_run(&self, run_id: &str) -> Result<EndRunResponse, RuntimeError> {
        let now = self.now_micros();
        let run = {
            let mut runs = lock(&self.runs);
            let run = runs
                .remove(run_id)
                .ok_or_else(|| RuntimeError::RunNotInitialized {
                    run_id: run_id.to_owned(),
                })?;
            run.ended.store(true, Ordering::Release);
            if self.expired(&run, now) {
                return Err(RuntimeError::RunNotInitialized {
                    run_id: run_id.to_owned(),
                });
            }
            run
        };
        let state = lock(&run.state);
        Ok(EndRunResponse {
            run_id: run_id.to_owned(),
            spec_name: run.spec_name.clone(),
            task_id: run.task_id.clone(),
            revision: state.ledger.revision(),
            status: state.status,
        })
    }

    /// The spec's progress ledger from the cache (a `stat` when tasks.md is unchanged).
    fn progress(
        &self,
        spec_name: &str,
        tasks_path: &Path,
    ) -> Result<Arc<ledger::ProgressLedger>, RuntimeError> {
        self.ledgers
            .load(spec_name, tasks_path)
            .map(|(progress, _)| progress)
            .map_err(|stale| match stale.error {
                error @ LedgerError::MissingTasksFile { .. } => {
                    RuntimeError::ProgressLedgerMissingTasks {
                        spec_name: spec_name.to_owned(),
                        source: error,
                    }
                }
                error => RuntimeError::ProgressLedgerInvalid {
                    spec_name: spec_name.to_owned(),
                    source: error,
                },
            })
    }

    /// Rewrites one task's checkbox in the spec's tasks.md, in place and atomically (see
    /// [`SetTaskStatusRequest`]), and answers the spec's progress afterwards.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::InvalidSpecName`], [`RuntimeError::ProgressLedgerMissingTasks`],
    /// [`RuntimeError::TaskNotFound`] (the file is left as it was),
    /// [`RuntimeError::TaskStatusWrite`] when the file cannot be replaced (it is left as it
    /// was), or [`RuntimeError::ProgressLedgerInvalid`] when it cannot be read.
    pub fn set_task_status(
        &self,
        request: SetTaskStatusRequest,
    ) -> Result<SetTaskStatusResponse, RuntimeError> {
        check_spec_name(&request.spec_name)?;
        let project = request
            .project_path
            .clone()
            .unwrap_or_else(|| self.project_root.clone());
        let tasks_path = tasks_path(&project, &request.spec_name);
        let spec_name = request.spec_name;
        let outcome = ledger::set_task_status(&tasks_path, &request.task_id, request.status)
            .map_err(|error| match error {
                LedgerError::TaskNotFound { task_id, path } => RuntimeError::TaskNotFound {
                    spec_name: spec_name.clone(),
                    task_id,
                    tasks_path: path,
                },
                error @ LedgerError::MissingTasksFile { .. } => {
                    RuntimeError::ProgressLedgerMissingTasks {
                        spec_name: spec_name.clone(),
                        source: error,
                    }
                }
                error @ LedgerError::Write { .. } => RuntimeError::TaskStatusWrite {
                    spec_name: spec_name.clone(),
                    source: error,
                },
                error => RuntimeError::ProgressLedgerInvalid {
                    spec_name: spec_name.clone(),
                    source: error,
                },
            })?;
        let progress = self.progress(&spec_name, &tasks_path)?;
        Ok(SetTaskStatusResponse {
            tasks_path,
            task_id: outcome.task_id,
            line: outcome.line,
            previous_status: outcome.previous,
            status: outcome.status,
            changed: outcome.changed,
            active_task_id: progress.active_task().map(|t| t.id().to_owned()),
            totals: progress.totals(),
        })
    }

    /// Whether this runtime knows `spec_name`: a run of it was initialized, or its store
    /// holds facts (a durable store remembers specs of earlier processes). A query about a
    /// spec it does not know answers nothing, and the protocol says so in a warning.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::InvalidSpecName`], or [`RuntimeError::Store`] when the spec's store
    /// cannot be opened or read.
    pub fn knows_spec(&self, spec_name: &str) -> Result<bool, RuntimeError> {
        check_spec_name(spec_name)?;
        let now = self.now_micros();
        if lock(&self.runs)
            .values()
            .any(|run| run.spec_name == spec_name && !self.expired(run, now))
        {
            return Ok(true);
        }
        if let Some(spec) = self.opened_spec(spec_name) {
            return Ok(spec.store.stored_count().map_err(store_error)? > 0);
        }
        // A store opened to look is kept only when it holds facts: no misspelled name keeps
        // an empty (or unreadable) store open.
        let spec = self.open_spec(spec_name)?;
        let stored = spec.store.stored_count().map_err(store_error)?;
        if stored > 0 {
            let slot = lock(&self.specs)
                .entry(spec_name.to_owned())
                .or_default()
                .clone();
            lock(&slot.spec).get_or_insert(spec);
        }
        Ok(stored > 0)
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
    /// [`RuntimeError::NotADispatchRole`], [`RuntimeError::RunNotInitialized`],
    /// [`RuntimeError::RunTaskMismatch`], or [`RuntimeError::Store`] when the spec's store
    /// cannot be opened or cannot write (nothing of the result is recorded then, and the
    /// run's ledger is unchanged), or cannot be read after an automatic compaction (the
    /// result's facts are stored then, the run's ledger is unchanged, and ingesting the
    /// same output again records it: its facts are refreshed, not repeated).
    pub fn ingest_output(
        &self,
        request: IngestOutputRequest,
    ) -> Result<IngestOutputResponse, RuntimeError> {
        if !request.role.is_dispatch_agent() {
            return Err(RuntimeError::NotADispatchRole { role: request.role });
        }
        let entry = self.run(&request.run_id)?;
        if entry.task_id != request.task_id {
            return Err(RuntimeError::RunTaskMismatch {
                run_id: request.run_id,
                bound: entry.task_id.clone(),
                requested: request.task_id,
            });
        }
        // The run's lock is held to the end: requests on one run take turns.
        let mut run = entry.lock(&request.run_id)?;
        let observed = self.counter.count(&request.output) as u64;
        {
            let mut counters = self.counters();
            counters.telemetry.dispatch_count += 1;
            counters.telemetry.observation_tokens_ingested += observed;
        }
        if let Some(spec) = self.opened_spec(&entry.spec_name) {
            spec.observed_tokens.fetch_add(observed, Ordering::Relaxed);
        }
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
            Err(error) => return Ok(self.contract_failure(&mut run, &error)),
        };
        self.counters().telemetry.total_output_tokens += tokens as u64;
        let now = self.clock.now();
        let extraction = {
            let span = tracing::info_span!("extraction", facts = tracing::field::Empty);
            let _entered = span.enter();
            let extraction = self.extractor.extract(&result, &request.task_id);
            span.record("facts", extraction.facts.len());
            extraction
        };
        let facts_extracted: Vec<String> = extraction
            .facts
            .iter()
            .take(MAX_LISTED_FACTS)
            .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
            .collect();
        let facts_extracted_omitted = extraction.facts.len() - facts_extracted.len();
        let extraction_diagnostics = extraction
            .diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.rule, d.message))
            .collect();
        let remembered = self
            .spec(&entry.spec_name)?
            .remember(extraction, ingest_key(&request))
            .map_err(store_error)?;
        run.ledger.apply(&result, now);
        let next_action = next_action(&result);
        run.status = Some(IngestStatus::Recorded);
        let stall = run.ledger.stall();
        let replan_hint = run
            .ledger
            .get(ledger::keys::TASK_REPLAN_HINT)
            .filter(|h| !h.is_empty())
            .map(str::to_owned);
        if stall.review_loop && request.role == SourceRole::Reviewer {
            self.counters().telemetry.approval_loops += 1;
        }
        Ok(IngestOutputResponse {
            status: IngestStatus::Recorded,
            next_action,
            replan_required: stall.replan_required(),
            replan_hint,
            facts_extracted,
            facts_extracted_omitted,
            facts_added: remembered.added,
            facts_invalidated: remembered.invalidated,
            compaction: remembered.compaction,
            extraction_diagnostics,
            error: None,
        })
    }

    fn contract_failure(&self, run: &mut Run, error: &ContractError) -> IngestOutputResponse {
        *self
            .counters()
            .telemetry
            .schema_error_counts
            .entry(error.code().to_owned())
            .or_default() += 1;
        run.status = Some(IngestStatus::Failed);
        IngestOutputResponse {
            status: IngestStatus::Failed,
            next_action: NextAction::HaltSchemaInvalidTerminal,
            replan_required: false,
            replan_hint: None,
            facts_extracted: Vec::new(),
            facts_extracted_omitted: 0,
            facts_added: 0,
            facts_invalidated: 0,
            compaction: None,
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
        let entry = self.run(run_id)?;
        let run = entry.lock(run_id)?;
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
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Store`] when the spec's store cannot be opened or read.
    pub fn query_facts(
        &self,
        spec_name: &str,
        query: &FactQuery,
    ) -> Result<fact_retrieve::Retrieval, RuntimeError> {
        self.spec(spec_name)?
            .retriever
            .retrieve(query)
            .map_err(store_error)
    }

    /// Every version of the facts about `subject` in `spec_name`, oldest first.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Store`] when the spec's store cannot be opened or read.
    pub fn fact_history(
        &self,
        spec_name: &str,
        subject: &str,
    ) -> Result<Vec<SessionFact>, RuntimeError> {
        self.spec(spec_name)?
            .store
            .history(subject)
            .map_err(store_error)
    }

    /// Archives a spec's session into a durable memory: its valid facts go into `facts`
    /// as one batch (already-valid ones are refreshed, not repeated), and an episode with a
    /// generated summary (tasks completed, files changed, open issues, conventions) goes
    /// into `episodes`. Give it the stores of scope `spec:NAME`
    /// (see `durable::spec_scope`).
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Store`] when a store cannot be opened, read or written; when the
    /// spec's facts cannot be read nothing is archived (never an empty session).
    pub fn archive_spec(
        &self,
        spec_name: &str,
        facts: &dyn SessionFactStore,
        episodes: &dyn EpisodeStore,
    ) -> Result<SpecArchive, RuntimeError> {
        let valid = self
            .spec(spec_name)?
            .store
            .valid_facts()
            .map_err(store_error)?;
        // The session as messages: one line per valid fact, said when it became valid.
        let messages: Vec<Message> = valid
            .iter()
            .map(|f| {
                let mut line = format!("{} {} {}", f.subject(), f.relation(), f.object());
                if let Some(statement) = f.statement() {
                    line.push_str(": ");
                    line.push_str(statement);
                }
                Message::new(MessageRole::System, line).at(f.valid_from())
            })
            .collect();
        let mut episode = Episode::new(
            format!("spec {spec_name}: dispatch session"),
            session_summary(spec_name, &valid),
            messages,
            self.clock.now(),
        );
        episode.tags = vec![format!("spec:{spec_name}"), "dispatch".to_owned()];
        episode.extracted_at = Some(self.clock.now());
        let report = facts.add(valid).map_err(store_error)?;
        episodes.put_episode(&episode).map_err(store_error)?;
        Ok(SpecArchive {
            episode_id: episode.id,
            summary: episode.summary,
            facts: report,
        })
    }

    /// The counters so far, with the stores' current fact counts.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Store`] when a spec's store cannot be read (its counts would be
    /// wrong, so no telemetry is answered).
    pub fn telemetry(&self) -> Result<Telemetry, RuntimeError> {
        let mut telemetry = {
            let counters = self.counters();
            let mut telemetry = counters.telemetry.clone();
            let percentile = |q| counters.retrieval_us.percentile(q).unwrap_or(0) as f64;
            telemetry.retrieval_p50_us = percentile(0.5);
            telemetry.retrieval_p99_us = percentile(0.99);
            telemetry
        };
        telemetry.ledger_rebuild_count = self.ledgers.rebuilds();
        telemetry.prompt_token_delta = i64::try_from(telemetry.prompt_tokens_baseline)
            .unwrap_or(i64::MAX)
            - i64::try_from(telemetry.prompt_tokens_actual).unwrap_or(i64::MAX);
        if telemetry.observation_tokens_ingested > 0 {
            telemetry.injected_to_observed_ratio = telemetry.session_context_tokens_injected as f64
                / telemetry.observation_tokens_ingested as f64;
        }
        if telemetry.masking_savings_tokens > 0 {
            telemetry.injected_to_masked_ratio = telemetry.session_context_tokens_injected as f64
                / telemetry.masking_savings_tokens as f64;
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
        // The stores are read without any lock held: their counts may include writes that
        // finish while this runs.
        let slots: Vec<Arc<SpecSlot>> = lock(&self.specs).values().cloned().collect();
        let specs: Vec<Arc<Spec>> = slots.iter().filter_map(|slot| slot.get()).collect();
        for spec in specs {
            let stored = spec.store.stored_count().map_err(store_error)?;
            let valid = spec.store.valid_count().map_err(store_error)?;
            telemetry.facts_stored += stored;
            telemetry.facts_valid += valid;
            telemetry.facts_invalidated += stored.saturating_sub(valid);
        }
        Ok(telemetry)
    }
}
