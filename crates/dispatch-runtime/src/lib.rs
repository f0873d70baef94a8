//! The dispatch runtime: the one crate that composes the store, the extractor, the
//! retriever and the ledgers, behind trait objects.
//!
//! Built so far: [`contract`], reading an agent's raw output into a validated
//! [`DispatchResult`]: exactly one marked block, JSON, a schema check that names the failing
//! field, and an output token budget measured on the block. The runtime manager, prompt
//! compilation and the `facts` binary arrive with the rest of their issue.

#![forbid(unsafe_code)]

pub mod contract;

pub use crate::contract::{
    BEGIN_MARKER, ContractError, DEFAULT_MAX_OUTPUT_TOKENS, DispatchResult, END_MARKER, Role,
    extract_block, parse_output, validate_schema,
};
