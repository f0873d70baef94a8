//! [`MemoryError`]: why a memory operation failed, with its stable code.

use fact_extract::{LlmError, TranscriptError};
use fact_model::{FactError, FilterError, MetadataError};
use fact_retrieve::HybridError;
use fact_store::StoreError;

/// Why a memory operation failed. [`code`](Self::code) names it for the CLI and MCP.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The store could not read or write, or refused a change (an alias cycle).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No fact, episode or subject has this id or name.
    #[error("no fact, episode or subject {id}")]
    NotFound {
        /// The id or name asked for, clipped to 64 characters.
        id: String,
    },
    /// The text given as a fact id is not one.
    #[error("{id:?} is not a fact id (16 lowercase hex digits)")]
    InvalidId {
        /// The text given, clipped to 64 characters.
        id: String,
    },
    /// A new or changed fact is invalid.
    #[error("invalid fact: {0}")]
    InvalidFact(#[from] FactError),
    /// A fact of a batch ([`MemoryService::add_many`](crate::MemoryService::add_many)) is
    /// invalid: nothing of the batch was stored.
    #[error("invalid fact at index {index} of the batch (nothing stored): {error}")]
    InvalidBatchFact {
        /// Its position in the batch, from 0.
        index: usize,
        /// Why it is invalid.
        #[source]
        error: FactError,
    },
    /// A filter does not read: an unknown field or operator, or a wrong type, at the
    /// path it names.
    #[error(transparent)]
    InvalidFilter(#[from] FilterError),
    /// Metadata does not read: too many keys, a bad key, or a bad value.
    #[error("invalid metadata: {0}")]
    InvalidMetadata(#[from] MetadataError),
    /// A walk of the neighbours asked for another depth than 1 or 2.
    #[error("depth {depth} is not 1 or 2")]
    InvalidDepth {
        /// The depth asked for.
        depth: usize,
    },
    /// A recall asked to expand its best facts by another number of hops than 0 or 1.
    #[error("expand {hops} is not 0 or 1")]
    InvalidExpand {
        /// The hops asked for.
        hops: usize,
    },
    /// The transcript cannot be archived: too large, empty, or with a time that does not
    /// parse or lies in the future.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// Extraction needs a model and none is configured.
    #[error("no LLM is configured for fact extraction (give --llm-cmd)")]
    NoExtractor,
    /// The embedding model failed (or the store refused the vectors of a fact just
    /// stored). What the call wrote before is kept: a fact whose embedding failed is
    /// stored, found by its words, and embedded when a service with the embedder next
    /// starts ([`MemoryService::with_embedder`](crate::MemoryService::with_embedder)). A
    /// store that cannot read, while embedding or recalling, is [`MemoryError::Store`].
    #[error("embedding failed: {0}")]
    Embedding(#[from] HybridError),
    /// The model failed; the episode stays archived, without facts, for a later backfill.
    #[error("episode {episode_id} is archived, but extracting its facts failed: {source}")]
    Extraction {
        /// The archived episode.
        episode_id: String,
        /// What the model did.
        source: LlmError,
    },
}

impl MemoryError {
    /// A short, stable code: `not_found`, `invalid_id`, `invalid_fact`, `invalid_filter`,
    /// `invalid_metadata`, `invalid_depth`, `no_extractor`,
    /// `extraction_failed`, the transcript's code ([`TranscriptError::code`]), the store's
    /// own code ([`StoreError::code`]), or for [`MemoryError::Embedding`] the
    /// [`HybridError::code`].
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::Store(error) => error.code(),
            MemoryError::NotFound { .. } => "not_found",
            MemoryError::InvalidId { .. } => "invalid_id",
            MemoryError::InvalidFact(_) | MemoryError::InvalidBatchFact { .. } => "invalid_fact",
            MemoryError::InvalidFilter(error) => error.code(),
            MemoryError::InvalidMetadata(error) => error.code(),
            MemoryError::InvalidDepth { .. } => "invalid_depth",
            MemoryError::InvalidExpand { .. } => "invalid_expand",
            MemoryError::Transcript(error) => error.code(),
            MemoryError::NoExtractor => "no_extractor",
            MemoryError::Extraction { .. } => "extraction_failed",
            MemoryError::Embedding(error) => error.code(),
        }
    }

    pub(super) fn not_found(id: &str) -> MemoryError {
        MemoryError::NotFound {
            id: fact_model::clip(id, MAX_ECHOED_ID_CHARS).into_owned(),
        }
    }
}

/// The longest part of a rejected id an error repeats, in characters.
pub(super) const MAX_ECHOED_ID_CHARS: usize = 64;
