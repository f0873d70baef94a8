//! [`SessionFactStore`]: the contract every store of temporal facts implements, and its
//! forwarding implementations for `&S`, `Box<S>` and `Arc<S>`.

use std::fmt::Debug;

use fact_model::{FactId, FactSelector, FactUpdate, Filter, SessionFact, Tag, Timestamp};

use crate::{
    AddReport, Analyzer, CompactionReport, EdgeQuery, FactVectors, ImportReport, ScoredFact,
    Snapshot, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};

/// A store of temporal facts, shared by reference between the components of a run.
///
/// Object safe: hold it as `Box<dyn SessionFactStore>` or `Arc<dyn SessionFactStore>`.
/// Every method takes `&self` and never panics. Operations that read or write return a
/// [`StoreResult`] (all but [`analyzer`](Self::analyzer)): a durable store's read error is
/// returned with its code, never answered as an empty store. Operations on a missing id
/// return [`StoreError::NotFound`](crate::StoreError::NotFound), and malformed input is skipped and reported, never
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write; nothing of the batch is stored
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write; nothing of the transaction is
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write; nothing is invalidated then.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write; nothing changes then.
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
    /// [`StoreError::NotFound`](crate::StoreError::NotFound), [`StoreError::InvalidUpdate`](crate::StoreError::InvalidUpdate),
    /// [`StoreError::DuplicateStatement`](crate::StoreError::DuplicateStatement) when the new statement repeats another valid
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
    /// [`StoreError::NotFound`](crate::StoreError::NotFound) when no version has this id (a delete is never a silent
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
    /// [`StoreError::SnapshotVersion`](crate::StoreError::SnapshotVersion) for an unsupported version (nothing is imported),
    /// or the error of a durable store that cannot write (nothing is imported either).
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport>;

    /// Every valid fact, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// valid facts, before the tag filter, the source-task exclusion and the query's
    /// [`Filter`]. An `as_of` search scans the facts valid at that instant instead, with
    /// statistics over them. The filter is applied while the store ranks: when at least
    /// `limit` facts match, `limit` are returned.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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

    /// The valid facts (or those valid at `as_of`) that `filter` holds for, oldest first:
    /// [`valid_facts`](Self::valid_facts) or [`valid_at`](Self::valid_at), narrowed.
    /// Provided: those, filtered in process; the stores of this workspace answer it from
    /// their own indexes, with the same results.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{Filter, Metadata, MetaValue, SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{InMemorySessionFactStore, SessionFactStore};
    /// # let fact = |o: &str, project: &str| SessionFact::builder("user", "likes", o)
    /// #     .tag(Tag::Preference).source("chat", SourceRole::Implementer)
    /// #     .valid_from(Timestamp::UNIX_EPOCH)
    /// #     .metadata(Metadata::from_pairs([("project", MetaValue::String(project.into()))]).unwrap())
    /// #     .build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("tabs", "rlm"), fact("tea", "home")])?;
    /// let filter = Filter::parse_where(r#"metadata.project = "rlm""#).unwrap();
    /// let facts = store.select(&filter, None)?;
    /// assert_eq!(facts.len(), 1);
    /// assert_eq!(facts[0].object(), "tabs");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn select(&self, filter: &Filter, as_of: Option<Timestamp>) -> StoreResult<Vec<SessionFact>> {
        let mut facts = match as_of {
            Some(at) => self.valid_at(at)?,
            None => self.valid_facts()?,
        };
        facts.retain(|fact| filter.matches(fact));
        Ok(facts)
    }

    /// The facts valid now (or at `query.as_of`) whose subject or object is one of
    /// `query.entities` (compared as stored, byte for byte) and that `query.filter` holds
    /// for, oldest first, at most `query.limit`: the edges of the fact graph at those
    /// nodes. Provided: [`valid_facts`](Self::valid_facts) or [`valid_at`](Self::valid_at),
    /// narrowed; the stores of this workspace answer it from an index of their own, and
    /// stop reading at the limit.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # use fact_store::{EdgeQuery, InMemorySessionFactStore, SessionFactStore};
    /// # let fact = |s: &str, r: &str, o: &str| SessionFact::builder(s, r, o)
    /// #     .tag(Tag::Knowledge).source("chat", SourceRole::User)
    /// #     .valid_from(Timestamp::UNIX_EPOCH).build().unwrap();
    /// let store = InMemorySessionFactStore::default();
    /// store.add(vec![fact("user", "works_on", "rlm"), fact("rlm", "written_in", "rust"),
    ///     fact("user", "lives_in", "berlin")])?;
    /// let edges = store.touching(&EdgeQuery::new(&["rlm"]))?;
    /// let relations: Vec<_> = edges.iter().map(|f| f.relation()).collect();
    /// assert_eq!(relations, ["works_on", "written_in"]);
    /// let first = store.touching(&EdgeQuery::new(&["rlm"]).with_limit(1))?;
    /// assert_eq!(first[0].relation(), "works_on");
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    fn touching(&self, query: &EdgeQuery<'_>) -> StoreResult<Vec<SessionFact>> {
        let mut facts = match query.as_of {
            Some(at) => self.valid_at(at)?,
            None => self.valid_facts()?,
        };
        facts.retain(|fact| query.touches(fact));
        facts.truncate(query.limit);
        Ok(facts)
    }

    /// How many facts are valid. Provided: the length of
    /// [`valid_facts`](Self::valid_facts); backends override it with a count.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
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
    /// [`StoreError::SnapshotJson`](crate::StoreError::SnapshotJson) when the text is not a snapshot document at all,
    /// [`StoreError::SnapshotVersion`](crate::StoreError::SnapshotVersion) for an unsupported version, or the error of a
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
            fn select(
                &self,
                filter: &Filter,
                as_of: Option<Timestamp>,
            ) -> StoreResult<Vec<SessionFact>> {
                (**self).select(filter, as_of)
            }
            fn touching(&self, query: &EdgeQuery<'_>) -> StoreResult<Vec<SessionFact>> {
                (**self).touching(query)
            }
            fn valid_count(&self) -> StoreResult<usize> { (**self).valid_count() }
            fn stored_count(&self) -> StoreResult<usize> { (**self).stored_count() }
            fn vectors(&self) -> Option<&dyn FactVectors> { (**self).vectors() }
        }
    )*};
}

forward_store!(&S, Box<S>, std::sync::Arc<S>);
