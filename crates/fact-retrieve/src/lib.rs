//! Relevance retrieval of temporal facts within an exact token budget, and the formatters
//! that put facts into prompts.
//!
//! - [`FactRetriever`] is the object-safe contract; [`IndexRetriever`] implements it over
//!   a store's term index: only facts sharing a term with the query are scored.
//! - Scorers are [`TermWeighting`](fact_store::TermWeighting)s: [`Bm25`] (the default:
//!   rare terms weigh more, so `task`, which every dispatch fact holds, stops dominating)
//!   and the seed's [`KeywordOverlap`].
//! - The token budget is measured on the exact text injected, the rendered
//!   `[Session Context]` section, by an injected
//!   [`TokenCounter`](fact_model::TokenCounter):
//!   [`CharsPerToken`](fact_model::CharsPerToken), or a real BPE count with the
//!   `tiktoken` feature.
//! - Of the facts of one subject that state one sentence (a reviewer's issue that is also a
//!   convention), only the strongest by [`RELATION_STRENGTH`] is retrieved.
//! - A query is analyzed up to [`MAX_QUERY_BYTES`] and [`MAX_QUERY_TERMS`] ([`query_text`]),
//!   so a multi-megabyte task prompt costs what its first terms cost.
//! - [`format_session_facts`] renders dispatch facts, and is the one renderer of the
//!   `[Session Context]` section; [`format_memory`] renders conversational memory (seed 002).
//! - [`HybridRetriever`] adds meaning to words for conversational memory: an [`Embedder`]
//!   (a sentence-embedding model; `OnnxEmbedder` with the `onnx` feature) embeds facts
//!   at ingest and queries at retrieval, the store's [`FactVectors`](fact_store::FactVectors)
//!   finds the nearest, and the BM25 and vector candidates are fused ([`Fusion`]). Dispatch
//!   facts keep the lexical default: paths and identifiers are lexical, and it runs in
//!   microseconds.
//!
//! ```
//! use std::sync::Arc;
//! use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag};
//! use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever};
//! use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
//!
//! let clock = Arc::new(ManualClock::default());
//! let store: Arc<dyn SessionFactStore> =
//!     Arc::new(InMemorySessionFactStore::new(StoreConfig::default(), clock.clone()));
//! let fact = |subject: &str, relation: &str, object: &str, tag: Tag| {
//!     SessionFact::builder(subject, relation, object)
//!         .tag(tag)
//!         .source("1", SourceRole::Implementer)
//!         .valid_from(clock.now())
//!         .build()
//! };
//! store.add(vec![
//!     fact("src/lexer.rs", "modified_by", "task:1", Tag::FileChange)?,
//!     fact("src/render.rs", "modified_by", "task:1", Tag::FileChange)?,
//! ])?;
//!
//! // Task 2 names the lexer: only the fact that shares a term with it is retrieved.
//! let retrieval = IndexRetriever::new(store).retrieve(&FactQuery::new("2", "Extend the lexer"))?;
//! assert_eq!(retrieval.facts.len(), 1);
//! assert_eq!(retrieval.facts[0].fact.subject(), "src/lexer.rs");
//! assert!(retrieval.section.starts_with(fact_retrieve::SESSION_CONTEXT_HEADER));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None is on by default: `CharsPerToken` counts tokens and retrieval is lexical.
//!
//! | feature | adds |
//! |---|---|
//! | `tiktoken` | `BpeTokenCounter`: exact o200k_base / cl100k_base counts (tiktoken-rs) |
//! | `onnx` | `OnnxEmbedder`: all-MiniLM-L6-v2 run locally by ONNX Runtime (ort, tokenizers) |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod dedup;
mod embed;
mod expand;
mod format;
mod hybrid;
mod late;
mod memory;
mod query;
mod recall;
mod retrieved;
mod retriever;
mod scoring;
#[cfg(feature = "tiktoken")]
mod token;

pub use crate::dedup::RELATION_STRENGTH;
#[cfg(feature = "onnx")]
pub use crate::embed::onnx::{OnnxEmbedder, OnnxOptions};
pub use crate::embed::{EmbedError, Embedder, ModelFiles, TokenEmbedding, embedding_text};
pub use crate::expand::{EXPAND_EDGES_PER_FACT, ExpandedFact};
pub use crate::format::{
    MAX_LINE_CHARS, SESSION_CONTEXT_HEADER, format_fact_line, format_session_facts,
};
pub use crate::hybrid::{
    DEFAULT_CANDIDATES, DEFAULT_NEIGHBOUR_CONTEXT, DEFAULT_VECTOR_WEIGHT, Fusion, HybridError,
    HybridRetriever,
};
pub use crate::late::{DEFAULT_LATE_CANDIDATES, DEFAULT_LATE_WEIGHT, LateInteraction};
pub use crate::memory::{MemoryData, MemoryFact, format_memory};
pub use crate::query::{MAX_QUERY_BYTES, MAX_QUERY_TERMS, query_terms, query_text};
pub use crate::recall::{
    MAX_EPISODE_SUMMARY_CHARS, MAX_MESSAGE_LINE_CHARS, RELATED_EPISODES_HEADER,
    RELEVANT_FACTS_HEADER, Recall, RecallQuery, RelatedEpisode, recall, recall_episode_line,
    recall_fact_line, recall_message_line,
};
pub use crate::retrieved::RetrievedFact;
pub use crate::retriever::{FactQuery, FactRetriever, IndexRetriever, Retrieval};
pub use crate::scoring::{Bm25, KeywordOverlap};
#[cfg(feature = "tiktoken")]
pub use crate::token::{BpeLoadError, BpeTokenCounter};
pub use fact_model::{MemoryHistory, UserContext};
