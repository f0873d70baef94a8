//! The dispatch runtime: the one crate that composes the store, the extractor, the
//! retriever and the ledgers, behind trait objects.
//!
//! Built so far:
//!
//! - [`contract`]: reading an agent's raw output into a validated [`DispatchResult`]:
//!   exactly one marked block, JSON, a schema check that names the failing field, and an
//!   output token budget measured on the block;
//! - [`DispatchRuntimeManager`], the ingest side: `init_run`, `ingest_output` (facts into the
//!   spec's store, task ledger and stall state, the next action), snapshots, fact queries
//!   and telemetry, composed from trait objects set through [`RuntimeBuilder`].
//!
//! - [`protocol`]: the JSON protocol over those actions, for `facts replay` and the MCP
//!   server.
//!
//! The `facts` binary arrives with the rest of its issue.

#![forbid(unsafe_code)]

pub mod contract;
pub mod prompt;
pub mod protocol;
mod runtime;

pub use crate::contract::{
    BEGIN_MARKER, ContractError, DEFAULT_MAX_OUTPUT_TOKENS, DispatchResult, END_MARKER, Role,
    extract_block, parse_output, validate_schema,
};
pub use crate::runtime::{
    CompactionStage, CompilePromptRequest, CompilePromptResponse, DispatchRuntimeManager,
    ErrorBody, GuideMode, IngestOutputRequest, IngestOutputResponse, IngestStatus, InitRunRequest,
    InitRunResponse, LedgerMode, NextAction, PromptConfig, RetrieverFactory, RuntimeBuilder,
    RuntimeError, Snapshot, StoreFactory, Telemetry,
};

/// What the binaries on top of the runtime need from the crates below it, so they depend on
/// this crate alone.
pub mod reexports {
    pub use fact_model::{Clock, ManualClock, SystemClock, Timestamp};
    #[cfg(feature = "tiktoken")]
    pub use fact_retrieve::BpeTokenCounter;
    pub use fact_retrieve::{CharsPerToken, TokenCounter};
    pub use ledger::{LedgerError, ProgressLedger};
}
