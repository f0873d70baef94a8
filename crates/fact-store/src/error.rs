//! [`StoreError`]: the one error type of the store boundary.

use std::sync::Arc;

use fact_model::{FactError, FactId};

/// What went wrong in a store operation.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No version of a fact has this id.
    #[error("no fact with id {id}")]
    NotFound {
        /// The unknown id.
        id: FactId,
    },
    /// An update would make the fact invalid.
    #[error("update of fact {id} rejected: {source}")]
    InvalidUpdate {
        /// The fact that was to be updated.
        id: FactId,
        /// Why the new value is invalid.
        source: FactError,
    },
    /// An update would give the fact the statement of another valid fact.
    #[error("update of fact {id} rejected: its statement duplicates valid fact {existing}")]
    DuplicateStatement {
        /// The fact that was to be updated.
        id: FactId,
        /// The valid fact that already has that statement.
        existing: FactId,
    },
    /// The snapshot text is not a snapshot document.
    #[error("snapshot is not valid JSON of the form {{\"version\": 1, \"records\": [...]}}: {0}")]
    SnapshotJson(#[source] Arc<serde_json::Error>),
    /// The snapshot has a version this store cannot read.
    #[error("snapshot version {found} is not supported; this store reads version {supported}")]
    SnapshotVersion {
        /// The version in the document.
        found: u64,
        /// The version this store reads.
        supported: u64,
    },
}

/// The result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;
