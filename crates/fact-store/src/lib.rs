//! The temporal fact store: where a newer fact invalidates the old one instead of
//! overwriting it.
//!
//! - [`SessionFactStore`] is the object-safe contract (`Box<dyn SessionFactStore>`,
//!   `Arc<dyn SessionFactStore>`); every method takes `&self`, so one store is shared
//!   between threads.
//! - [`InMemorySessionFactStore`] implements it in memory, compactly: about 240 bytes of
//!   heap per fact at a million facts, its indexes included.
//! - [`InMemoryEpisodeStore`] and [`InMemoryLongTermStore`] keep episodes and long-term
//!   memory ([`EpisodeStore`], [`LongTermStore`]); [`FactVectors`] keeps embeddings.
//!
//! This crate names no database driver. The durable stores are crates of their own, built
//! on `fact-store-sql` (the rules every SQL store shares, written once over a driver):
//!
//! - `fact-store-sqlite`: `SqliteFactStore`, many scopes (`spec:todo-api`, `user:alice`)
//!   in one SQLite file, none seeing another's facts; WAL, one transaction per batch, a
//!   busy timeout so several processes share the file, migrations, and FTS5 search that
//!   ranks exactly as the in-memory index does.
//! - `fact-store-postgres`: `PgFactStore`, the same on a PostgreSQL server shared by many
//!   orchestrators on many machines, with read replicas.
//!
//! Every store passes the same conformance suite ([`conformance`], feature
//! `conformance`) and a differential property test against the in-memory store, each from
//! its own crate.
//!
//! # Temporal model
//!
//! Facts arrive in batches, one batch per [`add`](SessionFactStore::add) call (one
//! dispatch result). A fact whose `(subject, relation)` matches a valid fact of an
//! *earlier* batch ends that fact's validity: its `valid_to` becomes the new fact's
//! `valid_from`. Facts of one batch never invalidate each other, so a task can require
//! several actions at once. Re-adding a valid triple changes nothing (it is *refreshed*);
//! re-adding an invalidated triple starts a new version, and
//! [`history`](SessionFactStore::history) keeps both. The fact a newer one ended names it
//! in `superseded_by`; a fact that arrives with a `valid_from` older than the valid fact of
//! its key is stored already superseded, so out-of-order arrival keeps the newest truth
//! current.
//!
//! # I/O
//!
//! Every operation that reads or writes returns a [`StoreResult`]: a durable store can
//! fail to write or to read (I/O, a lost connection, a busy or corrupt database, a newer
//! schema), and callers surface the error with its [`code`](StoreError::code), so a read
//! that failed is never mistaken for an empty store. [`InMemorySessionFactStore`] never
//! fails. Only [`analyzer`](SessionFactStore::analyzer) is infallible: it reads nothing.
//!
//! ```
//! use std::sync::Arc;
//! use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag};
//! use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
//!
//! let clock = Arc::new(ManualClock::default());
//! let store = InMemorySessionFactStore::new(StoreConfig::default(), clock.clone());
//! let status = |task: &str, value: &str| {
//!     SessionFact::builder("task:7", "completed_with", value)
//!         .tag(Tag::Decision)
//!         .source(task, SourceRole::Implementer)
//!         .valid_from(clock.now())
//!         .build()
//! };
//!
//! store.add(vec![status("7", "blocked")?])?;
//! clock.advance(std::time::Duration::from_secs(60));
//! let report = store.add(vec![status("7", "completed")?])?;
//! assert_eq!(report.invalidated.len(), 1);
//!
//! let valid = store.valid_facts()?;
//! assert_eq!(valid.len(), 1);
//! assert_eq!(valid[0].object(), "completed");
//! assert_eq!(store.history("task:7")?.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None is on by default.
//!
//! | feature | adds |
//! |---|---|
//! | `conformance` | [`conformance`]: the suite every backend must pass, as plain functions over a [`Fixture`](conformance::Fixture), for a backend's tests (proptest) |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The workspace README's Rust example, compiled and run as a doc test of this crate.
/// `cfg(doctest)` keeps the file, which lies outside the package, out of every other build
/// (the packaged crate's verify build among them).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub mod backend;
mod compaction;
mod config;
#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;
mod edges;
mod episode;
mod error;
mod export;
mod heap;
mod index;
mod long_term;
mod memory;
mod memory_episodes;
mod messages;
mod meta;
mod report;
mod side;
mod snapshot;
mod store;
mod transaction;
mod vector;

pub use crate::config::{COMPACTED_RELATION, CompactionPolicy, StoreConfig};
pub use crate::edges::EdgeQuery;
pub use crate::episode::{
    DEFAULT_CONTEXT_WEIGHT, DEFAULT_MESSAGE_CONTEXT, Episode, EpisodeExtracted, EpisodeStore,
    MAX_SEARCH_LIMIT, MessageHit, MessageQuery,
};
pub use crate::error::{StoreError, StoreResult};
pub use crate::export::{
    EXPORT_FORMAT, EXPORT_VERSION, ExportEnd, ExportFile, ExportFileSection, ExportHeader,
    ExportOptions, ExportReader, ExportRecord, ExportSection, ExportSource, ExportText,
    ExportWriter, MAX_EXPORT_LINE,
};
pub use crate::index::{
    Analyzer, AnalyzerConfig, Recency, STOPWORDS, ScoredFact, TermQuery, TermWeighting,
};
pub use crate::long_term::{
    AliasChange, InMemoryLongTermStore, LongTermStore, MAX_ALIAS_DEPTH, MemoryReport, MemoryWrite,
    check_alias, current_profile, profile_changes,
};
pub use crate::memory::InMemorySessionFactStore;
pub use crate::memory_episodes::InMemoryEpisodeStore;
pub use crate::report::{
    AddReport, CompactionReport, EraseReport, ImportDiagnostic, ImportReport, MemoryImportReport,
    SkipReason, Skipped,
};
pub use crate::side::{Alias, ProfileEntry};
pub use crate::snapshot::{SNAPSHOT_VERSION, Snapshot, SnapshotRecord};
pub use crate::store::SessionFactStore;
pub use crate::transaction::{NotEndedReason, Step, StepReport, Transaction, TransactionReport};
pub use crate::vector::{
    EXACT_SEARCH_LIMIT, FactVectors, InvalidTokenVectors, MAX_DIMENSION, MAX_MODEL_BYTES,
    MAX_TOKENS, TokenEncoding, TokenVectorStats, TokenVectors, VectorQuery,
};
