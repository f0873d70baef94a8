//! The temporal fact store: where a newer fact invalidates the old one instead of
//! overwriting it.
//!
//! - [`SessionFactStore`] is the object-safe contract (`Box<dyn SessionFactStore>`,
//!   `Arc<dyn SessionFactStore>`); every method takes `&self`, so one store is shared
//!   between threads.
//! - [`InMemorySessionFactStore`] implements it with an [`indexmap::IndexMap`] of
//!   versions plus subject, key and statement indexes.
//!
//! # Temporal model
//!
//! Facts arrive in batches, one batch per [`add`](SessionFactStore::add) call (one
//! dispatch result). A fact whose `(subject, relation)` matches a valid fact of an
//! *earlier* batch ends that fact's validity: its `valid_to` becomes the new fact's
//! `valid_from`. Facts of one batch never invalidate each other, so a task can require
//! several actions at once. Re-adding a valid triple changes nothing (it is *refreshed*);
//! re-adding an invalidated triple starts a new version, and
//! [`history`](SessionFactStore::history) keeps both.
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
//! store.add(vec![status("7", "blocked")?]);
//! clock.advance(std::time::Duration::from_secs(60));
//! let report = store.add(vec![status("7", "completed")?]);
//! assert_eq!(report.invalidated.len(), 1);
//!
//! let valid = store.valid_facts();
//! assert_eq!(valid.len(), 1);
//! assert_eq!(valid[0].object(), "completed");
//! assert_eq!(store.history("task:7").len(), 2);
//! # Ok::<(), fact_model::FactError>(())
//! ```

#![forbid(unsafe_code)]

mod error;
mod index;
mod memory;
mod report;
mod snapshot;

use std::fmt::Debug;

use fact_model::{FactId, FactUpdate, SessionFact, Tag, Timestamp};

pub use crate::error::{StoreError, StoreResult};
pub use crate::index::{Analyzer, AnalyzerConfig, STOPWORDS, ScoredFact, TermQuery, TermWeighting};
pub use crate::memory::{
    COMPACTED_RELATION, CompactionPolicy, InMemorySessionFactStore, StoreConfig,
};
pub use crate::report::{
    AddReport, CompactionReport, ImportDiagnostic, ImportReport, SkipReason, Skipped,
};
pub use crate::snapshot::{SNAPSHOT_VERSION, Snapshot, SnapshotRecord};

/// A store of temporal facts, shared by reference between the components of a run.
///
/// Object safe: hold it as `Box<dyn SessionFactStore>` or `Arc<dyn SessionFactStore>`.
/// Every method takes `&self` and never panics; operations on a missing id return
/// [`StoreError::NotFound`], and malformed input is skipped and reported, never stored.
pub trait SessionFactStore: Send + Sync + Debug {
    /// Adds one batch of facts (the facts of one result) and reports what happened to each.
    ///
    /// Valid facts of earlier batches with the same `(subject, relation)` as a new fact
    /// are invalidated; a currently valid triple is refreshed, not duplicated; a fact that
    /// arrives already invalidated, repeats a triple of the same batch, or repeats the
    /// statement of a valid memory fact is skipped with its reason. When the store is
    /// configured to compact automatically and goes over capacity, it compacts before
    /// returning, and the report says how.
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
    /// ]);
    /// assert_eq!(report.added.len(), 2);
    /// let report = store.add(vec![fact("task:1", "requires", "nothing", 5)]);
    /// assert_eq!(report.invalidated.len(), 2);
    /// ```
    fn add(&self, batch: Vec<SessionFact>) -> AddReport;

    /// Invalidates every valid fact with this `subject` and `relation`, now; returns their ids.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:2", "blocked_by", "missing schema", 0)]);
    /// assert_eq!(store.invalidate("task:2", "blocked_by").len(), 1);
    /// assert_eq!(store.valid_count(), 0);
    /// ```
    fn invalidate(&self, subject: &str, relation: &str) -> Vec<FactId>;

    /// Invalidates the valid facts with this `subject` and `relation` that came from
    /// `source_task_id`, now; facts of the same key from other tasks stay valid. Returns
    /// their ids.
    ///
    /// What settles one task's facts, such as an approval settling the issues its reviews
    /// raised about a file, must not settle another task's.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let issue = |task: &str, message: &str| SessionFact::builder("src/a.rs", "issue", message)
    /// #     .tag(Tag::Error).source(task, SourceRole::Reviewer)
    /// #     .valid_from(at(0)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![issue("2", "camelCase names"), issue("3", "no tests")]);
    /// assert_eq!(store.invalidate_from_task("src/a.rs", "issue", "2").len(), 1);
    /// let valid = store.valid_facts();
    /// assert_eq!(valid.len(), 1);
    /// assert_eq!(valid[0].source_task_id(), "3");
    /// ```
    fn invalidate_from_task(
        &self,
        subject: &str,
        relation: &str,
        source_task_id: &str,
    ) -> Vec<FactId>;

    /// Every valid fact, oldest first.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "1", 0)]);
    /// store.add(vec![fact("a", "r", "2", 1), fact("b", "r", "3", 1)]);
    /// let objects: Vec<_> = store.valid_facts().iter().map(|f| f.object().to_owned()).collect();
    /// assert_eq!(objects, ["2", "3"]);
    /// ```
    fn valid_facts(&self) -> Vec<SessionFact>;

    /// The valid facts carrying any of `tags`, oldest first (none when `tags` is empty).
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:1", "completed_with", "completed", 0)]);
    /// assert_eq!(store.valid_facts_by_tags(&[Tag::Error, Tag::Decision]).len(), 1);
    /// assert!(store.valid_facts_by_tags(&[Tag::Error]).is_empty());
    /// ```
    fn valid_facts_by_tags(&self, tags: &[Tag]) -> Vec<SessionFact>;

    /// How many facts are valid.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "1", 0)]);
    /// store.add(vec![fact("a", "r", "2", 1)]);
    /// assert_eq!(store.valid_count(), 1);
    /// ```
    fn valid_count(&self) -> usize;

    /// How many versions the store holds, valid and invalidated: what a snapshot would
    /// export, without building one.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("src/a.rs", "modified_by", "task:1", 0)]);
    /// store.add(vec![fact("src/a.rs", "modified_by", "task:2", 1)]);
    /// assert_eq!((store.stored_count(), store.valid_count()), (2, 1));
    /// ```
    fn stored_count(&self) -> usize;

    /// Compacts until at most `max_valid` facts are valid, following the store's policy.
    ///
    /// Also drops history beyond the store's history limit, oldest first.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:1", "summary", "parser", 0), fact("task:1", "requires", "docs", 0)]);
    /// store.add(vec![fact("task:2", "summary", "lexer", 1)]);
    /// let report = store.compact(2);
    /// assert_eq!((report.merged, store.valid_count()), (2, 2));
    /// ```
    fn compact(&self, max_valid: usize) -> CompactionReport;

    /// The latest version of the fact with this id, valid or not.
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
    /// store.add(vec![f.clone()]);
    /// assert_eq!(store.get(f.id()), Some(f));
    /// ```
    fn get(&self, id: FactId) -> Option<SessionFact>;

    /// Changes the given fields of the latest version of a fact; `valid_from` stays.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::InvalidUpdate`], or
    /// [`StoreError::DuplicateStatement`] when the new statement repeats another valid fact's.
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
    /// store.add(vec![f.clone()]);
    /// let update = FactUpdate { confidence: Some(0.4), ..FactUpdate::default() };
    /// assert_eq!(store.update(f.id(), &update)?.confidence(), 0.4);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact>;

    /// Deletes every version of the fact with this id; returns how many were removed.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when no version has this id: a delete is never a silent no-op.
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
    /// store.add(vec![f.clone()]);
    /// assert_eq!(store.delete(f.id())?, 1);
    /// assert!(matches!(store.delete(f.id()), Err(StoreError::NotFound { .. })));
    /// # Ok::<(), StoreError>(())
    /// ```
    fn delete(&self, id: FactId) -> StoreResult<usize>;

    /// Every version of every fact about `subject`, oldest first.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:3", "reviewed_as", "needs_changes", 0)]);
    /// store.add(vec![fact("task:3", "reviewed_as", "approved", 9)]);
    /// let history = store.history("task:3");
    /// assert_eq!(history[0].valid_to(), Some(at(9)));
    /// assert_eq!(history[1].object(), "approved");
    /// ```
    fn history(&self, subject: &str) -> Vec<SessionFact>;

    /// The facts that were valid at `at` (`valid_from <= at < valid_to`), oldest first.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("task:3", "reviewed_as", "needs_changes", 0)]);
    /// store.add(vec![fact("task:3", "reviewed_as", "approved", 9)]);
    /// assert_eq!(store.valid_at(at(5))[0].object(), "needs_changes");
    /// assert_eq!(store.valid_at(at(9))[0].object(), "approved");
    /// ```
    fn valid_at(&self, at: Timestamp) -> Vec<SessionFact>;

    /// A serializable copy of every version, oldest first, with its batch.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("a", "r", "o", 0)]);
    /// let copy = InMemorySessionFactStore::default();
    /// copy.import_snapshot(&store.export_snapshot().to_json())?;
    /// assert_eq!(copy.export_snapshot(), store.export_snapshot());
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn export_snapshot(&self) -> Snapshot;

    /// Adds the versions of a JSON snapshot (as written by [`Snapshot::to_json`]).
    ///
    /// Each record is validated on its own; a bad record is skipped with a diagnostic and
    /// the others are imported. Imported batches count as newer than the store's own.
    ///
    /// # Errors
    ///
    /// [`StoreError::SnapshotJson`] when the text is not a snapshot document at all,
    /// [`StoreError::SnapshotVersion`] for an unsupported version. Nothing is imported then.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let at = |secs| Timestamp::from_unix_secs(secs).unwrap();
    /// # let fact = |s: &str, r: &str, o: &str, secs| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Decision).source("1", SourceRole::Implementer)
    /// #     .valid_from(at(secs)).build().unwrap();
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
    fn import_snapshot(&self, json: &str) -> StoreResult<ImportReport>;

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
    fn search(&self, query: &TermQuery<'_>, weighting: &dyn TermWeighting) -> Vec<ScoredFact>;
}

macro_rules! forward_store {
    ($($ty:ty),*) => {$(
        impl<S: SessionFactStore + ?Sized> SessionFactStore for $ty {
            fn add(&self, batch: Vec<SessionFact>) -> AddReport { (**self).add(batch) }
            fn invalidate(&self, subject: &str, relation: &str) -> Vec<FactId> {
                (**self).invalidate(subject, relation)
            }
            fn invalidate_from_task(&self, subject: &str, relation: &str, source_task_id: &str) -> Vec<FactId> {
                (**self).invalidate_from_task(subject, relation, source_task_id)
            }
            fn valid_facts(&self) -> Vec<SessionFact> { (**self).valid_facts() }
            fn valid_facts_by_tags(&self, tags: &[Tag]) -> Vec<SessionFact> {
                (**self).valid_facts_by_tags(tags)
            }
            fn valid_count(&self) -> usize { (**self).valid_count() }
            fn stored_count(&self) -> usize { (**self).stored_count() }
            fn compact(&self, max_valid: usize) -> CompactionReport { (**self).compact(max_valid) }
            fn get(&self, id: FactId) -> Option<SessionFact> { (**self).get(id) }
            fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
                (**self).update(id, update)
            }
            fn delete(&self, id: FactId) -> StoreResult<usize> { (**self).delete(id) }
            fn history(&self, subject: &str) -> Vec<SessionFact> { (**self).history(subject) }
            fn valid_at(&self, at: Timestamp) -> Vec<SessionFact> { (**self).valid_at(at) }
            fn export_snapshot(&self) -> Snapshot { (**self).export_snapshot() }
            fn import_snapshot(&self, json: &str) -> StoreResult<ImportReport> {
                (**self).import_snapshot(json)
            }
            fn analyzer(&self) -> &Analyzer { (**self).analyzer() }
            fn search(&self, query: &TermQuery<'_>, weighting: &dyn TermWeighting) -> Vec<ScoredFact> {
                (**self).search(query, weighting)
            }
        }
    )*};
}

forward_store!(&S, Box<S>, std::sync::Arc<S>);
