//! The temporal fact store: where a newer fact invalidates the old one instead of
//! overwriting it.
//!
//! - [`SessionFactStore`] is the object-safe contract (`Box<dyn SessionFactStore>`,
//!   `Arc<dyn SessionFactStore>`); every method takes `&self`, so one store is shared
//!   between threads.
//! - [`InMemorySessionFactStore`] implements it in memory, compactly: about 240 bytes of
//!   heap per fact at a million facts, its indexes included.
//! - `SqliteFactStore` (feature `sqlite`) implements it on a SQLite file: many scopes
//!   (`spec:todo-api`, `user:alice`) in one database, none seeing another's facts; WAL,
//!   one transaction per batch, a busy timeout so several processes share the file,
//!   schema migrations, and a search through FTS5 that ranks exactly as the in-memory
//!   index does. It also keeps the scope's [`Episode`]s ([`EpisodeStore`]).
//! - `PgFactStore` (feature `postgres`; `postgres-tls` adds TLS) implements it on a
//!   PostgreSQL server, for many orchestrators on many machines sharing one memory: the
//!   same scopes and rules (the SQLite store's own code), writers of a scope taking turns
//!   on its row lock, the temporal invariants enforced by database constraints, and
//!   full-text candidates from a GIN index ranked as every other store ranks them. The
//!   stores of many scopes share one connection pool when they are opened from one
//!   `PgDatabase`.
//!
//! Every store passes the same conformance suite and a differential property test against
//! the in-memory store.
//!
//! ```
//! # #[cfg(feature = "sqlite")] {
//! use std::sync::Arc;
//! use fact_model::SystemClock;
//! use fact_store::{SessionFactStore, SqliteFactStore, StoreConfig};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("memory.db");
//! let alice = SqliteFactStore::open(&path, "user:alice", StoreConfig::default(), Arc::new(SystemClock))?;
//! let bob = SqliteFactStore::open(&path, "user:bob", StoreConfig::default(), Arc::new(SystemClock))?;
//! assert_eq!((alice.valid_count()?, bob.valid_count()?), (0, 0));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
//! None is on by default: the in-memory store needs no database.
//!
//! | feature | adds |
//! |---|---|
//! | `sqlite` | `SqliteFactStore` (rusqlite, SQLite compiled in) |
//! | `postgres` | `PgFactStore`, `PgDatabase` (with read replicas), `PgOptions`, `ReplicaStats` (the `postgres` client, an r2d2 pool) |
//! | `postgres-tls` | TLS to the server (rustls, Mozilla's roots): `sslmode=require` works |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The workspace README's Rust example, compiled and run as a doc test of this crate.
/// `cfg(doctest)` keeps the file, which lies outside the package, out of every other build
/// (the packaged crate's verify build among them).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod cache;
mod compaction;
mod episode;
mod error;
mod heap;
mod index;
mod long_term;
mod memory;
mod messages;
#[cfg(feature = "postgres")]
mod postgres;
mod report;
mod snapshot;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod transaction;
mod vector;

use std::fmt::Debug;

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Tag, Timestamp};

#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub use crate::cache::CacheBudget;
pub use crate::episode::{
    DEFAULT_CONTEXT_WEIGHT, DEFAULT_MESSAGE_CONTEXT, Episode, EpisodeStore, InMemoryEpisodeStore,
    MAX_SEARCH_LIMIT, MessageHit, MessageQuery,
};
pub use crate::error::{StoreError, StoreResult};
pub use crate::index::{Analyzer, AnalyzerConfig, STOPWORDS, ScoredFact, TermQuery, TermWeighting};
pub use crate::long_term::{
    Alias, AliasChange, EpisodeExtracted, InMemoryLongTermStore, LongTermStore, MAX_ALIAS_DEPTH,
    MemoryReport, MemoryWrite, ProfileEntry, check_alias, current_profile, profile_changes,
};
pub use crate::memory::{
    COMPACTED_RELATION, CompactionPolicy, InMemorySessionFactStore, StoreConfig,
};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use crate::postgres::{PgDatabase, PgFactStore, PgOptions, ReplicaStats};
pub use crate::report::{
    AddReport, CompactionReport, ImportDiagnostic, ImportReport, SkipReason, Skipped,
};
pub use crate::snapshot::{SNAPSHOT_VERSION, Snapshot, SnapshotRecord};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use crate::sqlite::{SqliteDatabase, SqliteFactStore, SqliteOptions};
pub use crate::transaction::{NotEndedReason, Step, StepReport, Transaction, TransactionReport};
pub use crate::vector::{
    EXACT_SEARCH_LIMIT, FactVectors, InvalidTokenVectors, MAX_DIMENSION, MAX_MODEL_BYTES,
    MAX_TOKENS, TokenEncoding, TokenVectorStats, TokenVectors, VectorQuery,
};

/// A store of temporal facts, shared by reference between the components of a run.
///
/// Object safe: hold it as `Box<dyn SessionFactStore>` or `Arc<dyn SessionFactStore>`.
/// Every method takes `&self` and never panics. Operations that read or write return a
/// [`StoreResult`] (all but [`analyzer`](Self::analyzer)): a durable store's read error is
/// returned with its code, never answered as an empty store. Operations on a missing id
/// return [`StoreError::NotFound`], and malformed input is skipped and reported, never
/// stored.
///
/// A backend implements the fourteen required methods; counts, the tag filter, the two
/// key invalidations and JSON snapshot import are provided on top of them (a backend may
/// override a provided method with a faster one, never with other semantics). The
/// conformance suite in `tests/it` runs the same behaviour tests and property tests
/// against every backend.
pub trait SessionFactStore: Send + Sync + Debug {
    /// Adds one batch of facts (the facts of one result) and reports what happened to each.
    ///
    /// Valid facts of earlier batches with the same `(subject, relation)` as a new fact
    /// are superseded (ended at the new fact's `valid_from`, `superseded_by` its id); a
    /// new fact older than the valid fact of its key is stored already superseded by it;
    /// a currently valid triple is refreshed, not duplicated; a fact that arrives already
    /// invalidated, repeats a triple of the same batch, or repeats the statement of a
    /// valid memory fact is skipped with its reason. When the store is configured to
    /// compact automatically and goes over capacity, it compacts before returning, and
    /// the report says how.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot write; nothing of the batch is stored
    /// then.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// let report = store.add(vec![
    ///     fact("task:1", "requires", "parser", 0),
    ///     fact("task:1", "requires", "docs", 0), // same batch: both stay valid
    /// ])?;
    /// assert_eq!(report.added.len(), 2);
    /// let report = store.add(vec![fact("task:1", "requires", "nothing", 5)])?;
    /// assert_eq!(report.invalidated.len(), 2);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport>;

    /// Applies the steps of `transaction` in order, all or nothing: on a durable store in
    /// one database transaction, then the automatic compaction, once. See
    /// [`Transaction`] for the rules of each step, and for batches in order.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot write; nothing of the transaction is
    /// stored then.
    ///
    /// ```
    /// # use fact_model::{FactSelector, SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore, StepReport, Transaction};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, task: &str| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source(task, SourceRole::Reviewer)
    /// #     .valid_from(at(0)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("src/a.rs", "issue", "no tests", "2")])?;
    /// // An approval: settle the task's issues and record it, as one write.
    /// let report = store.apply(
    ///     Transaction::new()
    ///         .end_matching(FactSelector::from_task("issue", "2"))
    ///         .add(vec![fact("task:2", "reviewed_as", "approved", "2")]),
    /// )?;
    /// assert!(matches!(&report.steps[0], StepReport::Ended { ids } if ids.len() == 1));
    /// assert_eq!(store.valid_facts()?[0].object(), "approved");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport>;

    /// Invalidates every valid fact `selector` picks, now; returns their ids.
    ///
    /// An explicit invalidation names no successor: `superseded_by` stays unset.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot write; nothing is invalidated then.
    ///
    /// ```
    /// # use fact_model::{FactSelector, SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let issue = |file: &str, task: &str| SessionFact::builder(file, "issue", "no tests")
    /// #     .tag(Tag::Error).source(task, SourceRole::Reviewer)
    /// #     .valid_from(Timestamp::UNIX_EPOCH).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![issue("src/a.rs", "2"), issue("src/b.rs", "2"), issue("src/c.rs", "3")])?;
    /// // Task 2's approval settles the issues its reviews raised, about any file.
    /// let ended = store.invalidate_matching(&FactSelector::from_task("issue", "2"))?;
    /// assert_eq!(ended.len(), 2);
    /// assert_eq!(store.valid_facts()?[0].subject(), "src/c.rs");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>>;

    /// Compacts until at most `max_valid` facts are valid, following the store's policy.
    ///
    /// Also drops history beyond the store's history limit, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot write; nothing changes then.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:1", "summary", "parser", 0), fact("task:1", "requires", "docs", 0)])?;
    /// store.add(vec![fact("task:2", "summary", "lexer", 1)])?;
    /// let report = store.compact(2)?;
    /// assert_eq!((report.merged, store.valid_count()?), (2, 2));
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport>;

    /// Changes the given fields of the latest version of a fact; `valid_from` stays.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::InvalidUpdate`],
    /// [`StoreError::DuplicateStatement`] when the new statement repeats another valid
    /// fact's, or the error of a durable store that cannot write.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// # use fact_model::FactUpdate;
    /// let f = fact("user", "prefers", "tabs", 0);
    /// store.add(vec![f.clone()])?;
    /// let update = FactUpdate { confidence: Some(0.4), ..FactUpdate::default() };
    /// assert_eq!(store.update(f.id(), &update)?.confidence(), 0.4);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact>;

    /// Deletes every version of the fact with this id; returns how many were removed.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when no version has this id (a delete is never a silent
    /// no-op), or the error of a durable store that cannot write.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// # use fact_store::StoreError;
    /// let f = fact("a", "r", "o", 0);
    /// store.add(vec![f.clone()])?;
    /// assert_eq!(store.delete(f.id())?, 1);
    /// assert!(matches!(store.delete(f.id()), Err(StoreError::NotFound { .. })));
    /// # Ok::<(), StoreError>(())
    /// ```
    fn delete(&self, id: FactId) -> StoreResult<usize>;

    /// Adds the versions of a parsed snapshot (see [`Snapshot::from_json`]).
    ///
    /// Each record is checked on its own; a record that cannot be imported is skipped
    /// with a diagnostic and the others are imported. Imported batches count as newer
    /// than the store's own.
    ///
    /// # Errors
    ///
    /// [`StoreError::SnapshotVersion`] for an unsupported version (nothing is imported),
    /// or the error of a durable store that cannot write (nothing is imported either).
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport>;

    /// Every valid fact, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "1", 0)])?;
    /// store.add(vec![fact("a", "r", "2", 1), fact("b", "r", "3", 1)])?;
    /// let objects: Vec<_> = store.valid_facts()?.iter().map(|f| f.object().to_owned()).collect();
    /// assert_eq!(objects, ["2", "3"]);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>>;

    /// The facts that were valid at `at` (`valid_from <= at < valid_to`), oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:3", "reviewed_as", "needs_changes", 0)])?;
    /// store.add(vec![fact("task:3", "reviewed_as", "approved", 9)])?;
    /// assert_eq!(store.valid_at(at(5))?[0].object(), "needs_changes");
    /// assert_eq!(store.valid_at(at(9))?[0].object(), "approved");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>>;

    /// Every version of every fact about `subject`, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:3", "reviewed_as", "needs_changes", 0)])?;
    /// let approved = fact("task:3", "reviewed_as", "approved", 9);
    /// store.add(vec![approved.clone()])?;
    /// let history = store.history("task:3")?;
    /// assert_eq!(history[0].valid_to(), Some(at(9)));
    /// assert_eq!(history[0].superseded_by(), Some(approved.id()));
    /// assert_eq!(history[1].object(), "approved");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>>;

    /// The latest version of the fact with this id, valid or not; `None` when no version
    /// has it.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// let f = fact("a", "r", "o", 0);
    /// store.add(vec![f.clone()])?;
    /// assert_eq!(store.get(f.id())?, Some(f));
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>>;

    /// A serializable copy of every version, oldest first, with its batch.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "o", 0)])?;
    /// let copy = InMemorySessionFactStore::default();
    /// copy.import(store.export_snapshot()?)?;
    /// assert_eq!(copy.export_snapshot()?, store.export_snapshot()?);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn export_snapshot(&self) -> StoreResult<Snapshot>;

    /// The analyzer of the store's term index: queries must be analyzed with it.
    fn analyzer(&self) -> &Analyzer;

    /// The valid facts (or those valid at `query.as_of`) that share a term with the query
    /// text (analyzed with [`analyzer`](Self::analyzer)),
    /// scored by `weighting`, best first: higher score, then newer `valid_from`, then
    /// smaller id. Facts scoring zero are never returned.
    ///
    /// Only facts holding a query term are scored (the store keeps an inverted index over
    /// its valid facts); term statistics (`df`, document count, average length) cover all
    /// valid facts, before the tag filter and the source-task exclusion. An `as_of` search
    /// scans the facts valid at that instant instead, with statistics over them.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>>;

    /// Invalidates every valid fact with this `subject` and `relation`, now; returns their
    /// ids. Provided: [`invalidate_matching`](Self::invalidate_matching) with
    /// [`FactSelector::key`].
    ///
    /// # Errors
    ///
    /// As [`invalidate_matching`](Self::invalidate_matching).
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:2", "blocked_by", "missing schema", 0)])?;
    /// assert_eq!(store.invalidate("task:2", "blocked_by")?.len(), 1);
    /// assert_eq!(store.valid_count()?, 0);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn invalidate(&self, subject: &str, relation: &str) -> StoreResult<Vec<FactId>> {
        self.invalidate_matching(&FactSelector::key(subject, relation))
    }

    /// Invalidates the valid facts with this `subject` and `relation` that came from
    /// `source_task_id`, now; facts of the same key from other tasks stay valid. Returns
    /// their ids. Provided, through [`invalidate_matching`](Self::invalidate_matching).
    ///
    /// # Errors
    ///
    /// As [`invalidate_matching`](Self::invalidate_matching).
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let issue = |task: &str, message: &str| SessionFact::builder("src/a.rs", "issue", message)
    /// #     .tag(Tag::Error).source(task, SourceRole::Reviewer)
    /// #     .valid_from(at(0)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![issue("2", "camelCase names"), issue("3", "no tests")])?;
    /// assert_eq!(store.invalidate_from_task("src/a.rs", "issue", "2")?.len(), 1);
    /// let valid = store.valid_facts()?;
    /// assert_eq!(valid.len(), 1);
    /// assert_eq!(valid[0].source_task_id(), "3");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn invalidate_from_task(
        &self,
        subject: &str,
        relation: &str,
        source_task_id: &str,
    ) -> StoreResult<Vec<FactId>> {
        self.invalidate_matching(
            &FactSelector::key(subject, relation).with_source_task(source_task_id),
        )
    }

    /// The valid facts carrying any of `tags`, oldest first (none when `tags` is empty).
    /// Provided: [`valid_facts`](Self::valid_facts), filtered.
    ///
    /// # Errors
    ///
    /// As [`valid_facts`](Self::valid_facts).
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:1", "completed_with", "completed", 0)])?;
    /// assert_eq!(store.valid_facts_by_tags(&[Tag::Error, Tag::Decision])?.len(), 1);
    /// assert!(store.valid_facts_by_tags(&[Tag::Error])?.is_empty());
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn valid_facts_by_tags(&self, tags: &[Tag]) -> StoreResult<Vec<SessionFact>> {
        let mut facts = self.valid_facts()?;
        facts.retain(|fact| fact.tags().contains_any(tags));
        Ok(facts)
    }

    /// How many facts are valid. Provided: the length of
    /// [`valid_facts`](Self::valid_facts); backends override it with a count.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "1", 0)])?;
    /// store.add(vec![fact("a", "r", "2", 1)])?;
    /// assert_eq!(store.valid_count()?, 1);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn valid_count(&self) -> StoreResult<usize> {
        Ok(self.valid_facts()?.len())
    }

    /// How many versions the store holds, valid and invalidated: what a snapshot would
    /// export. Provided: the length of [`export_snapshot`](Self::export_snapshot);
    /// backends override it with a count.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("src/a.rs", "modified_by", "task:1", 0)])?;
    /// store.add(vec![fact("src/a.rs", "modified_by", "task:2", 1)])?;
    /// assert_eq!((store.stored_count()?, store.valid_count()?), (2, 1));
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn stored_count(&self) -> StoreResult<usize> {
        Ok(self.export_snapshot()?.records.len())
    }

    /// Parses a JSON snapshot (as written by [`Snapshot::to_json`]) and imports it.
    ///
    /// Records that do not parse are skipped with a diagnostic, as are records the store
    /// cannot import. Provided: [`Snapshot::from_json`], then [`import`](Self::import).
    ///
    /// # Errors
    ///
    /// [`StoreError::SnapshotJson`] when the text is not a snapshot document at all,
    /// [`StoreError::SnapshotVersion`] for an unsupported version, or the error of a
    /// durable store that cannot write. Nothing is imported then.
    ///
    /// ```
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// let store = InMemorySessionFactStore::default();
    /// let json = r#"{"version": 1, "records": [{"batch": 1, "fact": {
    ///     "subject": "", "relation": "r", "object": "o", "tags": ["decision"],
    ///     "valid_from": "2026-11-22T00:00:00Z", "source_task_id": "1",
    ///     "source_role": "implementer"}}]}"#;
    /// let report = store.import_snapshot(json)?;
    /// assert_eq!(report.imported, 0);
    /// assert!(report.skipped[0].message.contains("`subject` must not be empty"));
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn import_snapshot(&self, json: &str) -> StoreResult<ImportReport> {
        let (snapshot, unparsed) = Snapshot::from_json(json)?;
        let mut report = self.import(snapshot)?;
        report.merge_unparsed(unparsed);
        Ok(report)
    }

    /// The store's embeddings and their nearest-neighbour search, when it keeps them:
    /// every store of this crate does. `None` (the default) for a store that does not.
    ///
    /// ```
    /// use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// assert!(InMemorySessionFactStore::default().vectors().is_some());
    /// ```
    fn vectors(&self) -> Option<&dyn FactVectors> {
        None
    }
}

macro_rules! forward_store {
    ($($ty:ty),*) => {$(
        impl<S: SessionFactStore + ?Sized> SessionFactStore for $ty {
            fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> { (**self).add(batch) }
            fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
                (**self).apply(transaction)
            }
            fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
                (**self).invalidate_matching(selector)
            }
            fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
                (**self).compact(max_valid)
            }
            fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
                (**self).update(id, update)
            }
            fn delete(&self, id: FactId) -> StoreResult<usize> { (**self).delete(id) }
            fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
                (**self).import(snapshot)
            }
            fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> { (**self).valid_facts() }
            fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
                (**self).valid_at(at)
            }
            fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
                (**self).history(subject)
            }
            fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> { (**self).get(id) }
            fn export_snapshot(&self) -> StoreResult<Snapshot> { (**self).export_snapshot() }
            fn analyzer(&self) -> &Analyzer { (**self).analyzer() }
            fn search(
                &self,
                query: &TermQuery<'_>,
                weighting: &dyn TermWeighting,
            ) -> StoreResult<Vec<ScoredFact>> {
                (**self).search(query, weighting)
            }
            fn valid_facts_by_tags(&self, tags: &[Tag]) -> StoreResult<Vec<SessionFact>> {
                (**self).valid_facts_by_tags(tags)
            }
            fn valid_count(&self) -> StoreResult<usize> { (**self).valid_count() }
            fn stored_count(&self) -> StoreResult<usize> { (**self).stored_count() }
            fn vectors(&self) -> Option<&dyn FactVectors> { (**self).vectors() }
        }
    )*};
}

forward_store!(&S, Box<S>, std::sync::Arc<S>);
