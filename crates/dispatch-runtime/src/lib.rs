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
//!   queries and telemetry;
//! - [`prompt`]: the per-role prefixes and guides, and the acceptance criteria a task names;
//! - [`protocol`]: the JSON protocol over those actions, spoken by `facts replay` and
//!   `facts mcp`.
//!
//! # Features
//!
//! - `schema`: `protocol::actions()`, every action with the JSON Schema of its request (for
//!   MCP tool lists);
//! - `tiktoken`: real BPE token counting, re-exported in [`reexports`];
//! - `sqlite`, `postgres`: durable stores, a SQLite file or a PostgreSQL server, for the
//!   runtime's per-spec stores and the memory service ([`durable`]); `SqliteFactStore`
//!   and `PgFactStore` are re-exported in [`reexports`].

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod contract;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod durable;
mod memory;
pub mod prompt;
pub mod protocol;
mod runtime;

pub use crate::contract::{
    BEGIN_MARKER, ContractError, DEFAULT_MAX_OUTPUT_TOKENS, END_MARKER, extract_block,
    parse_output, validate_schema,
};
pub use crate::memory::{
    AddOutcome, ArchiveReport, MemoryChange, MemoryError, MemoryService, NewMemory,
};
pub use crate::runtime::{
    Compaction, CompactionStage, CompilePromptRequest, CompilePromptResponse,
    DispatchRuntimeManager, ErrorBody, GuideMode, IngestOutputRequest, IngestOutputResponse,
    IngestStatus, InitRunRequest, InitRunResponse, LedgerMode, MAX_LISTED_FACTS, NextAction,
    PromptConfig, RetrieverFactory, RuntimeBuilder, RuntimeError, SetTaskStatusRequest,
    SetTaskStatusResponse, Snapshot, SpecArchive, StoreFactory, Telemetry,
};

/// What the binaries on top of the runtime need from the crates below it, so they depend on
/// this crate alone.
pub mod reexports {
    pub use fact_extract::{
        CommandLlm, ConversationExtraction, ConversationExtractor, LlmClient, LlmError,
        LlmExtractorConfig, LlmFactExtractor, Message,
    };
    pub use fact_model::{
        CharsPerToken, Clock, DispatchResult, FactId, ManualClock, SessionFact, SourceRole,
        SystemClock, Tag, Timestamp, TokenCounter,
    };
    #[cfg(feature = "tiktoken")]
    pub use fact_retrieve::BpeTokenCounter;
    pub use fact_retrieve::{EmbedError, Embedder, HybridError, Recall};
    #[cfg(feature = "onnx")]
    pub use fact_retrieve::{OnnxEmbedder, OnnxOptions};
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub use fact_store::SqliteFactStore;
    pub use fact_store::{
        AddReport, Episode, EpisodeStore, ScoredFact, SessionFactStore, SkipReason, StoreConfig,
        StoreError,
    };
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub use fact_store::{PgFactStore, PgOptions};
    pub use ledger::{LedgerError, ProgressLedger, TaskStatus};
}
