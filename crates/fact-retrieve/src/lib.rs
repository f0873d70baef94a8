//! Relevance retrieval of temporal facts within an exact token budget, and the formatters
//! that put facts into prompts.
//!
//! - [`FactRetriever`] is the object-safe contract; [`IndexRetriever`] implements it over
//!   a store's term index: only facts sharing a term with the query are scored.
//! - Scorers are [`TermWeighting`](fact_store::TermWeighting)s: [`Bm25`] (the default:
//!   rare terms weigh more, so `task`, which every dispatch fact holds, stops dominating)
//!   and the seed's [`KeywordOverlap`].
//! - The token budget is measured on the exact text injected, the rendered
//!   `[Session Context]` section, by an injected [`TokenCounter`]: [`CharsPerToken`], or a
//!   real BPE count with the `tiktoken` feature.
//! - [`format_session_facts`] renders dispatch facts; [`format_memory`] renders
//!   conversational memory (seed 002).

#![forbid(unsafe_code)]

mod format;
mod memory;
mod recall;
mod retriever;
mod scoring;
mod token;

pub use crate::format::{
    MAX_LINE_CHARS, SESSION_CONTEXT_HEADER, format_fact_line, format_session_facts,
};
pub use crate::memory::{MemoryData, MemoryFact, MemoryHistory, UserContext, format_memory};
pub use crate::recall::{
    MAX_EPISODE_SUMMARY_CHARS, RELATED_EPISODES_HEADER, RELEVANT_FACTS_HEADER, Recall, RecallQuery,
    recall, recall_episode_line, recall_fact_line,
};
pub use crate::retriever::{FactQuery, FactRetriever, IndexRetriever, Retrieval, RetrievedFact};
pub use crate::scoring::{Bm25, KeywordOverlap};
#[cfg(feature = "tiktoken")]
pub use crate::token::{BpeLoadError, BpeTokenCounter};
pub use crate::token::{CharsPerToken, TokenCounter};
