//! [`StoreError`]: the one error type of the store boundary.

use std::path::PathBuf;
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
    /// No episode has this id.
    #[error("no episode with id {id}")]
    EpisodeNotFound {
        /// The unknown id.
        id: String,
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
    /// A line of an export file is not what the format allows: not an export at all
    /// (line 1), not a record, or a file cut short or changed (its end record); nothing
    /// of the file is imported.
    #[error("export line {line}: {message}")]
    Export {
        /// The line's number, from 1.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The export is of a newer format version than this build reads.
    #[error(
        "export format version {found} is not supported; this build reads versions 1 to {supported}"
    )]
    ExportVersion {
        /// The version in the file's header.
        found: u64,
        /// The newest version this build reads.
        supported: u64,
    },
    /// Reading or writing the store's storage failed (a full disk, a read-only file,
    /// missing permissions, a lost connection).
    #[error("store I/O failed: {message}")]
    Io {
        /// What failed, in the backend's words.
        message: String,
    },
    /// The database stayed locked by another writer for longer than the busy timeout.
    #[error("the database is busy (locked by another writer): {message}")]
    Busy {
        /// The backend's message.
        message: String,
    },
    /// The file or database is not a fact store this crate can read: not a database at
    /// all, or damaged. Nothing is ever reset to recover from it.
    #[error("{path}: not a readable fact store database: {message}", path = path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What is wrong, in the backend's words.
        message: String,
    },
    /// The database was written by a newer version of this crate; it is left untouched.
    #[error(
        "{path}: schema version {found} is newer than this build understands ({supported}); \
         upgrade factmem to open it",
        path = path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The schema version in the database.
        found: u32,
        /// The newest schema version this build migrates to.
        supported: u32,
    },
    /// An embedding cannot be stored: see
    /// [`FactVectors::put_embeddings`](crate::FactVectors::put_embeddings).
    #[error("embedding of fact {id} rejected: {reason}")]
    InvalidEmbedding {
        /// The fact the embedding was for.
        id: FactId,
        /// What is wrong with it.
        reason: String,
    },
    /// An alias would make the alias table lead from a name back to itself
    /// (`mel → melanie → mel`), or name itself.
    #[error("alias {alias:?} → {entity:?} would make a cycle of names")]
    AliasCycle {
        /// The alias being set (clipped to 64 characters).
        alias: String,
        /// The entity it was to name (clipped to 64 characters).
        entity: String,
    },
    /// An alias or its entity is not a usable name.
    #[error("alias {alias:?} refused: {reason}")]
    InvalidAlias {
        /// The alias (clipped to 64 characters).
        alias: String,
        /// Why.
        reason: String,
    },
    /// Any other failure of the storage backend.
    #[error("store backend failed: {message}")]
    Backend {
        /// The backend's message.
        message: String,
    },
}

impl StoreError {
    /// A short, stable code for the error, for protocols and exit codes: `not_found`,
    /// `invalid_update`, `duplicate_statement`, `snapshot_json`, `snapshot_version`,
    /// `invalid_export`, `export_version`, `io`, `busy`, `corrupt`, `newer_schema`, `invalid_embedding`, `alias_cycle`,
    /// `invalid_alias` or `backend`.
    ///
    /// ```
    /// use fact_store::StoreError;
    /// let error = StoreError::Busy { message: "database is locked".into() };
    /// assert_eq!(error.code(), "busy");
    /// ```
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotFound { .. } | StoreError::EpisodeNotFound { .. } => "not_found",
            StoreError::InvalidUpdate { .. } => "invalid_update",
            StoreError::DuplicateStatement { .. } => "duplicate_statement",
            StoreError::SnapshotJson(_) => "snapshot_json",
            StoreError::SnapshotVersion { .. } => "snapshot_version",
            StoreError::Export { .. } => "invalid_export",
            StoreError::ExportVersion { .. } => "export_version",
            StoreError::Io { .. } => "io",
            StoreError::Busy { .. } => "busy",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::NewerSchema { .. } => "newer_schema",
            StoreError::InvalidEmbedding { .. } => "invalid_embedding",
            StoreError::AliasCycle { .. } => "alias_cycle",
            StoreError::InvalidAlias { .. } => "invalid_alias",
            StoreError::Backend { .. } => "backend",
        }
    }
}

impl StoreError {
    /// This error as the refusal of line `line` of an export being imported: an
    /// [`Export`](StoreError::Export) error naming the line, unless it is one already.
    #[must_use]
    pub fn at_export_line(self, line: u64) -> StoreError {
        match self {
            StoreError::Export { .. } | StoreError::ExportVersion { .. } => self,
            other => StoreError::Export {
                line,
                message: other.to_string(),
            },
        }
    }
}

/// The result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;
