//! The dispatch runtime: the one crate that composes the store, the extractor, the
//! retriever and the ledgers, behind trait objects.
//!
//! - the dispatch contract, [`parse_output`]: reading an agent's raw output into a validated
//!   [`DispatchResult`](fact_model::DispatchResult):
//!   exactly one marked block, JSON, a schema check that names the failing field, and an
//!   output token budget measured on the block;
//! - [`DispatchRuntimeManager`], composed from trait objects through [`RuntimeBuilder`]:
//!   `init_run`, `ingest_output` (facts into the spec's store, task ledger and stall state,
//!   the next action), `compile_prompt` (a stable prefix per role and a ledger-first dynamic
//!   tail with the `[Session Context]` section, within the role's budget), snapshots, fact
//!   queries, telemetry and `end_run`; each run and spec behind a lock of its own, so
//!   threads serving different specs never wait for each other's store;
//! - [`prompt`]: the per-role prefixes and guides, and the acceptance criteria a task names;
//! - [`protocol`]: the JSON protocol over those actions, spoken by `facts replay` and
//!   `facts mcp`;
//! - [`MemoryService`]: long-term conversational memory (add, search, history, recall,
//!   archive and backfill of transcripts) on any store.
//!
//! One task through the protocol, as an orchestrator drives it: the implementer's result is
//! ingested, and the next task's prompt carries what it changed.
//!
//! ```
//! use dispatch_runtime::{DispatchRuntimeManager, protocol};
//! use serde_json::json;
//!
//! let project = tempfile::tempdir()?;
//! let spec = project.path().join(".spec-context/specs/demo");
//! std::fs::create_dir_all(&spec)?;
//! std::fs::write(spec.join("tasks.md"), "- [ ] 1. Parse tasks.md\n- [ ] 2. Teach the parser task metadata\n")?;
//!
//! let runtime = DispatchRuntimeManager::builder().build();
//! let run = protocol::handle(&runtime, &json!({
//!     "action": "init_run", "spec_name": "demo", "task_id": "1", "project_path": project.path(),
//! }));
//! let output = "BEGIN_DISPATCH_RESULT\n{\"task_id\": \"1\", \"status\": \"completed\", \
//!               \"summary\": \"Parser added\", \"files_changed\": [\"src/parser.rs\"]}\nEND_DISPATCH_RESULT";
//! let ingested = protocol::handle(&runtime, &json!({
//!     "action": "ingest_output", "run_id": run["run_id"], "role": "implementer",
//!     "task_id": "1", "output": output,
//! }));
//! assert_eq!(ingested["next_action"], "dispatch_reviewer");
//!
//! let next = protocol::handle(&runtime, &json!({
//!     "action": "init_run", "spec_name": "demo", "task_id": "2", "project_path": project.path(),
//! }));
//! let prompt = protocol::handle(&runtime, &json!({
//!     "action": "compile_prompt", "run_id": next["run_id"], "role": "implementer", "task_id": "2",
//! }));
//! let context = prompt["session_context"].as_str().unwrap_or_default();
//! assert!(context.contains("src/parser.rs modified_by task:1"), "{context}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None is on by default.
//!
//! | feature | adds |
//! |---|---|
//! | `schema` | `protocol::actions()`: every action with the JSON Schemas of its request and response (for MCP tool lists; schemars) |
//! | `tiktoken` | real BPE token counting (`BpeTokenCounter`, fact-retrieve's `tiktoken`), re-exported in [`reexports`] |
//! | `onnx` | `OnnxEmbedder` (fact-retrieve's `onnx`), for `MemoryService::with_embedder`: recall by meaning |
//! | `sqlite` | durable stores in a SQLite file for the runtime's per-spec stores and the memory service ([`durable`]); `SqliteFactStore` re-exported |
//! | `postgres` | the same on a PostgreSQL server shared by many processes; `PgFactStore` re-exported |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod contract;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod durable;
mod memory;
pub mod memory_protocol;
pub mod prompt;
pub mod protocol;
mod runtime;

pub use crate::contract::{
    BEGIN_MARKER, ContractError, DEFAULT_MAX_OUTPUT_TOKENS, END_MARKER, extract_block,
    parse_output, validate_schema,
};
pub use crate::memory::{
    AddOutcome, AliasOutcome, ArchiveReport, ArchiveRequest, DEFAULT_KNOWN_FACTS,
    DEFAULT_KNOWN_TOKENS, EXPORT_SCHEMA, ForgetReport, KnownBudget, MAX_NEIGHBOUR_DEPTH,
    MEM0_RELATION, MEM0_SOURCE, Mem0Conversion, Mem0Skipped, MemoryChange, MemoryChanges,
    MemoryContext, MemoryError, MemoryService, Neighbour, NewMemory, ReadOptions, mem0_export,
    write_whole,
};
pub use crate::runtime::{
    Compaction, CompactionStage, CompilePromptRequest, CompilePromptResponse,
    DispatchRuntimeManager, EndRunResponse, ErrorBody, GuideMode, IngestOutputRequest,
    IngestOutputResponse, IngestStatus, InitRunRequest, InitRunResponse, LedgerMode,
    MAX_LISTED_FACTS, NextAction, PromptConfig, RetrieverFactory, RuntimeBuilder, RuntimeError,
    SetTaskStatusRequest, SetTaskStatusResponse, Snapshot, SpecArchive, StoreFactory, Telemetry,
};

/// What the binaries on top of the runtime need from the crates below it, so they depend on
/// this crate alone.
pub mod reexports {
    pub use fact_extract::{
        CommandLlm, ConversationExtraction, ConversationExtractor, KnownMemory, LlmClient,
        LlmError, LlmExtractorConfig, LlmFactExtractor, MAX_TRANSCRIPT_BYTES, Message, MessageRole,
    };
    pub use fact_model::{
        CharsPerToken, Clock, DispatchResult, FactId, Filter, FilterError, ManualClock,
        MemoryHistory, MetaValue, Metadata, MetadataError, ProfileField, SessionFact, SourceRole,
        SystemClock, Tag, Timestamp, TokenCounter, UserContext, normalize_entity, parse_duration,
    };
    #[cfg(feature = "tiktoken")]
    pub use fact_retrieve::BpeTokenCounter;
    pub use fact_retrieve::{
        EmbedError, Embedder, HybridError, ModelFiles, Recall, RelatedEpisode,
    };
    #[cfg(feature = "onnx")]
    pub use fact_retrieve::{OnnxEmbedder, OnnxOptions};
    pub use fact_store::{
        AddReport, Alias, EXPORT_VERSION, Episode, EpisodeStore, EraseReport, ExportEnd,
        ExportFile, ExportHeader, ExportOptions, ExportRecord, ExportSource, ExportText,
        InMemoryLongTermStore, LongTermStore, MemoryImportReport, MessageHit, ProfileEntry,
        ScoredFact, SessionFactStore, SkipReason, StoreConfig, StoreError,
    };
    #[cfg(all(feature = "postgres", not(feature = "sqlite")))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
    pub use fact_store_postgres::CacheBudget;
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub use fact_store_postgres::{PgDatabase, PgFactStore, PgOptions};
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
    pub use fact_store_sqlite::CacheBudget;
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub use fact_store_sqlite::SqliteFactStore;
    pub use ledger::{LedgerError, ProgressLedger, TaskStatus};
}
